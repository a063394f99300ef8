// MotionBenchMaker scene and request YAML reading with yaml-cpp. The helpers throw a local Failure that
// carries the Error; the public functions catch it (and anything yaml-cpp throws) and return it.

#include "proximity/mbm/mbm.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <regex>
#include <set>
#include <sstream>

namespace proximity::mbm {
using namespace core;  // the types the problems are built into
namespace {

namespace fs = std::filesystem;

struct Failure {
  Error error;
};

// "source:line: where: what", with the line of `at` when it has one.
[[noreturn]] void Fail(const std::string& source, const YAML::Node& at, const std::string& where,
                       const std::string& what) {
  std::string message = source;
  if (at.IsDefined() && at.Mark().line >= 0) message += ":" + std::to_string(at.Mark().line + 1);
  message += ": ";
  if (!where.empty()) message += where + ": ";
  message += what;
  throw Failure{ParseError(std::move(message))};
}

// Where a field is, as "prefix.key" (or "key" when there is no prefix).
std::string Join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// "base[i]".
std::string Indexed(std::string base, size_t i) {
  base += '[';
  base += std::to_string(i);
  base += ']';
  return base;
}

// Reads one document and checks that it is a map.
YAML::Node LoadDocument(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw Failure{ParseError(source + ":" + std::to_string(e.mark.line + 1) + ": malformed YAML: " + e.msg)};
  }
  if (!root.IsMap()) {
    throw Failure{ParseError(source + ": expected a YAML map at the top level")};
  }
  return root;
}

// Parses with `parse`, turning every failure into an Error.
template <class T, class Parse>
Result<T> Guard(const std::string& source, Parse&& parse) {
  try {
    return parse();
  } catch (const Failure& f) {
    return f.error;
  } catch (const std::bad_alloc&) {
    return Error{ErrorCode::kResourceExhausted, "out of memory while reading " + source};
  } catch (const std::exception& e) {
    return ParseError(source + ": " + e.what());
  }
}

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}
  const std::string& source() const { return source_; }

  [[noreturn]] void Fail(const YAML::Node& at, const std::string& where, const std::string& what) const {
    mbm::Fail(source_, at, where, what);
  }

  // The field `key` of the map `parent`; `where` names `parent`.
  YAML::Node Required(const YAML::Node& parent, const std::string& key, const std::string& where) const {
    if (!parent.IsMap()) Fail(parent, where, "expected a map with field '" + key + "'");
    YAML::Node child = parent[key];
    if (!child.IsDefined() || child.IsNull()) Fail(parent, where, "missing field '" + key + "'");
    return child;
  }

  // The field `key` of `parent`, or an undefined node when absent or null.
  static YAML::Node Optional(const YAML::Node& parent, const std::string& key) {
    if (!parent.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    YAML::Node child = parent[key];
    if (!child.IsDefined() || child.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
    return child;
  }

  std::string Text(const YAML::Node& node, const std::string& where) const {
    if (!node.IsScalar()) Fail(node, where, "expected a string");
    return node.Scalar();
  }

  double Number(const YAML::Node& node, const std::string& where) const {
    if (!node.IsScalar()) Fail(node, where, "expected a number");
    double value = 0.0;
    try {
      value = node.as<double>();
    } catch (const YAML::Exception&) {
      Fail(node, where, "expected a number, got '" + node.Scalar() + "'");
    }
    if (!std::isfinite(value)) Fail(node, where, "expected a finite number, got '" + node.Scalar() + "'");
    return value;
  }

  bool Bool(const YAML::Node& node, const std::string& where) const {
    if (!node.IsScalar()) Fail(node, where, "expected true or false");
    try {
      return node.as<bool>();
    } catch (const YAML::Exception&) {
      Fail(node, where, "expected true or false, got '" + node.Scalar() + "'");
    }
  }

  YAML::Node Sequence(const YAML::Node& node, const std::string& where) const {
    if (!node.IsSequence()) Fail(node, where, "expected a list");
    return node;
  }

  std::vector<double> Numbers(const YAML::Node& node, const std::string& where) const {
    Sequence(node, where);
    std::vector<double> out;
    for (size_t i = 0; i < node.size(); ++i) {
      out.push_back(Number(node[i], Indexed(where, i)));
    }
    return out;
  }

  std::vector<std::string> Texts(const YAML::Node& node, const std::string& where) const {
    Sequence(node, where);
    std::vector<std::string> out;
    for (size_t i = 0; i < node.size(); ++i) out.push_back(Text(node[i], Indexed(where, i)));
    return out;
  }

  // A list of `names.size()` numbers, or a map with those fields.
  std::vector<double> Components(const YAML::Node& node, const std::vector<std::string>& names,
                                 const std::string& where) const {
    if (node.IsMap()) {
      std::vector<double> out;
      for (const std::string& n : names) out.push_back(Number(Required(node, n, where), Join(where, n)));
      return out;
    }
    if (!node.IsSequence()) Fail(node, where, "expected a list of " + std::to_string(names.size()) + " numbers");
    std::vector<double> out = Numbers(node, where);
    if (out.size() != names.size()) {
      Fail(node, where, "expected " + std::to_string(names.size()) + " numbers, got " + std::to_string(out.size()));
    }
    return out;
  }

  // A geometry_msgs/Pose: position [x, y, z] and orientation [x, y, z, w] (w last), or their map forms.
  RigidTransform Pose(const YAML::Node& node, const std::string& where) const {
    const std::string p_where = Join(where, "position");
    const std::string q_where = Join(where, "orientation");
    const std::vector<double> p = Components(Required(node, "position", where), {"x", "y", "z"}, p_where);
    const YAML::Node q_node = Required(node, "orientation", where);
    const std::vector<double> q = Components(q_node, {"x", "y", "z", "w"}, q_where);
    const Eigen::Quaterniond quaternion(q[3], q[0], q[1], q[2]);
    const double norm = quaternion.norm();
    if (!(norm >= kMinQuaternionNorm)) {
      std::ostringstream s;
      s << "quaternion [x, y, z, w] = [" << q[0] << ", " << q[1] << ", " << q[2] << ", " << q[3]
        << "] has norm " << norm << "; it cannot be normalised";
      Fail(q_node, q_where, s.str());
    }
    return RigidTransform(quaternion.normalized().toRotationMatrix(), Vec3(p[0], p[1], p[2]));
  }

 private:
  // Below this norm a quaternion is taken to be a mistake rather than an unnormalised rotation.
  static constexpr double kMinQuaternionNorm = 1e-6;
  std::string source_;
};

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A solid primitive's type, by name or by its shape_msgs/SolidPrimitive constant.
MbmShapeType PrimitiveType(const Reader& r, const YAML::Node& node, const std::string& where) {
  const std::string t = Lower(r.Text(node, where));
  if (t == "box" || t == "1") return MbmShapeType::kBox;
  if (t == "sphere" || t == "2") return MbmShapeType::kSphere;
  if (t == "cylinder" || t == "3") return MbmShapeType::kCylinder;
  if (t == "cone" || t == "4") r.Fail(node, where, "cone primitives are not supported");
  r.Fail(node, where, "unknown primitive type '" + node.Scalar() + "' (expected box, cylinder or sphere)");
}

MbmPrimitive Primitive(const Reader& r, const YAML::Node& node, const std::string& where) {
  MbmPrimitive prim;
  prim.type = PrimitiveType(r, r.Required(node, "type", where), Join(where, "type"));
  const std::string d_where = Join(where, "dimensions");
  const YAML::Node d_node = r.Required(node, "dimensions", where);
  prim.dimensions = r.Numbers(d_node, d_where);
  const size_t expected = prim.type == MbmShapeType::kBox ? 3 : prim.type == MbmShapeType::kCylinder ? 2 : 1;
  if (prim.dimensions.size() != expected) {
    const char* meaning = prim.type == MbmShapeType::kBox        ? " [x, y, z]"
                          : prim.type == MbmShapeType::kCylinder ? " [height, radius]"
                                                                 : " [radius]";
    r.Fail(d_node, d_where,
           std::string("a ") + MbmShapeTypeName(prim.type) + " needs " + std::to_string(expected) + " dimensions" +
               meaning + ", got " + std::to_string(prim.dimensions.size()));
  }
  for (size_t i = 0; i < expected; ++i) {
    if (!(prim.dimensions[i] > 0.0)) {
      std::ostringstream s;
      s << "dimension " << i << " is " << prim.dimensions[i] << "; dimensions must be positive";
      r.Fail(d_node[i], Indexed(d_where, i), s.str());
    }
  }
  return prim;
}

bool NonEmpty(const YAML::Node& node) {
  return node.IsDefined() && !node.IsNull() && !(node.IsSequence() && node.size() == 0);
}

MbmCollisionObject CollisionObject(const Reader& r, const YAML::Node& node, size_t index) {
  const std::string at = "world.collision_objects[" + std::to_string(index) + "]";
  MbmCollisionObject object;
  object.id = r.Text(r.Required(node, "id", at), Join(at, "id"));
  const std::string where = "object '" + object.id + "' (" + at + ")";

  if (const YAML::Node header = Reader::Optional(node, "header"); header.IsDefined()) {
    if (const YAML::Node f = Reader::Optional(header, "frame_id"); f.IsDefined()) {
      object.frame_id = r.Text(f, where + ": header.frame_id");
    }
  }
  if (const YAML::Node op = Reader::Optional(node, "operation"); op.IsDefined()) {
    const std::string o = Lower(r.Text(op, where + ": operation"));
    if (o != "0" && o != "add") {
      r.Fail(op, where + ": operation", "only ADD (0) objects are supported, got '" + op.Scalar() + "'");
    }
  }
  for (const char* unsupported : {"meshes", "planes"}) {
    const YAML::Node u = Reader::Optional(node, unsupported);
    if (NonEmpty(u)) {
      r.Fail(u, where + ": " + unsupported,
             std::string(unsupported) + " are not supported (only box, cylinder and sphere primitives)");
    }
  }

  RigidTransform X_RO;
  const YAML::Node pose = Reader::Optional(node, "pose");
  if (pose.IsDefined()) X_RO = r.Pose(pose, where + ": pose");

  const YAML::Node prims = r.Sequence(r.Required(node, "primitives", where), where + ": primitives");
  const YAML::Node poses = r.Sequence(r.Required(node, "primitive_poses", where), where + ": primitive_poses");
  if (prims.size() == 0) r.Fail(prims, where + ": primitives", "the object has no primitives");
  if (poses.size() != prims.size()) {
    r.Fail(poses, where + ": primitive_poses",
           std::to_string(poses.size()) + " poses for " + std::to_string(prims.size()) + " primitives");
  }
  for (size_t i = 0; i < prims.size(); ++i) {
    MbmPrimitive prim = Primitive(r, prims[i], Indexed(where + ": primitives", i));
    const RigidTransform X_OP = r.Pose(poses[i], Indexed(where + ": primitive_poses", i));
    prim.X_RP = pose.IsDefined() ? X_RO * X_OP : X_OP;
    object.primitives.push_back(std::move(prim));
  }
  return object;
}

// allowed_collision_matrix: entry_names and a square, symmetric entry_values whose rows are lists of
// booleans or AllowedCollisionEntry maps {enabled: [...]}.
void CollisionMatrix(const Reader& r, const YAML::Node& node, MbmScene* scene) {
  const std::string where = "allowed_collision_matrix";
  const YAML::Node names_node = r.Required(node, "entry_names", where);
  scene->acm_names = r.Texts(names_node, where + ".entry_names");
  const size_t n = scene->acm_names.size();
  std::set<std::string> seen;
  for (size_t i = 0; i < n; ++i) {
    if (!seen.insert(scene->acm_names[i]).second) {
      r.Fail(names_node[i], where + ".entry_names[" + std::to_string(i) + "]",
             "duplicate name '" + scene->acm_names[i] + "'");
    }
  }
  const YAML::Node values = n == 0 && !Reader::Optional(node, "entry_values").IsDefined()
                                ? YAML::Node(YAML::NodeType::Sequence)
                                : r.Sequence(r.Required(node, "entry_values", where), where + ".entry_values");
  if (values.size() != n) {
    r.Fail(values, where + ".entry_values",
           std::to_string(values.size()) + " rows for " + std::to_string(n) + " entry_names");
  }
  for (size_t i = 0; i < n; ++i) {
    const std::string row_where = where + ".entry_values[" + std::to_string(i) + "]";
    YAML::Node row = values[i];
    if (row.IsMap()) row = r.Required(row, "enabled", row_where);
    r.Sequence(row, row_where);
    if (row.size() != n) {
      r.Fail(row, row_where, std::to_string(row.size()) + " values for " + std::to_string(n) + " entry_names");
    }
    std::vector<bool> out(n);
    for (size_t j = 0; j < n; ++j) out[j] = r.Bool(row[j], Indexed(row_where, j));
    scene->acm_values.push_back(std::move(out));
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (scene->acm_values[i][j] != scene->acm_values[j][i]) {
        r.Fail(values, where + ".entry_values",
               "not symmetric: (" + scene->acm_names[i] + ", " + scene->acm_names[j] + ") differs from (" +
                   scene->acm_names[j] + ", " + scene->acm_names[i] + ")");
      }
      if (scene->acm_values[i][j]) scene->allowed_pairs.emplace_back(scene->acm_names[i], scene->acm_names[j]);
    }
  }
}

