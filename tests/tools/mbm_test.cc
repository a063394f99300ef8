// MotionBenchMaker scene/request reading: every problem of the shared data (the 35 extracted ones and all
// 700 from the archive), invariants of the data set, a cross-check against independent readers, and
// errors for broken input.

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "proximity/mbm/mbm.h"

namespace proximity::mbm {
namespace {
using namespace core;

namespace fs = std::filesystem;
using testing::SharedDataDir;

constexpr int kFamilies = 7;

// The Panda problems folder, or "" when the shared data is absent.
std::string ProblemsDir() {
  const std::string data = SharedDataDir();
  if (data.empty()) return "";
  const std::string dir = data + "/scenes/mbm/problems/panda";
  return fs::is_directory(dir) ? dir : "";
}

std::string ReadText(const std::string& path) { return testing::ReadFile(path); }

bool HasCommand(const std::string& name) {
  return std::system(("command -v " + name + " > /dev/null 2>&1").c_str()) == 0;
}

// A fresh folder under the system temporary folder, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("prox_mbm_test_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Totals over a set of problems.
struct Counts {
  int64_t objects = 0;
  int64_t boxes = 0;
  int64_t cylinders = 0;
  int64_t other = 0;
  int min_objects = 1 << 30;
  int max_objects = 0;
  std::map<std::string, int> per_family;
};

// Data-set invariants of one scene, accumulating counts.
void CheckScene(const MbmScene& s, Counts* counts) {
  SCOPED_TRACE(s.source);
  EXPECT_EQ(s.robot_model_name, "panda");
  const int n = static_cast<int>(s.objects.size());
  EXPECT_GE(n, 7);
  EXPECT_LE(n, 21);
  counts->min_objects = std::min(counts->min_objects, n);
  counts->max_objects = std::max(counts->max_objects, n);
  std::set<std::string> ids;
  for (const MbmCollisionObject& o : s.objects) {
    EXPECT_FALSE(o.id.empty());
    EXPECT_TRUE(ids.insert(o.id).second) << o.id;
    EXPECT_EQ(o.frame_id, "");
    EXPECT_EQ(o.primitives.size(), 1u) << o.id;
    ++counts->objects;
    for (const MbmPrimitive& p : o.primitives) {
      if (p.type == MbmShapeType::kBox) {
        ++counts->boxes;
        EXPECT_EQ(p.dimensions.size(), 3u);
      } else if (p.type == MbmShapeType::kCylinder) {
        ++counts->cylinders;
        EXPECT_EQ(p.dimensions.size(), 2u);
      } else {
        ++counts->other;
      }
      for (double d : p.dimensions) {
        EXPECT_TRUE(std::isfinite(d) && d > 0.0 && d < 5.0) << o.id << " " << d;
      }
      EXPECT_TRUE(p.X_RP.p.allFinite()) << o.id;
      EXPECT_LT(p.X_RP.p.norm(), 5.0) << o.id;
      // A unit quaternion gives an orthonormal, right-handed rotation.
      EXPECT_LT((p.X_RP.R.transpose() * p.X_RP.R - Mat3::Identity()).norm(), 1e-12) << o.id;
      EXPECT_NEAR(p.X_RP.R.determinant(), 1.0, 1e-12) << o.id;
      EXPECT_NEAR(Eigen::Quaterniond(p.X_RP.R).norm(), 1.0, 1e-12) << o.id;
    }
  }
  // The allowed-collision matrix: square, symmetric, consistent with the pair list.
  const size_t m = s.acm_names.size();
  EXPECT_EQ(m, 11u);
  ASSERT_EQ(s.acm_values.size(), m);
  size_t allowed = 0;
  for (size_t i = 0; i < m; ++i) {
    ASSERT_EQ(s.acm_values[i].size(), m);
    for (size_t j = 0; j < m; ++j) {
      EXPECT_EQ(s.acm_values[i][j], s.acm_values[j][i]) << s.acm_names[i] << " " << s.acm_names[j];
      if (j > i && s.acm_values[i][j]) ++allowed;
    }
  }
  EXPECT_EQ(s.allowed_pairs.size(), allowed);
  EXPECT_GT(allowed, 0u);
}

// Data-set invariants of one request.
void CheckRequest(const MbmRequest& r) {
  SCOPED_TRACE(r.source);
  EXPECT_EQ(r.group_name, "panda_arm");
  EXPECT_EQ(r.planner_id, "BKPIECEGood");
  EXPECT_EQ(r.allowed_planning_time, 60.0);
  ASSERT_EQ(r.start_joint_names.size(), r.start_joint_positions.size());
  std::map<std::string, double> start;
  for (size_t i = 0; i < r.start_joint_names.size(); ++i) {
    start[r.start_joint_names[i]] = r.start_joint_positions[i];
  }
  for (int j = 1; j <= 7; ++j) EXPECT_EQ(start.count("panda_joint" + std::to_string(j)), 1u) << j;
  for (const char* finger : {"panda_finger_joint1", "panda_finger_joint2"}) {
    ASSERT_EQ(start.count(finger), 1u) << finger;
    EXPECT_EQ(start[finger], 0.065) << finger;
  }
  ASSERT_EQ(r.goals.size(), 1u);
  const std::vector<MbmJointConstraint>& goal = r.goals[0].joint_constraints;
  ASSERT_EQ(goal.size(), 7u);
  std::set<std::string> names;
  for (const MbmJointConstraint& c : goal) {
    names.insert(c.joint_name);
    EXPECT_TRUE(std::isfinite(c.position) && std::abs(c.position) < 2 * M_PI) << c.joint_name;
  }
  std::set<std::string> arm;
  for (int j = 1; j <= 7; ++j) arm.insert("panda_joint" + std::to_string(j));
  EXPECT_EQ(names, arm);
}

// --- An independent line-based reader for the layout of these files. -------------------------------

struct LineObject {
  std::string id;
  std::vector<std::string> types;
  std::vector<std::vector<double>> dims, positions, orientations;
};

struct LineScene {
  std::string robot;
  std::vector<LineObject> objects;
  std::vector<std::string> acm_names;
  std::vector<std::vector<bool>> acm_values;
};

struct LineRequest {
  std::string group;
  std::vector<std::string> start_names;
  std::vector<double> start_positions;
  std::vector<std::pair<std::string, double>> goal;
};

int Indent(const std::string& line) { return static_cast<int>(line.find_first_not_of(' ')); }

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// "key: value" after an optional "- ".
std::pair<std::string, std::string> KeyValue(std::string line) {
  line = Trim(line);
  if (line.rfind("- ", 0) == 0) line = Trim(line.substr(2));
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return {line, ""};
  return {Trim(line.substr(0, colon)), Trim(line.substr(colon + 1))};
}

// "[a, b, c]" as strings.
std::vector<std::string> ListItems(const std::string& v) {
  std::vector<std::string> out;
  EXPECT_TRUE(v.size() >= 2 && v.front() == '[' && v.back() == ']') << v;
  std::stringstream ss(v.substr(1, v.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!Trim(item).empty()) out.push_back(Trim(item));
  }
  return out;
}

double ToDouble(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  EXPECT_EQ(*end, '\0') << s;
  return v;
}

std::vector<double> NumberList(const std::string& v) {
  std::vector<double> out;
  for (const std::string& s : ListItems(v)) out.push_back(ToDouble(s));
  return out;
}

LineScene ReadSceneByLines(const std::string& text) {
  LineScene scene;
  std::stringstream in(text);
  std::string line, top, section;
  while (std::getline(in, line)) {
    if (Trim(line).empty()) continue;
    const int indent = Indent(line);
    const auto [key, value] = KeyValue(line);
    if (indent == 0) {
      top = key;
      if (key == "robot_model_name") scene.robot = value;
      continue;
    }
    if (top == "allowed_collision_matrix") {
      if (key == "entry_names") scene.acm_names = ListItems(value);
      if (Trim(line).rfind("- [", 0) == 0) {
        std::vector<bool> row;
        for (const std::string& s : ListItems(Trim(Trim(line).substr(1)))) row.push_back(s == "true");
        scene.acm_values.push_back(row);
      }
    } else if (top == "world" && indent >= 4) {
      if (indent == 4 && Trim(line).rfind("- ", 0) == 0) scene.objects.emplace_back();
      if (scene.objects.empty()) continue;
      LineObject& o = scene.objects.back();
      if (key == "id") o.id = value;
      if (key == "type") o.types.push_back(value);
      if (key == "dimensions") o.dims.push_back(NumberList(value));
      if (key == "position") o.positions.push_back(NumberList(value));
      if (key == "orientation") o.orientations.push_back(NumberList(value));
    }
  }
  return scene;
}

LineRequest ReadRequestByLines(const std::string& text) {
  LineRequest request;
  std::stringstream in(text);
  std::string line, top, level2;
  while (std::getline(in, line)) {
    if (Trim(line).empty()) continue;
    const int indent = Indent(line);
    const auto [key, value] = KeyValue(line);
    if (indent == 0) {
      top = key;
      if (key == "group_name") request.group = value;
      continue;
    }
    if (top == "start_state") {
      if (indent == 2) level2 = key;
      if (indent == 4 && level2 == "joint_state" && key == "name") request.start_names = ListItems(value);
      if (indent == 4 && level2 == "joint_state" && key == "position") request.start_positions = NumberList(value);
    } else if (top == "goal_constraints" && indent >= 6) {
      if (indent == 6 && Trim(line).rfind("- ", 0) == 0) request.goal.emplace_back();
      if (request.goal.empty()) continue;
      if (key == "joint_name") request.goal.back().first = value;
      if (key == "position") request.goal.back().second = ToDouble(value);
    }
  }
  return request;
}

// The rotation the loader documents for a file quaternion [x, y, z, w].
Mat3 Rotation(const std::vector<double>& q) {
  return Eigen::Quaterniond(q[3], q[0], q[1], q[2]).normalized().toRotationMatrix();
}

void CompareScene(const MbmScene& s, const LineScene& l) {
  SCOPED_TRACE(s.source);
  EXPECT_EQ(s.robot_model_name, l.robot);
  ASSERT_EQ(s.objects.size(), l.objects.size());
  for (size_t i = 0; i < l.objects.size(); ++i) {
    const MbmCollisionObject& o = s.objects[i];
    const LineObject& lo = l.objects[i];
    EXPECT_EQ(o.id, lo.id);
    ASSERT_EQ(o.primitives.size(), lo.types.size()) << o.id;
    ASSERT_EQ(lo.dims.size(), lo.types.size());
    ASSERT_EQ(lo.positions.size(), lo.types.size());
    ASSERT_EQ(lo.orientations.size(), lo.types.size());
    for (size_t k = 0; k < lo.types.size(); ++k) {
      const MbmPrimitive& p = o.primitives[k];
      EXPECT_EQ(MbmShapeTypeName(p.type), lo.types[k]) << o.id;
      EXPECT_EQ(p.dimensions, lo.dims[k]) << o.id;
      ASSERT_EQ(lo.positions[k].size(), 3u);
      ASSERT_EQ(lo.orientations[k].size(), 4u);
      EXPECT_EQ(p.X_RP.p, Vec3(lo.positions[k][0], lo.positions[k][1], lo.positions[k][2])) << o.id;
      EXPECT_EQ(p.X_RP.R, Rotation(lo.orientations[k])) << o.id;
    }
  }
  EXPECT_EQ(s.acm_names, l.acm_names);
  EXPECT_EQ(s.acm_values, l.acm_values);
}

void CompareRequest(const MbmRequest& r, const LineRequest& l) {
  SCOPED_TRACE(r.source);
  EXPECT_EQ(r.group_name, l.group);
  EXPECT_EQ(r.start_joint_names, l.start_names);
  EXPECT_EQ(r.start_joint_positions, l.start_positions);
  ASSERT_EQ(r.goals.size(), 1u);
  ASSERT_EQ(r.goals[0].joint_constraints.size(), l.goal.size());
  for (size_t i = 0; i < l.goal.size(); ++i) {
    EXPECT_EQ(r.goals[0].joint_constraints[i].joint_name, l.goal[i].first);
    EXPECT_EQ(r.goals[0].joint_constraints[i].position, l.goal[i].second);
  }
}

// --- The shared data. ----------------------------------------------------------------------------------

TEST(MbmTest, ListsTheSevenFamilies) {
  const std::string dir = ProblemsDir();
  PROX_REQUIRE_DIR(dir, "scenes/mbm/problems/panda");
  auto families = ListMbmFamilyDirs(dir);
  ASSERT_TRUE(families.ok()) << families.error().message;
  std::vector<std::string> names;
  for (const std::string& f : families.value()) names.push_back(fs::path(f).filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"bookshelf_small_panda", "bookshelf_tall_panda", "bookshelf_thin_panda",
                                             "box_panda", "cage_panda", "table_pick_panda",
                                             "table_under_pick_panda"}));
}

