#include "bvh/mesh_query.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <random>
#include <set>

#include "bvh/query_internal.h"
#include "core/test_util.h"
#include "narrowphase/triangle.h"
#include "base/numerics.h"

// Allocations counted while `g_count_allocations` is set (WarmQueriesReuseTheirStorage).
namespace {
std::atomic<bool> g_count_allocations{false};
std::atomic<int64_t> g_allocations{0};
}  // namespace

// The replacements pair malloc with free (GCC cannot tell that they replace the global operators).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  if (g_count_allocations.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace proximity::core {
namespace {

using testing::BruteForceCollide;
using testing::BruteForceDistance;
using testing::PointMeshDistance;
using testing::RandomPose;

std::shared_ptr<const MeshModel> Build(const TriangleMesh& mesh, const BvhBuildOptions& opt = {}) {
  auto r = MeshModel::Build(mesh, opt);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? r.value() : nullptr;
}

// A pair of real meshes and the box the second one's position is drawn from (the first sits at a
// random rotation about the origin).
struct PairCase {
  std::string name;
  std::string path_a, path_b;
  Vec3 lo, hi;
  bool a_at_identity = false;
};

std::vector<PairCase> RealCases() {
  std::vector<PairCase> cases;
  const std::string shared = testing::SharedDataDir();
  if (!shared.empty()) {
    cases.push_back({"envrob", shared + "/scenes/fcl/env.obj", shared + "/scenes/fcl/rob.obj",
                     Vec3(-3000, -3000, 0), Vec3(3000, 3000, 3000), true});
    const std::string panda = shared + "/robots/panda/moveit_resources_panda_description/meshes/collision/";
    cases.push_back({"panda_link3_link5", panda + "link3.stl", panda + "link5.stl", Vec3::Constant(-0.25),
                     Vec3::Constant(0.25)});
    const std::string mbm = shared + "/robots/mbm_panda/meshes/collision/";
    cases.push_back({"mbm_link6_hand", mbm + "link6.obj", mbm + "hand.obj", Vec3::Constant(-0.2), Vec3::Constant(0.2)});
    const std::string ur5 = shared + "/robots/ur5/ur_description/meshes/ur5/collision/";
    cases.push_back({"ur5_forearm_wrist1", ur5 + "forearm.stl", ur5 + "wrist_1.stl", Vec3(-0.15, -0.15, -0.1),
                     Vec3(0.15, 0.15, 0.5)});
  }
  const std::string dart = testing::DartUrdfDir();
  if (!dart.empty()) {
    cases.push_back({"kr5_wrist_forearm", dart + "/KR5/meshes/wrist.STL", dart + "/KR5/meshes/forearm.STL",
                     Vec3::Constant(-0.2), Vec3::Constant(0.2)});
    cases.push_back({"wam_wam7_wam2", dart + "/wam/meshes/wam/wam7.STL", dart + "/wam/meshes/wam/wam2.STL",
                     Vec3::Constant(-0.15), Vec3::Constant(0.15)});
  }
  return cases;
}

struct Posed {
  RigidTransform X_WA, X_WB;
};

// envrob uses FCL's own extents (env fixed, rob anywhere in the box). Every other pair has both
// meshes' bounding-box centres placed near each other: A's at the origin, B's at a uniform offset of
// up to 1.2 times the sum of their bounding radii, both randomly rotated, so that about half collide.
std::vector<Posed> Poses(const PairCase& c, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Posed> out;
  if (c.a_at_identity) {
    for (int i = 0; i < n; ++i) out.push_back({RigidTransform(), RandomPose(rng, c.lo, c.hi)});
    return out;
  }
  const auto ba = MeshBounds(testing::LoadMeshOrDie(c.path_a)), bb = MeshBounds(testing::LoadMeshOrDie(c.path_b));
  const Vec3 ca = 0.5 * (ba[0] + ba[1]), cb = 0.5 * (bb[0] + bb[1]);
  const double reach = 1.2 * 0.5 * ((ba[1] - ba[0]).norm() + (bb[1] - bb[0]).norm()) / std::sqrt(3.0);
  for (int i = 0; i < n; ++i) {
    Posed p;
    p.X_WA.R = testing::RandomRotation(rng);
    p.X_WA.p = -(p.X_WA.R * ca);
    p.X_WB = RandomPose(rng, Vec3::Constant(-reach), Vec3::Constant(reach));
    p.X_WB.p -= p.X_WB.R * cb;
    out.push_back(p);
  }
  return out;
}

class RealMeshes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RealCases().empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  }
};

