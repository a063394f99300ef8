// Time-optimal timing of certified paths (TimeOptimalTrajectory): closed forms for one joint (trapezoid
// and triangle, bang-bang), and on random multi-joint paths with a continuous joint, resampled at 1 ms:
// limits never exceeded, samples on the path's segments, velocities the derivative of positions, rest at
// every waypoint, and every segment as fast as its limiting joint allows (a closed form computed here).
// Corner blends: a right-angle corner's closed form, random paths blended within their tolerance and
// limits, arcs refused by the checker passed at rest, and on scenes the certified blend checker against
// a dense exact re-check (a ball on two prismatic joints whose arcs cut into a box, the KR5 workcell).
#include "proximity/planners/timing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "proximity/default_scene/default_scene.h"
#include "proximity/planners/scene_validity.h"

namespace proximity::planners {
namespace {

using testing::ValueOrFail;

JointSpace Space(int dof, int continuous = -1) {
  std::vector<double> lo(static_cast<size_t>(dof), -3.0), hi(static_cast<size_t>(dof), 3.0);
  std::vector<bool> wraps(static_cast<size_t>(dof), false);
  if (continuous >= 0) wraps[static_cast<size_t>(continuous)] = true;
  return ValueOrFail(JointSpace::Create(lo, hi, wraps));
}

// The rest-to-rest time of a distance d at speed limit v and acceleration limit a.
double RestToRest(double d, double v, double a) {
  return d * a >= v * v ? d / v + v / a : 2.0 * std::sqrt(d / a);
}

// A random timing problem: 2 to 7 joints (the first wrapping on every third trial), limits in
// [0.2, 3], `waypoints` waypoints in [-2.5, 2.5].
struct RandomProblem {
  JointSpace space;
  TimingLimits limits;
  std::vector<std::string> names;
  std::vector<Configuration> path;
};

RandomProblem MakeRandomProblem(std::mt19937_64& rng, int trial, int waypoints) {
  std::uniform_real_distribution<double> u(-1.0, 1.0), pos(0.2, 3.0);
  const int dof = 2 + trial % 6;
  RandomProblem p{Space(dof, trial % 3 == 0 ? 0 : -1), {}, {}, {}};
  for (int j = 0; j < dof; ++j) {
    p.limits.velocity.push_back(pos(rng));
    p.limits.acceleration.push_back(pos(rng));
    p.names.push_back(std::string("joint_") += std::to_string(j));
  }
  p.path.assign(static_cast<size_t>(waypoints), Configuration(static_cast<size_t>(dof)));
  for (auto& q : p.path) {
    for (auto& x : q) x = 2.5 * u(rng);
  }
  return p;
}

TEST(TimeOptimalTrajectory, OneJointTrapezoidAndTriangleAreTheClosedForms) {
  const JointSpace space = Space(1);
  const TimingLimits limits{{1.0}, {2.0}};
  // Trapezoid: 0.5 s up to 1 rad/s over 0.25 rad, 1.5 s cruising, 0.5 s down.
  const std::vector<Configuration> path{{0.0}, {2.0}};
  const TimedTrajectory t = ValueOrFail(TimeOptimalTrajectory(space, path, limits, {"j"}, 1e-3));
  EXPECT_NEAR(t.duration(), 2.5, 1e-12);
  for (size_t k = 0; k < t.size(); ++k) {
    const double x = t.time[k];
    const double want = x < 0.5 ? x * x : x < 2.0 ? 0.25 + (x - 0.5) : 2.0 - (2.5 - x) * (2.5 - x);
    EXPECT_NEAR(t.positions[k], want, 1e-12) << "t = " << x;
  }
  // Triangle (bang-bang): 0.1 rad never reaches 1 rad/s: 2 sqrt(0.1 / 2) s, peak sqrt(0.2) rad/s.
  const TimedTrajectory tri = ValueOrFail(TimeOptimalTrajectory(space, std::vector<Configuration>{{0.0}, {-0.1}}, limits, {"j"}, 1e-3));
  EXPECT_NEAR(tri.duration(), 2.0 * std::sqrt(0.05), 1e-12);
  double peak = 0.0;
  for (size_t k = 0; k < tri.size(); ++k) peak = std::max(peak, std::abs(tri.velocities[k]));
  EXPECT_NEAR(peak, std::sqrt(0.2), 1e-12);  // the switch is sampled
  EXPECT_EQ(tri.positions.back(), -0.1);
  // A single waypoint: one sample at rest.
  const TimedTrajectory still = ValueOrFail(TimeOptimalTrajectory(space, std::vector<Configuration>{{0.3}}, limits, {"j"}));
  ASSERT_EQ(still.size(), 1u);
  EXPECT_EQ(still.velocities[0], 0.0);
  EXPECT_EQ(still.waypoint_samples, (std::vector<int32_t>{0}));
}

TEST(TimeOptimalTrajectory, RandomPathsKeepTheLimitsAndTheSegmentsAtOneMillisecond) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    RandomProblem problem = MakeRandomProblem(rng, trial, 3 + trial % 4);
    auto& [space, limits, names, path] = problem;
    const int dof = space.dof();
    path[1] = path[2];  // a repeated waypoint: a segment of length 0
    const TimedTrajectory t = ValueOrFail(TimeOptimalTrajectory(space, path, limits, names, 1e-3));
    const auto d = static_cast<size_t>(dof);
    ASSERT_EQ(t.waypoint_samples.size(), path.size());
    // Rest at every waypoint, each waypoint where the segments reach it.
    for (size_t w = 0; w < path.size(); ++w) {
      const size_t k = static_cast<size_t>(t.waypoint_samples[w]);
      for (size_t j = 0; j < d; ++j) {
        EXPECT_EQ(t.velocities[k * d + j], 0.0);
        const double diff = t.positions[k * d + j] - path[w][j];
        EXPECT_NEAR(space.wraps(static_cast<int32_t>(j)) ? core::ShortestTurn(diff) : diff, 0.0, 1e-12) << "waypoint " << w;
      }
    }
    double expected = 0.0;
    std::vector<double> end(d);
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      space.SegmentEnd(path[i], path[i + 1], end);
      double length = 0.0, v = INFINITY, a = INFINITY, slowest_alone = 0.0;
      for (size_t j = 0; j < d; ++j) length += (end[j] - path[i][j]) * (end[j] - path[i][j]);
      length = std::sqrt(length);
      if (length == 0.0) continue;
      for (size_t j = 0; j < d; ++j) {
        const double dj = std::abs(end[j] - path[i][j]);
        if (dj == 0.0) continue;
        v = std::min(v, limits.velocity[j] * length / dj);
        a = std::min(a, limits.acceleration[j] * length / dj);
        slowest_alone = std::max(slowest_alone, RestToRest(dj, limits.velocity[j], limits.acceleration[j]));
      }
      const double segment = RestToRest(length, v, a);
      EXPECT_GE(segment, slowest_alone * (1 - 1e-12));  // no joint could make it faster on its own
      expected += segment;
    }
    EXPECT_NEAR(t.duration(), expected, 1e-9 * std::max(1.0, expected));
    for (size_t k = 0; k + 1 < t.size(); ++k) {
      const double dt = t.time[k + 1] - t.time[k];
      ASSERT_GT(dt, 0.0);
      ASSERT_LE(dt, 1e-3 + 1e-12);
      for (size_t j = 0; j < d; ++j) {
        EXPECT_LE(std::abs(t.velocities[k * d + j]), limits.velocity[j] * (1 + 1e-9));
        EXPECT_LE(std::abs(t.accelerations[k * d + j]), limits.acceleration[j] * (1 + 1e-9));
        // Constant acceleration from a sample to the next: positions and velocities integrate exactly.
        const double a = t.accelerations[k * d + j];
        const double v0 = t.velocities[k * d + j];
        EXPECT_NEAR(t.velocities[(k + 1) * d + j], v0 + a * dt, 1e-9);
        double step = t.positions[(k + 1) * d + j] - t.positions[k * d + j];
        if (space.wraps(static_cast<int32_t>(j)) && k + 2 == t.size()) step = core::ShortestTurn(step);
        EXPECT_NEAR(step, v0 * dt + 0.5 * a * dt * dt, 1e-9);
      }
    }
  }
}

