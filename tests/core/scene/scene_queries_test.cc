// distance(q), padding, attached objects, world updates, path checks and time of first contact,
// each against a brute-force oracle built from the robot model and the world directly (not from the
// scene's internal parts).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "proximity/core/scene/scene.h"
#include "bvh/bvh.h"
#include "scene/scene_impl.h"
#include "scene/scene_internal.h"
#include "narrowphase/convex.h"
#include "base/numerics.h"

namespace proximity::core {
namespace {

Geometry FromLinkGeometry(const LinkGeometry& g) {
  Geometry out;
  switch (g.type) {
    case ShapeType::kMesh:
      out.mesh = g.mesh;
      break;
    case ShapeType::kBox:
      out.shape = Box{0.5 * g.box_size};
      break;
    case ShapeType::kCylinder:
      out.shape = Cylinder{g.radius, 0.5 * g.length};
      break;
    case ShapeType::kSphere:
      out.shape = Sphere{Vec3::Zero(), g.radius};
      break;
  }
  return out;
}

// One posed robot geometry as the oracle sees it: its name for the allowed-collision checks, its link,
// and its padding.
struct OraclePart {
  std::string name;  // link name or attached object id
  int32_t link;
  Geometry geometry;
  RigidTransform X_WG;
  double padding;
};

// Every robot geometry (links and attached objects) posed at q, straight from the description.
std::vector<OraclePart> PoseOracle(const SceneDescription& d, std::span<const double> q) {
  const std::vector<RigidTransform> X_WL = testing::ValueOrFail(d.robot->ForwardKinematics(q, d.X_WB));
  if (X_WL.empty()) return {};  // the failure is reported
  auto pad = [&](const std::string& name) {
    for (const auto& [n, v] : d.padding)
      if (n == name) return v;
    return d.default_padding;
  };
  std::vector<OraclePart> parts;
  for (int32_t l = 0; l < d.robot->num_links(); ++l) {
    for (const LinkGeometry& g : d.robot->link(l).geometries) {
      parts.push_back({d.robot->link(l).name, l, FromLinkGeometry(g), X_WL[l] * g.X_LG, pad(d.robot->link(l).name)});
    }
  }
  for (const AttachedObject& a : d.attached) {
    const int32_t l = d.robot->FindLink(a.link).value();
    for (const AttachedPart& p : a.parts) parts.push_back({a.id, l, p.geometry, X_WL[l] * p.X_LG, pad(a.id)});
  }
  return parts;
}

bool Allowed(const SceneDescription& d, const OraclePart& a, const std::string& other_name, int32_t other_link) {
  if (a.name == other_name) return true;
  for (const auto& [x, y] : d.allowed_pairs)
    if ((x == a.name && y == other_name) || (y == a.name && x == other_name)) return true;
  const bool a_link = a.link >= 0 && d.robot->link(a.link).name == a.name;
  const bool b_link = other_link >= 0 && d.robot->link(other_link).name == other_name;
  if (a_link && b_link) return d.robot->AllowedCollision(a.link, other_link);
  for (const AttachedObject& att : d.attached) {
    const std::string& link_side = att.id == a.name ? other_name : a.name;
    if (att.id != a.name && att.id != other_name) continue;
    if (att.link == link_side) return true;
    for (const std::string& t : att.touch_links)
      if (t == link_side) return true;
  }
  return false;
}

double ExactDistance(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b) {
  const DistanceResult r = testing::ValueOrFail(GeometryDistance(a, X_a, b, X_b, {}));
  return r.intersecting ? 0.0 : r.upper_bound;
}

// Brute-force clearance: every pair not allowed, its exact distance minus its padding (at least 0).
struct OracleAnswer {
  double clearance = std::numeric_limits<double>::infinity();
  int pairs = 0;
};

OracleAnswer Oracle(const SceneDescription& d, std::span<const double> q, bool world = true, bool self = true) {
  const auto parts = PoseOracle(d, q);
  OracleAnswer out;
  for (size_t i = 0; i < parts.size(); ++i) {
    for (const WorldObject& o : d.objects) {
      if (!world || Allowed(d, parts[i], o.id, -1)) continue;
      for (const ObjectPart& p : o.parts) {
        ++out.pairs;
        out.clearance = std::min(out.clearance, std::max(0.0, ExactDistance(parts[i].geometry, parts[i].X_WG,
                                                                            p.geometry, p.X_WG) - parts[i].padding));
      }
    }
    for (size_t j = i + 1; self && j < parts.size(); ++j) {
      if (parts[i].link == parts[j].link && parts[i].name == parts[j].name) continue;
      if (Allowed(d, parts[i], parts[j].name, parts[j].name == d.robot->link(parts[j].link).name ? parts[j].link : -1))
        continue;
      ++out.pairs;
      const double pad = parts[i].padding + parts[j].padding;
      out.clearance = std::min(out.clearance, std::max(0.0, ExactDistance(parts[i].geometry, parts[i].X_WG,
                                                                          parts[j].geometry, parts[j].X_WG) - pad));
    }
  }
  return out;
}

constexpr double kRel = 1e-9;

// Positive controls ("the sample contained a colliding state, so that branch was tested") hold at the
// full case counts of the Release run; the sanitizer builds run a quarter of the cases to check memory
// and undefined behaviour, where such a control may see none.
#define EXPECT_SEEN(count)                \
  if (testing::kSanitizedSlowdown != 1) { \
  } else                                  \
    EXPECT_GT(count, 0)

void ExpectBrackets(const SceneDistanceResult& r, double truth, const std::string& what) {
  EXPECT_LE(r.lower_bound, truth * (1 + kRel) + 1e-12) << what;
  EXPECT_GE(r.upper_bound, truth * (1 - kRel) - 1e-12) << what;
}

// A little padding everywhere and more on one link of the arm. Link pairs that are always checked
// can sit a few millimetres apart (the KR5's forearm and palm), so the default stays small enough
// that free states remain.
SceneDescription PaddedVariant(SceneDescription d) {
  d.default_padding = 0.002;
  d.padding.emplace_back(d.robot->link(2).name, 0.03);
  return d;
}

// The rounding allowance of a scene query's pairs (RoundingAllowance): these scenes lie within 2 m of the
// origin, so each pair's translations and reaches add up to less than 10 m.
const double kSceneRounding = RoundingAllowance(10.0);

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

// The self-clearance maps (link pairs moved by at most two revolute joints: a wrist's) never claim
// more distance than the exact one between the link meshes, decide most states where the links are
// apart once their cells are settled, and say nothing off their grid. Random states within limits on
// every test robot and the MotionBenchMaker Panda, each asked twice (a cell whose convex stand-ins
// cannot decide it is settled on the geometries when used again); every pair of links is asked,
// those without a map answer -1. Pairs that keep millimetres apart across a wrist (the KR5's flange,
// the WAM's wrist) are among them: their maps take a loss fitted to the pair.
TEST(SelfClearanceMaps, NeverExceedTheExactDistanceAndDecideMostStates) {
  std::vector<std::pair<std::string, std::shared_ptr<const RobotModel>>> robots;
  for (const RobotCase& rc : Robots()) robots.emplace_back(rc.name, LoadRobot(rc));
  if (!testing::SharedDataDir().empty()) robots.emplace_back("mbm_panda", LoadMbmPanda());
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  int robots_with_maps = 0;
  for (const auto& [name, robot] : robots) {
    SCOPED_TRACE(name);
    ASSERT_NE(robot, nullptr);
    SceneDescription d;
    d.robot = robot;
    d.self_clearance_fill = SelfClearanceFill::kOnUse;  // the cells filled by the asks below
    const auto scene = Scene::Build(d).value();
    std::mt19937_64 rng(41);
    int mapped_pairs = 0;
    for (int32_t la = 0; la < robot->num_links(); ++la) {
      for (int32_t lb = la + 1; lb < robot->num_links(); ++lb) {
        if (robot->link(la).geometries.empty() || robot->link(lb).geometries.empty()) continue;
        const std::string& a = robot->link(la).name;
        const std::string& b = robot->link(lb).name;
        int asked = 0, apart = 0, decided = 0;
        for (int c = 0; c < testing::Cases(200); ++c) {
          const auto q = RandomState(rng, *robot);
          const Result<double> first = internal::Impl(*scene).SelfClearanceBound(a, b, q);
          ASSERT_TRUE(first.ok()) << first.error().message;
          if (first.value() < 0.0) break;  // no map for this pair
          const Result<double> bound = internal::Impl(*scene).SelfClearanceBound(a, b, q);
          ASSERT_TRUE(bound.ok()) << bound.error().message;
          ++asked;
          std::vector<RigidTransform> X_WL;
          PROX_ASSERT_OK_AND_ASSIGN(X_WL, robot->ForwardKinematics(q));
          const LinkGeometry& ga = robot->link(la).geometries[0];
          const LinkGeometry& gb = robot->link(lb).geometries[0];
          const double exact =
              ExactDistance(FromLinkGeometry(ga), X_WL[la] * ga.X_LG, FromLinkGeometry(gb), X_WL[lb] * gb.X_LG);
          EXPECT_LE(first.value(), exact + 1e-9) << a << " - " << b << ", case " << c;
          EXPECT_LE(bound.value(), exact + 1e-9) << a << " - " << b << ", case " << c;
          EXPECT_GE(bound.value(), first.value()) << "settling a cell never loosens it";
          apart += exact > 0.0;
          decided += bound.value() > 0.0;
          // Off the grid (a mapped joint beyond its limit) the map gives no answer.
          auto off = q;
          for (size_t j = 0; j < off.size(); ++j) off[j] = robot->upper_limits()[j] + 0.5;
          EXPECT_EQ(internal::Impl(*scene).SelfClearanceBound(a, b, off).value(), -1.0);
        }
        if (asked == 0) continue;
        ++mapped_pairs;
        std::printf("%s: %s - %s: %d of %d states decided by the map (%d apart)\n", name.c_str(), a.c_str(),
                    b.c_str(), decided, asked, apart);
        EXPECT_GT(2 * decided, apart) << a << " - " << b << ": settled cells should decide most states where the "
                                      << "links are apart";
      }
    }
    robots_with_maps += mapped_pairs > 0;
    if (name == "mbm_panda") {
      EXPECT_GE(mapped_pairs, 2) << "the Panda's wrist pairs (link5 against link7 and the hand) have maps";
    }
  }
  EXPECT_GT(robots_with_maps, 0);
  SceneDescription d;
  d.robot = robots.front().second;
  const auto scene = Scene::Build(d).value();
  const auto q = d.robot->DefaultConfiguration();
  const Result<double> unknown = internal::Impl(*scene).SelfClearanceBound("no_such_link", d.robot->link(1).name, q);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("no_such_link"), std::string::npos) << unknown.error().message;
  EXPECT_FALSE(internal::Impl(*scene).SelfClearanceBound(d.robot->link(1).name, d.robot->link(2).name,
                                         std::vector<double>(q.size() + 1, 0.0))
                   .ok());
}

// Maps filled ahead of the queries (SelfClearanceFill): at build, or by the background thread. Filled
// maps decide most states where a pair is apart on the first ask, and still never claim more distance
// than the exact one. A build whose stop fires leaves the rest to the background thread. (The UR5's
// shoulder map takes seconds to fill; the arms here take well under one.)
TEST(SelfClearanceMaps, FilledAheadOfTheQueriesAtBuildOrInTheBackground) {
  std::vector<std::pair<std::string, std::shared_ptr<const RobotModel>>> robots;
  for (const RobotCase& rc : Robots()) {
    if (rc.name != "ur5") robots.emplace_back(rc.name, LoadRobot(rc));
  }
  if (!testing::SharedDataDir().empty()) robots.emplace_back("mbm_panda", LoadMbmPanda());
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const auto& [name, robot] : robots) {
    SCOPED_TRACE(name);
    ASSERT_NE(robot, nullptr);
    SceneDescription d;
    d.robot = robot;
    d.self_clearance_fill = SelfClearanceFill::kAtBuild;
    const auto scene = Scene::Build(d).value();
    EXPECT_TRUE(scene->SelfClearanceFilled());
    std::mt19937_64 rng(47);
    int asked = 0, apart = 0, decided = 0;
    for (int32_t la = 0; la < robot->num_links(); ++la) {
      for (int32_t lb = la + 1; lb < robot->num_links(); ++lb) {
        if (robot->link(la).geometries.empty() || robot->link(lb).geometries.empty()) continue;
        const std::string& a = robot->link(la).name;
        const std::string& b = robot->link(lb).name;
        for (int c = 0; c < testing::Cases(100); ++c) {
          const auto q = RandomState(rng, *robot);
          const double bound = internal::Impl(*scene).SelfClearanceBound(a, b, q).value();
          if (bound < 0.0) break;  // no map for this pair
          std::vector<RigidTransform> X_WL;
          PROX_ASSERT_OK_AND_ASSIGN(X_WL, robot->ForwardKinematics(q));
          const LinkGeometry& ga = robot->link(la).geometries[0];
          const LinkGeometry& gb = robot->link(lb).geometries[0];
          const double exact =
              ExactDistance(FromLinkGeometry(ga), X_WL[la] * ga.X_LG, FromLinkGeometry(gb), X_WL[lb] * gb.X_LG);
          EXPECT_LE(bound, exact + 1e-9) << a << " - " << b << ", case " << c;
          ++asked;
          apart += exact > 0.0;
          decided += bound > 0.0;
        }
      }
    }
    if (asked == 0) continue;
    EXPECT_GT(2 * decided, apart) << "filled maps decide most states where the links are apart on the first ask";
  }
  // The background thread: a fresh model's maps, filled once the thread is done.
  const auto robot = LoadRobot(Robots().front());
  ASSERT_NE(robot, nullptr);
  SceneDescription d;
  d.robot = robot;
  d.self_clearance_maps = SelfClearanceMaps::For(robot);  // both scenes below share them
  d.self_clearance_fill = SelfClearanceFill::kOnUse;
  // The stop is asked while the parts are paired and, at build, every 64 cells of a fill: counted on a
  // build that fills nothing, it is made to fire a few asks into the fill.
  int64_t asks = 0, fire_after = -1;
  auto stop = [&] { return ++asks > fire_after && fire_after >= 0; };
  d.stop = Interrupt(stop);
  const auto lazy = Scene::Build(d).value();
  EXPECT_FALSE(lazy->SelfClearanceFilled()) << "kOnUse fills nothing ahead";
  d.self_clearance_fill = SelfClearanceFill::kAtBuild;
  fire_after = asks + 3;
  asks = 0;
  const auto stopped = Scene::Build(d);
  ASSERT_TRUE(stopped.ok()) << stopped.error().message;
  EXPECT_GT(asks, fire_after) << "the stop fired during the fill";
  AwaitSelfClearanceFill();
  EXPECT_TRUE(stopped.value()->SelfClearanceFilled()) << "the background thread takes over what the build left";
  EXPECT_TRUE(lazy->SelfClearanceFilled()) << "scenes given one SelfClearanceMaps share it: both see the maps filled";
}

