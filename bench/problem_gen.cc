#include "problem_gen.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <numbers>
#include <set>
#include <span>
#include <sstream>

#include <Eigen/Geometry>

#include "bench_util.h"
#include "proximity/core/scene/scene.h"
#include "proximity/mbm/mbm.h"
#include "bvh/bvh.h"
#include "robot/robot_motion.h"

namespace proximity::bench {
namespace {

namespace fs = std::filesystem;
using core::Mat3;
using core::Result;
using core::RigidTransform;
using core::RobotModel;
using core::Scene;
using core::Vec3;
using mbm::MbmShapeType;

constexpr double kPi = std::numbers::pi;
// Written values are rounded: lengths to 0.1 mm, joint values and quaternion components to 1e-6.
constexpr double kLengthScale = 1e4;
constexpr double kUnitScale = 1e6;
// Tries before giving up: random states per start or goal, workcells per problem.
constexpr int kStateTries = 300;
constexpr int kWorkcellTries = 40;
// A goal lies at least this fraction of the joint space's diagonal away from its start.
constexpr double kMinGoalDistance = 0.2;
// The tree that proves a goal reachable: random states drawn, nodes kept at most, and its step as a
// fraction of the least goal distance.
constexpr int kTreeSamples = 1500;
constexpr size_t kTreeNodes = 300;
constexpr double kTreeStep = 0.5;
// Tree nodes nearest a goal whose straight lines to it are tried.
constexpr size_t kConnectTries = 5;

// ---- Numbers and YAML text ----------------------------------------------------------------------

double Round(double v, double scale) {
  const double r = std::round(v * scale) / scale;
  return r == 0.0 ? 0.0 : r;  // No "-0".
}

// The shortest decimal that reads back as exactly v (fixed notation: YAML 1.1 readers take "1e-04" for
// a string).
std::string Num(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v == 0.0 ? 0.0 : v, std::chars_format::fixed);
  return ec == std::errc() ? std::string(buf, end) : std::string("0");
}

std::string NumList(std::span<const double> v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Num(v[i]);
  return out + "]";
}

// A YAML scalar: plain when it is a simple name that no reader takes for a number, boolean or null;
// double-quoted otherwise.
std::string Yaml(const std::string& s) {
  static const std::set<std::string> kSpecial = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"};
  bool plain = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
  for (char c : s) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.');
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (plain && !kSpecial.contains(lower)) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\x%02x", static_cast<unsigned char>(c));
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string NameList(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + Yaml(names[i]);
  return out + "]";
}

// ---- Robot queries (kept few, each in one helper) ---------------------------------------------------

// Link poses at q with the root at the identity; false when the model refuses q.
bool LinkPoses(const RobotModel& robot, std::span<const double> q, std::vector<RigidTransform>* X_WL) {
  auto poses = robot.ForwardKinematics(q);
  if (!poses.ok()) return false;
  *X_WL = std::move(poses).value();
  return true;
}

// CLEAR(q): true when q is free; otherwise names the contact in *contact when given.
bool StateFree(const Scene& scene, std::span<const double> q, core::SceneCache* cache,
               std::string* contact = nullptr) {
  const auto r = scene.CheckState(q, cache);
  if (!r.ok()) return false;
  if (!r.value().free && contact != nullptr) *contact = r.value().contact.Describe(scene);
  return r.value().free;
}

// The certified check of the straight segment q0 -> q1, stopping at the first colliding state it finds.
Result<core::MotionResult> CheckLine(const Scene& scene, std::span<const double> q0, std::span<const double> q1,
                                     core::SceneCache* cache) {
  core::MotionRequest request;
  request.narrow_collision = false;
  request.prepass_resolution = 0.05;
  return scene.CheckMotion(q0, q1, request, cache);
}

// Whether the straight segment q0 -> q1 holds a colliding state (an undecided graze does not count).
bool LineCollides(const Scene& scene, std::span<const double> q0, std::span<const double> q1,
                  core::SceneCache* cache) {
  const auto m = CheckLine(scene, q0, q1, cache);
  return m.ok() && !m.value().free && !m.value().undecided && !m.value().stopped;
}

// Whether the certified check finds the straight segment q0 -> q1 free.
bool LineFree(const Scene& scene, std::span<const double> q0, std::span<const double> q1, core::SceneCache* cache) {
  const auto m = CheckLine(scene, q0, q1, cache);
  return m.ok() && m.value().free;
}

// ---- Sampling ---------------------------------------------------------------------------------------

double Uniform(std::mt19937_64& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

int UniformInt(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

double LowerLimit(const RobotModel& robot, int32_t i) {
  const double lo = robot.lower_limits()[i];
  return std::isfinite(lo) ? lo : -kPi;
}

double UpperLimit(const RobotModel& robot, int32_t i) {
  const double hi = robot.upper_limits()[i];
  return std::isfinite(hi) ? hi : kPi;
}

// q rounded as written, kept within the limits.
void RoundWithinLimits(const RobotModel& robot, std::vector<double>* q) {
  for (int32_t i = 0; i < robot.num_positions(); ++i) {
    const double lo = LowerLimit(robot, i), hi = UpperLimit(robot, i);
    double& v = (*q)[static_cast<size_t>(i)];
    v = Round(v, kUnitScale);
    if (v > hi) v = std::floor(hi * kUnitScale) / kUnitScale;
    if (v < lo) v = std::ceil(lo * kUnitScale) / kUnitScale;
  }
}

// A uniform configuration within the limits (continuous joints in [-pi, pi]), rounded as written.
std::vector<double> SampleConfiguration(const RobotModel& robot, std::mt19937_64& rng) {
  std::vector<double> q(static_cast<size_t>(robot.num_positions()));
  for (int32_t i = 0; i < robot.num_positions(); ++i) {
    q[static_cast<size_t>(i)] = Uniform(rng, LowerLimit(robot, i), UpperLimit(robot, i));
  }
  RoundWithinLimits(robot, &q);
  return q;
}

double JointSpaceDiagonal(const RobotModel& robot) {
  double d2 = 0.0;
  for (int32_t i = 0; i < robot.num_positions(); ++i) {
    const double range = UpperLimit(robot, i) - LowerLimit(robot, i);
    d2 += range * range;
  }
  return std::sqrt(d2);
}

double Distance(std::span<const double> a, std::span<const double> b) {
  double d2 = 0.0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(d2);
}

// A generator for problem `index` (or another stream, `stream`) of a run seeded with `seed`.
std::mt19937_64 Stream(uint64_t seed, uint32_t stream, uint32_t index) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), stream, index};
  return std::mt19937_64(seq);
}

// ---- Workspace --------------------------------------------------------------------------------------

struct BoundingSphere {
  core::LinkIndex link = 0;
  Vec3 p_L = Vec3::Zero();  // Centre in the link frame.
  double radius = 0.0;
};

BoundingSphere GeometrySphere(core::LinkIndex link, const core::LinkGeometry& g) {
  BoundingSphere s{link, g.X_LG.p, 0.0};
  switch (g.type) {
    case core::ShapeType::kBox:
      s.radius = 0.5 * g.box_size.norm();
      break;
    case core::ShapeType::kCylinder:
      s.radius = std::hypot(g.radius, 0.5 * g.length);
      break;
    case core::ShapeType::kSphere:
      s.radius = g.radius;
      break;
    case core::ShapeType::kMesh: {
      const auto& vertices = g.mesh->mesh().vertices;
      Vec3 lo = Vec3::Constant(1e300), hi = Vec3::Constant(-1e300);
      for (const Vec3& v : vertices) {
        lo = lo.cwiseMin(v);
        hi = hi.cwiseMax(v);
      }
      const Vec3 c = vertices.empty() ? Vec3::Zero() : Vec3(0.5 * (lo + hi));
      for (const Vec3& v : vertices) s.radius = std::max(s.radius, (v - c).norm());
      s.p_L = g.X_LG * c;
      break;
    }
  }
  return s;
}

// ---- Workcells --------------------------------------------------------------------------------------

// One primitive of a workcell, as the file gives it: MoveIt's dimensions and a pose in the root frame.
struct Primitive {
  std::string id;
  MbmShapeType type = MbmShapeType::kBox;
  std::vector<double> dimensions;  // box [x, y, z]; cylinder [height, radius]; sphere [radius].
  Mat3 R = Mat3::Identity();
  Vec3 p = Vec3::Zero();
};

// Distance from point x to the solid primitive (0 inside).
double PointDistance(const Primitive& prim, const Vec3& x) {
  const Vec3 local = prim.R.transpose() * (x - prim.p);
  switch (prim.type) {
    case MbmShapeType::kBox: {
      const Vec3 half(0.5 * prim.dimensions[0], 0.5 * prim.dimensions[1], 0.5 * prim.dimensions[2]);
      return (local.cwiseAbs() - half).cwiseMax(0.0).norm();
    }
    case MbmShapeType::kCylinder: {
      const double radial = std::max(0.0, std::hypot(local.x(), local.y()) - prim.dimensions[1]);
      const double axial = std::max(0.0, std::abs(local.z()) - 0.5 * prim.dimensions[0]);
      return std::hypot(radial, axial);
    }
    case MbmShapeType::kSphere:
      return std::max(0.0, local.norm() - prim.dimensions[0]);
  }
  return 0.0;
}

// The frame workcells are laid out in: the workspace's origin, `up`, and a horizontal direction
// `toward` at azimuth phi with `side` = up x toward.
struct Layout {
  Vec3 o, up, toward, side;
  Mat3 Upright() const {
    Mat3 R;
    R.col(0) = toward;
    R.col(1) = side;
    R.col(2) = up;
    return R;
  }
  Vec3 At(double along, double across, double height) const { return o + along * toward + across * side + height * up; }
};

Layout MakeLayout(const Workspace& ws, double phi) {
  const Vec3 u = ws.up;
  const Vec3 helper = std::abs(u.x()) < 0.9 ? Vec3::UnitX() : Vec3::UnitY();
  const Vec3 e1 = (helper - u * u.dot(helper)).normalized();
  const Vec3 e2 = u.cross(e1);
  Layout l{ws.origin, u, std::cos(phi) * e1 + std::sin(phi) * e2, Vec3::Zero()};
  l.side = u.cross(l.toward);
  return l;
}

Mat3 Yaw(const Layout& l, double angle) {
  return Eigen::AngleAxisd(angle, l.up).toRotationMatrix() * l.Upright();
}

// Builds workcells of one family for one workspace.
class WorkcellMaker {
 public:
  WorkcellMaker(const Workspace& ws, std::mt19937_64& rng) : ws_(ws), rng_(rng), R_(ws.reach) {
    // Nothing comes closer to the origin than the base's sphere and a margin; the near edge of tables
    // and shelves lies a little beyond it.
    keep_out_ = ws.base_radius + 0.02 * R_;
    near_ = std::min(ws.base_radius + 0.06 * R_, 0.6 * R_);
  }