TEST(TimeOptimalTrajectory, BadInputIsRefusedByName) {
  const JointSpace space = Space(2);
  const std::vector<Configuration> path{{0.0, 0.0}, {1.0, 0.0}};
  auto refused = [&](const TimingLimits& limits, double dt, const std::string& word,
                     const std::vector<Configuration>& p) {
    const auto r = TimeOptimalTrajectory(space, p, limits, {"shoulder", "elbow"}, dt, 1000);
    ASSERT_FALSE(r.ok()) << word;
    EXPECT_NE(r.error().message.find(word), std::string::npos) << r.error().message;
  };
  refused({{0.0, 1.0}, {1.0, 1.0}}, 0.01, "shoulder moves but has no velocity limit", path);
  refused({{1.0, 1.0}, {1.0, NAN}}, 0.01, "", {{0.0, 0.0}, {0.0, 1.0}});
  refused({{1.0, 1.0}, {1.0, 1.0}}, 0.0, "resample_dt", path);
  refused({{1.0, 1.0}, {1.0, 1.0}}, 1e-6, "samples", path);
  refused({{1.0, 1.0}, {1.0, 1.0}}, 0.01, "not finite", {{0.0, NAN}, {1.0, 0.0}});
  refused({{1.0, 1.0}, {1.0, 1.0}}, 0.01, "no waypoint", {});
  // A joint that does not move needs no limit.
  EXPECT_TRUE(TimeOptimalTrajectory(space, path, {{1.0, 0.0}, {1.0, 0.0}}, {"shoulder", "elbow"}).ok());
}

