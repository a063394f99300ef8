// Suite mbm: motion planning on MotionBenchMaker-format problems (by default the MotionBenchMaker Panda
// problems and mbm_panda robot; --robot and --problems take any robot and problem folder, as generate
// makes them), box / cylinder / sphere worlds, ours beside OMPL 1.5 with a MoveIt-style FCL 0.7
// checker on the same robot and problems, every returned path re-checked densely by an independent
// check.
//
// Ours: planners::Plan with RRT-Connect over SceneStateValidity (CLEAR plus joint limits) and the
// certified SceneMotionValidator, simplification on, seeded with the problem's index; the timed call
// is the whole Plan call (planning and simplification). The raw path is got from a second, untimed
// call with the same seed and simplification off (the planners are deterministic per seed), and its
// length must equal the timed call's raw_length.
//
// The peer is what MoveIt runs by default: ompl::geometric::RRTConnect on a RealVectorStateSpace
// bounded by the robot's joint limits (-pi to pi for a continuous joint), a state validity checker that checks the bounds and then runs
// the FCL checker of bench/peers/fcl_robot.h (link poses from our forward kinematics), OMPL's default
// DiscreteMotionValidator at its default resolution (longest valid segment 1% of the space's extent),
// the default range (20% of the extent, the same as ours), then PathSimplifier::simplify with the
// time left, as MoveIt's simplifySolution does. OMPL's random seed is set once per process
// (ompl::RNG::setSeed), so the peer's answers are reproducible for a given problem set and order.
//
// Every returned path (both sides, raw and simplified) goes through peers::DensePathCheck: states at
// most 1e-3 rad apart in every joint, each checked exactly by the FCL checker (its mesh-sphere contacts
// refereed by brute force: dense_states_fcl_contact_refuted), and every waypoint within the joint
// limits. Ours must never fail it; the peer's failures are reported as found. Each colliding state it
// finds is also put to our CLEAR, a second opinion from other code (reported with q, FCL's pairwise
// contacts and our distance).
//
// Output: per family and overall, one JSON line per side (success, times, lengths, validity work,
// dense-check failures), and one line of ratios (peer / ours), each naming the robot. With --ompl-log
// DIR, one OMPL benchmark log per family (mbm_<robot>_<family>.log) (the text format ompl_benchmark_statistics.py and Planner Arena read) holding both
// planners' runs.
#include <ompl/base/PlannerData.h>
#include <ompl/base/PlannerTerminationCondition.h>
#include <ompl/base/ProblemDefinition.h>
#include <ompl/base/ScopedState.h>
#include <ompl/base/SpaceInformation.h>
#include <ompl/base/spaces/RealVectorStateSpace.h>
#include <ompl/config.h>
#include <ompl/geometric/PathGeometric.h>
#include <ompl/geometric/PathSimplifier.h>
#include <ompl/geometric/planners/rrt/RRTConnect.h>
#include <ompl/util/Console.h>
#include <ompl/util/RandomNumbers.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "mbm_data.h"
#include "peers/fcl_robot.h"
#include "proximity/mbm/mbm.h"
#include "proximity/core/scene/scene.h"
#include "proximity/planners/planner.h"
#include "proximity/planners/scene_validity.h"

