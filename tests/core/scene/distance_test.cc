// distance(q) (distance.cc): certified intervals that bracket a brute-force clearance and meet the
// budget, hull bounds that never exceed the mesh distance, warm hull caches, answers independent of a
// cache's history, bad requests refused.
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

TEST(SceneDistance, BracketsTheBruteForceClearanceAndMeetsTheBudget) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    const auto robot = LoadRobot(rc);
    ASSERT_NE(robot, nullptr);
    std::mt19937_64 rng(17);
    SceneDescription plain;
    plain.robot = robot;
    plain.objects = RandomWorld(rng, 0.8, 10);
    for (const SceneDescription& d : {plain, PaddedVariant(plain)}) {
      SCOPED_TRACE(rc.name + (d.default_padding > 0 ? " padded" : ""));
      const auto scene = Scene::Build(d).value();
      SceneCache cache;
      int colliding = 0;
      for (int c = 0; c < testing::Cases(25); ++c) {
        const auto q = RandomState(rng, *robot);
        const OracleAnswer truth = Oracle(d, q);
        StateResult state;
        PROX_ASSERT_OK_AND_ASSIGN(state, scene->CheckState(q, &cache));
        colliding += !state.free;
        for (double rel : {0.0, 0.2}) {
          SceneDistanceRequest req;
          req.rel_err = rel;
          SceneDistanceResult r;
          PROX_ASSERT_OK_AND_ASSIGN(r, scene->ComputeDistance(q, req, &cache));
          const std::string what = "case " + std::to_string(c) + " rel " + std::to_string(rel);
          ExpectBrackets(r, truth.clearance, what);
          EXPECT_LE(r.upper_bound, r.lower_bound * (1 + rel) * (1 + 1e-12) + kSceneRounding) << what;
          // Zero clearance exactly when CLEAR finds a contact.
          EXPECT_EQ(r.upper_bound == 0.0, !state.free) << what << " upper " << r.upper_bound;
          ASSERT_GE(r.nearest.pair.link, 0) << what;
          const double pad = internal::Impl(*scene).LinkPadding(r.nearest.pair.link) +
                             (r.nearest.pair.self ? internal::Impl(*scene).LinkPadding(r.nearest.pair.other_link) : 0.0);
          if (r.upper_bound > 0.0) {
            EXPECT_NEAR((r.nearest.p_W_robot - r.nearest.p_W_other).norm() - pad, r.upper_bound, 1e-9) << what;
          }
        }
        SceneDistanceRequest budget;
        budget.abs_err = 0.01;
        SceneDistanceResult r;
        PROX_ASSERT_OK_AND_ASSIGN(r, scene->ComputeDistance(q, budget, &cache));
        ExpectBrackets(r, truth.clearance, "abs budget");
        EXPECT_TRUE(r.upper_bound - r.lower_bound <= 0.01 + 1e-12 ||
                    r.upper_bound <= r.lower_bound * (1 + 1e-12) + kSceneRounding);

        SceneDistanceRequest all;
        all.per_pair = true;
        PROX_ASSERT_OK_AND_ASSIGN(r, scene->ComputeDistance(q, all, &cache));
        EXPECT_EQ(static_cast<int>(r.pairs.size()), truth.pairs);
        double smallest = std::numeric_limits<double>::infinity();
        for (const PairDistance& p : r.pairs) {
          EXPECT_LE(p.lower, p.upper * (1 + 1e-12));
          smallest = std::min(smallest, p.upper);
        }
        EXPECT_NEAR(smallest, truth.clearance, 1e-9 * (1 + truth.clearance));

        if (truth.clearance > 0.0 && std::isfinite(truth.clearance)) {
          SceneDistanceRequest capped;
          capped.max_distance = 0.5 * truth.clearance;
          PROX_ASSERT_OK_AND_ASSIGN(r, scene->ComputeDistance(q, capped, &cache));
          EXPECT_TRUE(r.beyond_max_distance);
          EXPECT_GE(r.lower_bound, capped.max_distance);
          ExpectBrackets(r, truth.clearance, "capped");
        }
        SceneDistanceRequest world_only;
        world_only.self = false;
        PROX_ASSERT_OK_AND_ASSIGN(r, scene->ComputeDistance(q, world_only, &cache));
        ExpectBrackets(r, Oracle(d, q, true, false).clearance, "world only");
      }
      EXPECT_SEEN(colliding) << "no colliding state sampled: the zero-clearance branch went untested";
    }
  }
}

