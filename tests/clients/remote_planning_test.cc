// Planning against a real proximityd over query sessions (proximity::remote): the session's answers
// equal the unary calls' and the core's in process; our planners (RRT, RRT-Connect, PRM, LazyPRM, with
// a quick sampled check growing the trees and candidate paths certified in one round trip each) and
// OMPL's RRT-Connect through the OMPL adapter give the same outcomes and the same paths remotely (over
// sessions and over unary calls) as in process for the same seed. The time per validity query of each
// is printed, never asserted.
#include <gtest/gtest.h>

#include <ompl/base/ProblemDefinition.h>
#include <ompl/geometric/PathGeometric.h>
#include <ompl/geometric/planners/rrt/RRTConnect.h>
#include <ompl/util/Console.h>
#include <ompl/util/RandomNumbers.h>

#include <Eigen/Geometry>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "clients/daemon.h"
#include "core/test_util.h"
#include "proximity/clients/remote_validity.h"
#include "proximity/core/contact/tracker.h"
#include "proximity/planners/ompl_adapter.h"
#include "proximity/planners/planner.h"
#include "proximity/planners/scene_validity.h"

namespace proximity::clients {
namespace {

namespace ob = ompl::base;
namespace og = ompl::geometric;
using planners::Configuration;
using planners::JointSpace;
using planners::MotionCheck;
using test_daemon::Clock;
using test_daemon::Daemon;
using test_daemon::DefaultSceneInProcess;

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

class RemotePlanningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PROX_REQUIRE_DIR(proximity::testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the default scene's KR5)");
    std::string error;
    daemon_ = Daemon::Start(&error);
    ASSERT_NE(daemon_, nullptr) << error;
    RemoteOptions options;
    options.target = daemon_->target();
    options.deadline = std::chrono::seconds(60);
    auto session = RemoteScene::Connect(options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    remote_ = session.value();
    options.use_session = false;
    auto unary = RemoteScene::Connect(options);
    ASSERT_TRUE(unary.ok()) << unary.error().message;
    unary_ = unary.value();
    const Status serving = remote_->WaitUntilServing(std::chrono::minutes(1));
    ASSERT_TRUE(serving.ok()) << serving.ToString();
    scene_ = DefaultSceneInProcess();
    ASSERT_NE(scene_, nullptr);
    space_ = std::make_unique<JointSpace>(JointSpace::ForRobot(scene_->robot()));
  }

  void TearDown() override {
    if (daemon_ == nullptr) return;
    remote_.reset();
    unary_.reset();
    const int code = daemon_->Terminate();
    EXPECT_EQ(code, 0) << "proximityd did not exit 0 on SIGTERM; its stderr:\n" << daemon_->log();
  }

  Configuration RandomValid(planners::Rng& rng, core::SceneCache* cache) const {
    Configuration q(static_cast<size_t>(space_->dof()));
    for (int i = 0; i < 100000; ++i) {
      space_->Sample(rng, q);
      const core::StateResult r = proximity::testing::ValueOrFail(scene_->CheckState(q, cache));
      if (r.free && r.within_limits) return q;
    }
    ADD_FAILURE() << "no valid state in 100,000 samples";
    return q;
  }

  // `n` valid start / goal pairs far apart whose straight motion collides.
  std::vector<std::pair<Configuration, Configuration>> Problems(int n, uint64_t seed) const {
    planners::Rng rng(seed);
    core::SceneCache cache;
    std::vector<std::pair<Configuration, Configuration>> out;
    for (int i = 0; i < 10000 && static_cast<int>(out.size()) < n; ++i) {
      Configuration a = RandomValid(rng, &cache), b = RandomValid(rng, &cache);
      const core::MotionResult m = proximity::testing::ValueOrFail(scene_->CheckMotion(a, b, {}, &cache));
      if (!m.free && space_->Distance(a, b) > 1.0) out.emplace_back(a, b);
    }
    EXPECT_EQ(static_cast<int>(out.size()), n);
    return out;
  }

  std::unique_ptr<Daemon> daemon_;
  std::shared_ptr<const RemoteScene> remote_;  // over sessions
  std::shared_ptr<const RemoteScene> unary_;   // one unary RPC per query
  std::shared_ptr<const core::Scene> scene_;
  std::unique_ptr<JointSpace> space_;
};

// Session answers equal the unary calls' and the core's: states, edges (with last_valid_t), a lazy
// planner's edge batches (a prefix up to the first invalid edge) and distances along a trajectory, warm
// and cold. One calling thread opens one session and keeps it.
TEST_F(RemotePlanningTest, SessionAnswersEqualUnaryCallsAndTheCore) {
  planners::Rng rng(3);
  const planners::SceneStateValidity local_state(scene_);
  const planners::SceneMotionValidator local_motion(scene_, core::MotionRequest{});
  const int n = proximity::testing::Cases(300);
  Configuration q(static_cast<size_t>(space_->dof())), q1(q.size());
  int valid = 0, free_edges = 0;
  for (int i = 0; i < n; ++i) {
    space_->Sample(rng, q);
    const bool l = proximity::testing::ValueOrFail(local_state.IsValid(q));
    EXPECT_EQ(proximity::testing::ValueOrFail(remote_->CheckState(q)), l) << "state " << i;
    EXPECT_EQ(proximity::testing::ValueOrFail(unary_->CheckState(q)), l) << "state " << i;
    valid += l;
    if (i % 3 == 0) {
      space_->Sample(rng, q1);
      space_->Interpolate(q, q1, 0.3, q1);
      const MotionCheck lm = proximity::testing::ValueOrFail(local_motion.CheckMotion(q, q1));
      const MotionCheck sm = proximity::testing::ValueOrFail(remote_->CheckMotion(q, q1, {}));
      const MotionCheck um = proximity::testing::ValueOrFail(unary_->CheckMotion(q, q1, {}));
      EXPECT_EQ(sm.valid, lm.valid) << "edge " << i;
      EXPECT_EQ(sm.last_valid_t, lm.last_valid_t) << "edge " << i;
      // (The states posed are work, not answer: they follow the per-pair hull warm starts each side's
      // cache holds from its own earlier queries, so they are not compared.)
      EXPECT_EQ(um.valid, lm.valid) << "edge " << i;
      EXPECT_EQ(um.last_valid_t, lm.last_valid_t) << "edge " << i;
      free_edges += lm.valid;
    }
  }
  EXPECT_GT(valid, n / 10);
  EXPECT_LT(valid, n - n / 10);
  EXPECT_GT(free_edges, 0);

  // Batches of 12 edges from a random walk: the remote prefix equals the one-by-one answers.
  int prefixes_short = 0;
  for (int b = 0; b < 20; ++b) {
    std::vector<double> starts, ends;
    space_->Sample(rng, q);
    for (int e = 0; e < 12; ++e) {
      space_->Sample(rng, q1);
      space_->Interpolate(q, q1, 0.15, q1);
      starts.insert(starts.end(), q.begin(), q.end());
      ends.insert(ends.end(), q1.begin(), q1.end());
      q = q1;
    }
    const auto local = proximity::testing::ValueOrFail(local_motion.CheckMotionsUntilInvalid(starts, ends, space_->dof()));
    const auto remote = proximity::testing::ValueOrFail(remote_->CheckMotionsUntilInvalid(starts, ends, space_->dof(), {}));
    const auto unary = proximity::testing::ValueOrFail(unary_->CheckMotionsUntilInvalid(starts, ends, space_->dof(), {}));
    ASSERT_EQ(remote.size(), local.size()) << "batch " << b;
    ASSERT_EQ(unary.size(), local.size()) << "batch " << b;
    for (size_t e = 0; e < local.size(); ++e) {
      EXPECT_EQ(remote[e].valid, local[e].valid) << "batch " << b << " edge " << e;
      EXPECT_EQ(remote[e].last_valid_t, local[e].last_valid_t) << "batch " << b << " edge " << e;
      EXPECT_EQ(unary[e].last_valid_t, local[e].last_valid_t) << "batch " << b << " edge " << e;
    }
    prefixes_short += local.size() < 12;
    // Every edge of the batch (the simplifier's shortcuts): the one-by-one answers, in one round trip.
    const auto all = proximity::testing::ValueOrFail(local_motion.CheckMotions(starts, ends, space_->dof()));
    const int64_t calls_before = remote_->calls();
    const auto remote_all = proximity::testing::ValueOrFail(remote_->CheckMotions(starts, ends, space_->dof(), {}));
    const auto unary_all = proximity::testing::ValueOrFail(unary_->CheckMotions(starts, ends, space_->dof(), {}));
    ASSERT_EQ(all.size(), 12u);
    ASSERT_EQ(remote_all.size(), all.size()) << "batch " << b;
    ASSERT_EQ(unary_all.size(), all.size()) << "batch " << b;
    EXPECT_EQ(remote_->calls() - calls_before, 12) << "one session message of 12 queries";
    for (size_t e = 0; e < all.size(); ++e) {
      EXPECT_EQ(remote_all[e].valid, all[e].valid) << "batch " << b << " edge " << e;
      EXPECT_EQ(remote_all[e].last_valid_t, all[e].last_valid_t) << "batch " << b << " edge " << e;
      EXPECT_EQ(unary_all[e].last_valid_t, all[e].last_valid_t) << "batch " << b << " edge " << e;
      if (e < local.size()) {
        EXPECT_EQ(all[e].valid, local[e].valid) << "batch " << b << " edge " << e;
      }
    }
  }
  EXPECT_GT(prefixes_short, 0) << "no batch met a colliding edge";

  // Distances along a trajectory (small steps), warm and cold, equal the core's.
  std::vector<double> rows;
  space_->Sample(rng, q);
  space_->Sample(rng, q1);
  for (int k = 0; k < 50; ++k) {
    Configuration p(q.size());
    space_->Interpolate(q, q1, k / 49.0, p);
    rows.insert(rows.end(), p.begin(), p.end());
  }
  RemoteSession warm(*remote_), cold(*remote_, true);
  const auto w = proximity::testing::ValueOrFail(warm.Distances(rows, space_->dof(), 0.05));
  const auto c = proximity::testing::ValueOrFail(cold.Distances(rows, space_->dof(), 0.05));
  ASSERT_EQ(w.size(), 50u);
  ASSERT_EQ(c.size(), 50u);
  core::SceneCache cache;
  core::SceneDistanceRequest dr;
  dr.rel_err = 0.05;
  for (size_t k = 0; k < w.size(); ++k) {
    const auto d = proximity::testing::ValueOrFail(
        scene_->ComputeDistance(std::span<const double>(rows.data() + k * q.size(), q.size()), dr, &cache));
    EXPECT_EQ(w[k].lower, d.lower_bound) << "state " << k;
    EXPECT_EQ(w[k].upper, d.upper_bound) << "state " << k;
    EXPECT_EQ(c[k].lower, d.lower_bound) << "state " << k;
  }
  EXPECT_EQ(warm.round_trips(), 1);
  EXPECT_EQ(remote_->sessions_opened(), 3) << "the pooled session of this thread, and the two made here";
  EXPECT_EQ(unary_->sessions_opened(), 0);
  EXPECT_EQ(remote_->failures(), 0);
}

// Track queries through a session (frame by frame, and a trajectory's frames in one round trip) equal an
// in-process tracker's frames: the same pairs by name, intervals, witness points, normals, features and
// gradients; warm frames keep their features.
TEST_F(RemotePlanningTest, TrackFramesEqualAnInProcessTracker) {
  planners::Rng rng(11);
  Configuration a(static_cast<size_t>(space_->dof())), b(a.size()), p(a.size());
  RemoteTrackRequest request;
  request.horizon = 0.5;
  request.max_pairs = 6;
  core::TrackRequest local_request;
  local_request.horizon = request.horizon;
  local_request.max_pairs = request.max_pairs;
  const int frames = 40;
  std::vector<double> rows;
  space_->Sample(rng, a);
  space_->Sample(rng, b);
  space_->Interpolate(a, b, 0.05, b);  // small steps: a controller's frames
  for (int k = 0; k < frames; ++k) {
    space_->Interpolate(a, b, k / (frames - 1.0), p);
    rows.insert(rows.end(), p.begin(), p.end());
  }
  const auto dof = static_cast<size_t>(space_->dof());
  core::Tracker local(scene_);
  RemoteSession one_by_one(*remote_), batched(*remote_);
  const auto all = proximity::testing::ValueOrFail(batched.Track(rows, space_->dof(), request));
  ASSERT_EQ(all.size(), static_cast<size_t>(frames));
  EXPECT_EQ(batched.round_trips(), 1);
  int reported = 0, kept_features = 0;
  for (int k = 0; k < frames; ++k) {
    const std::span<const double> q(rows.data() + static_cast<size_t>(k) * dof, dof);
    const core::TrackResult want = proximity::testing::ValueOrFail(local.Update(q, local_request));
    const RemoteTrack got = proximity::testing::ValueOrFail(one_by_one.Track(q, request));
    for (const RemoteTrack* r : {&got, &all[static_cast<size_t>(k)]}) {
      ASSERT_EQ(r->pairs.size(), want.pairs.size()) << "frame " << k;
      EXPECT_EQ(r->within_limits, want.within_limits);
      EXPECT_EQ(r->same_features, want.same_features) << "frame " << k;
      for (size_t i = 0; i < want.pairs.size(); ++i) {
        const core::TrackedPair& w = want.pairs[i];
        const RemoteTrackedPair& g = r->pairs[i];
        EXPECT_EQ(g.self, w.distance.pair.self);
        EXPECT_EQ(g.robot, w.distance.pair.Name(*scene_)) << "frame " << k << " pair " << i;
        EXPECT_EQ(g.other, w.distance.pair.OtherName(*scene_)) << "frame " << k << " pair " << i;
        EXPECT_DOUBLE_EQ(g.lower, w.distance.lower);
        EXPECT_DOUBLE_EQ(g.upper, w.distance.upper);
        EXPECT_DOUBLE_EQ(g.signed_distance, w.signed_distance);
        EXPECT_LT((g.point_robot - w.distance.p_W_robot).norm(), 1e-12);
        EXPECT_LT((g.point_other - w.distance.p_W_other).norm(), 1e-12);
        EXPECT_LT((g.normal - w.normal_W).norm(), 1e-12);
        // The client's enums are numbered as the core's.
        EXPECT_EQ(static_cast<int>(g.feature_robot.type), static_cast<int>(w.feature_robot.type));
        EXPECT_EQ(g.feature_robot.index, w.feature_robot.index);
        EXPECT_EQ(static_cast<int>(g.feature_other.type), static_cast<int>(w.feature_other.type));
        EXPECT_EQ(g.feature_other.index, w.feature_other.index);
        EXPECT_EQ(g.same_features, w.same_features);
        EXPECT_EQ(static_cast<int>(g.method), static_cast<int>(w.method));
        ASSERT_EQ(g.gradient.size(), w.gradient.size());
        for (size_t j = 0; j < w.gradient.size(); ++j) EXPECT_DOUBLE_EQ(g.gradient[j], w.gradient[j]);
      }
    }
    reported += static_cast<int>(want.pairs.size());
    kept_features += want.same_features;
  }
  EXPECT_GT(reported, frames) << "the frames should come near the world or the robot itself";
  EXPECT_GT(kept_features, 0) << "small steps should keep some closest features";
  // A row of the wrong size is refused by name, before anything is sent.
  const auto bad = batched.Track(std::span<const double>(rows.data(), dof + 1), space_->dof(), request);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("Track"), std::string::npos) << bad.error().message;
  RemoteTrackRequest none = request;
  none.max_pairs = 0;
  const auto zero = batched.Track(std::span<const double>(rows.data(), dof), none);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("max_pairs"), std::string::npos) << zero.error().message;
}