  std::vector<Primitive> Make(const std::string& family) {
    prims_.clear();
    if (family == "table") {
      Table();
    } else if (family == "shelf") {
      Shelf();
    } else {
      Clutter();
    }
    return prims_;
  }

 private:
  // Within reach, clear of the base, and clear of every part of a fixed body around the arm.
  bool Placeable(const Primitive& p) const {
    const double d = PointDistance(p, ws_.origin);
    if (d < keep_out_ || d > 0.9 * R_) return false;
    return std::all_of(ws_.fixed_body.begin(), ws_.fixed_body.end(), [&](const std::pair<Vec3, double>& b) {
      return PointDistance(p, b.first) >= b.second + 0.02 * R_;
    });
  }

  Primitive Box(const std::string& id, double x, double y, double z, const Mat3& R, const Vec3& p) const {
    return {id, MbmShapeType::kBox, {Len(x), Len(y), Len(z)}, R, p};
  }
  static double Len(double v) { return std::max(Round(v, kLengthScale), 1.0 / kLengthScale); }

  // A small object (box, cylinder or sphere) of size about `scale` * reach standing upright at `base`
  // (the middle of its bottom) with a random yaw; at most `max_height` tall.
  Primitive Item(const std::string& id, const Layout& l, const Vec3& base, double scale, double max_height) {
    const int kind = UniformInt(rng_, 0, 2);
    const Mat3 R = Yaw(l, Uniform(rng_, 0.0, 2.0 * kPi));
    if (kind == 0) {
      const double h = std::min(Uniform(rng_, 0.6, 1.6) * scale * R_, max_height);
      return Box(id, Uniform(rng_, 0.5, 1.0) * scale * R_, Uniform(rng_, 0.5, 1.0) * scale * R_, h, R,
                 base + 0.5 * Len(h) * l.up);
    }
    if (kind == 1) {
      const double h = Len(std::min(Uniform(rng_, 0.8, 1.8) * scale * R_, max_height));
      return {id, MbmShapeType::kCylinder, {h, Len(Uniform(rng_, 0.25, 0.5) * scale * R_)}, R, base + 0.5 * h * l.up};
    }
    const double r = Len(std::min(Uniform(rng_, 0.3, 0.6) * scale * R_, 0.5 * max_height));
    return {id, MbmShapeType::kSphere, {r}, R, base + r * l.up};
  }