MbmScene ParseScene(const std::string& text, const std::string& source) {
  const Reader r(source);
  const YAML::Node root = LoadDocument(text, source);
  MbmScene scene;
  scene.source = source;
  scene.robot_model_name = r.Text(r.Required(root, "robot_model_name", ""), "robot_model_name");
  const YAML::Node world = r.Required(root, "world", "");
  if (const YAML::Node objects = Reader::Optional(world, "collision_objects"); objects.IsDefined()) {
    r.Sequence(objects, "world.collision_objects");
    std::map<std::string, size_t> ids;
    for (size_t i = 0; i < objects.size(); ++i) {
      MbmCollisionObject object = CollisionObject(r, objects[i], i);
      if (auto [it, inserted] = ids.emplace(object.id, i); !inserted) {
        r.Fail(objects[i], "world.collision_objects[" + std::to_string(i) + "].id",
               "duplicate id '" + object.id + "' (also world.collision_objects[" + std::to_string(it->second) + "])");
      }
      scene.objects.push_back(std::move(object));
    }
  }
  if (const YAML::Node acm = Reader::Optional(root, "allowed_collision_matrix"); acm.IsDefined()) {
    CollisionMatrix(r, acm, &scene);
  }
  return scene;
}

MbmGoal Goal(const Reader& r, const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) r.Fail(node, where, "expected a map with field 'joint_constraints'");
  for (const char* other : {"position_constraints", "orientation_constraints", "visibility_constraints"}) {
    const YAML::Node o = Reader::Optional(node, other);
    if (NonEmpty(o)) r.Fail(o, Join(where, other), "only joint constraints are supported");
  }
  const std::string jc_where = Join(where, "joint_constraints");
  const YAML::Node joints = r.Sequence(r.Required(node, "joint_constraints", where), jc_where);
  if (joints.size() == 0) r.Fail(joints, jc_where, "the goal has no joint constraints");
  MbmGoal goal;
  std::set<std::string> seen;
  for (size_t i = 0; i < joints.size(); ++i) {
    const std::string j_where = Indexed(jc_where, i);
    MbmJointConstraint c;
    c.joint_name = r.Text(r.Required(joints[i], "joint_name", j_where), Join(j_where, "joint_name"));
    c.position = r.Number(r.Required(joints[i], "position", j_where), Join(j_where, "position"));
    if (!seen.insert(c.joint_name).second) {
      r.Fail(joints[i], Join(j_where, "joint_name"), "duplicate joint '" + c.joint_name + "'");
    }
    goal.joint_constraints.push_back(std::move(c));
  }
  return goal;
}

