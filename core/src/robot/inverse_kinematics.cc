// Damped least squares with adaptive damping (Levenberg-Marquardt) on a link's pose error; joint limits
// by projection after every step; random restarts when a descent stalls.
#include "proximity/core/robot/inverse_kinematics.h"

#include <Eigen/Cholesky>
#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <string>

namespace proximity::core {
namespace {

constexpr double kPi = std::numbers::pi;
// Damping bounds (m^2, the units of J J^T's position block): a descent whose damping must exceed
// kMaxDamping to make any progress has stalled.
constexpr double kInitialDamping = 1e-4;
constexpr double kMinDamping = 1e-12;
constexpr double kMaxDamping = 1e6;
// Steps between progress checks, and the share of the squared error a descent must keep below.
constexpr int32_t kStallSteps = 10;
constexpr double kStallRatio = 0.5;

bool Finite(const Vec3& v) { return v.allFinite(); }

Vec3 RotationVector(const Mat3& R) {
  const Eigen::AngleAxisd aa(R);
  return aa.angle() * aa.axis();
}

Mat3 RotationFromVector(const Vec3& v) {
  const double angle = v.norm();
  if (angle == 0.0) return Mat3::Identity();
  return Eigen::AngleAxisd(angle, v / angle).toRotationMatrix();
}

// The goal's position error in the target frame: the point's offset d_T from the target's origin and
// whether it lies in the region (sizes scaled by `scale`), and the nearest point of the region so scaled.
bool InRegion(const PoseGoal& goal, const Vec3& d_T, double scale, Vec3* nearest_T) {
  const Vec3 s = goal.region_size * scale;
  Vec3 n = d_T;
  switch (goal.region) {
    case PositionRegion::kSphere: {
      const double r = d_T.norm();
      if (r > s.x()) n = d_T * (s.x() / r);
      break;
    }
    case PositionRegion::kBox:
      n = d_T.cwiseMax(-s).cwiseMin(s);
      break;
    case PositionRegion::kCylinder: {
      const double r = std::hypot(d_T.x(), d_T.y());
      if (r > s.x()) {
        n.x() *= s.x() / r;
        n.y() *= s.x() / r;
      }
      n.z() = std::clamp(d_T.z(), -s.z(), s.z());
      break;
    }
  }
  if (nearest_T != nullptr) *nearest_T = n;
  switch (goal.region) {
    case PositionRegion::kSphere:
      return d_T.norm() <= s.x();
    case PositionRegion::kBox:
      return (d_T.array().abs() <= s.array()).all();
    case PositionRegion::kCylinder:
      return std::hypot(d_T.x(), d_T.y()) <= s.x() && std::abs(d_T.z()) <= s.z();
  }
  return false;
}

// The work of one SolveIk call: the link's moving variables, scratch for poses and Jacobians.
class Solver {
 public:
  Solver(const RobotModel& robot, const PoseGoal& goal, std::vector<int32_t> variables)
      : robot_(robot), goal_(goal), variables_(std::move(variables)),
        X_WL_(static_cast<size_t>(robot.num_links())),
        full_(6 * static_cast<size_t>(robot.num_positions())) {
    J_.resize(6, static_cast<Eigen::Index>(variables_.size()));
  }

