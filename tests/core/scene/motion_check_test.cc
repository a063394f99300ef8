// LINK and paths (motion_check.cc): the prepass, unnarrowed and coarse-to-fine checks keep the answer,
// and a path's first invalid segment matches segment-by-segment checks.
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

// The planner's variant of certified LINK (a sampled pre-pass, no narrowing of a collision) answers
// free exactly when the default certified check does, and never claims more than the dense reference
// allows: its colliding state collides and its free prefix ends before the first collision.
TEST(SceneLink, PrepassUnnarrowedAndCoarseToFineKeepTheAnswer) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  MotionRequest planning;
  planning.narrow_collision = false;
  planning.prepass_resolution = 0.1;
  MotionRequest in_order, coarse_to_fine;
  in_order.mode = coarse_to_fine.mode = MotionRequest::Mode::kDiscrete;
  in_order.resolution = coarse_to_fine.resolution = 0.03;
  coarse_to_fine.coarse_to_fine = true;
  MotionRequest between = coarse_to_fine;
  between.check_ends = false;
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    std::mt19937_64 rng(41);
    const auto scene = Scene::Build(RandomWorldScene(rc, rng, 12)).value();
    SceneCache cache;
    int colliding = 0, by_prepass = 0, free_ends = 0;
    int64_t coarse_saved = 0;
    for (int e = 0; e < testing::Cases(150); ++e) {
      auto [q0, q1] = RandomEdge(rng, *scene, &cache);
      MotionResult exact, fast;
      PROX_ASSERT_OK_AND_ASSIGN(exact, scene->CheckMotion(q0, q1, {}, &cache));
      PROX_ASSERT_OK_AND_ASSIGN(fast, scene->CheckMotion(q0, q1, planning, &cache));
      ASSERT_EQ(fast.free, exact.free) << "edge " << e;
      // Sampled coarse to fine: the same states as in order, so the same answer, in fewer states when
      // the segment collides, at a state that collides.
      MotionResult ordered, coarse;
      PROX_ASSERT_OK_AND_ASSIGN(ordered, scene->CheckMotion(q0, q1, in_order, &cache));
      PROX_ASSERT_OK_AND_ASSIGN(coarse, scene->CheckMotion(q0, q1, coarse_to_fine, &cache));
      ASSERT_EQ(coarse.free, ordered.free) << "edge " << e;
      if (coarse.free) {
        EXPECT_EQ(coarse.states, ordered.states);
      } else {
        StateResult at;
        PROX_ASSERT_OK_AND_ASSIGN(at, scene->CheckState(Along(q0, q1, coarse.t_collide), &cache));
        EXPECT_FALSE(at.free);
        coarse_saved += ordered.states - coarse.states;
      }
      // Without the ends (both free here, or the answer may differ at q1): the states strictly between.
      StateResult end;
      PROX_ASSERT_OK_AND_ASSIGN(end, scene->CheckState(q1, &cache));
      MotionResult inner;
      PROX_ASSERT_OK_AND_ASSIGN(inner, scene->CheckMotion(q0, q1, between, &cache));
      if (end.free) {
        ++free_ends;
        ASSERT_EQ(inner.free, coarse.free) << "edge " << e;
        if (inner.free) {
          EXPECT_EQ(inner.states, coarse.states - 2) << "edge " << e;
        }
      }
      if (!inner.free) {
        EXPECT_GT(inner.t_collide, 0.0);
        EXPECT_LT(inner.t_collide, 1.0);
        StateResult at;
        PROX_ASSERT_OK_AND_ASSIGN(at, scene->CheckState(Along(q0, q1, inner.t_collide), &cache));
        EXPECT_FALSE(at.free);
      }
      if (fast.free) continue;
      ++colliding;
      by_prepass += fast.distance_queries == 0;
      const double first = DenseFirstCollision(*scene, q0, q1, &cache);
      if (!fast.undecided) {
        StateResult at;
        PROX_ASSERT_OK_AND_ASSIGN(at, scene->CheckState(Along(q0, q1, fast.t_collide), &cache));
        EXPECT_FALSE(at.free) << "edge " << e << " t_collide " << fast.t_collide;
      }
      if (first >= 0.0) {
        EXPECT_LE(fast.t_free, first) << "edge " << e;
      }
      EXPECT_LE(fast.t_free, fast.t_collide);
    }
    EXPECT_GT(colliding, 0);
    EXPECT_GT(by_prepass, 0);  // Some collisions are found by CLEARs alone.
    EXPECT_GT(coarse_saved, 0);  // Coarse to fine meets collisions sooner than in order, overall.
    EXPECT_GT(free_ends, 0);
  }
  MotionRequest bad = planning;
  bad.prepass_resolution = -1.0;
  std::mt19937_64 rng(1);
  const auto scene = Scene::Build(RandomWorldScene(robots.front(), rng, 3)).value();
  SceneCache cache;
  const auto q = scene->robot().DefaultConfiguration();
  EXPECT_FALSE(scene->CheckMotion(q, q, bad, &cache).ok());
}