MbmRequest ParseRequest(const std::string& text, const std::string& source) {
  const Reader r(source);
  const YAML::Node root = LoadDocument(text, source);
  MbmRequest request;
  request.source = source;
  request.group_name = r.Text(r.Required(root, "group_name", ""), "group_name");
  if (const YAML::Node p = Reader::Optional(root, "planner_id"); p.IsDefined()) {
    request.planner_id = r.Text(p, "planner_id");
  }
  if (const YAML::Node t = Reader::Optional(root, "allowed_planning_time"); t.IsDefined()) {
    request.allowed_planning_time = r.Number(t, "allowed_planning_time");
    if (request.allowed_planning_time < 0.0) r.Fail(t, "allowed_planning_time", "must not be negative");
  }

  const YAML::Node js = r.Required(r.Required(root, "start_state", ""), "joint_state", "start_state");
  const YAML::Node names = r.Required(js, "name", "start_state.joint_state");
  request.start_joint_names = r.Texts(names, "start_state.joint_state.name");
  const YAML::Node positions = r.Required(js, "position", "start_state.joint_state");
  request.start_joint_positions = r.Numbers(positions, "start_state.joint_state.position");
  if (request.start_joint_positions.size() != request.start_joint_names.size()) {
    r.Fail(positions, "start_state.joint_state.position",
           std::to_string(request.start_joint_positions.size()) + " positions for " +
               std::to_string(request.start_joint_names.size()) + " names");
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < request.start_joint_names.size(); ++i) {
    if (!seen.insert(request.start_joint_names[i]).second) {
      r.Fail(names[i], "start_state.joint_state.name[" + std::to_string(i) + "]",
             "duplicate joint '" + request.start_joint_names[i] + "'");
    }
  }

  const YAML::Node goals = r.Sequence(r.Required(root, "goal_constraints", ""), "goal_constraints");
  if (goals.size() == 0) r.Fail(goals, "goal_constraints", "the request has no goal");
  for (size_t i = 0; i < goals.size(); ++i) {
    request.goals.push_back(Goal(r, goals[i], "goal_constraints[" + std::to_string(i) + "]"));
  }
  return request;
}

