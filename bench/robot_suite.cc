// Suite robot: CLEAR(q) on MotionBenchMaker-format problems (by default the MotionBenchMaker Panda
// problems and mbm_panda robot; --robot and --problems take any robot and problem folder, as
// generate makes them), box / cylinder / sphere worlds, ours (Scene::CheckState) beside a MoveIt-style
// FCL 0.7 checker on the same scenes and the same states. Cases: every start and goal state, and
// uniform random states within the joint limits, overall and per problem family; and LINK(q0, q1) on
// straight joint-space edges like a planner's (a free start, a random direction, 0.05 to 1 rad long,
// clamped to the limits) plus every problem's start -> goal edge: ours certified and ours discrete
// (Scene::CheckMotion) beside the same FCL checker sampling each edge the way OMPL's
// DiscreteMotionValidator does, at OMPL's default resolution (1% of the joint space's extent), all
// judged against a dense reference (states at most 1e-3 rad apart in every joint, each checked exactly
// by our CLEAR). Every line names the robot ("robot"), so runs on different robots compare case by case.
//
// The peer is the MoveIt-style FCL checker of bench/peers/fcl_robot.h: one BVHModel<OBBRSS> per
// link mesh (built once per robot and shared by every scene), fcl::Box / fcl::Cylinder / fcl::Sphere
// objects for the world primitives in a DynamicAABBTreeCollisionManager, the link objects' transforms
// and AABBs updated per state, the links checked against the world manager (collide(object, callback))
// and then against each other through a second manager over the links, with the scene's allowed
// pairs applied in the callback, stopping at the first contact. Link poses come from our forward
// kinematics for both sides (inside each side's timed call). The peer keeps its objects and managers
// across states and looks the allowed pairs up by index, so it is somewhat faster than MoveIt itself,
// which allocates its link objects and self-collision manager per call and looks pairs up by name.
#include <fcl/fcl.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "bench_util.h"
#include "mbm_data.h"
#include "peers/fcl_robot.h"
#include "proximity/mbm/mbm.h"
#include "proximity/core/scene/scene.h"
#include "bvh/bvh.h"

namespace proximity::bench {
namespace {

namespace fs = std::filesystem;

// A query's answer, or (counting a failure) an empty answer: the suite's inputs are valid, so a failure
// is a bug, reported in the suite's summary.
template <class T>
T AnswerOrCount(core::Result<T> result, int* failures) {
  if (result.ok()) return std::move(result).value();
  ++*failures;
  return T();
}
using mbm::MbmProblem;
using core::MotionRequest;
using core::RigidTransform;
using core::RobotModel;
using core::ContinuousRequest;
using core::Scene;
using core::SceneDistanceRequest;
using core::SceneCache;
using core::StateResult;
using peers::FclRobot;
using peers::FclWorld;

constexpr char kSuite[] = "robot";
constexpr char kPeer[] = "fcl-0.7 MoveIt-style (OBBRSS links, DynamicAABBTree world + self)";
constexpr char kPeerLink[] =
    "fcl-0.7 MoveIt-style (OBBRSS links, DynamicAABBTree world + self), OMPL DiscreteMotionValidator-style "
    "sampling at 1% of the joint-space extent";

// One state to check: its problem and configuration.
struct StateItem {
  int32_t problem = 0;
  std::vector<double> q;
};

// Per-state results of one side's timed runs.
struct SideRun {
  std::vector<double> times_us;
  std::vector<char> free;
  std::vector<core::QueryStats> stats;  // Ours only.
  std::vector<int64_t> pairs;           // Ours only.
  std::vector<char> self;               // Ours only: the first contact was link against link.
  std::vector<double> first_us;         // Ours only: each state's time the first time it is asked.
  // Peer only: a state FCL called colliding where every contact was a mesh-sphere one the brute-force
  // distance overrules (peers::SphereApartFromMesh), asked again after the timing.
  std::vector<char> refuted;
};

// A subset's common line: times, work and pair counts, agreement and colliding fractions.
JsonLine StateCaseLine(const std::string& robot, const std::string& name, const SideRun& ours, const SideRun& peer,
                       const std::vector<char>& keep) {
  const auto ours_t = Select(ours.times_us, keep), peer_t = Select(peer.times_us, keep);
  Work work;
  double pairs = 0;
  int64_t agree = 0, refuted = 0, ours_colliding = 0, peer_colliding = 0, free_by_bounds = 0;
  std::vector<char> keep_free;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (!keep[i]) continue;
    work.Add(ours.stats[i]);
    // The conservative stages (broad phase, then each pair's bounding-volume hierarchy) prove a state
    // free without any exact triangle or GJK test.
    free_by_bounds += ours.free[i] && ours.stats[i].triangle_tests == 0;
    pairs += static_cast<double>(ours.pairs[i]);
    agree += ours.free[i] == peer.free[i] || (!peer.refuted.empty() && peer.refuted[i]);
    refuted += !peer.refuted.empty() && peer.refuted[i];
    ours_colliding += !ours.free[i];
    peer_colliding += !peer.free[i];
    keep_free.push_back(ours.free[i]);
  }
  const double n = std::max<double>(1.0, static_cast<double>(ours_t.size()));
  JsonLine line = CaseLine(kSuite, name, ours_t, work, kPeer, peer_t);
  line.Add("robot", robot);
  line.Add("peer_p95_us", Percentile(peer_t, 0.95));
  const auto first_t = Select(ours.first_us, keep);
  line.Add("ours_first_pass_us", Median(first_t)).Add("ours_first_pass_mean_us", Mean(first_t));
  line.Add("ratio_first_pass", Median(peer_t) / std::max(1e-9, Median(first_t)));
  line.Add("ours_pairs_tested", pairs / n);
  line.Add("agree", agree).Add("peer_contacts_refuted", refuted);
  line.Add("colliding_ours", static_cast<double>(ours_colliding) / n);
  line.Add("colliding_peer", static_cast<double>(peer_colliding) / n);
  line.Add("free_proven_by_bounds",
           static_cast<double>(free_by_bounds) / std::max<double>(1.0, static_cast<double>(n - ours_colliding)));
  std::vector<char> keep_colliding(keep_free.size());
  for (size_t i = 0; i < keep_free.size(); ++i) keep_colliding[i] = !keep_free[i];
  line.Add("ours_free_us", Median(Select(ours_t, keep_free))).Add("peer_free_us", Median(Select(peer_t, keep_free)));
  line.Add("ours_colliding_us", Median(Select(ours_t, keep_colliding)));
  line.Add("peer_colliding_us", Median(Select(peer_t, keep_colliding)));
  return line;
}

// One LINK edge: its problem, its ends, and whether it is the problem's start -> goal edge.
struct EdgeItem {
  int32_t problem = 0;
  std::vector<double> q0, q1;
  bool start_goal = false;
};

// Per-edge results of one method's timed runs (answers from the first repetition).
struct EdgeRun {
  std::vector<double> times_us;
  std::vector<char> free;
  std::vector<int64_t> states;
  std::vector<int64_t> distance_queries;  // Ours certified only.
  std::vector<char> undecided;            // Ours certified only.
  std::vector<double> t_free;             // Ours only.
  std::vector<core::QueryStats> stats;    // Ours only.
};

// What the LINK case counts over its edges, each method judged against the dense reference, and the
// edges' subsets (colliding or free by the reference, start -> goal or random).
struct LinkTally {
  int64_t colliding = 0, start_goal_edges = 0, start_goal_colliding = 0;
  int64_t miss_certified = 0, miss_discrete = 0, miss_peer = 0, undecided = 0, prefix_violations = 0;
  int64_t certified_colliding_dense_free = 0, discrete_agree = 0, miss_planning = 0, planning_disagree = 0;
  std::vector<char> keep_colliding, keep_free, keep_start_goal, keep_random;
};

// The certified check as planners ask it: a coarse-to-fine sampled pre-pass at this resolution (rad)
// rejects most colliding edges, and a collision is not narrowed (t_free is then a certified, loose
// prefix).
constexpr double kPrepassResolution = 0.1;

// The suite's run: the problems, both sides' scenes, the states and edges both are checked on, and
// the cache and failure count every case shares. Run() loads, then runs the cases in order (the order
// fixes every random draw and every use of the shared cache).
class RobotSuite {
 public:
  explicit RobotSuite(const SuiteOptions& options) : options_(options) {}