namespace proximity::bench {
namespace {

namespace fs = std::filesystem;
namespace ob = ompl::base;
namespace og = ompl::geometric;
using mbm::MbmProblem;
using core::RigidTransform;
using core::RobotModel;
using core::Scene;
using peers::DensePathCheck;
using peers::DensePathResult;
using peers::FclRobot;
using peers::FclWorld;
using planners::Configuration;

constexpr char kSuite[] = "mbm";
constexpr char kOursName[] = "ours RRTConnect certified";
constexpr char kPeerName[] = "OMPL RRTConnect + FCL";
constexpr char kOurs[] =
    "proximity::planners RRT-Connect, ScenePlanning: trees on a 0.1 rad coarse-to-fine sampled check, returned edges certified, simplified";
constexpr char kPeer[] =
    "OMPL 1.5 RRTConnect + fcl-0.7 MoveIt-style checker, DiscreteMotionValidator (default resolution), "
    "PathSimplifier::simplify";
constexpr double kDenseStep = 1e-3;  // rad, in every joint


// One side's run on one problem.
struct PlanRun {
  bool solved = false;
  std::string outcome;
  double time_s = 0.0;      // The whole call: planning and simplification.
  double plan_s = 0.0;      // Until the raw path.
  double simplify_s = 0.0;
  double raw_length = 0.0, length = 0.0;
  int64_t raw_waypoints = 0, waypoints = 0;
  int64_t state_checks = 0, motion_checks = 0, motion_states = 0, graph_states = 0;
  DensePathResult raw_check, check;  // Solved runs only.
  bool raw_checked = false;          // A raw path was available and checked.
  // Colliding states the dense check found that our CLEAR confirms, and those it calls free.
  int64_t confirmed = 0, unconfirmed = 0;
};

// Joint-space (Euclidean) length of a polyline.
double Length(const std::vector<Configuration>& path) {
  double total = 0.0;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    double l2 = 0.0;
    for (size_t j = 0; j < path[i].size(); ++j) l2 += (path[i + 1][j] - path[i][j]) * (path[i + 1][j] - path[i][j]);
    total += std::sqrt(l2);
  }
  return total;
}

std::vector<Configuration> Waypoints(const og::PathGeometric& path, int32_t dof) {
  std::vector<Configuration> out(path.getStateCount(), Configuration(static_cast<size_t>(dof)));
  for (size_t i = 0; i < path.getStateCount(); ++i) {
    const double* v = path.getState(static_cast<unsigned>(i))->as<ob::RealVectorStateSpace::StateType>()->values;
    std::copy(v, v + dof, out[i].begin());
  }
  return out;
}

std::string Describe(const DensePathResult& r) {
  std::ostringstream s;
  if (!r.error.empty()) return "malformed path: " + r.error;
  if (r.segment >= 0) s << "collides on segment " << r.segment << " at t = " << r.t;
  if (r.outside_limits >= 0) s << (r.segment >= 0 ? ", " : "") << "waypoint " << r.outside_limits << " outside limits";
  return s.str();
}

// The summary of one side over a set of problems.
JsonLine SideLine(const std::string& robot, const std::string& side, const std::string& group,
                  const std::vector<const PlanRun*>& runs, double time_limit_s) {
  std::vector<double> time_ms, plan_ms, simplify_ms, raw_length, length, raw_wp, wp, states, motions, motion_states;
  int64_t solved = 0, raw_unchecked = 0, invalid_raw = 0, invalid = 0, collide_raw = 0, collide = 0;
  int64_t outside = 0, dense_states = 0, refuted = 0, confirmed = 0, unconfirmed = 0;
  for (const PlanRun* r : runs) {
    time_ms.push_back(1e3 * r->time_s);
    plan_ms.push_back(1e3 * r->plan_s);
    states.push_back(static_cast<double>(r->state_checks));
    motions.push_back(static_cast<double>(r->motion_checks));
    motion_states.push_back(static_cast<double>(r->motion_states));
    if (!r->solved) continue;
    ++solved;
    simplify_ms.push_back(1e3 * r->simplify_s);
    raw_length.push_back(r->raw_length);
    length.push_back(r->length);
    raw_wp.push_back(static_cast<double>(r->raw_waypoints));
    wp.push_back(static_cast<double>(r->waypoints));
    raw_unchecked += !r->raw_checked;
    invalid_raw += r->raw_checked && !r->raw_check.valid;
    invalid += !r->check.valid;
    collide_raw += r->raw_checked && r->raw_check.segment >= 0;
    collide += r->check.segment >= 0;
    outside += (r->raw_checked && r->raw_check.outside_limits >= 0) + (r->check.outside_limits >= 0);
    dense_states += r->raw_check.states + r->check.states;
    refuted += r->raw_check.refuted + r->check.refuted;
    confirmed += r->confirmed;
    unconfirmed += r->unconfirmed;
  }
  const double n = static_cast<double>(std::max<size_t>(1, runs.size()));
  const double s = static_cast<double>(std::max<int64_t>(1, solved));
  JsonLine line;
  line.Add("suite", kSuite).Add("case", side + "_" + group).Add("side", side).Add("group", group);
  line.Add("robot", robot);
  line.Add("planner", side == "ours" ? kOurs : kPeer);
  line.Add("n", static_cast<int64_t>(runs.size())).Add("solved", solved).Add("success_rate", solved / n);
  line.Add("time_limit_s", time_limit_s);
  line.Add("time_ms_median", Median(time_ms)).Add("time_ms_p95", Percentile(time_ms, 0.95));
  line.Add("time_ms_mean", Mean(time_ms));
  line.Add("plan_ms_median", Median(plan_ms)).Add("plan_ms_p95", Percentile(plan_ms, 0.95));
  line.Add("simplify_ms_median", Median(simplify_ms));
  line.Add("raw_length_median", Median(raw_length)).Add("length_median", Median(length));
  line.Add("raw_waypoints_median", Median(raw_wp)).Add("waypoints_median", Median(wp));
  line.Add("state_checks_median", Median(states)).Add("motion_checks_median", Median(motions));
  if (side == "ours") line.Add("motion_states_median", Median(motion_states));
  line.Add("invalid_raw", invalid_raw).Add("invalid_simplified", invalid).Add("raw_unchecked", raw_unchecked);
  line.Add("invalid_raw_rate", static_cast<double>(invalid_raw) / s);
  line.Add("invalid_simplified_rate", static_cast<double>(invalid) / s);
  line.Add("colliding_raw", collide_raw).Add("colliding_simplified", collide);
  line.Add("waypoints_outside_limits", outside);
  line.Add("dense_step", kDenseStep).Add("dense_states", dense_states);
  line.Add("dense_states_fcl_contact_refuted", refuted);
  line.Add("collisions_confirmed_by_core", confirmed).Add("collisions_free_by_core", unconfirmed);
  return line;
}

// OMPL's benchmark log (ompl::tools::Benchmark::saveResultsToStream, OMPL 1.5) for one experiment: the
// problems of one family, both planners, one run per problem.
struct LogPlanner {
  std::string name;
  std::vector<std::pair<std::string, std::string>> common;  // "name = value" lines.
  std::vector<std::map<std::string, std::string>> runs;     // "property TYPE" -> value.
};

std::string Num(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : "inf";
  std::ostringstream s;
  s << std::setprecision(17) << v;
  return s.str();
}

std::map<std::string, std::string> LogRun(const PlanRun& r, int problem) {
  std::map<std::string, std::string> p;
  p["problem INTEGER"] = std::to_string(problem);
  p["time REAL"] = Num(r.time_s);
  p["plan time REAL"] = Num(r.plan_s);
  p["solved BOOLEAN"] = r.solved ? "1" : "0";
  p["state checks INTEGER"] = std::to_string(r.state_checks);
  p["motion checks INTEGER"] = std::to_string(r.motion_checks);
  p["graph states INTEGER"] = std::to_string(r.graph_states);
  if (r.solved) {
    p["simplification time REAL"] = Num(r.simplify_s);
    p["solution length REAL"] = Num(r.raw_length);
    p["simplified solution length REAL"] = Num(r.length);
    p["solution segments INTEGER"] = std::to_string(std::max<int64_t>(0, r.raw_waypoints - 1));
    p["simplified solution segments INTEGER"] = std::to_string(std::max<int64_t>(0, r.waypoints - 1));
    if (r.raw_checked) p["valid BOOLEAN"] = r.raw_check.valid ? "1" : "0";
    p["simplified valid BOOLEAN"] = r.check.valid ? "1" : "0";
  }
  return p;
}

bool WriteOmplLog(const std::string& file, const std::string& experiment, const std::string& setup,
                  const std::string& date, uint64_t seed, double time_limit_s, double total_s,
                  const std::vector<LogPlanner>& planners, int64_t problems) {
  std::ofstream out(file);
  if (!out) return false;
  char host[256] = "UNKNOWN";
  (void)gethostname(host, sizeof(host) - 1);
  std::string cpu = "unknown";
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("model name", 0) == 0) {
        cpu = line.substr(line.find(':') + 2);
        break;
      }
    }
  }
  out << "OMPL version " << OMPL_MAJOR_VERSION << "." << OMPL_MINOR_VERSION << "." << OMPL_PATCH_VERSION << "\n";
  out << "Experiment " << experiment << "\n";
  out << "2 experiment properties\n";
  out << "problems INTEGER = " << problems << "\n";
  out << "dense check step REAL = " << Num(kDenseStep) << "\n";
  out << "Running on " << host << "\n";
  out << "Starting at " << date << "\n";
  out << "<<<|\n" << setup << "|>>>\n";
  out << "<<<|\nCPU: " << cpu << "\n|>>>\n";
  out << seed << " is the random seed\n";
  out << Num(time_limit_s) << " seconds per run\n";
  out << "0 MB per run\n";
  out << problems << " runs per planner\n";
  out << Num(total_s) << " seconds spent to collect the data\n";
  out << "0 enum types\n";
  out << planners.size() << " planners\n";
  for (const LogPlanner& p : planners) {
    out << p.name << "\n";
    out << p.common.size() << " common properties\n";
    for (const auto& [k, v] : p.common) out << k << " = " << v << "\n";
    std::map<std::string, bool> seen;
    for (const auto& run : p.runs) {
      for (const auto& [k, v] : run) seen[k] = true;
    }
    out << seen.size() << " properties for each run\n";
    for (const auto& [k, v] : seen) out << k << "\n";
    out << p.runs.size() << " runs\n";
    for (const auto& run : p.runs) {
      for (const auto& [k, v] : seen) {
        auto it = run.find(k);
        if (it != run.end()) out << it->second;
        out << "; ";
      }
      out << "\n";
    }
    out << ".\n";
  }
  return static_cast<bool>(out);
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