TEST_F(RealMeshes, CollideMatchesBruteForce) {
  for (const PairCase& c : RealCases()) {
    SCOPED_TRACE(c.name);
    const TriangleMesh ma = testing::LoadMeshOrDie(c.path_a), mb = testing::LoadMeshOrDie(c.path_b);
    for (SplitRule rule : {SplitRule::kMedian, SplitRule::kSurfaceArea}) {
      BvhBuildOptions opt;
      opt.split = rule;
      opt.max_leaf_triangles = rule == SplitRule::kMedian ? 1 : 4;
      const auto a = Build(ma, opt), b = Build(mb, opt);
      int hits = 0, misses = 0;
      for (const Posed& p : Poses(c, testing::Cases(30), 11)) {
        CollisionResult res;
        PROX_ASSERT_OK_AND_ASSIGN(res, Collide(*a, p.X_WA, *b, p.X_WB, {}));
        const bool truth = BruteForceCollide(ma, p.X_WA, mb, p.X_WB);
        EXPECT_EQ(res.colliding, truth);
        if (res.colliding) {
          ASSERT_EQ(res.contacts.size(), 1u);
          const auto& ta = ma.triangles[res.contacts[0].triangle_a];
          const auto& tb = mb.triangles[res.contacts[0].triangle_b];
          EXPECT_TRUE(TrianglesIntersect(p.X_WA * ma.vertices[ta[0]], p.X_WA * ma.vertices[ta[1]],
                                         p.X_WA * ma.vertices[ta[2]], p.X_WB * mb.vertices[tb[0]],
                                         p.X_WB * mb.vertices[tb[1]], p.X_WB * mb.vertices[tb[2]]));
        }
        EXPECT_GT(res.stats.bv_tests, 0);
        (truth ? hits : misses)++;
      }
      // The pose boxes are chosen so that both answers occur (checked on the full set of cases).
      if (testing::kSanitizedSlowdown == 1) {
        EXPECT_GE(hits, 2) << "misses " << misses;
        EXPECT_GE(misses, 2) << "hits " << hits;
      }
    }
  }
}

TEST_F(RealMeshes, AllContactsMatchBruteForcePairs) {
  for (const PairCase& c : RealCases()) {
    if (c.name == "envrob") continue;
    SCOPED_TRACE(c.name);
    const TriangleMesh ma = testing::LoadMeshOrDie(c.path_a), mb = testing::LoadMeshOrDie(c.path_b);
    const auto a = Build(ma), b = Build(mb);
    for (const Posed& p : Poses(c, testing::Cases(8), 12)) {
      CollisionRequest req;
      req.all_contacts = true;
      CollisionResult res;
      PROX_ASSERT_OK_AND_ASSIGN(res, Collide(*a, p.X_WA, *b, p.X_WB, req));
      std::set<std::pair<int, int>> got, want;
      for (const auto& tp : res.contacts) got.insert({tp.triangle_a, tp.triangle_b});
      for (size_t i = 0; i < ma.triangles.size(); ++i)
        for (size_t j = 0; j < mb.triangles.size(); ++j) {
          const auto& ta = ma.triangles[i];
          const auto& tb = mb.triangles[j];
          if (TrianglesIntersect(p.X_WA * ma.vertices[ta[0]], p.X_WA * ma.vertices[ta[1]], p.X_WA * ma.vertices[ta[2]],
                                 p.X_WB * mb.vertices[tb[0]], p.X_WB * mb.vertices[tb[1]], p.X_WB * mb.vertices[tb[2]]))
            want.insert({int(i), int(j)});
        }
      EXPECT_EQ(got, want);
      EXPECT_EQ(got.size(), res.contacts.size()) << "a pair was reported twice";
    }
  }
}

TEST_F(RealMeshes, ExactDistanceMatchesBruteForceWithWitnesses) {
  for (const PairCase& c : RealCases()) {
    SCOPED_TRACE(c.name);
    const TriangleMesh ma = testing::LoadMeshOrDie(c.path_a), mb = testing::LoadMeshOrDie(c.path_b);
    const auto a = Build(ma), b = Build(mb);
    const double scale = (c.hi - c.lo).norm();
    int separated = 0;
    for (const Posed& p : Poses(c, testing::Cases(c.name == "envrob" ? 12 : 20), 13)) {
      DistanceResult res;
      PROX_ASSERT_OK_AND_ASSIGN(res, ComputeDistance(*a, p.X_WA, *b, p.X_WB, {}, nullptr));
      const double truth = BruteForceDistance(ma, p.X_WA, mb, p.X_WB);
      EXPECT_NEAR(res.upper_bound, truth, 1e-9 * std::max(truth, 1e-6 * scale));
      // Exact: the interval is as wide as rounding (kExactRelativeWidth and the outward rounding).
      EXPECT_GE(res.lower_bound,
                res.upper_bound * (1 - 1e-12) - testing::QueryRoundingAllowance(ma, p.X_WA, mb, p.X_WB));
      EXPECT_LE(res.lower_bound, res.upper_bound);
      EXPECT_EQ(res.intersecting, truth == 0.0);
      EXPECT_FALSE(res.beyond_max_distance);
      // Witnesses lie on their surfaces, realise the upper bound, and belong to the reported triangles.
      EXPECT_LE(PointMeshDistance(res.p_WA, ma, p.X_WA), 1e-9 * scale);
      EXPECT_LE(PointMeshDistance(res.p_WB, mb, p.X_WB), 1e-9 * scale);
      EXPECT_NEAR((res.p_WA - res.p_WB).norm(), res.upper_bound, 1e-12 * scale);
      const auto& ta = ma.triangles[res.triangles.triangle_a];
      const auto& tb = mb.triangles[res.triangles.triangle_b];
      Vec3 qa, qb;
      const double dt = TriangleDistance(p.X_WA * ma.vertices[ta[0]], p.X_WA * ma.vertices[ta[1]],
                                         p.X_WA * ma.vertices[ta[2]], p.X_WB * mb.vertices[tb[0]],
                                         p.X_WB * mb.vertices[tb[1]], p.X_WB * mb.vertices[tb[2]], &qa, &qb);
      EXPECT_NEAR(dt, res.upper_bound, 1e-9 * scale);
      if (truth > 0) ++separated;
    }
    if (testing::kSanitizedSlowdown == 1) {
      EXPECT_GT(separated, 2);
    }
  }
}

