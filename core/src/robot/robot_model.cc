// RobotModel: tree ordering and validation, SRDF semantics, forward kinematics, the default allowed
// collision set, and motion bounds for certified motion checking.

#include "proximity/core/robot/robot_model.h"
#include "bvh/bvh.h"
#include "robot/robot_motion.h"
#include "robot/sincos.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <unordered_map>

namespace proximity::core {
namespace {

std::string Number(double v) { return FormatNumber(v); }

// A ball (centre in the link frame, radius) in a cover of a geometry: every point of the geometry lies in
// the convex hull of its balls. Distances to a point or to a line are convex and 1-Lipschitz, so their
// maximum over the geometry is at most the maximum over balls of (distance of the centre + radius).
struct Ball {
  Vec3 c;
  double r;
};

void CoverGeometry(const LinkGeometry& g, std::vector<Ball>* balls) {
  switch (g.type) {
    case ShapeType::kMesh:
      for (const Vec3& v : g.mesh->mesh().vertices) balls->push_back({g.X_LG * v, 0.0});
      break;
    case ShapeType::kBox:
      for (int i = 0; i < 8; ++i) {
        const Vec3 corner(i & 1 ? 0.5 : -0.5, i & 2 ? 0.5 : -0.5, i & 4 ? 0.5 : -0.5);
        balls->push_back({g.X_LG * Vec3(corner.cwiseProduct(g.box_size)), 0.0});
      }
      break;
    case ShapeType::kSphere:
      balls->push_back({g.X_LG.p, g.radius});
      break;
    case ShapeType::kCylinder:
      // The capsule over the two cap centres contains the cylinder.
      balls->push_back({g.X_LG * Vec3(0, 0, 0.5 * g.length), g.radius});
      balls->push_back({g.X_LG * Vec3(0, 0, -0.5 * g.length), g.radius});
      break;
  }
}

// Distance from p to the line through the origin along unit vector a.
double DistanceToAxis(const Vec3& p, const Vec3& a) { return (p - a * a.dot(p)).norm(); }

// Joint rotation or translation X_JC(value).
// `sin_value` and `cos_value`: the joint value's sine and cosine (used by revolute joints).
inline void ApplyJoint(const Joint& j, double value, double sin_value, double cos_value, const RigidTransform& X_WP,
                       RigidTransform* X_WC) {
  const Mat3 R_WJ = X_WP.R * j.X_PJ.R;
  Vec3 p_WJ = X_WP.R * j.X_PJ.p + X_WP.p;
  switch (j.type) {
    case JointType::kRevolute:
    case JointType::kContinuous: {
      // About a coordinate axis (as most URDFs write them) the rotation only mixes two columns of R_WJ.
      const Vec3& a = j.axis_J;
      const int k = a.x() != 0.0 ? 0 : (a.y() != 0.0 ? 1 : 2);
      const double sign = a[k];
      if ((sign == 1.0 || sign == -1.0) && a[(k + 1) % 3] == 0.0 && a[(k + 2) % 3] == 0.0) {
        const int u = (k + 1) % 3, v = (k + 2) % 3;  // Rotation by value about e_k maps e_u -> c e_u + s e_v.
        const double c = cos_value, s = sign * sin_value;
        X_WC->R.col(k) = R_WJ.col(k);
        X_WC->R.col(u) = c * R_WJ.col(u) + s * R_WJ.col(v);
        X_WC->R.col(v) = c * R_WJ.col(v) - s * R_WJ.col(u);
      } else {
        X_WC->R.noalias() = R_WJ * Eigen::AngleAxisd(value, a).toRotationMatrix();
      }
      X_WC->p = p_WJ;
      break;
    }
    case JointType::kPrismatic:
      X_WC->R = R_WJ;
      X_WC->p = p_WJ + R_WJ * (j.axis_J * value);
      break;
    case JointType::kFixed:
      X_WC->R = R_WJ;
      X_WC->p = p_WJ;
      break;
  }
}

// The value of a moving joint at q: its own entry, or its leader's scaled and offset (a mimic).
double JointValue(const Joint& joint, std::span<const double> q) {
  if (joint.active_index >= 0) return q[joint.active_index];
  return joint.mimic_multiplier * q[joint.mimic_active_index] + joint.mimic_offset;
}

}  // namespace

Status RobotModel::Finalize(const std::vector<JointIndex>& mimic_leader, const Interrupt& stop) {
  const int32_t n = num_links();
  if (num_joints() != n - 1) {
    return InvalidArgument("URDF: " + std::to_string(n) + " links need " + std::to_string(n - 1) + " joints, found " +
                           std::to_string(num_joints()));
  }
  // Children in document order; the outline pass guaranteed one root and one parent per link.
  std::vector<std::vector<JointIndex>> child_joints(n);
  std::vector<JointIndex> parent_joint(n, -1);
  for (JointIndex j = 0; j < num_joints(); ++j) {
    child_joints[joints_[j].parent_link].push_back(j);
    parent_joint[joints_[j].child_link] = j;
  }
  LinkIndex root = -1;
  for (LinkIndex l = 0; l < n; ++l) {
    if (parent_joint[l] < 0) root = l;
  }
  // Depth-first order: the new index of each old link and joint.
  std::vector<LinkIndex> new_link(n, -1);
  std::vector<JointIndex> new_joint(num_joints(), -1);
  std::vector<LinkIndex> order;
  std::vector<LinkIndex> stack = {root};
  while (!stack.empty()) {
    const LinkIndex l = stack.back();
    stack.pop_back();
    if (new_link[l] >= 0) return InvalidArgument("URDF: link '" + links_[l].name + "' is reached twice (cycle)");
    new_link[l] = static_cast<LinkIndex>(order.size());
    if (parent_joint[l] >= 0) new_joint[parent_joint[l]] = new_link[l] - 1;
    order.push_back(l);
    for (auto it = child_joints[l].rbegin(); it != child_joints[l].rend(); ++it) stack.push_back(joints_[*it].child_link);
  }
  if (static_cast<int32_t>(order.size()) != n) {
    return InvalidArgument("URDF: some links are not connected to root link '" + links_[root].name + "'");
  }
  std::vector<Link> links(n);
  std::vector<Joint> joints(num_joints());
  std::vector<JointIndex> leader(num_joints(), -1);
  for (LinkIndex l = 0; l < n; ++l) links[new_link[l]] = std::move(links_[l]);
  for (JointIndex j = 0; j < num_joints(); ++j) {
    Joint& jn = joints[new_joint[j]];
    jn = std::move(joints_[j]);
    jn.parent_link = new_link[jn.parent_link];
    jn.child_link = new_link[jn.child_link];
    leader[new_joint[j]] = mimic_leader[j] >= 0 ? new_joint[mimic_leader[j]] : -1;
  }
  links_ = std::move(links);
  joints_ = std::move(joints);
  for (JointIndex j = 0; j < num_joints(); ++j) {
    links_[joints_[j].parent_link].child_joints.push_back(j);
    links_[joints_[j].child_link].parent_joint = j;
  }
  for (LinkIndex l = 0; l < n; ++l) {
    if (!link_by_name_.emplace(links_[l].name, l).second) {
      return InvalidArgument("URDF: duplicate link name '" + links_[l].name + "'");
    }
  }
  for (JointIndex j = 0; j < num_joints(); ++j) {
    if (!joint_by_name_.emplace(joints_[j].name, j).second) {
      return InvalidArgument("URDF: duplicate joint name '" + joints_[j].name + "'");
    }
  }

  // Active joints in depth-first order, then mimics resolved to the active joint at the end of their chain.
  for (JointIndex j = 0; j < num_joints(); ++j) {
    Joint& joint = joints_[j];
    if (joint.type == JointType::kFixed || leader[j] >= 0) continue;
    joint.active_index = num_positions();
    active_joints_.push_back(j);
    active_joint_names_.push_back(joint.name);
    lower_limits_.push_back(joint.lower);
    upper_limits_.push_back(joint.upper);
    if (joint.type == JointType::kContinuous) continuous_indices_.push_back(joint.active_index);
  }
  for (JointIndex j = 0; j < num_joints(); ++j) {
    if (leader[j] < 0) continue;
    double multiplier = joints_[j].mimic_multiplier, offset = joints_[j].mimic_offset;
    JointIndex at = leader[j];
    for (int steps = 0; leader[at] >= 0; ++steps) {
      if (steps > num_joints()) return InvalidArgument("URDF: mimic joints form a cycle through joint '" + joints_[j].name + "'");
      offset += multiplier * joints_[at].mimic_offset;
      multiplier *= joints_[at].mimic_multiplier;
      at = leader[at];
    }
    if (joints_[at].type == JointType::kFixed) {
      return InvalidArgument("URDF: joint '" + joints_[j].name + "' mimics fixed joint '" + joints_[at].name + "'");
    }
    joints_[j].mimic_active_index = joints_[at].active_index;
    joints_[j].mimic_multiplier = multiplier;
    joints_[j].mimic_offset = offset;
  }

  // The links below some active or mimic joint, and their joints (what ForwardKinematicsMoving poses).
  link_moves_.assign(static_cast<size_t>(n), 0);
  moving_joints_.clear();
  for (JointIndex j = 0; j < num_joints(); ++j) {
    const Joint& joint = joints_[j];
    link_moves_[joint.child_link] = link_moves_[joint.parent_link] || joint.is_active() || joint.is_mimic();
    if (link_moves_[joint.child_link]) moving_joints_.push_back(j);
  }

  if (Status s = ApplySrdf(); !s.ok()) return s;
  return ComputeMotionTerms(stop);
}

namespace {

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// The robot's names an SRDF may use: its links, and its joints (URDF joints and the SRDF's virtual ones).
struct SrdfNames {
  const std::unordered_map<std::string, LinkIndex>& links;
  const RobotModel& robot;
  Result<LinkIndex> Link(const std::string& name, const std::string& where) const {
    auto it = links.find(name);
    if (it == links.end()) {
      return InvalidArgument("SRDF: " + where + " names link '" + name + "', which the URDF does not define");
    }
    return it->second;
  }
  Status Joint(const std::string& name, const std::string& where) const {
    if (!robot.FindJoint(name).ok() && !robot.IsVirtualJoint(name)) {
      return InvalidArgument("SRDF: " + where + " names joint '" + name + "', which the URDF does not define");
    }
    return {};
  }
};

// SRDF virtual joints, as MoveIt reads them: one attached to the URDF's root places the robot (fixed;
// planar and floating ones are held at the identity: the root stays at the scene's base pose); one
// attached elsewhere is skipped. Appends a warning per kind to *warnings.
Status ReadVirtualJoints(const Srdf& srdf, const SrdfNames& names, const std::string& root,
                         std::vector<std::string>* warnings) {
  std::vector<std::string> held, untyped, skipped;
  for (const SrdfVirtualJoint& v : srdf.virtual_joints) {
    if (Result<LinkIndex> r = names.Link(v.child_link, "virtual_joint '" + v.name + "'"); !r.ok()) return r.error();
    if (v.child_link != root) {
      skipped.push_back("'" + v.name + "' (child '" + v.child_link + "', the root is '" + root + "')");
    } else if (v.type == "planar" || v.type == "floating") {
      held.push_back("'" + v.name + "' (" + v.type + ")");
    } else if (v.type != "fixed") {
      untyped.push_back("'" + v.name + "'" + (v.type.empty() ? " (no type)" : " (type '" + v.type + "')"));
    }
  }
  if (!held.empty()) {
    warnings->push_back("SRDF: virtual joint(s) " + JoinList(held) +
                        " held at the identity: the robot's root stays at the scene's base pose (planar and "
                        "floating bases are not planned or checked as moving)");
  }
  if (!untyped.empty()) {
    warnings->push_back("SRDF: virtual joint(s) " + JoinList(untyped) +
                        " read as fixed (the types are fixed, planar and floating)");
  }
  if (!skipped.empty()) {
    warnings->push_back("SRDF: skipped virtual joint(s) " + JoinList(skipped) +
                        " not attached to the URDF's root link, as MoveIt skips them");
  }
  return {};
}

// Groups (chains that descend, joints, links, subgroups defined), group states and passive joints name
// what the robot has; *groups: the groups' names.
Status CheckGroups(const Srdf& srdf, const SrdfNames& names, const RobotModel& robot, std::set<std::string>* groups) {
  for (const SrdfGroup& g : srdf.groups) {
    if (!groups->insert(g.name).second) return InvalidArgument("SRDF: duplicate group '" + g.name + "'");
  }
  for (const SrdfGroup& g : srdf.groups) {
    const std::string where = "group '" + g.name + "'";
    for (const auto& [base, tip] : g.chains) {
      Result<LinkIndex> b = names.Link(base, where + " chain");
      if (!b.ok()) return b.error();
      Result<LinkIndex> t = names.Link(tip, where + " chain");
      if (!t.ok()) return t.error();
      LinkIndex at = t.value();
      while (at != b.value() && at != 0) at = robot.joint(robot.link(at).parent_joint).parent_link;
      if (at != b.value()) {
        return InvalidArgument("SRDF: " + where + " chain tip '" + tip + "' does not descend from base '" + base + "'");
      }
    }
    for (const std::string& j : g.joints) {
      if (Status s = names.Joint(j, where); !s.ok()) return s;
    }
    for (const std::string& l : g.links) {
      if (Result<LinkIndex> r = names.Link(l, where); !r.ok()) return r.error();
    }
    for (const std::string& s : g.subgroups) {
      if (!groups->contains(s)) return InvalidArgument("SRDF: " + where + " names group '" + s + "', which is not defined");
    }
  }
  for (const SrdfGroupState& s : srdf.group_states) {
    const std::string where = "group_state '" + s.name + "'";
    if (!groups->contains(s.group)) {
      return InvalidArgument("SRDF: " + where + " names group '" + s.group + "', which is not defined");
    }
    for (const auto& [j, v] : s.values) {
      if (Status st = names.Joint(j, where); !st.ok()) return st;
    }
  }
  for (const std::string& p : srdf.passive_joints) {
    if (Status s = names.Joint(p, "passive_joint"); !s.ok()) return s;
  }
  return {};
}

// What MoveIt skips, reported: elements the SRDF format lacks, end effectors naming an unknown group or link.
void ForeignElementWarnings(const Srdf& srdf, const SrdfNames& names, const std::set<std::string>& groups,
                            std::vector<std::string>* warnings) {
  if (!srdf.unknown_elements.empty()) {
    std::string list;
    for (const auto& [tag, count] : srdf.unknown_elements) {
      list += (list.empty() ? "<" : ", <") + tag + ">" + (count > 1 ? " x" + std::to_string(count) : "");
    }
    warnings->push_back("SRDF: ignored element(s) that are not part of the SRDF format: " + list);
  }
  std::vector<std::string> bad_end_effectors;
  for (const SrdfEndEffector& e : srdf.end_effectors) {
    if (!groups.contains(e.group) || !names.links.contains(e.parent_link) ||
        (!e.parent_group.empty() && !groups.contains(e.parent_group))) {
      bad_end_effectors.push_back("'" + e.name + "'");
    }
  }
  if (!bad_end_effectors.empty()) {
    warnings->push_back("SRDF: end effector(s) " + JoinList(bad_end_effectors) +
                        " name a group or link that is not defined (ignored)");
  }
}

}  // namespace

Status RobotModel::ApplySrdf() {
  const size_t n = links_.size();
  allowed_.assign(n * n, 0);
  srdf_reasons_.clear();
  // The first reason found for a pair stands (same link, then adjacent, rigid, SRDF).
  const auto allow = [this, n](LinkIndex a, LinkIndex b, AllowedReason reason) {
    uint8_t& ab = allowed_[static_cast<size_t>(a) * n + b];
    if (ab != 0) return;
    ab = static_cast<uint8_t>(reason);
    allowed_[static_cast<size_t>(b) * n + a] = static_cast<uint8_t>(reason);
  };
  for (LinkIndex l = 0; l < num_links(); ++l) allow(l, l, AllowedReason::kSameLink);
  // Links rigidly connected through fixed joints only: union-find over fixed joints.
  std::vector<LinkIndex> rigid(n);
  std::iota(rigid.begin(), rigid.end(), 0);
  const auto find = [&rigid](LinkIndex l) {
    while (rigid[l] != l) l = rigid[l] = rigid[rigid[l]];
    return l;
  };
  for (const Joint& j : joints_) {
    allow(j.parent_link, j.child_link, AllowedReason::kAdjacent);
    if (j.type == JointType::kFixed) rigid[find(j.child_link)] = find(j.parent_link);
  }
  for (LinkIndex a = 0; a < num_links(); ++a) {
    for (LinkIndex b = a + 1; b < num_links(); ++b) {
      if (find(a) == find(b)) allow(a, b, AllowedReason::kRigid);
    }
  }
  const SrdfNames names{link_by_name_, *this};
  if (Status s = ReadVirtualJoints(srdf_, names, links_[0].name, &warnings_); !s.ok()) return s;
  std::set<std::string> groups;
  if (Status s = CheckGroups(srdf_, names, *this, &groups); !s.ok()) return s;
  // A pair naming a link the URDF lacks is skipped, as MoveIt skips it (an SRDF written for a variant
  // of the robot), and reported once.
  std::vector<std::string> unknown_links;
  int skipped_pairs = 0;
  for (const SrdfDisabledCollision& d : srdf_.disabled_collisions) {
    const auto a = link_by_name_.find(d.link1);
    const auto b = link_by_name_.find(d.link2);
    if (a == link_by_name_.end() || b == link_by_name_.end()) {
      ++skipped_pairs;
      for (const std::string* missing : {&d.link1, &d.link2}) {
        if (!link_by_name_.contains(*missing) &&
            std::find(unknown_links.begin(), unknown_links.end(), *missing) == unknown_links.end()) {
          unknown_links.push_back(*missing);
        }
      }
      continue;
    }
    allow(a->second, b->second, AllowedReason::kSrdf);
    if (AllowedPairReason(a->second, b->second) == AllowedReason::kSrdf) {
      srdf_reasons_.emplace(std::minmax(a->second, b->second), d.reason);
    }
  }
  if (skipped_pairs > 0) {
    std::string names_list;
    for (const std::string& unknown : unknown_links) names_list += (names_list.empty() ? "'" : ", '") + unknown + "'";
    warnings_.push_back("SRDF: skipped " + std::to_string(skipped_pairs) +
                        " <disable_collisions> pair(s) naming link(s) the URDF does not define: " + names_list);
  }
  ForeignElementWarnings(srdf_, names, groups, &warnings_);
  return {};
}

std::string_view AllowedReasonName(AllowedReason reason) {
  switch (reason) {
    case AllowedReason::kNone: return "checked";
    case AllowedReason::kSameLink: return "same link";
    case AllowedReason::kAdjacent: return "adjacent";
    case AllowedReason::kRigid: return "rigid";
    case AllowedReason::kSrdf: return "srdf";
  }
  return "checked";
}

std::string RobotModel::SrdfReason(LinkIndex a, LinkIndex b) const {
  auto it = srdf_reasons_.find(std::minmax(a, b));
  return it == srdf_reasons_.end() ? std::string() : it->second;
}

bool RobotModel::IsVirtualJoint(std::string_view name) const {
  for (const SrdfVirtualJoint& v : srdf_.virtual_joints) {
    if (name == v.name) return true;
    if (name.size() > v.name.size() && name.substr(0, v.name.size()) == v.name && name[v.name.size()] == '/') {
      return true;
    }
  }
  return false;
}

// Motion bound (Schwarzer, Saha, Latombe 2005, section on distance and path-length bounds).
//
// Let p be a point fixed in link k and q(t) = q0 + t (q1 - q0). Differentiating p's world position,
//   |dp/dt| <= sum over revolute j on the root-to-k path of |dq_j/dt| * dist(p, axis_j(t))
//            + sum over prismatic j on the path of |dq_j/dt|,
// because joint j alone moves p on a circle around its axis (or along its unit axis). dq_j/dt is the
// constant q1_j - q0_j (times the multiplier for a mimic), so the path length of p is at most
// sum_j |dq_j| * sup_t dist(p, axis_j(t)) + sum_prismatic |dq_j|.
//
// The lever sup_t dist(p, axis_j) must hold whatever the joints between j and k do. Write o_i for the
// origin of joint i's frame, C_i for its child link, and i' for the next joint on the path. Then
//   dist(p, axis_j) <= dist(o_j', axis_j) + |p - o_j'|        (o_j' is fixed in C_j, as is axis_j)
//   |p - o_i|       <= |p - origin(C_i)| + |q_i| [i prismatic]
//   |p - origin(C_i)| <= |o_i' in C_i| + |p - o_i'|            (a constant offset in C_i)
// down to |p - origin(C_k)| <= max over k's geometry. When C_j is k itself the lever is the exact
// maximum of dist(p, axis_j) over k's geometry cover. Each lever is therefore a constant plus the sum of
// |q_i| over the prismatic joints i after j on the path; along the segment |q_i(t)| is largest at an
// end, so the bound holds for any q0, q1, inside limits or not.
Status RobotModel::ComputeMotionTerms(const Interrupt& stop) {
  motion_terms_.assign(links_.size(), {});
  std::vector<Ball> balls;
  for (LinkIndex k = 0; k < num_links(); ++k) {
    if (stop()) return Stopped("robot: the load was stopped computing the motion bounds of link '" + links_[k].name + "'");
    balls.clear();
    for (const LinkGeometry& g : links_[k].geometries) CoverGeometry(g, &balls);
    double reach = 0.0;  // max |p - origin(C_k)|
    for (const Ball& b : balls) reach = std::max(reach, b.c.norm() + b.r);

    std::vector<JointIndex> path;
    for (LinkIndex at = k; at != 0; at = joints_[links_[at].parent_joint].parent_link) {
      path.push_back(links_[at].parent_joint);
    }
    std::reverse(path.begin(), path.end());

    std::vector<MotionTerm>& terms = motion_terms_[k];
    double next_from_origin = 0.0;  // constant part of max |p - o_i'| for the next joint i' on the path
    for (int32_t idx = static_cast<int32_t>(path.size()) - 1; idx >= 0; --idx) {
      const Joint& j = joints_[path[idx]];
      const bool last = idx + 1 == static_cast<int32_t>(path.size());
      const Vec3 o_next = last ? Vec3::Zero() : joints_[path[idx + 1]].X_PJ.p;
      // Constant part of max |p - origin(C_j)|; for a prismatic j, max |p - o_j| adds |q_j| at query time.
      const double from_child_origin = last ? reach : o_next.norm() + next_from_origin;
      if (j.type != JointType::kFixed) {
        MotionTerm t;
        t.joint = path[idx];
        t.source = j.is_active() ? j.active_index : j.mimic_active_index;
        t.multiplier = j.is_active() ? 1.0 : j.mimic_multiplier;
        t.offset = j.is_active() ? 0.0 : j.mimic_offset;
        t.prismatic = j.type == JointType::kPrismatic;
        if (!t.prismatic && last) {
          for (const Ball& b : balls) t.lever = std::max(t.lever, DistanceToAxis(b.c, j.axis_J) + b.r);
        } else if (!t.prismatic) {
          t.lever = DistanceToAxis(o_next, j.axis_J) + next_from_origin;
        }
        terms.push_back(t);
      }
      next_from_origin = from_child_origin;
    }
    std::reverse(terms.begin(), terms.end());
  }
  return {};
}

double RobotModel::MotionBound(LinkIndex k, std::span<const double> q0, std::span<const double> q1) const {
  return MotionBound(k, q0, q1, 0.0);
}

double RobotModel::MotionBound(LinkIndex k, std::span<const double> q0, std::span<const double> q1,
                               double reach) const {
  return MotionBoundRelative(*this, k, 0, q0, q1, reach);
}

LinkIndex CommonAncestor(const RobotModel& robot, LinkIndex a, LinkIndex b) {
  const auto parent = [&](LinkIndex l) { return robot.joint(robot.link(l).parent_joint).parent_link; };
  auto depth = [&](LinkIndex l) {
    int d = 0;
    for (; robot.link(l).parent_joint >= 0; l = parent(l)) ++d;
    return d;
  };
  int da = depth(a), db = depth(b);
  for (; da > db; --da) a = parent(a);
  for (; db > da; --db) b = parent(b);
  while (a != b) {
    a = parent(a);
    b = parent(b);
  }
  return a;
}

double MotionBoundRelative(const RobotModel& robot, LinkIndex k, LinkIndex ancestor, std::span<const double> q0,
                           std::span<const double> q1, double reach) {
  double bound = 0.0;
  VisitMotionLevers(robot, k, ancestor, q0, q1, reach,
                    [&](size_t, const MotionLever& l) { bound += l.dq * (l.prismatic ? 1.0 : l.lever); });
  return bound;
}

void MotionLevers(const RobotModel& robot, LinkIndex k, LinkIndex ancestor, std::span<const double> q0,
                  std::span<const double> q1, double reach, std::vector<MotionLever>* out) {
  const size_t first = out->size();
  out->resize(first + static_cast<size_t>(NumMovingJoints(robot, k) - NumMovingJoints(robot, ancestor)));
  VisitMotionLevers(robot, k, ancestor, q0, q1, reach, [&](size_t i, const MotionLever& l) { (*out)[first + i] = l; });
}

double LeverRadius(const RobotModel& robot, LinkIndex k, JointIndex j) {
  const std::vector<RobotMotionAccess::Term>& terms = RobotMotionAccess::Terms(robot, k);
  double extent = 0.0;
  for (auto it = terms.rbegin(); it != terms.rend(); ++it) {
    if (it->prismatic) {
      const double lo = it->multiplier * robot.lower_limits()[static_cast<size_t>(it->source)] + it->offset;
      const double hi = it->multiplier * robot.upper_limits()[static_cast<size_t>(it->source)] + it->offset;
      extent += std::max(std::abs(lo), std::abs(hi));
    } else if (it->joint == j) {
      return it->lever + extent;
    }
  }
  return 0.0;
}

Result<LinkIndex> RobotModel::FindLink(std::string_view name) const {
  auto it = link_by_name_.find(std::string(name));
  if (it == link_by_name_.end()) return NotFound("robot '" + name_ + "' has no link '" + std::string(name) + "'");
  return it->second;
}

Result<JointIndex> RobotModel::FindJoint(std::string_view name) const {
  auto it = joint_by_name_.find(std::string(name));
  if (it == joint_by_name_.end()) return NotFound("robot '" + name_ + "' has no joint '" + std::string(name) + "'");
  return it->second;
}

Result<int32_t> RobotModel::ActiveIndex(std::string_view joint_name) const {
  Result<JointIndex> j = FindJoint(joint_name);
  if (!j.ok()) return j.error();
  const Joint& joint = joints_[j.value()];
  if (!joint.is_active()) {
    return InvalidArgument("joint '" + joint.name + "' is " + (joint.is_mimic() ? "a mimic joint" : "fixed") +
                           " and has no entry in the configuration");
  }
  return joint.active_index;
}

double ShortestTurn(double delta) {
  constexpr double kPi = 3.14159265358979323846;
  if (std::abs(delta) <= kPi) return delta;
  // std::remainder is exact: delta - n * 2pi with n the nearest integer, in [-pi, pi].
  return std::remainder(delta, 2.0 * kPi);
}

void RobotModel::MotionEnd(std::span<const double> q0, std::span<const double> q1, std::span<double> out) const {
  if (out.data() != q1.data()) std::copy(q1.begin(), q1.end(), out.begin());
  for (int32_t i : continuous_indices_) {
    const size_t k = static_cast<size_t>(i);
    out[k] = q0[k] + ShortestTurn(q1[k] - q0[k]);
  }
}

std::vector<double> RobotModel::DefaultConfiguration() const {
  std::vector<double> q(active_joints_.size(), 0.0);
  for (size_t i = 0; i < q.size(); ++i) {
    if (lower_limits_[i] > 0.0 || upper_limits_[i] < 0.0) q[i] = 0.5 * (lower_limits_[i] + upper_limits_[i]);
  }
  return q;
}

Result<std::vector<double>> RobotModel::Configuration(const std::map<std::string, double>& values,
                                                      bool require_all, std::vector<std::string>* ignored) const {
  std::vector<double> q = DefaultConfiguration();
  std::vector<bool> given(q.size(), false);
  for (const auto& [name, value] : values) {
    Result<JointIndex> j = FindJoint(name);
    if (!j.ok() && ignored != nullptr) {
      ignored->push_back(name);
      continue;
    }
    if (!j.ok()) return j.error();
    if (!std::isfinite(value)) return InvalidArgument("joint '" + name + "' has non-finite value " + Number(value));
    const Joint& joint = joints_[j.value()];
    if (!joint.is_active()) continue;
    q[joint.active_index] = value;
    given[joint.active_index] = true;
  }
  if (require_all) {
    for (size_t i = 0; i < q.size(); ++i) {
      if (!given[i]) return InvalidArgument("no value given for joint '" + active_joint_names_[i] + "'");
    }
  }
  return q;
}

Result<std::vector<double>> RobotModel::NamedConfiguration(const std::string& state, const std::string& group) const {
  for (const SrdfGroupState& s : srdf_.group_states) {
    if (s.name != state || (!group.empty() && s.group != group)) continue;
    // Entries for the SRDF's virtual joints (checked at load) move nothing here.
    std::vector<std::string> virtual_entries;
    Result<std::vector<double>> q =
        Configuration(std::map<std::string, double>(s.values.begin(), s.values.end()), false, &virtual_entries);
    if (!q.ok()) return q;
    // A state outside the limits is loaded (as MoveIt does) but never used as a configuration.
    if (Status st = CheckLimits(q.value(), 1e-9); !st.ok()) {
      return InvalidArgument("robot '" + name_ + "' group state '" + state + "' is outside the joint limits: " +
                             st.error().message);
    }
    return q;
  }
  return NotFound("robot '" + name_ + "' has no group state '" + state + "'" +
                  (group.empty() ? std::string() : " in group '" + group + "'"));
}

Result<std::vector<int32_t>> RobotModel::GroupActiveIndices(const std::string& group) const {
  std::set<int32_t> active;
  std::set<std::string> visiting;
  std::vector<std::string> stack = {group};
  while (!stack.empty()) {
    const std::string name = stack.back();
    stack.pop_back();
    if (!visiting.insert(name).second) continue;
    auto g = std::find_if(srdf_.groups.begin(), srdf_.groups.end(), [&](const SrdfGroup& x) { return x.name == name; });
    if (g == srdf_.groups.end()) return NotFound("robot '" + name_ + "' has no group '" + name + "'");
    const auto add = [&](JointIndex j) {
      if (j >= 0 && joints_[j].is_active()) active.insert(joints_[j].active_index);
    };
    // A chain's joints are those below its base link down to its tip (as MoveIt's groups): the joint
    // above the base link is not one of them.
    for (const auto& [base, tip] : g->chains) {
      const LinkIndex b = link_by_name_.at(base);
      for (LinkIndex at = link_by_name_.at(tip); at != b; at = joints_[links_[at].parent_joint].parent_link) {
        add(links_[at].parent_joint);
      }
    }
    for (const std::string& j : g->joints) {
      if (auto it = joint_by_name_.find(j); it != joint_by_name_.end()) add(it->second);  // else a virtual joint
    }
    for (const std::string& l : g->links) add(links_[link_by_name_.at(l)].parent_joint);
    for (const std::string& s : g->subgroups) stack.push_back(s);
  }
  return std::vector<int32_t>(active.begin(), active.end());
}

Status RobotModel::CheckConfiguration(std::span<const double> q) const {
  if (q.size() != active_joints_.size()) {
    return InvalidArgument("robot '" + name_ + "' needs " + std::to_string(active_joints_.size()) +
                           " joint values, got " + std::to_string(q.size()));
  }
  for (size_t i = 0; i < q.size(); ++i) {
    if (!std::isfinite(q[i])) {
      return InvalidArgument("q[" + std::to_string(i) + "] (joint '" + active_joint_names_[i] + "') is " +
                             Number(q[i]));
    }
    if (std::abs(q[i]) > kMaxJointValue) {
      return InvalidArgument("q[" + std::to_string(i) + "] (joint '" + active_joint_names_[i] + "') = " +
                             Number(q[i]) + " is beyond the accepted range of +-" + Number(kMaxJointValue));
    }
  }
  return {};
}

Result<std::vector<int32_t>> RobotModel::ClampToLimits(std::span<double> q, double tolerance) const {
  if (Status s = CheckConfiguration(q); !s.ok()) return s.error();
  if (Status s = CheckLimits(q, tolerance); !s.ok()) {
    return InvalidArgument(s.error().message + " by more than the " + Number(tolerance) +
                           " that is clamped to a limit");
  }
  std::vector<int32_t> clamped;
  for (size_t i = 0; i < q.size(); ++i) {
    const double v = std::clamp(q[i], lower_limits_[i], upper_limits_[i]);
    if (v != q[i]) {
      q[i] = v;
      clamped.push_back(static_cast<int32_t>(i));
    }
  }
  return clamped;
}

std::string RobotModel::ClampWarning(std::string_view what, std::span<const double> before,
                                     std::span<const double> after, const std::vector<int32_t>& clamped,
                                     double tolerance) const {
  std::string out = std::string(what) + ": clamped ";
  for (size_t k = 0; k < clamped.size(); ++k) {
    const auto i = static_cast<size_t>(clamped[k]);
    out += (k ? ", joint '" : "joint '") + active_joint_names_[i] + "' from " + Number(before[i]) + " to " +
           Number(after[i]);
  }
  return out + " (within " + Number(tolerance) + " of the joint limits)";
}

Status RobotModel::CheckLimits(std::span<const double> q, double tolerance) const {
  if (Status s = CheckConfiguration(q); !s.ok()) return s;
  int32_t i = 0;
  const auto n = static_cast<int32_t>(q.size());
  while (i < n && q[i] >= lower_limits_[i] - tolerance && q[i] <= upper_limits_[i] + tolerance) ++i;
  if (i == n) return {};
  return InvalidArgument("q[" + std::to_string(i) + "] = " + Number(q[i]) + " for joint '" + active_joint_names_[i] +
                         "' is outside its limits [" + Number(lower_limits_[i]) + ", " + Number(upper_limits_[i]) + "]");
}

namespace {
// What both forward kinematics check first: the configuration, and a buffer of one pose per link.
Status CheckKinematicsArguments(const RobotModel& model, std::span<const double> q, std::span<RigidTransform> X_WL) {
  if (Status s = model.CheckConfiguration(q); !s.ok()) return s;
  if (X_WL.size() != model.links().size()) {
    return InvalidArgument("forward kinematics needs a buffer of " + std::to_string(model.links().size()) +
                           " poses, got " + std::to_string(X_WL.size()));
  }
  return {};
}

// Poses the child links of `joints` (in topological order; their parents already posed in X_WL). Joint
// values and their sines and cosines a batch at a time (SinCos does a batch in one vectorized pass), then
// the joints in order.
template <class JointAt>
void PoseChildLinks(std::span<const double> q, size_t count, JointAt&& joint_at, std::span<RigidTransform> X_WL) {
  constexpr size_t kBatch = 16;
  double value[kBatch], sin_value[kBatch], cos_value[kBatch];
  for (size_t begin = 0; begin < count; begin += kBatch) {
    const size_t n = std::min(kBatch, count - begin);
    for (size_t i = 0; i < n; ++i) {
      const Joint& joint = joint_at(begin + i);
      value[i] = joint.type == JointType::kFixed ? 0.0 : JointValue(joint, q);
    }
    SinCos(value, sin_value, cos_value, static_cast<int>(n));
    for (size_t i = 0; i < n; ++i) {
      const Joint& joint = joint_at(begin + i);
      ApplyJoint(joint, value[i], sin_value[i], cos_value[i], X_WL[joint.parent_link], &X_WL[joint.child_link]);
    }
  }
}
}  // namespace

Status RobotModel::ForwardKinematics(std::span<const double> q, std::span<RigidTransform> X_WL,
                                     const RigidTransform& X_WB) const {
  if (Status s = CheckKinematicsArguments(*this, q, X_WL); !s.ok()) return s;
  X_WL[0] = X_WB;
  PoseChildLinks(q, joints_.size(), [&](size_t i) -> const Joint& { return joints_[i]; }, X_WL);
  return {};
}

Status RobotModel::ForwardKinematicsMoving(std::span<const double> q, std::span<RigidTransform> X_WL) const {
  if (Status s = CheckKinematicsArguments(*this, q, X_WL); !s.ok()) return s;
  PoseChildLinks(q, moving_joints_.size(), [&](size_t i) -> const Joint& { return joints_[moving_joints_[i]]; },
                 X_WL);
  return {};
}

Result<std::vector<RigidTransform>> RobotModel::ForwardKinematics(std::span<const double> q,
                                                                  const RigidTransform& X_WB) const {
  std::vector<RigidTransform> X_WL(links_.size());
  if (Status s = ForwardKinematics(q, std::span<RigidTransform>(X_WL), X_WB); !s.ok()) return s.error();
  return X_WL;
}

namespace {
// Calls f(source, scale, linear, angular) for each moving joint on link k's path to the root: the entry of
// q driving it, its mimic multiplier (1 for an active joint), the velocity of the point p_W and the
// angular velocity of link k per unit rate of the joint.
template <class F>
void ForEachJacobianColumn(const RobotModel& model, LinkIndex k, const Vec3& p_W, std::span<const RigidTransform> X_WL,
                           F&& f) {
  for (JointIndex j = model.link(k).parent_joint; j >= 0; j = model.link(model.joint(j).parent_link).parent_joint) {
    const Joint& joint = model.joint(j);
    if (joint.type == JointType::kFixed) continue;
    const int32_t source = joint.is_mimic() ? joint.mimic_active_index : joint.active_index;
    if (source < 0) continue;
    const double scale = joint.is_mimic() ? joint.mimic_multiplier : 1.0;
    // The joint's axis and origin do not move with its own value: they are those of frame J on the parent.
    const RigidTransform& X_WP = X_WL[joint.parent_link];
    const Vec3 axis_W = X_WP.R * (joint.X_PJ.R * joint.axis_J);
    if (joint.type == JointType::kPrismatic) {
      f(source, scale, axis_W, Vec3::Zero());
    } else {
      f(source, scale, Vec3(axis_W.cross(p_W - X_WP * joint.X_PJ.p)), axis_W);
    }
  }
}
}  // namespace

void RobotModel::PointJacobian(LinkIndex k, const Vec3& p_W, std::span<const RigidTransform> X_WL,
                               std::span<double> J) const {
  std::fill(J.begin(), J.end(), 0.0);
  ForEachJacobianColumn(*this, k, p_W, X_WL, [&](int32_t source, double scale, const Vec3& linear, const Vec3&) {
    for (int i = 0; i < 3; ++i) J[3 * static_cast<size_t>(source) + i] += scale * linear[i];
  });
}

void RobotModel::AddPointGradient(LinkIndex k, const Vec3& p_W, const Vec3& v_W, std::span<const RigidTransform> X_WL,
                                  std::span<double> g) const {
  ForEachJacobianColumn(*this, k, p_W, X_WL, [&](int32_t source, double scale, const Vec3& linear, const Vec3&) {
    g[static_cast<size_t>(source)] += scale * v_W.dot(linear);
  });
}

void RobotModel::FrameJacobian(LinkIndex k, const Vec3& p_W, std::span<const RigidTransform> X_WL,
                               std::span<double> J) const {
  std::fill(J.begin(), J.end(), 0.0);
  ForEachJacobianColumn(*this, k, p_W, X_WL,
                        [&](int32_t source, double scale, const Vec3& linear, const Vec3& angular) {
    for (int i = 0; i < 3; ++i) {
      J[6 * static_cast<size_t>(source) + i] += scale * linear[i];
      J[6 * static_cast<size_t>(source) + 3 + i] += scale * angular[i];
    }
  });
}

Result<bool> RobotModel::AllowedCollision(std::string_view a, std::string_view b) const {
  Result<LinkIndex> ia = FindLink(a);
  if (!ia.ok()) return ia.error();
  Result<LinkIndex> ib = FindLink(b);
  if (!ib.ok()) return ib.error();
  return AllowedCollision(ia.value(), ib.value());
}

}  // namespace proximity::core