Result<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return NotFound(path + ": no such file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return NotFound(path + ": read error");
  return ss.str();
}

// sceneNNNN.yaml / requestNNNN.yaml: the kind ("scene" or "request") and the number's digits.
bool ProblemFileName(const std::string& file_name, std::string* kind, std::string* digits) {
  static const std::regex kPattern(R"(^(scene|request)([0-9]+)\.yaml$)");
  std::smatch m;
  if (!std::regex_match(file_name, m, kPattern)) return false;
  *kind = m[1];
  *digits = m[2];
  return true;
}

bool IsFamilyDir(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string kind, digits;
    if (it->is_regular_file(ec) && ProblemFileName(it->path().filename().string(), &kind, &digits)) return true;
  }
  return false;
}

Result<std::vector<MbmProblem>> LoadFamily(const fs::path& dir) {
  // number -> (digits, scene path, request path)
  struct Pair {
    std::string digits, scene, request;
  };
  std::map<long long, Pair> pairs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string kind, digits;
    if (!it->is_regular_file(ec) || !ProblemFileName(it->path().filename().string(), &kind, &digits)) continue;
    if (digits.size() > 9) return ParseError(it->path().string() + ": problem number too long");
    Pair& p = pairs[std::stoll(digits)];
    std::string& slot = kind == "scene" ? p.scene : p.request;
    if (!slot.empty()) {
      return ParseError(it->path().string() + ": same problem number as " + slot);
    }
    slot = it->path().string();
    if (p.digits.empty() || kind == "scene") p.digits = digits;
  }
  if (ec) return NotFound(dir.string() + ": cannot list: " + ec.message());

  std::vector<MbmProblem> problems;
  const std::string folder = dir.filename().string();
  for (const auto& [number, p] : pairs) {
    if (p.request.empty()) return NotFound(p.scene + ": no matching request" + p.digits + ".yaml");
    if (p.scene.empty()) return NotFound(p.request + ": no matching scene" + p.digits + ".yaml");
    Result<MbmScene> scene = LoadMbmScene(p.scene);
    if (!scene.ok()) return scene.error();
    Result<MbmRequest> request = LoadMbmRequest(p.request);
    if (!request.ok()) return request.error();
    MbmProblem problem;
    problem.family = folder;
    const std::string suffix = "_" + scene.value().robot_model_name;
    if (folder.size() > suffix.size() && folder.compare(folder.size() - suffix.size(), suffix.size(), suffix) == 0) {
      problem.family = folder.substr(0, folder.size() - suffix.size());
    }
    problem.index = static_cast<int>(number);
    problem.name = problem.family + "/" + p.digits;
    problem.scene = std::move(scene).value();
    problem.request = std::move(request).value();
    problems.push_back(std::move(problem));
  }
  return problems;
}

