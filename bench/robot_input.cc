#include "robot_input.h"
#include "robot/robot_motion.h"

#include <tinyxml2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <Eigen/Geometry>

namespace proximity::bench {
namespace {

namespace fs = std::filesystem;
using core::Error;
using core::InvalidArgument;
using core::NotFound;
using core::Result;

Result<std::string> ReadText(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return NotFound(flag + " " + path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) return NotFound(flag + " " + path + ": cannot read it");
  return text.str();
}

std::string Number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v == 0.0 ? 0.0 : v);
  return buf;
}

// URDF's roll-pitch-yaw of R (R = Rz(yaw) * Ry(pitch) * Rx(roll)).
core::Vec3 Rpy(const core::Mat3& R) {
  const double pitch = std::atan2(-R(2, 0), std::hypot(R(0, 0), R(1, 0)));
  if (std::hypot(R(0, 0), R(1, 0)) < 1e-12) {  // Pitch at +-90 degrees: only roll - yaw (or + yaw) is defined.
    return {std::atan2(-R(1, 2), R(1, 1)), pitch, 0.0};
  }
  return {std::atan2(R(2, 1), R(2, 2)), pitch, std::atan2(R(1, 0), R(0, 0))};
}

// The package map of the --package flags; errors name the flag.
Result<std::map<std::string, std::string>> PackageDirs(const std::vector<std::string>& packages) {
  std::map<std::string, std::string> dirs;
  for (const std::string& p : packages) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == p.size()) {
      return InvalidArgument("--package '" + p + "': expected NAME=DIR");
    }
    const std::string name = p.substr(0, eq), dir = p.substr(eq + 1);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return NotFound("--package " + p + ": " + dir + " is not a folder");
    if (!dirs.emplace(name, dir).second) return InvalidArgument("--package " + p + ": package '" + name + "' given twice");
  }
  return dirs;
}

// The movable joints outside `keep` (active indices) with their frozen values, and the mimic joints
// that follow them, in the model's joint order.
std::vector<std::pair<std::string, double>> FrozenJoints(const core::RobotModel& model, const std::vector<int32_t>& keep,
                                                         const std::map<std::string, double>& values) {
  const std::set<int32_t> kept(keep.begin(), keep.end());
  const std::vector<double> defaults = model.DefaultConfiguration();
  std::vector<double> value(defaults.size());
  for (int32_t i = 0; i < model.num_positions(); ++i) {
    const auto it = values.find(model.active_joint_names()[i]);
    value[i] = it != values.end() ? it->second : defaults[i];
  }
  std::vector<std::pair<std::string, double>> frozen;
  for (const core::Joint& j : model.joints()) {
    if (j.is_active() && !kept.contains(j.active_index)) frozen.emplace_back(j.name, value[j.active_index]);
    if (j.is_mimic() && !kept.contains(j.mimic_active_index)) {
      frozen.emplace_back(j.name, j.mimic_multiplier * value[j.mimic_active_index] + j.mimic_offset);
    }
  }
  return frozen;
}

}  // namespace

