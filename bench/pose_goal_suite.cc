// The pose suite: RRT-Connect to a pose goal beside RRT-Connect to the joint goal it came from, on the
// same problems, scenes and seeds. Each problem's goal configuration gives the tip's pose (the --tip
// link, else the --group's chain tip, else the link with the most moving joints above it); the pose
// plan may end at any collision-free configuration reaching it (PoseGoalSampler: IK solutions drawn as
// the search goes on). Every returned path is re-checked densely with FCL (1e-3 rad steps) and the pose
// plan's last waypoint against the pose by forward kinematics. One JSON line per family and one for all
// problems: median and mean microseconds per plan (planning and simplification) on each side, on the
// problems both solved, and the ratio pose / joint; and the time-optimal timing of each joint-goal path
// (planners::TimeOptimalTrajectory at the URDF's velocity limits, 1 where it gives none, and 2 rad/s^2 or
// m/s^2 for every joint, sampled every 10 ms): median microseconds per path and samples; and the same
// path with corner blends (path_tolerance 0.1 rad, MoveIt's default, each blend certified on the scene by
// planners::SceneBlendChecker): median microseconds per path, the median duration over the exact
// path's, the fraction of corners blended, and the blended trajectory re-checked densely with FCL.
#include <cstdio>
#include <iostream>
#include <optional>

#include "bench_util.h"
#include "mbm_data.h"
#include "peers/fcl_robot.h"
#include "proximity/core/robot/inverse_kinematics.h"
#include "proximity/planners/pose_goal.h"
#include "proximity/planners/scene_validity.h"
#include "proximity/planners/timing.h"
#include "robot_input.h"