// The maps belong to whoever builds the scenes, not to the robot model: a scene given none makes its
// own (another scene on the same model does not see what it fills), scenes given one object share it,
// Update and Description hand it on, and maps made for another robot model are refused by name.
TEST(SelfClearanceMaps, OwnedByWhoeverBuildsScenesNotByTheRobotModel) {
  std::shared_ptr<const RobotModel> robot;
  for (const RobotCase& rc : Robots()) {
    auto r = LoadRobot(rc);
    ASSERT_NE(r, nullptr);
    SceneDescription probe;
    probe.robot = r;
    probe.self_clearance_fill = SelfClearanceFill::kOnUse;
    if (Scene::Build(probe).value()->self_clearance_maps()->num_maps() > 0) {
      robot = r;
      break;
    }
  }
  if (robot == nullptr) GTEST_SKIP() << "no test robot with a self-clearance map (needs dart-doc or ../shared/data)";
  SceneDescription d;
  d.robot = robot;
  d.self_clearance_fill = SelfClearanceFill::kAtBuild;
  const auto filled = Scene::Build(d).value();
  ASSERT_NE(filled->self_clearance_maps(), nullptr);
  EXPECT_EQ(filled->self_clearance_maps()->robot(), robot);
  EXPECT_TRUE(filled->SelfClearanceFilled());
  const int64_t maps = filled->self_clearance_maps()->num_maps();
  EXPECT_GT(maps, 0);
  EXPECT_GT(filled->self_clearance_maps()->bytes(), maps * static_cast<int64_t>(sizeof(float)));

  // Another scene on the same model, given no maps: its own, unfilled.
  d.self_clearance_fill = SelfClearanceFill::kOnUse;
  const auto own = Scene::Build(d).value();
  EXPECT_NE(own->self_clearance_maps(), filled->self_clearance_maps());
  EXPECT_EQ(own->self_clearance_maps()->num_maps(), maps);
  AwaitSelfClearanceFill();
  EXPECT_FALSE(own->SelfClearanceFilled()) << "the model keeps no maps: the first scene's fill is not this one's";

  // Given the first scene's maps: shared, filled.
  d.self_clearance_maps = filled->self_clearance_maps();
  const auto shared = Scene::Build(d).value();
  EXPECT_EQ(shared->self_clearance_maps(), filled->self_clearance_maps());
  EXPECT_TRUE(shared->SelfClearanceFilled());
  EXPECT_EQ(filled->self_clearance_maps()->num_maps(), maps) << "the same pairs make no new maps";

  // Handed on by Update and Description.
  const auto updated = own->Update(WorldUpdate{}).value();
  EXPECT_EQ(updated->self_clearance_maps(), own->self_clearance_maps());
  EXPECT_EQ(own->Description().self_clearance_maps, own->self_clearance_maps());

  // Maps made for another model (the same files loaded again) are refused, naming them.
  SceneDescription other;
  other.robot = LoadRobot(Robots().front());
  ASSERT_NE(other.robot, nullptr);
  ASSERT_NE(other.robot, robot);
  other.self_clearance_maps = filled->self_clearance_maps();
  const auto refused = Scene::Build(other);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("self_clearance_maps"), std::string::npos) << refused.error().message;
}