// One problem as both sides plan on it: our scene, the peer's world, and the start and goal.
struct Problem {
  std::shared_ptr<const Scene> scene;
  std::optional<FclWorld> world;
  // --cloud: the dense check's world, the cloud's points as FCL spheres of their radius (its exact
  // semantics; the peer plans on an octree, whose cells differ from the balls by its resolution).
  std::optional<FclWorld> check_world;
  const FclWorld& Checked() const { return check_world ? *check_world : *world; }
  Configuration start, goal;
};

// The suite's run: the problems and robot, both sides' runs per problem, and what the output needs
// beyond them (families, times, the peer's range and segment). Run() plans every problem in order
// (the order fixes OMPL's random draws, seeded once per process), then prints and writes the
// results.
class MbmSuite {
 public:
  explicit MbmSuite(const SuiteOptions& options) : options_(options) {}

  int Run();

 private:
  const std::vector<MbmProblem>& problems() const { return data_.problems; }

  // Loading: the problems, the robot, OMPL's seed and the families.
  int Load();
  int BuildProblem(size_t k, Problem* problem) const;

  // Planning: one problem, both sides, each returned path checked densely.
  int PlanProblem(size_t k);
  void PlanOurs(size_t k, const Problem& problem);
  void CheckOurPaths(size_t k, const Problem& problem, const planners::PlanResult& plan);
  std::shared_ptr<ob::SpaceInformation> PeerSpaceInformation(const Problem& problem, int64_t* state_checks);
  void PlanPeer(size_t k, const Problem& problem);
  void SecondOpinion(size_t k, const Problem& problem);
  void ReportFamily(size_t k) const;