TEST(MbmTest, ParsesTheExtractedProblems) {
  const std::string dir = ProblemsDir();
  PROX_REQUIRE_DIR(dir, "scenes/mbm/problems/panda");
  auto problems = LoadMbmProblems(dir);
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  ASSERT_EQ(problems.value().size(), 35u);
  Counts counts;
  for (const MbmProblem& p : problems.value()) {
    CheckScene(p.scene, &counts);
    CheckRequest(p.request);
    ++counts.per_family[p.family];
    EXPECT_GE(p.index, 1);
    EXPECT_LE(p.index, 5);
    char expected[64];
    std::snprintf(expected, sizeof expected, "%s/%04d", p.family.c_str(), p.index);
    EXPECT_EQ(p.name, expected);
  }
  EXPECT_EQ(counts.per_family.size(), static_cast<size_t>(kFamilies));
  for (const auto& [family, n] : counts.per_family) EXPECT_EQ(n, 5) << family;
  EXPECT_EQ(problems.value().front().name, "bookshelf_small/0001");
  EXPECT_EQ(problems.value().back().name, "table_under_pick/0005");
  EXPECT_EQ(counts.other, 0);

  // One family folder on its own, with or without a trailing slash.
  for (const std::string& family_dir : {dir + "/box_panda", dir + "/box_panda/"}) {
    auto box = LoadMbmProblems(family_dir);
    ASSERT_TRUE(box.ok()) << box.error().message;
    ASSERT_EQ(box.value().size(), 5u);
    EXPECT_EQ(box.value()[0].name, "box/0001");
    EXPECT_EQ(box.value()[4].name, "box/0005");
    EXPECT_EQ(box.value()[2].scene.source, dir + "/box_panda/scene0003.yaml");
  }
}