// A segment the self-clearance map proves apart (as certified LINK asks it, cell by cell along the
// segment) keeps the pair apart at every state of a dense sampling (joints at most 1e-3 rad apart),
// by the exact distance between the link meshes. Short random segments around random states on every
// test robot, each asked twice (the second time over cells the first settled).
TEST(SelfClearanceMaps, SegmentsProvenApartStayApartAtDenseSamples) {
  std::vector<std::pair<std::string, std::shared_ptr<const RobotModel>>> robots;
  for (const RobotCase& rc : Robots()) robots.emplace_back(rc.name, LoadRobot(rc));
  if (!testing::SharedDataDir().empty()) robots.emplace_back("mbm_panda", LoadMbmPanda());
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  int proven = 0, asked = 0;
  for (const auto& [name, robot] : robots) {
    SCOPED_TRACE(name);
    SceneDescription d;
    d.robot = robot;
    const auto scene = Scene::Build(d).value();
    std::mt19937_64 rng(43);
    for (int32_t la = 0; la < robot->num_links(); ++la) {
      for (int32_t lb = la + 1; lb < robot->num_links(); ++lb) {
        if (robot->link(la).geometries.empty() || robot->link(lb).geometries.empty()) continue;
        const std::string& a = robot->link(la).name;
        const std::string& b = robot->link(lb).name;
        if (internal::Impl(*scene).SelfClearanceBound(a, b, robot->DefaultConfiguration()).value() < 0.0) continue;  // no map
        const LinkGeometry& ga = robot->link(la).geometries[0];
        const LinkGeometry& gb = robot->link(lb).geometries[0];
        for (int c = 0; c < testing::Cases(12); ++c) {
          const auto q0 = RandomState(rng, *robot);
          auto q1 = q0;
          std::uniform_real_distribution<double> delta(-0.08, 0.08);
          for (size_t j = 0; j < q1.size(); ++j) {
            q1[j] = std::clamp(q1[j] + delta(rng), robot->lower_limits()[j], robot->upper_limits()[j]);
          }
          bool apart = false;
          for (int ask = 0; ask < 2; ++ask) {
            PROX_ASSERT_OK_AND_ASSIGN(apart, internal::Impl(*scene).SelfClearAlong(a, b, q0, q1));
          }
          ++asked;
          if (!apart) continue;
          ++proven;
          double span = 0.0;
          for (size_t j = 0; j < q0.size(); ++j) span = std::max(span, std::abs(q1[j] - q0[j]));
          const int n = static_cast<int>(std::ceil(span / 1e-3));
          std::vector<double> q(q0.size());
          for (int k = 0; k <= n; ++k) {
            const double t = n == 0 ? 0.0 : static_cast<double>(k) / n;
            for (size_t j = 0; j < q.size(); ++j) q[j] = q0[j] + t * (q1[j] - q0[j]);
            std::vector<RigidTransform> X_WL;
            PROX_ASSERT_OK_AND_ASSIGN(X_WL, robot->ForwardKinematics(q));
            const double exact =
                ExactDistance(FromLinkGeometry(ga), X_WL[la] * ga.X_LG, FromLinkGeometry(gb), X_WL[lb] * gb.X_LG);
            ASSERT_GT(exact, 0.0) << a << " - " << b << ", case " << c << ": proven apart, in contact at t = " << t;
          }
        }
      }
    }
  }
  std::printf("%d of %d segments proven apart by the maps\n", proven, asked);
  EXPECT_GT(2 * proven, asked) << "the maps should prove most short segments apart";
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

TEST(ScenePadding, ClearAndCertifiedLinkHonourPadding) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    std::mt19937_64 rng(23);
    const SceneDescription d = PaddedVariant(RandomWorldScene(rc, rng, 10));
    const auto scene = Scene::Build(d).value();
    const auto bare = Scene::Build([&] {
                        SceneDescription b = d;
                        b.default_padding = 0;
                        b.padding.clear();
                        return b;
                      }())
                          .value();
    SceneCache cache;
    int only_padded = 0;
    for (int c = 0; c < testing::Cases(150); ++c) {
      const auto q = RandomState(rng, *d.robot);
      StateResult padded, unpadded;
      PROX_ASSERT_OK_AND_ASSIGN(padded, scene->CheckState(q, &cache));
      PROX_ASSERT_OK_AND_ASSIGN(unpadded, bare->CheckState(q, &cache));
      const OracleAnswer truth = Oracle(d, q);
      EXPECT_EQ(padded.free, truth.clearance > 0.0) << "case " << c << " clearance " << truth.clearance;
      if (!unpadded.free) {
        EXPECT_FALSE(padded.free);
      }
      only_padded += unpadded.free && !padded.free;
    }
    EXPECT_SEEN(only_padded) << "padding never changed an answer: the test cannot tell padding from none";
    for (int e = 0; e < testing::Cases(25); ++e) {
      const auto [q0, q1] = RandomEdge(rng, *scene, &cache);
      MotionResult m;
      PROX_ASSERT_OK_AND_ASSIGN(m, scene->CheckMotion(q0, q1, {}, &cache));
      const double dense = DenseFirstCollision(*scene, q0, q1, &cache);
      if (dense >= 0.0) {
        EXPECT_FALSE(m.free) << "edge " << e << ": padded dense check collides at " << dense;
      }
      if (!m.free && !m.undecided) {
        EXPECT_LE(m.t_free, m.t_collide);
      }
    }
  }
}