TEST(ScenePath, FirstInvalidSegmentMatchesSegmentBySegmentChecks) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    std::mt19937_64 rng(37);
    SceneDescription d = RandomWorldScene(rc, rng, 10);
    const auto scene = Scene::Build(d).value();
    const size_t dof = static_cast<size_t>(scene->dof());
    SceneCache cache;
    int invalid = 0;
    for (int p = 0; p < testing::Cases(30); ++p) {
      std::vector<double> waypoints;
      auto [a, b] = RandomEdge(rng, *scene, &cache);
      waypoints.insert(waypoints.end(), a.begin(), a.end());
      waypoints.insert(waypoints.end(), b.begin(), b.end());
      for (int w = 0; w < 3; ++w) {
        std::vector<double> q(waypoints.end() - static_cast<std::ptrdiff_t>(dof), waypoints.end());
        for (size_t j = 0; j < dof; ++j) q[j] += std::normal_distribution<double>(0.0, 0.2)(rng);
        for (size_t j = 0; j < dof; ++j) {
          q[j] = std::clamp(q[j], std::max(-M_PI, d.robot->lower_limits()[j]), std::min(M_PI, d.robot->upper_limits()[j]));
        }
        waypoints.insert(waypoints.end(), q.begin(), q.end());
      }
      PathResult r;
      PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckPath(waypoints, {}, &cache));
      int expected = -1;
      for (size_t s = 0; s + 1 < waypoints.size() / dof; ++s) {
        MotionResult m;
        std::span<const double> all(waypoints);
        PROX_ASSERT_OK_AND_ASSIGN(
            m, scene->CheckMotion(all.subspan(s * dof, dof), all.subspan((s + 1) * dof, dof), {}, &cache));
        if (!m.free) {
          expected = static_cast<int>(s);
          EXPECT_EQ(r.motion.t_collide, m.t_collide);
          break;
        }
      }
      EXPECT_EQ(r.segment, expected) << "path " << p;
      EXPECT_EQ(r.free, expected < 0);
      const int segments = static_cast<int>(waypoints.size() / dof) - 1;
      EXPECT_EQ(r.segments_checked, expected < 0 ? segments : expected + 1);
      EXPECT_FALSE(r.stopped);
      invalid += expected >= 0;
      // A caller's stop, asked before each segment and inside each, ends the check early and never
      // answers free: one that says yes from its second question on stops it within the first segment
      // or right after it.
      int asked = 0;
      auto stop_after_first = [&] { return ++asked > 1; };
      MotionRequest stopping;
      stopping.stop = Interrupt(stop_after_first);
      PathResult stopped;
      PROX_ASSERT_OK_AND_ASSIGN(stopped, scene->CheckPath(waypoints, stopping, &cache));
      if (expected != 0) {
        EXPECT_TRUE(stopped.stopped);
        EXPECT_FALSE(stopped.free);
        EXPECT_LE(stopped.segments_checked, 1);
      }
    }
    EXPECT_SEEN(invalid);
    std::vector<double> ragged(dof + 1, 0.0);
    const Status s = scene->CheckPath(ragged, {}, &cache).status();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("waypoint"), std::string::npos) << s.error().message;
    std::vector<double> nan_path(2 * dof, 0.0);
    nan_path[dof + 1] = std::nan("");
    const Status n = scene->CheckPath(nan_path, {}, &cache).status();
    ASSERT_FALSE(n.ok());
    EXPECT_NE(n.error().message.find("waypoint 1"), std::string::npos) << n.error().message;
  }
}

}  // namespace
}  // namespace proximity::core