  // Adds `p` when it is placeable; returns whether it was.
  bool Add(const Primitive& p) {
    if (!Placeable(p)) return false;
    prims_.push_back(p);
    return true;
  }

  // A table top on four legs somewhere around the robot, below or level with the first joint, with a
  // few objects standing on it.
  void Table() {
    for (int attempt = 0; attempt < 50; ++attempt) {
      const Layout l = MakeLayout(ws_, Uniform(rng_, 0.0, 2.0 * kPi));
      const double depth = Len(Uniform(rng_, 0.3, 0.55) * R_), width = Len(Uniform(rng_, 0.6, 1.1) * R_);
      const double thick = Len(Uniform(rng_, 0.03, 0.05) * R_);
      const double along = Uniform(rng_, near_, std::max(near_, 0.45 * R_)) + 0.5 * depth;
      const double across = Uniform(rng_, -0.25, 0.25) * R_;
      const double top = Uniform(rng_, -0.45, 0.05) * R_;
      const Primitive board = Box("table_top", depth, width, thick, l.Upright(), l.At(along, across, top - 0.5 * thick));
      if (!Placeable(board)) continue;
      prims_.push_back(board);
      const double leg_r = Len(0.02 * R_), leg_h = Len(0.5 * R_);
      int leg = 0;
      for (double sx : {-1.0, 1.0}) {
        for (double sy : {-1.0, 1.0}) {
          const Vec3 p = l.At(along + sx * (0.5 * depth - 2 * leg_r), across + sy * (0.5 * width - 2 * leg_r),
                              top - thick - 0.5 * leg_h);
          Add({"table_leg_" + std::to_string(++leg), MbmShapeType::kCylinder, {leg_h, leg_r}, l.Upright(), p});
        }
      }
      const int items = UniformInt(rng_, 2, 5);
      for (int k = 0; k < items; ++k) {
        for (int t = 0; t < 10; ++t) {
          const double m = 0.08 * R_;
          const Vec3 base = l.At(along + Uniform(rng_, -0.5 * depth + m, 0.5 * depth - m),
                                 across + Uniform(rng_, -0.5 * width + m, 0.5 * width - m), top);
          if (Add(Item("table_item_" + std::to_string(k + 1), l, base, 0.1, 0.25 * R_))) break;
        }
      }
      return;
    }
  }

  // An open shelf facing the robot: back, sides, bottom, top and one or two boards, with a few objects
  // on its levels.
  void Shelf() {
    for (int attempt = 0; attempt < 50; ++attempt) {
      const Layout l = MakeLayout(ws_, Uniform(rng_, 0.0, 2.0 * kPi));
      const double width = Len(Uniform(rng_, 0.5, 0.9) * R_), depth = Len(Uniform(rng_, 0.2, 0.32) * R_);
      const double height = Len(Uniform(rng_, 0.6, 1.0) * R_), t = Len(0.02 * R_);
      const double along = Uniform(rng_, near_, std::max(near_, 0.5 * R_)) + 0.5 * depth;
      const double across = Uniform(rng_, -0.2, 0.2) * R_;
      const double bottom = Uniform(rng_, -0.5, -0.15) * R_;
      const double mid = bottom + 0.5 * height;
      const Mat3 R = l.Upright();
      std::vector<Primitive> panels = {
          Box("shelf_back", t, width, height, R, l.At(along + 0.5 * depth - 0.5 * t, across, mid)),
          Box("shelf_side_left", depth, t, height, R, l.At(along, across + 0.5 * width - 0.5 * t, mid)),
          Box("shelf_side_right", depth, t, height, R, l.At(along, across - 0.5 * width + 0.5 * t, mid)),
          Box("shelf_bottom", depth, width, t, R, l.At(along, across, bottom + 0.5 * t)),
          Box("shelf_top", depth, width, t, R, l.At(along, across, bottom + height - 0.5 * t)),
      };
      std::vector<double> levels = {bottom + t};  // Surfaces objects stand on.
      const int boards = UniformInt(rng_, 1, 2);
      for (int b = 1; b <= boards; ++b) {
        const double z = bottom + height * (b / (boards + 1.0) + Uniform(rng_, -0.05, 0.05));
        panels.push_back(Box("shelf_board_" + std::to_string(b), depth, width - 2 * t, t, R, l.At(along, across, z)));
        levels.push_back(z + 0.5 * t);
      }
      if (!std::all_of(panels.begin(), panels.end(), [&](const Primitive& p) { return Placeable(p); })) continue;
      prims_ = panels;
      const double gap = height / (boards + 1.0) - 2 * t;
      const int items = UniformInt(rng_, 1, 4);
      for (int k = 0; k < items; ++k) {
        for (int tries = 0; tries < 10; ++tries) {
          const double level = levels[static_cast<size_t>(UniformInt(rng_, 0, static_cast<int>(levels.size()) - 1))];
          const double m = 0.06 * R_;
          const Vec3 base = l.At(along + Uniform(rng_, -0.5 * depth + m, std::max(-0.5 * depth + m, 0.5 * depth - t - m)),
                                 across + Uniform(rng_, -0.5 * width + t + m, 0.5 * width - t - m), level);
          if (Add(Item("shelf_item_" + std::to_string(k + 1), l, base, 0.07, 0.6 * gap))) break;
        }
      }
      return;
    }
  }