// CLEAR and LINK with a clearance: a pair closer than the clearance beyond its padding counts as a
// contact, against the brute-force clearance of every pair; certified LINK never calls a segment free
// when a dense state breaks the clearance, and the sampled check agrees with CLEAR state by state.
TEST(SceneClearance, ClearAndLinkCountPairsCloserThanTheClearanceAsContacts) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    std::mt19937_64 rng(29);
    const SceneDescription d = PaddedVariant(RandomWorldScene(rc, rng, 10));
    const auto scene = Scene::Build(d).value();
    SceneCache cache;
    std::vector<std::vector<double>> states;
    std::vector<double> truths, positive;
    for (int c = 0; c < testing::Cases(150); ++c) {
      states.push_back(RandomState(rng, *d.robot));
      truths.push_back(Oracle(d, states.back()).clearance);
      if (truths.back() > 0.0) positive.push_back(truths.back());
    }
    ASSERT_GE(positive.size(), 4u) << "too few free states to choose a clearance from";
    // Half the free states keep it: both answers are common (some robots' links always pass within
    // a few millimetres of each other, so no fixed value suits every robot).
    std::nth_element(positive.begin(), positive.begin() + positive.size() / 2, positive.end());
    const double clearance = positive[positive.size() / 2];
    SCOPED_TRACE("clearance " + std::to_string(clearance));
    int only_with_clearance = 0;
    for (size_t c = 0; c < states.size(); ++c) {
      const double truth = truths[c];
      if (std::abs(truth - clearance) < 1e-9) continue;  // on the boundary either answer holds
      StateResult plain, kept;
      PROX_ASSERT_OK_AND_ASSIGN(plain, scene->CheckState(states[c], &cache));
      PROX_ASSERT_OK_AND_ASSIGN(kept, scene->CheckState(states[c], &cache, clearance));
      EXPECT_EQ(kept.free, truth > clearance) << "case " << c << " clearance " << truth;
      if (!kept.free) {
        EXPECT_GE(kept.contact.link, 0) << "case " << c << ": a contact names its parts";
      }
      only_with_clearance += plain.free && !kept.free;
    }
    EXPECT_GT(only_with_clearance, 0) << "the clearance never changed an answer";

    int certified_free = 0, refused = 0;
    for (int e = 0; e < testing::Cases(25); ++e) {
      const auto [q0, q1] = RandomEdge(rng, *scene, &cache);
      MotionRequest certified;
      certified.clearance = clearance;
      MotionResult m, plain;
      PROX_ASSERT_OK_AND_ASSIGN(m, scene->CheckMotion(q0, q1, certified, &cache));
      PROX_ASSERT_OK_AND_ASSIGN(plain, scene->CheckMotion(q0, q1, {}, &cache));
      const double dense = DenseFirstCollision(*scene, q0, q1, &cache, clearance);
      if (dense >= 0.0) {
        EXPECT_FALSE(m.free) << "edge " << e << ": the dense check breaks the clearance at " << dense;
      }
      if (m.free) {
        ++certified_free;
        EXPECT_TRUE(plain.free) << "edge " << e << ": free with a clearance but not without";
      }
      refused += plain.free && !m.free;
      MotionRequest sampled;
      sampled.mode = MotionRequest::Mode::kDiscrete;
      sampled.resolution = 0.05;
      sampled.clearance = clearance;
      MotionResult s;
      PROX_ASSERT_OK_AND_ASSIGN(s, scene->CheckMotion(q0, q1, sampled, &cache));
      // The sampled check's states, one by one.
      double length = 0.0;
      for (size_t i = 0; i < q0.size(); ++i) length += (q1[i] - q0[i]) * (q1[i] - q0[i]);
      const int n = std::max(1, static_cast<int>(std::ceil(std::sqrt(length) / sampled.resolution)));
      bool all_kept = true;
      for (int k = 0; k <= n && all_kept; ++k) {
        StateResult r;
        PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckState(Along(q0, q1, static_cast<double>(k) / n), &cache, clearance));
        all_kept = r.free;
      }
      EXPECT_EQ(s.free, all_kept) << "edge " << e;
    }
    EXPECT_SEEN(certified_free) << "no edge kept the clearance: the never-free branch alone was tested";
    EXPECT_SEEN(refused) << "the clearance never refused a free edge";
  }
}