// A planner's step chains (CheckStepsUntilInvalid): in process (states in one batch per wave), over a
// session (every chain in one message) and over unary calls, each chain's answers are those of asking
// IsValid and CheckMotion step by step up to its first invalid step, and a chain after another is
// skipped when that one did not end complete.
TEST_F(RemotePlanningTest, StepChainsAnswerAsStepByStep) {
  planners::Rng rng(19);
  core::MotionRequest quick;
  quick.mode = core::MotionRequest::Mode::kDiscrete;
  quick.resolution = 0.05;
  const planners::SceneStateValidity local_state(scene_);
  const planners::SceneMotionValidator local_quick(scene_, quick);
  const RemoteStateValidity session_state(remote_), unary_state(unary_);
  const RemoteMotionRequest remote_quick{RemoteMotionRequest::Mode::kDiscrete, quick.resolution};
  const RemoteMotionValidator session_quick(remote_, remote_quick), unary_quick(unary_, remote_quick);
  const auto dof = static_cast<size_t>(space_->dof());
  int stopped = 0, complete = 0, skipped = 0;
  for (int batch = 0; batch < 24; ++batch) {
    std::vector<double> states, starts, ends;
    std::vector<int32_t> chains, after;  // odd batches: chains after earlier ones (-1: none)
    const int count = 1 + batch % 8;
    for (int c = 0; c < count; ++c) {
      if (batch % 2 == 1) after.push_back(c == 0 || rng() % 4 == 0 ? -1 : static_cast<int32_t>(rng() % c));
      Configuration from(dof), to(dof);
      space_->Sample(rng, from);
      const int32_t steps = 1 + static_cast<int32_t>(rng() % 4);
      for (int32_t k = 0; k < steps; ++k) {
        space_->Sample(rng, to);
        space_->Interpolate(from, to, 0.1, to);
        states.insert(states.end(), to.begin(), to.end());
        starts.insert(starts.end(), from.begin(), from.end());
        ends.insert(ends.end(), to.begin(), to.end());
        from = to;
      }
      chains.push_back(steps);
    }
    // The reference: each chain step by step, state first, up to its first invalid step; skipped when
    // its prerequisite did not end complete.
    std::vector<planners::StepChecks> expected(chains.size());
    size_t k = 0;
    for (size_t c = 0; c < chains.size(); ++c) {
      if (!after.empty() && after[c] >= 0) {
        const planners::StepChecks& p = expected[static_cast<size_t>(after[c])];
        if (p.skipped || p.valid_steps < static_cast<size_t>(chains[static_cast<size_t>(after[c])])) {
          expected[c].skipped = true;
          k += static_cast<size_t>(chains[c]);
          ++skipped;
          continue;
        }
      }
      bool invalid = false;
      for (int32_t j = 0; j < chains[c]; ++j, ++k) {
        if (invalid) continue;
        const std::span<const double> q(states.data() + k * dof, dof);
        if (!proximity::testing::ValueOrFail(local_state.IsValid(q))) {
          invalid = true;
          continue;
        }
        const MotionCheck m = proximity::testing::ValueOrFail(local_quick.CheckMotion(
            std::span<const double>(starts.data() + k * dof, dof), std::span<const double>(ends.data() + k * dof, dof)));
        expected[c].motions.push_back(m);
        invalid = !m.valid;
        expected[c].valid_steps += m.valid;
      }
      (expected[c].valid_steps < static_cast<size_t>(chains[c]) ? stopped : complete) += 1;
    }
    const int64_t calls_before = remote_->calls();
    const int64_t trips_before = remote_->session_round_trips();
    RemoteSession counted(*remote_);
    std::vector<std::vector<planners::StepChecks>> sides;  // session, in process, validators: session, unary
    sides.push_back(proximity::testing::ValueOrFail(
        counted.CheckStepsUntilInvalid(states, starts, ends, chains, space_->dof(), remote_quick, after)));
    EXPECT_EQ(counted.round_trips(), 1) << "batch " << batch;
    sides.push_back(proximity::testing::ValueOrFail(
        local_quick.CheckStepsUntilInvalid(local_state, states, starts, ends, chains, after, space_->dof())));
    sides.push_back(proximity::testing::ValueOrFail(
        session_quick.CheckStepsUntilInvalid(session_state, states, starts, ends, chains, after, space_->dof())));
    // One message for each of the two session sides, whatever the batch's size.
    EXPECT_EQ(remote_->session_round_trips() - trips_before, 2) << "batch " << batch;
    sides.push_back(proximity::testing::ValueOrFail(
        unary_quick.CheckStepsUntilInvalid(unary_state, states, starts, ends, chains, after, space_->dof())));
    for (size_t side = 0; side < sides.size(); ++side) {
      const std::vector<planners::StepChecks>& answers = sides[side];
      ASSERT_EQ(answers.size(), expected.size()) << "batch " << batch << " side " << side;
      for (size_t c = 0; c < expected.size(); ++c) {
        const std::string where =
            "batch " + std::to_string(batch) + " side " + std::to_string(side) + " chain " + std::to_string(c);
        EXPECT_EQ(answers[c].skipped, expected[c].skipped) << where;
        EXPECT_EQ(answers[c].valid_steps, expected[c].valid_steps) << where;
        ASSERT_EQ(answers[c].motions.size(), expected[c].motions.size()) << where;
        for (size_t m = 0; m < expected[c].motions.size(); ++m) {
          EXPECT_EQ(answers[c].motions[m].valid, expected[c].motions[m].valid) << where << " segment " << m;
          EXPECT_EQ(answers[c].motions[m].last_valid_t, expected[c].motions[m].last_valid_t) << where;
        }
      }
    }
    EXPECT_GT(remote_->calls(), calls_before);
  }
  EXPECT_GT(stopped, 3);
  EXPECT_GT(complete, 3);
  EXPECT_GT(skipped, 3);
  // The session validator counts the states the server answered and the segments it checked.
  EXPECT_GT(session_state.checks(), 0);
  EXPECT_GT(session_quick.checks(), 0);
  EXPECT_EQ(remote_->failures(), 0);
}

