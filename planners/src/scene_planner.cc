#include "proximity/planners/scene_planner.h"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace proximity::planners {
namespace {

core::MotionRequest WithStop(core::MotionRequest motion, core::Interrupt stop) {
  motion.stop = stop;
  return motion;
}

// Why `q` is not a valid end of a plan: its first contact, when CLEAR finds one.
std::string InvalidEnd(const core::Scene& scene, std::span<const double> q, const char* what) {
  core::SceneCache cache;
  const core::Result<core::StateResult> checked = scene.CheckState(q, &cache);
  if (!checked.ok() || checked.value().free) return std::string(what) + " is not a valid state";
  const core::StateResult& r = checked.value();
  return std::string(what) + " collides: " + r.contact.Name(scene) + " x " + r.contact.OtherName(scene) +
         (r.contact.self ? " (self)" : " (world)");
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

}  // namespace

ScenePlanner::ScenePlanner(const std::shared_ptr<const core::Scene>& scene, const core::MotionRequest& motion,
                           core::Interrupt stop)
    : lazy_(scene, ScenePlanning::kDefaultQuickResolution, ScenePlanning::kDefaultShortcutClearance, stop),
      discrete_(scene, WithStop(motion, stop)),
      blends_(scene, motion.mode == core::MotionRequest::Mode::kCertified ? WithStop(PlanningMotionRequest(), stop)
                                                                          : WithStop(motion, stop)),
      planning_(lazy_.context()),
      resolution_(motion.resolution),
      certified_(motion.mode == core::MotionRequest::Mode::kCertified) {
  if (!certified_) {
    planning_.motion = &discrete_;
    planning_.quick_motion = nullptr;
  }
}

core::Status ScenePlanner::CheckResolution() const {
  if (certified_) return {};
  const double steps = planning_.space.MaxExtent() / resolution_;
  if (steps <= core::kMaxMotionSteps) return {};
  return core::InvalidArgument("resolution " + core::FormatNumber(resolution_) + " would sample up to " +
                               core::FormatNumber(std::ceil(steps)) + " states on an edge; at most " +
                               core::FormatNumber(core::kMaxMotionSteps) + " are allowed per edge");
}

int64_t ScenePlanner::motion_checks() const {
  return lazy_.certified().checks() + lazy_.quick().checks() + discrete_.checks() + blends_.checks();
}

int64_t ScenePlanner::posed_states() const {
  return lazy_.state().checks() + lazy_.certified().states() + lazy_.quick().states() + discrete_.states();
}

core::Result<JointSpace> GroupJointSpace(const core::RobotModel& robot, const std::string& group,
                                         std::span<const double> start, std::span<const double> goal) {
  const core::Result<std::vector<int32_t>> members = robot.GroupActiveIndices(group);
  if (!members.ok()) return core::InvalidArgument("group: " + members.error().message);
  if (members.value().empty()) return core::InvalidArgument("group: '" + group + "' moves none of the scene's joints");
  const JointSpace full = JointSpace::ForRobot(robot);
  std::vector<double> lower = full.lower(), upper = full.upper();
  std::vector<bool> wraps(lower.size());
  std::vector<char> moves(lower.size(), 0);
  for (int32_t j : members.value()) moves[static_cast<size_t>(j)] = 1;
  for (size_t j = 0; j < lower.size(); ++j) {
    wraps[j] = full.wraps(static_cast<int32_t>(j)) && moves[j];
    if (moves[j]) continue;
    if (goal[j] != start[j]) {
      return core::InvalidArgument("goal: joint '" + robot.active_joint_names()[j] + "' is not in group '" + group +
                                   "' and differs from the start (" + core::FormatNumber(goal[j]) + " against " +
                                   core::FormatNumber(start[j]) + "): a group's plan holds it at the start's value");
    }
    lower[j] = upper[j] = start[j];
  }
  return JointSpace::Create(std::move(lower), std::move(upper), std::move(wraps));
}

std::string PlanFailureMessage(const core::Scene& scene, const PlanResult& r, std::span<const double> start,
                               std::span<const double> goal, double time_limit_s, int64_t max_iterations,
                               const PoseGoalSampler* sampler) {
  switch (r.outcome) {
    case PlanOutcome::kInvalidStart:
      return InvalidEnd(scene, start, "start");
    case PlanOutcome::kInvalidGoal:
      if (sampler != nullptr) {
        return "no collision-free configuration reaching goal_pose within the time limit of " +
               Seconds(time_limit_s) + " (" +
               (sampler->solutions() == 0
                    ? "no inverse-kinematics solution in " + std::to_string(sampler->draws()) +
                          " draws: the pose may be out of reach"
                    : std::to_string(sampler->solutions()) + " inverse-kinematics solutions in " +
                          std::to_string(sampler->draws()) + " draws, every one in collision") +
               ")";
      }
      return InvalidEnd(scene, goal, "goal");
    case PlanOutcome::kTimeout:
      return "no path within the time limit of " + Seconds(time_limit_s) + " (" +
             std::to_string(r.stats.iterations) + " iterations)";
    case PlanOutcome::kIterationLimit:
      return "no path within max_iterations = " + std::to_string(max_iterations);
    case PlanOutcome::kSolved:
    case PlanOutcome::kCancelled:
      break;
  }
  return {};
}

}  // namespace proximity::planners