// MotionRequest::clearance_world_only: the clearance binds robot-world pairs only, pairs of robot parts
// need only not touch. Oracle: the brute-force world and self clearances apart, state by state (the
// sampled check's states, each asked as the request asks it).
TEST(SceneClearance, ClearanceFromTheWorldOnlyLetsRobotPartsComeCloser) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    std::mt19937_64 rng(37);
    const SceneDescription d = PaddedVariant(RandomWorldScene(rc, rng, 10));
    const auto scene = Scene::Build(d).value();
    SceneCache cache;
    // A clearance most self pairs break somewhere: the median of the free states' self clearances.
    std::vector<double> selfs;
    for (int c = 0; c < 40; ++c) {
      const auto q = RandomState(rng, *d.robot);
      const double self = Oracle(d, q, false, true).clearance;
      if (self > 0.0 && Oracle(d, q, true, false).clearance > 0.0) selfs.push_back(self);
    }
    ASSERT_GE(selfs.size(), 4u);
    std::nth_element(selfs.begin(), selfs.begin() + selfs.size() / 2, selfs.end());
    const double clearance = selfs[selfs.size() / 2];
    int differ = 0, edges = 0;
    for (int e = 0; e < testing::Cases(16); ++e) {
      const auto [q0, q1] = RandomEdge(rng, *scene, &cache);
      MotionRequest both, world_only;
      both.mode = world_only.mode = MotionRequest::Mode::kDiscrete;
      both.resolution = world_only.resolution = 0.1;
      both.clearance = world_only.clearance = clearance;
      world_only.clearance_world_only = true;
      MotionResult a, b;
      PROX_ASSERT_OK_AND_ASSIGN(a, scene->CheckMotion(q0, q1, both, &cache));
      PROX_ASSERT_OK_AND_ASSIGN(b, scene->CheckMotion(q0, q1, world_only, &cache));
      // The oracle over the same states: the world kept at the clearance, the robot's parts apart.
      double length = 0.0;
      for (size_t i = 0; i < q0.size(); ++i) length += (q1[i] - q0[i]) * (q1[i] - q0[i]);
      const int n = std::max(1, static_cast<int>(std::ceil(std::sqrt(length) / world_only.resolution)));
      bool kept = true, on_boundary = false;
      for (int k = 0; k <= n && kept; ++k) {
        const auto q = Along(q0, q1, static_cast<double>(k) / n);
        const double world = Oracle(d, q, true, false).clearance, self = Oracle(d, q, false, true).clearance;
        on_boundary |= std::abs(world - clearance) < 1e-9 || self < 1e-9;
        kept = world > clearance && self > 0.0;
      }
      if (on_boundary) continue;
      ++edges;
      EXPECT_EQ(b.free, kept) << "edge " << e;
      if (a.free) EXPECT_TRUE(b.free) << "edge " << e << ": free keeping every pair apart, not the world alone";
      differ += b.free && !a.free;
    }
    EXPECT_GT(edges, 0);
    EXPECT_SEEN(differ) << "no edge was refused for its robot parts alone";
  }
}