  int Run();

 private:
  static constexpr int kRandomReps = 3;
  static constexpr int kLinkReps = 3;

  const std::vector<MbmProblem>& problems() const { return data_.problems; }
  int num_edges() const { return static_cast<int>(edges_.size()); }
  // The joint limits, infinite ones replaced by -pi / pi.
  double Lower(int32_t j) const;
  double Upper(int32_t j) const;

  // Loading: the problems, their scenes (ours and the peer's) and their start and goal states.
  int Load();
  int AddProblem(int32_t k);
  // Uniform random states within the joint limits, contiguous per problem.
  void MakeRandomStates();

  // CLEAR: both sides over a set of states.
  void PoseFcl(std::span<const double> q, const Scene& scene);
  // Whether FCL finds q free in problem k once its mesh-sphere contacts are refereed by brute force
  // (asked after the timing, for a state the timed FCL called colliding).
  bool PeerFreeRefereed(std::span<const double> q, int32_t k);
  void TimeStates(const std::vector<StateItem>& states, int reps, SideRun* ours, SideRun* peer);
  void ReportDisagreements(const char* what, const std::vector<StateItem>& states, const SideRun& ours,
                           SideRun* peer);
  std::vector<char> FamilyKeep(const std::vector<StateItem>& states, int32_t family) const;
  void PrintFamilyLines(const std::string& prefix, const std::vector<StateItem>& states, const SideRun& ours,
                        const SideRun& peer) const;
  static void AddTargetFields(JsonLine& line, const SideRun& ours, const SideRun& peer);
  void ClearStartGoal();
  void ClearRandom();
  void PrintRandomProfile(const SideRun& ours, const SideRun& peer);
  void ClearBatch();

  // Distance on the start and goal states.
  void Distance();
  void DistanceLine(double rel, int reps, const std::vector<double>& fcl_distance,
                    const std::vector<double>& peer_times);
  void DistanceRandom();
  template <class NameOf>
  void AddPeerAgreement(JsonLine& line, const std::vector<core::SceneDistanceResult>& results,
                        const std::vector<double>& fcl_distance, NameOf&& name_of);

  // LINK on edges.
  void Link();
  void SetLinkResolution();
  void MakeEdges();
  double EdgeLength(const EdgeItem& e) const;
  std::span<const double> Along(const EdgeItem& e, double t);
  void DenseReference();
  void RunOursLink(const MotionRequest& request, EdgeRun* out);
  void RunPeerLink(EdgeRun* out);
  void TimeLinkMethods();
  LinkTally CountMisses() const;
  void ReportCertifiedMiss(int i, bool miss) const;
  double MeanOverEdges(const std::vector<int64_t>& v) const;
  JsonLine LinkLine(const std::string& name, const EdgeRun& ours, const LinkTally& tally) const;
  void PrintLinkLines(const LinkTally& tally) const;
  void Continuous(const LinkTally& tally);

  int Finish() const;

  const SuiteOptions& options_;
  const int reps_ = options_.quick ? 3 : 5;
  const int per_problem_ = options_.quick ? 200 : 100;
  // Random edges per problem: set by MakeEdges so that a full run has at least kMinRandomEdges in all.
  int edges_per_problem_ = 10;
  static constexpr int kMinRandomEdges = 10000;
  // Full runs check our distance against the peer's on this many random states our CLEAR finds free.
  static constexpr int kDistanceRandomStates = 10000;
  std::vector<char> random_free_;  // Per random state: our CLEAR's answer.

  MbmData data_;
  std::shared_ptr<const RobotModel> robot_;
  int32_t dof_ = 0;
  std::optional<FclRobot> fcl_robot_;
  std::vector<std::shared_ptr<const Scene>> scenes_;
  std::vector<FclWorld> worlds_;
  std::vector<std::string> families_;
  std::vector<int32_t> family_of_;  // Per problem.
  std::vector<StateItem> start_goal_;
  std::vector<StateItem> random_states_;

  SceneCache cache_;
  std::vector<RigidTransform> X_WL_;
  std::vector<double> q_;  // A state along an edge (Along()).
  int failures_ = 0;