  // Poses the robot at q; the error vector toward the goal's inner region (position, then orientation)
  // and whether the goal is met.
  bool Evaluate(std::span<const double> q, Eigen::Matrix<double, 6, 1>* e) {
    if (!robot_.ForwardKinematics(q, X_WL_).ok()) {  // a value beyond kMaxJointValue: never a step to take
      e->setConstant(std::numeric_limits<double>::infinity());
      return false;
    }
    const RigidTransform& X_WL = X_WL_[static_cast<size_t>(goal_.link)];
    const Mat3& R_WT = goal_.X_WT.R;
    const Vec3 d_T = R_WT.transpose() * (X_WL * goal_.point_L - goal_.X_WT.p);
    Vec3 inner_T;
    bool met = InRegion(goal_, d_T, 1.0, nullptr);
    InRegion(goal_, d_T, 0.5, &inner_T);
    e->head<3>() = R_WT * (inner_T - d_T);
    if (goal_.constrain_orientation) {
      const Vec3 rv = RotationVector(R_WT.transpose() * X_WL.R);
      met = met && (rv.array().abs() <= goal_.orientation_tolerance.array()).all();
      const Vec3 half = 0.5 * goal_.orientation_tolerance;
      const Vec3 target = rv.cwiseMax(-half).cwiseMin(half);
      e->tail<3>() = RotationVector(R_WT * RotationFromVector(target) * X_WL.R.transpose());
    } else {
      e->tail<3>().setZero();
    }
    return met;
  }

  // The Jacobian of the link's point (rows 0-2) and frame (rows 3-5) over the variables, at the poses of
  // the last Evaluate (RobotModel::FrameJacobian's columns of the variables).
  void Jacobian() {
    const RigidTransform& X_WL = X_WL_[static_cast<size_t>(goal_.link)];
    robot_.FrameJacobian(goal_.link, X_WL * goal_.point_L, X_WL_, full_);
    for (size_t c = 0; c < variables_.size(); ++c) {
      J_.col(static_cast<Eigen::Index>(c)) =
          Eigen::Map<const Eigen::Matrix<double, 6, 1>>(full_.data() + 6 * static_cast<size_t>(variables_[c]));
    }
    if (!goal_.constrain_orientation) J_.bottomRows<3>().setZero();
  }

  // One damped step from q along the error e: dq for the variables.
  void Step(const Eigen::Matrix<double, 6, 1>& e, double damping, Eigen::VectorXd* dq) const {
    // A position goal's orientation rows are zero in J and e: their block of A is the damping alone and
    // their share of y zero, so one 6 x 6 system serves both kinds.
    Eigen::Matrix<double, 6, 6> A = J_.lazyProduct(J_.transpose());  // small: no blocked product
    A.diagonal().array() += damping;
    const Eigen::Matrix<double, 6, 1> y = A.ldlt().solve(e);
    *dq = J_.transpose() * y;
  }

  const std::vector<int32_t>& variables() const { return variables_; }
  const RigidTransform& link_pose() const { return X_WL_[static_cast<size_t>(goal_.link)]; }

