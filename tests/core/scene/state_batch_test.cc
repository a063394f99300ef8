// Scene::CheckStates (state_batch.cc, lanes.cc), many configurations at once, against CheckState one at a
// time: the same free / not free, limits flag and first contact on every configuration, for every lane build
// the CPU runs (the x86-64 baseline forced as well as AVX2 and AVX-512), on real robots in random workcells,
// with padding, clearance and attached objects, and on a fixture of continuous, prismatic, mimic and fixed
// joints.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/scene.h"
#include "scene/lanes.h"
#include "scene/scene_impl.h"

namespace proximity::core {
namespace {

// The differential counts are for the optimized build; under a sanitizer, whose job here is memory and
// threading faults in the batched paths, a fortieth of them.
int Sized(int n) { return testing::kSanitizedSlowdown == 1 ? n : std::max(8, n / 40); }

// Every lane build this CPU runs.
std::vector<internal::LaneTarget> Targets() {
  std::vector<internal::LaneTarget> out;
  for (auto t : {internal::LaneTarget::kBaseline, internal::LaneTarget::kAvx2, internal::LaneTarget::kAvx512}) {
    internal::ForceLaneTarget(t);
    if (internal::ActiveLaneTarget() == t) out.push_back(t);
  }
  internal::ForceLaneTarget(std::nullopt);
  return out;
}

std::vector<RobotCase> BatchRobots() {
  std::vector<RobotCase> out = Robots();  // panda, ur5, kr5 where their data is present
  for (const RobotCase& r : Robots()) {
    if (r.name != "ur5") continue;
    RobotCase visual = r;
    visual.name = "ur5_visual";
    visual.options.collision_from_visual = true;
    out.push_back(visual);
  }
  const std::string dart = testing::DartUrdfDir();
  if (!dart.empty()) {
    RobotCase wam{"wam", dart + "/wam/wam.urdf", testing::TestDataDir() + "/robots/wam.srdf", {}};
    wam.options.package_dirs["herb_description"] = dart + "/wam";
    wam.options.ros_package_path = "";
    out.push_back(wam);
  }
  RobotCase mixed{"mixed_joints", testing::TestDataDir() + "/robots/mixed_joints.urdf", "", {}};
  mixed.options.ros_package_path = "";
  out.push_back(mixed);
  return out;
}

// Checks `n` random states of `scene` both ways under every lane build; returns how many collided.
int ExpectBatchEqualsOneAtATime(const Scene& scene, std::mt19937_64& rng, int n, double clearance,
                                const std::string& what) {
  const RobotModel& robot = scene.robot();
  std::vector<double> qs;
  for (int i = 0; i < n; ++i) {
    std::vector<double> q = RandomState(rng, robot);
    // Some states a little outside the limits: the flag must come back the same.
    if (i % 97 == 0 && robot.num_positions() > 0) q[0] += 0.5;
    qs.insert(qs.end(), q.begin(), q.end());
  }
  const auto dof = static_cast<size_t>(robot.num_positions());
  SceneCache cache;
  std::vector<StateResult> single(static_cast<size_t>(n));
  int colliding = 0;
  for (int i = 0; i < n; ++i) {
    single[i] = testing::ValueOrFail(
        scene.CheckState(std::span<const double>(qs.data() + static_cast<size_t>(i) * dof, dof), &cache, clearance));
    colliding += !single[i].free;
  }
  for (internal::LaneTarget target : Targets()) {
    internal::ForceLaneTarget(target);
    SceneCache batch_cache;
    std::vector<StateResult> batch(static_cast<size_t>(n));
    const Status s = scene.CheckStates(qs, batch, &batch_cache, clearance);
    EXPECT_TRUE(s.ok()) << s.ToString();
    int shown = 0;
    for (int i = 0; i < n; ++i) {
      const StateResult& a = single[i];
      const StateResult& b = batch[i];
      const bool same = a.free == b.free && a.within_limits == b.within_limits &&
                        (a.free || (a.contact.self == b.contact.self && a.contact.link == b.contact.link &&
                                    a.contact.other_link == b.contact.other_link && a.contact.object == b.contact.object &&
                                    a.contact.attached == b.contact.attached &&
                                    a.contact.other_attached == b.contact.other_attached));
      if (!same && ++shown <= 5) {
        ADD_FAILURE() << what << " (" << internal::LaneTargetName(target) << ") state " << i << ": one at a time "
                      << (a.free ? "free" : a.contact.Describe(scene)) << ", batched "
                      << (b.free ? "free" : b.contact.Describe(scene));
      }
    }
    EXPECT_EQ(shown, 0) << what << " (" << internal::LaneTargetName(target) << "): " << shown << " of " << n
                        << " states differ";
  }
  internal::ForceLaneTarget(std::nullopt);
  return colliding;
}

TEST(SceneBatch, EqualsOneAtATimeOnRealRobotsInRandomWorkcells) {
  const std::vector<RobotCase> robots = BatchRobots();
  if (robots.size() < 2) GTEST_SKIP() << "needs ../shared/data or Debian's dart-doc for its robots";
  // 100,000 states per robot (Sized), over four workcells of 12 objects.
  const int per_world = Sized(25000);
  for (const RobotCase& rc : robots) {
    std::mt19937_64 rng(7);
    int colliding = 0, total = 0;
    const auto robot = LoadRobot(rc);  // shared by the four scenes (a robot model is immutable)
    for (int w = 0; w < 4; ++w) {
      SceneDescription d = RandomWorldScene(robot, rng, 12);
      ASSERT_NE(d.robot, nullptr);
      const auto scene = testing::ValueOrFail(Scene::Build(d));
      colliding += ExpectBatchEqualsOneAtATime(*scene, rng, per_world, 0.0, rc.name + " world " + std::to_string(w));
      total += per_world;
    }
    // The test means something only when both answers are common.
    EXPECT_GT(colliding, total / 20) << rc.name;
    EXPECT_LT(colliding, total - total / 20) << rc.name;
  }
}

// A robot whose base carries `posts` fixed links around a three-joint arm: many pairs of a static part
// (no active joint moves it) with a moving one, which CheckState finds through a tree of the static
// parts' boxes (SceneImpl::SelfCandidates) and CheckStates by testing every pair's boxes.
std::string PostsAndArmUrdf(int posts) {
  std::string urdf = R"(<robot name="posts_and_arm"><link name="base"><collision><geometry><box size="0.3 0.3 0.2"/>
    </geometry></collision></link>)";
  for (int i = 0; i < posts; ++i) {
    const double a = 2.0 * M_PI * i / posts;
    const std::string n = "post" + std::to_string(i);
    urdf += "<link name=\"" + n + "\"><collision><geometry><box size=\"0.06 0.06 " +
            std::to_string(0.2 + 0.05 * (i % 4)) + "\"/></geometry></collision></link><joint name=\"" + n +
            "_fixed\" type=\"fixed\"><parent link=\"base\"/>" +
            "<child link=\"" + n + "\"/><origin xyz=\"" + std::to_string(0.45 * std::cos(a)) + " " +
            std::to_string(0.45 * std::sin(a)) + " " + std::to_string(0.1 + 0.12 * (i % 3)) + "\"/></joint>";
  }
  const char* arm[3][3] = {{"base", "upper", "0 0 0.15"}, {"upper", "fore", "0.4 0 0"}, {"fore", "hand", "0.35 0 0"}};
  const char* axes[3] = {"0 0 1", "0 1 0", "0 1 0"};
  for (int j = 0; j < 3; ++j) {
    urdf += std::string("<link name=\"") + arm[j][1] + "\"><collision><origin xyz=\"" + (j == 2 ? "0.1" : "0.2") +
            " 0 0\"/><geometry><box size=\"" + (j == 2 ? "0.2" : "0.4") +
            " 0.07 0.07\"/></geometry></collision></link>" +
            "<joint name=\"j" + std::to_string(j) + "\" type=\"revolute\"><parent link=\"" + arm[j][0] +
            "\"/><child link=\"" + arm[j][1] + "\"/><origin xyz=\"" + arm[j][2] + "\"/><axis xyz=\"" + axes[j] +
            "\"/><limit lower=\"-3.1\" upper=\"3.1\" effort=\"1\" velocity=\"1\"/></joint>";
  }
  return urdf + "</robot>";
}

// That robot, 16 posts, in an empty world (self-clearance maps filled as asked).
SceneDescription PostsAndArm() {
  SceneDescription d;
  d.robot = testing::ValueOrFail(RobotModel::FromUrdfString(PostsAndArmUrdf(16)));
  d.self_clearance_fill = SelfClearanceFill::kOnUse;
  return d;
}

TEST(SceneBatch, StaticPartsFoundThroughTheirTreeAsByEveryPair) {
  const SceneDescription d = PostsAndArm();
  ASSERT_NE(d.robot, nullptr);
  const auto scene = testing::ValueOrFail(Scene::Build(d));
  const internal::SceneImpl& impl = internal::Impl(*scene);
  ASSERT_FALSE(impl.static_broad_.empty()) << "the posts' pairs with the arm go through the tree";
  // Every pair whose boxes overlap is a candidate, in self_pairs_' order, at several clearances.
  std::mt19937_64 rng(23);
  SceneCache cache;
  int overlapping = 0;
  size_t listed = 0;
  for (const double clearance : {0.0, 0.05, 0.3}) {
    for (int i = 0; i < testing::Cases(2000); ++i) {
      const std::vector<double> q = RandomState(rng, scene->robot());
      ASSERT_TRUE(scene->CheckState(q, &cache, clearance).ok());  // poses the parts in the cache
      internal::SceneCacheData& data = *SceneCacheAccess::Data(&cache);
      std::vector<int32_t> candidates;
      ASSERT_TRUE(impl.SelfCandidates([&](int32_t k) -> const Aabb& { return data.part_bounds[k]; }, clearance,
                                      &candidates));
      ASSERT_TRUE(std::is_sorted(candidates.begin(), candidates.end()));
      for (int32_t s = 0; s < static_cast<int32_t>(impl.self_pairs_.size()); ++s) {
        const auto& sp = impl.self_pairs_[s];
        if (!internal::Overlap(data.part_bounds[sp.a], data.part_bounds[sp.b])) continue;
        ++overlapping;
        ASSERT_TRUE(std::binary_search(candidates.begin(), candidates.end(), s))
            << "pair " << s << " overlaps at clearance " << clearance << " but is no candidate";
      }
      if (clearance == 0.0) listed += candidates.size();
    }
  }
  EXPECT_GT(overlapping, 100);
  // What the tree is for: most static pairs are never looked at.
  EXPECT_LT(listed, impl.self_pairs_.size() * static_cast<size_t>(testing::Cases(2000)) / 3);
  // The answers: CheckState (through the tree) as CheckStates (every pair), contacts included.
  const int n = Sized(40000);
  const int colliding = ExpectBatchEqualsOneAtATime(*scene, rng, n, 0.0, "posts and arm");
  EXPECT_GT(colliding, n / 10);
  EXPECT_LT(colliding, n - n / 10);
  ExpectBatchEqualsOneAtATime(*scene, rng, n / 4, 0.04, "posts and arm, clearance 0.04");
}

// PoseParts keeps static parts' poses in the cache from one state to the next, and the lane pass the
// frames of links that do not move: a cache moved between scenes (another base pose) or margins must
// answer as a fresh one, one state at a time and in batches.
TEST(SceneBatch, StaticPartsPosedAgainForAnotherSceneOrClearance) {
  // A box 4 cm beside post 0 (at x = 0.45 m, 6 cm wide) with the base at the origin; the base moved
  // 6 cm towards it puts the post inside it.
  SceneDescription d = PostsAndArm();
  ASSERT_NE(d.robot, nullptr);
  WorldObject box;
  box.id = "box";
  ObjectPart part;
  part.geometry.shape = Box{Vec3(0.02, 0.2, 0.2)};
  part.X_WG.p = Vec3(0.45 + 0.03 + 0.04 + 0.02, 0.0, 0.1);
  box.parts.push_back(part);
  d.objects.push_back(box);
  const auto apart = testing::ValueOrFail(Scene::Build(d));
  d.X_WB.p = Vec3(0.06, 0.0, 0.0);
  const auto inside = testing::ValueOrFail(Scene::Build(d));
  const int32_t post0 = apart->robot().FindLink("post0").value();
  std::mt19937_64 rng(29);
  SceneCache shared;
  int differ = 0, checked = 0, static_contacts = 0, batch_differ = 0;
  const int dof = apart->robot().num_positions();
  for (int i = 0; i < testing::Cases(400); ++i) {
    const std::vector<double> q = RandomState(rng, apart->robot());
    std::vector<double> qs;  // a block: this state and a few random ones
    for (int k = 0; k < 5; ++k) {
      const std::vector<double> x = k == 0 ? q : RandomState(rng, apart->robot());
      qs.insert(qs.end(), x.begin(), x.end());
    }
    for (const auto& [scene, clearance] : {std::pair{apart.get(), 0.0}, std::pair{apart.get(), 0.05},
                                           std::pair{inside.get(), 0.0}, std::pair{apart.get(), 0.0}}) {
      SceneCache fresh;
      const StateResult expected = testing::ValueOrFail(scene->CheckState(q, &fresh, clearance));
      const StateResult got = testing::ValueOrFail(scene->CheckState(q, &shared, clearance));
      ++checked;
      static_contacts += !expected.free && !expected.contact.self && expected.contact.link == post0;
      differ += expected.free != got.free || (!expected.free && expected.contact.link != got.contact.link);
      std::vector<StateResult> batch(qs.size() / static_cast<size_t>(dof));
      ASSERT_TRUE(scene->CheckStates(qs, batch, &shared, clearance).ok());
      for (size_t k = 0; k < batch.size(); ++k) {
        SceneCache own;
        const std::span<const double> x(qs.data() + k * static_cast<size_t>(dof), static_cast<size_t>(dof));
        batch_differ += batch[k].free != testing::ValueOrFail(scene->CheckState(x, &own, clearance)).free;
      }
    }
  }
  EXPECT_EQ(differ, 0) << "of " << checked;
  EXPECT_EQ(batch_differ, 0) << "batches through the shared cache against fresh caches";
  EXPECT_GT(static_contacts, checked / 8) << "post 0 meets the box in the moved scene and within the clearance";
}

TEST(SceneBatch, PaddingClearanceAndAttachedObjectsAsOneAtATime) {
  const std::vector<RobotCase> robots = BatchRobots();
  if (robots.empty()) GTEST_SKIP() << "needs ../shared/data or Debian's dart-doc for its robots";
  for (const RobotCase& rc : robots) {
    std::mt19937_64 rng(11);
    SceneDescription d = RandomWorldScene(rc, rng, 8);
    ASSERT_NE(d.robot, nullptr);
    d.default_padding = 0.01;
    d.padding.push_back({d.robot->links().back().name, 0.03});
    d = WithTool(std::move(d), "held_bar");
    const auto scene = testing::ValueOrFail(Scene::Build(d));
    const int n = Sized(5000);
    ExpectBatchEqualsOneAtATime(*scene, rng, n, 0.0, rc.name + " padded, with a tool");
    ExpectBatchEqualsOneAtATime(*scene, rng, n, 0.02, rc.name + " padded, with a tool, clearance 0.02");
  }
}

// The sampled motion check takes its states kLanes at a time (a rake across the edge when coarse to
// fine): its answer must be the one of checking the same states one by one in the same order.
TEST(SceneBatch, SampledMotionsAnswerAsStateByState) {
  const std::vector<RobotCase> robots = BatchRobots();
  if (robots.size() < 2) GTEST_SKIP() << "needs ../shared/data or Debian's dart-doc for its robots";
  for (const RobotCase& rc : robots) {
    std::mt19937_64 rng(19);
    SceneDescription d = RandomWorldScene(rc, rng, 12);
    ASSERT_NE(d.robot, nullptr);
    const auto scene = testing::ValueOrFail(Scene::Build(d));
    const RobotModel& robot = scene->robot();
    SceneCache cache;
    int colliding = 0;
    const int edges = Sized(10000);
    for (int e = 0; e < edges; ++e) {
      const std::vector<double> q0 = RandomState(rng, robot);
      std::vector<double> q1 = q0;
      std::uniform_real_distribution<double> delta(-0.6, 0.6);
      for (double& v : q1) v += delta(rng);
      MotionRequest request;
      request.mode = MotionRequest::Mode::kDiscrete;
      request.resolution = 0.05;
      request.coarse_to_fine = e % 2 == 0;
      request.check_ends = e % 3 != 0;
      request.clearance = e % 5 == 0 ? 0.01 : 0.0;
      request.clearance_world_only = e % 10 == 0;
      const MotionResult m = testing::ValueOrFail(scene->CheckMotion(q0, q1, request, &cache));
      // The same states one by one, in the same order.
      std::vector<double> end(q1.size());
      robot.MotionEnd(q0, q1, end);
      double length2 = 0.0;
      for (size_t j = 0; j < q0.size(); ++j) length2 += (end[j] - q0[j]) * (end[j] - q0[j]);
      const auto n = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(length2) / request.resolution)));
      std::vector<int64_t> order;
      if (!request.coarse_to_fine) {
        for (int64_t i = request.check_ends ? 0 : 1; i <= (request.check_ends ? n : n - 1); ++i) order.push_back(i);
      } else {
        if (request.check_ends) order = {0, n};
        int64_t stride = 1;
        while (stride * 2 < n) stride *= 2;
        for (; stride >= 1; stride /= 2)
          for (int64_t i = stride; i < n; i += 2 * stride) order.push_back(i);
      }
      int64_t first = -1;
      StateContact contact;
      std::vector<double> q(q0.size());
      for (int64_t i : order) {
        const double t = static_cast<double>(i) / static_cast<double>(n);
        for (size_t j = 0; j < q.size(); ++j) q[j] = q0[j] + t * (end[j] - q0[j]);
        // CheckState takes one clearance for every pair; world-only clearance is left out of the oracle.
        if (request.clearance_world_only) break;
        const StateResult r = testing::ValueOrFail(scene->CheckState(q, &cache, request.clearance));
        if (!r.free) {
          first = i;
          contact = r.contact;
          break;
        }
      }
      if (request.clearance_world_only) continue;
      colliding += first >= 0;
      ASSERT_EQ(m.free, first < 0) << rc.name << " edge " << e;
      if (first < 0) continue;
      EXPECT_EQ(m.t_collide, static_cast<double>(first) / static_cast<double>(n)) << rc.name << " edge " << e;
      EXPECT_EQ(m.contact.link, contact.link) << rc.name << " edge " << e;
      EXPECT_EQ(m.contact.object, contact.object) << rc.name << " edge " << e;
      EXPECT_EQ(m.contact.other_link, contact.other_link) << rc.name << " edge " << e;
    }
    EXPECT_GT(colliding, edges / 20) << rc.name;
    EXPECT_LT(colliding, edges - edges / 20) << rc.name;
  }
}