  // Output: JSON lines, OMPL benchmark logs, the verdict.
  std::vector<const PlanRun*> GroupRuns(const std::vector<PlanRun>& runs, int32_t f) const;
  void PrintSideLines(int32_t f) const;
  std::vector<double> Values(const std::vector<PlanRun>& runs, int32_t f, double PlanRun::*field, bool solved_only,
                             double scale) const;
  double Ratio(int32_t f, double PlanRun::*field, bool solved_only) const;
  void PrintRatios() const;
  std::string LogSetup() const;
  int WriteOmplLogs() const;
  int Finish() const;

  const SuiteOptions& options_;
  const double time_limit_ = options_.time_limit_s > 0.0 ? options_.time_limit_s : (options_.quick ? 2.0 : 10.0);

  MbmData data_;
  std::shared_ptr<const RobotModel> robot_;
  int32_t dof_ = 0;
  std::optional<planners::JointSpace> space_;
  std::optional<FclRobot> fcl_robot_;
  std::vector<std::string> families_;
  std::vector<int32_t> family_of_;  // Per problem.

  std::vector<PlanRun> ours_, peer_;  // Per problem.
  std::vector<RigidTransform> X_WL_;
  std::vector<double> q_;  // The peer's state being checked.
  core::SceneCache cache_;
  int errors_ = 0;
  double peer_range_ = 0.0, peer_segment_ = 0.0;
  std::string date_;
  std::vector<double> family_seconds_;
  double suite_s_ = 0.0;
};

// Problems and robot: the defaults (the extracted Panda sample with --quick, all 700 from the archive
// otherwise) or --problems and --robot.
int MbmSuite::Load() {
  if (int code = LoadMbmData("mbm", options_, &data_); code != 0) return code;
  robot_ = data_.robot;
  dof_ = robot_->num_positions();
  space_.emplace(planners::JointSpace::ForRobot(*robot_));
  fcl_robot_.emplace(*robot_);

  // OMPL: seeded once for the process; its informational messages (on stdout) silenced.
  ompl::msg::setLogLevel(ompl::msg::LOG_WARN);
  ompl::RNG::setSeed(static_cast<std::uint_fast32_t>(options_.seed));

  for (const MbmProblem& p : problems()) {
    if (families_.empty() || families_.back() != p.family) families_.push_back(p.family);
    family_of_.push_back(static_cast<int32_t>(families_.size()) - 1);
  }
  std::cerr << "mbm: robot '" << robot_->name() << "', " << data_.source << ": " << problems().size()
            << " problems in " << families_.size() << " families, " << dof_
            << " joints; time limit " << time_limit_ << " s per problem and side; joint-space extent "
            << space_->MaxExtent() << " rad\n";

  ours_.resize(problems().size());
  peer_.resize(problems().size());
  X_WL_.resize(static_cast<size_t>(robot_->num_links()));
  q_.resize(static_cast<size_t>(dof_));
  date_ = UtcNow();
  family_seconds_.assign(families_.size(), 0.0);
  return 0;
}