 private:
  const RobotModel& robot_;
  const PoseGoal& goal_;
  std::vector<int32_t> variables_;
  std::vector<RigidTransform> X_WL_;
  std::vector<double> full_;  // FrameJacobian over every entry of q
  Eigen::Matrix<double, 6, Eigen::Dynamic> J_;  // rows 3-5 stay zero for a position goal
};

// The variables that move `link`: positions in q driving a joint on its path to the root.
std::vector<int32_t> MovingVariables(const RobotModel& robot, LinkIndex link) {
  std::vector<int32_t> out;
  const auto& joints = robot.joints();
  for (JointIndex j = robot.link(link).parent_joint; j >= 0;
       j = robot.link(joints[static_cast<size_t>(j)].parent_link).parent_joint) {
    const Joint& joint = joints[static_cast<size_t>(j)];
    if (joint.type == JointType::kFixed) continue;
    const int32_t source = joint.is_mimic() ? joint.mimic_active_index : joint.active_index;
    if (source >= 0 && std::find(out.begin(), out.end(), source) == out.end()) out.push_back(source);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Status CheckPoseGoal(const RobotModel& robot, const PoseGoal& goal) {
  if (goal.link < 0 || goal.link >= robot.num_links()) {
    return Error{ErrorCode::kInvalidArgument, "pose goal: link index " + std::to_string(goal.link) + " is not a link of robot '" +
                                                  robot.name() + "'"};
  }
  if (!Finite(goal.point_L)) return Error{ErrorCode::kInvalidArgument, "pose goal: the link point is not finite"};
  if (!Finite(goal.X_WT.p) || !goal.X_WT.R.allFinite()) {
    return Error{ErrorCode::kInvalidArgument, "pose goal: the target pose is not finite"};
  }
  if (std::abs(goal.X_WT.p.maxCoeff()) > kWorldExtent || std::abs(goal.X_WT.p.minCoeff()) > kWorldExtent) {
    return Error{ErrorCode::kInvalidArgument, "pose goal: the target position lies beyond the world's extent"};
  }
  if ((goal.X_WT.R.transpose() * goal.X_WT.R - Mat3::Identity()).norm() > 1e-6 || goal.X_WT.R.determinant() < 0.0) {
    return Error{ErrorCode::kInvalidArgument, "pose goal: the target orientation is not a rotation"};
  }
  const Vec3& s = goal.region_size;
  const bool sizes_ok = goal.region == PositionRegion::kSphere   ? std::isfinite(s.x()) && s.x() > 0.0
                        : goal.region == PositionRegion::kBox    ? Finite(s) && (s.array() > 0.0).all()
                                                                 : std::isfinite(s.x()) && s.x() > 0.0 &&
                                                                    std::isfinite(s.z()) && s.z() > 0.0;
  if (!sizes_ok) {
    return Error{ErrorCode::kInvalidArgument, "pose goal: the position region's size must be finite and > 0"};
  }
  if (goal.constrain_orientation &&
      !(Finite(goal.orientation_tolerance) && (goal.orientation_tolerance.array() > 0.0).all())) {
    return Error{ErrorCode::kInvalidArgument, "pose goal: the orientation tolerances must be finite and > 0"};
  }
  return Status::Ok();
}

bool PoseGoalMet(const PoseGoal& goal, const RigidTransform& X_WL, double* position_error,
                 double* orientation_error) {
  const Vec3 d_T = goal.X_WT.R.transpose() * (X_WL * goal.point_L - goal.X_WT.p);
  bool met = InRegion(goal, d_T, 1.0, nullptr);
  const Vec3 rv = RotationVector(goal.X_WT.R.transpose() * X_WL.R);
  if (goal.constrain_orientation) met = met && (rv.array().abs() <= goal.orientation_tolerance.array()).all();
  if (position_error != nullptr) *position_error = d_T.norm();
  if (orientation_error != nullptr) *orientation_error = rv.norm();
  return met;
}

Result<IkSolution> SolveIk(const RobotModel& robot, const PoseGoal& goal, std::span<const double> seed_q,
                           const IkOptions& options, const Interrupt& stop) {
  if (Status s = CheckPoseGoal(robot, goal); !s.ok()) return s.error();
  if (Status s = robot.CheckConfiguration(seed_q); !s.ok()) return s.error();
  if (options.max_attempts < 1 || options.max_iterations < 1) {
    return Error{ErrorCode::kInvalidArgument, "ik: max_attempts and max_iterations must be >= 1"};
  }
  const std::vector<int32_t> moving = MovingVariables(robot, goal.link);
  std::vector<int32_t> variables;
  if (options.variables.empty()) {
    variables = moving;
  } else {
    std::vector<char> seen(static_cast<size_t>(robot.num_positions()), 0);
    for (int32_t v : options.variables) {
      if (v < 0 || v >= robot.num_positions()) {
        return Error{ErrorCode::kInvalidArgument, "ik: variable " + std::to_string(v) + " is not a position of q (" +
                                                      std::to_string(robot.num_positions()) + " entries)"};
      }
      if (seen[static_cast<size_t>(v)]++) {
        return Error{ErrorCode::kInvalidArgument, "ik: variable " + std::to_string(v) + " is listed twice"};
      }
      // Variables that do not move the link cannot help; they keep the seed's values.
      if (std::find(moving.begin(), moving.end(), v) != moving.end()) variables.push_back(v);
    }
  }
  if (variables.empty()) {
    return Error{ErrorCode::kInvalidArgument, "ik: no joint that may move moves link '" + robot.link(goal.link).name + "'"};
  }

  const auto& lower = robot.lower_limits();
  const auto& upper = robot.upper_limits();
  auto clamp = [&](int32_t v, double x) {
    return robot.is_continuous(v) ? x : std::clamp(x, lower[static_cast<size_t>(v)], upper[static_cast<size_t>(v)]);
  };
  IkSolution out;
  out.q.assign(seed_q.begin(), seed_q.end());
  std::vector<double> q(seed_q.begin(), seed_q.end());
  for (int32_t v : variables) q[static_cast<size_t>(v)] = clamp(v, q[static_cast<size_t>(v)]);
  std::vector<double> trial = q;
  Solver solver(robot, goal, variables);
  std::mt19937_64 rng(options.seed);
  Eigen::Matrix<double, 6, 1> e, e_trial;
  Eigen::VectorXd dq;

  for (int32_t attempt = 0; attempt < options.max_attempts; ++attempt) {
    if (stop && stop()) break;
    ++out.attempts;
    if (attempt > 0 || !options.start_at_seed) {
      for (int32_t v : variables) {
        const double lo = lower[static_cast<size_t>(v)], hi = upper[static_cast<size_t>(v)];
        const bool bounded = std::isfinite(lo) && std::isfinite(hi) && !robot.is_continuous(v);
        std::uniform_real_distribution<double> u(bounded ? lo : -kPi, bounded ? hi : kPi);
        q[static_cast<size_t>(v)] = u(rng);
      }
    }
    ++out.iterations;
    bool met = solver.Evaluate(q, &e);
    double damping = kInitialDamping;
    bool moved = true;  // the solver's poses are q's and its Jacobian is stale
    double checkpoint = e.squaredNorm();
    for (int32_t it = 0; !met && it < options.max_iterations && damping <= kMaxDamping; ++it) {
      // A descent that has not halved its squared error in kStallSteps steps is stuck (a joint limit, a
      // singularity, a local minimum): a restart is cheaper than waiting.
      if (it > 0 && it % kStallSteps == 0) {
        if (e.squaredNorm() > kStallRatio * checkpoint) break;
        checkpoint = e.squaredNorm();
      }
      if (moved) solver.Jacobian();
      solver.Step(e, damping, &dq);
      trial = q;
      for (size_t c = 0; c < variables.size(); ++c) {
        const auto v = static_cast<size_t>(variables[c]);
        trial[v] = clamp(variables[c], q[v] + dq[static_cast<Eigen::Index>(c)]);
      }
      ++out.iterations;
      const bool trial_met = solver.Evaluate(trial, &e_trial);
      if (trial_met || e_trial.squaredNorm() < e.squaredNorm()) {
        q.swap(trial);
        e = e_trial;
        met = trial_met;
        moved = true;
        damping = std::max(kMinDamping, damping * 0.1);
      } else {
        moved = false;  // q and its Jacobian stand; a smaller step is tried
        damping *= 10.0;
      }
    }
    if (!met) continue;
    // Continuous joints turn to within pi of the seed; the goal is checked once more at the answer.
    for (int32_t v : variables) {
      const auto i = static_cast<size_t>(v);
      if (robot.is_continuous(v)) q[i] = seed_q[i] + ShortestTurn(q[i] - seed_q[i]);
    }
    Eigen::Matrix<double, 6, 1> unused;
    if (!solver.Evaluate(q, &unused) || !robot.WithinLimits(q)) continue;
    (void)PoseGoalMet(goal, solver.link_pose(), &out.position_error, &out.orientation_error);
    out.found = true;
    out.q = q;
    return out;
  }
  return out;
}

}  // namespace proximity::core
