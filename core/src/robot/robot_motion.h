#pragma once
/// @file
/// The motion bounds' parts (Schwarzer, Saha, Latombe 2005) that certified LINK, the self-clearance maps
/// and the batch lanes take apart: each moving joint's lever, relative motions below a common ancestor,
/// lever radii valid within limits. RobotModel::MotionBound is their sum in the world frame; these are
/// the core's own, read from the model's motion terms (computed once at load).

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "proximity/core/robot/robot_model.h"

namespace proximity::core {

/// Reads a model's motion terms (a friend of RobotModel).
class RobotMotionAccess {
 public:
  using Term = RobotModel::MotionTerm;
  static const std::vector<Term>& Terms(const RobotModel& robot, LinkIndex k) {
    return robot.motion_terms_[static_cast<size_t>(k)];
  }
};

/// One moving joint's share of MotionBoundRelative(robot, k, ancestor, q0, q1, reach): that bound is the
/// sum over the levers of dq * lever (revolute: `lever` bounds the distance from the joint's axis to
/// every point concerned, for any q on the segment) plus dq (prismatic).
struct MotionLever {
  JointIndex joint = -1;
  double dq = 0.0;     ///< |change of the joint's value| along the segment (mimics scaled)
  double lever = 0.0;  ///< revolute: the lever radius; prismatic: 0
  bool prismatic = false;
};

/// Calls f(i, lever) for the levers of MotionBoundRelative(robot, k, ancestor, q0, q1, reach), tip first;
/// i counts from the first joint after the ancestor. The ancestor's own moving joints are a prefix of
/// k's: they move both frames alike.
template <class F>
void VisitMotionLevers(const RobotModel& robot, LinkIndex k, LinkIndex ancestor, std::span<const double> q0,
                       std::span<const double> q1, double reach, F&& f) {
  const std::vector<RobotMotionAccess::Term>& terms = RobotMotionAccess::Terms(robot, k);
  const size_t skip = RobotMotionAccess::Terms(robot, ancestor).size();
  double extent = 0.0;  // sum of max |q_i| over prismatic joints after the current one
  for (size_t i = terms.size(); i-- > skip;) {
    const RobotMotionAccess::Term& t = terms[i];
    const double a = q0[t.source], b = q1[t.source];
    MotionLever l;
    l.joint = t.joint;
    l.dq = std::abs(t.multiplier * (b - a));
    l.prismatic = t.prismatic;
    if (t.prismatic) {
      extent += std::max(std::abs(t.multiplier * a + t.offset), std::abs(t.multiplier * b + t.offset));
    } else {
      l.lever = t.lever + extent + reach;
    }
    f(i - skip, l);
  }
}

/// RobotModel::MotionBound(k, q0, q1, reach) measured in the frame of `ancestor` (k itself or a link on
/// k's path to the root) instead of the world: only the joints between the two count. The distance
/// between a point of link a and a point of link b shrinks by at most MotionBoundRelative(a, c) +
/// MotionBoundRelative(b, c) for their common ancestor c, which is far smaller than their world motions
/// when both hang below joints that move them together.
double MotionBoundRelative(const RobotModel& robot, LinkIndex k, LinkIndex ancestor, std::span<const double> q0,
                           std::span<const double> q1, double reach = 0.0);

/// Appends the levers of MotionBoundRelative(robot, k, ancestor, q0, q1, reach) to *out, root side first;
/// their count is NumMovingJoints(robot, k) - NumMovingJoints(robot, ancestor). A caller that knows where
/// the geometry is at a point of the segment can tighten the levers (JointAxisDistance).
void MotionLevers(const RobotModel& robot, LinkIndex k, LinkIndex ancestor, std::span<const double> q0,
                  std::span<const double> q1, double reach, std::vector<MotionLever>* out);

/// Moving (non-fixed) joints on the path from the root to link k.
inline int32_t NumMovingJoints(const RobotModel& robot, LinkIndex k) {
  return static_cast<int32_t>(RobotMotionAccess::Terms(robot, k).size());
}

/// Distance (m) from the axis of joint j (the line through its frame's origin along axis_J) to p_W,
/// given the world pose of j's parent link.
inline double JointAxisDistance(const RobotModel& robot, JointIndex j, const RigidTransform& X_WP, const Vec3& p_W) {
  const Joint& joint = robot.joint(j);
  const Vec3 o_W = X_WP * joint.X_PJ.p;
  const Vec3 u_W = X_WP.R * (joint.X_PJ.R * joint.axis_J);
  const Vec3 d = p_W - o_W;
  return (d - u_W * u_W.dot(d)).norm();
}

/// The deepest link that is an ancestor of both a and b (either of them itself, or the root).
LinkIndex CommonAncestor(const RobotModel& robot, LinkIndex a, LinkIndex b);

/// The lever radius (m) of joint j for link k, valid for every q within limits: an upper bound on the
/// distance from joint j's axis to any point of k's geometry. 0 when j does not move k or is prismatic.
double LeverRadius(const RobotModel& robot, LinkIndex k, JointIndex j);

}  // namespace proximity::core