TEST(MbmTest, KnownValuesOfBoxScene0001) {
  const std::string dir = ProblemsDir();
  PROX_REQUIRE_DIR(dir, "scenes/mbm/problems/panda");
  auto s = LoadMbmScene(dir + "/box_panda/scene0001.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s.value().objects.size(), 7u);
  const MbmCollisionObject& can = s.value().objects[0];
  EXPECT_EQ(can.id, "Can1");
  ASSERT_EQ(can.primitives.size(), 1u);
  EXPECT_EQ(can.primitives[0].type, MbmShapeType::kCylinder);
  EXPECT_EQ(can.primitives[0].dimensions, (std::vector<double>{0.14, 0.03}));
  EXPECT_EQ(can.primitives[0].X_RP.p, Vec3(0.5408380884576693, 0.3580155146897772, -0.3762264457751537));
  // A rotation about z by 2 * asin(0.07406844364750122).
  const double angle = 2 * std::atan2(0.07406844364750122, 0.9972531602635496);
  EXPECT_TRUE(can.primitives[0].X_RP.R.isApprox(Eigen::AngleAxisd(angle, Vec3::UnitZ()).toRotationMatrix(), 1e-14));
  EXPECT_EQ(s.value().objects[1].id, "base");
  EXPECT_EQ(s.value().objects[1].primitives[0].dimensions, (std::vector<double>{0.7, 0.7, 0.04}));
  EXPECT_EQ(s.value().acm_names.front(), "panda_hand");
  EXPECT_EQ(s.value().allowed_pairs.front(), (std::pair<std::string, std::string>{"panda_hand", "panda_leftfinger"}));

  auto r = LoadMbmRequest(dir + "/box_panda/request0001.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().start_joint_positions,
            (std::vector<double>{0, -0.785, 0, -2.356, 0, 1.571, 0.785, 0.065, 0.065}));
  EXPECT_EQ(r.value().goals[0].joint_constraints[2].joint_name, "panda_joint3");
  EXPECT_EQ(r.value().goals[0].joint_constraints[2].position, 0.1941262264518609);
}

TEST(MbmTest, MatchesLineBasedReaderOnExtractedFiles) {
  const std::string dir = ProblemsDir();
  PROX_REQUIRE_DIR(dir, "scenes/mbm/problems/panda");
  auto problems = LoadMbmProblems(dir);
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  for (const MbmProblem& p : problems.value()) {
    CompareScene(p.scene, ReadSceneByLines(ReadText(p.scene.source)));
    CompareRequest(p.request, ReadRequestByLines(ReadText(p.request.source)));
  }
}

// PyYAML's reading of the 35 extracted problems, as text lines of repr()-exact numbers.
TEST(MbmTest, MatchesPyYamlOnExtractedFiles) {
  const std::string dir = ProblemsDir();
  PROX_REQUIRE_DIR(dir, "scenes/mbm/problems/panda");
  if (std::system("/usr/bin/python3 -c 'import yaml' > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with the yaml module is not available; the line-based cross-check still runs";
  }
  const std::string script = R"PY(
import glob, sys, yaml
root = sys.argv[1]
f = lambda v: repr(float(v))
for path in sorted(glob.glob(root + '/*_panda/scene*.yaml')):
    d = yaml.safe_load(open(path))
    print('scene', path, d['robot_model_name'], len(d['world']['collision_objects']))
    for o in d['world']['collision_objects']:
        for prim, pose in zip(o['primitives'], o['primitive_poses']):
            print('prim', o['id'], prim['type'], len(prim['dimensions']), *map(f, prim['dimensions']),
                  *map(f, pose['position']), *map(f, pose['orientation']))
    a = d['allowed_collision_matrix']
    print('acm', len(a['entry_names']), *a['entry_names'], *[int(v) for row in a['entry_values'] for v in row])
for path in sorted(glob.glob(root + '/*_panda/request*.yaml')):
    d = yaml.safe_load(open(path))
    js = d['start_state']['joint_state']
    print('request', path, d['group_name'], d['planner_id'], f(d['allowed_planning_time']), len(js['name']),
          *[x for n, p in zip(js['name'], js['position']) for x in (n, f(p))])
    jc = d['goal_constraints'][0]['joint_constraints']
    print('goal', len(jc), *[x for c in jc for x in (c['joint_name'], f(c['position']))])
)PY";
  TempDir tmp;
  const fs::path script_path = tmp.path() / "dump.py";
  WriteText(script_path, script);
  const std::string command = "/usr/bin/python3 " + script_path.string() + " '" + dir + "'";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  ASSERT_EQ(::pclose(pipe), 0) << "python3 failed";

  std::istringstream lines(out);
  std::string line;
  int scenes = 0, requests = 0;
  Result<MbmScene> scene = ParseError("none");
  Result<MbmRequest> request = ParseError("none");
  size_t object = 0;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string kind;
    in >> kind;
    auto next_double = [&in] {
      std::string s;
      in >> s;
      return ToDouble(s);
    };
    if (kind == "scene") {
      std::string path, robot;
      size_t n = 0;
      in >> path >> robot >> n;
      scene = LoadMbmScene(path);
      ASSERT_TRUE(scene.ok()) << scene.error().message;
      EXPECT_EQ(scene.value().robot_model_name, robot);
      EXPECT_EQ(scene.value().objects.size(), n) << path;
      object = 0;
      ++scenes;
    } else if (kind == "prim") {
      ASSERT_LT(object, scene.value().objects.size());
      const MbmCollisionObject& o = scene.value().objects[object++];
      std::string id, type;
      size_t n = 0;
      in >> id >> type >> n;
      EXPECT_EQ(o.id, id);
      ASSERT_EQ(o.primitives.size(), 1u);
      const MbmPrimitive& p = o.primitives[0];
      EXPECT_EQ(MbmShapeTypeName(p.type), type);
      std::vector<double> dims(n), pos(3), quat(4);
      for (double& d : dims) d = next_double();
      for (double& d : pos) d = next_double();
      for (double& d : quat) d = next_double();
      EXPECT_EQ(p.dimensions, dims) << id;
      EXPECT_EQ(p.X_RP.p, Vec3(pos[0], pos[1], pos[2])) << id;
      EXPECT_EQ(p.X_RP.R, Rotation(quat)) << id;
    } else if (kind == "acm") {
      size_t n = 0;
      in >> n;
      std::vector<std::string> names(n);
      for (std::string& s : names) in >> s;
      EXPECT_EQ(scene.value().acm_names, names);
      std::vector<std::vector<bool>> values(n, std::vector<bool>(n));
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < n; ++j) {
          int v = 0;
          in >> v;
          values[i][j] = v != 0;
        }
      }
      EXPECT_EQ(scene.value().acm_values, values);
    } else if (kind == "request") {
      std::string path, group, planner;
      in >> path >> group >> planner;
      request = LoadMbmRequest(path);
      ASSERT_TRUE(request.ok()) << request.error().message;
      const MbmRequest& r = request.value();
      EXPECT_EQ(r.group_name, group);
      EXPECT_EQ(r.planner_id, planner);
      EXPECT_EQ(r.allowed_planning_time, next_double());
      size_t n = 0;
      in >> n;
      ASSERT_EQ(r.start_joint_names.size(), n);
      for (size_t i = 0; i < n; ++i) {
        std::string name;
        in >> name;
        EXPECT_EQ(r.start_joint_names[i], name);
        EXPECT_EQ(r.start_joint_positions[i], next_double()) << name;
      }
      ++requests;
    } else if (kind == "goal") {
      size_t n = 0;
      in >> n;
      const std::vector<MbmJointConstraint>& goal = request.value().goals[0].joint_constraints;
      ASSERT_EQ(goal.size(), n);
      for (size_t i = 0; i < n; ++i) {
        std::string name;
        in >> name;
        EXPECT_EQ(goal[i].joint_name, name);
        EXPECT_EQ(goal[i].position, next_double()) << name;
      }
    } else {
      FAIL() << "unexpected line: " << line;
    }
  }
  EXPECT_EQ(scenes, 35);
  EXPECT_EQ(requests, 35);
}