  // Free-floating boxes, cylinders and spheres at random poses all around the robot.
  void Clutter() {
    const int count = UniformInt(rng_, 6, 12);
    for (int k = 0; k < count; ++k) {
      for (int t = 0; t < 20; ++t) {
        Vec3 dir;
        std::normal_distribution<double> g;
        do dir = Vec3(g(rng_), g(rng_), g(rng_));
        while (dir.norm() < 1e-6);
        dir.normalize();
        Primitive p;
        p.id = "obstacle_" + std::to_string(k + 1);
        p.R = RandomRotation(rng_);
        const int kind = UniformInt(rng_, 0, 2);
        if (kind == 0) {
          p.type = MbmShapeType::kBox;
          p.dimensions = {Len(Uniform(rng_, 0.06, 0.25) * R_), Len(Uniform(rng_, 0.06, 0.25) * R_),
                          Len(Uniform(rng_, 0.06, 0.25) * R_)};
        } else if (kind == 1) {
          p.type = MbmShapeType::kCylinder;
          p.dimensions = {Len(Uniform(rng_, 0.1, 0.4) * R_), Len(Uniform(rng_, 0.02, 0.08) * R_)};
        } else {
          p.type = MbmShapeType::kSphere;
          p.dimensions = {Len(Uniform(rng_, 0.03, 0.1) * R_)};
        }
        p.p = ws_.origin + Uniform(rng_, keep_out_ + 0.05 * R_, std::max(keep_out_ + 0.05 * R_, 0.8 * R_)) * dir;
        if (Add(p)) break;
      }
    }
  }