  // LINK: OMPL's discrete resolution, the edges, the dense reference's first colliding t per edge (or
  // -1), and each method's runs.
  double extent_ = 0.0, resolution_ = 0.0;
  std::vector<EdgeItem> edges_;
  std::vector<double> dense_;
  int64_t dense_states_ = 0, dense_peer_disagree_ = 0;
  EdgeRun certified_, planning_, discrete_, link_peer_;
  // --cloud: each problem's sensed world (points, kept, filter and build time).
  std::vector<SensedWorldStats> sensed_;
};

double RobotSuite::Lower(int32_t j) const {
  const double lo = robot_->lower_limits()[j];
  return std::isfinite(lo) ? lo : -M_PI;
}

double RobotSuite::Upper(int32_t j) const {
  const double hi = robot_->upper_limits()[j];
  return std::isfinite(hi) ? hi : M_PI;
}

// Problems and robot: the defaults (the extracted Panda sample with --quick, all 700 from the archive
// otherwise) or --problems and --robot.
int RobotSuite::Load() {
  const double t_load = Now();
  if (int code = LoadMbmData("robot", options_, &data_); code != 0) return code;
  robot_ = data_.robot;
  dof_ = robot_->num_positions();
  scenes_.reserve(problems().size());
  worlds_.reserve(problems().size());
  for (int32_t k = 0; k < static_cast<int32_t>(problems().size()); ++k) {
    if (int code = AddProblem(k); code != 0) return code;
  }
  // Loading on our side alone: the robot (meshes, hierarchies, hulls) and every problem's scene, and
  // the process's resident memory then (before the peer builds its models).
  const double load_s = Now() - t_load;
  // The self-clearance maps fill in the background after the first scene (SelfClearanceFill): the
  // queries below are measured on filled maps, whatever state they land in.
  const double t_fill = Now();
  core::AwaitSelfClearanceFill();
  const double fill_s = Now() - t_fill;
  int64_t triangles = 0;
  for (const core::Link& link : robot_->links()) {
    for (const core::LinkGeometry& g : link.geometries) triangles += g.mesh ? g.mesh->num_triangles() : 0;
  }
  JsonLine load_line;
  load_line.Add("suite", "robot").Add("case", "load").Add("robot", robot_->name());
  load_line.Add("robot_triangles", triangles).Add("scenes", static_cast<int64_t>(scenes_.size()));
  load_line.Add("robot_and_scenes_load_s", load_s).Add("self_clearance_fill_s", fill_s);
  load_line.Add("rss_mb", ResidentMegabytes());
  load_line.Print();
  if (options_.cloud_spacing > 0.0) {
    // The sensed worlds: points per problem, kept after the filter, and the filter and build time per
    // 100,000 points sent (the "filtered and ready" figure), as the median over problems.
    std::vector<double> points, kept, per_100k, build_ms;
    for (const SensedWorldStats& w : sensed_) {
      points.push_back(static_cast<double>(w.points));
      kept.push_back(static_cast<double>(w.kept));
      build_ms.push_back(1e3 * w.build_s);
      if (w.points > 0) per_100k.push_back(1e3 * w.build_s * 1e5 / static_cast<double>(w.points));
    }
    JsonLine cloud_line;
    cloud_line.Add("suite", "robot").Add("case", "cloud_build").Add("robot", robot_->name());
    cloud_line.Add("spacing_m", options_.cloud_spacing).Add("radius_m", 0.5 * options_.cloud_spacing);
    cloud_line.Add("points_median", Median(points)).Add("points_max", *std::max_element(points.begin(), points.end()));
    cloud_line.Add("kept_median", Median(kept)).Add("build_ms_median", Median(build_ms));
    cloud_line.Add("build_ms_per_100k_points_median", Median(per_100k));
    // One cloud of 100,000 points: the first problem's obstacles sampled densely enough, built 5 times.
    auto first = mbm::MbmSceneDescription(problems()[0].scene, robot_);
    if (first.ok() && sensed_[0].points > 0) {
      const double spacing = options_.cloud_spacing * std::sqrt(static_cast<double>(sensed_[0].points) / 1e5);
      std::vector<double> ms;
      int64_t n = 0, n_kept = 0;
      for (int rep = 0; rep < 5; ++rep) {
        SensedWorldStats w;
        if (SensedWorld(first.value().objects, spacing, 7, &w).ok()) {
          ms.push_back(1e3 * w.build_s);
          n = w.points;
          n_kept = w.kept;
        }
      }
      if (!ms.empty()) {
        cloud_line.Add("cloud_100k_points", n).Add("cloud_100k_kept", n_kept);
        cloud_line.Add("cloud_100k_build_ms_min", *std::min_element(ms.begin(), ms.end()));
      }
    }
    cloud_line.Print();
  }
  size_t primitives = 0;
  for (const FclWorld& world : worlds_) primitives += world.objects.size();
  fcl_robot_.emplace(*robot_);
  X_WL_.resize(robot_->num_links());
  q_.resize(dof_);
  std::cerr << "robot: robot '" << robot_->name() << "', " << data_.source << ": " << problems().size()
            << " problems in " << families_.size() << " families ("
            << static_cast<double>(primitives) / std::max<size_t>(1, problems().size()) << " primitives per scene), "
            << robot_->num_links() << " links, " << fcl_robot_->num_parts() << " link geometries, "
            << robot_->num_positions() << " joints; loaded and built in " << (Now() - t_load) << " s\n";
  return 0;
}

// Problem k's scenes, its start and goal states and its family.
int RobotSuite::AddProblem(int32_t k) {
  const MbmProblem& p = problems()[k];
  SensedWorldStats sensed;
  auto scene = BuildProblemScene(p, data_.maps, options_.cloud_spacing, &sensed);
  sensed_.push_back(sensed);
  auto ends = ProblemEnds(p, *robot_);
  if (!scene.ok() || !ends.ok()) {
    std::cerr << "robot: " << p.name << ": " << (!scene.ok() ? scene.error() : ends.error()).message << "\n";
    return 1;
  }
  scenes_.push_back(scene.value());
  worlds_.emplace_back(*scenes_.back());
  start_goal_.push_back({k, ends.value().first});
  start_goal_.push_back({k, ends.value().second});
  if (families_.empty() || families_.back() != p.family) families_.push_back(p.family);
  family_of_.push_back(static_cast<int32_t>(families_.size()) - 1);
  return 0;
}

void RobotSuite::MakeRandomStates() {
  std::mt19937_64 rng(options_.seed);
  for (int32_t k = 0; k < static_cast<int32_t>(problems().size()); ++k) {
    for (int s = 0; s < per_problem_; ++s) {
      StateItem item{k, std::vector<double>(dof_)};
      for (int32_t j = 0; j < dof_; ++j) item.q[j] = std::uniform_real_distribution<double>(Lower(j), Upper(j))(rng);
      random_states_.push_back(std::move(item));
    }
  }
}

// The peer's link objects posed at q (link poses from our forward kinematics).
bool RobotSuite::PeerFreeRefereed(std::span<const double> q, int32_t k) {
  const Scene& scene = *scenes_[static_cast<size_t>(k)];
  PoseFcl(q, scene);
  int64_t overruled = 0;
  return fcl_robot_->Free(scene, *worlds_[static_cast<size_t>(k)].manager, &overruled);
}

void RobotSuite::PoseFcl(std::span<const double> q, const Scene& scene) {
  (void)robot_->ForwardKinematics(q, std::span<RigidTransform>(X_WL_), scene.X_WB());
  fcl_robot_->Pose(X_WL_);
}

// Times both sides over `states`; answers and our work come from the first repetition.
void RobotSuite::TimeStates(const std::vector<StateItem>& states, int reps, SideRun* ours, SideRun* peer) {
  const int n = static_cast<int>(states.size());
  ours->free.assign(n, 0);
  ours->stats.assign(n, {});
  ours->pairs.assign(n, 0);
  ours->self.assign(n, 0);
  peer->free.assign(n, 0);
  // The first pass on its own: lazily filled caches (the self-clearance maps' cells) are cold for the
  // states it meets first; the best of the passes after it is the figure reported as ours_us.
  ours->first_us.assign(n, 0.0);
  for (int i = 0; i < n; ++i) {
    const StateItem& s = states[i];
    const double t0 = Now();
    const StateResult r = AnswerOrCount(scenes_[s.problem]->CheckState(s.q, &cache_), &failures_);
    ours->first_us[i] = (Now() - t0) * 1e6;
    ours->free[i] = r.free;
    ours->stats[i] = r.stats;
    ours->pairs[i] = r.pairs_tested;
    ours->self[i] = !r.free && r.contact.self;
  }
  ours->times_us = TimePerItem(n, reps, [&](int i) {
    const StateItem& s = states[i];
    AnswerOrCount(scenes_[s.problem]->CheckState(s.q, &cache_), &failures_);
  });
  peer->times_us = TimePerItem(n, reps, [&](int i) {
    const StateItem& s = states[i];
    const Scene& scene = *scenes_[s.problem];
    PoseFcl(s.q, scene);
    peer->free[i] = fcl_robot_->Free(scene, *worlds_[s.problem].manager);
  });
}

// Referees the states FCL calls colliding and ours free (after the timing): peer->refuted[i] when FCL
// finds the state free once its mesh-sphere contacts are checked by brute force. Then reports every
// remaining disagreement on stderr with a brute-force FCL check of every pair (no broad phase).
void RobotSuite::ReportDisagreements(const char* what, const std::vector<StateItem>& states, const SideRun& ours,
                                     SideRun* peer_run) {
  SideRun& peer = *peer_run;
  peer.refuted.assign(states.size(), 0);
  int64_t refuted = 0;
  for (size_t i = 0; i < states.size(); ++i) {
    if (!ours.free[i] || peer.free[i]) continue;
    peer.refuted[i] = PeerFreeRefereed(states[i].q, states[i].problem);
    refuted += peer.refuted[i];
  }
  if (refuted > 0) {
    std::cerr << "robot: " << what << ": " << refuted << " states FCL calls colliding are free once its mesh-sphere "
              << "contacts are checked by brute force (FCL 0.7's sphere-triangle test)\n";
  }
  int shown = 0;
  for (size_t i = 0; i < states.size(); ++i) {
    if (ours.free[i] == peer.free[i] || peer.refuted[i]) continue;
    if (++shown > 20) continue;
    const StateItem& s = states[i];
    const Scene& scene = *scenes_[s.problem];
    const StateResult r = scene.CheckState(s.q, &cache_).value_or({});
    PoseFcl(s.q, scene);
    std::cerr << "DISAGREE " << what << " " << problems()[s.problem].name << " state " << i << ": ours "
              << (r.free ? "free" : r.contact.Describe(scene)) << ", peer " << (peer.free[i] ? "free" : "colliding")
              << "; q =";
    for (double v : s.q) std::cerr << " " << v;
    std::cerr << "; FCL pairwise contacts:";
    for (const std::string& c : fcl_robot_->AllContacts(scene, worlds_[s.problem].Raw())) std::cerr << " [" << c << "]";
    std::cerr << "\n";
  }
}

std::vector<char> RobotSuite::FamilyKeep(const std::vector<StateItem>& states, int32_t family) const {
  std::vector<char> keep(states.size());
  for (size_t i = 0; i < states.size(); ++i) keep[i] = family_of_[states[i].problem] == family;
  return keep;
}

// One line per family: `prefix` + the family's name.
void RobotSuite::PrintFamilyLines(const std::string& prefix, const std::vector<StateItem>& states,
                                  const SideRun& ours, const SideRun& peer) const {
  for (int32_t f = 0; f < static_cast<int32_t>(families_.size()); ++f) {
    StateCaseLine(robot_->name(), prefix + families_[f], ours, peer, FamilyKeep(states, f)).Print();
  }
}

void RobotSuite::AddTargetFields(JsonLine& line, const SideRun& ours, const SideRun& peer) {
  const double o = Median(ours.times_us), p = Median(peer.times_us);
  line.Add("target_ratio", 20.0).Add("target_ours_us", 2.0).Add("meets_target", p / o >= 20.0 && o <= 2.0);
}

// Case 1: every start and goal state (all free by construction of the problems).
void RobotSuite::ClearStartGoal() {
  SideRun ours, peer;
  const double t0 = Now();
  TimeStates(start_goal_, reps_, &ours, &peer);
  std::cerr << "robot: " << start_goal_.size() << " start/goal states x " << reps_ << " in " << Now() - t0 << " s\n";
  ReportDisagreements("start_goal", start_goal_, ours, &peer);
  JsonLine line = StateCaseLine(robot_->name(), "clear_start_goal", ours, peer, std::vector<char>(start_goal_.size(), 1));
  AddTargetFields(line, ours, peer);
  for (int32_t f = 0; f < static_cast<int32_t>(families_.size()); ++f) {
    const auto keep = FamilyKeep(start_goal_, f);
    line.Add("ours_us_" + families_[f], Median(Select(ours.times_us, keep)));
    line.Add("peer_us_" + families_[f], Median(Select(peer.times_us, keep)));
  }
  line.Print();
  PrintFamilyLines("clear_start_goal_", start_goal_, ours, peer);
}

// Case 2: uniform random states within the limits, overall and per family.
void RobotSuite::ClearRandom() {
  SideRun ours, peer;
  const double t0 = Now();
  TimeStates(random_states_, kRandomReps, &ours, &peer);
  std::cerr << "robot: " << random_states_.size() << " random states x " << kRandomReps << " in " << Now() - t0
            << " s\n";
  ReportDisagreements("random", random_states_, ours, &peer);
  random_free_ = ours.free;
  JsonLine line = StateCaseLine(robot_->name(), "clear_random", ours, peer, std::vector<char>(random_states_.size(), 1));
  AddTargetFields(line, ours, peer);
  line.Add("per_family", per_problem_ * static_cast<int64_t>(problems().size() / std::max<size_t>(1, families_.size())));
  line.Print();
  PrintFamilyLines("clear_random_", random_states_, ours, peer);
  PrintRandomProfile(ours, peer);
}

// Profile hint: forward kinematics alone over the random states, against our whole CLEAR; and both
// sides' medians on free states, world contacts and self contacts.
void RobotSuite::PrintRandomProfile(const SideRun& ours, const SideRun& peer) {
  const auto fk = TimePerItem(static_cast<int>(random_states_.size()), kRandomReps, [&](int i) {
    (void)robot_->ForwardKinematics(random_states_[i].q, std::span<RigidTransform>(X_WL_), RigidTransform::Identity());
  });
  std::cerr << "robot profile: forward kinematics " << Mean(fk) << " us mean of our " << Mean(ours.times_us)
            << " us mean per random state (" << 100.0 * Mean(fk) / Mean(ours.times_us)
            << "%); the rest is part poses, bounds, broad phase and narrow phase\n";
  std::vector<char> world_hit(random_states_.size()), self_hit(random_states_.size());
  for (size_t i = 0; i < random_states_.size(); ++i) {
    world_hit[i] = !ours.free[i] && !ours.self[i];
    self_hit[i] = ours.self[i];
  }
  std::cerr << "robot profile: random states, median us ours / peer: free " << Median(Select(ours.times_us, ours.free))
            << " / " << Median(Select(peer.times_us, ours.free)) << "; world contact ("
            << Select(ours.times_us, world_hit).size() << ") " << Median(Select(ours.times_us, world_hit)) << " / "
            << Median(Select(peer.times_us, world_hit)) << "; self contact (" << Select(ours.times_us, self_hit).size()
            << ") " << Median(Select(ours.times_us, self_hit)) << " / " << Median(Select(peer.times_us, self_hit))
            << "\n";
}

// Case 2c: CLEAR many at once (Scene::CheckStates) on batches of kBatch new random states per problem,
// states this run has not asked before: the batch's first pass (cold: the self-clearance maps' cells
// the states land in may be unfilled), the same states one at a time (CheckState), the batch again,
// and the peer one at a time. Times are per state, means over everything (a batch is timed whole); then
// the free and the colliding states again, each kind as a batch of its own (ours_free_us,
// ours_colliding_us: what each kind costs, the two parts of the mean).
void RobotSuite::ClearBatch() {
  constexpr int kBatch = 1000;
  const int batches = std::max<int>(1, static_cast<int>(problems().size()) / (options_.quick ? 3 : 1));
  std::mt19937_64 rng(options_.seed + 17);
  std::vector<double> qs(static_cast<size_t>(kBatch) * static_cast<size_t>(dof_));
  std::vector<StateResult> out(kBatch);
  double first_s = 0.0, batch_s = 0.0, single_s = 0.0, peer_s = 0.0, free_s = 0.0, colliding_s = 0.0;
  int64_t states = 0, disagree = 0, disagree_peer = 0, peer_refuted = 0, colliding = 0;
  // The batch's free and colliding states again, each kind as a batch of its own: what a state of
  // each kind costs.
  std::vector<double> kind_qs;
  std::vector<StateResult> kind_out;
  std::vector<char> peer_free(kBatch), single_free(kBatch);
  for (int b = 0; b < batches; ++b) {
    const int32_t k = b % static_cast<int32_t>(problems().size());
    const Scene& scene = *scenes_[k];
    for (int i = 0; i < kBatch; ++i) {
      for (int32_t j = 0; j < dof_; ++j) {
        qs[static_cast<size_t>(i) * dof_ + j] = std::uniform_real_distribution<double>(Lower(j), Upper(j))(rng);
      }
    }
    const auto row = [&](int i) { return std::span<const double>(qs.data() + static_cast<size_t>(i) * dof_, dof_); };
    double t0 = Now();
    if (!scene.CheckStates(qs, out, &cache_).ok()) ++failures_;
    first_s += Now() - t0;
    t0 = Now();
    for (int i = 0; i < kBatch; ++i) single_free[i] = AnswerOrCount(scene.CheckState(row(i), &cache_), &failures_).free;
    single_s += Now() - t0;
    t0 = Now();
    if (!scene.CheckStates(qs, out, &cache_).ok()) ++failures_;
    batch_s += Now() - t0;
    t0 = Now();
    for (int i = 0; i < kBatch; ++i) {
      PoseFcl(row(i), scene);
      peer_free[i] = fcl_robot_->Free(scene, *worlds_[k].manager);
    }
    peer_s += Now() - t0;
    for (int i = 0; i < kBatch; ++i) {
      disagree += out[i].free != static_cast<bool>(single_free[i]);
      colliding += !out[i].free;
      if (out[i].free == static_cast<bool>(peer_free[i])) continue;
      if (out[i].free && PeerFreeRefereed(row(i), static_cast<int32_t>(k))) {
        ++peer_refuted;
      } else {
        ++disagree_peer;
      }
    }
    for (const bool want_free : {true, false}) {
      kind_qs.clear();
      for (int i = 0; i < kBatch; ++i) {
        if (out[i].free == want_free) kind_qs.insert(kind_qs.end(), row(i).begin(), row(i).end());
      }
      kind_out.resize(kind_qs.size() / static_cast<size_t>(dof_));
      t0 = Now();
      if (!scene.CheckStates(kind_qs, kind_out, &cache_).ok()) ++failures_;
      (want_free ? free_s : colliding_s) += Now() - t0;
      for (const StateResult& r : kind_out) disagree += r.free != want_free;
    }
    states += kBatch;
  }
  const double n = static_cast<double>(states);
  JsonLine line;
  line.Add("suite", kSuite).Add("case", "clear_batch").Add("robot", robot_->name());
  line.Add("n", states).Add("batch", kBatch).Add("lanes", std::string(core::BatchInstructionSet()));
  line.Add("ours_first_pass_us", first_s / n * 1e6).Add("ours_us", batch_s / n * 1e6);
  line.Add("ours_one_at_a_time_us", single_s / n * 1e6).Add("peer", kPeer).Add("peer_us", peer_s / n * 1e6);
  line.Add("ratio", peer_s / std::max(1e-12, batch_s)).Add("ratio_first_pass", peer_s / std::max(1e-12, first_s));
  line.Add("batch_over_one_at_a_time", single_s / std::max(1e-12, batch_s));
  line.Add("colliding", static_cast<double>(colliding) / n);
  line.Add("ours_free_us", free_s / std::max(1.0, n - static_cast<double>(colliding)) * 1e6);
  line.Add("ours_colliding_us", colliding_s / std::max(1.0, static_cast<double>(colliding)) * 1e6);
  line.Add("disagree_one_at_a_time", disagree).Add("disagree_peer", disagree_peer);
  line.Add("peer_contacts_refuted", peer_refuted);
  line.Add("target_ours_us", 0.25).Add("meets_target", batch_s / n * 1e6 <= 0.25);
  line.Print();
  if (disagree > 0) {
    std::cerr << "robot: CheckStates disagreed with CheckState on " << disagree << " states\n";
    ++failures_;
  }
}

// Case 2b: distance(q) on the start and goal states (free states, as a planner or a controller asks
// about), exact and with a 20% budget, beside FCL's exact per-link distance. FCL's answer must lie
// in our certified interval (up to FCL's GJK tolerance on primitives).
void RobotSuite::Distance() {
  const int n = static_cast<int>(start_goal_.size());
  const int distance_reps = options_.quick ? 1 : 5;  // each state's best of 5: the ratios near targets settle
  std::vector<double> fcl_distance(n);
  const auto peer_times = TimePerItem(n, distance_reps, [&](int i) {
    const StateItem& s = start_goal_[i];
    const Scene& scene = *scenes_[s.problem];
    PoseFcl(s.q, scene);
    fcl_distance[i] = fcl_robot_->Distance(scene, *worlds_[s.problem].manager);
  });
  for (double rel : {0.0, 0.2}) DistanceLine(rel, distance_reps, fcl_distance, peer_times);
  DistanceRandom();
}

// Exact distance on random states our CLEAR finds free (every k-th, up to kDistanceRandomStates; 100 in
// a quick run), each beside the peer's: the peer's distance must lie in our certified interval.
void RobotSuite::DistanceRandom() {
  std::vector<int32_t> free;
  for (size_t i = 0; i < random_free_.size(); ++i) {
    if (random_free_[i]) free.push_back(static_cast<int32_t>(i));
  }
  const size_t want = options_.quick ? 100 : kDistanceRandomStates;
  const size_t stride = std::max<size_t>(1, free.size() / std::max<size_t>(1, want));
  std::vector<int32_t> picked;
  for (size_t i = 0; i < free.size() && picked.size() < want; i += stride) picked.push_back(free[i]);
  const int n = static_cast<int>(picked.size());
  if (n == 0) return;
  std::vector<double> fcl_distance(n);
  const auto peer_times = TimePerItem(n, 1, [&](int i) {
    const StateItem& s = random_states_[picked[i]];
    const Scene& scene = *scenes_[s.problem];
    PoseFcl(s.q, scene);
    fcl_distance[i] = fcl_robot_->Distance(scene, *worlds_[s.problem].manager);
  });
  std::vector<core::SceneDistanceResult> results(n);
  const SceneDistanceRequest request;  // exact
  const auto times = TimePerItem(n, 1, [&](int i) {
    const StateItem& s = random_states_[picked[i]];
    results[i] = AnswerOrCount(scenes_[s.problem]->ComputeDistance(s.q, request, &cache_), &failures_);
  });
  Work work;
  for (const auto& r : results) work.Add(r.stats);
  JsonLine line = CaseLine(kSuite, "distance_random", times, work, kPeer, peer_times);
  line.Add("robot", robot_->name());
  AddPeerAgreement(line, results, fcl_distance, [&](int i) {
    return "random " + problems()[random_states_[picked[i]].problem].name + " state " + std::to_string(picked[i]);
  });
  line.Print();
}

// The peer's distances against our intervals: how many lie outside (below our lower bound, which would
// be our error, and above our upper bound, the peer's), by at most how much; the first few on stderr,
// named by `name_of(i)`.
template <class NameOf>
void RobotSuite::AddPeerAgreement(JsonLine& line, const std::vector<core::SceneDistanceResult>& results,
                                  const std::vector<double>& fcl_distance, NameOf&& name_of) {
  int64_t outside = 0, below_count = 0;
  double worst = 0.0;  // the largest gap between the peer's distance and our interval, metres
  for (size_t i = 0; i < results.size(); ++i) {
    const double tol = 1e-6 + 1e-6 * fcl_distance[i];
    const double below = results[i].lower_bound - fcl_distance[i], above = fcl_distance[i] - results[i].upper_bound;
    below_count += below > tol;
    if (below > tol || above > tol) {
      ++outside;
      worst = std::max({worst, below, above});
      if (outside <= 5) {
        std::cerr << "DISAGREE distance " << name_of(static_cast<int>(i)) << ": ours [" << results[i].lower_bound
                  << ", " << results[i].upper_bound << "], FCL " << fcl_distance[i] << "\n";
      }
    }
  }
  line.Add("peer_outside_interval", outside).Add("peer_below_lower", below_count);
  line.Add("peer_above_upper", outside - below_count).Add("peer_outside_max_m", worst);
}

// Our distance with relative error `rel` on the start and goal states, and its line.
void RobotSuite::DistanceLine(double rel, int reps, const std::vector<double>& fcl_distance,
                              const std::vector<double>& peer_times) {
  const int n = static_cast<int>(start_goal_.size());
  std::vector<core::SceneDistanceResult> results(n);
  SceneDistanceRequest request;
  request.rel_err = rel;
  const auto times = TimePerItem(n, reps, [&](int i) {
    const StateItem& s = start_goal_[i];
    results[i] = AnswerOrCount(scenes_[s.problem]->ComputeDistance(s.q, request, &cache_), &failures_);
  });
  Work work;
  int64_t pairs = 0;
  double width = 0.0;
  for (int i = 0; i < n; ++i) {
    work.Add(results[i].stats);
    pairs += results[i].pairs_tested;
    width = std::max(width, results[i].upper_bound / std::max(results[i].lower_bound, 1e-300) - 1.0);
  }
  JsonLine line = CaseLine(kSuite, rel == 0.0 ? "distance_exact" : "distance_rel_0.2", times, work, kPeer, peer_times);
  line.Add("robot", robot_->name()).Add("rel_err", rel);
  AddPeerAgreement(line, results, fcl_distance, [&](int i) {
    return problems()[start_goal_[i].problem].name + " state " + std::to_string(i);
  });
  line.Add("max_relative_width", width);
  line.Add("pairs_tested_mean", static_cast<double>(pairs) / std::max(1, n));
  line.Print();
}

// Case 3: LINK on planner-like random edges and every start -> goal edge.
void RobotSuite::Link() {
  SetLinkResolution();
  MakeEdges();
  DenseReference();
  TimeLinkMethods();
  const LinkTally tally = CountMisses();
  PrintLinkLines(tally);
  Continuous(tally);
}

// OMPL's default: longest valid segment = 1% of the space's maximum extent, which for a
// RealVectorStateSpace is the Euclidean length of (upper - lower).
void RobotSuite::SetLinkResolution() {
  double extent2 = 0.0;
  for (int32_t j = 0; j < dof_; ++j) extent2 += (Upper(j) - Lower(j)) * (Upper(j) - Lower(j));
  extent_ = std::sqrt(extent2);
  resolution_ = 0.01 * extent_;
}

// Edges, contiguous per problem: random planner-like edges (a free start, a random direction, 0.05 to
// 1 rad long, clamped to the limits; at least kMinRandomEdges in a full run), then the start -> goal edge.
void RobotSuite::MakeEdges() {
  std::mt19937_64 rng(options_.seed + 1);
  StateResult r;
  const int problems_n = std::max(1, static_cast<int>(problems().size()));
  edges_per_problem_ = options_.quick ? 10 : std::max(20, (kMinRandomEdges + problems_n - 1) / problems_n);
  for (int32_t k = 0; k < static_cast<int32_t>(problems().size()); ++k) {
    for (int e = 0; e < edges_per_problem_; ++e) {
      EdgeItem edge{k, std::vector<double>(dof_), std::vector<double>(dof_), false};
      do {
        for (int32_t j = 0; j < dof_; ++j) edge.q0[j] = std::uniform_real_distribution<double>(Lower(j), Upper(j))(rng);
        const core::Result<StateResult> checked = scenes_[k]->CheckState(edge.q0, &cache_);
        if (!checked.ok()) {
          ++failures_;
          break;
        }
        r = checked.value();
      } while (!r.free);
      std::normal_distribution<double> g;
      std::vector<double> dir(dof_);
      double norm2 = 0.0;
      for (double& d : dir) {
        d = g(rng);
        norm2 += d * d;
      }
      const double scale = std::uniform_real_distribution<double>(0.05, 1.0)(rng) / std::sqrt(norm2);
      for (int32_t j = 0; j < dof_; ++j) edge.q1[j] = std::clamp(edge.q0[j] + scale * dir[j], Lower(j), Upper(j));
      edges_.push_back(std::move(edge));
    }
    edges_.push_back({k, start_goal_[2 * k].q, start_goal_[2 * k + 1].q, true});
  }
}

double RobotSuite::EdgeLength(const EdgeItem& e) const {
  double l2 = 0.0;
  for (int32_t j = 0; j < dof_; ++j) l2 += (e.q1[j] - e.q0[j]) * (e.q1[j] - e.q0[j]);
  return std::sqrt(l2);
}

// The state at t along e, in q_ (valid until the next call).
std::span<const double> RobotSuite::Along(const EdgeItem& e, double t) {
  for (int32_t j = 0; j < dof_; ++j) q_[j] = e.q0[j] + t * (e.q1[j] - e.q0[j]);
  return std::span<const double>(q_);
}

// The dense reference: the first colliding t with states at most 1e-3 rad apart in every joint
// (endpoints included), or -1. Each colliding state it finds is confirmed by the FCL checker.
void RobotSuite::DenseReference() {
  const double t_dense0 = Now();
  const int n = num_edges();
  dense_.assign(n, -1.0);
  for (int i = 0; i < n; ++i) {
    const EdgeItem& e = edges_[i];
    const Scene& scene = *scenes_[e.problem];
    double span = 0.0;
    for (int32_t j = 0; j < dof_; ++j) span = std::max(span, std::abs(e.q1[j] - e.q0[j]));
    const int steps = std::max(1, static_cast<int>(std::ceil(span / 1e-3)));
    for (int s = 0; s <= steps; ++s) {
      const double t = static_cast<double>(s) / steps;
      const StateResult r = AnswerOrCount(scene.CheckState(Along(e, t), &cache_), &failures_);
      ++dense_states_;
      if (!r.free) {
        dense_[i] = t;
        PoseFcl(q_, scene);
        if (fcl_robot_->Free(scene, *worlds_[e.problem].manager)) {
          ++dense_peer_disagree_;
          std::cerr << "DISAGREE link dense reference " << problems()[e.problem].name << " edge " << i << " t " << t
                    << ": ours " << r.contact.Describe(scene) << ", peer free\n";
        }
        break;
      }
    }
  }
  std::cerr << "robot: LINK on " << n << " edges (" << edges_per_problem_ << " random + start->goal per problem); "
            << "joint-space extent " << extent_ << " rad, discrete resolution " << resolution_ << " rad; dense "
            << "reference (" << dense_states_ << " states) in " << Now() - t_dense0 << " s\n";
}

// Ours, certified or discrete: times, and answers and work from the first repetition.
void RobotSuite::RunOursLink(const MotionRequest& request, EdgeRun* out) {
  const int n = num_edges();
  out->free.assign(n, 0);
  out->states.assign(n, 0);
  out->distance_queries.assign(n, 0);
  out->undecided.assign(n, 0);
  out->t_free.assign(n, 0.0);
  out->stats.assign(n, {});
  bool first = true;
  out->times_us = TimePerItem(n, kLinkReps, [&](int i) {
    const EdgeItem& e = edges_[i];
    const core::MotionResult m =
        AnswerOrCount(scenes_[e.problem]->CheckMotion(e.q0, e.q1, request, &cache_), &failures_);
    if (first) {
      out->free[i] = m.free;
      out->states[i] = m.states;
      out->distance_queries[i] = m.distance_queries;
      out->undecided[i] = m.undecided;
      out->t_free[i] = m.t_free;
      out->stats[i] = m.stats;
      if (i == n - 1) first = false;
    }
  });
}

// The peer: OMPL DiscreteMotionValidator-style sampling with the FCL checker, the same states as our
// discrete mode (ceil(length / resolution) segments), in order from q0, stopping at the first
// collision.
void RobotSuite::RunPeerLink(EdgeRun* out) {
  const int n = num_edges();
  out->free.assign(n, 0);
  out->states.assign(n, 0);
  out->times_us = TimePerItem(n, kLinkReps, [&](int i) {
    const EdgeItem& e = edges_[i];
    const Scene& scene = *scenes_[e.problem];
    const int64_t segments = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(EdgeLength(e) / resolution_)));
    bool free = true;
    int64_t states = 0;
    for (int64_t s = 0; s <= segments && free; ++s) {
      PoseFcl(Along(e, static_cast<double>(s) / static_cast<double>(segments)), scene);
      free = fcl_robot_->Free(scene, *worlds_[e.problem].manager);
      ++states;
    }
    out->free[i] = free;
    out->states[i] = states;
  });
}

