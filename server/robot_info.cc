#include "server/robot_info.h"

#include <string>

namespace proximity::server {

void AddRobotSemantics(const core::Scene& scene, v1::SceneInfo* info) {
  const core::RobotModel& robot = scene.robot();
  const core::Srdf& srdf = robot.srdf();
  for (const core::SrdfGroup& g : srdf.groups) {
    v1::GroupInfo* group = info->add_groups();
    group->set_name(g.name);
    // Groups were checked at load; a group that resolves to nothing lists no joints.
    if (auto moves = robot.GroupActiveIndices(g.name); moves.ok()) {
      for (int32_t i : moves.value()) group->add_joints(robot.active_joint_names()[static_cast<size_t>(i)]);
    }
    for (const auto& [base, tip] : g.chains) {
      group->add_chain_bases(base);
      group->add_chain_tips(tip);
    }
    for (const std::string& j : g.joints) group->add_member_joints(j);
    for (const std::string& l : g.links) group->add_links(l);
    for (const std::string& s : g.subgroups) group->add_subgroups(s);
  }
  for (const core::SrdfEndEffector& e : srdf.end_effectors) {
    v1::EndEffectorInfo* out = info->add_end_effectors();
    out->set_name(e.name);
    out->set_group(e.group);
    out->set_parent_link(e.parent_link);
    out->set_parent_group(e.parent_group);
  }
  for (core::LinkIndex a = 0; a < robot.num_links(); ++a) {
    for (core::LinkIndex b = a + 1; b < robot.num_links(); ++b) {
      const core::AllowedReason reason = robot.AllowedPairReason(a, b);
      if (reason == core::AllowedReason::kNone) continue;
      v1::AllowedPairInfo* pair = info->add_allowed_pairs();
      pair->set_first(robot.link(a).name);
      pair->set_second(robot.link(b).name);
      pair->set_reason(std::string(core::AllowedReasonName(reason)));
      if (reason == core::AllowedReason::kSrdf) pair->set_srdf_reason(robot.SrdfReason(a, b));
    }
  }
  for (const auto& [first, second] : scene.allowed_pairs()) {
    v1::AllowedPairInfo* pair = info->add_allowed_pairs();
    pair->set_first(first);
    pair->set_second(second);
    pair->set_reason("user");
  }
}

}  // namespace proximity::server