// Problem k's scene, the peer's world on it, and its start and goal.
int MbmSuite::BuildProblem(size_t k, Problem* problem) const {
  const MbmProblem& p = problems()[k];
  auto scene = BuildProblemScene(p, data_.maps, options_.cloud_spacing);
  auto ends = ProblemEnds(p, *robot_);
  if (!scene.ok() || !ends.ok()) {
    std::cerr << "mbm: " << p.name << ": " << (!scene.ok() ? scene.error() : ends.error()).message << "\n";
    return 1;
  }
  problem->scene = scene.value();
  problem->world.emplace(*problem->scene);
  if (options_.cloud_spacing > 0.0) problem->check_world.emplace(*problem->scene, true);
  problem->start = ends.value().first;
  problem->goal = ends.value().second;
  return 0;
}

int MbmSuite::PlanProblem(size_t k) {
  const double t_problem = Now();
  Problem problem;
  if (int code = BuildProblem(k, &problem); code != 0) return code;
  if (k == 0) {
    // The robot's self-clearance maps fill in the background once its first scene is built
    // (SelfClearanceFill): every problem is planned on filled maps.
    const double t_fill = Now();
    core::AwaitSelfClearanceFill();
    std::cerr << "mbm: self-clearance maps filled in " << Now() - t_fill << " s\n";
  }
  PlanOurs(k, problem);
  PlanPeer(k, problem);
  SecondOpinion(k, problem);
  family_seconds_[family_of_[k]] += Now() - t_problem;
  ReportFamily(k);
  return 0;
}

// Ours: the timed call (planning and simplification) on lazily certified edges. The raw path is the
// search's candidate before simplification (its edges passed the quick sampled check; only the
// returned path is certified), re-checked for the record.
void MbmSuite::PlanOurs(size_t k, const Problem& problem) {
  PlanRun& r = ours_[k];
  const planners::ScenePlanning planning(problem.scene);
  planners::PlannerOptions opts;
  opts.type = planners::PlannerType::kRrtConnect;
  opts.seed = k;
  opts.simplify = true;
  planners::Termination termination;
  termination.time_limit_s = time_limit_;
  const double t0 = Now();
  auto result = planners::Plan(planning.context(), problem.start, problem.goal, opts, termination);
  r.time_s = Now() - t0;
  if (!result.ok()) {
    ++errors_;
    r.outcome = "error";
    std::cerr << "mbm: ERROR ours " << problems()[k].name << ": " << result.error().message << "\n";
    return;
  }
  const planners::PlanResult& plan = result.value();
  r.outcome = planners::PlanOutcomeName(plan.outcome);
  r.solved = plan.solved();
  r.plan_s = plan.stats.plan_time_s;
  r.simplify_s = plan.stats.simplify_time_s;
  r.state_checks = plan.stats.state_checks;
  r.motion_checks = plan.stats.motion_checks + plan.stats.quick_motion_checks;
  r.motion_states = plan.stats.motion_states;
  r.graph_states = plan.stats.vertices;
  if (r.solved) CheckOurPaths(k, problem, plan);
}

// Our returned and raw paths: lengths, waypoints, and the dense check (failures noted on stderr).
void MbmSuite::CheckOurPaths(size_t k, const Problem& problem, const planners::PlanResult& plan) {
  PlanRun& r = ours_[k];
  r.length = planners::PathLength(*space_, plan.path);
  r.waypoints = static_cast<int64_t>(plan.path.size());
  r.check = DensePathCheck(*fcl_robot_, problem.Checked(), *problem.scene, plan.path, kDenseStep);
  const std::vector<Configuration>& raw_path = plan.raw_path;
  r.raw_length = planners::PathLength(*space_, raw_path);
  r.raw_waypoints = static_cast<int64_t>(raw_path.size());
  r.raw_check = DensePathCheck(*fcl_robot_, problem.Checked(), *problem.scene, raw_path, kDenseStep);
  r.raw_checked = true;
  for (const auto* c : {&r.raw_check, &r.check}) {
    if (!c->valid) {
      std::cerr << "mbm: " << (c == &r.check ? "OURS INVALID PATH " : "note: ours' quick-checked raw candidate ")
                << problems()[k].name << " (" << (c == &r.raw_check ? "raw" : "returned") << "): " << Describe(*c)
                << "\n";
    }
  }
}