// Our planners over the remote scene (sessions, and unary calls) find the same paths as in process,
// problem by problem, with the same seed; lazily certified (a sampled quick check grows the trees, the
// candidate path's edges are certified in one round trip).
TEST_F(RemotePlanningTest, OurPlannersFindTheSamePathsRemotelyAsInProcess) {
  core::MotionRequest quick;
  quick.mode = core::MotionRequest::Mode::kDiscrete;
  quick.resolution = planners::ScenePlanning::kDefaultQuickResolution;
  const planners::SceneStateValidity local_state(scene_);
  const planners::SceneMotionValidator local_motion(scene_, core::MotionRequest{});
  const planners::SceneMotionValidator local_quick(scene_, quick);
  const planners::PlanningContext local{*space_, &local_state, &local_motion, &local_quick};
  const RemoteStateValidity session_state(remote_), unary_state(unary_);
  const RemoteMotionValidator session_motion(remote_), unary_motion(unary_);
  const RemoteMotionRequest remote_quick{RemoteMotionRequest::Mode::kDiscrete, quick.resolution};
  const RemoteMotionValidator session_quick(remote_, remote_quick), unary_quick(unary_, remote_quick);
  const planners::PlanningContext session{*space_, &session_state, &session_motion, &session_quick};
  const planners::PlanningContext unary{*space_, &unary_state, &unary_motion, &unary_quick};

  const auto problems = Problems(proximity::testing::Cases(3), 11);
  planners::Termination termination;
  termination.time_limit_s = 300.0;
  termination.max_iterations = 20000;
  int solved[3] = {0, 0, 0};
  double seconds[3] = {0, 0, 0};
  int64_t queries[3] = {0, 0, 0};
  for (const planners::PlannerType type : {planners::PlannerType::kRrt, planners::PlannerType::kRrtConnect,
                                           planners::PlannerType::kPrm, planners::PlannerType::kLazyPrm}) {
    for (size_t p = 0; p < problems.size(); ++p) {
      const std::string where = std::string(planners::PlannerTypeName(type)) + " problem " + std::to_string(p);
      planners::PlannerOptions options;
      options.type = type;
      options.seed = 100 + p;
      planners::PlanResult results[3];
      const planners::PlanningContext* contexts[3] = {&local, &session, &unary};
      for (int k = 0; k < 3; ++k) {
        const auto t0 = Clock::now();
        auto planned = planners::Plan(*contexts[k], problems[p].first, problems[p].second, options, termination);
        seconds[k] += Seconds(t0);
        ASSERT_TRUE(planned.ok()) << where << ": " << planned.error().message;
        results[k] = std::move(planned).value();
        const planners::PlanStats& s = results[k].stats;
        queries[k] += s.state_checks + s.motion_checks + s.quick_motion_checks;
        solved[k] += results[k].solved();
      }
      for (int k = 1; k < 3; ++k) {
        EXPECT_EQ(results[k].outcome, results[0].outcome) << where << (k == 1 ? " (session)" : " (unary)");
        EXPECT_EQ(results[k].path, results[0].path) << where << (k == 1 ? " (session)" : " (unary)");
        EXPECT_EQ(results[k].stats.motion_checks, results[0].stats.motion_checks) << where;
        EXPECT_EQ(results[k].stats.certification_failures, results[0].stats.certification_failures) << where;
      }
    }
  }
  EXPECT_GT(solved[0], 0);
  EXPECT_EQ(solved[1], solved[0]);
  EXPECT_EQ(solved[2], solved[0]);
  EXPECT_EQ(remote_->failures(), 0);
  std::printf("[ planners ] RRT, RRT-Connect, PRM, LazyPRM on %zu problems: %d solved in process, %d over sessions, %d "
              "over unary calls, the same paths; per validity query: in process %.1f us, session %.1f us, unary %.1f "
              "us; sessions opened %ld\n",
              problems.size(), solved[0], solved[1], solved[2], 1e6 * seconds[0] / static_cast<double>(queries[0]),
              1e6 * seconds[1] / static_cast<double>(queries[1]), 1e6 * seconds[2] / static_cast<double>(queries[2]),
              static_cast<long>(remote_->sessions_opened()));
}