  const Workspace& ws_;
  std::mt19937_64& rng_;
  const double R_;
  double keep_out_ = 0.0, near_ = 0.0;
  std::vector<Primitive> prims_;
};

// ---- Files ------------------------------------------------------------------------------------------

// Positions rounded as written, quaternions [x, y, z, w] with w >= 0, rounded.
std::string PoseYaml(const Primitive& p, const std::string& indent) {
  Eigen::Quaterniond q(p.R);
  q.normalize();
  if (q.w() < 0) q.coeffs() *= -1.0;
  const std::vector<double> position = {Round(p.p.x(), kLengthScale), Round(p.p.y(), kLengthScale),
                                        Round(p.p.z(), kLengthScale)};
  const std::vector<double> orientation = {Round(q.x(), kUnitScale), Round(q.y(), kUnitScale),
                                           Round(q.z(), kUnitScale), Round(q.w(), kUnitScale)};
  return indent + "- position: " + NumList(position) + "\n" + indent + "  orientation: " + NumList(orientation) + "\n";
}

// The start state's joint names and values: the model's joints, then the frozen ones.
struct JointState {
  std::vector<std::string> names;
  std::vector<double> positions;
};

JointState FullState(const LoadedRobot& robot, std::span<const double> q) {
  JointState s;
  s.names = robot.model->active_joint_names();
  s.positions.assign(q.begin(), q.end());
  for (const auto& [name, value] : robot.frozen) {
    s.names.push_back(name);
    s.positions.push_back(Round(value, kUnitScale));
  }
  return s;
}

std::string SceneYaml(const std::string& robot_name, const std::string& name, const std::vector<Primitive>& prims,
                      const JointState& state) {
  std::ostringstream y;
  y << "# A workcell for robot " << Yaml(robot_name) << ", written by proximity-bench generate (bench/README.md).\n";
  y << "name: " << Yaml(name) << "\n";
  y << "robot_model_name: " << Yaml(robot_name) << "\n";
  y << "robot_state:\n  joint_state:\n    name: " << NameList(state.names) << "\n    position: "
    << NumList(state.positions) << "\n";
  y << "fixed_frame_transforms:\n  - transform:\n      rotation: [0, 0, 0, 1]\n      translation: [0, 0, 0]\n"
    << "    child_frame_id: world\n";
  y << "world:\n  collision_objects:\n";
  for (const Primitive& p : prims) {
    y << "    - id: " << Yaml(p.id) << "\n";
    y << "      primitives:\n        - type: " << mbm::MbmShapeTypeName(p.type) << "\n          dimensions: "
      << NumList(p.dimensions) << "\n";
    y << "      primitive_poses:\n" << PoseYaml(p, "        ");
  }
  return y.str();
}

std::string RequestYaml(const std::string& group, const JointState& start, const std::vector<std::string>& goal_names,
                        std::span<const double> goal) {
  std::ostringstream y;
  y << "# Start and goal in joint space, written by proximity-bench generate (bench/README.md).\n";
  y << "group_name: " << Yaml(group) << "\n";
  y << "planner_id: RRTConnect\n";
  y << "allowed_planning_time: 60\n";
  y << "num_planning_attempts: 1\n";
  y << "max_velocity_scaling_factor: 0\n";
  y << "max_acceleration_scaling_factor: 0\n";
  y << "start_state:\n  joint_state:\n    name: " << NameList(start.names) << "\n    position: "
    << NumList(start.positions) << "\n";
  y << "goal_constraints:\n  - joint_constraints:\n";
  for (size_t i = 0; i < goal_names.size(); ++i) {
    y << "      - joint_name: " << Yaml(goal_names[i]) << "\n        position: " << Num(goal[i]) << "\n";
  }
  return y.str();
}

// The scene a scene text describes for the robot of `maps`, as a reader of the file would build it, with
// those self-clearance maps.
Result<std::shared_ptr<const Scene>> BuildScene(const std::string& text, const std::string& name,
                                                const std::shared_ptr<core::SelfClearanceMaps>& maps) {
  auto parsed = mbm::LoadMbmSceneFromString(text, name);
  if (!parsed.ok()) return parsed.error();
  auto description = mbm::MbmSceneDescription(parsed.value(), maps->robot());
  if (!description.ok()) return description.error();
  description.value().self_clearance_maps = maps;
  return Scene::Build(std::move(description).value());
}

// The start and goal a request text gives for `robot`, as a reader of the file would get them.
Result<std::pair<std::vector<double>, std::vector<double>>> ReadStates(const std::string& text, const std::string& name,
                                                                       const RobotModel& robot) {
  auto parsed = mbm::LoadMbmRequestFromString(text, name);
  if (!parsed.ok()) return parsed.error();
  auto start = mbm::MbmStartConfiguration(parsed.value(), robot);
  if (!start.ok()) return start.error();
  auto goal = mbm::MbmGoalConfiguration(parsed.value(), robot);
  if (!goal.ok()) return goal.error();
  return std::make_pair(std::move(start).value(), std::move(goal).value());
}

// Whether the robot alone (no world) has a free state among kStateTries random ones; otherwise says
// which pair touched most often.
bool AnyFreeState(const LoadedRobot& robot, uint64_t seed, std::string* error) {
  core::SceneDescription d;
  d.robot = robot.model;
  auto scene = Scene::Build(std::move(d));
  if (!scene.ok()) {
    *error = scene.error().message;
    return false;
  }
  std::mt19937_64 rng = Stream(seed, 2, 0);
  core::SceneCache cache;
  std::map<std::string, int> contacts;
  for (int t = 0; t < kStateTries; ++t) {
    std::string contact;
    if (StateFree(*scene.value(), SampleConfiguration(*robot.model, rng), &cache, &contact)) return true;
    ++contacts[contact];
  }
  const auto most = std::max_element(contacts.begin(), contacts.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  *error = "robot '" + robot.model->name() + "' collides with itself in every one of " + std::to_string(kStateTries) +
           " random configurations (most often " + most->first + ", " + std::to_string(most->second) +
           " times). Without --srdf every pair of links not joined by a joint is checked; an SRDF can allow the "
           "pairs that always touch (<disable_collisions reason=\"Default\">)";
  return false;
}

// Problem generation for one robot and seed.
class Generator {
 public:
  Generator(const LoadedRobot& robot, uint64_t seed, const Workspace& ws)
      : robot_(robot), model_(*robot.model), seed_(seed), ws_(ws), min_goal_distance_(kMinGoalDistance * JointSpaceDiagonal(model_)),
        maps_(core::SelfClearanceMaps::For(robot.model)) {}

  // Problem `index` (0-based); `tried` counts the workcells it took.
  Result<GeneratedProblem> Make(int index, int* tried) {
    const auto& families = GeneratorFamilies();
    GeneratedProblem out;
    out.family = families[static_cast<size_t>(index) % families.size()];
    out.number = index / static_cast<int>(families.size()) + 1;
    out.folder = out.family + "_" + FileLabel(model_.name());
    char digits[16];
    std::snprintf(digits, sizeof(digits), "%04d", out.number);
    const std::string name = out.family + "/" + digits;
    // Every other problem, starting with the first, must have a colliding straight line.
    const bool need_collision = index % 2 == 0;
    std::mt19937_64 rng = Stream(seed_, 1, static_cast<uint32_t>(index));
    WorkcellMaker maker(ws_, rng);
    for (int w = 0; w < kWorkcellTries; ++w) {
      ++*tried;
      const std::vector<Primitive> prims = maker.Make(out.family);
      if (prims.empty()) continue;
      // The scene as its file reads; the start state written into it is only informative.
      const std::string probe = SceneYaml(model_.name(), name, prims, FullState(robot_, model_.DefaultConfiguration()));
      auto scene = BuildScene(probe, name, maps_);
      if (!scene.ok()) return scene.error();
      std::vector<std::vector<double>> path;
      bool collides = false;
      if (!FindStartGoal(*scene.value(), need_collision, rng, &path, &collides)) continue;
      const std::vector<double>& start = path.front();
      const std::vector<double>& goal = path.back();
      const JointState start_state = FullState(robot_, start);
      out.scene_yaml = SceneYaml(model_.name(), name, prims, start_state);
      out.request_yaml = RequestYaml(robot_.group.empty() ? kAllJointsGroup : robot_.group, start_state,
                                     model_.active_joint_names(), goal);
      // What a reader gets back must be exactly what was checked.
      auto states = ReadStates(out.request_yaml, name, model_);
      if (!states.ok()) return states.error();
      if (states.value().first != start || states.value().second != goal) {
        return core::Error{core::ErrorCode::kInternal, name + ": the written start or goal reads back differently"};
      }
      out.line_collides = collides;
      out.witness = std::move(path);
      out.objects = static_cast<int>(prims.size());
      return out;
    }
    return core::InvalidArgument(
        "problem " + name + ": no collision-free start and goal" +
        (need_collision ? std::string(" with a colliding straight line between them") : std::string()) + " in " +
        std::to_string(kWorkcellTries) + " random workcells for robot '" + model_.name() + "'");
  }

 private:
  // A free start; then a tree grown from it whose every edge the certified check finds free; then a
  // uniform random free goal at least min_goal_distance_ from the start whose straight line collides
  // (or, when !need_collision, any such goal; a colliding line is still preferred for a few tries)
  // and which one of its kConnectTries nearest tree nodes sees along a free straight line. *path is the
  // tree's path from the start to that node, then the goal: every problem has a solution. Uniform goals
  // alone need not: an arm whose elbow cannot fold through its upper arm has a +-2 pi elbow range cut
  // in three pieces of free space, and a goal drawn in another piece than the start's has no path at
  // all. (The tree's own nodes would do as goals, but an RRT's nodes crowd the joint limits.)
  bool FindStartGoal(const Scene& scene, bool need_collision, std::mt19937_64& rng,
                     std::vector<std::vector<double>>* path, bool* collides) {
    std::vector<double> start;
    bool found = false;
    for (int t = 0; t < kStateTries && !found; ++t) {
      start = SampleConfiguration(model_, rng);
      found = StateFree(scene, start, &cache_);
    }
    if (!found) return false;
    std::vector<std::vector<double>> nodes{start};
    std::vector<size_t> parent{0};
    const double step = kTreeStep * min_goal_distance_;
    for (int s = 0; s < kTreeSamples && nodes.size() < kTreeNodes; ++s) {
      std::vector<double> q = SampleConfiguration(model_, rng);
      const size_t near = NearestNodes(nodes, q, 1)[0];
      const double d_near = Distance(nodes[near], q);
      if (d_near > step) {
        for (size_t i = 0; i < q.size(); ++i) q[i] = nodes[near][i] + (q[i] - nodes[near][i]) * (step / d_near);
        RoundWithinLimits(model_, &q);
      }
      if (!StateFree(scene, q, &cache_) || !LineFree(scene, nodes[near], q, &cache_)) continue;
      nodes.push_back(std::move(q));
      parent.push_back(near);
    }
    for (int t = 0; t < kStateTries; ++t) {
      std::vector<double> goal = SampleConfiguration(model_, rng);
      if (Distance(start, goal) < min_goal_distance_ || !StateFree(scene, goal, &cache_)) continue;
      *collides = LineCollides(scene, start, goal, &cache_);
      if (!*collides && (need_collision || t < 20)) continue;
      for (size_t n : NearestNodes(nodes, goal, kConnectTries)) {
        if (!LineFree(scene, nodes[n], goal, &cache_)) continue;
        path->assign(1, std::move(goal));
        for (size_t k = n; k != 0; k = parent[k]) path->push_back(nodes[k]);
        path->push_back(start);
        std::reverse(path->begin(), path->end());
        return true;
      }
    }
    return false;
  }

  // The indices of the (at most) k nodes nearest q, nearest first.
  static std::vector<size_t> NearestNodes(const std::vector<std::vector<double>>& nodes, std::span<const double> q,
                                          size_t k) {
    std::vector<std::pair<double, size_t>> by_distance;
    by_distance.reserve(nodes.size());
    for (size_t n = 0; n < nodes.size(); ++n) by_distance.emplace_back(Distance(nodes[n], q), n);
    k = std::min(k, by_distance.size());
    std::partial_sort(by_distance.begin(), by_distance.begin() + static_cast<std::ptrdiff_t>(k), by_distance.end());
    std::vector<size_t> out(k);
    for (size_t i = 0; i < k; ++i) out[i] = by_distance[i].second;
    return out;
  }

  const LoadedRobot& robot_;
  const RobotModel& model_;
  const uint64_t seed_;
  const Workspace& ws_;
  const double min_goal_distance_;
  const std::shared_ptr<core::SelfClearanceMaps> maps_;  // every workcell's scene shares them
  core::SceneCache cache_;
};

// Removes a folder and its contents on destruction unless released.
class RemoveOnFailure {
 public:
  explicit RemoveOnFailure(fs::path path) : path_(std::move(path)) {}
  ~RemoveOnFailure() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  RemoveOnFailure(const RemoveOnFailure&) = delete;
  RemoveOnFailure& operator=(const RemoveOnFailure&) = delete;
  void Release() { path_.clear(); }

 private:
  fs::path path_;
};

core::Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return core::Error{core::ErrorCode::kInternal, path.string() + ": cannot write"};
  return core::Status::Ok();
}

}  // namespace