// Hull first tests (Geometry::hull): a bound from the hull never exceeds the mesh's distance; a convex
// mesh's bound comes from its hull alone (no triangle test) and is as tight as the exact distance allows.
TEST(GeometryHulls, HullBoundsNeverExceedTheMeshDistanceAndSpareConvexMeshesTheWalk) {
  struct Case {
    const char* name;
    TriangleMesh mesh;
    bool convex;
  };
  const std::vector<Case> cases = {{"icosphere", MakeIcosphereMesh(0.15, 2), true},
                                   {"cylinder", MakeCylinderMesh(0.08, 0.3, 20), true},
                                   {"torus", MakeTorusMesh(0.2, 0.05, 24, 12), false}};
  auto with_hull = [](const TriangleMesh& m, Geometry* plain, Geometry* hulled) {
    plain->mesh = MeshModel::Build(m).value();
    *hulled = *plain;
    hulled->hull = ConvexPolytope::Build(m).value();
    hulled->hull_is_surface = IsHullSurface(m, *hulled->hull, 1e-9);
  };
  Geometry ball_plain, ball_hulled;
  with_hull(MakeIcosphereMesh(0.1, 1), &ball_plain, &ball_hulled);
  const std::vector<std::pair<Geometry, Geometry>> others = {
      {Geometry::Primitive(Box{Vec3(0.1, 0.2, 0.05)}), Geometry::Primitive(Box{Vec3(0.1, 0.2, 0.05)})},
      {Geometry::Primitive(Cylinder{0.08, 0.15}), Geometry::Primitive(Cylinder{0.08, 0.15})},
      {Geometry::Primitive(Sphere{Vec3::Zero(), 0.1}), Geometry::Primitive(Sphere{Vec3::Zero(), 0.1})},
      {ball_plain, ball_hulled}};
  std::mt19937_64 rng(97);
  const int poses = testing::Cases(400);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Geometry plain, hulled;
    with_hull(c.mesh, &plain, &hulled);
    EXPECT_EQ(hulled.hull_is_surface, c.convex);
    int apart = 0;
    for (size_t o = 0; o < others.size(); ++o) {
      SCOPED_TRACE("other " + std::to_string(o));
      const auto& [other_plain, other_hulled] = others[o];
      for (int k = 0; k < poses; ++k) {
        const RigidTransform X_a = testing::RandomPose(rng, Vec3::Constant(-0.3), Vec3::Constant(0.3));
        const RigidTransform X_b = testing::RandomPose(rng, Vec3::Constant(-0.3), Vec3::Constant(0.3));
        DistanceRequest exact;
        DistanceResult truth;
        PROX_ASSERT_OK_AND_ASSIGN(truth, GeometryDistance(plain, X_a, other_plain, X_b, exact));
        const double d = truth.intersecting ? 0.0 : truth.upper_bound;
        // The other part's centre inside the mesh's hull: apart from the surface, it may still lie
        // wholly inside, where the hulls meet and the walk decides.
        const Vec3 p_A = X_a.inverse() * X_b.p;
        const auto& planes = hulled.hull->face_planes();
        const bool inside = std::all_of(planes.begin(), planes.end(),
                                        [&](const FacePlane& f) { return f.normal.dot(p_A) <= f.offset; });
        for (const double padding : {0.0, 0.02}) {
          for (const double enough : {0.01, 0.05, 1.0}) {
            PROX_ASSERT_OK_AND_ASSIGN(const ClearanceBound bound,
                                      GeometryDistanceLowerBound(hulled, X_a, other_hulled, X_b, enough, padding));
            const double lb = bound.lower_bound;
            const QueryStats& stats = bound.stats;
            EXPECT_LE(lb, std::max(0.0, d - padding) + 1e-9) << "pose " << k << " enough " << enough;
            EXPECT_GE(lb, 0.0);
            if (c.convex && d > 0.0 && !inside) {
              // Apart: the hulls alone answered, to the target or to GJK's 1e-3 tolerance.
              EXPECT_EQ(stats.triangle_tests, 0) << "pose " << k;
              if (d > padding) {
                ++apart;
                EXPECT_GE(lb, std::min(enough, (1.0 - 2e-3) * d - padding) - 1e-9) << k << ": distance " << d << ", enough " << enough;
              }
            }
          }
        }
      }
    }
    if (c.convex) {
      EXPECT_GT(apart, poses);
    }
  }
}