// OMPL's RRT-Connect through the OMPL adapter, over the remote scene (sessions) and in process, with the
// same OMPL seed: the same solved count and the same raw paths, waypoint for waypoint.
TEST_F(RemotePlanningTest, OmplRrtConnectFindsTheSamePathsRemotelyAsInProcess) {
  ompl::msg::setLogLevel(ompl::msg::LOG_NONE);  // re-seeding OMPL logs an error it then carries out
  const auto problems = Problems(proximity::testing::Cases(4), 29);
  auto remote_space = RemoteSpace(*remote_);
  ASSERT_TRUE(remote_space.ok()) << remote_space.error().message;
  struct Run {
    bool solved = false;
    std::vector<Configuration> path;
    int64_t checks = 0;
  };
  // Both runs make OMPL's random generators in the same order after the same seed.
  auto solve = [&](const JointSpace& space, std::shared_ptr<const planners::StateValidityChecker> state,
                   std::shared_ptr<const planners::MotionValidator> motion, const Configuration& start,
                   const Configuration& goal, uint32_t seed) {
    ompl::RNG::setSeed(seed);
    Run out;
    auto setup = planners::MakeOmplSetup(space, std::move(state), std::move(motion));
    EXPECT_TRUE(setup.ok()) << setup.error().message;
    if (!setup.ok()) return out;
    const planners::OmplSetup& s = setup.value();
    auto pdef = std::make_shared<ob::ProblemDefinition>(s.si);
    ob::State* a = s.NewState(start);
    ob::State* b = s.NewState(goal);
    pdef->setStartAndGoalStates(a, b);
    s.si->freeState(a);
    s.si->freeState(b);
    auto planner = std::make_shared<og::RRTConnect>(s.si);
    planner->setProblemDefinition(pdef);
    planner->setup();
    out.solved = planner->solve(ob::timedPlannerTerminationCondition(300.0)) == ob::PlannerStatus::EXACT_SOLUTION;
    EXPECT_TRUE(s.status().ok()) << s.status().ToString();
    if (out.solved) out.path = s.layout->PathConfigurations(*pdef->getSolutionPath()->as<og::PathGeometric>());
    out.checks = s.state_checker->checks() + s.motion_validator->getValidMotionCount() + s.motion_validator->getInvalidMotionCount();
    return out;
  };
  int solved_local = 0, solved_remote = 0;
  double local_s = 0.0, remote_s = 0.0;
  int64_t local_checks = 0, remote_checks = 0;
  for (size_t p = 0; p < problems.size(); ++p) {
    const auto& [start, goal] = problems[p];
    const uint32_t seed = 4242 + static_cast<uint32_t>(p);
    auto t0 = Clock::now();
    const Run local = solve(*space_, std::make_shared<planners::SceneStateValidity>(scene_),
                            std::make_shared<planners::SceneMotionValidator>(scene_, core::MotionRequest{}), start,
                            goal, seed);
    local_s += Seconds(t0);
    t0 = Clock::now();
    const Run remote = solve(remote_space.value(), std::make_shared<RemoteStateValidity>(remote_),
                             std::make_shared<RemoteMotionValidator>(remote_), start, goal, seed);
    remote_s += Seconds(t0);
    solved_local += local.solved;
    solved_remote += remote.solved;
    EXPECT_EQ(remote.solved, local.solved) << "problem " << p;
    ASSERT_EQ(remote.path.size(), local.path.size()) << "problem " << p;
    for (size_t w = 0; w < local.path.size(); ++w) {
      for (size_t j = 0; j < local.path[w].size(); ++j) {
        EXPECT_NEAR(remote.path[w][j], local.path[w][j], 1e-12) << "problem " << p << " waypoint " << w;
      }
    }
    EXPECT_EQ(remote.checks, local.checks) << "problem " << p;
    local_checks += local.checks;
    remote_checks += remote.checks;
  }
  EXPECT_GT(solved_local, 0);
  EXPECT_EQ(solved_remote, solved_local);
  std::printf("[ ompl ] OMPL RRTConnect on %zu problems: %d solved in process, %d over sessions, the same paths; "
              "per validity query: in process %.1f us, session %.1f us\n",
              problems.size(), solved_local, solved_remote, 1e6 * local_s / static_cast<double>(local_checks),
              1e6 * remote_s / static_cast<double>(remote_checks));
}