TEST_F(RealMeshes, ErrorBudgetsBracketTheTruthAndAreMet) {
  for (const PairCase& c : RealCases()) {
    SCOPED_TRACE(c.name);
    const TriangleMesh ma = testing::LoadMeshOrDie(c.path_a), mb = testing::LoadMeshOrDie(c.path_b);
    const auto a = Build(ma), b = Build(mb);
    const double scale = (c.hi - c.lo).norm();
    int64_t budget_work = 0, exact_work = 0;
    for (const Posed& p : Poses(c, testing::Cases(c.name == "envrob" ? 6 : 10), 14)) {
      const double truth = BruteForceDistance(ma, p.X_WA, mb, p.X_WB);
      DistanceResult exact;
      PROX_ASSERT_OK_AND_ASSIGN(exact, ComputeDistance(*a, p.X_WA, *b, p.X_WB, {}, nullptr));
      for (double rel : {0.05, 0.2, 0.5}) {
        for (double abs : {0.0, 0.01 * scale}) {
          DistanceRequest req;
          req.rel_err = rel;
          req.abs_err = abs;
          DistanceResult res;
          PROX_ASSERT_OK_AND_ASSIGN(res, ComputeDistance(*a, p.X_WA, *b, p.X_WB, req, nullptr));
          const double tol = 1e-9 * std::max(truth, 1e-6 * scale);
          EXPECT_LE(res.lower_bound, truth + tol) << "rel " << rel << " abs " << abs;
          EXPECT_GE(res.upper_bound, truth - tol) << "rel " << rel << " abs " << abs;
          EXPECT_TRUE(res.upper_bound <= res.lower_bound * (1 + rel) + tol || res.upper_bound - res.lower_bound <= abs + tol)
              << "budget missed: [" << res.lower_bound << ", " << res.upper_bound << "] rel " << rel << " abs " << abs;
          EXPECT_NEAR((res.p_WA - res.p_WB).norm(), res.upper_bound, 1e-12 * scale);
          EXPECT_LE(PointMeshDistance(res.p_WA, ma, p.X_WA), 1e-9 * scale);
          EXPECT_LE(PointMeshDistance(res.p_WB, mb, p.X_WB), 1e-9 * scale);
          if (rel == 0.5 && abs == 0.0) {
            budget_work += res.stats.triangle_tests + res.stats.bv_tests;
            exact_work += exact.stats.triangle_tests + exact.stats.bv_tests;
          }
        }
      }
    }
    // Over many poses a budget saves work (not on every pose: ties among equal bounds can reorder).
    EXPECT_LT(budget_work, exact_work);
  }
}

TEST_F(RealMeshes, AKnownLowerBoundBracketsTheTruthAndSavesWork) {
  // A caller's certified lower bound (here a fraction of the true distance, as convex hulls give):
  // the walk may stop once its upper bound meets the budget against it; the interval still brackets
  // the truth and meets the budget, and its lower end is never below the known bound.
  int64_t known_work = 0, plain_work = 0, rounding_work = 0, exact_work = 0, rounding_cases = 0;
  for (const PairCase& c : RealCases()) {
    SCOPED_TRACE(c.name);
    const TriangleMesh ma = testing::LoadMeshOrDie(c.path_a), mb = testing::LoadMeshOrDie(c.path_b);
    const auto a = Build(ma), b = Build(mb);
    const double scale = (c.hi - c.lo).norm();
    for (const Posed& p : Poses(c, testing::Cases(c.name == "envrob" ? 6 : 10), 15)) {
      const double truth = BruteForceDistance(ma, p.X_WA, mb, p.X_WB);
      for (double fraction : {0.0, 0.5, 0.9, 1.0}) {
        for (double rel : {0.0, 0.2}) {
          DistanceRequest req;
          req.rel_err = rel;
          DistanceResult plain;
          PROX_ASSERT_OK_AND_ASSIGN(plain, ComputeDistance(*a, p.X_WA, *b, p.X_WB, req, nullptr));
          req.known_lower = fraction * truth;
          DistanceResult res;
          PROX_ASSERT_OK_AND_ASSIGN(res, ComputeDistance(*a, p.X_WA, *b, p.X_WB, req, nullptr));
          const double tol = 1e-9 * std::max(truth, 1e-6 * scale);
          EXPECT_LE(res.lower_bound, truth + tol) << "fraction " << fraction << " rel " << rel;
          EXPECT_GE(res.upper_bound, truth - tol) << "fraction " << fraction << " rel " << rel;
          EXPECT_GE(res.lower_bound, std::min(req.known_lower, res.upper_bound));
          EXPECT_TRUE(res.upper_bound <= res.lower_bound * (1 + std::max(rel, 1e-12)) + tol)
              << "budget missed: [" << res.lower_bound << ", " << res.upper_bound << "]";
          EXPECT_NEAR((res.p_WA - res.p_WB).norm(), res.upper_bound, 1e-12 * scale);
          if (fraction == 1.0 && rel == 0.2) {
            known_work += res.stats.triangle_tests + res.stats.bv_tests;
            plain_work += plain.stats.triangle_tests + plain.stats.bv_tests;
          }
          if (fraction == 0.0 && rel == 0.0) {
            // A known bound below the exact distance by less than twice the walk's rounding allowance (a
            // hull distance exact up to rounding) but by more than the exact relative width: an upper
            // bound that close settles the walk, as no walk could end with a narrower interval.
            const double rounding = RoundingAllowance(p.X_WA.p.cwiseAbs().maxCoeff() + p.X_WB.p.cwiseAbs().maxCoeff() +
                                                      internal::ModelReach(*a) + internal::ModelReach(*b));
            DistanceRequest near;
            near.known_lower = std::max(0.0, plain.upper_bound - 1.5 * rounding);
            if (plain.upper_bound - near.known_lower > 1e-12 * near.known_lower && near.known_lower > 0.0) {
              DistanceResult settled;
              PROX_ASSERT_OK_AND_ASSIGN(settled, ComputeDistance(*a, p.X_WA, *b, p.X_WB, near, nullptr));
              EXPECT_LE(settled.lower_bound, truth + tol);
              EXPECT_GE(settled.upper_bound, truth - tol);
              EXPECT_LE(settled.upper_bound - settled.lower_bound, 2.0 * rounding);
              rounding_work += settled.stats.triangle_tests + settled.stats.bv_tests;
              exact_work += plain.stats.triangle_tests + plain.stats.bv_tests;
              ++rounding_cases;
            }
          }
        }
      }
    }
  }
  // A tight known bound (a convex pair's exact hull distance) saves work over the cases.
  EXPECT_LT(known_work, plain_work);
  EXPECT_GT(rounding_cases, 0);
  EXPECT_LT(rounding_work, exact_work);
}

