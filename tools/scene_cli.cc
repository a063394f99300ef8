// proximity-scene: answers CLEAR and LINK in process (no gRPC) on proximityd's built-in default scene
// (the KUKA KR5 workcell) and prints JSON. It exists so that tests can compare the daemon's answers with
// the core's on the same states and motions.
//
//   proximity-scene info
//   proximity-scene [--srdf R.srdf] states FILE [--group G]   # one configuration (dof values) per line
//   proximity-scene [--srdf R.srdf] motions FILE [--group G] [--mode certified|discrete] [--resolution R]
//                                                # q0 then q1 (2 * dof values) per line
//   (--group: rows hold the SRDF group's joints, in joint order; the others keep the default configuration)
//   proximity-scene srdf suggest --urdf R.urdf [--package NAME=DIR]... --out R.srdf [--samples N] [--seed S]
//                                                # an SRDF's disabled pairs by sampling (Adjacent, Always,
//                                                # Never), as MoveIt's Setup Assistant makes them
//
// Input files: numbers separated by commas and/or whitespace, one row per line; empty lines, lines
// starting with '#', and a header line of joint names are skipped. Exit 0 on success, 2 on an error
// (message on stderr).
#include <CLI/CLI.hpp>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "proximity/default_scene/default_scene.h"
#include "tools/srdf_suggest.h"