// The folder path without trailing separators, so that filename() names the folder.
fs::path Folder(const std::string& path) {
  fs::path p(path);
  while (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
  return p;
}

}  // namespace

const char* MbmShapeTypeName(MbmShapeType type) {
  switch (type) {
    case MbmShapeType::kBox:
      return "box";
    case MbmShapeType::kCylinder:
      return "cylinder";
    case MbmShapeType::kSphere:
      return "sphere";
  }
  return "unknown";
}

Result<MbmScene> LoadMbmSceneFromString(const std::string& text, const std::string& name) {
  return Guard<MbmScene>(name, [&] { return ParseScene(text, name); });
}

Result<MbmScene> LoadMbmScene(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return LoadMbmSceneFromString(text.value(), path);
}

Result<MbmRequest> LoadMbmRequestFromString(const std::string& text, const std::string& name) {
  return Guard<MbmRequest>(name, [&] { return ParseRequest(text, name); });
}

Result<MbmRequest> LoadMbmRequest(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return LoadMbmRequestFromString(text.value(), path);
}

Result<std::vector<std::string>> ListMbmFamilyDirs(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return NotFound(root + ": no such folder");
  std::vector<std::string> dirs;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && IsFamilyDir(it->path())) dirs.push_back(it->path().string());
  }
  if (ec) return NotFound(root + ": cannot list: " + ec.message());
  if (dirs.empty()) return NotFound(root + ": no MotionBenchMaker family folders (with sceneNNNN.yaml files)");
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

