// Service tests for Plan (service_planning.cc): paths on the default scene re-checked by the core's certified
// CheckPath in process, determinism, colliding ends, an unsolvable problem (a planar arm whose only way from
// start to goal is blocked, so TIMEOUT and ITERATION_LIMIT never depend on the machine's speed), bad input,
// and deadlines and cancellation ending a long plan.
#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <thread>
#include <tuple>

#include "tests/server/service_fixture.h"

namespace proximity::server::testing {
namespace {

using namespace std::chrono_literals;


/// A Plan request between two configurations in the scene's joint order.
v1::PlanRequest MakePlan(const std::string& scene, const std::vector<double>& start, const std::vector<double>& goal,
                         v1::Planner planner = v1::PLANNER_UNSPECIFIED, uint64_t seed = 1, double time_limit = 20.0) {
  v1::PlanRequest r;
  r.set_scene_id(scene);
  *r.mutable_start() = Positions(start);
  *r.mutable_goal() = Positions(goal);
  r.set_planner(planner);
  r.set_seed(seed);
  r.set_time_limit(time_limit);
  return r;
}

/// The rows of a wire path (packed or repeated), in its column order.
std::vector<std::vector<double>> Rows(const v1::Configurations& c) {
  const auto dof = static_cast<size_t>(c.joint_names_size());
  std::vector<double> values;
  if (!c.positions_f64le().empty()) {
    values.resize(c.positions_f64le().size() / sizeof(double));
    std::memcpy(values.data(), c.positions_f64le().data(), values.size() * sizeof(double));
  } else {
    values.assign(c.positions().begin(), c.positions().end());
  }
  std::vector<std::vector<double>> rows;
  for (size_t i = 0; dof > 0 && i + dof <= values.size(); i += dof) {
    rows.emplace_back(values.begin() + static_cast<std::ptrdiff_t>(i),
                      values.begin() + static_cast<std::ptrdiff_t>(i + dof));
  }
  return rows;
}

std::vector<double> Flatten(const std::vector<std::vector<double>>& rows) {
  std::vector<double> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

double PolylineLength(const std::vector<std::vector<double>>& rows) {
  double length = 0.0;
  for (size_t i = 1; i < rows.size(); ++i) {
    double s = 0.0;
    for (size_t j = 0; j < rows[i].size(); ++j) s += (rows[i][j] - rows[i - 1][j]) * (rows[i][j] - rows[i - 1][j]);
    length += std::sqrt(s);
  }
  return length;
}

struct Problem {
  std::vector<double> start, goal;
};

/// Free ends whose straight certified motion collides (the core decides), as short hops between random
/// free states.
std::vector<Problem> CollidingMotions(const core::Scene& scene, std::mt19937_64& rng, int n) {
  core::SceneCache cache;
  const auto free = [&](const std::vector<double>& q) {
    const core::Result<core::StateResult> r = scene.CheckState(q, &cache);
    return r.ok() && r.value().free;
  };
  std::vector<Problem> out;
  for (int attempt = 0; attempt < 100'000 && static_cast<int>(out.size()) < n; ++attempt) {
    const auto a = RandomState(rng, scene.robot());
    const auto b = RandomState(rng, scene.robot());
    const double t = std::uniform_real_distribution<double>(0.2, 0.6)(rng);
    auto q1 = a;
    for (size_t j = 0; j < q1.size(); ++j) q1[j] += t * (b[j] - a[j]);
    if (!free(a) || !free(q1)) continue;
    const core::Result<core::MotionResult> m = scene.CheckMotion(a, q1, {}, &cache);
    if (!m.ok() || m.value().free || m.value().undecided) continue;
    out.push_back({a, q1});
  }
  return out;
}

class PlanTest : public ServiceTest {
 protected:
  grpc::Status Plan(const v1::PlanRequest& request, v1::PlanResponse* response,
                    std::chrono::milliseconds deadline = 120s) {
    return stub_->Plan(Context(deadline).get(), request, response);
  }

  /// Checks a SOLVED answer: exact ends, the scene's joint order, a certified-free path by the core's
  /// own CheckPath, and statistics that agree with the path.
  void ExpectSolvedAndFree(const v1::PlanResponse& r, const Problem& p, const std::string& where) {
    ASSERT_EQ(r.outcome(), v1::PLAN_OUTCOME_SOLVED) << where << ": " << r.message();
    ASSERT_EQ(std::vector<std::string>(r.path().joint_names().begin(), r.path().joint_names().end()),
              core_->robot().active_joint_names())
        << where;
    const auto rows = Rows(r.path());
    ASSERT_GE(rows.size(), 2u) << where;
    EXPECT_EQ(rows.front(), p.start) << where << ": the path does not start exactly at the start";
    EXPECT_EQ(rows.back(), p.goal) << where << ": the path does not end exactly at the goal";
    core::SceneCache cache;
    core::PathResult check;
    PROX_ASSERT_OK_AND_ASSIGN(check, core_->CheckPath(Flatten(rows), {}, &cache));
    EXPECT_TRUE(check.free) << where << ": the core's certified CheckPath finds segment " << check.segment
                            << " of " << rows.size() - 1 << " not free";
    const v1::PlanStats& s = r.stats();
    EXPECT_NEAR(s.length(), PolylineLength(rows), 1e-9 * (1.0 + s.length())) << where;
    EXPECT_LE(s.length(), s.raw_length() * (1.0 + 1e-12)) << where << ": simplification made the path longer";
    EXPECT_GE(s.raw_waypoints(), 2) << where;
    EXPECT_GT(s.iterations(), 0) << where;
    EXPECT_GT(s.state_checks(), 0) << where;
    EXPECT_GT(s.motion_checks(), 0) << where;
    EXPECT_GE(s.plan_time(), 0.0) << where;
    EXPECT_GE(s.simplify_time(), 0.0) << where;
    EXPECT_TRUE(r.message().empty()) << where << ": " << r.message();
  }
};

// Every planner, on free ends whose straight motion collides: a path the core certifies free.
TEST_F(PlanTest, EveryPlannerSolvesTheDefaultSceneWithACertifiedFreePath) {
  std::mt19937_64 rng(71);
  const int n = kSanitized ? 1 : 3;
  const auto problems = CollidingMotions(*core_, rng, n);
  ASSERT_EQ(static_cast<int>(problems.size()), n) << "sampling found too few colliding motions";
  const std::pair<v1::Planner, v1::Planner> planners[] = {{v1::PLANNER_UNSPECIFIED, v1::PLANNER_RRT_CONNECT},
                                                          {v1::PLANNER_RRT, v1::PLANNER_RRT},
                                                          {v1::PLANNER_RRT_CONNECT, v1::PLANNER_RRT_CONNECT},
                                                          {v1::PLANNER_PRM, v1::PLANNER_PRM},
                                                          {v1::PLANNER_LAZY_PRM, v1::PLANNER_LAZY_PRM}};
  int calls = 0;
  for (size_t k = 0; k < problems.size(); ++k) {
    for (const auto& [asked, ran] : planners) {
      const std::string where = "problem " + std::to_string(k) + ", " + v1::Planner_Name(asked);
      v1::PlanResponse response;
      // The server's whole cap as time limit: the answer is decided by the seed, the time only bounds it.
      const grpc::Status status =
          Plan(MakePlan("default", problems[k].start, problems[k].goal, asked, 7, 60.0), &response);
      ASSERT_TRUE(status.ok()) << where << ": " << status.error_message();
      ++calls;
      EXPECT_EQ(response.planner(), ran) << where;
      ExpectSolvedAndFree(response, problems[k], where);
    }
  }
  // Counted like the other queries: one "plan" per call, and the planners' checks as CLEAR and LINK.
  const std::string text = server_->metrics().RenderText();
  EXPECT_NE(text.find("proximity_queries_total{kind=\"plan\"} " + std::to_string(calls) + "\n"), std::string::npos)
      << text.substr(0, 4000);
  EXPECT_EQ(server_->metrics().HandledCount(Rpc::kPlan, grpc::StatusCode::OK), static_cast<uint64_t>(calls));
}

// Without simplification the raw path comes back; discrete edge checks give a path the core's discrete
// check at the same resolution calls free.
TEST_F(PlanTest, SimplifyOffAndDiscreteEdges) {
  std::mt19937_64 rng(72);
  const auto problems = CollidingMotions(*core_, rng, 1);
  ASSERT_EQ(problems.size(), 1u);
  const Problem& p = problems[0];

  v1::PlanRequest raw = MakePlan("default", p.start, p.goal, v1::PLANNER_RRT_CONNECT, 3);
  raw.set_simplify(false);
  v1::PlanResponse response;
  ASSERT_TRUE(Plan(raw, &response).ok());
  ExpectSolvedAndFree(response, p, "simplify off");
  EXPECT_EQ(static_cast<int>(Rows(response.path()).size()), response.stats().raw_waypoints());
  EXPECT_EQ(response.stats().length(), response.stats().raw_length());
  EXPECT_EQ(response.stats().simplify_time(), 0.0);

  v1::PlanRequest discrete = MakePlan("default", p.start, p.goal, v1::PLANNER_RRT_CONNECT, 3);
  discrete.set_mode(v1::MOTION_MODE_DISCRETE);
  discrete.set_resolution(0.02);
  ASSERT_TRUE(Plan(discrete, &response).ok());
  ASSERT_EQ(response.outcome(), v1::PLAN_OUTCOME_SOLVED) << response.message();
  const auto rows = Rows(response.path());
  EXPECT_EQ(rows.front(), p.start);
  EXPECT_EQ(rows.back(), p.goal);
  core::MotionRequest sampled;
  sampled.mode = core::MotionRequest::Mode::kDiscrete;
  sampled.resolution = 0.02;
  core::SceneCache cache;
  core::PathResult check;
  PROX_ASSERT_OK_AND_ASSIGN(check, core_->CheckPath(Flatten(rows), sampled, &cache));
  EXPECT_TRUE(check.free) << "segment " << check.segment;
}

// The same request and seed give the same path, whichever form the ends are given in.
TEST_F(PlanTest, TheSameSeedGivesTheSamePath) {
  std::mt19937_64 rng(73);
  const auto problems = CollidingMotions(*core_, rng, 1);
  ASSERT_EQ(problems.size(), 1u);
  const Problem& p = problems[0];
  for (const v1::Planner planner : {v1::PLANNER_RRT_CONNECT, v1::PLANNER_PRM}) {
    const v1::PlanRequest request = MakePlan("default", p.start, p.goal, planner, 11);
    v1::PlanResponse a, b, c;
    ASSERT_TRUE(Plan(request, &a).ok());
    ASSERT_TRUE(Plan(request, &b).ok());
    ASSERT_EQ(a.outcome(), v1::PLAN_OUTCOME_SOLVED) << a.message();
    EXPECT_EQ(a.path().SerializeAsString(), b.path().SerializeAsString()) << v1::Planner_Name(planner);
    EXPECT_EQ(a.stats().iterations(), b.stats().iterations());
    // The start by joint name in reverse order: the same configuration, so the same path.
    v1::PlanRequest named = request;
    named.mutable_start()->Clear();
    const auto& names = core_->robot().active_joint_names();
    for (size_t j = names.size(); j-- > 0;) {
      named.mutable_start()->add_joint_names(names[j]);
      named.mutable_start()->add_positions(p.start[j]);
    }
    ASSERT_TRUE(Plan(named, &c).ok());
    EXPECT_EQ(a.path().SerializeAsString(), c.path().SerializeAsString()) << v1::Planner_Name(planner);
  }
}

// A colliding start or goal is an answer naming the contact (the core's CLEAR says which), not an error.
TEST_F(PlanTest, CollidingEndsAreInvalidStartOrGoal) {
  std::mt19937_64 rng(74);
  const auto problems = CollidingMotions(*core_, rng, 1);
  ASSERT_EQ(problems.size(), 1u);
  core::SceneCache cache;
  std::vector<double> colliding;
  core::StateResult hit;
  while (colliding.empty()) {
    auto q = RandomState(rng, core_->robot());
    PROX_ASSERT_OK_AND_ASSIGN(hit, core_->CheckState(q, &cache));
    if (!hit.free) colliding = q;
  }
  const std::string contact = hit.contact.Name(*core_) + " x " + hit.contact.OtherName(*core_);
  for (const bool at_start : {true, false}) {
    const v1::PlanRequest request = at_start ? MakePlan("default", colliding, problems[0].goal)
                                             : MakePlan("default", problems[0].start, colliding);
    v1::PlanResponse response;
    const grpc::Status status = Plan(request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.outcome(), at_start ? v1::PLAN_OUTCOME_INVALID_START : v1::PLAN_OUTCOME_INVALID_GOAL);
    EXPECT_EQ(Rows(response.path()).size(), 0u);
    const std::string which = at_start ? "start" : "goal";
    EXPECT_NE(response.message().find(which + " collides: " + contact), std::string::npos) << response.message();
  }
}

// The planar two-link arm (tests/data/robots) with a small box on its upper link's line at shoulder = 0:
// the upper link's pose depends on the shoulder alone, so every configuration with shoulder = 0
// collides, and no path joins shoulder < 0 to shoulder > 0 (the shoulder's limits are +-3, no wrap).
class BlockedArmTest : public PlanTest {
 protected:
  void SetUp() override {
    PlanTest::SetUp();
    if (HasFatalFailure() || IsSkipped()) return;
    const std::string dir = proximity::testing::TestDataDir() + "/robots/";
    v1::CreateSceneRequest create;
    create.mutable_robot()->set_urdf_path(dir + "planar_2link.urdf");
    create.mutable_robot()->set_srdf_path(dir + "planar_2link.srdf");
    v1::CollisionObject* barrier = create.add_objects();
    barrier->set_id("barrier");
    *barrier->mutable_pose() = WirePose(core::Vec3(0.5, 0.0, 0.1));
    barrier->add_parts()->mutable_shape()->mutable_box()->mutable_size()->set_x(0.1);
    barrier->mutable_parts(0)->mutable_shape()->mutable_box()->mutable_size()->set_y(0.1);
    barrier->mutable_parts(0)->mutable_shape()->mutable_box()->mutable_size()->set_z(0.1);
    v1::CreateSceneResponse created;
    const grpc::Status status = stub_->CreateScene(Context().get(), create, &created);
    ASSERT_TRUE(status.ok()) << status.error_message();
    scene_ = created.scene().scene_id();
    // The premise, checked: shoulder = 0 collides (upper link x barrier) whatever the elbow; the ends are free.
    for (const double elbow : {-2.5, -1.0, 0.0, 1.0, 2.5}) {
      v1::CheckStateResponse r = State({0.0, elbow});
      ASSERT_FALSE(r.free()) << "elbow " << elbow;
      ASSERT_EQ(r.contact().robot(), "upper");
      ASSERT_EQ(r.contact().other(), "barrier");
    }
    ASSERT_TRUE(State(start_).free());
    ASSERT_TRUE(State(goal_).free());
  }

  v1::CheckStateResponse State(const std::vector<double>& q) {
    v1::CheckStateRequest request;
    request.set_scene_id(scene_);
    *request.mutable_state() = Positions(q);
    v1::CheckStateResponse response;
    EXPECT_TRUE(stub_->CheckState(Context().get(), request, &response).ok());
    return response;
  }

  std::string scene_;
  const std::vector<double> start_ = {-1.5, 0.3};
  const std::vector<double> goal_ = {1.5, -0.3};
};

TEST_F(BlockedArmTest, AShortTimeLimitOnAnUnsolvableProblemIsTimeout) {
  for (const v1::Planner planner : {v1::PLANNER_RRT_CONNECT, v1::PLANNER_RRT, v1::PLANNER_PRM, v1::PLANNER_LAZY_PRM}) {
    v1::PlanResponse response;
    const grpc::Status status = Plan(MakePlan(scene_, start_, goal_, planner, 1, 0.2), &response);
    ASSERT_TRUE(status.ok()) << v1::Planner_Name(planner) << ": " << status.error_message();
    EXPECT_EQ(response.outcome(), v1::PLAN_OUTCOME_TIMEOUT) << v1::Planner_Name(planner);
    EXPECT_EQ(Rows(response.path()).size(), 0u);
    EXPECT_NE(response.message().find("time limit"), std::string::npos) << response.message();
    EXPECT_GT(response.stats().iterations(), 0);
  }
}

TEST_F(BlockedArmTest, MaxIterationsIsIterationLimit) {
  v1::PlanRequest request = MakePlan(scene_, start_, goal_, v1::PLANNER_RRT_CONNECT, 1, 30.0);
  request.set_max_iterations(200);
  v1::PlanResponse response;
  ASSERT_TRUE(Plan(request, &response).ok());
  EXPECT_EQ(response.outcome(), v1::PLAN_OUTCOME_ITERATION_LIMIT) << response.message();
  EXPECT_NE(response.message().find("max_iterations"), std::string::npos) << response.message();
}

// The SRDF state "home" (shoulder = 0) as start: INVALID_START naming the barrier; "bent" is free.
TEST_F(BlockedArmTest, NamedStatesAreEnds) {
  v1::PlanRequest request = MakePlan(scene_, start_, goal_);
  request.mutable_start()->Clear();
  request.mutable_start()->set_named_state("home");
  v1::PlanResponse response;
  ASSERT_TRUE(Plan(request, &response).ok());
  EXPECT_EQ(response.outcome(), v1::PLAN_OUTCOME_INVALID_START);
  EXPECT_EQ(response.message(), "start collides: upper x barrier (world)");
  // "bent" (shoulder 0.5, elbow -1.25) lies on the goal's side of the barrier.
  request.mutable_start()->set_named_state("bent");
  ASSERT_TRUE(Plan(request, &response).ok());
  ASSERT_EQ(response.outcome(), v1::PLAN_OUTCOME_SOLVED) << response.message();
  const auto rows = Rows(response.path());
  EXPECT_EQ(rows.front(), (std::vector<double>{0.5, -1.25}));
  EXPECT_EQ(rows.back(), goal_);
  for (const auto& q : rows) EXPECT_GT(q[0], 0.0) << "the path crossed the barrier";
}

// A plan of SRDF group "wrist" (the elbow alone): every waypoint keeps the shoulder at the start's value
// and the path is certified free; a goal that moves the shoulder, an unknown group and a group that moves
// no joint of the scene are refused naming them.
TEST_F(BlockedArmTest, AGroupPlanMovesOnlyTheGroupsJoints) {
  const std::vector<double> start = {-1.5, 0.3}, goal = {-1.5, -2.0};
  v1::PlanRequest request = MakePlan(scene_, start, goal, v1::PLANNER_RRT_CONNECT, 1, 5.0);
  request.set_group("wrist");
  v1::PlanResponse response;
  ASSERT_TRUE(Plan(request, &response).ok());
  ASSERT_EQ(response.outcome(), v1::PLAN_OUTCOME_SOLVED) << response.message();
  const auto rows = Rows(response.path());
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows.front(), start);
  EXPECT_EQ(rows.back(), goal);
  for (const auto& q : rows) EXPECT_EQ(q[0], start[0]) << "a joint outside the group moved";
  v1::CheckPathRequest check;
  check.set_scene_id(scene_);
  *check.mutable_waypoints() = response.path();
  v1::CheckPathResponse checked;
  ASSERT_TRUE(stub_->CheckPath(Context().get(), check, &checked).ok());
  EXPECT_TRUE(checked.result().free());

  for (const auto& [group, to, field] : std::vector<std::tuple<std::string, std::vector<double>, std::string>>{
           {"wrist", {-1.0, -2.0}, "joint 'shoulder' is not in group 'wrist'"},
           {"no_such_group", goal, "no_such_group"}}) {
    request = MakePlan(scene_, start, to, v1::PLANNER_RRT_CONNECT, 1, 5.0);
    request.set_group(group);
    const grpc::Status status = Plan(request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << group;
    EXPECT_NE(status.error_message().find(field), std::string::npos) << status.error_message();
  }
}

// Ends as MoveIt reads them: entries for joints the robot lacks are ignored, a start within 0.05 and a
// goal within 1e-4 of a limit are clamped to it (the path runs from and to the clamped values), one
// warning each in the response; further out is refused naming the end, the joint and its limits.
TEST_F(BlockedArmTest, EndsAreReadAsMoveItReadsThem) {
  // planar_2link: shoulder in [-3, 3], elbow in [-2.5, 2.5]; goal_ lies on the far side of the barrier.
  v1::PlanRequest request = MakePlan(scene_, {0.5, -1.25}, goal_, v1::PLANNER_RRT_CONNECT, 1, 5.0);
  request.mutable_start()->Clear();
  for (const auto& [name, value] : std::vector<std::pair<std::string, double>>{
           {"base_wheel", 4.0}, {"elbow", -2.53}, {"shoulder", 0.5}}) {
    request.mutable_start()->add_joint_names(name);
    request.mutable_start()->add_positions(value);
  }
  v1::PlanResponse response;
  ASSERT_TRUE(Plan(request, &response).ok());
  ASSERT_EQ(response.outcome(), v1::PLAN_OUTCOME_SOLVED) << response.message();
  const auto rows = Rows(response.path());
  EXPECT_EQ(rows.front(), (std::vector<double>{0.5, -2.5}));
  EXPECT_EQ(rows.back(), goal_);
  ASSERT_EQ(response.warnings_size(), 2);
  EXPECT_NE(response.warnings(0).find("start: ignored 1 value(s) for joint(s) robot 'planar_2link' does not have: "
                                      "'base_wheel'"),
            std::string::npos)
      << response.warnings(0);
  EXPECT_NE(response.warnings(1).find("start: clamped joint 'elbow' from -2.53 to -2.5"), std::string::npos)
      << response.warnings(1);

  std::vector<double> goal = goal_;
  goal[0] = 3.0 + 5e-5;
  request = MakePlan(scene_, {0.5, -1.25}, goal, v1::PLANNER_RRT_CONNECT, 1, 5.0);
  ASSERT_TRUE(Plan(request, &response).ok());
  ASSERT_EQ(response.outcome(), v1::PLAN_OUTCOME_SOLVED) << response.message();
  EXPECT_EQ(Rows(response.path()).back(), (std::vector<double>{3.0, goal_[1]}));
  ASSERT_EQ(response.warnings_size(), 1);
  EXPECT_NE(response.warnings(0).find("goal: clamped joint 'shoulder'"), std::string::npos) << response.warnings(0);

  // In the limits: no warnings.
  request = MakePlan(scene_, {0.5, -1.25}, goal_, v1::PLANNER_RRT_CONNECT, 1, 5.0);
  ASSERT_TRUE(Plan(request, &response).ok());
  EXPECT_EQ(response.warnings_size(), 0);
  // Beyond the tolerances.
  for (const auto& [start, to, needle] : std::vector<std::tuple<std::vector<double>, std::vector<double>, std::string>>{
           {{0.5, -2.56}, goal_, "start: q[1] = -2.56 for joint 'elbow' is outside its limits [-2.5, 2.5]"},
           {{0.5, -1.25}, {3.0002, goal_[1]}, "goal: q[0] = 3.0002 for joint 'shoulder' is outside its limits [-3, 3]"}}) {
    request = MakePlan(scene_, start, to, v1::PLANNER_RRT_CONNECT, 1, 5.0);
    const grpc::Status status = Plan(request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find(needle), std::string::npos) << status.error_message();
  }
}

// The call's deadline, far shorter than the time limit, stops the planner: the server records the call
// as DEADLINE_EXCEEDED (or CANCELLED), never OK, long before the 30 s time limit would.
TEST_F(BlockedArmTest, AnExpiredDeadlineEndsThePlan) {
  v1::PlanResponse response;
  const grpc::Status status = Plan(MakePlan(scene_, start_, goal_, v1::PLANNER_RRT_CONNECT, 1, 30.0), &response, 300ms);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  const Metrics& m = server_->metrics();
  const auto stopped = [&] {
    return m.HandledCount(Rpc::kPlan, grpc::StatusCode::DEADLINE_EXCEEDED) +
           m.HandledCount(Rpc::kPlan, grpc::StatusCode::CANCELLED);
  };
  EXPECT_TRUE(Eventually([&] { return stopped() == 1; }, 15s)) << "the planner ran on past the call's deadline";
  EXPECT_EQ(m.HandledCount(Rpc::kPlan, grpc::StatusCode::OK), 0u);
}

TEST_F(BlockedArmTest, CancellingThePlanStopsIt) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 120s);
  v1::PlanResponse response;
  auto call = std::async(std::launch::async, [&] {
    return stub_->Plan(&context, MakePlan(scene_, start_, goal_, v1::PLANNER_PRM, 1, 30.0), &response);
  });
  ASSERT_TRUE(Eventually([&] { return server_->metrics().StartedCount(Rpc::kPlan) == 1; }));
  context.TryCancel();
  EXPECT_EQ(call.get().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(Eventually([&] { return server_->metrics().HandledCount(Rpc::kPlan, grpc::StatusCode::CANCELLED) == 1; },
                         15s))
      << "the planner ran on after the client cancelled";
  EXPECT_EQ(server_->metrics().HandledCount(Rpc::kPlan, grpc::StatusCode::OK), 0u);
}

// Bad requests fail with the right code and a message naming the field; nothing changes on the server.
TEST_F(PlanTest, BadRequestsNameTheField) {
  std::mt19937_64 rng(75);
  const auto probe = RandomStates(rng, core_->robot(), 200);
  const auto snapshot = [&] {
    v1::ListScenesResponse list;
    EXPECT_TRUE(stub_->ListScenes(Context().get(), {}, &list).ok());
    v1::CheckStatesRequest request;
    request.set_scene_id("default");
    *request.mutable_states() = Packed(probe);
    v1::CheckStatesResponse answers;
    EXPECT_TRUE(stub_->CheckStates(Context().get(), request, &answers).ok());
    answers.clear_stats();  // answers only: lazily filled caches make the work depend on what ran before
    return list.SerializeAsString() + answers.SerializeAsString();
  };
  const std::string before = snapshot();
  const auto problems = CollidingMotions(*core_, rng, 1);
  ASSERT_EQ(problems.size(), 1u);
  const v1::PlanRequest good = MakePlan("default", problems[0].start, problems[0].goal);
  const auto& names = core_->robot().active_joint_names();

  struct Case {
    std::string what;
    std::function<void(v1::PlanRequest*)> edit;
    grpc::StatusCode code;
    std::vector<std::string> named;  // substrings the message must contain
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Case> cases = {
      {"unknown scene", [](v1::PlanRequest* r) { r->set_scene_id("0123456789abcdef"); }, grpc::StatusCode::NOT_FOUND,
       {"0123456789abcdef"}},
      {"empty scene id", [](v1::PlanRequest* r) { r->set_scene_id(""); }, grpc::StatusCode::INVALID_ARGUMENT,
       {"scene_id"}},
      {"NaN in the start", [&](v1::PlanRequest* r) { r->mutable_start()->set_positions(2, nan); },
       grpc::StatusCode::INVALID_ARGUMENT, {"start", names[2], "not finite"}},
      {"wrong DOF goal", [](v1::PlanRequest* r) { r->mutable_goal()->mutable_positions()->RemoveLast(); },
       grpc::StatusCode::INVALID_ARGUMENT, {"goal.positions: expected 6 values"}},
      {"a joint the robot lacks in place of one it has",
       [&](v1::PlanRequest* r) {
         for (const auto& n : names) r->mutable_goal()->add_joint_names(n);
         r->mutable_goal()->set_joint_names(1, "bogus_joint");
       },
       grpc::StatusCode::INVALID_ARGUMENT, {"goal.joint_names", "joint '" + names[1] + "' is missing"}},
      {"unknown named state",
       [](v1::PlanRequest* r) {
         r->mutable_start()->Clear();
         r->mutable_start()->set_named_state("no_such_state");
       },
       grpc::StatusCode::INVALID_ARGUMENT, {"start.named_state", "no_such_state"}},
      {"start outside the limits",
       [&](v1::PlanRequest* r) { r->mutable_start()->set_positions(0, core_->robot().upper_limits()[0] + 0.5); },
       grpc::StatusCode::INVALID_ARGUMENT, {"start", names[0]}},
      {"negative time limit", [](v1::PlanRequest* r) { r->set_time_limit(-1.0); }, grpc::StatusCode::INVALID_ARGUMENT,
       {"time_limit"}},
      {"NaN time limit", [&](v1::PlanRequest* r) { r->set_time_limit(nan); }, grpc::StatusCode::INVALID_ARGUMENT,
       {"time_limit"}},
      {"time limit over the cap", [](v1::PlanRequest* r) { r->set_time_limit(61.0); },
       grpc::StatusCode::INVALID_ARGUMENT, {"time_limit", "--max-plan-seconds"}},
      {"negative range", [](v1::PlanRequest* r) { r->set_range(-0.1); }, grpc::StatusCode::INVALID_ARGUMENT,
       {"range"}},
      {"infinite range", [](v1::PlanRequest* r) { r->set_range(std::numeric_limits<double>::infinity()); },
       grpc::StatusCode::INVALID_ARGUMENT, {"range"}},
      {"negative resolution", [](v1::PlanRequest* r) { r->set_resolution(-0.01); },
       grpc::StatusCode::INVALID_ARGUMENT, {"resolution"}},
      {"unknown mode", [](v1::PlanRequest* r) { r->set_mode(static_cast<v1::MotionMode>(9)); },
       grpc::StatusCode::INVALID_ARGUMENT, {"mode"}},
      {"unknown planner", [](v1::PlanRequest* r) { r->set_planner(static_cast<v1::Planner>(42)); },
       grpc::StatusCode::INVALID_ARGUMENT, {"planner", "42"}},
      {"negative max_iterations", [](v1::PlanRequest* r) { r->set_max_iterations(-5); },
       grpc::StatusCode::INVALID_ARGUMENT, {"max_iterations"}},
  };
  for (const Case& c : cases) {
    v1::PlanRequest request = good;
    c.edit(&request);
    v1::PlanResponse response;
    const grpc::Status status = Plan(request, &response);
    EXPECT_EQ(status.error_code(), c.code) << c.what << ": " << status.error_message();
    for (const std::string& s : c.named) {
      EXPECT_NE(status.error_message().find(s), std::string::npos)
          << c.what << ": message '" << status.error_message() << "' does not name '" << s << "'";
    }
  }
  EXPECT_TRUE(snapshot() == before) << "a failed Plan changed the loaded scenes or their answers";
  EXPECT_EQ(server_->metrics().HandledCount(Rpc::kPlan, grpc::StatusCode::OK), 0u);
  // The good request still plans.
  v1::PlanResponse response;
  ASSERT_TRUE(Plan(good, &response).ok());
  EXPECT_EQ(response.outcome(), v1::PLAN_OUTCOME_SOLVED) << response.message();
}

}  // namespace
}  // namespace proximity::server::testing