TEST_F(RealMeshes, MaxDistanceStopsEarlyAndStillBrackets) {
  for (const PairCase& c : RealCases()) {
    SCOPED_TRACE(c.name);
    const TriangleMesh ma = testing::LoadMeshOrDie(c.path_a), mb = testing::LoadMeshOrDie(c.path_b);
    const auto a = Build(ma), b = Build(mb);
    int beyond = 0;
    for (const Posed& p : Poses(c, 10, 15)) {
      DistanceResult exact;
      PROX_ASSERT_OK_AND_ASSIGN(exact, ComputeDistance(*a, p.X_WA, *b, p.X_WB, {}, nullptr));
      const double truth = exact.upper_bound;
      if (truth == 0.0) continue;  // max_distance 0 is proved at once, by design
      for (double frac : {0.5, 2.0}) {
        DistanceRequest req;
        req.max_distance = frac * truth;
        DistanceResult res;
        PROX_ASSERT_OK_AND_ASSIGN(res, ComputeDistance(*a, p.X_WA, *b, p.X_WB, req, nullptr));
        EXPECT_LE(res.lower_bound, truth * (1 + 1e-12));
        EXPECT_GE(res.upper_bound, truth * (1 - 1e-12));
        if (frac < 1) {
          EXPECT_TRUE(res.beyond_max_distance);
          EXPECT_GE(res.lower_bound, req.max_distance);
          EXPECT_LE(res.stats.triangle_tests, exact.stats.triangle_tests);
          ++beyond;
        } else {
          EXPECT_FALSE(res.beyond_max_distance && truth < req.max_distance);
          EXPECT_NEAR(res.upper_bound, truth, 1e-12 * std::max(1.0, truth));
        }
      }
    }
    EXPECT_GT(beyond, 0);
  }
}

TEST_F(RealMeshes, WarmStartGivesTheSameAnswersWithLessWork) {
  for (const PairCase& c : RealCases()) {
    SCOPED_TRACE(c.name);
    const TriangleMesh ma = testing::LoadMeshOrDie(c.path_a), mb = testing::LoadMeshOrDie(c.path_b);
    const auto a = Build(ma), b = Build(mb);
    std::mt19937_64 rng(16);
    int64_t cold_work = 0, warm_work = 0;
    for (int motion = 0; motion < 5; ++motion) {
      const RigidTransform X0 = RandomPose(rng, c.lo, c.hi), X1 = RandomPose(rng, c.lo, c.hi);
      const Eigen::Quaterniond q0(X0.R), q1(X1.R);
      DistanceCache cache;
      for (int step = 0; step <= 50; ++step) {
        const double t = step / 50.0;
        const RigidTransform X(q0.slerp(t, q1).toRotationMatrix(), (1 - t) * X0.p + t * X1.p);
        DistanceResult cold, warm;
        PROX_ASSERT_OK_AND_ASSIGN(cold, ComputeDistance(*a, RigidTransform(), *b, X, {}, nullptr));
        PROX_ASSERT_OK_AND_ASSIGN(warm, ComputeDistance(*a, RigidTransform(), *b, X, {}, &cache));
        EXPECT_NEAR(warm.upper_bound, cold.upper_bound, 1e-12 * std::max(1.0, cold.upper_bound));
        EXPECT_GE(warm.lower_bound,
                  warm.upper_bound * (1 - 1e-12) - testing::QueryRoundingAllowance(ma, RigidTransform(), mb, X));
        cold_work += cold.stats.triangle_tests + cold.stats.bv_tests;
        warm_work += warm.stats.triangle_tests + warm.stats.bv_tests;
      }
    }
    EXPECT_LT(warm_work, cold_work);
  }
}

