// proximity-scene srdf suggest (tools/srdf_suggest.h): every verdict is recounted over the suggestion's own
// states by an exact pair test that does not go through CLEAR (Scene::NamedParts and CollideGeometry per
// link pair), on a fixture whose pairs are Adjacent, Always, Never and sometimes colliding by construction,
// and on the Barrett WAM of Debian's dart-doc, whose suggested SRDF must load and leave random states mostly
// free (the fraction is printed).

#include <cstdio>
#include <fstream>
#include <map>
#include <random>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/scene.h"
#include "tools/srdf_suggest.h"

namespace proximity::tools {
namespace {

using core::RobotModel;
using core::Scene;

// Whether links a and b collide at q, by exact tests of every geometry pair between them.
bool PairCollides(const Scene& scene, const std::string& a, const std::string& b, const std::vector<double>& q) {
  core::SceneCache cache;
  auto parts = scene.NamedParts(a, b, q, &cache);
  EXPECT_TRUE(parts.ok()) << parts.error().message;
  if (!parts.ok()) return false;
  for (const core::PosedPartPair& p : parts.value()) {
    auto hit = core::CollideGeometry(*p.robot, p.X_WR, *p.other, p.X_WO);
    EXPECT_TRUE(hit.ok()) << hit.error().message;
    if (hit.ok() && hit.value().colliding) return true;
  }
  return false;
}

// Recounts every tested pair over the suggestion's states and checks its verdict: Always iff it collided
// in every state, Never iff in none, checked otherwise; adjacent pairs are the robot's joint pairs.
void ExpectVerdictsRecount(std::shared_ptr<const RobotModel> robot, const SrdfSuggestion& s) {
  core::SceneDescription d;
  d.robot = robot;
  auto scene = Scene::Build(d);
  ASSERT_TRUE(scene.ok()) << scene.error().message;
  ASSERT_EQ(static_cast<int64_t>(s.sampled.size()), s.states);
  for (const SuggestedPair& p : s.pairs) {
    const core::LinkIndex a = robot->FindLink(p.link1).value(), b = robot->FindLink(p.link2).value();
    const bool joined = robot->link(a).parent_joint >= 0 && robot->joint(robot->link(a).parent_joint).parent_link == b;
    const bool joined_back = robot->link(b).parent_joint >= 0 && robot->joint(robot->link(b).parent_joint).parent_link == a;
    if (joined || joined_back) {
      EXPECT_EQ(p.reason, "Adjacent") << p.link1 << " x " << p.link2;
      continue;
    }
    int64_t hits = 0;
    for (const std::vector<double>& q : s.sampled) hits += PairCollides(*scene.value(), p.link1, p.link2, q) ? 1 : 0;
    EXPECT_EQ(hits, p.collisions) << p.link1 << " x " << p.link2;
    const std::string want = hits == s.states ? "Always" : hits == 0 ? "Never" : "";
    EXPECT_EQ(p.reason, want) << p.link1 << " x " << p.link2 << ": " << hits << " of " << s.states;
  }
}

// a: a cube at the origin. b swings a small ball round z at 0.5 m; c turns a ball about its own centre at the
// origin (inside a, whatever c's angle: Always); d swings an arm about y from 0.3 m up, down through c and f
// when steep (sometimes); e hangs 2 m below by a fixed joint, f sits on e fixed at the origin (a x f rigid and
// touching: Always; c x f: Always).
constexpr const char* kFixture = R"(<robot name="fixture">
  <link name="a"><collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link>
  <link name="b"><collision><origin xyz="0.5 0 0"/><geometry><sphere radius="0.05"/></geometry></collision></link>
  <link name="c"><collision><geometry><sphere radius="0.15"/></geometry></collision></link>
  <link name="d"><collision><origin xyz="0.3 0 0"/><geometry><box size="0.6 0.05 0.05"/></geometry></collision></link>
  <link name="e"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
  <link name="f"><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
  <joint name="ab" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="bc" type="continuous"><parent link="b"/><child link="c"/><axis xyz="0 0 1"/></joint>
  <joint name="ad" type="revolute"><parent link="a"/><child link="d"/><origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="1.5" effort="1" velocity="1"/></joint>
  <joint name="ae" type="fixed"><parent link="a"/><child link="e"/><origin xyz="0 0 -2"/></joint>
  <joint name="ef" type="fixed"><parent link="e"/><child link="f"/><origin xyz="0 0 2"/></joint>
</robot>)";

TEST(SrdfSuggestTest, VerdictsOnAFixtureMadeForThem) {
  auto robot = RobotModel::FromUrdfString(kFixture);
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  SrdfSuggestOptions options;
  options.samples = 1000;
  options.seed = 3;
  options.keep_states = true;
  auto suggested = SuggestDisabledCollisions(robot.value(), options);
  ASSERT_TRUE(suggested.ok()) << suggested.error().message;
  const SrdfSuggestion& s = suggested.value();
  EXPECT_EQ(s.states, 1001);
  EXPECT_EQ(s.sampled.front(), robot.value()->DefaultConfiguration());
  std::map<std::string, std::string> reason;
  for (const SuggestedPair& p : s.pairs) reason[p.link1 + "-" + p.link2] = p.reason;
  EXPECT_EQ(reason.size(), 15u);  // every pair of the six links
  const std::map<std::string, std::string> want = {
      {"a-b", "Adjacent"}, {"b-c", "Adjacent"}, {"a-d", "Adjacent"}, {"a-e", "Adjacent"}, {"e-f", "Adjacent"},
      {"a-c", "Always"},   {"c-f", "Always"},   {"a-f", "Always"},   {"b-e", "Never"},    {"c-e", "Never"},
      {"d-e", "Never"},    {"b-f", "Never"},    {"c-d", ""},         {"d-f", ""}};
  for (const auto& [pair, r] : want) EXPECT_EQ(reason[pair], r) << pair;
  ExpectVerdictsRecount(robot.value(), s);
  // Free under the suggestion: the states where neither c x d nor d x f (nor b x d) collides.
  EXPECT_GT(s.free_states, 0);
  EXPECT_LT(s.free_states, s.states);

  // The SRDF loads, disables exactly the pairs with a reason, and keeps them.
  const std::string srdf = SuggestionSrdf(*robot.value(), s, options);
  auto with = RobotModel::FromUrdfString(kFixture, srdf);
  ASSERT_TRUE(with.ok()) << with.error().message << "\n" << srdf;
  EXPECT_TRUE(with.value()->warnings().empty());
  for (const SuggestedPair& p : s.pairs) {
    const core::LinkIndex a = with.value()->FindLink(p.link1).value(), b = with.value()->FindLink(p.link2).value();
    EXPECT_EQ(with.value()->AllowedCollision(a, b), !p.reason.empty()) << p.link1 << " x " << p.link2;
    if (!p.reason.empty() && with.value()->AllowedPairReason(a, b) == core::AllowedReason::kSrdf) {
      EXPECT_EQ(with.value()->SrdfReason(a, b), p.reason);
    }
  }
  // The same seed gives the same SRDF.
  options.keep_states = false;
  EXPECT_EQ(SuggestionSrdf(*robot.value(), SuggestDisabledCollisions(robot.value(), options).value(), options), srdf);
}

TEST(SrdfSuggestTest, TheWamGetsAnSrdfThatLeavesRandomStatesMostlyFree) {
  const std::string dir = "/usr/share/doc/dart/data/urdf/wam";
  if (!std::ifstream(dir + "/wam.urdf")) GTEST_SKIP() << dir << "/wam.urdf is missing (apt-get install dart-doc)";
  core::RobotLoadOptions load;
  load.package_dirs["herb_description"] = dir;
  auto robot = RobotModel::FromUrdfFile(dir + "/wam.urdf", "", load);
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  SrdfSuggestOptions options;
  options.samples = 500;
  options.seed = 11;
  options.keep_states = true;
  auto suggested = SuggestDisabledCollisions(robot.value(), options);
  ASSERT_TRUE(suggested.ok()) << suggested.error().message;
  const SrdfSuggestion& s = suggested.value();
  std::map<std::string, std::string> reason;
  for (const SuggestedPair& p : s.pairs) reason[p.link1 + " " + p.link2] = p.reason;
  // The two pairs whose meshes overlap in every state (the shoulder's and the elbow-wrist's).
  EXPECT_EQ(reason["/wam1 /wam3"], "Always");
  EXPECT_EQ(reason["/wam4 /wam6"], "Always");
  // No pair that collides in only some of the sampled states is disabled.
  ExpectVerdictsRecount(robot.value(), s);

  // Fresh random states: none is free without an SRDF (the two pairs), most are with the suggestion.
  const std::string path = ::testing::TempDir() + "/wam_suggested.srdf";
  {
    std::ofstream out(path);
    out << SuggestionSrdf(*robot.value(), s, options);
  }
  auto with = RobotModel::FromUrdfFile(dir + "/wam.urdf", path, load);
  ASSERT_TRUE(with.ok()) << with.error().message;
  core::SceneDescription bare_d, with_d;
  bare_d.robot = robot.value();
  with_d.robot = with.value();
  auto bare = Scene::Build(bare_d);
  auto suggested_scene = Scene::Build(with_d);
  ASSERT_TRUE(bare.ok() && suggested_scene.ok());
  std::mt19937_64 rng(99);
  core::SceneCache cache;
  int free_bare = 0, free_suggested = 0;
  const int n = 2000;
  for (int i = 0; i < n; ++i) {
    const std::vector<double> q = core::RandomState(rng, *robot.value());
    free_bare += bare.value()->CheckState(q, &cache).value().free ? 1 : 0;
    free_suggested += suggested_scene.value()->CheckState(q, &cache).value().free ? 1 : 0;
  }
  std::printf("WAM: %d of %d random states free with the suggested SRDF (%.1f%%), %d without an SRDF; "
              "%lld of %lld sampled states free under the suggestion\n",
              free_suggested, n, 100.0 * free_suggested / n, free_bare, static_cast<long long>(s.free_states),
              static_cast<long long>(s.states));
  EXPECT_EQ(free_bare, 0);
  EXPECT_GT(free_suggested, n / 2);
}

}  // namespace
}  // namespace proximity::tools