// The peer's space: a RealVectorStateSpace bounded by the joint limits, and a validity checker that
// checks the bounds and then runs the FCL checker (counted in *state_checks). Sets the longest valid
// segment.
std::shared_ptr<ob::SpaceInformation> MbmSuite::PeerSpaceInformation(const Problem& problem, int64_t* state_checks) {
  auto ompl_space = std::make_shared<ob::RealVectorStateSpace>(static_cast<unsigned>(dof_));
  ob::RealVectorBounds bounds(static_cast<unsigned>(dof_));
  for (int32_t j = 0; j < dof_; ++j) {
    const double lo = robot_->lower_limits()[j], hi = robot_->upper_limits()[j];
    bounds.setLow(static_cast<unsigned>(j), std::isfinite(lo) ? lo : -M_PI);
    bounds.setHigh(static_cast<unsigned>(j), std::isfinite(hi) ? hi : M_PI);
  }
  ompl_space->setBounds(bounds);
  auto si = std::make_shared<ob::SpaceInformation>(ompl_space);
  const ob::SpaceInformation* si_raw = si.get();
  si->setStateValidityChecker([this, si_raw, state_checks, &problem](const ob::State* s) {
    ++*state_checks;
    if (!si_raw->satisfiesBounds(s)) return false;
    const double* v = s->as<ob::RealVectorStateSpace::StateType>()->values;
    std::copy(v, v + dof_, q_.begin());
    (void)robot_->ForwardKinematics(q_, std::span<RigidTransform>(X_WL_), problem.scene->X_WB());
    fcl_robot_->Pose(X_WL_);
    return fcl_robot_->Free(*problem.scene, *problem.world->manager);
  });
  si->setup();
  peer_segment_ = ompl_space->getLongestValidSegmentLength();
  return si;
}

// The peer: OMPL's RRTConnect with the FCL checker, then OMPL's simplifier with the time left.
void MbmSuite::PlanPeer(size_t k, const Problem& problem) {
  PlanRun& r = peer_[k];
  int64_t state_checks = 0;
  const std::shared_ptr<ob::SpaceInformation> si = PeerSpaceInformation(problem, &state_checks);
  const ob::StateSpacePtr& ompl_space = si->getStateSpace();
  auto pdef = std::make_shared<ob::ProblemDefinition>(si);
  ob::ScopedState<> ompl_start(ompl_space), ompl_goal(ompl_space);
  for (int32_t j = 0; j < dof_; ++j) {
    ompl_start[static_cast<unsigned>(j)] = problem.start[static_cast<size_t>(j)];
    ompl_goal[static_cast<unsigned>(j)] = problem.goal[static_cast<size_t>(j)];
  }
  pdef->setStartAndGoalStates(ompl_start, ompl_goal);
  auto planner = std::make_shared<og::RRTConnect>(si);
  planner->setProblemDefinition(pdef);
  planner->setup();
  peer_range_ = planner->getRange();

  const double t0 = Now();
  const ob::PlannerStatus status = planner->solve(ob::timedPlannerTerminationCondition(time_limit_));
  const double t1 = Now();
  r.plan_s = t1 - t0;
  r.solved = status == ob::PlannerStatus::EXACT_SOLUTION;
  r.outcome = status.asString();
  std::vector<Configuration> raw_path, path;
  if (r.solved) {
    og::PathGeometric solution(*pdef->getSolutionPath()->as<og::PathGeometric>());
    raw_path = Waypoints(solution, dof_);
    og::PathSimplifier simplifier(si, pdef->getGoal());
    simplifier.simplify(solution, ob::timedPlannerTerminationCondition(std::max(0.0, time_limit_ - r.plan_s)));
    const double t2 = Now();
    r.simplify_s = t2 - t1;
    path = Waypoints(solution, dof_);
  }
  r.time_s = Now() - t0;
  r.state_checks = state_checks;
  const auto& mv = si->getMotionValidator();
  r.motion_checks = static_cast<int64_t>(mv->getValidMotionCount()) + static_cast<int64_t>(mv->getInvalidMotionCount());
  {
    ob::PlannerData graph(si);
    planner->getPlannerData(graph);
    r.graph_states = graph.numVertices();
  }
  if (r.solved) {
    r.raw_length = Length(raw_path);
    r.length = Length(path);
    r.raw_waypoints = static_cast<int64_t>(raw_path.size());
    r.waypoints = static_cast<int64_t>(path.size());
    r.raw_check = DensePathCheck(*fcl_robot_, problem.Checked(), *problem.scene, raw_path, kDenseStep);
    r.raw_checked = true;
    r.check = DensePathCheck(*fcl_robot_, problem.Checked(), *problem.scene, path, kDenseStep);
  }
}