// A warm walk along a smooth motion (a controller's queries) reuses storage instead of allocating: the
// walk's queue, its start and the new front live in per-thread scratch, and the new front is swapped with
// the cache's, whose storage comes back as scratch. Allocations happen only while the storage grows, far
// fewer than one a query (a walk that allocated its queue, start list or front afresh makes at least
// three a query).
TEST_F(RealMeshes, WarmQueriesReuseTheirStorage) {
  for (const PairCase& c : RealCases()) {
    SCOPED_TRACE(c.name);
    const auto a = Build(testing::LoadMeshOrDie(c.path_a)), b = Build(testing::LoadMeshOrDie(c.path_b));
    std::mt19937_64 rng(23);
    const RigidTransform X0 = RandomPose(rng, c.lo, c.hi), X1 = RandomPose(rng, c.lo, c.hi);
    const Eigen::Quaterniond q0(X0.R), q1(X1.R);
    DistanceCache cache;
    constexpr int kSteps = 400, kWarmUp = 20;
    int64_t allocations = 0;
    for (int step = 0; step <= kSteps; ++step) {
      const double t = static_cast<double>(step) / kSteps;
      const RigidTransform X(q0.slerp(t, q1).toRotationMatrix(), (1 - t) * X0.p + t * X1.p);
      g_allocations = 0;
      g_count_allocations = step >= kWarmUp;
      const Result<DistanceResult> r = ComputeDistance(*a, RigidTransform(), *b, X, {}, &cache);
      g_count_allocations = false;
      allocations += g_allocations;
      ASSERT_TRUE(r.ok()) << r.error().message;
    }
    EXPECT_LT(allocations, (kSteps - kWarmUp) / 4) << allocations << " allocations in " << kSteps - kWarmUp
                                                   << " queries";
  }
}

// A random sweep of up to two axes near a model (points within `reach` of its frame's origin), each
// turned by at most max_angle.
internal::AxisSweep RandomSweep(std::mt19937_64& rng, double reach, double max_angle) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  internal::AxisSweep s;
  s.count = static_cast<int32_t>(rng() % 3);
  for (int32_t k = 0; k < s.count; ++k) {
    s.point[k] = RandomPose(rng, Vec3::Constant(-reach), Vec3::Constant(reach)).p;
    s.direction[k] = testing::RandomRotation(rng).col(0);
    s.angle[k] = max_angle * u(rng);
  }
  return s;
}

// The pose change of a sweep's model: axis 0 turned by t0, then axis 1 by t1 (carrying axis 0 along),
// about the axes as they lie at the sweep's start, in the model's frame.
RigidTransform SweepMotion(const internal::AxisSweep& s, double t0, double t1) {
  RigidTransform X;
  const double t[2] = {t0, t1};
  for (int32_t k = 0; k < s.count; ++k) {
    RigidTransform turn;
    turn.R = Eigen::AngleAxisd(t[k], s.direction[k]).toRotationMatrix();
    turn.p = s.point[k] - turn.R * s.point[k];
    X = turn * X;
  }
  return X;
}

// AxisSweep::Bound holds for every point of a ball at every pair of angles within the sweep's, the
// extremes included, and is tight within a factor of a few (one axis: exactly angle times the ball's
// farthest distance from it, so a bound that dropped the ball's radius fails).
TEST(SweptDistance, AxisSweepBoundsEveryPointsMotion) {
  std::mt19937_64 rng(71);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  int tight = 0, asked = 0;
  for (int c = 0; c < 2000; ++c) {
    const internal::AxisSweep s = RandomSweep(rng, 0.5, 0.3);
    const Vec3 center = RandomPose(rng, Vec3::Constant(-0.6), Vec3::Constant(0.6)).p;
    const double radius = 0.1 * (u(rng) + 1.0);
    const double bound = s.Bound(center, radius);
    double most = 0.0;
    for (int k = 0; k < 40; ++k) {
      const double t0 = k < 4 ? (k & 1 ? 1 : -1) * s.angle[0] : s.angle[0] * u(rng);
      const double t1 = k < 4 ? (k & 2 ? 1 : -1) * s.angle[1] : s.angle[1] * u(rng);
      const RigidTransform X = SweepMotion(s, t0, t1);
      Vec3 dir = testing::RandomRotation(rng).col(0);
      if (k < 4 && s.count > 0) dir = (center - s.point[0]).cross(s.direction[0]).cross(s.direction[0]).normalized();
      for (double sign : {-1.0, 1.0}) {
        const Vec3 p = center + sign * radius * dir;
        most = std::max(most, (X * p - p).norm());
      }
    }
    ASSERT_LE(most, bound * (1.0 + 1e-12) + 1e-15) << "case " << c;
    if (s.count > 0) {
      ++asked;
      tight += most >= 0.5 * bound;
    }
  }
  EXPECT_GT(2 * tight, asked) << "the bound should be within twice the largest sampled motion in most cases";
}