const std::vector<std::string>& GeneratorFamilies() {
  static const std::vector<std::string> kFamilies = {"table", "shelf", "clutter"};
  return kFamilies;
}

Result<Workspace> MeasureWorkspace(const RobotModel& robot, int samples) {
  if (robot.num_positions() == 0) return core::InvalidArgument("robot '" + robot.name() + "' has no movable joint");
  std::vector<BoundingSphere> spheres;
  for (core::LinkIndex k = 0; k < robot.num_links(); ++k) {
    for (const core::LinkGeometry& g : robot.link(k).geometries) spheres.push_back(GeometrySphere(k, g));
  }
  if (spheres.empty()) return core::InvalidArgument("robot '" + robot.name() + "' has no collision geometry");
  std::vector<RigidTransform> X_WL;
  if (!LinkPoses(robot, robot.DefaultConfiguration(), &X_WL)) {
    return core::InvalidArgument("robot '" + robot.name() + "': forward kinematics failed");
  }
  const core::Joint& first = robot.joint(robot.active_joints()[0]);
  const RigidTransform X_WJ = X_WL[static_cast<size_t>(first.parent_link)] * first.X_PJ;
  Workspace ws;
  ws.origin = X_WJ.p;
  const bool turns = first.type == core::JointType::kRevolute || first.type == core::JointType::kContinuous;
  ws.up = turns ? Vec3((X_WJ.R * first.axis_J).normalized()) : Vec3::UnitZ();
  // Spheres of the links no joint moves, at their one pose, and their largest distance from `origin`.
  double fixed_extent = 0.0;
  for (const BoundingSphere& b : spheres) {
    if (NumMovingJoints(robot, b.link) != 0) continue;
    const Vec3 c = X_WL[static_cast<size_t>(b.link)] * b.p_L;
    ws.fixed_body.push_back({c, b.radius});
    fixed_extent = std::max(fixed_extent, (c - ws.origin).norm() + b.radius);
  }
  double moving_reach = 0.0, first_radius = 0.0;
  std::mt19937_64 rng = Stream(0, 0, 0);  // The same samples for every run: the workspace is the robot's.
  double moving_height = 0.0, fixed_height = 0.0;
  int64_t moving_count = 0, fixed_count = 0;
  for (int s = 0; s < samples; ++s) {
    if (!LinkPoses(robot, SampleConfiguration(robot, rng), &X_WL)) {
      return core::InvalidArgument("robot '" + robot.name() + "': forward kinematics failed");
    }
    for (const BoundingSphere& b : spheres) {
      const Vec3 c = X_WL[static_cast<size_t>(b.link)] * b.p_L;
      const double d = (c - ws.origin).norm() + b.radius;
      ws.reach = std::max(ws.reach, d);
      const int32_t moved_by = NumMovingJoints(robot, b.link);
      if (moved_by <= 1) ws.base_radius = std::max(ws.base_radius, d);
      if (moved_by >= 1) moving_reach = std::max(moving_reach, d);
      if (moved_by == 1) first_radius = std::max(first_radius, d);
      const double height = (c - ws.origin).dot(ws.up);
      if (moved_by == 0) {
        fixed_height += height;
        ++fixed_count;
      } else {
        moving_height += height;
        ++moving_count;
      }
    }
  }
  // The arm rises above what does not move (or, with nothing fixed, lies mostly above its first joint).
  const double mean_moving = moving_height / std::max<int64_t>(1, moving_count);
  const double mean_fixed = fixed_height / std::max<int64_t>(1, fixed_count);
  if (mean_moving < mean_fixed) ws.up = -ws.up;
  // A compact base lies well inside the arm's reach; a fixed body that reaches most of it (or beyond)
  // surrounds the arm: obstacles then avoid its parts one by one (WorkcellMaker::Placeable) and the
  // reach is the moving links'.
  constexpr double kCompactBase = 0.6;
  if (fixed_extent > kCompactBase * moving_reach) {
    ws.reach = moving_reach;
    ws.base_radius = first_radius;
    // Such a body (a humanoid's, a torso's) stands on its root's z axis (REP 103); its first arm joint
    // (a shoulder pitch) need not point up.
    ws.up = Vec3::UnitZ();
  } else {
    ws.fixed_body.clear();
  }
  if (!(ws.reach > 0.0)) return core::InvalidArgument("robot '" + robot.name() + "' has no extent");
  return ws;
}

