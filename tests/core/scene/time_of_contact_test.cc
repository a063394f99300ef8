// Time of first contact (time_of_contact.cc): the robot along a motion and a free body along a screw
// motion, against a bisection reference and the analytic gap.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "core/scene/scene_oracle.h"
#include "proximity/core/scene/scene.h"
#include "scene/scene_impl.h"
#include "scene/scene_internal.h"

namespace proximity::core {
namespace {

// The bisection reference for time of first contact: the clearance along the motion sampled every
// 1/steps, and the first sampled crossing of `level` refined by bisection to 1e-9. -1 when no sample
// falls to the level.
template <typename ClearanceFn>
double FirstCrossing(ClearanceFn&& clearance, double level, int steps) {
  double prev = 0.0;
  for (int k = 0; k <= steps; ++k) {
    const double t = static_cast<double>(k) / steps;
    if (clearance(t) <= level) {
      if (k == 0) return 0.0;
      double lo = prev, hi = t;
      while (hi - lo > 1e-9) {
        const double mid = 0.5 * (lo + hi);
        (clearance(mid) <= level ? hi : lo) = mid;
      }
      return hi;
    }
    prev = t;
  }
  return -1.0;
}

template <typename ClearanceFn>
void ExpectWithinBisectionReference(const ContinuousResult& r, double tol, ClearanceFn&& clearance, int steps,
                                    const std::string& what) {
  // Never past the first time the clearance falls below tol / 2; at t_contact, within tol.
  const double half = FirstCrossing(clearance, 0.5 * tol * (1 - 1e-9), steps);
  if (half >= 0.0) {
    EXPECT_TRUE(r.contact) << what << ": the reference falls below tol/2 at " << half;
    EXPECT_LE(r.t_contact, half + 1e-9) << what;
  }
  if (r.contact) {
    EXPECT_LE(clearance(r.t_contact), tol * (1 + 1e-9)) << what;
    const double at_tol = FirstCrossing(clearance, tol * (1 + 1e-9), steps);
    if (at_tol >= 0.0) {
      EXPECT_GE(r.t_contact, at_tol - 1.0 / steps) << what;
    }
    // The certified prefix: no sample before t_contact comes closer than tol / 2.
    for (int k = 0; k < steps && static_cast<double>(k) / steps < r.t_contact; ++k) {
      EXPECT_GE(clearance(static_cast<double>(k) / steps), 0.5 * tol * (1 - 1e-9)) << what << " sample " << k;
    }
  }
}

TEST(SceneContinuous, RobotTimeOfFirstContactAgreesWithABisectionReference) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    std::mt19937_64 rng(41);
    SceneDescription d = RandomWorldScene(rc, rng, 10);
    const auto scene = Scene::Build(d).value();
    SceneCache cache;
    int contacts = 0;
    for (int e = 0; e < testing::Cases(12); ++e) {
      const auto [q0, q1] = RandomEdge(rng, *scene, &cache);
      for (double tol : {1e-3, 1e-5}) {
        ContinuousRequest req;
        req.tolerance = tol;
        ContinuousResult r;
        PROX_ASSERT_OK_AND_ASSIGN(r, scene->TimeOfFirstContact(q0, q1, req, &cache));
        ASSERT_FALSE(r.undecided) << "edge " << e;
        contacts += r.contact;
        SceneCache probe;
        auto clearance = [&](double t) {
          return testing::ValueOrFail(scene->ComputeDistance(Along(q0, q1, t), {}, &probe)).upper_bound;
        };
        ExpectWithinBisectionReference(r, tol, clearance, 200, "edge " + std::to_string(e));
        // Agreement with certified LINK: contact exactly when the segment collides, up to grazes
        // within the tolerance.
        MotionResult m;
        PROX_ASSERT_OK_AND_ASSIGN(m, scene->CheckMotion(q0, q1, {}, &cache));
        if (!m.free) {
          EXPECT_TRUE(r.contact);
          EXPECT_LE(r.t_contact, m.t_collide + 1e-12);
        }
        if (r.contact && r.penetrating) {
          EXPECT_FALSE(m.free);
        }
      }
    }
    EXPECT_SEEN(contacts);
  }
}