// Distance from q to the polyline through `points`.
double PolylineDistance(const std::vector<std::vector<double>>& points, std::span<const double> q) {
  double best = INFINITY;
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    double dd = 0.0, dq = 0.0;
    for (size_t j = 0; j < q.size(); ++j) {
      const double d = points[i + 1][j] - points[i][j];
      dd += d * d;
      dq += d * (q[j] - points[i][j]);
    }
    const double t = dd > 0.0 ? std::clamp(dq / dd, 0.0, 1.0) : 0.0;
    double dist = 0.0;
    for (size_t j = 0; j < q.size(); ++j) {
      const double e = q[j] - (points[i][j] + t * (points[i + 1][j] - points[i][j]));
      dist += e * e;
    }
    best = std::min(best, std::sqrt(dist));
  }
  return best;
}

// Accepts every arc but the first `refuse` it is asked about.
class CountingChecker final : public BlendChecker {
 public:
  explicit CountingChecker(int refuse = 0) : refuse_(refuse) {}
  core::Result<bool> ArcFree(const BlendArc&) const override { return ++asked_ > refuse_; }
  int asked() const { return asked_; }

 private:
  int refuse_;
  mutable int asked_ = 0;
};

// Positions, velocities and accelerations agree from sample to sample: velocities change by at most
// the acceleration limit times the step (no jump where an arc meets a segment), positions by the
// velocities' trapezoid rule.
void ExpectSmooth(const TimedTrajectory& t, const TimingLimits& limits, double max_dt) {
  const auto d = static_cast<size_t>(t.dof);
  for (size_t k = 0; k + 1 < t.size(); ++k) {
    const double dt = t.time[k + 1] - t.time[k];
    ASSERT_GT(dt, 0.0);
    ASSERT_LE(dt, max_dt + 1e-12);
    for (size_t j = 0; j < d; ++j) {
      ASSERT_LE(std::abs(t.velocities[k * d + j]), limits.velocity[j] * (1 + 1e-9)) << "sample " << k;
      ASSERT_LE(std::abs(t.accelerations[k * d + j]), limits.acceleration[j] * (1 + 1e-9)) << "sample " << k;
      const double v0 = t.velocities[k * d + j], v1 = t.velocities[(k + 1) * d + j];
      ASSERT_LE(std::abs(v1 - v0), limits.acceleration[j] * dt * (1 + 1e-9) + 1e-12) << "sample " << k;
      ASSERT_NEAR(t.positions[(k + 1) * d + j] - t.positions[k * d + j], 0.5 * (v0 + v1) * dt,
                  limits.acceleration[j] * dt * dt) << "sample " << k;
    }
  }
}

