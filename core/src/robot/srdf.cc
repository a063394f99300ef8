// SRDF (MoveIt semantic robot description) parsing with tinyxml2. Names are checked against the URDF
// later, by RobotModel.

#include <algorithm>
#include <tinyxml2.h>

#include <cmath>
#include <cstdlib>

#include "proximity/core/robot/robot_model.h"

namespace proximity::core {
namespace {

std::string Line(const tinyxml2::XMLElement* e) { return " (line " + std::to_string(e->GetLineNum()) + ")"; }

// The attribute's value, or an error naming the element and attribute.
Result<std::string> Required(const tinyxml2::XMLElement* e, const char* attribute, const std::string& source) {
  const char* v = e->Attribute(attribute);
  if (v == nullptr || *v == '\0') {
    return ParseError(source + ": <" + std::string(e->Name()) + ">" + Line(e) + " has no '" + attribute + "' attribute");
  }
  return std::string(v);
}

}  // namespace

Result<Srdf> ParseSrdf(std::string_view xml, const std::string& name) {
  tinyxml2::XMLDocument doc;
  if (doc.Parse(xml.data(), xml.size()) != tinyxml2::XML_SUCCESS) {
    return ParseError(name + ": malformed XML at line " + std::to_string(doc.ErrorLineNum()) + ": " + doc.ErrorStr());
  }
  const tinyxml2::XMLElement* robot = doc.FirstChildElement("robot");
  if (robot == nullptr) return ParseError(name + ": no <robot> element");
  Srdf srdf;
  if (const char* n = robot->Attribute("name")) srdf.robot_name = n;

#define PROX_ASSIGN_REQUIRED(var, element, attribute)           \
  std::string var;                                             \
  {                                                            \
    Result<std::string> r = Required(element, attribute, name); \
    if (!r.ok()) return r.error();                             \
    var = std::move(r).value();                                \
  }

  for (const tinyxml2::XMLElement* e = robot->FirstChildElement(); e != nullptr; e = e->NextSiblingElement()) {
    const std::string tag = e->Name();
    if (tag == "group") {
      PROX_ASSIGN_REQUIRED(group_name, e, "name");
      SrdfGroup group;
      group.name = group_name;
      for (const tinyxml2::XMLElement* m = e->FirstChildElement(); m != nullptr; m = m->NextSiblingElement()) {
        const std::string member = m->Name();
        if (member == "chain") {
          PROX_ASSIGN_REQUIRED(base, m, "base_link");
          PROX_ASSIGN_REQUIRED(tip, m, "tip_link");
          group.chains.emplace_back(base, tip);
        } else if (member == "joint") {
          PROX_ASSIGN_REQUIRED(joint, m, "name");
          group.joints.push_back(joint);
        } else if (member == "link") {
          PROX_ASSIGN_REQUIRED(link, m, "name");
          group.links.push_back(link);
        } else if (member == "group") {
          PROX_ASSIGN_REQUIRED(sub, m, "name");
          group.subgroups.push_back(sub);
        } else if (member == "passive_joint") {
          PROX_ASSIGN_REQUIRED(joint, m, "name");
          srdf.passive_joints.push_back(joint);
        }
      }
      srdf.groups.push_back(std::move(group));
    } else if (tag == "group_state") {
      PROX_ASSIGN_REQUIRED(state_name, e, "name");
      PROX_ASSIGN_REQUIRED(group_name, e, "group");
      SrdfGroupState state{state_name, group_name, {}};
      for (const tinyxml2::XMLElement* j = e->FirstChildElement("joint"); j != nullptr;
           j = j->NextSiblingElement("joint")) {
        PROX_ASSIGN_REQUIRED(joint, j, "name");
        PROX_ASSIGN_REQUIRED(value, j, "value");
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        while (*end == ' ' || *end == '\t') ++end;
        if (end == value.c_str() || *end != '\0') {
          return ParseError(name + ": group_state '" + state_name + "' joint '" + joint + "'" + Line(j) +
                            " has value '" + value + "', which is not one number");
        }
        if (!std::isfinite(v)) {
          return InvalidArgument(name + ": group_state '" + state_name + "' joint '" + joint + "'" + Line(j) +
                                 " has a non-finite value '" + value + "'");
        }
        state.values.emplace_back(joint, v);
      }
      srdf.group_states.push_back(std::move(state));
    } else if (tag == "disable_collisions") {
      PROX_ASSIGN_REQUIRED(link1, e, "link1");
      PROX_ASSIGN_REQUIRED(link2, e, "link2");
      const char* reason = e->Attribute("reason");
      srdf.disabled_collisions.push_back({link1, link2, reason ? reason : ""});
    } else if (tag == "virtual_joint") {
      PROX_ASSIGN_REQUIRED(vj_name, e, "name");
      PROX_ASSIGN_REQUIRED(child, e, "child_link");
      const char* type = e->Attribute("type");
      const char* parent = e->Attribute("parent_frame");
      srdf.virtual_joints.push_back({vj_name, type ? type : "", parent ? parent : "", child});
    } else if (tag == "passive_joint") {
      PROX_ASSIGN_REQUIRED(joint, e, "name");
      srdf.passive_joints.push_back(joint);
    } else if (tag == "end_effector") {
      PROX_ASSIGN_REQUIRED(ee_name, e, "name");
      PROX_ASSIGN_REQUIRED(ee_group, e, "group");
      PROX_ASSIGN_REQUIRED(ee_parent, e, "parent_link");
      const char* parent_group = e->Attribute("parent_group");
      srdf.end_effectors.push_back({ee_name, ee_group, ee_parent, parent_group ? parent_group : ""});
    } else if (tag != "link_sphere_approximation" && tag != "enable_collisions" &&
               tag != "disable_default_collisions" && tag != "joint_property") {
      // Not part of the SRDF format (srdfdom's elements above are read or deliberately unused).
      auto it = std::find_if(srdf.unknown_elements.begin(), srdf.unknown_elements.end(),
                             [&](const auto& u) { return u.first == tag; });
      if (it == srdf.unknown_elements.end()) {
        srdf.unknown_elements.emplace_back(tag, 1);
      } else {
        ++it->second;
      }
    }
  }
#undef PROX_ASSIGN_REQUIRED
  return srdf;
}

}  // namespace proximity::core
