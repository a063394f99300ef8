// Padding, clearance, attached objects and world updates, each against a brute-force oracle built from
// the robot model and the world directly (not from the scene's internal parts).
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
      if (a.free) {
        EXPECT_TRUE(b.free) << "edge " << e << ": free keeping every pair apart, not the world alone";
      }
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

}  // namespace
}  // namespace proximity::core