// The fastest time over `length` from speed `from` to speed `to` within speed v and acceleration a.
double Stretch(double length, double from, double to, double v, double a) {
  const double peak = std::min(v, std::sqrt((2.0 * a * length + from * from + to * to) / 2.0));
  return (peak - from) / a + (peak - to) / a + (length - (2.0 * peak * peak - from * from - to * to) / (2.0 * a)) / peak;
}

TEST(TimeOptimalTrajectory, RightAngleBlendIsTheClosedForm) {
  const JointSpace space = Space(2);
  const TimingLimits limits{{1.0, 1.0}, {1.0, 1.0}};
  const std::vector<Configuration> path{{0.0, 0.0}, {2.0, 0.0}, {2.0, 2.0}};
  CountingChecker checker;
  TimingOptions options;
  options.resample_dt = 1e-3;
  options.path_tolerance = 0.1;
  options.blend_checker = &checker;
  const TimedTrajectory t = ValueOrFail(TimeOptimalTrajectory(space, path, limits, {"x", "y"}, options));
  // The arc leaves each segment `trim` from the corner, radius = trim at a right angle; one speed over it,
  // the centripetal limit sqrt(radius * a) (each joint's share of the arc's unit vectors is 1).
  const double trim = 0.1 * std::sin(M_PI / 4) / (1.0 - std::cos(M_PI / 4));
  const double speed = std::min(1.0, std::sqrt(trim));
  const double expected = 2.0 * Stretch(2.0 - trim, 0.0, speed, 1.0, 1.0) + trim * M_PI / 2 / speed;
  EXPECT_NEAR(t.duration(), expected, 1e-12);
  EXPECT_LT(t.duration(), 2.0 * RestToRest(2.0, 1.0, 1.0));
  EXPECT_EQ(t.blended_corners, 1);
  EXPECT_NEAR(t.max_deviation, 0.1, 1e-12);
  EXPECT_EQ(checker.asked(), 1);
  // The corner's sample is the arc's middle, exactly path_tolerance from the corner, at the arc's speed.
  const auto k = static_cast<size_t>(t.waypoint_samples[1]);
  EXPECT_NEAR(std::hypot(t.positions[2 * k] - 2.0, t.positions[2 * k + 1]), 0.1, 1e-12);
  EXPECT_NEAR(std::hypot(t.velocities[2 * k], t.velocities[2 * k + 1]), speed, 1e-12);
  const std::vector<std::vector<double>> points(path.begin(), path.end());
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_LE(PolylineDistance(points, std::span(t.positions).subspan(2 * i, 2)), 0.1 + 1e-12);
  }
  ExpectSmooth(t, limits, 1e-3);
  // A checker that refuses the first arc: the arc a quarter as far from the corner.
  CountingChecker once(1);
  options.blend_checker = &once;
  const TimedTrajectory quarter = ValueOrFail(TimeOptimalTrajectory(space, path, limits, {"x", "y"}, options));
  EXPECT_EQ(once.asked(), 2);
  EXPECT_NEAR(quarter.max_deviation, 0.025, 1e-12);
  EXPECT_GT(quarter.duration(), t.duration());
  // Refusing both: at rest at the corner, the unblended timing.
  CountingChecker never(1000);
  options.blend_checker = &never;
  const TimedTrajectory rest = ValueOrFail(TimeOptimalTrajectory(space, path, limits, {"x", "y"}, options));
  EXPECT_EQ(rest.blended_corners, 0);
  EXPECT_NEAR(rest.duration(), 2.0 * RestToRest(2.0, 1.0, 1.0), 1e-12);
  EXPECT_EQ(rest.positions, ValueOrFail(TimeOptimalTrajectory(space, path, limits, {"x", "y"}, 1e-3)).positions);
}