namespace {

namespace pc = proximity::core;

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// A double as JSON: shortest round-trip form, null for non-finite values.
std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string JsonContact(const pc::StateContact& c, const pc::Scene& scene) {
  return "{\"self\": " + std::string(c.self ? "true" : "false") + ", \"robot\": " + JsonString(c.Name(scene)) +
         ", \"other\": " + JsonString(c.OtherName(scene)) + "}";
}

// Reads rows of `width` numbers. Errors name the file and line.
pc::Result<std::vector<std::vector<double>>> ReadRows(const std::string& path, size_t width) {
  std::ifstream in(path);
  if (!in) return pc::NotFound("cannot open '" + path + "'");
  std::vector<std::vector<double>> rows;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    for (char& c : line) {
      if (c == ',' || c == ';') c = ' ';
    }
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    if (std::isalpha(static_cast<unsigned char>(line[first])) || line[first] == '_') {
      if (rows.empty()) continue;  // A header of joint names.
      return pc::ParseError(path + ":" + std::to_string(line_no) + ": not a number: '" + line + "'");
    }
    std::istringstream ss(line);
    std::vector<double> row;
    std::string tok;
    while (ss >> tok) {
      char* end = nullptr;
      const double v = std::strtod(tok.c_str(), &end);
      if (end == tok.c_str() || *end != '\0') {
        return pc::ParseError(path + ":" + std::to_string(line_no) + ": not a number: '" + tok + "'");
      }
      row.push_back(v);
    }
    if (row.size() != width) {
      return pc::InvalidArgument(path + ":" + std::to_string(line_no) + ": " + std::to_string(row.size()) +
                                 " values, expected " + std::to_string(width));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

int Fail(const std::string& message) {
  std::cerr << "proximity-scene: error: " << message << "\n";
  return 2;
}

void PrintInfo(const pc::Scene& scene) {
  const pc::RobotModel& robot = scene.robot();
  std::cout << "{\"robot\": " << JsonString(robot.name()) << ", \"dof\": " << scene.dof() << ",\n \"joint_names\": [";
  for (size_t i = 0; i < robot.active_joint_names().size(); ++i) {
    std::cout << (i ? ", " : "") << JsonString(robot.active_joint_names()[i]);
  }
  std::cout << "],\n \"lower\": [";
  for (size_t i = 0; i < robot.lower_limits().size(); ++i) {
    std::cout << (i ? ", " : "") << JsonNumber(robot.lower_limits()[i]);
  }
  std::cout << "],\n \"upper\": [";
  for (size_t i = 0; i < robot.upper_limits().size(); ++i) {
    std::cout << (i ? ", " : "") << JsonNumber(robot.upper_limits()[i]);
  }
  std::cout << "],\n \"links\": [";
  for (size_t i = 0; i < robot.links().size(); ++i) {
    std::cout << (i ? ", " : "") << JsonString(robot.links()[i].name);
  }
  std::cout << "],\n \"objects\": [";
  for (size_t i = 0; i < scene.objects().size(); ++i) {
    std::cout << (i ? ", " : "") << JsonString(scene.objects()[i].id);
  }
  // SRDF groups with the joints they move, and every link pair left unchecked with its reason.
  std::cout << "],\n \"groups\": {";
  bool first = true;
  for (const pc::SrdfGroup& g : robot.srdf().groups) {
    std::cout << (first ? "" : ", ") << JsonString(g.name) << ": [";
    first = false;
    if (auto members = robot.GroupActiveIndices(g.name); members.ok()) {
      for (size_t k = 0; k < members.value().size(); ++k) {
        std::cout << (k ? ", " : "") << JsonString(robot.active_joint_names()[static_cast<size_t>(members.value()[k])]);
      }
    }
    std::cout << "]";
  }
  std::cout << "},\n \"allowed_pairs\": [";
  first = true;
  for (pc::LinkIndex a = 0; a < robot.num_links(); ++a) {
    for (pc::LinkIndex b = a + 1; b < robot.num_links(); ++b) {
      const pc::AllowedReason why = robot.AllowedPairReason(a, b);
      if (why == pc::AllowedReason::kNone) continue;
      std::cout << (first ? "" : ", ") << "[" << JsonString(robot.link(a).name) << ", " << JsonString(robot.link(b).name)
                << ", " << JsonString(std::string(pc::AllowedReasonName(why))) << ", "
                << JsonString(why == pc::AllowedReason::kSrdf ? robot.SrdfReason(a, b) : "") << "]";
      first = false;
    }
  }
  std::cout << "]}\n";
}

// proximity-scene srdf suggest: samples the robot and writes the SRDF; prints a JSON summary.
int SuggestSrdf(const std::string& urdf, const std::vector<std::string>& packages, const std::string& out_path,
                bool collision_from_visual, const proximity::tools::SrdfSuggestOptions& options) {
  pc::RobotLoadOptions load;
  for (const std::string& p : packages) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == p.size()) {
      return Fail("--package '" + p + "': give NAME=DIR");
    }
    load.package_dirs[p.substr(0, eq)] = p.substr(eq + 1);
  }
  load.collision_from_visual = collision_from_visual;
  auto robot = pc::RobotModel::FromUrdfFile(urdf, "", load);
  if (!robot.ok()) return Fail(robot.error().message);
  for (const std::string& w : robot.value()->warnings()) std::cerr << "proximity-scene: warning: " << w << "\n";
  auto suggestion = proximity::tools::SuggestDisabledCollisions(robot.value(), options);
  if (!suggestion.ok()) return Fail(suggestion.error().message);
  const proximity::tools::SrdfSuggestion& s = suggestion.value();
  const std::string srdf = proximity::tools::SuggestionSrdf(*robot.value(), s, options);
  {
    std::ofstream file(out_path);
    if (!file || !(file << srdf) || !file.flush()) return Fail("cannot write '" + out_path + "'");
  }
  // The loader must accept what was written: the robot with the suggested SRDF.
  if (auto with = pc::RobotModel::FromUrdfFile(urdf, out_path, load); !with.ok()) {
    return Fail("the suggested SRDF does not load: " + with.error().message);
  }
  std::cout << "{\"robot\": " << JsonString(robot.value()->name()) << ", \"out\": " << JsonString(out_path)
            << ", \"states\": " << s.states << ", \"seed\": " << options.seed
            << ", \"free_states\": " << s.free_states << ",\n \"pairs\": [";
  bool first = true;
  for (const proximity::tools::SuggestedPair& p : s.pairs) {
    std::cout << (first ? "\n  " : ",\n  ") << "{\"link1\": " << JsonString(p.link1)
              << ", \"link2\": " << JsonString(p.link2) << ", \"reason\": " << JsonString(p.reason)
              << ", \"collisions\": " << p.collisions << "}";
    first = false;
  }
  std::cout << "]}\n";
  return 0;
}

// The default workcell around --urdf (its visual geometry with --collision-from-visual), with --srdf.
pc::Result<std::shared_ptr<const pc::Scene>> LoadScene(const std::string& urdf, const std::string& srdf_path,
                                                       bool collision_from_visual) {
  auto description = proximity::scenes::DefaultSceneDescription(urdf, collision_from_visual);
  if (!description.ok()) return description.error();
  if (!srdf_path.empty()) {
    // The same robot, loaded as DefaultSceneDescription loads it, with the SRDF.
    pc::RobotLoadOptions load;
    load.package_dirs = proximity::scenes::DefaultScene(urdf).package_dirs;
    load.ros_package_path = "";
    load.collision_from_visual = collision_from_visual;
    auto robot = pc::RobotModel::FromUrdfFile(urdf, srdf_path, load);
    if (!robot.ok()) return robot.error();
    for (const std::string& w : robot.value()->warnings()) std::cerr << "proximity-scene: warning: " << w << "\n";
    description.value().robot = robot.value();
  }
  auto built = pc::Scene::Build(std::move(description).value());
  if (!built.ok()) return built.error();
  return std::shared_ptr<const pc::Scene>(std::move(built).value());
}

// A file's rows as configurations: with --group a row holds the group's joints, the others keep the
// robot's default configuration.
struct Rows {
  std::vector<int32_t> members;  // empty: every joint
  std::vector<double> base;
  size_t dof = 0;                // values a configuration takes in a row
  std::vector<double> Full(std::span<const double> row) const {
    if (members.empty()) return {row.begin(), row.end()};
    std::vector<double> q = base;
    for (size_t k = 0; k < members.size(); ++k) q[static_cast<size_t>(members[k])] = row[k];
    return q;
  }
};

pc::Result<Rows> RowsFor(const pc::Scene& scene, const std::string& group) {
  Rows rows;
  rows.base = scene.robot().DefaultConfiguration();
  if (!group.empty()) {
    auto found = scene.robot().GroupActiveIndices(group);
    if (!found.ok()) return pc::InvalidArgument("--group: " + found.error().message);
    if (found.value().empty()) return pc::InvalidArgument("--group: '" + group + "' moves none of the robot's joints");
    rows.members = std::move(found).value();
  }
  rows.dof = rows.members.empty() ? static_cast<size_t>(scene.dof()) : rows.members.size();
  return rows;
}

// CLEAR(q) for each row of `file`, as JSON on stdout.
int CheckStatesFile(const pc::Scene& scene, const Rows& map, const std::string& file) {
  auto rows = ReadRows(file, map.dof);
  if (!rows.ok()) return Fail(rows.error().message);
  pc::SceneCache cache;
  std::cout << "{\"dof\": " << map.dof << ", \"results\": [\n";
  size_t i = 0;
  for (const auto& row : rows.value()) {
    const pc::Result<pc::StateResult> checked = scene.CheckState(map.Full(row), &cache);
    if (!checked.ok()) return Fail("state " + std::to_string(i) + ": " + checked.status().ToString());
    const pc::StateResult& r = checked.value();
    std::cout << (i ? ",\n" : "") << " {\"free\": " << (r.free ? "true" : "false")
              << ", \"within_limits\": " << (r.within_limits ? "true" : "false")
              << ", \"contact\": " << (r.free ? std::string("null") : JsonContact(r.contact, scene)) << "}";
    ++i;
  }
  std::cout << "\n]}\n";
  return 0;
}

// LINK(q0, q1) for each row of `file` (q0 then q1), as JSON on stdout.
int CheckMotionsFile(const pc::Scene& scene, const Rows& map, const std::string& file, const std::string& mode,
                     double resolution) {
  pc::MotionRequest request;
  request.mode = mode == "discrete" ? pc::MotionRequest::Mode::kDiscrete : pc::MotionRequest::Mode::kCertified;
  request.resolution = resolution;
  auto rows = ReadRows(file, 2 * map.dof);
  if (!rows.ok()) return Fail(rows.error().message);
  pc::SceneCache cache;
  const size_t dof = map.dof;
  std::cout << "{\"dof\": " << dof << ", \"mode\": " << JsonString(mode) << ", \"results\": [\n";
  size_t i = 0;
  for (const auto& row : rows.value()) {
    const std::vector<double> q0 = map.Full({row.data(), dof}), q1 = map.Full({row.data() + dof, dof});
    const pc::Result<pc::MotionResult> checked = scene.CheckMotion(q0, q1, request, &cache);
    if (!checked.ok()) return Fail("motion " + std::to_string(i) + ": " + checked.status().ToString());
    const pc::MotionResult& r = checked.value();
    std::cout << (i ? ",\n" : "") << " {\"free\": " << (r.free ? "true" : "false")
              << ", \"t_free\": " << JsonNumber(r.t_free) << ", \"t_collide\": " << JsonNumber(r.t_collide)
              << ", \"undecided\": " << (r.undecided ? "true" : "false")
              << ", \"contact\": " << (r.free ? std::string("null") : JsonContact(r.contact, scene)) << "}";
    ++i;
  }
  std::cout << "\n]}\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CLEAR and LINK in process on proximityd's built-in default scene, as JSON"};
  app.require_subcommand(1);
  std::string urdf = proximity::scenes::DefaultRobotUrdfPath();
  app.add_option("--urdf", urdf, "The robot URDF of the default workcell")->capture_default_str();
  bool collision_from_visual = false;
  app.add_flag("--collision-from-visual", collision_from_visual,
               "Collide with each link's <visual> geometry (links without one keep their <collision>)");
  std::string srdf_path;
  app.add_option("--srdf", srdf_path, "An SRDF for the robot (groups for --group, disabled pairs)")
      ->check(CLI::ExistingFile);
  std::string group;
  const char* group_help =
      "An SRDF group: each row holds its joints (in the scene's joint order), the others keep the robot's "
      "default configuration";