TEST(SceneClearance, BadClearanceIsRejectedByName) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  std::mt19937_64 rng(31);
  const auto scene = Scene::Build(RandomWorldScene(robots.front(), rng, 3)).value();
  SceneCache cache;
  const auto q = scene->robot().DefaultConfiguration();
  for (const double bad : {-0.01, std::nan(""), std::numeric_limits<double>::infinity()}) {
    const Status s = scene->CheckState(q, &cache, bad).status();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("clearance"), std::string::npos) << s.error().message;
    for (const auto mode : {MotionRequest::Mode::kCertified, MotionRequest::Mode::kDiscrete}) {
      MotionRequest request;
      request.mode = mode;
      request.clearance = bad;
      const Status ms = scene->CheckMotion(q, q, request, &cache).status();
      ASSERT_FALSE(ms.ok());
      EXPECT_NE(ms.error().message.find("clearance"), std::string::npos) << ms.error().message;
    }
  }
}

TEST(ScenePadding, BadPaddingIsRejected) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  SceneDescription d;
  d.robot = LoadRobot(robots.front());
  d.default_padding = -0.1;
  EXPECT_FALSE(Scene::Build(d).ok());
  d.default_padding = std::nan("");
  EXPECT_FALSE(Scene::Build(d).ok());
  d.default_padding = 0;
  d.padding = {{"no_such_link", 0.1}};
  auto r = Scene::Build(d);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no_such_link"), std::string::npos) << r.error().message;
}