TEST(TimeOptimalTrajectory, RandomBlendedPathsKeepTheirToleranceAndLimits) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> tol(0.01, 0.5);
  int blended = 0, corners = 0;
  double ratio = 0.0;
  for (int trial = 0; trial < 40; ++trial) {
    RandomProblem problem = MakeRandomProblem(rng, trial, 3 + trial % 5);
    auto& [space, limits, names, path] = problem;
    const int dof = space.dof();
    if (trial % 4 == 1) {  // a collinear corner: passed straight through
      for (int j = 0; j < dof; ++j) path[1][static_cast<size_t>(j)] = 0.5 * (path[0][static_cast<size_t>(j)] + path[2][static_cast<size_t>(j)]);
    }
    CountingChecker checker;
    TimingOptions options;
    options.resample_dt = 1e-3;
    options.path_tolerance = tol(rng);
    options.blend_checker = &checker;
    const TimedTrajectory t = ValueOrFail(TimeOptimalTrajectory(space, path, limits, names, options));
    const TimedTrajectory exact = ValueOrFail(TimeOptimalTrajectory(space, path, limits, names, 1e-3));
    EXPECT_LE(t.duration(), exact.duration() * (1 + 1e-12));
    ratio += t.duration() / exact.duration();
    EXPECT_LE(t.max_deviation, options.path_tolerance * (1 + 1e-12));
    blended += t.blended_corners;
    corners += static_cast<int>(path.size()) - 2;
    // The polyline as the segments run (wrapping joints the short way from the previous end).
    std::vector<std::vector<double>> points{path[0]};
    std::vector<double> end(static_cast<size_t>(dof));
    for (size_t i = 1; i < path.size(); ++i) {
      space.SegmentEnd(points.back(), path[i], end);
      points.push_back(end);
    }
    const auto d = static_cast<size_t>(dof);
    for (size_t i = 0; i + 1 < t.size(); ++i) {
      ASSERT_LE(PolylineDistance(points, std::span(t.positions).subspan(i * d, d)), options.path_tolerance + 1e-9)
          << "trial " << trial << ", sample " << i;
    }
    for (size_t w = 0; w + 1 < path.size(); ++w) {  // (the last is checked below, as given)
      const auto k = static_cast<size_t>(t.waypoint_samples[w]);
      double dist = 0.0;
      for (size_t j = 0; j < d; ++j) dist += std::pow(t.positions[k * d + j] - points[w][j], 2);
      EXPECT_LE(std::sqrt(dist), options.path_tolerance + 1e-9) << "trial " << trial << ", waypoint " << w;
    }
    for (size_t j = 0; j < d; ++j) {
      EXPECT_EQ(t.velocities[j], 0.0);
      EXPECT_EQ(t.velocities[(t.size() - 1) * d + j], 0.0);
      EXPECT_EQ(t.positions[(t.size() - 1) * d + j], path.back()[j]);
    }
    if (trial % 3 != 0) ExpectSmooth(t, limits, 1e-3);  // (a wrapping joint's last row is as given)
  }
  // A corner is blended unless stopping there is faster (a sharp turn's arc, held at one speed, can be
  // slower than braking into the corner and out).
  std::printf("random paths: %d of %d corners blended, duration %.3f of the exact path's\n", blended, corners,
              ratio / 40);
  EXPECT_GT(blended, corners * 2 / 3);
}