// The hull tests' GJK warm starts (SceneCache): along a coherent sequence of states (steps of 1e-3 rad,
// as a tracked trajectory) one cache answers most hull tests warm (hulls apart by their last separating
// axis, overlapping hulls by their last tetrahedron), in fewer iterations per test than
// the same states each asked with a fresh cache, which answers none warm; the answers are the same.
// QueryStats counts them.
TEST(SceneHullCaches, CoherentStatesAreAnsweredWarm) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    std::mt19937_64 rng(41);
    const SceneDescription d = RandomWorldScene(rc, rng, 10);
    const auto scene = Scene::Build(d).value();
    QueryStats coherent, cold;
    for (int c = 0; c < testing::Cases(40); ++c) {
      auto q = RandomState(rng, *d.robot);
      const auto direction = RandomState(rng, *d.robot);
      SceneCache cache;
      for (int step = 0; step < 6; ++step) {
        for (size_t j = 0; j < q.size(); ++j) q[j] += direction[j] > q[j] ? 1e-3 : -1e-3;
        SceneCache fresh;
        StateResult along, alone;
        PROX_ASSERT_OK_AND_ASSIGN(along, scene->CheckState(q, &cache));
        PROX_ASSERT_OK_AND_ASSIGN(alone, scene->CheckState(q, &fresh));
        EXPECT_EQ(along.free, alone.free) << "case " << c << " step " << step;
        EXPECT_EQ(alone.stats.convex_warm, 0) << "a fresh cache has nothing to start from";
        EXPECT_LE(along.stats.convex_warm, along.stats.convex_tests);
        EXPECT_LE(along.stats.convex_tests, along.stats.bv_tests);
        if (step > 0) coherent += along.stats;
        cold += alone.stats;
      }
    }
    ASSERT_GT(coherent.convex_tests, 0) << "no hull test was made";
    ASSERT_GT(cold.convex_tests, 0);
    const double coherent_iterations = static_cast<double>(coherent.convex_iterations) / coherent.convex_tests;
    const double cold_iterations = static_cast<double>(cold.convex_iterations) / cold.convex_tests;
    std::printf("%s: coherent %lld of %lld hull tests warm, %.2f iterations per test; cold %.2f\n", rc.name.c_str(),
                static_cast<long long>(coherent.convex_warm), static_cast<long long>(coherent.convex_tests),
                coherent_iterations, cold_iterations);
    EXPECT_GT(4 * coherent.convex_warm, 3 * coherent.convex_tests);  // apart by their axis, overlapping by their simplex
    EXPECT_LT(2 * coherent_iterations, cold_iterations);
  }
}

// Pairs are ordered and skipped by their convex stand-ins' bounds; those come from GJK started cold, so
// an answer depends on the state and the request only, never on what the cache saw before (a service
// and its clients, or two threads, must agree bit for bit).
TEST(SceneDistance, AnswersDoNotDependOnTheCachesHistory) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    std::mt19937_64 rng(29);
    const SceneDescription d = RandomWorldScene(rc, rng, 10);
    ASSERT_NE(d.robot, nullptr);
    const auto scene = Scene::Build(d).value();
    std::vector<std::vector<double>> states;
    for (int k = 0; k < testing::Cases(20); ++k) states.push_back(RandomState(rng, *d.robot));
    SceneCache warm;  // asked every state in order, after CLEAR on each (which warms the hull caches)
    for (const auto& q : states) {
      for (double rel : {0.0, 0.2}) {
        SceneDistanceRequest req;
        req.rel_err = rel;
        ASSERT_TRUE(scene->CheckState(q, &warm).ok());
        SceneDistanceResult a, b;
        PROX_ASSERT_OK_AND_ASSIGN(a, scene->ComputeDistance(q, req, &warm));
        SceneCache fresh;
        PROX_ASSERT_OK_AND_ASSIGN(b, scene->ComputeDistance(q, req, &fresh));
        EXPECT_EQ(a.lower_bound, b.lower_bound) << "rel " << rel;
        EXPECT_EQ(a.upper_bound, b.upper_bound) << "rel " << rel;
        EXPECT_EQ(a.pairs_tested, b.pairs_tested) << "rel " << rel;
        EXPECT_EQ(a.nearest.p_W_robot, b.nearest.p_W_robot) << "rel " << rel;
      }
    }
  }
}

TEST(SceneDistance, BadRequestsAreRejected) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  SceneDescription d;
  d.robot = LoadRobot(robots.front());
  const auto scene = Scene::Build(d).value();
  SceneCache cache;
  auto q = d.robot->DefaultConfiguration();
  SceneDistanceRequest bad;
  bad.rel_err = -1;
  EXPECT_FALSE(scene->ComputeDistance(q, bad, &cache).ok());
  q.push_back(0.0);
  EXPECT_FALSE(scene->ComputeDistance(q, {}, &cache).ok());
}

}  // namespace
}  // namespace proximity::core