// Ours certified (as asked by default, and as planners ask it), ours discrete, and the peer.
void RobotSuite::TimeLinkMethods() {
  const int n = num_edges();
  MotionRequest planning_request;
  planning_request.narrow_collision = false;
  planning_request.prepass_resolution = kPrepassResolution;
  MotionRequest discrete_request;
  discrete_request.mode = MotionRequest::Mode::kDiscrete;
  discrete_request.resolution = resolution_;
  double t0 = Now();
  RunOursLink(MotionRequest{}, &certified_);
  std::cerr << "robot: LINK certified, " << n << " edges x " << kLinkReps << " in " << Now() - t0 << " s\n";
  t0 = Now();
  RunOursLink(planning_request, &planning_);
  std::cerr << "robot: LINK certified for planners, " << n << " edges x " << kLinkReps << " in " << Now() - t0
            << " s\n";
  t0 = Now();
  RunOursLink(discrete_request, &discrete_);
  std::cerr << "robot: LINK ours discrete, " << n << " edges x " << kLinkReps << " in " << Now() - t0 << " s\n";
  t0 = Now();
  RunPeerLink(&link_peer_);
  std::cerr << "robot: LINK peer discrete, " << n << " edges x " << kLinkReps << " in " << Now() - t0 << " s\n";
}