Result<std::vector<MbmProblem>> LoadMbmProblems(const std::string& dir_or_family_dir) {
  std::error_code ec;
  if (!fs::is_directory(dir_or_family_dir, ec)) return NotFound(dir_or_family_dir + ": no such folder");
  const fs::path dir = Folder(dir_or_family_dir);
  if (IsFamilyDir(dir)) return LoadFamily(dir);
  Result<std::vector<std::string>> families = ListMbmFamilyDirs(dir_or_family_dir);
  if (!families.ok()) return families.error();
  std::vector<MbmProblem> all;
  for (const std::string& family : families.value()) {
    Result<std::vector<MbmProblem>> problems = LoadFamily(Folder(family));
    if (!problems.ok()) return problems.error();
    for (MbmProblem& p : problems.value()) all.push_back(std::move(p));
  }
  return all;
}

Result<SceneDescription> MbmSceneDescription(const MbmScene& scene, std::shared_ptr<const RobotModel> robot) {
  if (robot == nullptr) return InvalidArgument(scene.source + ": no robot to place the scene around");
  SceneDescription d;
  d.robot = std::move(robot);
  for (const MbmCollisionObject& obj : scene.objects) {
    WorldObject o;
    o.id = obj.id;
    for (const MbmPrimitive& p : obj.primitives) {
      ObjectPart part;
      part.X_WG = p.X_RP;
      switch (p.type) {
        case MbmShapeType::kBox:
          part.geometry.shape = Box{0.5 * Vec3(p.dimensions[0], p.dimensions[1], p.dimensions[2])};
          break;
        case MbmShapeType::kCylinder:
          part.geometry.shape = Cylinder{p.dimensions[1], 0.5 * p.dimensions[0]};
          break;
        case MbmShapeType::kSphere:
          part.geometry.shape = Sphere{Vec3::Zero(), p.dimensions[0]};
          break;
      }
      o.parts.push_back(part);
    }
    d.objects.push_back(std::move(o));
  }
  // Entries naming links or the scene's objects apply to them; any other name is accepted as MoveIt
  // accepts it, and the built scene warns about it (Scene::warnings).
  d.allowed_pairs = scene.allowed_pairs;
  return d;
}