// The swept lower bound never exceeds the distance at any pose its sweeps reach (sampled, extremes
// included) on pairs of real meshes placed near each other, and proves a good share of the pairs that
// keep apart over their sweep (at least a quarter over all the meshes; about half in a Release build). The walk is asked to prove 0.9 times the smallest sampled distance,
// so it descends until the bound is close to the truth.
TEST_F(RealMeshes, SweptLowerBoundHoldsOverTheSweep) {
  int proven = 0, apart = 0;
  for (const PairCase& c : RealCases()) {
    if (c.a_at_identity) continue;  // envrob: a static environment, no joints
    SCOPED_TRACE(c.name);
    const TriangleMesh ma = testing::LoadMeshOrDie(c.path_a), mb = testing::LoadMeshOrDie(c.path_b);
    const auto a = Build(ma), b = Build(mb);
    std::mt19937_64 rng(72);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (const Posed& p : Poses(c, testing::Cases(60), 73)) {
      const double reach = internal::ModelReach(*a) + internal::ModelReach(*b);
      const internal::AxisSweep sa = RandomSweep(rng, reach, 0.02), sb = RandomSweep(rng, reach, 0.02);
      double least = std::numeric_limits<double>::infinity();
      for (int k = 0; k < 24; ++k) {
        auto angle = [&](const internal::AxisSweep& s, int i, int bit) {
          return k < 16 ? ((k >> bit) & 1 ? 1 : -1) * s.angle[i] : s.angle[i] * u(rng);
        };
        const RigidTransform X_A = p.X_WA * SweepMotion(sa, angle(sa, 0, 0), angle(sa, 1, 1));
        const RigidTransform X_B = p.X_WB * SweepMotion(sb, angle(sb, 0, 2), angle(sb, 1, 3));
        DistanceResult d;
        PROX_ASSERT_OK_AND_ASSIGN(d, ComputeDistance(*a, X_A, *b, X_B, {}, nullptr));
        least = std::min(least, d.upper_bound);
      }
      QueryStats stats;
      const double target = 0.9 * least;
      const double swept = internal::SweptDistanceLowerBound(*a, p.X_WA, sa, *b, p.X_WB, sb, target, 1 << 20, &stats);
      EXPECT_LE(swept, least) << "swept lower bound above a distance the sweep reaches";
      if (least > 0.0) {
        ++apart;
        proven += swept > target;
      }
      EXPECT_GT(stats.bv_tests, 0);
    }
    std::printf("%s: %d of %d pairs apart over their sweep proven to 0.9 of the least sampled distance so far\n",
                c.name.c_str(), proven, apart);
  }
  EXPECT_GT(apart, 0);
  EXPECT_GE(4 * proven, apart) << "the walk should prove a good share of the pairs apart over their sweep";
}

TEST_F(RealMeshes, CachedFrontStaysExactThroughJumpsContactsAndBudgets) {
  for (const PairCase& c : RealCases()) {
    SCOPED_TRACE(c.name);
    const TriangleMesh ma = testing::LoadMeshOrDie(c.path_a), mb = testing::LoadMeshOrDie(c.path_b);
    const auto a = Build(ma), b = Build(mb);
    const auto poses = Poses(c, 40, 17);
    std::mt19937_64 rng(18);
    DistanceCache cache;
    int contacts = 0, steps = 0, jumps = 0;
    for (size_t m = 0; m + 1 < poses.size(); ++m) {
      // Motions between consecutive poses (through contact and out again), some cut short by a jump.
      const RigidTransform& X0 = poses[m].X_WB;
      const RigidTransform& X1 = poses[m + 1].X_WB;
      const Eigen::Quaterniond q0(X0.R), q1(X1.R);
      const int n = 30;
      for (int k = 0; k <= n; ++k) {
        const double t = k / double(n);
        RigidTransform X(q0.slerp(t, q1).toRotationMatrix(), (1 - t) * X0.p + t * X1.p);
        if (std::uniform_int_distribution<int>(0, 40)(rng) == 0) {
          X = poses[std::uniform_int_distribution<size_t>(0, poses.size() - 1)(rng)].X_WB;
          ++jumps;
        }
        const RigidTransform& X_WA = poses[m].X_WA;
        DistanceRequest req;
        req.rel_err = (k % 3 == 0) ? 0.2 : 0.0;
        DistanceResult cold, warm;
        PROX_ASSERT_OK_AND_ASSIGN(cold, ComputeDistance(*a, X_WA, *b, X, {}, nullptr));
        PROX_ASSERT_OK_AND_ASSIGN(warm, ComputeDistance(*a, X_WA, *b, X, req, &cache));
        const double truth = cold.upper_bound;
        const double tol = 1e-12 * std::max(1.0, truth);
        EXPECT_LE(warm.lower_bound, truth + tol) << "motion " << m << " step " << k;
        EXPECT_GE(warm.upper_bound, truth - tol) << "motion " << m << " step " << k;
        EXPECT_EQ(warm.intersecting, cold.intersecting) << "motion " << m << " step " << k;
        if (req.rel_err == 0.0) {
          EXPECT_NEAR(warm.upper_bound, truth, tol) << "motion " << m << " step " << k;
          EXPECT_GE(warm.lower_bound,
                    warm.upper_bound * (1 - 1e-12) - testing::QueryRoundingAllowance(ma, X_WA, mb, X));
        } else {
          EXPECT_LE(warm.upper_bound, warm.lower_bound * 1.2 + tol);
        }
        contacts += cold.intersecting;
        ++steps;
      }
    }
    EXPECT_GT(contacts, 0);
    EXPECT_LT(contacts, steps);
    EXPECT_GT(jumps, 0);
  }
}

