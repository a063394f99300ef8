// Suite robot: CLEAR(q) on the MotionBenchMaker Panda problems (mbm_panda robot, box / cylinder /
// sphere worlds), ours (Scene::CheckState) beside a MoveIt-style FCL 0.7 checker on the same scenes
// and the same states. Cases: every start and goal state, and uniform random states within the joint
// limits, overall and per problem family; and LINK(q0, q1) on straight joint-space edges like a
// planner's (a free start, a random direction, 0.05 to 1 rad long, clamped to the limits) plus every
// problem's start -> goal edge: ours certified and ours discrete (Scene::CheckMotion) beside the same
// FCL checker sampling each edge the way OMPL's DiscreteMotionValidator does, at OMPL's default
// resolution (1% of the joint space's extent), all judged against a dense reference (states at most
// 1e-3 rad apart in every joint, each checked exactly by our CLEAR).
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
#include <random>
#include <set>

#include "bench_util.h"
#include "mbm_data.h"
#include "peers/fcl_robot.h"
#include "proximity/mbm/mbm.h"
#include "proximity/core/scene/scene.h"

namespace proximity::bench {
namespace {

namespace fs = std::filesystem;
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
};

// A subset's common line: times, work and pair counts, agreement and colliding fractions.
JsonLine StateCaseLine(const std::string& name, const SideRun& ours, const SideRun& peer, const std::vector<char>& keep) {
  const auto ours_t = Select(ours.times_us, keep), peer_t = Select(peer.times_us, keep);
  Work work;
  double pairs = 0;
  int64_t agree = 0, ours_colliding = 0, peer_colliding = 0, free_by_bounds = 0;
  std::vector<char> keep_free;
  for (size_t i = 0; i < keep.size(); ++i) {
    if (!keep[i]) continue;
    work.Add(ours.stats[i]);
    // The conservative stages (broad phase, then each pair's bounding-volume hierarchy) prove a state
    // free without any exact triangle or GJK test.
    free_by_bounds += ours.free[i] && ours.stats[i].triangle_tests == 0;
    pairs += static_cast<double>(ours.pairs[i]);
    agree += ours.free[i] == peer.free[i];
    ours_colliding += !ours.free[i];
    peer_colliding += !peer.free[i];
    keep_free.push_back(ours.free[i]);
  }
  const double n = std::max<double>(1.0, static_cast<double>(ours_t.size()));
  JsonLine line = CaseLine(kSuite, name, ours_t, work, kPeer, peer_t);
  line.Add("peer_p95_us", Percentile(peer_t, 0.95));
  line.Add("ours_pairs_tested", pairs / n);
  line.Add("agree", agree);
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

}  // namespace

int RunRobot(const SuiteOptions& options) {
  // Problems: the extracted sample with --quick, all 700 from the archive otherwise.
  const double t_load = Now();
  MbmData data;
  if (int code = LoadMbmData("robot", options, &data); code != 0) return code;
  const std::vector<mbm::MbmProblem>& problems = data.problems;
  const std::shared_ptr<const RobotModel> robot = data.robot;

  // Scenes (ours and the peer's) and the start and goal states.
  std::vector<std::shared_ptr<const Scene>> scenes;
  std::vector<FclWorld> worlds;
  std::vector<StateItem> start_goal;
  std::vector<std::string> families;
  std::vector<int32_t> family_of;  // Per problem.
  scenes.reserve(problems.size());
  worlds.reserve(problems.size());
  size_t primitives = 0;
  for (int32_t k = 0; k < static_cast<int32_t>(problems.size()); ++k) {
    const mbm::MbmProblem& p = problems[k];
    auto description = mbm::MbmSceneDescription(p.scene, robot);
    if (!description.ok()) {
      std::cerr << "robot: " << p.name << ": " << description.error().message << "\n";
      return 1;
    }
    auto scene = Scene::Build(std::move(description).value());
    if (!scene.ok()) {
      std::cerr << "robot: " << p.name << ": " << scene.error().message << "\n";
      return 1;
    }
    scenes.push_back(scene.value());
    worlds.emplace_back(*scenes.back());
    primitives += worlds.back().objects.size();
    const auto start = mbm::MbmStartConfiguration(p.request, *robot);
    const auto goal = mbm::MbmGoalConfiguration(p.request, *robot);
    if (!start.ok() || !goal.ok()) {
      std::cerr << "robot: " << p.name << ": " << (!start.ok() ? start.error().message : goal.error().message) << "\n";
      return 1;
    }
    start_goal.push_back({k, start.value()});
    start_goal.push_back({k, goal.value()});
    if (families.empty() || families.back() != p.family) families.push_back(p.family);
    family_of.push_back(static_cast<int32_t>(families.size()) - 1);
  }
  FclRobot fcl_robot(*robot);
  std::cerr << "robot: " << problems.size() << " problems in " << families.size() << " families ("
            << static_cast<double>(primitives) / std::max<size_t>(1, problems.size()) << " primitives per scene), "
            << robot->num_links() << " links, " << fcl_robot.num_parts() << " link geometries, "
            << robot->num_positions() << " joints; loaded and built in " << (Now() - t_load) << " s\n";

  // Uniform random states within the joint limits, contiguous per problem.
  const int per_problem = options.quick ? 200 : 100;
  std::vector<StateItem> random_states;
  {
    std::mt19937_64 rng(options.seed);
    const auto& lo = robot->lower_limits();
    const auto& hi = robot->upper_limits();
    for (int32_t k = 0; k < static_cast<int32_t>(problems.size()); ++k) {
      for (int s = 0; s < per_problem; ++s) {
        StateItem item{k, std::vector<double>(robot->num_positions())};
        for (int32_t j = 0; j < robot->num_positions(); ++j) {
          const double a = std::isfinite(lo[j]) ? lo[j] : -M_PI, b = std::isfinite(hi[j]) ? hi[j] : M_PI;
          item.q[j] = std::uniform_real_distribution<double>(a, b)(rng);
        }
        random_states.push_back(std::move(item));
      }
    }
  }

  SceneCache cache;
  std::vector<RigidTransform> X_WL(robot->num_links());
  int failures = 0;

  // Times both sides over `states`; answers and our work come from the first repetition.
  auto run = [&](const std::vector<StateItem>& states, int reps, SideRun* ours, SideRun* peer) {
    const int n = static_cast<int>(states.size());
    ours->free.assign(n, 0);
    ours->stats.assign(n, {});
    ours->pairs.assign(n, 0);
    ours->self.assign(n, 0);
    peer->free.assign(n, 0);
    bool first = true;
    ours->times_us = TimePerItem(n, reps, [&](int i) {
      StateResult r;
      const StateItem& s = states[i];
      if (!scenes[s.problem]->CheckState(s.q, &cache, &r).ok()) ++failures;
      if (first) {
        ours->free[i] = r.free;
        ours->stats[i] = r.stats;
        ours->pairs[i] = r.pairs_tested;
        ours->self[i] = !r.free && r.contact.self;
        if (i == n - 1) first = false;
      }
    });
    peer->times_us = TimePerItem(n, reps, [&](int i) {
      const StateItem& s = states[i];
      const Scene& scene = *scenes[s.problem];
      (void)robot->ForwardKinematics(s.q, std::span<RigidTransform>(X_WL), scene.X_WB());
      fcl_robot.Pose(X_WL);
      peer->free[i] = fcl_robot.Free(scene, *worlds[s.problem].manager);
    });
  };

  // Reports every disagreement on stderr with a brute-force FCL check of every pair (no broad phase).
  auto report_disagreements = [&](const char* what, const std::vector<StateItem>& states, const SideRun& ours,
                                  const SideRun& peer) {
    int shown = 0;
    for (size_t i = 0; i < states.size(); ++i) {
      if (ours.free[i] == peer.free[i]) continue;
      if (++shown > 20) continue;
      const StateItem& s = states[i];
      const Scene& scene = *scenes[s.problem];
      StateResult r;
      (void)scene.CheckState(s.q, &cache, &r);
      (void)robot->ForwardKinematics(s.q, std::span<RigidTransform>(X_WL), scene.X_WB());
      fcl_robot.Pose(X_WL);
      std::cerr << "DISAGREE " << what << " " << problems[s.problem].name << " state " << i << ": ours "
                << (r.free ? "free" : r.contact.Describe(scene)) << ", peer " << (peer.free[i] ? "free" : "colliding")
                << "; q =";
      for (double v : s.q) std::cerr << " " << v;
      std::cerr << "; FCL pairwise contacts:";
      for (const std::string& c : fcl_robot.AllContacts(scene, worlds[s.problem].Raw())) std::cerr << " [" << c << "]";
      std::cerr << "\n";
    }
  };

  auto family_keep = [&](const std::vector<StateItem>& states, int32_t family) {
    std::vector<char> keep(states.size());
    for (size_t i = 0; i < states.size(); ++i) keep[i] = family_of[states[i].problem] == family;
    return keep;
  };
  auto target_fields = [](JsonLine& line, const SideRun& ours, const SideRun& peer) {
    const double o = Median(ours.times_us), p = Median(peer.times_us);
    line.Add("target_ratio", 20.0).Add("target_ours_us", 2.0).Add("meets_target", p / o >= 20.0 && o <= 2.0);
  };

  const int reps = options.quick ? 3 : 5;
  // Case 1: every start and goal state (all free by construction of the problems).
  {
    SideRun ours, peer;
    const double t0 = Now();
    run(start_goal, reps, &ours, &peer);
    std::cerr << "robot: " << start_goal.size() << " start/goal states x " << reps << " in " << Now() - t0 << " s\n";
    report_disagreements("start_goal", start_goal, ours, peer);
    JsonLine line = StateCaseLine("clear_start_goal", ours, peer, std::vector<char>(start_goal.size(), 1));
    target_fields(line, ours, peer);
    for (int32_t f = 0; f < static_cast<int32_t>(families.size()); ++f) {
      const auto keep = family_keep(start_goal, f);
      line.Add("ours_us_" + families[f], Median(Select(ours.times_us, keep)));
      line.Add("peer_us_" + families[f], Median(Select(peer.times_us, keep)));
    }
    line.Print();
    for (int32_t f = 0; f < static_cast<int32_t>(families.size()); ++f) {
      StateCaseLine("clear_start_goal_" + families[f], ours, peer, family_keep(start_goal, f)).Print();
    }
  }

  // Case 2: uniform random states within the limits, overall and per family.
  {
    SideRun ours, peer;
    const int random_reps = 3;
    const double t0 = Now();
    run(random_states, random_reps, &ours, &peer);
    std::cerr << "robot: " << random_states.size() << " random states x " << random_reps << " in " << Now() - t0
              << " s\n";
    report_disagreements("random", random_states, ours, peer);
    JsonLine line = StateCaseLine("clear_random", ours, peer, std::vector<char>(random_states.size(), 1));
    target_fields(line, ours, peer);
    line.Add("per_family", per_problem * static_cast<int64_t>(problems.size() / std::max<size_t>(1, families.size())));
    line.Print();
    for (int32_t f = 0; f < static_cast<int32_t>(families.size()); ++f) {
      StateCaseLine("clear_random_" + families[f], ours, peer, family_keep(random_states, f)).Print();
    }

    // Profile hint: forward kinematics alone over the same states, against our whole CLEAR.
    const auto fk = TimePerItem(static_cast<int>(random_states.size()), random_reps, [&](int i) {
      (void)robot->ForwardKinematics(random_states[i].q, std::span<RigidTransform>(X_WL), RigidTransform::Identity());
    });
    std::cerr << "robot profile: forward kinematics " << Mean(fk) << " us mean of our " << Mean(ours.times_us)
              << " us mean per random state (" << 100.0 * Mean(fk) / Mean(ours.times_us)
              << "%); the rest is part poses, bounds, broad phase and narrow phase\n";
    std::vector<char> world_hit(random_states.size()), self_hit(random_states.size());
    for (size_t i = 0; i < random_states.size(); ++i) {
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
  // Case 2b: distance(q) on the start and goal states (free states, as a planner or a controller asks
  // about), exact and with a 20% budget, beside FCL's exact per-link distance. FCL's answer must lie
  // in our certified interval (up to FCL's GJK tolerance on primitives).
  {
    const int n = static_cast<int>(start_goal.size());
    const int distance_reps = options.quick ? 1 : 2;
    std::vector<double> fcl_distance(n);
    const auto peer_times = TimePerItem(n, distance_reps, [&](int i) {
      const StateItem& s = start_goal[i];
      const Scene& scene = *scenes[s.problem];
      (void)robot->ForwardKinematics(s.q, std::span<RigidTransform>(X_WL), scene.X_WB());
      fcl_robot.Pose(X_WL);
      fcl_distance[i] = fcl_robot.Distance(scene, *worlds[s.problem].manager);
    });
    for (double rel : {0.0, 0.2}) {
      std::vector<core::SceneDistanceResult> results(n);
      SceneDistanceRequest request;
      request.rel_err = rel;
      const auto times = TimePerItem(n, distance_reps, [&](int i) {
        const StateItem& s = start_goal[i];
        if (!scenes[s.problem]->ComputeDistance(s.q, request, &cache, &results[i]).ok()) ++failures;
      });
      Work work;
      int64_t outside = 0, pairs = 0;
      double width = 0.0;
      for (int i = 0; i < n; ++i) {
        work.Add(results[i].stats);
        pairs += results[i].pairs_tested;
        width = std::max(width, results[i].upper_bound / std::max(results[i].lower_bound, 1e-300) - 1.0);
        const double tol = 1e-6 + 1e-6 * fcl_distance[i];
        if (fcl_distance[i] < results[i].lower_bound - tol || fcl_distance[i] > results[i].upper_bound + tol) {
          ++outside;
          if (outside <= 5) {
            std::cerr << "DISAGREE distance " << problems[start_goal[i].problem].name << " state " << i << ": ours ["
                      << results[i].lower_bound << ", " << results[i].upper_bound << "], FCL " << fcl_distance[i]
                      << "\n";
          }
        }
      }
      JsonLine line = CaseLine(kSuite, rel == 0.0 ? "distance_exact" : "distance_rel_0.2", times, work, kPeer,
                               peer_times);
      line.Add("rel_err", rel).Add("peer_outside_interval", outside).Add("max_relative_width", width);
      line.Add("pairs_tested_mean", static_cast<double>(pairs) / std::max(1, n));
      line.Print();
    }
  }

  // Case 3: LINK on planner-like random edges and every start -> goal edge.
  {
    const int32_t dof = robot->num_positions();
    const auto& lo = robot->lower_limits();
    const auto& hi = robot->upper_limits();
    auto lower = [&](int32_t j) { return std::isfinite(lo[j]) ? lo[j] : -M_PI; };
    auto upper = [&](int32_t j) { return std::isfinite(hi[j]) ? hi[j] : M_PI; };
    // OMPL's default: longest valid segment = 1% of the space's maximum extent, which for a
    // RealVectorStateSpace is the Euclidean length of (upper - lower).
    double extent2 = 0.0;
    for (int32_t j = 0; j < dof; ++j) extent2 += (upper(j) - lower(j)) * (upper(j) - lower(j));
    const double extent = std::sqrt(extent2);
    const double resolution = 0.01 * extent;

    // Edges, contiguous per problem: random planner-like edges, then the start -> goal edge.
    const int edges_per_problem = options.quick ? 10 : 20;
    std::vector<EdgeItem> edges;
    {
      std::mt19937_64 rng(options.seed + 1);
      StateResult r;
      for (int32_t k = 0; k < static_cast<int32_t>(problems.size()); ++k) {
        for (int e = 0; e < edges_per_problem; ++e) {
          EdgeItem edge{k, std::vector<double>(dof), std::vector<double>(dof), false};
          do {
            for (int32_t j = 0; j < dof; ++j) {
              edge.q0[j] = std::uniform_real_distribution<double>(lower(j), upper(j))(rng);
            }
            if (!scenes[k]->CheckState(edge.q0, &cache, &r).ok()) {
              ++failures;
              break;
            }
          } while (!r.free);
          std::normal_distribution<double> g;
          std::vector<double> dir(dof);
          double norm2 = 0.0;
          for (double& d : dir) {
            d = g(rng);
            norm2 += d * d;
          }
          const double scale = std::uniform_real_distribution<double>(0.05, 1.0)(rng) / std::sqrt(norm2);
          for (int32_t j = 0; j < dof; ++j) edge.q1[j] = std::clamp(edge.q0[j] + scale * dir[j], lower(j), upper(j));
          edges.push_back(std::move(edge));
        }
        edges.push_back({k, start_goal[2 * k].q, start_goal[2 * k + 1].q, true});
      }
    }
    const int n = static_cast<int>(edges.size());
    auto length = [&](const EdgeItem& e) {
      double l2 = 0.0;
      for (int32_t j = 0; j < dof; ++j) l2 += (e.q1[j] - e.q0[j]) * (e.q1[j] - e.q0[j]);
      return std::sqrt(l2);
    };
    std::vector<double> q(dof);
    auto along = [&](const EdgeItem& e, double t) {
      for (int32_t j = 0; j < dof; ++j) q[j] = e.q0[j] + t * (e.q1[j] - e.q0[j]);
      return std::span<const double>(q);
    };

    // The dense reference: the first colliding t with states at most 1e-3 rad apart in every joint
    // (endpoints included), or -1. Each colliding state it finds is confirmed by the FCL checker.
    const double t_dense0 = Now();
    std::vector<double> dense(n, -1.0);
    int64_t dense_states = 0, dense_peer_disagree = 0;
    for (int i = 0; i < n; ++i) {
      const EdgeItem& e = edges[i];
      const Scene& scene = *scenes[e.problem];
      double span = 0.0;
      for (int32_t j = 0; j < dof; ++j) span = std::max(span, std::abs(e.q1[j] - e.q0[j]));
      const int steps = std::max(1, static_cast<int>(std::ceil(span / 1e-3)));
      for (int s = 0; s <= steps; ++s) {
        const double t = static_cast<double>(s) / steps;
        StateResult r;
        if (!scene.CheckState(along(e, t), &cache, &r).ok()) ++failures;
        ++dense_states;
        if (!r.free) {
          dense[i] = t;
          (void)robot->ForwardKinematics(q, std::span<RigidTransform>(X_WL), scene.X_WB());
          fcl_robot.Pose(X_WL);
          if (fcl_robot.Free(scene, *worlds[e.problem].manager)) {
            ++dense_peer_disagree;
            std::cerr << "DISAGREE link dense reference " << problems[e.problem].name << " edge " << i << " t " << t
                      << ": ours " << r.contact.Describe(scene) << ", peer free\n";
          }
          break;
        }
      }
    }
    std::cerr << "robot: LINK on " << n << " edges (" << edges_per_problem << " random + start->goal per problem); "
              << "joint-space extent " << extent << " rad, discrete resolution " << resolution << " rad; dense "
              << "reference (" << dense_states << " states) in " << Now() - t_dense0 << " s\n";

    // Ours, certified or discrete: times, and answers and work from the first repetition.
    auto run_ours = [&](const MotionRequest& request, int repetitions, EdgeRun* out) {
      out->free.assign(n, 0);
      out->states.assign(n, 0);
      out->distance_queries.assign(n, 0);
      out->undecided.assign(n, 0);
      out->t_free.assign(n, 0.0);
      out->stats.assign(n, {});
      bool first = true;
      out->times_us = TimePerItem(n, repetitions, [&](int i) {
        const EdgeItem& e = edges[i];
        core::MotionResult m;
        if (!scenes[e.problem]->CheckMotion(e.q0, e.q1, request, &cache, &m).ok()) ++failures;
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
    };
    // The peer: OMPL DiscreteMotionValidator-style sampling with the FCL checker, the same states as
    // our discrete mode (ceil(length / resolution) segments), in order from q0, stopping at the first
    // collision.
    auto run_peer = [&](int repetitions, EdgeRun* out) {
      out->free.assign(n, 0);
      out->states.assign(n, 0);
      out->times_us = TimePerItem(n, repetitions, [&](int i) {
        const EdgeItem& e = edges[i];
        const Scene& scene = *scenes[e.problem];
        const int64_t segments = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(length(e) / resolution)));
        bool free = true;
        int64_t states = 0;
        for (int64_t s = 0; s <= segments && free; ++s) {
          (void)robot->ForwardKinematics(along(e, static_cast<double>(s) / static_cast<double>(segments)),
                                         std::span<RigidTransform>(X_WL), scene.X_WB());
          fcl_robot.Pose(X_WL);
          free = fcl_robot.Free(scene, *worlds[e.problem].manager);
          ++states;
        }
        out->free[i] = free;
        out->states[i] = states;
      });
    };

    const int link_reps = 3;
    EdgeRun certified, planning, discrete, peer;
    // The certified check as planners ask it: a coarse-to-fine sampled pre-pass (0.1 rad) rejects most
    // colliding edges, and a collision is not narrowed (t_free is then a certified, loose prefix).
    MotionRequest planning_request;
    planning_request.narrow_collision = false;
    planning_request.prepass_resolution = 0.1;
    MotionRequest discrete_request;
    discrete_request.mode = MotionRequest::Mode::kDiscrete;
    discrete_request.resolution = resolution;
    double t0 = Now();
    run_ours(MotionRequest{}, link_reps, &certified);
    std::cerr << "robot: LINK certified, " << n << " edges x " << link_reps << " in " << Now() - t0 << " s\n";
    t0 = Now();
    run_ours(planning_request, link_reps, &planning);
    std::cerr << "robot: LINK certified for planners, " << n << " edges x " << link_reps << " in " << Now() - t0
              << " s\n";
    t0 = Now();
    run_ours(discrete_request, link_reps, &discrete);
    std::cerr << "robot: LINK ours discrete, " << n << " edges x " << link_reps << " in " << Now() - t0 << " s\n";
    t0 = Now();
    run_peer(link_reps, &peer);
    std::cerr << "robot: LINK peer discrete, " << n << " edges x " << link_reps << " in " << Now() - t0 << " s\n";

    // Misses: the method says free, the dense reference collides. Certified misses are reported in
    // full on stderr (there must be none); so are certified free prefixes that hold a dense collision.
    int64_t colliding = 0, start_goal_edges = 0, start_goal_colliding = 0;
    int64_t miss_certified = 0, miss_discrete = 0, miss_peer = 0, undecided = 0, prefix_violations = 0;
    int64_t certified_colliding_dense_free = 0, discrete_agree = 0, miss_planning = 0, planning_disagree = 0;
    std::vector<char> keep_colliding(n), keep_free(n), keep_start_goal(n), keep_random(n);
    for (int i = 0; i < n; ++i) {
      const EdgeItem& e = edges[i];
      const bool hit = dense[i] >= 0.0;
      colliding += hit;
      keep_colliding[i] = hit;
      keep_free[i] = !hit;
      keep_start_goal[i] = e.start_goal;
      keep_random[i] = !e.start_goal;
      start_goal_edges += e.start_goal;
      start_goal_colliding += e.start_goal && hit;
      undecided += certified.undecided[i];
      discrete_agree += discrete.free[i] == peer.free[i];
      miss_discrete += hit && discrete.free[i];
      miss_peer += hit && peer.free[i];
      certified_colliding_dense_free += !hit && !certified.free[i];
      miss_planning += hit && planning.free[i];
      planning_disagree += planning.free[i] != certified.free[i];
      const bool miss = hit && certified.free[i];
      const bool prefix = hit && !certified.free[i] && dense[i] < certified.t_free[i];
      miss_certified += miss;
      prefix_violations += prefix;
      if (miss || prefix) {
        std::cerr << (miss ? "CERTIFIED MISS " : "CERTIFIED PREFIX VIOLATION ") << problems[e.problem].name
                  << " edge " << i << (e.start_goal ? " (start->goal)" : "") << ": dense collides at t = " << dense[i]
                  << ", certified " << (miss ? "free" : "t_free = " + std::to_string(certified.t_free[i]))
                  << "; q0 =";
        for (double v : e.q0) std::cerr << " " << v;
        std::cerr << "; q1 =";
        for (double v : e.q1) std::cerr << " " << v;
        std::cerr << "\n";
      }
      if (discrete.free[i] != peer.free[i]) {
        std::cerr << "DISAGREE link discrete " << problems[e.problem].name << " edge " << i << ": ours "
                  << (discrete.free[i] ? "free" : "colliding") << ", peer " << (peer.free[i] ? "free" : "colliding")
                  << "\n";
      }
    }
    auto mean_of = [&](const std::vector<int64_t>& v) {
      double sum = 0.0;
      for (int64_t x : v) sum += static_cast<double>(x);
      return sum / std::max(1, n);
    };
    auto common = [&](JsonLine& line, const EdgeRun& ours) {
      line.Add("edges_per_problem", edges_per_problem).Add("start_goal_edges", start_goal_edges);
      line.Add("extent", extent).Add("resolution", resolution);
      line.Add("colliding_dense", colliding).Add("start_goal_colliding_dense", start_goal_colliding);
      line.Add("misses_certified", miss_certified).Add("misses_ours_discrete", miss_discrete);
      line.Add("misses_peer_discrete", miss_peer);
      line.Add("ours_free_us", Median(Select(ours.times_us, keep_free)));
      line.Add("peer_free_us", Median(Select(peer.times_us, keep_free)));
      line.Add("ours_colliding_us", Median(Select(ours.times_us, keep_colliding)));
      line.Add("peer_colliding_us", Median(Select(peer.times_us, keep_colliding)));
      line.Add("ours_random_us", Median(Select(ours.times_us, keep_random)));
      line.Add("peer_random_us", Median(Select(peer.times_us, keep_random)));
      line.Add("ours_start_goal_us", Median(Select(ours.times_us, keep_start_goal)));
      line.Add("peer_start_goal_us", Median(Select(peer.times_us, keep_start_goal)));
      line.Add("peer_states", mean_of(peer.states));
    };
    {
      Work work;
      for (const auto& st : certified.stats) work.Add(st);
      JsonLine line = CaseLine(kSuite, "link_certified", certified.times_us, work, kPeerLink, peer.times_us);
      common(line, certified);
      line.Add("undecided", undecided).Add("certified_prefix_violations", prefix_violations);
      line.Add("certified_colliding_dense_free", certified_colliding_dense_free);
      line.Add("ours_states", mean_of(certified.states));
      line.Add("ours_distance_queries", mean_of(certified.distance_queries));
      line.Add("dense_peer_disagree", dense_peer_disagree);
      const double ratio = Median(peer.times_us) / Median(certified.times_us);
      const double ratio_mean = Mean(peer.times_us) / Mean(certified.times_us);
      line.Add("target_ratio", 1.0).Add("meets_target", ratio >= 1.0).Add("meets_target_mean", ratio_mean >= 1.0);
      line.Print();
    }
    {
      Work work;
      for (const auto& st : planning.stats) work.Add(st);
      JsonLine line = CaseLine(kSuite, "link_certified_planning", planning.times_us, work, kPeerLink, peer.times_us);
      common(line, planning);
      line.Add("prepass_resolution", planning_request.prepass_resolution);
      line.Add("misses_planning", miss_planning).Add("disagree_with_certified", planning_disagree);
      line.Add("ours_states", mean_of(planning.states));
      line.Add("ours_distance_queries", mean_of(planning.distance_queries));
      line.Print();
    }
    {
      Work work;
      for (const auto& st : discrete.stats) work.Add(st);
      JsonLine line = CaseLine(kSuite, "link_discrete", discrete.times_us, work, kPeerLink, peer.times_us);
      common(line, discrete);
      line.Add("discrete_agree", discrete_agree);
      line.Add("ours_states", mean_of(discrete.states));
      line.Print();
    }
    // Continuous: time of first contact on the same edges (tolerance 0.1 mm). Contact exactly where
    // the certified LINK collides, up to grazes within the tolerance; t* never after its t_collide.
    {
      ContinuousRequest request;
      request.tolerance = 1e-4;
      std::vector<core::ContinuousResult> results(n);
      const auto times = TimePerItem(n, 1, [&](int i) {
        const EdgeItem& e = edges[i];
        if (!scenes[e.problem]->TimeOfFirstContact(e.q0, e.q1, request, &cache, &results[i]).ok()) ++failures;
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
        certified_colliding_no_contact += !certified.free[i] && !certified.undecided[i] && !r.contact;
      }
      JsonLine line = CaseLine(kSuite, "ccd_edge", times, work, kPeerLink, peer.times_us);
      line.Add("tolerance", request.tolerance).Add("contacts", contacts).Add("colliding_dense", colliding);
      line.Add("certified_colliding_without_contact", certified_colliding_no_contact);
      line.Add("undecided", undecided_ccd).Add("iterations_mean", mean_of(iterations));
      line.Print();
    }
  }

  if (failures > 0) {
    std::cerr << "robot: " << failures << " CheckState calls failed\n";
    return 1;
  }
  return 0;
}

}  // namespace proximity::bench
