// The ik suite: our inverse kinematics (core::SolveIk) beside KDL's joint-limited Newton-Raphson solver
// (ChainIkSolverPos_NR_JL over ChainIkSolverVel_pinv, with random restarts, as MoveIt's KDL plugin
// drives it) on the same robot, poses and seeds. KDL's chain is built from the loaded model's joints
// (origin, axis, type: what kdl_parser reads from the URDF; Debian's kdl_parser would pull ROS's
// libraries into the benchmark), and its forward kinematics is checked against ours before the run. Poses are forward kinematics of random states within
// the limits (every one reachable); both sides must land within 1e-5 m per axis and 1e-5 rad per axis
// (KDL's epsilon on every twist component) within the same 100 descents, and every answer of either
// side is re-checked with our forward kinematics. One JSON line per robot: success rates, median and
// p95 microseconds per solve (each side on its own successes, and both on the poses both solved), and
// the ratio KDL / ours on the latter.
#include <kdl/chain.hpp>
#include <kdl/chainfksolverpos_recursive.hpp>
#include <kdl/chainiksolverpos_nr_jl.hpp>
#include <kdl/chainiksolvervel_pinv.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include "bench_util.h"
#include "proximity/core/robot/inverse_kinematics.h"
#include "robot_input.h"

namespace proximity::bench {
namespace {

constexpr char kSuite[] = "ik";
constexpr char kPeer[] = "kdl_nr_jl";
constexpr double kEps = 1e-5;     // KDL's epsilon; our box half-extents and orientation tolerances
constexpr int kAttempts = 100;    // descents per pose, both sides
constexpr int kKdlIterations = 500;  // MoveIt's KDL plugin's max_solver_iterations

struct NamedRobot {
  std::string label;
  RobotSpec spec;
  std::string tip;  // "" : the SRDF group's chain tip, else the deepest link
};

std::vector<NamedRobot> DefaultRobots(const SuiteOptions& options) {
  std::vector<NamedRobot> out;
  const std::string shared = options.data_dir;
  if (std::ifstream(shared + "/robots/panda/moveit_resources_panda_description/urdf/panda.urdf").good()) {
    const std::string p = shared + "/robots/panda";
    out.push_back({"panda", {p + "/moveit_resources_panda_description/urdf/panda.urdf",
                             p + "/moveit_resources_panda_moveit_config/config/panda.srdf",
                             {"moveit_resources_panda_description=" + p + "/moveit_resources_panda_description"},
                             "panda_arm"}, ""});
    const std::string m = shared + "/robots/mbm_panda";
    out.push_back({"mbm_panda", {m + "/panda.urdf", m + "/panda.srdf", {"meshes=" + m + "/meshes"}, "panda_arm"}, ""});
    const std::string u = shared + "/robots/ur5";
    out.push_back({"ur5", {u + "/ur_description/urdf/ur5_robot.urdf", u + "/ur5_moveit_config/config/ur5.srdf",
                           {"ur_description=" + u + "/ur_description"}, "manipulator"}, ""});
  }
  const std::string dart = PROX_DART_URDF_DIR;
  if (std::ifstream(dart + "/KR5/KR5 sixx R650.urdf").good()) {
    out.push_back({"kr5", {dart + "/KR5/KR5 sixx R650.urdf", "", {}, ""}, ""});
    out.push_back({"wam", {dart + "/wam/wam.urdf", PROX_TEST_DATA_DIR "/robots/wam.srdf",
                           {"herb_description=" + dart + "/wam"}, "arm"}, ""});
  }
  return out;
}

// KDL's chain from the root to the tip with joint limits from our model (continuous joints: none).
struct KdlSide {
  KDL::Chain chain;
  KDL::JntArray lower, upper;
  std::vector<int32_t> q_index;  // per chain joint: its position in our q
};

KDL::Frame ToKdl(const core::RigidTransform& X) {
  return KDL::Frame(KDL::Rotation(X.R(0, 0), X.R(0, 1), X.R(0, 2), X.R(1, 0), X.R(1, 1), X.R(1, 2), X.R(2, 0),
                                  X.R(2, 1), X.R(2, 2)),
                    KDL::Vector(X.p.x(), X.p.y(), X.p.z()));
}

// The chain root -> tip: per joint a segment whose joint turns (or slides) about the joint's axis in the
// parent frame through the joint's origin, then the joint frame's offset (kdl_parser's construction).
core::Result<KdlSide> MakeKdl(const core::RobotModel& robot, core::LinkIndex tip) {
  std::vector<core::JointIndex> path;
  for (core::JointIndex j = robot.link(tip).parent_joint; j >= 0; j = robot.link(robot.joint(j).parent_link).parent_joint) {
    path.push_back(j);
  }
  KdlSide side;
  std::vector<double> lower, upper;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const core::Joint& joint = robot.joint(*it);
    if (joint.is_mimic()) return core::InvalidArgument("joint " + joint.name + " is a mimic joint: not in KDL's chain");
    const KDL::Frame X_PJ = ToKdl(joint.X_PJ);
    const core::Vec3 a = joint.X_PJ.R * joint.axis_J;
    const KDL::Vector axis(a.x(), a.y(), a.z());
    KDL::Joint kj(joint.name, KDL::Joint::None);
    if (joint.type == core::JointType::kRevolute || joint.type == core::JointType::kContinuous) {
      kj = KDL::Joint(joint.name, X_PJ.p, axis, KDL::Joint::RotAxis);
    } else if (joint.type == core::JointType::kPrismatic) {
      kj = KDL::Joint(joint.name, X_PJ.p, axis, KDL::Joint::TransAxis);
    }
    side.chain.addSegment(KDL::Segment(robot.link(joint.child_link).name, kj, X_PJ));
    if (joint.type == core::JointType::kFixed) continue;
    side.q_index.push_back(joint.active_index);
    const bool continuous = joint.type == core::JointType::kContinuous;
    lower.push_back(continuous ? -1e9 : robot.lower_limits()[static_cast<size_t>(joint.active_index)]);
    upper.push_back(continuous ? 1e9 : robot.upper_limits()[static_cast<size_t>(joint.active_index)]);
  }
  side.lower.resize(static_cast<unsigned>(lower.size()));
  side.upper.resize(static_cast<unsigned>(upper.size()));
  for (size_t j = 0; j < lower.size(); ++j) {
    side.lower(static_cast<unsigned>(j)) = lower[j];
    side.upper(static_cast<unsigned>(j)) = upper[j];
  }
  return side;
}

std::vector<double> RandomState(std::mt19937_64& rng, const core::RobotModel& robot) {
  std::vector<double> q(static_cast<size_t>(robot.num_positions()));
  for (int32_t i = 0; i < robot.num_positions(); ++i) {
    double lo = robot.lower_limits()[static_cast<size_t>(i)], hi = robot.upper_limits()[static_cast<size_t>(i)];
    if (robot.is_continuous(i)) lo = -M_PI, hi = M_PI;
    q[static_cast<size_t>(i)] = std::uniform_real_distribution<double>(lo, hi)(rng);
  }
  return q;
}

int RunOne(const NamedRobot& r, const SuiteOptions& options) {
  std::vector<std::string> warnings;
  auto loaded = LoadRobot(r.spec, {}, &warnings);
  if (!loaded.ok()) {
    std::fprintf(stderr, "ik: %s: %s\n", r.label.c_str(), loaded.error().message.c_str());
    return kBadInput;
  }
  const core::RobotModel& robot = *loaded.value().model;
  auto tip = TipLink(robot, r.tip, r.spec.group);
  if (!tip.ok()) {
    std::fprintf(stderr, "ik: %s: --tip: %s\n", r.label.c_str(), tip.error().message.c_str());
    return kBadInput;
  }
  auto kdl = MakeKdl(robot, tip.value());
  if (!kdl.ok()) {
    std::fprintf(stderr, "ik: %s: %s\n", r.label.c_str(), kdl.error().message.c_str());
    return kBadInput;
  }
  KdlSide& side = kdl.value();
  KDL::ChainFkSolverPos_recursive fk(side.chain);
  KDL::ChainIkSolverVel_pinv vel(side.chain);
  KDL::ChainIkSolverPos_NR_JL ik(side.chain, side.lower, side.upper, fk, vel, kKdlIterations, kEps);

  {  // KDL's forward kinematics is ours (the chain is the same robot)
    std::mt19937_64 check_rng(options.seed + 7);
    for (int i = 0; i < 20; ++i) {
      const std::vector<double> q = RandomState(check_rng, robot);
      KDL::JntArray jq(side.chain.getNrOfJoints());
      for (unsigned j = 0; j < jq.rows(); ++j) jq(j) = q[static_cast<size_t>(side.q_index[j])];
      KDL::Frame f;
      fk.JntToCart(jq, f);
      const core::Vec3 p = robot.ForwardKinematics(q).value()[static_cast<size_t>(tip.value())].p;
      if ((core::Vec3(f.p.x(), f.p.y(), f.p.z()) - p).norm() > 1e-9) {
        std::fprintf(stderr, "ik: %s: KDL's chain poses the tip elsewhere than our model\n", r.label.c_str());
        return 1;
      }
    }
  }
  core::PoseGoal goal;
  goal.link = tip.value();
  goal.region = core::PositionRegion::kBox;
  goal.region_size = core::Vec3::Constant(kEps);
  goal.orientation_tolerance = core::Vec3::Constant(kEps);
  core::IkOptions ours_options;
  ours_options.max_attempts = kAttempts;
  for (int32_t v : side.q_index) ours_options.variables.push_back(v);

  const int n = options.quick ? 50 : 1000;
  std::mt19937_64 rng(options.seed);
  std::vector<double> ours_t, kdl_t, both_ours, both_kdl;
  int ours_found = 0, kdl_found = 0, ours_bad = 0, kdl_bad = 0;
  int64_t ours_iterations = 0;
  const unsigned nj = side.chain.getNrOfJoints();
  KDL::JntArray seed(nj), out(nj);
  std::mt19937_64 kdl_rng(options.seed + 1);
  for (int i = 0; i < n; ++i) {
    const std::vector<double> target = RandomState(rng, robot);
    const std::vector<double> start = RandomState(rng, robot);
    auto poses = robot.ForwardKinematics(target);
    goal.X_WT = poses.value()[static_cast<size_t>(goal.link)];
    ours_options.seed = static_cast<uint64_t>(i) + 1;

    double t0 = Now();
    const core::Result<core::IkSolution> s = core::SolveIk(robot, goal, start, ours_options);
    const double ours_us = (Now() - t0) * 1e6;
    const bool ours_ok = s.ok() && s.value().found;
    if (ours_ok) {
      ++ours_found;
      ours_t.push_back(ours_us);
      ours_iterations += s.value().iterations;
      const auto check = robot.ForwardKinematics(s.value().q);
      if (!core::PoseGoalMet(goal, check.value()[static_cast<size_t>(goal.link)]) || !robot.WithinLimits(s.value().q)) {
        ++ours_bad;
      }
    }

    const KDL::Frame f = ToKdl(goal.X_WT);
    for (unsigned j = 0; j < nj; ++j) seed(j) = start[static_cast<size_t>(side.q_index[j])];
    bool kdl_ok = false;
    t0 = Now();
    for (int attempt = 0; attempt < kAttempts && !kdl_ok; ++attempt) {
      if (attempt > 0) {
        for (unsigned j = 0; j < nj; ++j) {
          const bool wide = side.upper(j) - side.lower(j) > 2 * M_PI;
          seed(j) = std::uniform_real_distribution<double>(wide ? -M_PI : side.lower(j), wide ? M_PI : side.upper(j))(kdl_rng);
        }
      }
      kdl_ok = ik.CartToJnt(seed, f, out) >= 0;
    }
    const double kdl_us = (Now() - t0) * 1e6;
    if (kdl_ok) {
      ++kdl_found;
      kdl_t.push_back(kdl_us);
      std::vector<double> q = start;
      for (unsigned j = 0; j < nj; ++j) q[static_cast<size_t>(side.q_index[j])] = out(j);
      const auto check = robot.ForwardKinematics(q);
      core::PoseGoal loose = goal;  // KDL bounds each twist component: allow the box's diagonal
      loose.region_size *= 2.0;
      loose.orientation_tolerance *= 2.0;
      if (!core::PoseGoalMet(loose, check.value()[static_cast<size_t>(goal.link)]) || !robot.WithinLimits(q)) ++kdl_bad;
    }
    if (ours_ok && kdl_ok) {
      both_ours.push_back(ours_us);
      both_kdl.push_back(kdl_us);
    }
  }
  Work work;
  work.queries = std::max(ours_found, 1);
  JsonLine line = CaseLine(kSuite, "ik_" + r.label, both_ours, work, kPeer, both_kdl);
  line.Add("robot", robot.name())
      .Add("tip", robot.link(goal.link).name)
      .Add("joints", static_cast<int64_t>(nj))
      .Add("poses", n)
      .Add("ours_success", static_cast<double>(ours_found) / n)
      .Add("peer_success", static_cast<double>(kdl_found) / n)
      .Add("ours_median_us_own", Median(ours_t))
      .Add("peer_median_us_own", Median(kdl_t))
      .Add("ours_p95_us_own", Percentile(ours_t, 0.95))
      .Add("peer_p95_us_own", Percentile(kdl_t, 0.95))
      .Add("ours_steps_per_solve", static_cast<double>(ours_iterations) / std::max(ours_found, 1))
      .Add("ours_wrong", ours_bad)
      .Add("peer_wrong", kdl_bad);
  line.Print();
  return ours_bad == 0 ? 0 : 1;
}

}  // namespace

int RunIk(const SuiteOptions& options) {
  std::vector<NamedRobot> robots;
  if (options.robot.given()) {
    robots.push_back({FileLabel(options.robot.urdf.substr(options.robot.urdf.find_last_of('/') + 1)), options.robot,
                      options.tip});
  } else {
    robots = DefaultRobots(options);
  }
  if (robots.empty()) {
    std::fprintf(stderr, "ik: needs ../shared/data or dart-doc's robots when no --robot is given; none found\n");
    return 77;
  }
  int rc = 0;
  for (const NamedRobot& r : robots) {
    const int one = RunOne(r, options);
    if (one == kBadInput) return kBadInput;
    rc |= one;
  }
  return rc;
}

}  // namespace proximity::bench