// A second opinion on every colliding state the dense check found: our CLEAR at that state.
void MbmSuite::SecondOpinion(size_t k, const Problem& problem) {
  for (PlanRun* r : {&ours_[k], &peer_[k]}) {
    for (const DensePathResult* c : {&r->raw_check, &r->check}) {
      if (c->q_collide.empty()) continue;
      const core::Result<core::StateResult> state = problem.scene->CheckState(c->q_collide, &cache_);
      if (!state.ok()) {
        ++errors_;
        continue;
      }
      if (state.value().free) {
        ++r->unconfirmed;
        std::cerr << "mbm: DISAGREE " << problems()[k].name
                  << ": the dense check's colliding state is free by our CLEAR; q =";
        for (double v : c->q_collide) std::cerr << " " << v;
        std::cerr << "; FCL pairwise contacts:";
        (void)robot_->ForwardKinematics(c->q_collide, std::span<RigidTransform>(X_WL_), problem.scene->X_WB());
        fcl_robot_->Pose(X_WL_);
        for (const std::string& contact : fcl_robot_->AllContacts(*problem.scene, problem.Checked().Raw())) {
          std::cerr << " [" << contact << "]";
        }
        if (auto d = problem.scene->ComputeDistance(c->q_collide, {}, &cache_); d.ok()) {
          std::cerr << "; our distance [" << d.value().lower_bound << ", " << d.value().upper_bound << "] at "
                    << d.value().nearest.pair.Describe(*problem.scene);
        }
        std::cerr << "\n";
      } else {
        ++r->confirmed;
      }
    }
  }
}

// After a family's last problem k: its count, time, solved problems and invalid paths on stderr.
void MbmSuite::ReportFamily(size_t k) const {
  const bool family_done = k + 1 == problems().size() || family_of_[k + 1] != family_of_[k];
  if (!family_done) return;
  const int32_t f = family_of_[k];
  int64_t count = 0, ours_solved = 0, peer_solved = 0, peer_bad = 0, ours_bad = 0;
  for (size_t i = 0; i <= k; ++i) {
    if (family_of_[i] != f) continue;
    ++count;
    ours_solved += ours_[i].solved;
    peer_solved += peer_[i].solved;
    ours_bad += ours_[i].solved && !ours_[i].check.valid;  // Returned paths; raw candidates are noted above.
    peer_bad += peer_[i].solved && ((peer_[i].raw_checked && !peer_[i].raw_check.valid) || !peer_[i].check.valid);
  }
  std::cerr << "mbm: " << families_[f] << ": " << count << " problems in " << family_seconds_[f]
            << " s; solved ours " << ours_solved << ", peer " << peer_solved << "; problems with an invalid "
            << "path: ours " << ours_bad << " (returned), peer " << peer_bad << " (raw or simplified)\n";
}

// The runs of family f (all with f < 0).
std::vector<const PlanRun*> MbmSuite::GroupRuns(const std::vector<PlanRun>& runs, int32_t f) const {
  std::vector<const PlanRun*> out;
  for (size_t k = 0; k < runs.size(); ++k) {
    if (f < 0 || family_of_[k] == f) out.push_back(&runs[k]);
  }
  return out;
}

// Both sides' lines for family f ("overall" with f < 0).
void MbmSuite::PrintSideLines(int32_t f) const {
  const std::string group = f < 0 ? "overall" : families_[f];
  JsonLine o = SideLine(robot_->name(), "ours", group, GroupRuns(ours_, f), time_limit_);
  o.Add("errors", static_cast<int64_t>(errors_));
  o.Add("quick_resolution", planners::ScenePlanning::kDefaultQuickResolution);
  o.Add("range", space_->MaxExtent() * 0.2);
  o.Print();
  JsonLine e = SideLine(robot_->name(), "peer", group, GroupRuns(peer_, f), time_limit_);
  e.Add("range", peer_range_).Add("longest_valid_segment", peer_segment_);
  e.Print();
}

// `field` times `scale` over family f's runs (all with f < 0), solved ones only if `solved_only`.
std::vector<double> MbmSuite::Values(const std::vector<PlanRun>& runs, int32_t f, double PlanRun::*field,
                                     bool solved_only, double scale) const {
  std::vector<double> v;
  for (size_t k = 0; k < runs.size(); ++k) {
    if ((f < 0 || family_of_[k] == f) && (!solved_only || runs[k].solved)) v.push_back(scale * runs[k].*field);
  }
  return v;
}

// The peer's median of `field` over ours.
double MbmSuite::Ratio(int32_t f, double PlanRun::*field, bool solved_only) const {
  return Median(Values(peer_, f, field, solved_only, 1.0)) / Median(Values(ours_, f, field, solved_only, 1.0));
}

void MbmSuite::PrintRatios() const {
  JsonLine line;
  line.Add("suite", kSuite).Add("case", "ratios").Add("n", static_cast<int64_t>(problems().size()));
  line.Add("robot", robot_->name());
  line.Add("ours", kOurs).Add("peer", kPeer).Add("time_limit_s", time_limit_);
  line.Add("ours_time_ms_median", Median(Values(ours_, -1, &PlanRun::time_s, false, 1e3)));
  line.Add("peer_time_ms_median", Median(Values(peer_, -1, &PlanRun::time_s, false, 1e3)));
  line.Add("time_ratio", Ratio(-1, &PlanRun::time_s, false));
  line.Add("time_p95_ratio", Percentile(Values(peer_, -1, &PlanRun::time_s, false, 1.0), 0.95) /
                                 Percentile(Values(ours_, -1, &PlanRun::time_s, false, 1.0), 0.95));
  line.Add("plan_time_ratio", Ratio(-1, &PlanRun::plan_s, false));
  line.Add("raw_length_ratio", Ratio(-1, &PlanRun::raw_length, true));
  line.Add("length_ratio", Ratio(-1, &PlanRun::length, true));
  for (int32_t f = 0; f < static_cast<int32_t>(families_.size()); ++f) {
    line.Add("time_ratio_" + families_[f], Ratio(f, &PlanRun::time_s, false));
  }
  line.Add("suite_seconds", suite_s_);
  line.Print();
}

