// The planners' checks on a scene (scene_validity.cc): concurrent callers get the single-threaded answers,
// and AreValid equals IsValid row by row.
#include "proximity/planners/scene_validity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <thread>

#include "planners/planner_fixtures.h"
#include "proximity/planners/pose_goal.h"
#include "proximity/planners/scene_validity.h"
#include "proximity/planners/timing.h"

namespace proximity::planners {
namespace {

// The validity objects are shared by concurrent callers (OMPL's contract): four threads asking the same
// questions get the answers one thread gets. Run under the thread sanitizer too.
TEST(SceneValidity, ConcurrentCallersGetTheSingleThreadedAnswers) {
  SceneSetup setup(PassageScene(false));
  const JointSpace& space = setup.context.space;
  Rng rng(17);
  const int n = testing::Cases(400);
  std::vector<Configuration> a(n, Configuration(2)), b(n, Configuration(2));
  for (int i = 0; i < n; ++i) {
    space.Sample(rng, a[i]);
    space.Sample(rng, b[i]);
  }
  auto answers = [&](std::vector<char>* state, std::vector<char>* motion, std::vector<char>* quick) {
    for (int i = 0; i < n; ++i) {
      bool valid = false;
      MotionCheck m, q;
      PROX_ASSERT_OK_AND_ASSIGN(valid, setup.context.state->IsValid(a[i]));
      PROX_ASSERT_OK_AND_ASSIGN(m, setup.context.motion->CheckMotion(a[i], b[i]));
      PROX_ASSERT_OK_AND_ASSIGN(q, setup.context.quick_motion->CheckMotion(a[i], b[i]));
      state->push_back(valid);
      motion->push_back(m.valid);
      quick->push_back(q.valid);
    }
  };
  std::vector<char> state, motion, quick;
  answers(&state, &motion, &quick);
  EXPECT_GT(std::count(state.begin(), state.end(), 1), 0);
  EXPECT_GT(std::count(motion.begin(), motion.end(), 0), 0);
  std::vector<std::vector<char>> s(4), m(4), q(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { answers(&s[t], &m[t], &q[t]); });
  for (auto& t : threads) t.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(s[t], state);
    EXPECT_EQ(m[t], motion);
    EXPECT_EQ(q[t], quick);
  }
  EXPECT_EQ(setup.planning.state().checks(), 5 * n);
}

// AreValid over a MotionBenchMaker Panda scene (the first problem's) equals IsValid row by row on 3,000
// seeded random states, a tenth of them just outside a joint limit (free there but not valid), whole and
// in slices of every length up to 20 (blocks that leave SIMD lanes empty); the interface's default
// (IsValid row by row) answers the same. A bad row fails the batch with an error naming it.
TEST(SceneValidity, AreValidEqualsIsValidRowByRow) {
  const std::string shared = testing::SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data");
  auto problems = mbm::LoadMbmProblems(shared + "/scenes/mbm/problems/panda");
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  ASSERT_FALSE(problems.value().empty());
  auto robot = core::LoadMbmPanda();
  ASSERT_NE(robot, nullptr);
  auto description = mbm::MbmSceneDescription(problems.value().front().scene, robot);
  ASSERT_TRUE(description.ok()) << description.error().message;
  auto built = Scene::Build(description.value());
  ASSERT_TRUE(built.ok()) << built.error().message;
  const SceneStateValidity validity(built.value());
  const JointSpace space = JointSpace::ForRobot(built.value()->robot());
  const int32_t dof = space.dof();
  const auto d = static_cast<size_t>(dof);

  const int n = testing::Cases(3000);
  Rng rng(29);
  std::uniform_int_distribution<int32_t> joint(0, dof - 1);
  std::vector<double> rows(static_cast<size_t>(n) * d);
  for (int i = 0; i < n; ++i) {
    const std::span<double> q(rows.data() + static_cast<size_t>(i) * d, d);
    space.Sample(rng, q);
    if (i % 10 == 3) {
      const auto j = static_cast<size_t>(joint(rng));
      q[j] = space.wraps(static_cast<int32_t>(j)) ? q[j] : space.upper()[j] + 0.01;
    }
  }
  std::vector<uint8_t> expected(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    bool valid = false;
    const std::span<const double> q(rows.data() + static_cast<size_t>(i) * d, d);
    PROX_ASSERT_OK_AND_ASSIGN(valid, validity.IsValid(q));
    expected[static_cast<size_t>(i)] = valid ? 1 : 0;
  }
  const int64_t valid_count = std::count(expected.begin(), expected.end(), uint8_t{1});
  EXPECT_GT(valid_count, n / 10) << "too few valid states to compare";
  EXPECT_LT(valid_count, n - n / 5) << "too few invalid states to compare";
  EXPECT_EQ(validity.checks(), n);

  std::vector<uint8_t> batch;
  PROX_ASSERT_OK_AND_ASSIGN(batch, validity.AreValid(rows, dof));
  ASSERT_EQ(batch.size(), expected.size());
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    mismatches += batch[static_cast<size_t>(i)] != expected[static_cast<size_t>(i)];
    EXPECT_EQ(batch[static_cast<size_t>(i)], expected[static_cast<size_t>(i)]) << "configuration " << i;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(validity.checks(), 2 * n) << "every row counts as a check";

  // Slices of 1 to 20 rows, one after another.
  size_t first = 0;
  for (size_t len = 1; first < expected.size(); len = len % 20 + 1) {
    const size_t count = std::min(len, expected.size() - first);
    std::vector<uint8_t> slice;
    const std::span<const double> part = std::span<const double>(rows).subspan(first * d, count * d);
    PROX_ASSERT_OK_AND_ASSIGN(slice, validity.AreValid(part, dof));
    ASSERT_EQ(slice.size(), count);
    for (size_t k = 0; k < count; ++k) EXPECT_EQ(slice[k], expected[first + k]) << "configuration " << first + k;
    first += count;
  }

  // The interface's default, on the first 500 rows.
  const OneAtATime one_at_a_time(&validity);
  const size_t m = std::min<size_t>(500, expected.size());
  std::vector<uint8_t> by_default;
  PROX_ASSERT_OK_AND_ASSIGN(by_default, one_at_a_time.AreValid(std::span<const double>(rows).first(m * d), dof));
  EXPECT_EQ(by_default, std::vector<uint8_t>(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(m)));

  std::vector<uint8_t> none;
  PROX_ASSERT_OK_AND_ASSIGN(none, validity.AreValid({}, dof));
  EXPECT_TRUE(none.empty());

  // A NaN in row 37 of 100: the batch fails, naming the row, as IsValid fails for it alone; the
  // default names it too.
  std::vector<double> bad(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(100 * d));
  bad[37 * d + 2] = std::nan("");
  const core::Error alone = validity.IsValid(std::span<const double>(bad).subspan(37 * d, d)).status().error();
  for (const StateValidityChecker* checker : {static_cast<const StateValidityChecker*>(&validity),
                                              static_cast<const StateValidityChecker*>(&one_at_a_time)}) {
    const core::Result<std::vector<uint8_t>> failed = checker->AreValid(bad, dof);
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.error().code, core::ErrorCode::kInvalidArgument);
    EXPECT_EQ(failed.error().message, "configuration 37: " + alone.message);
  }
  // Values that are not whole rows, rows of another length (IsValid's error for row 0), no columns.
  const core::Result<std::vector<uint8_t>> ragged =
      validity.AreValid(std::span<const double>(rows).first(2 * d + 1), dof);
  ASSERT_FALSE(ragged.ok());
  EXPECT_EQ(ragged.error().code, core::ErrorCode::kInvalidArgument);
  const core::Result<std::vector<uint8_t>> shorter =
      validity.AreValid(std::span<const double>(rows).first(2 * (d - 1)), dof - 1);
  ASSERT_FALSE(shorter.ok());
  EXPECT_EQ(shorter.error().message.rfind("configuration 0: ", 0), 0u) << shorter.error().message;
  EXPECT_FALSE(validity.AreValid(rows, 0).ok());
}

}  // namespace
}  // namespace proximity::planners