TEST(MbmTest, ParsesAllSevenHundredProblemsOfTheArchive) {
  const std::string dir = ProblemsDir();
  PROX_REQUIRE_DIR(dir, "scenes/mbm/problems/panda");
  const std::string archive = dir + "/problems.tar.bz2";
  if (!fs::is_regular_file(archive)) GTEST_SKIP() << archive << " is not present; this test needs it";
  if (!HasCommand("tar") || !HasCommand("bzip2")) {
    GTEST_SKIP() << "tar and bzip2 are needed to extract " << archive;
  }
  TempDir tmp;
  const std::string command = "tar -xjf '" + archive + "' -C '" + tmp.path().string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const std::string root = (tmp.path() / "problems").string();

  auto families = ListMbmFamilyDirs(root);
  ASSERT_TRUE(families.ok()) << families.error().message;
  EXPECT_EQ(families.value().size(), static_cast<size_t>(kFamilies));

  auto problems = LoadMbmProblems(root);
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  ASSERT_EQ(problems.value().size(), 700u);
  Counts counts;
  std::set<std::string> names;
  for (const MbmProblem& p : problems.value()) {
    CheckScene(p.scene, &counts);
    CheckRequest(p.request);
    ++counts.per_family[p.family];
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_GE(p.index, 1);
    EXPECT_LE(p.index, 100);
    // The independent reader agrees on every file of the archive, too.
    CompareScene(p.scene, ReadSceneByLines(ReadText(p.scene.source)));
    CompareRequest(p.request, ReadRequestByLines(ReadText(p.request.source)));
  }
  EXPECT_EQ(counts.per_family.size(), static_cast<size_t>(kFamilies));
  for (const auto& [family, n] : counts.per_family) EXPECT_EQ(n, 100) << family;
  // The totals the data README states.
  EXPECT_EQ(counts.boxes, 5500);
  EXPECT_EQ(counts.cylinders, 2700);
  EXPECT_EQ(counts.other, 0);
  EXPECT_EQ(counts.objects, 8200);
  EXPECT_EQ(counts.min_objects, 7);
  EXPECT_EQ(counts.max_objects, 21);

  // The extracted problems are the archive's first five of each family.
  auto extracted = LoadMbmProblems(dir);
  ASSERT_TRUE(extracted.ok()) << extracted.error().message;
  std::map<std::string, const MbmProblem*> by_name;
  for (const MbmProblem& p : problems.value()) by_name[p.name] = &p;
  for (const MbmProblem& e : extracted.value()) {
    ASSERT_EQ(by_name.count(e.name), 1u) << e.name;
    const MbmProblem& a = *by_name[e.name];
    EXPECT_EQ(ReadText(a.scene.source), ReadText(e.scene.source)) << e.name;
    EXPECT_EQ(ReadText(a.request.source), ReadText(e.request.source)) << e.name;
  }
}

// --- Broken and unusual input. -------------------------------------------------------------------------

const char* const kScene = R"(robot_model_name: panda
world:
  collision_objects:
    - id: Can1
      primitives:
        - type: cylinder
          dimensions: [0.14, 0.03]
      primitive_poses:
        - position: [1, 2, 3]
          orientation: [0, 0, 0, 1]
    - id: shelf
      primitive_poses:
        - orientation: [0, 0, 0.7071067811865476, 0.7071067811865476]
          position: [0.5, 0, 0.2]
      primitives:
        - type: box
          dimensions: [0.4, 0.3, 0.02]
allowed_collision_matrix:
  entry_names: [a, b, c]
  entry_values:
    - [false, true, false]
    - [true, false, true]
    - [false, true, false]
)";

const char* const kRequest = R"(group_name: panda_arm
planner_id: RRTConnect
allowed_planning_time: 5
start_state:
  joint_state:
    name: [j1, j2]
    position: [0.5, -1]
goal_constraints:
  - joint_constraints:
      - joint_name: j1
        position: 0.25
      - position: 1.5
        joint_name: j2
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The scene with one replacement must fail with a message containing every one of `needles`.
void ExpectSceneError(const std::string& text, std::initializer_list<const char*> needles) {
  auto r = LoadMbmSceneFromString(text, "bad.yaml");
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.error().code, ErrorCode::kParseError);
  EXPECT_NE(r.error().message.find("bad.yaml"), std::string::npos) << r.error().message;
  for (const char* n : needles) EXPECT_NE(r.error().message.find(n), std::string::npos) << r.error().message;
}

void ExpectRequestError(const std::string& text, std::initializer_list<const char*> needles) {
  auto r = LoadMbmRequestFromString(text, "bad_request.yaml");
  ASSERT_FALSE(r.ok()) << text;
  EXPECT_EQ(r.error().code, ErrorCode::kParseError);
  EXPECT_NE(r.error().message.find("bad_request.yaml"), std::string::npos) << r.error().message;
  for (const char* n : needles) EXPECT_NE(r.error().message.find(n), std::string::npos) << r.error().message;
}