Result<std::vector<GeneratedProblem>> GenerateProblems(const LoadedRobot& robot, int count, uint64_t seed,
                                                       GeneratorReport* report) {
  if (count < 1) return core::InvalidArgument("--count " + std::to_string(count) + ": must be at least 1");
  if (robot.model == nullptr || robot.model->num_positions() == 0) {
    return core::InvalidArgument("the robot has no movable joint");
  }
  auto ws = MeasureWorkspace(*robot.model);
  if (!ws.ok()) return ws.error();
  std::string error;
  if (!AnyFreeState(robot, seed, &error)) return core::InvalidArgument(error);
  GeneratorReport local;
  GeneratorReport& r = report != nullptr ? *report : local;
  r = GeneratorReport{ws.value(), 0, 0};
  Generator generator(robot, seed, r.workspace);
  std::vector<GeneratedProblem> problems;
  for (int i = 0; i < count; ++i) {
    auto problem = generator.Make(i, &r.workcells_tried);
    if (!problem.ok()) return problem.error();
    r.line_collides += problem.value().line_collides;
    problems.push_back(std::move(problem).value());
  }
  return problems;
}

std::string GeneratorSummary(const LoadedRobot& robot, const RobotSpec& spec, int count, uint64_t seed,
                             const GeneratorReport& report, const std::vector<GeneratedProblem>& problems) {
  const Workspace& ws = report.workspace;
  std::ostringstream y;
  y << "# What proximity-bench generate made here and from what (bench/README.md).\n";
  y << "robot_model_name: " << Yaml(robot.model->name()) << "\n";
  y << "urdf: " << Yaml(spec.urdf) << "\n";
  if (!spec.srdf.empty()) y << "srdf: " << Yaml(spec.srdf) << "\n";
  if (!spec.packages.empty()) y << "packages: " << NameList(spec.packages) << "\n";
  y << "group: " << Yaml(robot.group.empty() ? kAllJointsGroup : robot.group) << "\n";
  y << "joints: " << NameList(robot.model->active_joint_names()) << "\n";
  if (!robot.frozen.empty()) {
    y << "frozen_joints:\n";
    for (const auto& [name, value] : robot.frozen) y << "  " << Yaml(name) << ": " << Num(Round(value, kUnitScale)) << "\n";
  }
  y << "seed: " << seed << "\n";
  y << "count: " << count << "\n";
  y << "workspace:\n";
  y << "  origin: " << NumList(std::vector<double>{Round(ws.origin.x(), kLengthScale), Round(ws.origin.y(), kLengthScale),
                                                   Round(ws.origin.z(), kLengthScale)})
    << "\n";
  y << "  up: " << NumList(std::vector<double>{Round(ws.up.x(), kUnitScale), Round(ws.up.y(), kUnitScale),
                                               Round(ws.up.z(), kUnitScale)})
    << "\n";
  y << "  reach: " << Num(Round(ws.reach, kLengthScale)) << "\n";
  y << "  base_radius: " << Num(Round(ws.base_radius, kLengthScale)) << "\n";
  y << "families:\n";
  for (const std::string& family : GeneratorFamilies()) {
    const auto n = std::count_if(problems.begin(), problems.end(), [&](const GeneratedProblem& p) { return p.family == family; });
    if (n > 0) y << "  " << Yaml(family) << ": " << n << "\n";
  }
  y << "straight_line_collides: " << report.line_collides << "\n";
  y << "workcells_tried: " << report.workcells_tried << "\n";
  return y.str();
}

