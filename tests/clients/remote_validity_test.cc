// The C++ remote client (proximity::remote) against real proximityd processes: each test starts the
// daemon built with this tree on a free loopback port (it reports the port on stderr), with its
// built-in default scene (the KR5 workcell, scene id "default"), and compares the remote answers with
// the same scene built in process (server/default_scene.h). The daemon is stopped with SIGTERM at the
// end of every test, which must exit 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "clients/daemon.h"
#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "proximity/clients/remote_validity.h"
#include "proximity/planners/planner.h"
#include "proximity/planners/scene_validity.h"

namespace proximity::clients {
namespace {

using planners::Configuration;
using planners::JointSpace;
using planners::MotionCheck;
using Clock = std::chrono::steady_clock;
using test_daemon::Daemon;
using test_daemon::DefaultSceneInProcess;
using test_daemon::FreePort;

class RemoteValidityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PROX_REQUIRE_DIR(testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the default scene's KR5)");
    std::string error;
    daemon_ = Daemon::Start(&error);
    ASSERT_NE(daemon_, nullptr) << error;
    RemoteOptions options;
    options.target = daemon_->target();
    options.deadline = std::chrono::seconds(60);
    auto connected = RemoteScene::Connect(options);
    ASSERT_TRUE(connected.ok()) << connected.error().message;
    remote_ = connected.value();
    const Status serving = remote_->WaitUntilServing(std::chrono::minutes(1));
    ASSERT_TRUE(serving.ok()) << serving.ToString();
    scene_ = DefaultSceneInProcess();
    ASSERT_NE(scene_, nullptr);
    space_ = std::make_unique<JointSpace>(JointSpace::ForRobot(scene_->robot()));
  }

  void TearDown() override {
    if (daemon_ == nullptr) return;
    remote_.reset();  // the client goes first; DaemonStoppedUnderAConnectedClient covers the other order
    const int code = daemon_->Terminate();
    EXPECT_EQ(code, 0) << "proximityd did not exit 0 on SIGTERM; its stderr:\n" << daemon_->log();
  }

  Configuration RandomValid(planners::Rng& rng, core::SceneCache* cache) const {
    Configuration q(static_cast<size_t>(space_->dof()));
    for (int i = 0; i < 100000; ++i) {
      space_->Sample(rng, q);
      const core::StateResult r = testing::ValueOrFail(scene_->CheckState(q, cache));
      if (r.free && r.within_limits) return q;
    }
    ADD_FAILURE() << "no valid state in 100,000 samples";
    return q;
  }

  // n seeded random states, a tenth of them just past one joint's upper limit, row after row.
  std::vector<double> SampleRows(int n, uint64_t seed) const {
    const auto d = static_cast<size_t>(space_->dof());
    planners::Rng rng(seed);
    std::uniform_int_distribution<int32_t> joint(0, space_->dof() - 1);
    std::vector<double> rows(static_cast<size_t>(n) * d);
    for (int i = 0; i < n; ++i) {
      const std::span<double> q(rows.data() + static_cast<size_t>(i) * d, d);
      space_->Sample(rng, q);
      if (i % 10 == 0) {
        const auto j = static_cast<size_t>(joint(rng));
        q[j] = space_->upper()[j] + 0.01;
      }
    }
    return rows;
  }

  std::unique_ptr<Daemon> daemon_;
  std::shared_ptr<const RemoteScene> remote_;
  std::shared_ptr<const core::Scene> scene_;
  std::unique_ptr<JointSpace> space_;
};

TEST_F(RemoteValidityTest, InfoAndRemoteSpaceMatchTheSceneInProcess) {
  auto info = remote_->Info();
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info.value().joint_names, scene_->robot().active_joint_names());
  EXPECT_FALSE(info.value().scene_id.empty());
  EXPECT_NE(info.value().scene_id, "default") << "GetScene resolves the alias to the content id";
  auto space = RemoteSpace(*remote_);
  ASSERT_TRUE(space.ok()) << space.error().message;
  ASSERT_EQ(space.value().dof(), space_->dof());
  EXPECT_EQ(space.value().lower(), space_->lower());
  EXPECT_EQ(space.value().upper(), space_->upper());
  for (int32_t i = 0; i < space_->dof(); ++i) EXPECT_EQ(space.value().wraps(i), space_->wraps(i)) << "joint " << i;
  EXPECT_EQ(space.value().MaxExtent(), space_->MaxExtent());
}