TEST(MbmTest, ReadsTheFixtures) {
  auto s = LoadMbmSceneFromString(kScene, "fixture.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s.value().source, "fixture.yaml");
  ASSERT_EQ(s.value().objects.size(), 2u);
  const MbmPrimitive& shelf = s.value().objects[1].primitives[0];
  EXPECT_EQ(shelf.type, MbmShapeType::kBox);
  EXPECT_TRUE(shelf.X_RP.R.isApprox(Eigen::AngleAxisd(M_PI / 2, Vec3::UnitZ()).toRotationMatrix(), 1e-15));
  EXPECT_EQ(s.value().allowed_pairs,
            (std::vector<std::pair<std::string, std::string>>{{"a", "b"}, {"b", "c"}}));

  auto r = LoadMbmRequestFromString(kRequest, "fixture_request.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().planner_id, "RRTConnect");
  EXPECT_EQ(r.value().allowed_planning_time, 5.0);
  EXPECT_EQ(r.value().start_joint_names, (std::vector<std::string>{"j1", "j2"}));
  EXPECT_EQ(r.value().start_joint_positions, (std::vector<double>{0.5, -1.0}));
  ASSERT_EQ(r.value().goals.size(), 1u);
  EXPECT_EQ(r.value().goals[0].joint_constraints[1].joint_name, "j2");
  EXPECT_EQ(r.value().goals[0].joint_constraints[1].position, 1.5);

  // Optional request fields.
  std::string minimal = Replace(Replace(kRequest, "planner_id: RRTConnect\n", ""), "allowed_planning_time: 5\n", "");
  auto m = LoadMbmRequestFromString(minimal);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m.value().planner_id, "");
  EXPECT_EQ(m.value().allowed_planning_time, 0.0);
}

TEST(MbmTest, ObjectPoseMakesPrimitivePosesRelative) {
  // MoveIt's rule: with an object pose X_RO, primitive poses are X_OP and X_RP = X_RO * X_OP. Map forms of
  // position and orientation are accepted too; an unnormalised quaternion is normalised.
  const std::string text = R"(robot_model_name: r
world:
  collision_objects:
    - id: two
      pose:
        position: {x: 1, y: 0, z: 0}
        orientation: {x: 0, y: 0, z: 1, w: 1}
      primitives:
        - {type: box, dimensions: [1, 2, 3]}
        - {type: sphere, dimensions: [0.5]}
      primitive_poses:
        - {position: [0, 0, 0], orientation: [0, 0, 0, 2]}
        - {position: [1, 0, 0], orientation: [0, 0, 0, 1]}
)";
  auto s = LoadMbmSceneFromString(text);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s.value().objects.size(), 1u);
  const MbmCollisionObject& o = s.value().objects[0];
  ASSERT_EQ(o.primitives.size(), 2u);
  EXPECT_EQ(o.primitives[1].type, MbmShapeType::kSphere);
  const Mat3 Rz90 = Eigen::AngleAxisd(M_PI / 2, Vec3::UnitZ()).toRotationMatrix();
  EXPECT_TRUE(o.primitives[0].X_RP.R.isApprox(Rz90, 1e-15));
  EXPECT_TRUE(o.primitives[0].X_RP.p.isApprox(Vec3(1, 0, 0), 1e-15));
  // The second primitive sits 1 m along the object's x axis, which points along the root's y.
  EXPECT_TRUE(o.primitives[1].X_RP.p.isApprox(Vec3(1, 1, 0), 1e-15));
  EXPECT_TRUE(o.primitives[1].X_RP.R.isApprox(Rz90, 1e-15));
  EXPECT_TRUE(s.value().acm_names.empty());
  EXPECT_TRUE(s.value().allowed_pairs.empty());
}

// Problems as they come (MoveIt's rules): start-state entries for joints the robot lacks are ignored
// with one warning naming them; values within the start (0.05) and goal (1e-4) tolerances of a limit
// are clamped to it with one warning; values further out, and non-finite values, are refused.
TEST(MbmTest, StartsAndGoalsAreReadAsMoveItReadsThem) {
  // planar_2link: shoulder in [-3, 3], elbow in [-2.5, 2.5].
  auto robot = RobotModel::FromUrdfFile(testing::TestDataDir() + "/robots/planar_2link.urdf");
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  const auto request = [](const std::string& start_names, const std::string& start_values, double goal_shoulder) {
    char goal[64];
    std::snprintf(goal, sizeof goal, "%.17g", goal_shoulder);
    return LoadMbmRequestFromString(R"(group_name: arm
start_state:
  joint_state:
    name: )" + start_names + R"(
    position: )" + start_values + R"(
goal_constraints:
  - joint_constraints:
      - {joint_name: shoulder, position: )" + goal + R"(}
      - {joint_name: elbow, position: 1}
      - {joint_name: wheel_left, position: 4}
)", "r.yaml").value();
  };
  std::vector<std::string> warnings;
  const MbmRequest r = request("[wheel_left, shoulder, wheel_right, elbow]", "[7, 3.03, 8, -0.5]", 3.00003);
  auto start = MbmStartConfiguration(r, *robot.value(), &warnings);
  ASSERT_TRUE(start.ok()) << start.error().message;
  EXPECT_EQ(start.value(), (std::vector<double>{3.0, -0.5}));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("ignored 2 value(s)"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("'wheel_left', 'wheel_right'"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("clamped joint 'shoulder' from 3.03 to 3"), std::string::npos) << warnings[1];
  warnings.clear();
  auto goal = MbmGoalConfiguration(r, *robot.value(), 0, &warnings);
  ASSERT_TRUE(goal.ok()) << goal.error().message;
  EXPECT_EQ(goal.value(), (std::vector<double>{3.0, 1.0}));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("'wheel_left'"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("joint 'shoulder' from 3.00003 to 3"), std::string::npos) << warnings[1];
  // Values within the limits give no warning.
  warnings.clear();
  const MbmRequest inside = request("[shoulder, elbow]", "[1, 2]", -2.0);
  EXPECT_EQ(MbmStartConfiguration(inside, *robot.value(), &warnings).value(), (std::vector<double>{1.0, 2.0}));
  EXPECT_TRUE(warnings.empty()) << warnings[0];
  // Beyond the tolerances: refused, naming the joint, the value and the limits.
  auto far_start = MbmStartConfiguration(request("[shoulder, elbow]", "[0, 2.56]", 0.0), *robot.value());
  ASSERT_FALSE(far_start.ok());
  EXPECT_NE(far_start.error().message.find("'elbow'"), std::string::npos) << far_start.error().message;
  EXPECT_NE(far_start.error().message.find("2.56"), std::string::npos) << far_start.error().message;
  EXPECT_NE(far_start.error().message.find("[-2.5, 2.5]"), std::string::npos) << far_start.error().message;
  auto far_goal = MbmGoalConfiguration(request("[shoulder, elbow]", "[0, 0]", -3.0002), *robot.value());
  ASSERT_FALSE(far_goal.ok());
  EXPECT_NE(far_goal.error().message.find("'shoulder'"), std::string::npos) << far_goal.error().message;
  // A goal must still constrain every joint the robot has.
  MbmRequest partial = inside;
  partial.goals[0].joint_constraints.erase(partial.goals[0].joint_constraints.begin() + 1);
  auto missing = MbmGoalConfiguration(partial, *robot.value());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("'elbow'"), std::string::npos) << missing.error().message;
}

