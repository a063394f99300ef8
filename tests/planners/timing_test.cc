// Time-optimal timing of certified paths (TimeOptimalTrajectory): closed forms for one joint (trapezoid
// and triangle, bang-bang), and on random multi-joint paths with a continuous joint, resampled at 1 ms:
// limits never exceeded, samples on the path's segments, velocities the derivative of positions, rest at
// every waypoint, and every segment as fast as its limiting joint allows (a closed form computed here).
#include "proximity/planners/timing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/test_util.h"

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
  std::uniform_real_distribution<double> u(-1.0, 1.0), pos(0.2, 3.0);
  for (int trial = 0; trial < 30; ++trial) {
    const int dof = 2 + trial % 6;
    const JointSpace space = Space(dof, trial % 3 == 0 ? 0 : -1);
    TimingLimits limits;
    std::vector<std::string> names;
    for (int j = 0; j < dof; ++j) {
      limits.velocity.push_back(pos(rng));
      limits.acceleration.push_back(pos(rng));
      names.push_back(std::string("joint_") += std::to_string(j));
    }
    std::vector<Configuration> path(3 + trial % 4, Configuration(static_cast<size_t>(dof)));
    for (auto& q : path) {
      for (auto& x : q) x = 2.5 * u(rng);
    }
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

}  // namespace
}  // namespace proximity::planners