// Misses: the method says free, the dense reference collides. Certified misses are reported in full on
// stderr (there must be none); so are certified free prefixes that hold a dense collision, and every
// disagreement between our discrete mode and the peer.
LinkTally RobotSuite::CountMisses() const {
  const int n = num_edges();
  LinkTally t;
  t.keep_colliding.assign(n, 0);
  t.keep_free.assign(n, 0);
  t.keep_start_goal.assign(n, 0);
  t.keep_random.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    const EdgeItem& e = edges_[i];
    const bool hit = dense_[i] >= 0.0;
    t.colliding += hit;
    t.keep_colliding[i] = hit;
    t.keep_free[i] = !hit;
    t.keep_start_goal[i] = e.start_goal;
    t.keep_random[i] = !e.start_goal;
    t.start_goal_edges += e.start_goal;
    t.start_goal_colliding += e.start_goal && hit;
    t.undecided += certified_.undecided[i];
    t.discrete_agree += discrete_.free[i] == link_peer_.free[i];
    t.miss_discrete += hit && discrete_.free[i];
    t.miss_peer += hit && link_peer_.free[i];
    t.certified_colliding_dense_free += !hit && !certified_.free[i];
    t.miss_planning += hit && planning_.free[i];
    t.planning_disagree += planning_.free[i] != certified_.free[i];
    const bool miss = hit && certified_.free[i];
    const bool prefix = hit && !certified_.free[i] && dense_[i] < certified_.t_free[i];
    t.miss_certified += miss;
    t.prefix_violations += prefix;
    if (miss || prefix) ReportCertifiedMiss(i, miss);
    if (discrete_.free[i] != link_peer_.free[i]) {
      std::cerr << "DISAGREE link discrete " << problems()[e.problem].name << " edge " << i << ": ours "
                << (discrete_.free[i] ? "free" : "colliding") << ", peer " << (link_peer_.free[i] ? "free" : "colliding")
                << "\n";
    }
  }
  return t;
}