TEST(TimeOptimalTrajectory, BlendOptionsAreCheckedByName) {
  const JointSpace space = Space(2);
  const std::vector<Configuration> path{{0.0, 0.0}, {1.0, 0.0}, {1.0, 1.0}};
  const TimingLimits limits{{1.0, 1.0}, {1.0, 1.0}};
  CountingChecker checker;
  for (const double bad : {-0.1, double(NAN), double(INFINITY)}) {
    TimingOptions options;
    options.path_tolerance = bad;
    options.blend_checker = &checker;
    const auto r = TimeOptimalTrajectory(space, path, limits, {"a", "b"}, options);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("path_tolerance"), std::string::npos) << r.error().message;
  }
  TimingOptions options;
  options.path_tolerance = 0.1;
  const auto r = TimeOptimalTrajectory(space, path, limits, {"a", "b"}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("blend checker"), std::string::npos) << r.error().message;
  // A stop asked while blends are chosen ends the timing, before the checker is asked.
  bool stop = true;
  auto always = [&stop] { return stop; };
  options.blend_checker = &checker;
  options.stop = core::Interrupt(always);
  const auto stopped = TimeOptimalTrajectory(space, path, limits, {"a", "b"}, options);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().code, core::ErrorCode::kStopped);
  EXPECT_EQ(checker.asked(), 0);
  stop = false;
  EXPECT_EQ(ValueOrFail(TimeOptimalTrajectory(space, path, limits, {"a", "b"}, options)).blended_corners, 1);
}

// The ball on two prismatic joints: its centre is (x, y, 0.1), so the joint space is the floor plan.
// The path runs along y = 0 to x = 1 and up x = 1 past a box that fills the inside of the corner,
// 0.03 (along y = 0) and 0.02 (along x = 1) clear of the ball.
core::WorldObject Block(double x_max, double y_min) {
  core::WorldObject o;
  o.id = "block";
  core::ObjectPart part;
  const core::Vec3 lo(0.5, y_min, 0.0), hi(x_max, 0.6, 0.2);
  part.geometry.shape = core::Box{0.5 * (hi - lo)};
  part.X_WG.p = 0.5 * (hi + lo);
  o.parts.push_back(part);
  return o;
}

TEST(SceneBlendChecker, ArcsThatCutIntoAnObstacleAreRefused) {
  auto robot = ValueOrFail(core::RobotModel::FromUrdfFile(testing::TestDataDir() + "/robots/planar_slider.urdf", ""));
  const JointSpace space = ValueOrFail(JointSpace::Create(robot->lower_limits(), robot->upper_limits(),
                                                          std::vector<bool>(2, false)));
  const std::vector<Configuration> path{{0.0, 0.0}, {1.0, 0.0}, {1.0, 1.0}};
  const TimingLimits limits{{1.0, 1.0}, {1.0, 1.0}};
  struct Case {
    double x_max, y_min;
    int blended;
    double deviation;
  };
  // 0.1 from the corner the ball would sit inside the box; 0.025 from it, 0.0175 clear of it. A box
  // 0.01 and 0.005 clear of the path leaves no room for either arc.
  for (const Case c : {Case{0.96, 0.05, 1, 0.025}, Case{0.975, 0.03, 0, 0.0}}) {
    core::SceneDescription d;
    d.robot = robot;
    d.objects.push_back(Block(c.x_max, c.y_min));
    const auto scene = ValueOrFail(core::Scene::Build(d));
    const SceneBlendChecker checker(scene);
    TimingOptions options;
    options.resample_dt = 1e-3;
    options.path_tolerance = 0.1;
    options.blend_checker = &checker;
    const TimedTrajectory t = ValueOrFail(TimeOptimalTrajectory(space, path, limits, {"x", "y"}, options));
    EXPECT_EQ(t.blended_corners, c.blended);
    EXPECT_NEAR(t.max_deviation, c.deviation, 1e-12);
    EXPECT_GT(checker.checks(), 0);
    core::SceneCache cache;
    for (size_t k = 0; k + 1 < t.size(); ++k) {
      const std::vector<double> a(t.positions.begin() + 2 * k, t.positions.begin() + 2 * k + 2);
      const std::vector<double> b(t.positions.begin() + 2 * k + 2, t.positions.begin() + 2 * k + 4);
      ASSERT_LT(core::DenseFirstCollision(*scene, a, b, &cache), 0.0) << "sample " << k;
    }
  }
}