TEST(SceneContinuous, FreeBodyMatchesTheAnalyticGapAndABisectionReference) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  SceneDescription d;
  d.robot = LoadRobot(robots.front());
  WorldObject wall;
  wall.id = "wall";
  ObjectPart slab;
  slab.geometry.shape = Box{Vec3(0.05, 1.0, 1.0)};
  slab.X_WG.p = Vec3(2.0, 0.0, 0.0);  // face at x = 1.95
  wall.parts.push_back(slab);
  d.objects.push_back(wall);
  const auto scene = Scene::Build(d).value();
  // A 10 cm ball from x = 0 to x = 3: first contact when its centre reaches 1.85.
  Geometry ball;
  ball.shape = Sphere{Vec3::Zero(), 0.1};
  RigidTransform X0, X1;
  X1.p = Vec3(3.0, 0.0, 0.0);
  ContinuousRequest req;
  req.tolerance = 1e-6;
  ContinuousResult r;
  PROX_ASSERT_OK_AND_ASSIGN(r, scene->TimeOfFirstContact(ball, X0, X1, req));
  ASSERT_TRUE(r.contact);
  const double t_touch = 1.85 / 3.0, t_tol = (1.85 - 1e-6) / 3.0, t_half = (1.85 - 0.5e-6) / 3.0;
  EXPECT_GE(r.t_contact, t_tol - 1e-12);
  EXPECT_LE(r.t_contact, t_half + 1e-12);
  EXPECT_LT(r.t_contact, t_touch);
  EXPECT_EQ(scene->objects()[r.nearest.pair.object].id, "wall");
  EXPECT_NEAR(r.nearest.p_W_other.x(), 1.95, 1e-9);

  // Tumbling boxes through a random world, against the bisection reference.
  std::mt19937_64 rng(43);
  d.objects = RandomWorld(rng, 0.8, 12);
  const auto world = Scene::Build(d).value();
  Geometry brick;
  brick.shape = Box{Vec3(0.1, 0.03, 0.02)};
  int contacts = 0;
  for (int c = 0; c < testing::Cases(20); ++c) {
    const RigidTransform A = testing::RandomPose(rng, Vec3(-1, -1, 0), Vec3(1, 1, 1));
    const RigidTransform B = testing::RandomPose(rng, Vec3(-1, -1, 0), Vec3(1, 1, 1));
    ContinuousRequest q;
    q.tolerance = 1e-4;
    ContinuousResult res;
    PROX_ASSERT_OK_AND_ASSIGN(res, world->TimeOfFirstContact(brick, A, B, q));
    ASSERT_FALSE(res.undecided);
    contacts += res.contact;
    const Eigen::Quaterniond ra(A.R), rb(B.R);
    auto clearance = [&](double t) {
      const RigidTransform X(ra.slerp(t, rb).toRotationMatrix(), A.p + t * (B.p - A.p));
      double best = std::numeric_limits<double>::infinity();
      for (const WorldObject& o : d.objects)
        for (const ObjectPart& p : o.parts) best = std::min(best, ExactDistance(brick, X, p.geometry, p.X_WG));
      return best;
    };
    ExpectWithinBisectionReference(res, q.tolerance, clearance, 400, "flight " + std::to_string(c));
  }
  EXPECT_SEEN(contacts);

  ContinuousRequest zero;
  zero.tolerance = 0.0;
  EXPECT_FALSE(scene->TimeOfFirstContact(ball, X0, X1, zero).ok());
  RigidTransform nan_pose;
  nan_pose.p.x() = std::nan("");
  EXPECT_FALSE(scene->TimeOfFirstContact(ball, X0, nan_pose, req).ok());
}

}  // namespace
}  // namespace proximity::core