namespace {

// The folder --out names and its parent, after checking that the problems can go there.
Result<std::pair<fs::path, fs::path>> OutputFolder(const std::string& out) {
  if (out.empty()) return core::InvalidArgument("--out: no folder given");
  fs::path target(out);
  while (!target.has_filename() && target.has_parent_path() && target != target.root_path()) target = target.parent_path();
  if (target.filename().empty() || target.filename() == "." || target.filename() == "..") {
    return core::InvalidArgument("--out " + out + ": name a new folder");
  }
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) {
    return core::NotFound("--out " + out + ": " + parent.string() +
                          (fs::exists(parent, ec) ? " is not a folder" : " does not exist"));
  }
  if (fs::exists(fs::symlink_status(target, ec))) {
    if (!fs::is_directory(target, ec) || fs::is_symlink(target, ec)) {
      return core::InvalidArgument("--out " + out + ": exists and is not a folder");
    }
    if (!fs::is_empty(target, ec)) {
      return core::InvalidArgument("--out " + out + ": exists and is not empty; name a new folder or remove it");
    }
  }
  if (access(parent.c_str(), W_OK | X_OK) != 0) {
    return core::InvalidArgument("--out " + out + ": cannot write into " + parent.string() + ": " + std::strerror(errno));
  }
  return std::make_pair(target, parent);
}

}  // namespace

core::Status WriteProblems(const std::vector<GeneratedProblem>& problems, const std::string& summary,
                           const std::string& out) {
  auto checked = OutputFolder(out);
  if (!checked.ok()) return checked.error();
  const auto& [target, parent] = checked.value();
  std::error_code ec;
  std::string pattern = (parent / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return core::Error{core::ErrorCode::kInvalidArgument,
                       "--out " + out + ": cannot create a folder in " + parent.string() + ": " + std::strerror(errno)};
  }
  const fs::path tmp(pattern);
  RemoveOnFailure cleanup(tmp);
  for (const GeneratedProblem& p : problems) {
    char digits[16];
    std::snprintf(digits, sizeof(digits), "%04d", p.number);
    const fs::path folder = tmp / p.folder;
    fs::create_directories(folder, ec);
    if (ec) return core::InvalidArgument("--out " + out + ": cannot create " + folder.string() + ": " + ec.message());
    for (const auto& [file, text] : {std::pair{"scene", &p.scene_yaml}, std::pair{"request", &p.request_yaml}}) {
      if (core::Status s = WriteText(folder / (std::string(file) + digits + ".yaml"), *text); !s.ok()) {
        return core::InvalidArgument("--out " + out + ": " + s.error().message);
      }
    }
  }
  if (core::Status s = WriteText(tmp / "generator.yaml", summary); !s.ok()) {
    return core::InvalidArgument("--out " + out + ": " + s.error().message);
  }
  // mkdtemp makes the folder private; give it the permissions a new folder gets.
  const mode_t mask = umask(0);
  umask(mask);
  fs::permissions(tmp, static_cast<fs::perms>(0777 & ~mask), ec);
  fs::rename(tmp, target, ec);
  if (ec) return core::InvalidArgument("--out " + out + ": cannot move the problems into place: " + ec.message());
  cleanup.Release();
  return core::Status::Ok();
}

int RunGenerate(const SuiteOptions& options) {
  const auto fail = [](const std::string& message) {
    std::cerr << "generate: " << message << "\n";
    return kBadInput;
  };
  if (!options.robot.given()) return fail("--robot URDF is required");
  if (options.out_dir.empty()) return fail("--out DIR is required (a new folder for the problems)");
  if (options.count < 1) return fail("--count " + std::to_string(options.count) + ": must be at least 1");
  if (!options.problems_dir.empty()) return fail("--problems does not apply (generate writes into --out)");
  if (auto folder = OutputFolder(options.out_dir); !folder.ok()) return fail(folder.error().message);
  std::vector<std::string> warnings;
  auto robot = LoadRobot(options.robot, {}, &warnings);
  for (const std::string& w : warnings) std::cerr << "generate: warning: " << w << "\n";
  if (!robot.ok()) return fail(robot.error().message);
  const double t0 = Now();
  GeneratorReport report;
  auto problems = GenerateProblems(robot.value(), options.count, options.seed, &report);
  if (!problems.ok()) {
    std::cerr << "generate: " << problems.error().message << "\n";
    return problems.error().code == core::ErrorCode::kInternal ? 1 : kBadInput;
  }
  const std::string summary =
      GeneratorSummary(robot.value(), options.robot, options.count, options.seed, report, problems.value());
  if (core::Status s = WriteProblems(problems.value(), summary, options.out_dir); !s.ok()) return fail(s.error().message);
  const Workspace& ws = report.workspace;
  std::cerr << "generate: " << options.count << " problems for robot '" << robot.value().model->name() << "' ("
            << robot.value().model->num_positions() << " joints; reach " << ws.reach << " m, base radius "
            << ws.base_radius << " m) in " << options.out_dir << "; " << report.line_collides
            << " with a colliding straight line; " << report.workcells_tried << " workcells tried in " << Now() - t0
            << " s\n";
  JsonLine line;
  line.Add("suite", "generate").Add("case", "problems").Add("robot", robot.value().model->name());
  line.Add("n", options.count).Add("seed", static_cast<int64_t>(options.seed)).Add("dof", robot.value().model->num_positions());
  line.Add("reach", ws.reach).Add("base_radius", ws.base_radius).Add("line_collides", report.line_collides);
  line.Add("workcells_tried", report.workcells_tried).Add("out", options.out_dir);
  line.Print();
  return 0;
}

}  // namespace proximity::bench