// 2,000 seeded random states, a tenth of them just outside the joint limits: remote IsValid, and the
// packed batch RPC in requests of 300, equal SceneStateValidity in process.
TEST_F(RemoteValidityTest, IsValidAndBatchesEqualTheSceneInProcess) {
  const int n = testing::Cases(2000);
  const auto d = static_cast<size_t>(space_->dof());
  const std::vector<double> rows = SampleRows(n, 2024);
  std::vector<Configuration> states;
  for (int i = 0; i < n; ++i) {
    states.emplace_back(rows.begin() + static_cast<std::ptrdiff_t>(i * d), rows.begin() + static_cast<std::ptrdiff_t>((i + 1) * d));
  }
  const RemoteStateValidity remote(remote_);
  const planners::SceneStateValidity local(scene_);
  int valid_count = 0, mismatches = 0;
  std::vector<uint8_t> expected(states.size());
  double remote_s = 0.0;
  for (size_t i = 0; i < states.size(); ++i) {
    bool r = false, l = true;
    const auto t0 = Clock::now();
    PROX_ASSERT_OK_AND_ASSIGN(r, remote.IsValid(states[i]));
    remote_s += std::chrono::duration<double>(Clock::now() - t0).count();
    PROX_ASSERT_OK_AND_ASSIGN(l, local.IsValid(states[i]));
    mismatches += r != l;
    EXPECT_EQ(r, l) << "state " << i;
    valid_count += l;
    expected[i] = l ? 1 : 0;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(valid_count, n / 10) << "too few valid states to compare";
  EXPECT_LT(valid_count, n - n / 5) << "too few invalid states to compare";
  EXPECT_EQ(remote.checks(), n);

  RemoteOptions batched = remote_->options();
  batched.batch_rows = 300;
  auto batch_remote = RemoteScene::Connect(batched);
  ASSERT_TRUE(batch_remote.ok());
  std::vector<uint8_t> valid;
  const auto t0 = Clock::now();
  PROX_ASSERT_OK_AND_ASSIGN(valid, batch_remote.value()->CheckStates(states));
  const double batch_s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(valid, expected);
  EXPECT_EQ(batch_remote.value()->calls(), (n + 299) / 300);
  std::printf("[ states ] %d states: %d valid; remote IsValid and CheckStates (%ld requests) equal in process; "
              "IsValid (session) %.0f us per call, batch %.1f us per state\n",
              n, valid_count, static_cast<long>(batch_remote.value()->calls()), 1e6 * remote_s / n, 1e6 * batch_s / n);
}

// 2,000 seeded random states, a tenth of them just outside the joint limits: remote AreValid equals
// SceneStateValidity's AreValid and IsValid in process, in one CheckStates request; a NaN row fails the
// batch with the server's error naming the row.
TEST_F(RemoteValidityTest, AreValidEqualsTheSceneInProcessInOneRequest) {
  const int n = testing::Cases(2000);
  const int32_t dof = space_->dof();
  const auto d = static_cast<size_t>(dof);
  std::vector<double> rows = SampleRows(n, 2025);
  const RemoteStateValidity remote(remote_);
  const planners::SceneStateValidity local(scene_);
  std::vector<uint8_t> expected(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    bool valid = false;
    const std::span<const double> q(rows.data() + static_cast<size_t>(i) * d, d);
    PROX_ASSERT_OK_AND_ASSIGN(valid, local.IsValid(q));
    expected[static_cast<size_t>(i)] = valid ? 1 : 0;
  }
  const int64_t valid_count = std::count(expected.begin(), expected.end(), uint8_t{1});
  EXPECT_GT(valid_count, n / 10) << "too few valid states to compare";
  EXPECT_LT(valid_count, n - n / 5) << "too few invalid states to compare";
  std::vector<uint8_t> in_process, answered;
  PROX_ASSERT_OK_AND_ASSIGN(in_process, local.AreValid(rows, dof));
  EXPECT_EQ(in_process, expected);
  const int64_t calls = remote_->calls();
  const auto t0 = Clock::now();
  PROX_ASSERT_OK_AND_ASSIGN(answered, remote.AreValid(rows, dof));
  const double remote_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_EQ(answered.size(), expected.size());
  int mismatches = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    mismatches += answered[i] != expected[i];
    EXPECT_EQ(answered[i], expected[i]) << "configuration " << i;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(remote_->calls() - calls, 1) << "the batch should take one request";
  EXPECT_EQ(remote.checks(), n);

  std::vector<double> bad(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(50 * d));
  bad[17 * d + 1] = std::nan("");
  const Status s = remote.AreValid(bad, dof).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, core::ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message.find("configuration 17"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("not finite"), std::string::npos) << s.error().message;
  std::printf("[ are valid ] %d states: %ld valid; remote AreValid equals in process in one request, %.1f us per "
              "state\n",
              n, static_cast<long>(valid_count), 1e6 * remote_s / n);
}

// 200 edges like a planner's: remote certified CheckMotion equals SceneMotionValidator in process with
// the request the wire carries (certified, collisions narrowed, no sampled pre-pass): the answer and
// last_valid_t exactly (not the states posed: how many a certified check takes depends on the cells
// the process's self-clearance maps have settled). The planners' default request (a pre-pass, no
// narrowing) gives the same answers. 50 edges are also compared in discrete mode.
TEST_F(RemoteValidityTest, CheckMotionEqualsTheSceneInProcess) {
  const int n = testing::Cases(200);
  std::mt19937_64 rng(77);
  core::SceneCache cache;
  const RemoteMotionValidator remote(remote_);
  const planners::SceneMotionValidator local(scene_, core::MotionRequest{});
  const planners::SceneMotionValidator local_planning(scene_);
  core::MotionRequest discrete;
  discrete.mode = core::MotionRequest::Mode::kDiscrete;
  discrete.resolution = 0.05;
  const RemoteMotionValidator remote_discrete(remote_, {RemoteMotionRequest::Mode::kDiscrete, discrete.resolution});
  const planners::SceneMotionValidator local_discrete(scene_, discrete);
  EXPECT_TRUE(remote.certified());
  EXPECT_FALSE(remote_discrete.certified());
  EXPECT_NE(remote.Describe().find(daemon_->target()), std::string::npos) << remote.Describe();
  int colliding = 0;
  double remote_s = 0.0, local_s = 0.0;
  for (int e = 0; e < n; ++e) {
    auto [q0, q1] = core::RandomEdge(rng, *scene_, &cache);
    q1 = core::Along(q0, q1, 2.0);
    for (size_t i = 0; i < q1.size(); ++i) q1[i] = std::clamp(q1[i], space_->lower()[i], space_->upper()[i]);
    MotionCheck r, l;
    const auto t0 = Clock::now();
    PROX_ASSERT_OK_AND_ASSIGN(r, remote.CheckMotion(q0, q1));
    remote_s += std::chrono::duration<double>(Clock::now() - t0).count();
    const auto t1 = Clock::now();
    PROX_ASSERT_OK_AND_ASSIGN(l, local.CheckMotion(q0, q1));
    local_s += std::chrono::duration<double>(Clock::now() - t1).count();
    EXPECT_EQ(r.valid, l.valid) << "edge " << e;
    EXPECT_EQ(r.last_valid_t, l.last_valid_t) << "edge " << e;
    MotionCheck p;
    PROX_ASSERT_OK_AND_ASSIGN(p, local_planning.CheckMotion(q0, q1));
    EXPECT_EQ(r.valid, p.valid) << "edge " << e;
    colliding += !l.valid;
    if (e < n / 4) {
      PROX_ASSERT_OK_AND_ASSIGN(r, remote_discrete.CheckMotion(q0, q1));
      PROX_ASSERT_OK_AND_ASSIGN(l, local_discrete.CheckMotion(q0, q1));
      EXPECT_EQ(r.valid, l.valid) << "discrete edge " << e;
      EXPECT_EQ(r.last_valid_t, l.last_valid_t) << "discrete edge " << e;
    }
  }
  EXPECT_GT(colliding, n / 20) << "too few colliding edges to compare";
  EXPECT_LT(colliding, n - n / 20) << "too few free edges to compare";
  EXPECT_EQ(remote.checks(), n);
  std::printf("[ motions ] %d edges (%d colliding): remote certified CheckMotion equals in process; %ld states posed "
              "by the server; %.0f us per remote check, %.0f us in process\n",
              n, colliding, static_cast<long>(remote.states()), 1e6 * remote_s / n, 1e6 * local_s / n);
}

// planners::Plan with RRT-Connect over the remote validity solves a query whose straight motion
// collides; the path is certified free in process (and densely sampled), and equals the path the
// same planner and seed find in process (the answers are the same, so the search is).
TEST_F(RemoteValidityTest, RrtConnectPlansOverTheRemoteSceneAndThePathIsFreeInProcess) {
  auto space = RemoteSpace(*remote_);
  ASSERT_TRUE(space.ok()) << space.error().message;
  planners::Rng rng(11);
  core::SceneCache cache;
  Configuration start, goal;
  for (int i = 0; i < 1000 && start.empty(); ++i) {
    Configuration a = RandomValid(rng, &cache), b = RandomValid(rng, &cache);
    core::MotionResult m;
    PROX_ASSERT_OK_AND_ASSIGN(m, scene_->CheckMotion(a, b, {}, &cache));
    if (!m.free && space_->Distance(a, b) > 1.0) start = a, goal = b;
  }
  ASSERT_FALSE(start.empty());
  const RemoteStateValidity remote_state(remote_);
  const RemoteMotionValidator remote_motion(remote_);
  const planners::PlanningContext remote_context{space.value(), &remote_state, &remote_motion};
  planners::PlannerOptions options;
  options.type = planners::PlannerType::kRrtConnect;
  options.seed = 5;
  planners::Termination termination;
  termination.time_limit_s = 300.0;
  auto planned = planners::Plan(remote_context, start, goal, options, termination);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const planners::PlanResult& result = planned.value();
  ASSERT_TRUE(result.solved()) << planners::PlanOutcomeName(result.outcome);
  ASSERT_GE(result.path.size(), 3u);
  EXPECT_EQ(result.path.front(), start);
  EXPECT_EQ(result.path.back(), goal);
  for (size_t i = 0; i + 1 < result.path.size(); ++i) {
    core::MotionResult m;
    PROX_ASSERT_OK_AND_ASSIGN(m, scene_->CheckMotion(result.path[i], result.path[i + 1], {}, &cache));
    EXPECT_TRUE(m.free) << "edge " << i << " collides in process";
    EXPECT_EQ(core::DenseFirstCollision(*scene_, result.path[i], result.path[i + 1], &cache), -1.0) << "edge " << i;
  }
  EXPECT_GT(remote_state.checks(), 0);
  EXPECT_EQ(result.stats.motion_checks, remote_motion.checks());

  const planners::SceneStateValidity local_state(scene_);
  const planners::SceneMotionValidator local_motion(scene_);
  const planners::PlanningContext local_context{*space_, &local_state, &local_motion};
  auto local = planners::Plan(local_context, start, goal, options, termination);
  ASSERT_TRUE(local.ok()) << local.error().message;
  ASSERT_TRUE(local.value().solved());
  EXPECT_EQ(result.path, local.value().path) << "the same seed and the same answers should give the same path";
  std::printf("[ plan ] RRT-Connect over proximityd: %zu waypoints, length %.3f, %ld state and %ld motion RPCs, %.2f s; "
              "the same path in process in %.3f s\n",
              result.path.size(), result.stats.length, static_cast<long>(remote_state.checks()),
              static_cast<long>(remote_motion.checks()), result.stats.plan_time_s + result.stats.simplify_time_s,
              local.value().stats.plan_time_s + local.value().stats.simplify_time_s);
}

// Malformed requests come back as the server's INVALID_ARGUMENT (or NOT_FOUND for an unknown scene),
// surfaced as errors naming the target; the daemon keeps serving.
TEST_F(RemoteValidityTest, BadRequestsAreErrorsWithTheServersCode) {
  const RemoteStateValidity state(remote_);
  const RemoteMotionValidator motion(remote_);
  const Configuration short_q(static_cast<size_t>(space_->dof() - 1), 0.0);
  const Configuration home(static_cast<size_t>(space_->dof()), 0.0);
  Status s = state.IsValid(short_q).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, core::ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message.find("INVALID_ARGUMENT"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("expected " + std::to_string(space_->dof()) + " values"), std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find(daemon_->target()), std::string::npos) << s.error().message;

  s = motion.CheckMotion(home, short_q).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, core::ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message.find("goal"), std::string::npos) << s.error().message;

  Configuration nan_q = home;
  nan_q[2] = std::nan("");
  s = state.IsValid(nan_q).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, core::ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message.find("not finite"), std::string::npos) << s.error().message;

  // Packed rows of the wrong width: the server sees a byte count that is not a whole number of rows,
  // or rows of other joints.
  const std::vector<double> rows(static_cast<size_t>(7 * (space_->dof() - 1)), 0.0);
  s = remote_->CheckStates(rows, space_->dof() - 1).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, core::ErrorCode::kInvalidArgument) << s.error().message;
  EXPECT_NE(s.error().message.find("CheckStates"), std::string::npos) << s.error().message;
  const std::vector<Configuration> ragged = {home, short_q};
  s = remote_->CheckStates(ragged).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("configuration 1"), std::string::npos) << s.error().message;

  RemoteOptions unknown = remote_->options();
  unknown.scene_id = "no-such-scene";
  auto other = RemoteScene::Connect(unknown);
  ASSERT_TRUE(other.ok());
  s = other.value()->CheckState(home).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, core::ErrorCode::kNotFound);
  EXPECT_NE(s.error().message.find("no-such-scene"), std::string::npos) << s.error().message;
  EXPECT_FALSE(RemoteSpace(*other.value()).ok());

  const Result<bool> valid = state.IsValid(home);
  ASSERT_TRUE(valid.ok()) << "the daemon should keep serving";
  EXPECT_TRUE(valid.value()) << "the home state of the default scene is free";
  EXPECT_EQ(remote_->failures(), 4) << "four RPCs failed; the ragged batch was refused before sending";
}