TEST(MeshQuery, CacheFromOtherModelsIsIgnored) {
  const auto box = Build(MakeBoxMesh(Vec3::Ones()));
  const auto ball = Build(MakeIcosphereMesh(0.5, 2));
  RigidTransform X;
  X.p = Vec3(3, 0, 0);
  DistanceCache cache;
  DistanceResult r;
  PROX_ASSERT_OK_AND_ASSIGN(r, ComputeDistance(*box, {}, *ball, X, {}, &cache));
  EXPECT_EQ(cache.model_a, box.get());
  // Same cache, other models: still the right answer.
  const auto big = Build(MakeIcosphereMesh(1.0, 3));
  PROX_ASSERT_OK_AND_ASSIGN(r, ComputeDistance(*big, {}, *box, X, {}, &cache));
  EXPECT_NEAR(r.upper_bound, 3 - 0.5 - 1.0, 1e-9);
  EXPECT_EQ(cache.model_a, big.get());
}

// Near-contact poses that break other libraries: the flag must be right and nothing may be NaN.
class NearContact : public ::testing::Test {
 protected:
  std::shared_ptr<const MeshModel> box_ = Build(MakeBoxMesh(Vec3::Ones()));

  void Expect(const RigidTransform& X_WB, bool colliding, double distance, double tol = 1e-12) {
    CollisionResult c;
    PROX_ASSERT_OK_AND_ASSIGN(c, Collide(*box_, {}, *box_, X_WB, {}));
    EXPECT_EQ(c.colliding, colliding);
    DistanceResult d;
    PROX_ASSERT_OK_AND_ASSIGN(d, ComputeDistance(*box_, {}, *box_, X_WB, {}, nullptr));
    EXPECT_TRUE(std::isfinite(d.upper_bound) && std::isfinite(d.lower_bound));
    EXPECT_TRUE(d.p_WA.allFinite() && d.p_WB.allFinite());
    EXPECT_NEAR(d.upper_bound, distance, tol);
    EXPECT_EQ(d.intersecting, colliding);
    EXPECT_EQ(BruteForceCollide(box_->mesh(), {}, box_->mesh(), X_WB), colliding);
  }
};

TEST_F(NearContact, FaceToFaceTouching) {
  RigidTransform X;
  X.p = Vec3(1, 0, 0);
  Expect(X, true, 0.0);
  X.p = Vec3(1, 0.5, 0.25);  // offset faces, still touching
  Expect(X, true, 0.0);
}

TEST_F(NearContact, SeparatedByOneNanometre) {
  RigidTransform X;
  X.p = Vec3(1 + 1e-9, 0, 0);
  Expect(X, false, 1e-9, 1e-15);
  X.p = Vec3(0, 0, -1 - 1e-9);
  Expect(X, false, 1e-9, 1e-15);
}

TEST_F(NearContact, EdgeOnEdge) {
  // A is rolled 45 degrees about x, so its top is an edge along x at height sqrt(1/2); B is rolled
  // 45 degrees about y, so its bottom is an edge along y. The two edges cross at B's height 2 sqrt(1/2).
  const double s = std::sqrt(0.5);
  RigidTransform Xa, X;
  Xa.R = Eigen::AngleAxisd(M_PI / 4, Vec3::UnitX()).toRotationMatrix();
  X.R = Eigen::AngleAxisd(M_PI / 4, Vec3::UnitY()).toRotationMatrix();
  X.p = Vec3(0, 0, 2 * s + 1e-7);
  CollisionResult c;
  DistanceResult d;
  PROX_ASSERT_OK_AND_ASSIGN(c, Collide(*box_, Xa, *box_, X, {}));
  PROX_ASSERT_OK_AND_ASSIGN(d, ComputeDistance(*box_, Xa, *box_, X, {}, nullptr));
  EXPECT_FALSE(c.colliding);
  EXPECT_NEAR(d.upper_bound, 1e-7, 1e-12);
  X.p.z() = 2 * s - 1e-7;
  PROX_ASSERT_OK_AND_ASSIGN(c, Collide(*box_, Xa, *box_, X, {}));
  PROX_ASSERT_OK_AND_ASSIGN(d, ComputeDistance(*box_, Xa, *box_, X, {}, nullptr));
  EXPECT_TRUE(c.colliding);
  EXPECT_EQ(d.upper_bound, 0.0);
  EXPECT_TRUE(d.intersecting);
}

TEST_F(NearContact, IdenticalMeshesAtIdentity) { Expect(RigidTransform(), true, 0.0); }

TEST_F(NearContact, StackedCubesAcrossManyRotations) {
  // A cube resting on another, spun about the vertical axis: always touching.
  for (int k = 0; k < 36; ++k) {
    RigidTransform X;
    X.R = Eigen::AngleAxisd(k * M_PI / 18, Vec3::UnitZ()).toRotationMatrix();
    X.p = Vec3(0.1, -0.2, 1.0);
    Expect(X, true, 0.0);
  }
}

