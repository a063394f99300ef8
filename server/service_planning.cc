// The service's planning and kinematics handlers: Plan and GetIK.
#include "server/service.h"
#include "server/queries.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "proximity/planners/pose_goal.h"
#include "proximity/planners/scene_validity.h"
#include "proximity/planners/scene_planner.h"
#include "proximity/planners/timing.h"
#include "server/batch.h"
#include "server/contacts.h"
#include "server/errors.h"
#include "server/scene_geometry.h"
#include "server/service_internal.h"


namespace proximity::server {
// ------------------------------------------------------------------------------------------------
// Planning

namespace {

using planners::ScenePlanner;

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// Times a solved plan's path (`rows`: the path as sent, continuous joints unwrapped, so the times are
// those of the segments CheckPath checks) into the response, with blends when asked.
grpc::Status TimePlan(CallScope& call, const core::Scene& scene, const ScenePlanner& planner,
                      const TimingSettings& timing, const std::vector<double>& rows, int64_t max_samples,
                      v1::PlanResponse* response) {
  const auto dof = static_cast<size_t>(scene.robot().num_positions());
  std::vector<planners::Configuration> sent(rows.size() / dof);
  for (size_t i = 0; i < sent.size(); ++i) sent[i].assign(rows.begin() + i * dof, rows.begin() + (i + 1) * dof);
  planners::TimingOptions options;
  options.resample_dt = timing.resample_dt;
  options.max_samples = max_samples;
  options.path_tolerance = timing.path_tolerance;
  options.blend_checker = &planner.blends();
  options.stop = call.interrupt();
  auto timed = planners::TimeOptimalTrajectory(planner.space(), sent, timing.limits,
                                               scene.robot().active_joint_names(), options);
  // A blend check the deadline or a cancel stopped refused its arc: no answer then, not a slower one.
  if (call.cancel().Stopped()) return call.cancel().status("timing the path");
  if (!timed.ok()) return ToGrpcStatus(WithField("timing", timed.error()));
  ToWire(scene.robot(), timed.value(), response->mutable_trajectory());
  call.record().set_field("duration_s", timed.value().duration());
  if (timing.path_tolerance > 0.0) {
    call.record().set_field("blended_corners", static_cast<int64_t>(timed.value().blended_corners));
  }
  return grpc::Status::OK;
}

}  // namespace

grpc::Status ProximityServiceImpl::Plan(grpc::ServerContext* context, const v1::PlanRequest* request,
                                        v1::PlanResponse* response) {
  return opening_.ServeScene(context, Rpc::kPlan, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    std::vector<double> start, goal;
    std::vector<std::string> warnings;
    if (core::Status s = ToPlanEnds(scene.robot(), *request, &start, &goal, &warnings); !s.ok()) {
      return ToGrpcStatus(s);
    }
    if (!warnings.empty()) call.record().set_field("warnings", warnings);
    for (std::string& w : warnings) response->add_warnings(std::move(w));
    auto settings = ToPlanSettings(*request, limits_.max_plan_seconds, kPlanSecondsOption);
    if (!settings.ok()) return ToGrpcStatus(settings.error());
    const PlanSettings& plan = settings.value();
    ScenePlanner planner(call.entry().scene, plan.motion, call.interrupt());
    const bool to_pose = request->has_goal_pose();
    if (!request->group().empty()) {
      core::Result<planners::JointSpace> space =
          planners::GroupJointSpace(scene.robot(), request->group(), start, to_pose ? std::span<const double>(start) : goal);
      if (!space.ok()) return ToGrpcStatus(space.error());
      planner.RestrictTo(std::move(space).value());
    }
    if (core::Status s = planner.CheckResolution(); !s.ok()) return ToGrpcStatus(s);
    std::optional<TimingSettings> timing;
    if (request->has_timing()) {
      auto resolved = ToTimingSettings(scene.robot(), planner.space(), request->timing());
      if (!resolved.ok()) return ToGrpcStatus(resolved.error());
      timing = std::move(resolved).value();
    }
    std::optional<planners::PoseGoalSampler> sampler;
    if (to_pose) {
      auto goal_pose = ToPoseGoal(scene.robot(), scene.X_WB(), request->goal_pose(), "goal_pose");
      if (!goal_pose.ok()) return ToGrpcStatus(goal_pose.error());
      core::IkOptions ik;
      ik.seed = plan.options.seed;
      auto made = planners::PoseGoalSampler::Create(scene.robot_ptr(), goal_pose.value(), planner.space(), start, ik);
      if (!made.ok()) return ToGrpcStatus(WithField("goal_pose", made.error()));
      sampler.emplace(std::move(made).value());
    }
    CallCancel& cancel = call.cancel();
    planners::Termination termination;
    termination.time_limit_s = plan.time_limit_s;
    termination.max_iterations = plan.max_iterations;
    termination.stop = [&cancel] { return cancel.Stopped(); };
    auto planned = sampler ? planner.Plan(start, *sampler, plan.options, termination)
                           : planner.Plan(start, goal, plan.options, termination);

    // The checks the planner made count as CLEAR and LINK queries, whatever the outcome.
    Work work;
    work.states = planner.posed_states();
    call.record().Count(QueryKind::kClear, planner.state_checks(), work);
    call.metrics().AddQueries(QueryKind::kLink, planner.motion_checks());
    call.record().set_states(work.states);
    call.record().set_field("planner", planners::PlannerTypeName(plan.options.type));
    if (!planned.ok()) return ToGrpcStatus(planned.error());
    const planners::PlanResult& r = planned.value();
    call.record().set_field("outcome", planners::PlanOutcomeName(r.outcome));
    call.record().set_field("iterations", r.stats.iterations);
    if (r.outcome == planners::PlanOutcome::kCancelled ||
        (r.outcome != planners::PlanOutcome::kSolved && cancel.stopped())) {
      return cancel.status(std::to_string(r.stats.iterations) + " planner iterations");
    }
    metrics_->AddQueries(QueryKind::kPlan, 1);
    response->set_outcome(ToWire(r.outcome));
    response->set_planner(ToWire(plan.options.type));
    ToWire(r.stats, response->mutable_stats());
    ToWire(planner.space(), scene.robot(), r.path, response->mutable_path());
    if (r.outcome == planners::PlanOutcome::kSolved) {
      // The rows as sent (continuous joints unwrapped), so the times are those of the segments CheckPath checks.
      const std::string& packed = response->path().positions_f64le();
      std::vector<double> rows(packed.size() / sizeof(double));
      std::memcpy(rows.data(), packed.data(), rows.size() * sizeof(double));
      auto times = planners::TimeFromStart(scene.robot(), rows);
      if (!times.ok()) return ToGrpcStatus(times.error());
      for (double t : times.value()) response->add_time_from_start(t);
      if (timing) {
        if (grpc::Status s = TimePlan(call, scene, planner, *timing, rows, limits_.max_batch_states, response);
            !s.ok()) {
          return s;
        }
      }
    }
    if (to_pose) call.record().set_field("goal_draws", sampler->draws());
    if (std::string message = planners::PlanFailureMessage(scene, r, start, goal, plan.time_limit_s,
                                                          plan.max_iterations, sampler ? &*sampler : nullptr);
        !message.empty()) {
      response->set_message(std::move(message));
    }
    if (r.outcome == planners::PlanOutcome::kSolved) {
      call.record().set_field("waypoints", static_cast<int64_t>(r.path.size()));
      call.record().set_field("length", r.stats.length);
    }
    // A timed trajectory sampled finely can outgrow a message: refused by name instead of failing in transport.
    return call.FitResponse(response, "ask for a larger timing.resample_dt");
  });
}