std::string FileLabel(const std::string& name) {
  std::string out = name.empty() ? "robot" : name;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

Result<std::string> FreezeJoints(const std::string& urdf_xml, const core::RobotModel& model,
                                 const std::vector<std::pair<std::string, double>>& values) {
  tinyxml2::XMLDocument doc;
  if (doc.Parse(urdf_xml.data(), urdf_xml.size()) != tinyxml2::XML_SUCCESS) {
    return core::ParseError(std::string("URDF: malformed XML: ") + doc.ErrorStr());
  }
  tinyxml2::XMLElement* robot = doc.FirstChildElement("robot");
  if (robot == nullptr) return core::ParseError("URDF: no <robot> element");
  std::map<std::string, tinyxml2::XMLElement*> elements;
  for (tinyxml2::XMLElement* e = robot->FirstChildElement("joint"); e != nullptr; e = e->NextSiblingElement("joint")) {
    if (const char* name = e->Attribute("name")) elements[name] = e;
  }
  for (const auto& [name, value] : values) {
    const auto it = elements.find(name);
    const Result<core::JointIndex> index = model.FindJoint(name);
    if (it == elements.end() || !index.ok()) return NotFound("URDF: no joint '" + name + "' to freeze");
    const core::Joint& joint = model.joint(index.value());
    core::RigidTransform motion;
    if (joint.type == core::JointType::kRevolute || joint.type == core::JointType::kContinuous) {
      motion.R = Eigen::AngleAxisd(value, joint.axis_J).toRotationMatrix();
    } else if (joint.type == core::JointType::kPrismatic) {
      motion.p = value * joint.axis_J;
    }
    const core::RigidTransform X = joint.X_PJ * motion;
    tinyxml2::XMLElement* e = it->second;
    e->SetAttribute("type", "fixed");
    while (tinyxml2::XMLElement* mimic = e->FirstChildElement("mimic")) e->DeleteChild(mimic);
    tinyxml2::XMLElement* origin = e->FirstChildElement("origin");
    if (origin == nullptr) origin = e->InsertNewChildElement("origin");
    const core::Vec3 rpy = Rpy(X.R);
    origin->SetAttribute("xyz", (Number(X.p.x()) + " " + Number(X.p.y()) + " " + Number(X.p.z())).c_str());
    origin->SetAttribute("rpy", (Number(rpy.x()) + " " + Number(rpy.y()) + " " + Number(rpy.z())).c_str());
  }
  tinyxml2::XMLPrinter printer;
  doc.Print(&printer);
  return std::string(printer.CStr());
}

Result<LoadedRobot> LoadRobot(const RobotSpec& spec, const std::map<std::string, double>& frozen_values,
                              std::vector<std::string>* warnings) {
  if (spec.urdf.empty()) return InvalidArgument("--robot: no URDF file given");
  Result<std::string> urdf = ReadText(spec.urdf, "--robot");
  if (!urdf.ok()) return urdf.error();
  std::string srdf;
  if (!spec.srdf.empty()) {
    Result<std::string> text = ReadText(spec.srdf, "--srdf");
    if (!text.ok()) return text.error();
    srdf = std::move(text).value();
  }
  if (!spec.group.empty() && spec.srdf.empty()) {
    return InvalidArgument("--group " + spec.group + ": groups are defined in an SRDF; give --srdf too");
  }
  Result<std::map<std::string, std::string>> packages = PackageDirs(spec.packages);
  if (!packages.ok()) return packages.error();

  core::RobotLoadOptions options;
  options.package_dirs = packages.value();
  options.urdf_dir = fs::absolute(fs::path(spec.urdf)).parent_path().string();
  options.mesh_cache = std::make_shared<core::MeshCache>();
  options.collision_from_visual = spec.collision_from_visual;
  const std::string what = "--robot " + spec.urdf;
  auto full = core::RobotModel::FromUrdfString(urdf.value(), srdf, options);
  if (!full.ok()) return Error{full.error().code, what + ": " + full.error().message};
  for (const auto& [name, dir] : options.package_dirs) {
    if (urdf.value().find("package://" + name + "/") == std::string::npos && warnings != nullptr) {
      warnings->push_back("--package " + name + "=" + dir + ": the URDF names no package://" + name + "/ file");
    }
  }
  const core::RobotModel& model = *full.value();
  LoadedRobot out;
  out.group = spec.group;
  if (spec.group.empty()) {
    if (model.num_positions() == 0) {
      return InvalidArgument(what + ": robot '" + model.name() + "' has no movable joint (every joint is fixed)");
    }
    out.model = full.value();
    return out;
  }
  const Result<std::vector<int32_t>> keep = model.GroupActiveIndices(spec.group);
  if (!keep.ok()) return Error{keep.error().code, "--group " + spec.group + ": " + keep.error().message};
  if (keep.value().empty()) {
    return InvalidArgument("--group " + spec.group + ": the group moves no joint of robot '" + model.name() + "'");
  }
  out.frozen = FrozenJoints(model, keep.value(), frozen_values);
  Result<std::string> frozen_urdf = FreezeJoints(urdf.value(), model, out.frozen);
  if (!frozen_urdf.ok()) return Error{frozen_urdf.error().code, what + ": " + frozen_urdf.error().message};
  auto reduced = core::RobotModel::FromUrdfString(frozen_urdf.value(), srdf, options);
  if (!reduced.ok()) {
    return Error{reduced.error().code, what + " with --group " + spec.group + ": " + reduced.error().message};
  }
  out.model = reduced.value();
  return out;
}

core::Result<core::LinkIndex> TipLink(const core::RobotModel& robot, const std::string& tip, const std::string& group) {
  if (!tip.empty()) return robot.FindLink(tip);
  for (const core::SrdfGroup& g : robot.srdf().groups) {
    if (g.name == group && !g.chains.empty()) return robot.FindLink(g.chains.front().second);
  }
  core::LinkIndex best = 0;
  for (core::LinkIndex k = 0; k < robot.num_links(); ++k) {
    if (NumMovingJoints(robot, k) > NumMovingJoints(robot, best)) best = k;
  }
  return best;
}

}  // namespace proximity::bench