namespace proximity::bench {
namespace {

constexpr char kSuite[] = "pose";

struct Side {
  bool solved = false;
  bool valid = true;    // the dense re-check (and, for the pose side, the end at the pose)
  double us = 0.0;
};

struct Tally {
  std::vector<double> joint_us, pose_us;  // problems both solved (microseconds)
  std::vector<double> timing_us, timing_samples;  // joint-goal paths timed
  std::vector<double> blend_us, blend_ratio;      // ... with corner blends: time, duration / exact
  int64_t corners = 0, blended = 0;
  int problems = 0, joint_solved = 0, pose_solved = 0, invalid = 0;
  int64_t draws = 0, solutions = 0;
  void Add(const Side& joint, const Side& pose) {
    ++problems;
    joint_solved += joint.solved;
    pose_solved += pose.solved;
    invalid += !joint.valid + !pose.valid;
    if (joint.solved && pose.solved) {
      joint_us.push_back(joint.us);
      pose_us.push_back(pose.us);
    }
  }
  void Print(const std::string& name, const std::string& tip) const {
    Work work;
    work.queries = problems;
    // CaseLine's "ours" is the pose side and its "peer" the joint side: the ratio is joint / pose.
    JsonLine line = CaseLine(kSuite, name, pose_us, work, "joint_goal", joint_us);
    line.Add("tip", tip)
        .Add("problems", problems)
        .Add("joint_solved", joint_solved)
        .Add("pose_solved", pose_solved)
        .Add("both_solved", static_cast<int64_t>(pose_us.size()))
        .Add("pose_over_joint_median", Median(pose_us) / Median(joint_us))
        .Add("pose_over_joint_mean", Mean(pose_us) / Mean(joint_us))
        .Add("goal_draws_per_plan", static_cast<double>(draws) / std::max(problems, 1))
        .Add("ik_solutions_per_plan", static_cast<double>(solutions) / std::max(problems, 1))
        .Add("invalid_paths", invalid)
        .Add("timing_us_median", Median(timing_us))
        .Add("timing_samples_median", Median(timing_samples))
        .Add("blend_us_median", Median(blend_us))
        .Add("blend_duration_ratio_median", Median(blend_ratio))
        .Add("blended_corner_fraction", static_cast<double>(blended) / static_cast<double>(std::max<int64_t>(corners, 1)));
    line.Print();
  }
};

}  // namespace

int RunPoseGoals(const SuiteOptions& options) {
  MbmData data;
  if (int code = LoadMbmData(kSuite, options, &data); code != 0) return code;
  const core::RobotModel& robot = *data.robot;
  auto tip = TipLink(robot, options.tip, options.robot.group);
  if (!tip.ok()) {
    std::cerr << "pose: --tip: " << tip.error().message << "\n";
    return kBadInput;
  }
  const std::string tip_name = robot.link(tip.value()).name;
  const double time_limit = options.time_limit_s > 0.0 ? options.time_limit_s : (options.quick ? 2.0 : 10.0);
  std::cerr << "pose: robot '" << robot.name() << "', " << data.source << ": " << data.problems.size()
            << " problems; tip '" << tip_name << "'; time limit " << time_limit << " s per plan\n";
  peers::FclRobot fcl_robot(robot);
  planners::TimingLimits limits{planners::VelocityLimits(robot), std::vector<double>(robot.active_joints().size(), 2.0)};
  for (double& v : limits.velocity) v = v > 0.0 ? v : 1.0;
  Tally all, family;
  std::string family_name;
  for (size_t k = 0; k < data.problems.size(); ++k) {
    const mbm::MbmProblem& p = data.problems[k];
    if (p.family != family_name) {
      if (family.problems > 0) family.Print("pose_goal_" + family_name, tip_name);
      family = Tally{};
      family_name = p.family;
    }
    auto scene = BuildProblemScene(p, data.maps);
    auto ends = ProblemEnds(p, robot);
    if (!scene.ok() || !ends.ok()) {
      std::cerr << "pose: " << p.name << ": " << (!scene.ok() ? scene.error() : ends.error()).message << "\n";
      return 1;
    }
    if (k == 0) core::AwaitSelfClearanceFill();
    const peers::FclWorld world(*scene.value());
    const auto& [start, goal_q] = ends.value();
    core::PoseGoal goal;
    goal.link = tip.value();
    goal.X_WT = robot.ForwardKinematics(goal_q).value()[static_cast<size_t>(goal.link)];
    const planners::ScenePlanning planning(scene.value());
    planners::PlannerOptions opts;
    opts.seed = k;
    planners::Termination termination;
    termination.time_limit_s = time_limit;
    Side joint, pose;
    auto check = [&](const planners::PlanResult& r, Side* side) {
      side->solved = r.solved();
      if (!side->solved) return;
      const peers::DensePathResult dense = peers::DensePathCheck(fcl_robot, world, *scene.value(), r.path);
      side->valid = dense.valid;
      if (!dense.valid) std::cerr << "pose: INVALID PATH " << p.name << " segment " << dense.segment << "\n";
    };
    double t0 = Now();
    auto joint_plan = planners::Plan(planning.context(), start, goal_q, opts, termination);
    joint.us = (Now() - t0) * 1e6;
    auto sampler = planners::PoseGoalSampler::Create(data.robot, goal, planning.context().space, start);
    if (!joint_plan.ok() || !sampler.ok()) {
      std::cerr << "pose: " << p.name << ": "
                << (!joint_plan.ok() ? joint_plan.error() : sampler.error()).message << "\n";
      return 1;
    }
    t0 = Now();
    auto pose_plan = planners::Plan(planning.context(), start, sampler.value(), opts, termination);
    pose.us = (Now() - t0) * 1e6;
    if (!pose_plan.ok()) {
      std::cerr << "pose: " << p.name << ": " << pose_plan.error().message << "\n";
      return 1;
    }
    check(joint_plan.value(), &joint);
    check(pose_plan.value(), &pose);
    double timing_us = -1.0, samples = 0.0;
    if (joint.solved) {
      const double t_timing = Now();
      auto timed = planners::TimeOptimalTrajectory(planning.context().space, joint_plan.value().path, limits,
                                                   robot.active_joint_names());
      timing_us = (Now() - t_timing) * 1e6;
      if (!timed.ok()) {
        std::cerr << "pose: " << p.name << ": timing: " << timed.error().message << "\n";
        return 1;
      }
      samples = static_cast<double>(timed.value().size());
      const planners::SceneBlendChecker blends(scene.value());
      planners::TimingOptions blend_options;
      blend_options.path_tolerance = 0.1;
      blend_options.blend_checker = &blends;
      const double t_blend = Now();
      auto blended = planners::TimeOptimalTrajectory(planning.context().space, joint_plan.value().path, limits,
                                                     robot.active_joint_names(), blend_options);
      const double blend_us = (Now() - t_blend) * 1e6;
      if (!blended.ok()) {
        std::cerr << "pose: " << p.name << ": blended timing: " << blended.error().message << "\n";
        return 1;
      }
      const planners::TimedTrajectory& b = blended.value();
      std::vector<planners::Configuration> rows(b.size());
      for (size_t i = 0; i < rows.size(); ++i) {
        rows[i].assign(b.positions.begin() + static_cast<std::ptrdiff_t>(i * static_cast<size_t>(b.dof)),
                       b.positions.begin() + static_cast<std::ptrdiff_t>((i + 1) * static_cast<size_t>(b.dof)));
      }
      const peers::DensePathResult dense = peers::DensePathCheck(fcl_robot, world, *scene.value(), rows);
      if (!dense.valid) {
        joint.valid = false;
        std::cerr << "pose: INVALID BLENDED TRAJECTORY " << p.name << " sample " << dense.segment << "\n";
      }
      for (Tally* t : {&all, &family}) {
        t->blend_us.push_back(blend_us);
        t->blend_ratio.push_back(b.duration() / timed.value().duration());
        t->corners += static_cast<int64_t>(joint_plan.value().path.size()) - 2;
        t->blended += b.blended_corners;
      }
    }
    if (pose.solved) {
      const auto X = robot.ForwardKinematics(pose_plan.value().path.back()).value();
      if (!core::PoseGoalMet(goal, X[static_cast<size_t>(goal.link)])) {
        pose.valid = false;
        std::cerr << "pose: " << p.name << ": the path's end misses the pose\n";
      }
    }
    for (Tally* t : {&all, &family}) {
      t->Add(joint, pose);
      if (timing_us >= 0.0) {
        t->timing_us.push_back(timing_us);
        t->timing_samples.push_back(samples);
      }
      t->draws += sampler.value().draws();
      t->solutions += sampler.value().solutions();
    }
  }
  if (family.problems > 0) family.Print("pose_goal_" + family_name, tip_name);
  all.Print("pose_goal_all", tip_name);
  return all.invalid == 0 ? 0 : 1;
}

}  // namespace proximity::bench