namespace {

// Names as one list: 'a', 'b'.
std::string Quoted(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

// Values for joints the robot lacks are dropped with one warning; values near a limit are clamped to it
// with one warning; `what` says where they came from.
Result<std::vector<double>> Resolve(const std::map<std::string, double>& values, bool require_all,
                                    double tolerance, const std::string& what, const RobotModel& robot,
                                    std::vector<std::string>* warnings) {
  std::vector<std::string> ignored;
  auto q = robot.Configuration(values, require_all, &ignored);
  if (!q.ok()) return Error{q.error().code, what + ": " + q.error().message};
  if (!ignored.empty() && warnings != nullptr) {
    warnings->push_back(what + ": ignored " + std::to_string(ignored.size()) + " value(s) for joint(s) robot '" +
                        robot.name() + "' does not have: " + Quoted(ignored));
  }
  const std::vector<double> given = q.value();
  auto clamped = robot.ClampToLimits(q.value(), tolerance);
  if (!clamped.ok()) return Error{clamped.error().code, what + ": " + clamped.error().message};
  if (!clamped.value().empty() && warnings != nullptr) {
    warnings->push_back(robot.ClampWarning(what, given, q.value(), clamped.value(), tolerance));
  }
  return q;
}

}  // namespace

Result<std::vector<double>> MbmStartConfiguration(const MbmRequest& request, const RobotModel& robot,
                                                  std::vector<std::string>* warnings) {
  std::map<std::string, double> values;
  for (size_t i = 0; i < request.start_joint_names.size(); ++i) {
    values[request.start_joint_names[i]] = request.start_joint_positions[i];
  }
  return Resolve(values, false, kStartBoundsTolerance, request.source + ": start state", robot, warnings);
}

Result<std::vector<double>> MbmGoalConfiguration(const MbmRequest& request, const RobotModel& robot, size_t goal,
                                                 std::vector<std::string>* warnings) {
  if (goal >= request.goals.size()) {
    return InvalidArgument(request.source + ": no goal " + std::to_string(goal) + " (the request has " +
                           std::to_string(request.goals.size()) + ")");
  }
  std::map<std::string, double> values;
  for (const MbmJointConstraint& c : request.goals[goal].joint_constraints) values[c.joint_name] = c.position;
  return Resolve(values, true, kGoalBoundsTolerance, request.source + ": goal " + std::to_string(goal), robot,
                 warnings);
}

}  // namespace proximity::mbm