TEST(SceneBlendChecker, BlendedPathsOnTheWorkcellStayFree) {
  if (!std::ifstream(scenes::DefaultRobotUrdfPath()).good()) GTEST_SKIP() << "dart-doc's KR5 URDF is not installed";
  const auto scene = ValueOrFail(core::Scene::Build(ValueOrFail(scenes::DefaultSceneDescription())));
  const core::RobotModel& robot = scene->robot();
  const JointSpace space = JointSpace::ForRobot(robot);
  const SceneBlendChecker checker(scene);
  const auto dof = static_cast<size_t>(robot.num_positions());
  TimingLimits limits{VelocityLimits(robot), std::vector<double>(dof, 3.0)};
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal;
  core::SceneCache cache;
  const core::MotionRequest certified;
  int blended = 0, corners = 0;
  double ratio = 0.0;
  const int paths = testing::Cases(12);
  for (int p = 0; p < paths; ++p) {
    // A random walk of certified free steps of 0.6 rad through the workcell: corners at every angle,
    // some near obstacles.
    std::vector<Configuration> path;
    do path = {core::RandomState(rng, robot)}; while (!ValueOrFail(scene->CheckState(path[0], &cache)).free);
    for (int tries = 0; path.size() < 8 && tries < 1000; ++tries) {
      std::vector<double> step(dof), next(dof);
      double norm = 0.0;
      for (double& x : step) {
        x = normal(rng);
        norm += x * x;
      }
      for (size_t j = 0; j < dof; ++j) next[j] = path.back()[j] + 0.6 * step[j] / std::sqrt(norm);
      if (!space.Contains(next)) continue;
      if (ValueOrFail(scene->CheckMotion(path.back(), next, certified, &cache)).free) path.push_back(next);
    }
    ASSERT_EQ(path.size(), 8u);
    TimingOptions options;
    options.resample_dt = 2e-3;
    options.path_tolerance = 0.2;
    options.blend_checker = &checker;
    const TimedTrajectory t = ValueOrFail(TimeOptimalTrajectory(space, path, limits, robot.active_joint_names(), options));
    const TimedTrajectory exact =
        ValueOrFail(TimeOptimalTrajectory(space, path, limits, robot.active_joint_names(), 2e-3));
    EXPECT_LE(t.duration(), exact.duration() * (1 + 1e-12));
    ratio += t.duration() / exact.duration();
    blended += t.blended_corners;
    corners += static_cast<int>(path.size()) - 2;
    // Dense exact re-check between consecutive samples (2 ms apart along the arcs and segments).
    for (size_t k = 0; k + 1 < t.size(); ++k) {
      const std::vector<double> a(t.positions.begin() + static_cast<std::ptrdiff_t>(k * dof),
                                  t.positions.begin() + static_cast<std::ptrdiff_t>((k + 1) * dof));
      const std::vector<double> b(t.positions.begin() + static_cast<std::ptrdiff_t>((k + 1) * dof),
                                  t.positions.begin() + static_cast<std::ptrdiff_t>((k + 2) * dof));
      ASSERT_LT(core::DenseFirstCollision(*scene, a, b, &cache), 0.0) << "path " << p << ", sample " << k;
    }
  }
  std::printf("workcell: %d of %d corners blended (%lld chords checked), duration %.3f of the exact paths'\n",
              blended, corners, static_cast<long long>(checker.checks()), ratio / paths);
  EXPECT_GT(blended, corners / 3);
}

}  // namespace
}  // namespace proximity::planners