// Edge i on stderr: a certified miss (`miss`) or a certified free prefix holding a dense collision.
void RobotSuite::ReportCertifiedMiss(int i, bool miss) const {
  const EdgeItem& e = edges_[i];
  std::cerr << (miss ? "CERTIFIED MISS " : "CERTIFIED PREFIX VIOLATION ") << problems()[e.problem].name << " edge "
            << i << (e.start_goal ? " (start->goal)" : "") << ": dense collides at t = " << dense_[i] << ", certified "
            << (miss ? "free" : "t_free = " + std::to_string(certified_.t_free[i])) << "; q0 =";
  for (double v : e.q0) std::cerr << " " << v;
  std::cerr << "; q1 =";
  for (double v : e.q1) std::cerr << " " << v;
  std::cerr << "\n";
}

double RobotSuite::MeanOverEdges(const std::vector<int64_t>& v) const {
  double sum = 0.0;
  for (int64_t x : v) sum += static_cast<double>(x);
  return sum / std::max(1, num_edges());
}

// A LINK line of one of our methods beside the peer: the case's common fields, the misses of every
// method, and both sides' medians per subset of edges.
JsonLine RobotSuite::LinkLine(const std::string& name, const EdgeRun& ours, const LinkTally& t) const {
  Work work;
  for (const auto& st : ours.stats) work.Add(st);
  JsonLine line = CaseLine(kSuite, name, ours.times_us, work, kPeerLink, link_peer_.times_us);
  line.Add("robot", robot_->name());
  line.Add("edges_per_problem", edges_per_problem_).Add("start_goal_edges", t.start_goal_edges);
  line.Add("extent", extent_).Add("resolution", resolution_);
  line.Add("colliding_dense", t.colliding).Add("start_goal_colliding_dense", t.start_goal_colliding);
  line.Add("misses_certified", t.miss_certified).Add("misses_ours_discrete", t.miss_discrete);
  line.Add("misses_peer_discrete", t.miss_peer);
  line.Add("ours_free_us", Median(Select(ours.times_us, t.keep_free)));
  line.Add("peer_free_us", Median(Select(link_peer_.times_us, t.keep_free)));
  line.Add("ours_colliding_us", Median(Select(ours.times_us, t.keep_colliding)));
  line.Add("peer_colliding_us", Median(Select(link_peer_.times_us, t.keep_colliding)));
  line.Add("ours_random_us", Median(Select(ours.times_us, t.keep_random)));
  line.Add("peer_random_us", Median(Select(link_peer_.times_us, t.keep_random)));
  line.Add("ours_start_goal_us", Median(Select(ours.times_us, t.keep_start_goal)));
  line.Add("peer_start_goal_us", Median(Select(link_peer_.times_us, t.keep_start_goal)));
  line.Add("peer_states", MeanOverEdges(link_peer_.states));
  return line;
}