// MoveIt's rule for the allowed-collision matrix: entries naming the scene's objects apply to them, and
// a name that is neither a link nor an object (matrices often list objects of other scenes) is accepted
// and ignored, with one warning naming it.
TEST(MbmTest, CollisionMatrixEntriesNamingObjectsApplyAndUnknownNamesWarn) {
  auto robot = RobotModel::FromUrdfFile(testing::TestDataDir() + "/robots/planar_2link.urdf");
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  // A block around the middle of the upper link (which lies along x at z = 0.1 when q = 0).
  const std::string world = R"(robot_model_name: planar_2link
world:
  collision_objects:
    - id: block
      primitives:
        - {type: box, dimensions: [0.2, 0.3, 0.3]}
      primitive_poses:
        - {position: [0.5, 0, 0.1], orientation: [0, 0, 0, 1]}
)";
  const std::string acm = R"(allowed_collision_matrix:
  entry_names: [upper, block, ghost, phantom]
  entry_values:
    - [false, true, true, false]
    - [true, false, false, false]
    - [true, false, false, true]
    - [false, false, true, false]
)";
  const std::vector<double> q = {0.0, 0.0};
  SceneCache cache;
  StateResult r;

  auto without = LoadMbmSceneFromString(world, "without.yaml");
  ASSERT_TRUE(without.ok()) << without.error().message;
  auto d0 = MbmSceneDescription(without.value(), robot.value());
  ASSERT_TRUE(d0.ok()) << d0.error().message;
  auto s0 = Scene::Build(d0.value());
  ASSERT_TRUE(s0.ok()) << s0.error().message;
  PROX_ASSERT_OK_AND_ASSIGN(r, s0.value()->CheckState(q, &cache));
  EXPECT_FALSE(r.free) << "the block collides with the upper link";
  EXPECT_TRUE(s0.value()->warnings().empty());

  auto with = LoadMbmSceneFromString(world + acm, "with.yaml");
  ASSERT_TRUE(with.ok()) << with.error().message;
  auto d1 = MbmSceneDescription(with.value(), robot.value());
  ASSERT_TRUE(d1.ok()) << d1.error().message;
  auto s1 = Scene::Build(d1.value());
  ASSERT_TRUE(s1.ok()) << s1.error().message;
  PROX_ASSERT_OK_AND_ASSIGN(r, s1.value()->CheckState(q, &cache));
  EXPECT_TRUE(r.free) << "the matrix allows (upper, block): " << r.contact.Describe(*s1.value());
  ASSERT_EQ(s1.value()->warnings().size(), 1u) << "one warning for all unknown names";
  const std::string& w = s1.value()->warnings()[0];
  EXPECT_NE(w.find("'ghost'"), std::string::npos) << w;
  EXPECT_NE(w.find("'phantom'"), std::string::npos) << w;
  EXPECT_EQ(w.find("'block'"), std::string::npos) << w;
  // The lower link is still checked against the block: rotated onto it, it collides.
  const std::vector<double> folded = {0.0, M_PI};
  PROX_ASSERT_OK_AND_ASSIGN(r, s1.value()->CheckState(folded, &cache));
  EXPECT_FALSE(r.free) << "the matrix allows only (upper, block)";
}

TEST(MbmTest, MissingFilesAndFolders) {
  auto s = LoadMbmScene("/nonexistent/scene0001.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kNotFound);
  EXPECT_NE(s.error().message.find("/nonexistent/scene0001.yaml"), std::string::npos);
  auto r = LoadMbmRequest("/nonexistent/request0001.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(LoadMbmProblems("/nonexistent").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(ListMbmFamilyDirs("/nonexistent").error().code, ErrorCode::kNotFound);

  TempDir tmp;
  EXPECT_EQ(LoadMbmProblems(tmp.path().string()).error().code, ErrorCode::kNotFound);  // Empty folder.
  // A family with a scene but not its request, and with a request but not its scene.
  const fs::path family = tmp.path() / "box_panda";
  fs::create_directories(family);
  WriteText(family / "scene0001.yaml", kScene);
  WriteText(family / "request0001.yaml", kRequest);
  WriteText(family / "scene0002.yaml", kScene);
  auto p = LoadMbmProblems(tmp.path().string());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, ErrorCode::kNotFound);
  EXPECT_NE(p.error().message.find("scene0002.yaml"), std::string::npos) << p.error().message;
  EXPECT_NE(p.error().message.find("request0002.yaml"), std::string::npos) << p.error().message;
  fs::rename(family / "scene0002.yaml", family / "request0003.yaml");
  p = LoadMbmProblems(family.string());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("scene0003.yaml"), std::string::npos) << p.error().message;
  fs::remove(family / "request0003.yaml");
  // Now complete: the family name drops the "_<robot_model_name>" suffix.
  p = LoadMbmProblems(tmp.path().string());
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p.value().size(), 1u);
  EXPECT_EQ(p.value()[0].name, "box/0001");
  // A broken file inside a family is reported with its path.
  WriteText(family / "scene0004.yaml", "world: [");
  WriteText(family / "request0004.yaml", kRequest);
  p = LoadMbmProblems(tmp.path().string());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("scene0004.yaml"), std::string::npos) << p.error().message;
}