// One RemoteScene shared by four threads: every answer equals the in-process one.
TEST_F(RemoteValidityTest, ConcurrentCallersShareOneChannel) {
  const RemoteStateValidity remote(remote_);
  const RemoteMotionValidator remote_motion(remote_);
  const planners::SceneStateValidity local(scene_);
  const planners::SceneMotionValidator local_motion(scene_, core::MotionRequest{});
  constexpr int kThreads = 4;
  const int per_thread = testing::Cases(150);
  std::vector<int> mismatches(kThreads, 0), failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      planners::Rng rng(100 + static_cast<uint64_t>(t));
      Configuration q(static_cast<size_t>(space_->dof())), q1(q.size());
      for (int i = 0; i < per_thread; ++i) {
        space_->Sample(rng, q);
        const Result<bool> r = remote.IsValid(q);
        const Result<bool> l = r.ok() ? local.IsValid(q) : Result<bool>(false);
        failures[t] += !r.ok() || !l.ok();
        mismatches[t] += r.value_or(false) != l.value_or(false);
        if (i % 5 == 0) {
          space_->Sample(rng, q1);
          const Result<MotionCheck> remote_check = remote_motion.CheckMotion(q, q1);
          const Result<MotionCheck> local_check =
              remote_check.ok() ? local_motion.CheckMotion(q, q1) : Result<MotionCheck>(MotionCheck());
          failures[t] += !remote_check.ok() || !local_check.ok();
          const MotionCheck mr = remote_check.value_or({}), ml = local_check.value_or({});
          mismatches[t] += mr.valid != ml.valid || mr.last_valid_t != ml.last_valid_t;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], 0) << "thread " << t;
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  }
  EXPECT_EQ(remote.checks(), kThreads * per_thread);
}