// The lines of ours certified, certified for planners, and discrete.
void RobotSuite::PrintLinkLines(const LinkTally& t) const {
  {
    JsonLine line = LinkLine("link_certified", certified_, t);
    line.Add("undecided", t.undecided).Add("certified_prefix_violations", t.prefix_violations);
    line.Add("certified_colliding_dense_free", t.certified_colliding_dense_free);
    line.Add("ours_states", MeanOverEdges(certified_.states));
    line.Add("ours_distance_queries", MeanOverEdges(certified_.distance_queries));
    line.Add("dense_peer_disagree", dense_peer_disagree_);
    const double ratio = Median(link_peer_.times_us) / Median(certified_.times_us);
    const double ratio_mean = Mean(link_peer_.times_us) / Mean(certified_.times_us);
    line.Add("target_ratio", 1.0).Add("meets_target", ratio >= 1.0).Add("meets_target_mean", ratio_mean >= 1.0);
    line.Print();
  }
  {
    JsonLine line = LinkLine("link_certified_planning", planning_, t);
    line.Add("prepass_resolution", kPrepassResolution);
    line.Add("misses_planning", t.miss_planning).Add("disagree_with_certified", t.planning_disagree);
    line.Add("ours_states", MeanOverEdges(planning_.states));
    line.Add("ours_distance_queries", MeanOverEdges(planning_.distance_queries));
    line.Print();
  }
  JsonLine line = LinkLine("link_discrete", discrete_, t);
  line.Add("discrete_agree", t.discrete_agree);
  line.Add("ours_states", MeanOverEdges(discrete_.states));
  line.Print();
}