// The setup text of every OMPL benchmark log.
std::string MbmSuite::LogSetup() const {
  std::ostringstream setup;
  setup << data_.source << " (robot " << robot_->name() << ", " << dof_ << " joints), " << problems().size()
        << " problems in " << families_.size() << " families (" << (options_.quick ? "--quick sample" : "all")
        << ")\n";
  setup << "ours: " << kOurs << "; range " << space_->MaxExtent() * 0.2 << "; seed = problem index\n";
  setup << "peer: " << kPeer << "; range " << peer_range_ << ", longest valid segment " << peer_segment_
        << "; ompl::RNG::setSeed(" << options_.seed << ") once per process\n";
  setup << "valid: the path re-checked by peers::DensePathCheck (states at most " << kDenseStep
        << " rad apart in every joint, exact FCL collision, joint limits)\n";
  return setup.str();
}

// OMPL benchmark logs (with --ompl-log): one experiment per family, both planners, a run per problem.
int MbmSuite::WriteOmplLogs() const {
  if (options_.ompl_log.empty()) return 0;
  std::error_code ec;
  fs::create_directories(options_.ompl_log, ec);
  const std::string setup = LogSetup();
  for (int32_t f = 0; f < static_cast<int32_t>(families_.size()); ++f) {
    LogPlanner a{kOursName, {{"range REAL", Num(space_->MaxExtent() * 0.2)}, {"certified BOOLEAN", "1"}}, {}};
    LogPlanner b{kPeerName, {{"range REAL", Num(peer_range_)}, {"longest valid segment REAL", Num(peer_segment_)}}, {}};
    int64_t count = 0;
    for (size_t k = 0; k < problems().size(); ++k) {
      if (family_of_[k] != f) continue;
      ++count;
      const int number = std::atoi(problems()[k].name.substr(problems()[k].name.rfind('/') + 1).c_str());
      a.runs.push_back(LogRun(ours_[k], number));
      b.runs.push_back(LogRun(peer_[k], number));
    }
    const std::string experiment = "mbm_" + data_.robot_label + "_" + families_[f];
    const std::string file = (fs::path(options_.ompl_log) / (experiment + ".log")).string();
    if (!WriteOmplLog(file, experiment, setup, date_, options_.seed, time_limit_, family_seconds_[f],
                      {a, b}, count)) {
      std::cerr << "mbm: cannot write " << file << "\n";
      return 1;
    }
  }
  std::cerr << "mbm: OMPL benchmark logs written to " << options_.ompl_log << " (one per family)\n";
  return 0;
}

// Our returned (simplified) paths are certified; the raw candidates passed only the quick check.
int MbmSuite::Finish() const {
  std::cerr << "mbm: " << problems().size() << " problems in " << suite_s_ << " s\n";
  int64_t ours_invalid = 0;
  for (const PlanRun& r : ours_) ours_invalid += r.solved && !r.check.valid;
  if (errors_ > 0 || ours_invalid > 0) {
    std::cerr << "mbm: " << errors_ << " errors, " << ours_invalid
              << " problems where our path failed the dense check\n";
    return 1;
  }
  return 0;
}

int MbmSuite::Run() {
  if (options_.time_limit_s < 0.0 || !std::isfinite(options_.time_limit_s)) {
    std::cerr << "mbm: --time-limit must be a positive number of seconds (0 keeps the default)\n";
    return 2;
  }
  if (int code = Load(); code != 0) return code;
  const double t_suite = Now();
  for (size_t k = 0; k < problems().size(); ++k) {
    if (int code = PlanProblem(k); code != 0) return code;
  }
  suite_s_ = Now() - t_suite;
  // JSON lines: per family and overall, per side; then the ratios.
  for (int32_t f = 0; f < static_cast<int32_t>(families_.size()); ++f) PrintSideLines(f);
  PrintSideLines(-1);
  PrintRatios();
  if (int code = WriteOmplLogs(); code != 0) return code;
  return Finish();
}

}  // namespace

int RunMbm(const SuiteOptions& options) {
  MbmSuite suite(options);
  return suite.Run();
}

}  // namespace proximity::bench