  auto* info = app.add_subcommand("info", "Robot, joint order and limits, links, objects");
  auto* states = app.add_subcommand("states", "CLEAR(q) for each row of FILE (dof values per row)");
  std::string states_file;
  states->add_option("file", states_file, "Configurations, one per line")->required();
  states->add_option("--group", group, group_help);

  auto* motions = app.add_subcommand("motions", "LINK(q0, q1) for each row of FILE (q0 then q1 per row)");
  std::string motions_file, mode = "certified";
  double resolution = 0.01;
  motions->add_option("file", motions_file, "Motions, one per line")->required();
  motions->add_option("--group", group, group_help);
  motions->add_option("--mode", mode, "certified or discrete")
      ->check(CLI::IsMember({"certified", "discrete"}))
      ->capture_default_str();
  motions->add_option("--resolution", resolution, "Discrete mode: joint-space step (rad / m)")
      ->capture_default_str();

  auto* srdf = app.add_subcommand("srdf", "SRDF tools");
  srdf->require_subcommand(1);
  auto* suggest = srdf->add_subcommand(
      "suggest", "Sample a robot's states and write an SRDF disabling its Adjacent, Always and Never pairs");
  std::string suggest_urdf, suggest_out;
  std::vector<std::string> packages;
  proximity::tools::SrdfSuggestOptions suggest_options;
  suggest->add_option("--urdf", suggest_urdf, "The robot's URDF")->required()->check(CLI::ExistingFile);
  suggest->add_option("--package", packages, "NAME=DIR: where package://NAME/... mesh URIs resolve (repeatable)");
  suggest->add_option("--out", suggest_out, "The SRDF to write")->required();
  suggest->add_option("--samples", suggest_options.samples,
                      "Random states besides the default one (MoveIt's Setup Assistant draws 10,000)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{100'000'000}));
  suggest->add_option("--seed", suggest_options.seed, "Random seed: the same seed gives the same SRDF")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (*suggest) return SuggestSrdf(suggest_urdf, packages, suggest_out, collision_from_visual, suggest_options);
  auto scene = LoadScene(urdf, srdf_path, collision_from_visual);
  if (!scene.ok()) return Fail(scene.error().message);
  if (*info) {
    PrintInfo(*scene.value());
    return 0;
  }
  auto rows = RowsFor(*scene.value(), group);
  if (!rows.ok()) return Fail(rows.error().message);
  if (*states) return CheckStatesFile(*scene.value(), rows.value(), states_file);
  return CheckMotionsFile(*scene.value(), rows.value(), motions_file, mode, resolution);
}
