// Certified LINK (motion_certified.cc) at scale: 10,000 random edges per robot in the MotionBenchMaker scenes, each
// certified answer checked against the dense reference (states at most 1e-3 rad apart, exact CLEAR).
// Also reports how often OMPL-style discrete checking at its default resolution misses a collision
// on the same edges.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "proximity/mbm/mbm.h"
#include "proximity/core/scene/scene.h"

namespace proximity::core {
namespace {

namespace fs = std::filesystem;

struct RobotInScenes {
  std::string name;
  std::shared_ptr<const RobotModel> robot;
};

std::vector<RobotInScenes> ValidationRobots() {
  std::vector<RobotInScenes> out;
  if (auto panda = LoadMbmPanda()) out.push_back({"mbm_panda", panda});
  for (const RobotCase& rc : Robots()) {
    if (rc.name == "panda") continue;  // the MBM Panda stands for it
    if (auto r = LoadRobot(rc)) out.push_back({rc.name, r});
  }
  return out;
}

// OMPL's default motion resolution: 1% of the state space's extent (its diameter; continuous joints
// span 2 pi).
double OmplResolution(const RobotModel& robot) {
  double extent2 = 0.0;
  for (int i = 0; i < robot.num_positions(); ++i) {
    double lo = robot.lower_limits()[i], hi = robot.upper_limits()[i];
    if (!std::isfinite(lo) || !std::isfinite(hi)) lo = -M_PI, hi = M_PI;
    extent2 += (hi - lo) * (hi - lo);
  }
  return 0.01 * std::sqrt(extent2);
}

TEST(LinkValidation, TenThousandEdgesPerRobotInMbmScenesWithoutAMiss) {
  const std::string shared = testing::SharedDataDir();
  PROX_REQUIRE_DIR(shared.empty() ? "" : shared + "/scenes/mbm/problems/panda", "scenes/mbm/problems/panda");
  auto problems = mbm::LoadMbmProblems(shared + "/scenes/mbm/problems/panda");
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  // The sanitizer builds check memory and undefined behaviour on a sample; the Release run does all 10,000.
  const int per_robot = testing::kSanitizedSlowdown == 1 ? 10000 : 300;
  int64_t total_discrete_misses = 0;
  for (const RobotInScenes& rs : ValidationRobots()) {
    SCOPED_TRACE(rs.name);
    const RobotModel& robot = *rs.robot;
    std::vector<std::shared_ptr<const Scene>> scenes;
    const auto maps = SelfClearanceMaps::For(rs.robot);  // shared by the problems' scenes
    for (const mbm::MbmProblem& p : problems.value()) {
      mbm::MbmScene world = p.scene;
      if (rs.name != "mbm_panda") {  // the scenes' allowed pairs name Panda links
        world.acm_names.clear();
        world.acm_values.clear();
        world.allowed_pairs.clear();
      }
      auto d = mbm::MbmSceneDescription(world, rs.robot);
      ASSERT_TRUE(d.ok()) << p.name << ": " << d.error().message;
      d.value().self_clearance_maps = maps;
      scenes.push_back(Scene::Build(d.value()).value());
    }
    MotionRequest discrete;
    discrete.mode = MotionRequest::Mode::kDiscrete;
    discrete.resolution = OmplResolution(robot);
    std::mt19937_64 rng(1234);
    SceneCache cache;
    int edges = 0, colliding = 0, undecided = 0, discrete_misses = 0, skipped_scenes = 0;
    // A robot placed where the Panda stood may have no free state in some scenes: those are skipped.
    std::vector<size_t> usable;
    for (size_t s = 0; s < scenes.size(); ++s) {
      bool any_free = false;
      for (int i = 0; i < 200 && !any_free; ++i) {
        StateResult r;
        PROX_ASSERT_OK_AND_ASSIGN(r, scenes[s]->CheckState(RandomState(rng, robot), &cache));
        any_free = r.free;
      }
      if (any_free) usable.push_back(s);
      skipped_scenes += !any_free;
    }
    ASSERT_FALSE(usable.empty());
    const int per_scene = (per_robot + static_cast<int>(usable.size()) - 1) / static_cast<int>(usable.size());
    for (size_t s : usable) {
      const Scene& scene = *scenes[s];
      for (int e = 0; e < per_scene && edges < per_robot; ++e, ++edges) {
        const auto [q0, q1] = RandomEdge(rng, scene, &cache);
        MotionResult certified, sampled;
        PROX_ASSERT_OK_AND_ASSIGN(certified, scene.CheckMotion(q0, q1, {}, &cache));
        PROX_ASSERT_OK_AND_ASSIGN(sampled, scene.CheckMotion(q0, q1, discrete, &cache));
        undecided += certified.undecided;
        bool collides;
        if (!certified.free && !certified.undecided) {
          // A collision claim is checked at its witness state.
          StateResult r;
          PROX_ASSERT_OK_AND_ASSIGN(r, scene.CheckState(Along(q0, q1, certified.t_collide), &cache));
          EXPECT_FALSE(r.free) << "scene " << s << " edge " << e << ": no collision at t_collide";
          collides = true;
        } else {
          const double dense = DenseFirstCollision(scene, q0, q1, &cache);
          collides = dense >= 0.0;
          EXPECT_FALSE(certified.free && collides)
              << "scene " << s << " edge " << e << ": certified free, the dense check collides at t = " << dense;
        }
        colliding += collides;
        discrete_misses += collides && sampled.free;
        EXPECT_FALSE(!collides && !sampled.free) << "discrete found a collision the dense check did not";
      }
    }
    EXPECT_EQ(edges, per_robot) << skipped_scenes << " scenes had no free state";
    EXPECT_GT(colliding, 0);
    total_discrete_misses += discrete_misses;
    std::printf("[ %s ] %d edges in %zu scenes (%d skipped), %d colliding, certified misses 0, undecided %d; "
                "discrete at %.3f rad missed %d (%.2f%% of colliding edges)\n",
                rs.name.c_str(), edges, scenes.size() - skipped_scenes, skipped_scenes, colliding, undecided,
                discrete.resolution, discrete_misses, colliding ? 100.0 * discrete_misses / colliding : 0.0);
    ::testing::Test::RecordProperty(rs.name + "_discrete_misses", discrete_misses);
  }
  if (per_robot >= 10000) {
    EXPECT_GT(total_discrete_misses, 0) << "discrete checking missed nothing";
  }
}

}  // namespace
}  // namespace proximity::core