TEST(SceneAttached, ClearAndCertifiedLinkIncludeAttachedObjects) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    std::mt19937_64 rng(29);
    const SceneDescription d = WithTool(RandomWorldScene(rc, rng, 10));
    const auto scene = Scene::Build(d).value();
    ASSERT_EQ(scene->attached().size(), 1u);
    SceneCache cache;
    int tool_contacts = 0;
    for (int c = 0; c < testing::Cases(150); ++c) {
      const auto q = RandomState(rng, *d.robot);
      StateResult r;
      PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckState(q, &cache));
      const OracleAnswer truth = Oracle(d, q);
      EXPECT_EQ(r.free, truth.clearance > 0.0) << "case " << c << " clearance " << truth.clearance;
      if (!r.free && (r.contact.attached >= 0 || r.contact.other_attached >= 0)) {
        ++tool_contacts;
        EXPECT_NE(r.contact.Describe(*scene).find("tool"), std::string::npos);
      }
    }
    EXPECT_SEEN(tool_contacts) << "the tool never touched anything: the test cannot see it";
    for (int e = 0; e < testing::Cases(25); ++e) {
      const auto [q0, q1] = RandomEdge(rng, *scene, &cache);
      MotionResult m;
      PROX_ASSERT_OK_AND_ASSIGN(m, scene->CheckMotion(q0, q1, {}, &cache));
      const double dense = DenseFirstCollision(*scene, q0, q1, &cache);
      if (dense >= 0.0) {
        EXPECT_FALSE(m.free) << "edge " << e << ": dense check collides at " << dense;
      }
    }
  }
}

// The attached object reaches farther from the joint axes than its link: certified LINK must bound
// its motion by its own reach. A 45 cm bar sticks out sideways from the last link; a small ball sits
// where the bar's tip passes halfway through a swing of the last joint that turns that link, where
// the motion bound is tight and the link itself stays far from the ball.
TEST(SceneAttached, CertifiedLinkCatchesTheToolTipSweepingThroughABall) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  for (const RobotCase& rc : robots) {
    SCOPED_TRACE(rc.name);
    SceneDescription d;
    d.robot = LoadRobot(rc);
    const RobotModel& robot = *d.robot;
    const int32_t tip = robot.num_links() - 1;
    AttachedObject tool;
    tool.id = "tool";
    tool.link = robot.link(tip).name;
    AttachedPart bar;
    bar.geometry.shape = Box{Vec3(0.2, 0.01, 0.01)};
    bar.X_LG.p = Vec3(0.25, 0.0, 0.0);
    tool.parts.push_back(bar);
    d.attached.push_back(tool);
    const auto empty = Scene::Build(d).value();
    SceneCache cache;
    // The last entry of q that turns the tool's link.
    auto q = robot.DefaultConfiguration();
    std::vector<RigidTransform> X0, X1;
    PROX_ASSERT_OK_AND_ASSIGN(X0, robot.ForwardKinematics(q));
    int joint = -1;
    for (int j = robot.num_positions() - 1; j >= 0 && joint < 0; --j) {
      auto moved = q;
      moved[j] += 0.3;
      PROX_ASSERT_OK_AND_ASSIGN(X1, robot.ForwardKinematics(moved));
      if (!X1[tip].R.isApprox(X0[tip].R, 1e-6)) joint = j;
    }
    ASSERT_GE(joint, 0);
    std::mt19937_64 rng(47);
    int checked = 0;
    for (int attempt = 0; attempt < 400 && checked < 5; ++attempt) {
      auto [q0, unused] = RandomEdge(rng, *empty, &cache);
      auto q1 = q0;
      const double lo = std::max(-M_PI, robot.lower_limits()[joint]), hi = std::min(M_PI, robot.upper_limits()[joint]);
      q1[joint] = q0[joint] + 1.5 <= hi ? q0[joint] + 1.5 : q0[joint] - 1.5;
      if (q1[joint] < lo) continue;
      MotionResult m;
      PROX_ASSERT_OK_AND_ASSIGN(m, empty->CheckMotion(q0, q1, {}, &cache));
      if (!m.free) continue;
      StateResult r;
      PROX_ASSERT_OK_AND_ASSIGN(r, empty->CheckState(Along(q0, q1, 0.5), &cache));
      SceneDescription with_ball = d;
      ObjectPart ball;
      ball.geometry.shape = Sphere{Vec3::Zero(), 0.005};
      ball.X_WG.p = cache.link_poses()[tip] * Vec3(0.445, 0.0, 0.0);
      with_ball.objects.push_back({"ball", {ball}});
      const auto scene = Scene::Build(with_ball).value();
      PROX_ASSERT_OK_AND_ASSIGN(r, scene->CheckState(Along(q0, q1, 0.5), &cache));
      ASSERT_FALSE(r.free);
      PROX_ASSERT_OK_AND_ASSIGN(m, scene->CheckMotion(q0, q1, {}, &cache));
      EXPECT_FALSE(m.free) << "attempt " << attempt << ": the tool tip sweeps through the ball at t = 0.5";
      if (!m.free) {
        EXPECT_NE(m.contact.Describe(*scene).find("tool"), std::string::npos) << m.contact.Describe(*scene);
      }
      ++checked;
    }
    EXPECT_EQ(checked, 5);
  }
}