TEST(SceneBatch, AnySizeOfBatchAndBadInputRefusedWhole) {
  const std::vector<RobotCase> robots = BatchRobots();
  const RobotCase& rc = robots.back();  // the fixture, always present
  std::mt19937_64 rng(3);
  SceneDescription d = RandomWorldScene(rc, rng, 6);
  ASSERT_NE(d.robot, nullptr);
  const auto scene = testing::ValueOrFail(Scene::Build(d));
  for (int n : {0, 1, 7, 8, 9, 17, 1001}) ExpectBatchEqualsOneAtATime(*scene, rng, n, 0.0, "n = " + std::to_string(n));

  const auto dof = static_cast<size_t>(scene->dof());
  std::vector<double> qs;
  for (int i = 0; i < 10; ++i) {
    const std::vector<double> q = RandomState(rng, scene->robot());
    qs.insert(qs.end(), q.begin(), q.end());
  }
  SceneCache cache;
  std::vector<StateResult> out(10);
  qs[5 * dof + 1] = std::nan("");
  Status s = scene->CheckStates(qs, out, &cache);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message.find("configuration 5"), std::string::npos) << s.error().message;
  qs[5 * dof + 1] = 0.0;
  s = scene->CheckStates(std::span<const double>(qs).first(qs.size() - 1), out, &cache);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("expected"), std::string::npos) << s.error().message;
  s = scene->CheckStates(qs, out, &cache, -1.0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("clearance"), std::string::npos) << s.error().message;
  EXPECT_TRUE(scene->CheckStates(qs, out, &cache).ok());
}

}  // namespace
}  // namespace proximity::core