TEST(MbmTest, SceneErrorsNameFileObjectAndField) {
  ExpectSceneError("world: [unclosed", {"malformed YAML"});
  ExpectSceneError("- just\n- a list\n", {"top level"});
  ExpectSceneError("", {"top level"});
  ExpectSceneError(Replace(kScene, "robot_model_name: panda\n", ""), {"robot_model_name"});
  ExpectSceneError(Replace(kScene, "world:\n  collision_objects:", "wrld:\n  collision_objects:"), {"'world'"});
  ExpectSceneError(Replace(kScene, "- id: Can1", "- ident: Can1"), {"world.collision_objects[0]", "'id'"});
  ExpectSceneError(Replace(kScene, "dimensions: [0.14, 0.03]", "dimensions: [0.14, abc]"),
                   {"Can1", "dimensions[1]", "abc"});
  ExpectSceneError(Replace(kScene, "dimensions: [0.14, 0.03]", "dimensions: [0.14]"),
                   {"Can1", "dimensions", "[height, radius]", "got 1"});
  ExpectSceneError(Replace(kScene, "dimensions: [0.4, 0.3, 0.02]", "dimensions: [0.4, 0.3]"),
                   {"shelf", "world.collision_objects[1]", "dimensions", "got 2"});
  ExpectSceneError(Replace(kScene, "dimensions: [0.4, 0.3, 0.02]", "dimensions: [0.4, 0, 0.02]"),
                   {"shelf", "dimensions[1]", "positive"});
  ExpectSceneError(Replace(kScene, "dimensions: [0.14, 0.03]", "dimensions: [0.14, -0.03]"), {"Can1", "positive"});
  ExpectSceneError(Replace(kScene, "dimensions: [0.14, 0.03]", "dimensions: [.nan, 0.03]"), {"Can1", "finite"});
  ExpectSceneError(Replace(kScene, "dimensions: [0.14, 0.03]", "dimensions: 0.14"), {"Can1", "dimensions", "list"});
  ExpectSceneError(Replace(kScene, "          dimensions: [0.14, 0.03]\n", ""), {"Can1", "'dimensions'"});
  ExpectSceneError(Replace(kScene, "orientation: [0, 0, 0, 1]", "orientation: [0, 0, 0, 0]"),
                   {"Can1", "primitive_poses[0].orientation", "norm 0"});
  ExpectSceneError(Replace(kScene, "orientation: [0, 0, 0, 1]", "orientation: [0, 0, 0, .inf]"),
                   {"Can1", "orientation[3]", "finite"});
  ExpectSceneError(Replace(kScene, "orientation: [0, 0, 0, 1]", "orientation: [0, 0, 1]"),
                   {"Can1", "orientation", "4 numbers"});
  ExpectSceneError(Replace(kScene, "position: [1, 2, 3]", "position: [1, 2, x]"), {"Can1", "position[2]"});
  ExpectSceneError(Replace(kScene, "        - position: [1, 2, 3]\n          orientation: [0, 0, 0, 1]\n", ""),
                   {"Can1", "missing field 'primitive_poses'"});
  ExpectSceneError(Replace(kScene, "primitive_poses:\n        - position: [1, 2, 3]\n          orientation: [0, 0, 0, 1]\n",
                           "primitive_poses: []\n"),
                   {"Can1", "primitive_poses", "0 poses for 1 primitives"});
  ExpectSceneError(Replace(kScene, "type: cylinder", "type: torus"), {"Can1", "primitives[0].type", "torus"});
  ExpectSceneError(Replace(kScene, "type: cylinder", "type: cone"), {"Can1", "cone"});
  ExpectSceneError(Replace(kScene, "- id: shelf", "- id: Can1"), {"duplicate id 'Can1'"});
  ExpectSceneError(Replace(kScene, "    - id: Can1\n", "    - id: Can1\n      operation: 1\n"), {"Can1", "operation"});
  // Meshes and planes are rejected, not skipped: a missing obstacle would make checks optimistic.
  ExpectSceneError(
      Replace(kScene, "    - id: Can1\n", "    - id: Can1\n      meshes:\n        - {triangles: [], vertices: []}\n"),
      {"Can1", "meshes", "not supported"});
  ExpectSceneError(Replace(kScene, "    - id: shelf\n", "    - id: shelf\n      planes: [{coef: [0, 0, 1, 0]}]\n"),
                   {"shelf", "planes", "not supported"});
  // The allowed-collision matrix.
  ExpectSceneError(Replace(kScene, "    - [false, true, false]\n    - [true, false, true]",
                           "    - [false, true, false]\n    - [true, false]"),
                   {"allowed_collision_matrix.entry_values[1]", "2 values for 3"});
  ExpectSceneError(Replace(kScene, "    - [false, true, false]\n    - [true", "    - [true"),
                   {"entry_values", "2 rows for 3"});
  ExpectSceneError(Replace(kScene, "    - [true, false, true]", "    - [false, false, true]"),
                   {"entry_values", "not symmetric", "(a, b)"});
  ExpectSceneError(Replace(kScene, "    - [true, false, true]", "    - [true, maybe, true]"),
                   {"entry_values[1][1]", "maybe"});
  ExpectSceneError(Replace(kScene, "entry_names: [a, b, c]", "entry_names: [a, b, a]"), {"duplicate name 'a'"});
  ExpectSceneError(Replace(kScene, "  entry_names: [a, b, c]\n", ""), {"allowed_collision_matrix", "entry_names"});
}