// Pose goals from C++ against the daemon: SolveIk's answers put the link at the pose (forward
// kinematics in process, the scene's base pose applied) and are free when asked; our RRT-Connect run here
// over session checks with RemotePoseGoalSampler ends at the pose on a path the core certifies.
TEST_F(RemotePlanningTest, PoseGoalsThroughTheRemoteIk) {
  const core::RobotModel& robot = scene_->robot();
  planners::Rng rng(41);
  core::SceneCache cache;
  const core::LinkIndex tip = robot.num_links() - 1;
  int found = 0;
  const int n = proximity::testing::Cases(8);
  for (int i = 0; i < n; ++i) {
    const Configuration target = RandomValid(rng, &cache);
    RemotePoseGoal goal;
    goal.link = robot.link(tip).name;
    goal.X_WT = proximity::testing::ValueOrFail(robot.ForwardKinematics(target, scene_->X_WB()))[static_cast<size_t>(tip)];
    RemoteIkRequest request;
    request.random_seed = static_cast<uint64_t>(i);
    const RemoteIk ik = proximity::testing::ValueOrFail(remote_->SolveIk(goal, request));
    if (!ik.found) continue;
    ++found;
    ASSERT_EQ(ik.q.size(), static_cast<size_t>(robot.num_positions()));
    const core::RigidTransform X =
        proximity::testing::ValueOrFail(robot.ForwardKinematics(ik.q, scene_->X_WB()))[static_cast<size_t>(tip)];
    EXPECT_LE((X.p - goal.X_WT.p).norm(), 1e-4);
    EXPECT_LE(Eigen::AngleAxisd(goal.X_WT.R.transpose() * X.R).angle(), std::sqrt(3.0) * 1e-3);
    EXPECT_TRUE(robot.WithinLimits(ik.q));
    EXPECT_TRUE(proximity::testing::ValueOrFail(scene_->CheckState(ik.q, &cache)).free);
  }
  EXPECT_GE(found, n - 1);
  // Unknown links are refused by name.
  RemotePoseGoal bad;
  bad.link = "no_such_link";
  const auto refused = remote_->SolveIk(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("no_such_link"), std::string::npos) << refused.error().message;

  // Planning here, goals from the daemon's IK.
  const auto problems = Problems(1, 17);
  RemotePoseGoal goal;
  goal.link = robot.link(tip).name;
  goal.X_WT = proximity::testing::ValueOrFail(
      robot.ForwardKinematics(problems[0].second, scene_->X_WB()))[static_cast<size_t>(tip)];
  RemotePoseGoalSampler sampler(remote_, goal, problems[0].first);
  const RemoteStateValidity state(remote_);
  const RemoteMotionValidator motion(remote_);
  const planners::PlanningContext context{*space_, &state, &motion, nullptr};
  planners::Termination termination;
  termination.time_limit_s = 120.0;
  auto planned = planners::Plan(context, problems[0].first, sampler, planners::PlannerOptions{}, termination);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  ASSERT_TRUE(planned.value().solved()) << planners::PlanOutcomeName(planned.value().outcome);
  const auto& path = planned.value().path;
  EXPECT_EQ(path.front(), problems[0].first);
  const core::RigidTransform X =
      proximity::testing::ValueOrFail(robot.ForwardKinematics(path.back(), scene_->X_WB()))[static_cast<size_t>(tip)];
  EXPECT_LE((X.p - goal.X_WT.p).norm(), 1e-4);
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const core::MotionResult m = proximity::testing::ValueOrFail(scene_->CheckMotion(path[i], path[i + 1], {}, &cache));
    EXPECT_TRUE(m.free) << "segment " << i;
  }
  EXPECT_GE(sampler.solutions(), 1);
}

}  // namespace
}  // namespace proximity::clients