TEST(SceneAttached, BadAttachmentsAreRejectedByName) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  SceneDescription base;
  base.robot = LoadRobot(robots.front());
  base = WithTool(base);
  auto expect_error = [](const SceneDescription& d, const std::string& needle) {
    auto r = Scene::Build(d);
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  };
  SceneDescription d = base;
  d.attached[0].link = "no_such_link";
  expect_error(d, "no_such_link");
  d = base;
  d.attached[0].touch_links = {"nowhere"};
  expect_error(d, "nowhere");
  d = base;
  d.attached.push_back(d.attached[0]);
  expect_error(d, "tool");
  d = base;
  d.attached[0].id = base.robot->link(0).name;
  expect_error(d, base.robot->link(0).name);
  d = base;
  d.attached[0].parts[0].X_LG.p.x() = std::nan("");
  expect_error(d, "tool");
  // A pair naming nothing known is no error (MoveIt accepts it): ignored, with a warning naming it.
  d = base;
  d.allowed_pairs = {{"tool", "ghost"}};
  auto ghost = Scene::Build(d);
  ASSERT_TRUE(ghost.ok()) << ghost.error().message;
  ASSERT_EQ(ghost.value()->warnings().size(), 1u);
  EXPECT_NE(ghost.value()->warnings()[0].find("'ghost'"), std::string::npos) << ghost.value()->warnings()[0];
}

TEST(SceneUpdate, MakesANewVersionAndLeavesTheOldSceneAlone) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  std::mt19937_64 rng(31);
  SceneDescription d;
  d.robot = LoadRobot(robots.front());
  d.objects = RandomWorld(rng, 0.8, 8);
  d.allowed_pairs = {{d.robot->link(1).name, "obj0"}};
  const auto v0 = Scene::Build(d).value();
  // Move obj1 by 10 cm, remove obj0, add a box.
  WorldUpdate u;
  WorldObject moved = d.objects[1];
  for (ObjectPart& p : moved.parts) p.X_WG.p.z() += 0.1;
  u.replace.push_back(moved);
  u.remove.push_back("obj0");
  WorldObject added;
  added.id = "crate";
  ObjectPart crate;
  crate.geometry.shape = Box{Vec3(0.1, 0.1, 0.1)};
  crate.X_WG.p = Vec3(0.5, 0.0, 0.3);
  added.parts.push_back(crate);
  u.add.push_back(added);
  const auto v1_result = v0->Update(u);
  ASSERT_TRUE(v1_result.ok()) << v1_result.error().message;
  const auto v1 = v1_result.value();
  EXPECT_EQ(v0->version(), 0u);
  EXPECT_EQ(v1->version(), 1u);
  EXPECT_EQ(v0->objects().size(), d.objects.size());
  EXPECT_TRUE(v1->Description().allowed_pairs.empty()) << "the pair naming the removed object stays";
  // The reference for v1: the same world built from scratch.
  SceneDescription expected = d;
  expected.objects.erase(expected.objects.begin());
  expected.objects[0] = moved;
  expected.objects.push_back(added);
  expected.allowed_pairs.clear();
  const auto fresh = Scene::Build(expected).value();
  SceneCache cache;
  int differ = 0;
  for (int c = 0; c < testing::Cases(300); ++c) {
    const auto q = RandomState(rng, *d.robot);
    StateResult a, b, old_now, old_before;
    PROX_ASSERT_OK_AND_ASSIGN(a, v1->CheckState(q, &cache));
    PROX_ASSERT_OK_AND_ASSIGN(b, fresh->CheckState(q, &cache));
    EXPECT_EQ(a.free, b.free) << "case " << c;
    PROX_ASSERT_OK_AND_ASSIGN(old_now, v0->CheckState(q, &cache));
    PROX_ASSERT_OK_AND_ASSIGN(old_before, Scene::Build(d).value()->CheckState(q, &cache));
    EXPECT_EQ(old_now.free, old_before.free) << "case " << c;
    differ += a.free != old_now.free;
  }
  EXPECT_SEEN(differ) << "the update changed no answer: the test cannot tell the versions apart";

  WorldUpdate bad;
  bad.remove.push_back("ghost");
  auto r = v1->Update(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("ghost"), std::string::npos);
  bad = {};
  bad.add.push_back(added);
  EXPECT_FALSE(v1->Update(bad).ok()) << "adding an existing id";
  bad = {};
  WorldObject ghost = added;
  ghost.id = "ghost";
  bad.replace.push_back(ghost);
  EXPECT_FALSE(v1->Update(bad).ok()) << "moving a missing id";
  EXPECT_EQ(v1->objects().size(), expected.objects.size());
}

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