TEST(MeshQuery, RejectsBadPosesAndRequests) {
  const auto box = Build(MakeBoxMesh(Vec3::Ones()));
  RigidTransform nan;
  nan.p.x() = std::nan("");
  Status s = Collide(*box, nan, *box, {}, {}).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message.find("X_WA"), std::string::npos);
  s = ComputeDistance(*box, {}, *box, nan, {}, nullptr).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("X_WB"), std::string::npos);

  RigidTransform sheared;
  sheared.R(0, 1) = 0.5;
  EXPECT_FALSE(Collide(*box, {}, *box, sheared, {}).ok());
  RigidTransform mirrored;
  mirrored.R(2, 2) = -1;
  EXPECT_FALSE(ComputeDistance(*box, mirrored, *box, {}, {}, nullptr).ok());

  for (auto bad : {DistanceRequest{-0.1, 0, 1}, DistanceRequest{0, -1, 1}, DistanceRequest{std::nan(""), 0, 1},
                   DistanceRequest{0, std::nan(""), 1}, DistanceRequest{0, 0, -1}, DistanceRequest{0, 0, std::nan("")},
                   DistanceRequest{0, 0, 1, 0, -1}, DistanceRequest{0, 0, 1, 0, std::nan("")}}) {
    s = ComputeDistance(*box, {}, *box, {}, bad, nullptr).status();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  }
  CollisionRequest creq;
  creq.all_contacts = true;
  creq.max_contacts = 0;
  EXPECT_FALSE(Collide(*box, {}, *box, {}, creq).ok());
}

TEST(MeshQuery, ContactListTruncatesAtTheLimit) {
  const auto ball = Build(MakeIcosphereMesh(1.0, 3));
  RigidTransform X;
  X.p = Vec3(0.5, 0, 0);
  CollisionRequest req;
  req.all_contacts = true;
  CollisionResult all;
  PROX_ASSERT_OK_AND_ASSIGN(all, Collide(*ball, {}, *ball, X, req));
  ASSERT_GT(all.contacts.size(), 10u);
  EXPECT_FALSE(all.truncated);
  req.max_contacts = 5;
  CollisionResult some;
  PROX_ASSERT_OK_AND_ASSIGN(some, Collide(*ball, {}, *ball, X, req));
  EXPECT_EQ(some.contacts.size(), 5u);
  EXPECT_TRUE(some.truncated);
}

TEST(MeshQuery, BudgetedWalksSettleTrianglePairsByTheirPlanes) {
  // A ball inside a ball, a little off centre: the surfaces face each other at nearly the same
  // distance everywhere near the nearest point, where box bounds are loose. With a budget, triangle
  // pairs whose planes already hold them apart enough are settled without a triangle test; the
  // interval still brackets the brute-force distance and meets the budget.
  const auto outer = Build(MakeIcosphereMesh(1.0, 3));
  const auto inner = Build(MakeIcosphereMesh(0.9, 3));
  std::mt19937_64 rng(11);
  int64_t exact_tests = 0, budget_tests = 0;
  for (int i = 0; i < 20; ++i) {
    RigidTransform X;
    X.R = testing::RandomRotation(rng);
    X.p = 0.03 * testing::RandomRotation(rng).col(0);
    const double truth = BruteForceDistance(outer->mesh(), {}, inner->mesh(), X);
    DistanceResult exact, budget;
    PROX_ASSERT_OK_AND_ASSIGN(exact, ComputeDistance(*outer, {}, *inner, X, {}, nullptr));
    DistanceRequest req;
    req.rel_err = 0.2;
    PROX_ASSERT_OK_AND_ASSIGN(budget, ComputeDistance(*outer, {}, *inner, X, req, nullptr));
    const double tol = 1e-12;
    EXPECT_NEAR(exact.upper_bound, truth, tol) << "pose " << i;
    EXPECT_LE(budget.lower_bound, truth + tol) << "pose " << i;
    EXPECT_GE(budget.upper_bound, truth - tol) << "pose " << i;
    EXPECT_LE(budget.upper_bound, budget.lower_bound * 1.2 + tol) << "pose " << i;
    exact_tests += exact.stats.triangle_tests;
    budget_tests += budget.stats.triangle_tests;
  }
  // (About 2,200 triangle tests a pose exact, 50 a pose with the budget here; boxes alone left 1,000.)
  EXPECT_LT(budget_tests * 100, exact_tests) << "exact " << exact_tests << ", with the budget " << budget_tests;
}

TEST(MeshQuery, NestedSurfacesDoNotCollide) {
  // Surfaces, not solids: a small ball inside a large one neither collides nor has distance 0.
  const auto big = Build(MakeIcosphereMesh(1.0, 3));
  const auto small = Build(MakeIcosphereMesh(0.25, 2));
  CollisionResult c;
  PROX_ASSERT_OK_AND_ASSIGN(c, Collide(*big, {}, *small, {}, {}));
  EXPECT_FALSE(c.colliding);
  DistanceResult d;
  PROX_ASSERT_OK_AND_ASSIGN(d, ComputeDistance(*big, {}, *small, {}, {}, nullptr));
  EXPECT_NEAR(d.upper_bound, BruteForceDistance(big->mesh(), {}, small->mesh(), {}), 1e-12);
  EXPECT_GT(d.upper_bound, 0.7);
}

}  // namespace
}  // namespace proximity::core