TEST(MbmTest, ErrorsCarryLineNumbers) {
  auto r = LoadMbmSceneFromString(Replace(kScene, "dimensions: [0.14, 0.03]", "dimensions: [0.14]"), "bad.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("bad.yaml:7: ", 0), 0u) << r.error().message;
}

TEST(MbmTest, RequestErrorsNameTheField) {
  ExpectRequestError("group_name: [", {"malformed YAML"});
  ExpectRequestError(Replace(kRequest, "group_name: panda_arm\n", ""), {"'group_name'"});
  ExpectRequestError(Replace(kRequest, "allowed_planning_time: 5", "allowed_planning_time: soon"),
                     {"allowed_planning_time", "soon"});
  ExpectRequestError(Replace(kRequest, "allowed_planning_time: 5", "allowed_planning_time: -1"),
                     {"allowed_planning_time", "negative"});
  ExpectRequestError(Replace(kRequest, "start_state:", "begin_state:"), {"'start_state'"});
  ExpectRequestError(Replace(kRequest, "    position: [0.5, -1]\n", ""), {"start_state.joint_state", "'position'"});
  ExpectRequestError(Replace(kRequest, "position: [0.5, -1]", "position: [0.5]"),
                     {"start_state.joint_state.position", "1 positions for 2 names"});
  ExpectRequestError(Replace(kRequest, "position: [0.5, -1]", "position: [0.5, one]"),
                     {"start_state.joint_state.position[1]", "one"});
  ExpectRequestError(Replace(kRequest, "name: [j1, j2]", "name: [j1, j1]"), {"duplicate joint 'j1'"});
  ExpectRequestError(Replace(kRequest, "goal_constraints:", "goals:"), {"'goal_constraints'"});
  ExpectRequestError(Replace(kRequest, "        position: 0.25\n", ""),
                     {"goal_constraints[0].joint_constraints[0]", "'position'"});
  ExpectRequestError(Replace(kRequest, "position: 0.25", "position: [0.25]"),
                     {"goal_constraints[0].joint_constraints[0].position", "number"});
  ExpectRequestError(Replace(kRequest, "joint_name: j1", "joint_name: j2"), {"duplicate joint 'j2'"});
  ExpectRequestError(
      Replace(kRequest, "  - joint_constraints:", "  - position_constraints: [{link_name: hand}]\n    joint_constraints:"),
      {"goal_constraints[0].position_constraints", "only joint constraints"});
  std::string no_goal = kRequest;
  no_goal = no_goal.substr(0, no_goal.find("goal_constraints:")) + "goal_constraints: []\n";
  ExpectRequestError(no_goal, {"goal_constraints", "no goal"});
}

TEST(MbmTest, DamagedFilesNeverCrash) {
  // Every truncation and random byte damage of a real scene and request either parses or reports an error.
  const std::string dir = ProblemsDir();
  std::vector<std::pair<std::string, bool>> texts = {{kScene, true}, {kRequest, false}};
  if (!dir.empty()) {
    texts.emplace_back(ReadText(dir + "/cage_panda/scene0002.yaml"), true);
    texts.emplace_back(ReadText(dir + "/cage_panda/request0002.yaml"), false);
  }
  std::mt19937_64 rng(7);
  int errors = 0;
  for (const auto& [text, is_scene] : texts) {
    auto parse = [is_scene = is_scene, &errors](const std::string& t) {
      const bool ok = is_scene ? LoadMbmSceneFromString(t, "damaged").ok() : LoadMbmRequestFromString(t, "damaged").ok();
      if (!ok) ++errors;
    };
    const size_t step = std::max<size_t>(1, text.size() / static_cast<size_t>(testing::Cases(200)));
    for (size_t cut = 0; cut < text.size(); cut += step) parse(text.substr(0, cut));
    const std::string noise = "[]{}:,-#&*!|>'\"%@` \n\t0.e";
    for (int i = 0; i < testing::Cases(300); ++i) {
      std::string t = text;
      for (int k = 0; k < 3; ++k) {
        t[std::uniform_int_distribution<size_t>(0, t.size() - 1)(rng)] =
            noise[std::uniform_int_distribution<size_t>(0, noise.size() - 1)(rng)];
      }
      parse(t);
    }
  }
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace proximity::mbm

namespace proximity::mbm {
namespace {
using namespace core;

// End to end: every start and goal state of the 700 problems is free with the robot the problems
// were made with, through the reader, the robot model, the scene and the primitive queries. As a
// positive control, the same goal collides once a 2 cm box is put at the hand.
TEST(MbmScene, AllSevenHundredStartsAndGoalsAreFreeWithMbmPanda) {
  const std::string dir = ProblemsDir();
  PROX_REQUIRE_DIR(dir, "scenes/mbm/problems/panda");
  const std::string archive = dir + "/problems.tar.bz2";
  if (!fs::is_regular_file(archive)) GTEST_SKIP() << archive << " is not present; this test needs it";
  if (!HasCommand("tar") || !HasCommand("bzip2")) GTEST_SKIP() << "tar and bzip2 are needed to extract " << archive;
  TempDir tmp;
  const std::string command = "tar -xjf '" + archive + "' -C '" + tmp.path().string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  auto problems = LoadMbmProblems((tmp.path() / "problems").string());
  ASSERT_TRUE(problems.ok()) << problems.error().message;

  const auto robot = LoadMbmPanda();
  ASSERT_NE(robot, nullptr);
  const auto hand = robot->FindLink("panda_hand");
  ASSERT_TRUE(hand.ok());

  SceneCache cache;
  int checked = 0;
  // Every problem in the optimized build; under a sanitizer every 20th (each builds a scene).
  const size_t step = testing::kSanitizedSlowdown == 1 ? 1 : 20;
  for (size_t k = 0; k < problems.value().size(); k += step) {
    const MbmProblem& p = problems.value()[k];
    auto description = MbmSceneDescription(p.scene, robot);
    ASSERT_TRUE(description.ok()) << p.name << ": " << description.error().message;
    auto scene = Scene::Build(description.value());
    ASSERT_TRUE(scene.ok()) << p.name << ": " << scene.error().message;
    const auto start = MbmStartConfiguration(p.request, *robot);
    const auto goal = MbmGoalConfiguration(p.request, *robot);
    ASSERT_TRUE(start.ok()) << p.name << ": " << start.error().message;
    ASSERT_TRUE(goal.ok()) << p.name << ": " << goal.error().message;
    for (const auto* q : {&start.value(), &goal.value()}) {
      StateResult r;
      PROX_ASSERT_OK_AND_ASSIGN(r, scene.value()->CheckState(*q, &cache));
      EXPECT_TRUE(r.free) << p.name << (q == &start.value() ? " start: " : " goal: ")
                          << r.contact.Describe(*scene.value());
      EXPECT_TRUE(r.within_limits) << p.name;
    }
    // Positive control: a probe at the hand at the goal.
    SceneDescription probed = description.value();
    ObjectPart probe;
    probe.geometry.shape = Box{Vec3::Constant(0.01)};
    probe.X_WG = cache.link_poses()[hand.value()];
    probed.objects.push_back({"probe", {probe}});
    auto probed_scene = Scene::Build(probed);
    ASSERT_TRUE(probed_scene.ok()) << probed_scene.error().message;
    StateResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, probed_scene.value()->CheckState(goal.value(), &cache));
    EXPECT_FALSE(r.free) << p.name << ": the probe at the hand was not found";
    if (!r.free) {
      EXPECT_EQ(probed_scene.value()->objects()[r.contact.object].id, "probe") << r.contact.Describe(*probed_scene.value());
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>((problems.value().size() + step - 1) / step));
}

}  // namespace
}  // namespace proximity::mbm

namespace proximity::mbm {
namespace {
using namespace core;

// Links that do not move along a segment (the fixed base) have a motion bound of 0; their pairs are
// decided by the state at q0 and must never leave an edge undecided. MBM box/0002 has a wall whose
// bounding box overlaps the base link's.
TEST(MbmScene, CertifiedLinkDecidesEdgesNearTheFixedBase) {
  const std::string dir = ProblemsDir();
  PROX_REQUIRE_DIR(dir, "scenes/mbm/problems/panda");
  auto problems = LoadMbmProblems(dir + "/box_panda");
  ASSERT_TRUE(problems.ok()) << problems.error().message;
  const auto robot = LoadMbmPanda();
  ASSERT_NE(robot, nullptr);
  SceneCache cache;
  int edges = 0;
  for (const MbmProblem& p : problems.value()) {
    auto scene = Scene::Build(MbmSceneDescription(p.scene, robot).value()).value();
    const auto start = MbmStartConfiguration(p.request, *robot).value();
    const auto goal = MbmGoalConfiguration(p.request, *robot).value();
    // Short edges out of the start and goal along each joint: free or not, never undecided.
    for (const auto* from : {&start, &goal}) {
      for (size_t j = 0; j < from->size(); ++j) {
        auto to = *from;
        to[j] = std::clamp(to[j] + 0.1, robot->lower_limits()[j], robot->upper_limits()[j]);
        MotionResult m;
        PROX_ASSERT_OK_AND_ASSIGN(m, scene->CheckMotion(*from, to, {}, &cache));
        EXPECT_FALSE(m.undecided) << p.name << " joint " << j;
        ++edges;
      }
    }
  }
  EXPECT_EQ(edges, 5 * 2 * 7);
}

}  // namespace
}  // namespace proximity::mbm