// SIGTERM while the client holds an open connection: the daemon drains and exits 0, and the next call
// is an error naming the target.
TEST_F(RemoteValidityTest, DaemonStoppedUnderAConnectedClient) {
  const RemoteStateValidity state(remote_);
  const Configuration home(static_cast<size_t>(space_->dof()), 0.0);
  ASSERT_TRUE(state.IsValid(home).ok());
  const auto t0 = Clock::now();
  const int code = daemon_->Terminate();
  const double stop_s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(code, 0) << "proximityd did not exit 0 on SIGTERM; its stderr:\n" << daemon_->log();
  const std::string target = daemon_->target();
  daemon_.reset();
  const Status s = state.IsValid(home).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(target), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("UNAVAILABLE"), std::string::npos) << s.error().message;
  std::printf("[ stop ] SIGTERM with a client connected: exit %d after %.2f s; next call: %s\n", code, stop_s,
              s.error().message.c_str());
}

// No daemon: a loopback port nobody listens on fails fast with UNAVAILABLE, and one that accepts TCP
// but never answers fails at the deadline; both as errors naming the target, never a crash or a hang.
TEST(RemoteValidityErrors, UnreachableTargetsAreErrorsNamingThem) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  RemoteOptions options;
  options.target = "127.0.0.1:" + std::to_string(port);
  options.deadline = std::chrono::seconds(5);
  auto connected = RemoteScene::Connect(options);
  ASSERT_TRUE(connected.ok()) << connected.error().message;
  const auto& remote = connected.value();
  const Configuration q(6, 0.0);
  auto t0 = Clock::now();
  Status s = RemoteStateValidity(remote).IsValid(q).status();
  const double refused_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(options.target), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("UNAVAILABLE"), std::string::npos) << s.error().message;
  s = RemoteMotionValidator(remote).CheckMotion(q, q).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(options.target), std::string::npos) << s.error().message;
  s = remote->CheckStates(std::vector<double>(12, 0.0), 6).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(options.target), std::string::npos) << s.error().message;
  auto space = RemoteSpace(*remote);
  ASSERT_FALSE(space.ok());
  EXPECT_NE(space.error().message.find(options.target), std::string::npos) << space.error().message;
  EXPECT_FALSE(remote->WaitUntilServing(std::chrono::milliseconds(200)).ok());

  // A listener that never speaks HTTP/2: the call ends at its deadline.
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
  RemoteOptions silent = options;
  silent.target = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  silent.deadline = std::chrono::milliseconds(500);
  auto silent_remote = RemoteScene::Connect(silent);
  ASSERT_TRUE(silent_remote.ok());
  t0 = Clock::now();
  s = silent_remote.value()->CheckState(q).status();
  const double silent_s = std::chrono::duration<double>(Clock::now() - t0).count();
  close(listener);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(silent.target), std::string::npos) << s.error().message;
  EXPECT_TRUE(s.error().message.find("DEADLINE_EXCEEDED") != std::string::npos ||
              s.error().message.find("UNAVAILABLE") != std::string::npos)
      << s.error().message;
  std::printf("[ unreachable ] refused port: %s after %.3f s; silent listener (0.5 s deadline): %s after %.3f s\n",
              "UNAVAILABLE", refused_s, s.error().message.c_str(), silent_s);
}

TEST(RemoteValidityErrors, BadOptionsAreRejectedByName) {
  RemoteOptions o;
  auto r = RemoteScene::Connect(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("target"), std::string::npos);
  o.target = "127.0.0.1:1";
  o.deadline = std::chrono::milliseconds(0);
  r = RemoteScene::Connect(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("deadline"), std::string::npos);
  o.deadline = std::chrono::seconds(1);
  o.scene_id.clear();
  r = RemoteScene::Connect(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("scene_id"), std::string::npos);
  o.scene_id = "default";
  o.batch_rows = 0;
  r = RemoteScene::Connect(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("batch_rows"), std::string::npos);
}

}  // namespace
}  // namespace proximity::clients
