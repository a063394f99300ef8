// The self-clearance maps (self_clearance_maps.cc, self_clearance_fill.cc): bounds that never exceed the
// exact distance and decide most states, filled at build or in the background, owned by whoever builds
// the scenes, and segments proven apart staying apart at dense samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <random>
#include <span>

#include "core/scene/scene_oracle.h"
#include "proximity/core/scene/scene.h"
#include "scene/scene_impl.h"
#include "scene/scene_internal.h"
#include "scene/self_clearance.h"

namespace proximity::core {
namespace {

// The pairs of links (a < b) that both have collision geometry.
std::vector<std::pair<int32_t, int32_t>> LinkPairsWithGeometry(const RobotModel& robot) {
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (int32_t la = 0; la < robot.num_links(); ++la) {
    for (int32_t lb = la + 1; lb < robot.num_links(); ++lb) {
      if (!robot.link(la).geometries.empty() && !robot.link(lb).geometries.empty()) pairs.emplace_back(la, lb);
    }
  }
  return pairs;
}

// The exact distance between the first geometries of links la and lb at q (the tests' oracle); NaN,
// which fails every comparison, when q cannot be posed.
double LinkPairDistance(const RobotModel& robot, int32_t la, int32_t lb, std::span<const double> q) {
  const Result<std::vector<RigidTransform>> X_WL = robot.ForwardKinematics(q);
  EXPECT_TRUE(X_WL.ok()) << X_WL.error().message;
  if (!X_WL.ok()) return std::numeric_limits<double>::quiet_NaN();
  const LinkGeometry& ga = robot.link(la).geometries[0];
  const LinkGeometry& gb = robot.link(lb).geometries[0];
  return ExactDistance(OracleGeometry(ga), X_WL.value()[la] * ga.X_LG, OracleGeometry(gb),
                       X_WL.value()[lb] * gb.X_LG);
}

// Every test robot (scene_fixtures.h) and the MotionBenchMaker Panda, by name; empty without their data.
std::vector<std::pair<std::string, std::shared_ptr<const RobotModel>>> EveryTestRobot() {
  std::vector<std::pair<std::string, std::shared_ptr<const RobotModel>>> robots;
  for (const RobotCase& rc : Robots()) robots.emplace_back(rc.name, LoadRobot(rc));
  if (!testing::SharedDataDir().empty()) robots.emplace_back("mbm_panda", LoadMbmPanda());
  return robots;
}

// The self-clearance maps (link pairs moved by at most two revolute joints: a wrist's) never claim
// more distance than the exact one between the link meshes, decide most states where the links are
// apart once their cells are settled, and say nothing off their grid. Random states within limits on
// every test robot and the MotionBenchMaker Panda, each asked twice (a cell whose convex stand-ins
// cannot decide it is settled on the geometries when used again); every pair of links is asked,
// those without a map answer -1. Pairs that keep millimetres apart across a wrist (the KR5's flange,
// the WAM's wrist) are among them: their maps take a loss fitted to the pair.
TEST(SelfClearanceMaps, NeverExceedTheExactDistanceAndDecideMostStates) {
  const auto robots = EveryTestRobot();
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
    for (const auto& [la, lb] : LinkPairsWithGeometry(*robot)) {
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
        const double exact = LinkPairDistance(*robot, la, lb, q);
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
  for (const auto& [name, robot] : FirstUnderSanitizer(robots)) {
    SCOPED_TRACE(name);
    ASSERT_NE(robot, nullptr);
    SceneDescription d;
    d.robot = robot;
    d.self_clearance_fill = SelfClearanceFill::kAtBuild;
    const auto scene = Scene::Build(d).value();
    EXPECT_TRUE(scene->SelfClearanceFilled());
    std::mt19937_64 rng(47);
    int asked = 0, apart = 0, decided = 0;
    for (const auto& [la, lb] : LinkPairsWithGeometry(*robot)) {
      const std::string& a = robot->link(la).name;
      const std::string& b = robot->link(lb).name;
      for (int c = 0; c < testing::Cases(100); ++c) {
        const auto q = RandomState(rng, *robot);
        const double bound = internal::Impl(*scene).SelfClearanceBound(a, b, q).value();
        if (bound < 0.0) break;  // no map for this pair
        const double exact = LinkPairDistance(*robot, la, lb, q);
        EXPECT_LE(bound, exact + 1e-9) << a << " - " << b << ", case " << c;
        ++asked;
        apart += exact > 0.0;
        decided += bound > 0.0;
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
  const auto robots = EveryTestRobot();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  int proven = 0, asked = 0;
  for (const auto& [name, robot] : robots) {
    SCOPED_TRACE(name);
    SceneDescription d;
    d.robot = robot;
    const auto scene = Scene::Build(d).value();
    std::mt19937_64 rng(43);
    for (const auto& [la, lb] : LinkPairsWithGeometry(*robot)) {
      const std::string& a = robot->link(la).name;
      const std::string& b = robot->link(lb).name;
      // No map for this pair:
      if (internal::Impl(*scene).SelfClearanceBound(a, b, robot->DefaultConfiguration()).value() < 0.0) continue;
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
          const double exact = LinkPairDistance(*robot, la, lb, q);
          ASSERT_GT(exact, 0.0) << a << " - " << b << ", case " << c << ": proven apart, in contact at t = " << t;
        }
      }
    }
  }
  std::printf("%d of %d segments proven apart by the maps\n", proven, asked);
  EXPECT_GT(2 * proven, asked) << "the maps should prove most short segments apart";
}

// A settled cell's bound holds over the whole cell, not only at the states that asked it: at its
// corners (half a step from its grid point in every mapped joint, the farthest any state in it lies)
// and at random states in it, by the exact distance between the link meshes. Cells settled on the
// geometries take the larger of the grid point's distance less the loss and a walk that lowers each
// pair of hierarchy nodes by their own motion over the cell (near a joint's axis far less than the
// loss assumes); both must hold, and some cells must be settled above the grid point's distance less
// the loss (only the walk gives such bounds). Random states on every test robot, each asked twice.
TEST(SelfClearanceMaps, SettledCellsHoldAtTheirCornersAndInside) {
  const auto robots = EveryTestRobot();
  if (robots.empty()) GTEST_SKIP() << "neither ../shared/data nor dart-doc's URDF folder is present";
  int cells = 0, beyond_loss = 0;
  for (const auto& [name, robot] : robots) {
    SCOPED_TRACE(name);
    SceneDescription d;
    d.robot = robot;
    d.self_clearance_fill = SelfClearanceFill::kOnUse;
    const auto scene = Scene::Build(d).value();
    const internal::SceneImpl& impl = internal::Impl(*scene);
    std::mt19937_64 rng(44);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (const auto& [la, lb] : LinkPairsWithGeometry(*robot)) {
      const std::string& a = robot->link(la).name;
      const std::string& b = robot->link(lb).name;
      const internal::SceneImpl::SelfPair* pair = impl.FindSelfPair(a, b).value();
      if (pair == nullptr || pair->clearance_map == nullptr) continue;
      const internal::SelfClearanceMap& map = *pair->clearance_map;
      for (int c = 0; c < testing::Cases(40); ++c) {
        auto q = RandomState(rng, *robot);
        for (int ask = 0; ask < 2; ++ask) ASSERT_TRUE(impl.SelfClearanceBound(a, b, q).ok());
        const double cell_bound = impl.SelfPairClearanceIfKnown(*pair, q);
        if (!(cell_bound > 0.0)) continue;
        ++cells;
        double grid[2];
        map.GridPoint(map.Cell(q), grid);
        // Corners, random states in the cell, and last the grid point itself.
        double least = std::numeric_limits<double>::infinity(), at_grid = 0.0;
        for (int k = 0; k < 9; ++k) {
          for (int32_t dim = 0; dim < map.dims; ++dim) {
            const double f = k < 4 ? ((k >> dim) & 1 ? 1.0 : -1.0) : (k < 8 ? u(rng) : 0.0);
            q[static_cast<size_t>(map.active[dim])] = grid[dim] + f * 0.5 * map.step[dim] * (1.0 - 1e-12);
          }
          at_grid = LinkPairDistance(*robot, la, lb, q);
          least = std::min(least, at_grid);
        }
        ASSERT_LE(cell_bound, least + 1e-9) << a << " - " << b << ", case " << c;
        // Above the grid point's distance less the loss: only the swept walk gives such a bound.
        beyond_loss += cell_bound > at_grid - map.loss + 1e-9;
      }
    }
  }
  std::printf("%d settled cells checked, %d of them above the grid point's distance less the loss\n", cells,
              beyond_loss);
  EXPECT_GT(cells, 0);
  EXPECT_GT(beyond_loss, 0) << "the swept walk should settle cells tighter than the grid point's distance "
                               "less the loss";
}

}  // namespace
}  // namespace proximity::core