grpc::Status ProximityServiceImpl::GetIK(grpc::ServerContext* context, const v1::GetIKRequest* request,
                                         v1::GetIKResponse* response) {
  return opening_.ServeScene(context, Rpc::kGetIK, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    const core::RobotModel& robot = scene.robot();
    auto goal = ToPoseGoal(robot, scene.X_WB(), request->goal(), "goal");
    if (!goal.ok()) return ToGrpcStatus(goal.error());
    std::vector<double> seed = robot.DefaultConfiguration();
    std::vector<std::string> warnings;
    if (request->has_seed()) {
      if (core::Status s = ResolveState(robot, request->seed(), "seed", &seed, &warnings); !s.ok()) return ToGrpcStatus(s);
      if (core::Status s = ClampState(robot, &seed, "seed", core::kStartBoundsTolerance, &warnings); !s.ok()) {
        return ToGrpcStatus(s);
      }
    }
    core::IkOptions options;
    if (!request->group().empty()) {
      auto members = robot.GroupActiveIndices(request->group());
      if (!members.ok()) return ToGrpcStatus(WithField("group", members.error()));
      options.variables = members.value();
    }
    const double timeout = request->timeout();
    if (!std::isfinite(timeout) || timeout < 0.0) {
      return ToGrpcStatus(core::InvalidArgument("timeout must be finite and >= 0 (0 for 1 s)"));
    }
    if (timeout > limits_.max_plan_seconds) {
      return ToGrpcStatus(core::InvalidArgument("timeout " + core::FormatNumber(timeout) + " s exceeds " +
                                                std::string(kPlanSecondsOption) + " " +
                                                core::FormatNumber(limits_.max_plan_seconds) + " s"));
    }
    const double budget = timeout > 0.0 ? timeout : std::min(1.0, limits_.max_plan_seconds);
    CallCancel& cancel = call.cancel();
    planners::Termination termination;
    termination.time_limit_s = budget;
    termination.stop = [&cancel] { return cancel.Stopped(); };
    options.max_attempts = 8;
    options.seed = request->random_seed();
    auto found = planners::SolveFreeIk(scene, goal.value(), seed, options, request->avoid_collisions(), termination);
    if (!found.ok()) return ToGrpcStatus(WithField("goal", found.error()));
    const planners::FreeIk& r = found.value();
    const core::IkSolution& answer = r.solution;
    if (cancel.stopped()) return cancel.status(std::to_string(answer.attempts) + " descents");
    Work work;
    work.states = r.state_checks;
    call.record().Count(QueryKind::kClear, r.state_checks, work);
    call.record().set_field("found", answer.found);
    response->set_attempts(answer.attempts);
    response->set_rejected(r.rejected);
    if (answer.found) {
      response->set_found(true);
      for (int32_t i = 0; i < robot.num_positions(); ++i) {
        response->mutable_solution()->add_joint_names(robot.active_joint_names()[static_cast<size_t>(i)]);
        response->mutable_solution()->add_positions(answer.q[static_cast<size_t>(i)]);
      }
      response->set_position_error(answer.position_error);
      response->set_orientation_error(answer.orientation_error);
    } else {
      response->set_message("no " + std::string(request->avoid_collisions() ? "collision-free " : "") +
                            "solution within " + Seconds(budget) + " (" + std::to_string(answer.attempts) +
                            " descents" +
                            (r.rejected > 0 ? ", " + std::to_string(r.rejected) + " solutions in collision" : "") + ")");
    }
    for (std::string& w : warnings) response->add_warnings(std::move(w));
    return grpc::Status::OK;
  });
}

}  // namespace proximity::server