// Continuous: time of first contact on the same edges (tolerance 0.1 mm). Contact exactly where the
// certified LINK collides, up to grazes within the tolerance; t* never after its t_collide.
void RobotSuite::Continuous(const LinkTally& tally) {
  const int n = num_edges();
  ContinuousRequest request;
  request.tolerance = 1e-4;
  std::vector<core::ContinuousResult> results(n);
  const auto times = TimePerItem(n, 1, [&](int i) {
    const EdgeItem& e = edges_[i];
    results[i] = AnswerOrCount(scenes_[e.problem]->TimeOfFirstContact(e.q0, e.q1, request, &cache_), &failures_);
  });
  Work work;
  int64_t contacts = 0, certified_colliding_no_contact = 0, undecided_ccd = 0;
  std::vector<int64_t> iterations(n);
  for (int i = 0; i < n; ++i) {
    const core::ContinuousResult& r = results[i];
    work.Add(r.stats);
    contacts += r.contact;
    undecided_ccd += r.undecided;
    iterations[i] = r.iterations;
    certified_colliding_no_contact += !certified_.free[i] && !certified_.undecided[i] && !r.contact;
  }
  JsonLine line = CaseLine(kSuite, "ccd_edge", times, work, kPeerLink, link_peer_.times_us);
  line.Add("robot", robot_->name());
  line.Add("tolerance", request.tolerance).Add("contacts", contacts).Add("colliding_dense", tally.colliding);
  line.Add("certified_colliding_without_contact", certified_colliding_no_contact);
  line.Add("undecided", undecided_ccd).Add("iterations_mean", MeanOverEdges(iterations));
  line.Print();
}

int RobotSuite::Finish() const {
  if (failures_ > 0) {
    std::cerr << "robot: " << failures_ << " CheckState calls failed\n";
    return 1;
  }
  return 0;
}

int RobotSuite::Run() {
  if (int code = Load(); code != 0) return code;
  MakeRandomStates();
  if (options_.RunsCase("clear")) {
    ClearStartGoal();
    ClearRandom();
    ClearBatch();
  }
  if (options_.RunsCase("distance")) Distance();
  if (options_.RunsCase("link")) Link();
  return Finish();
}

}  // namespace

int RunRobot(const SuiteOptions& options) {
  RobotSuite suite(options);
  return suite.Run();
}

}  // namespace proximity::bench
