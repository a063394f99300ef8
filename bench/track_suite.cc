// The track suite: clearance tracking for controllers (contact/tracker.h) along 1 kHz joint trajectories
// (every joint moves at most 1e-3 rad a frame), in seeded worlds of 10 and 100 objects (boxes,
// cylinders, spheres, convex meshes and non-convex brackets) around the robot, per frame:
//   track_nearest      the tracker's nearest pair with its gradient (V-Clip for convex polyhedra), beside
//                      our cold exact distance(q) (Scene::ComputeDistance, rel_err 0) and FCL's distance
//                      over the same pairs (MoveIt-style: links against the world manager, then links
//                      against links), with the agreement of all three;
//   track_nearest_gjk  the same tracker with GJK warm starts instead of V-Clip (the per-run choice);
//   track_nearest_1nm  the tracker and the cold distance(q) both with a 1 nm absolute budget: meshes
//                      stored in single precision (STL) sit nanometres off their convex hulls, which
//                      an exact answer must settle triangle by triangle every frame;
//   track_per_link     every link's nearest pair (what a control barrier function asks), beside a tracker
//                      made afresh each frame (cold).
// Robot: --robot flags (robot_input.h), by default the KUKA KR5 of Debian's dart-doc.

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"
#include "peers/fcl_robot.h"
#include "problem_gen.h"
#include "proximity/core/contact/tracker.h"
#include "proximity/core/mesh/mesh.h"
#include "narrowphase/convex.h"
#include "robot_input.h"
#include "bvh/bvh.h"

namespace proximity::bench {
namespace {

using core::Geometry;
using core::RigidTransform;
using core::Vec3;

constexpr char kSuite[] = "track";
constexpr double kStep = 1e-3;  // rad (or m) per frame and joint: 1 kHz at up to 1 rad/s

core::Result<Geometry> MeshGeometry(core::TriangleMesh mesh) {
  Geometry g;
  auto hull = core::ConvexPolytope::Build(mesh);
  if (!hull.ok()) return hull.error();
  g.hull = hull.value();
  g.hull_is_surface = core::IsHullSurface(mesh, *g.hull, 1e-9);
  auto model = core::MeshModel::Build(std::move(mesh));
  if (!model.ok()) return model.error();
  g.mesh = model.value();
  return g;
}

// A seeded world of `count` objects between the robot's base and its reach, sized by the reach.
core::Result<std::vector<core::WorldObject>> TrackWorld(const Workspace& ws, int count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  // Smaller objects in a fuller world, so that the arm still moves among them.
  const double size = ws.reach * (count <= 10 ? 0.06 : 0.03);
  std::vector<core::WorldObject> out;
  for (int i = 0; i < count; ++i) {
    const double a = size * (0.5 + unit(rng)), b = size * (0.5 + unit(rng)), c = size * (0.5 + unit(rng));
    Geometry g;
    switch (i % 5) {
      case 0:
        g = Geometry::Primitive(core::Box{Vec3(a, b, c)});
        break;
      case 1:
        g = Geometry::Primitive(core::Cylinder{0.6 * a, b});
        break;
      case 2:
        g = Geometry::Primitive(core::Sphere{Vec3::Zero(), a});
        break;
      case 3: {  // a convex mesh: the hull of random points
        std::vector<Vec3> points;
        std::normal_distribution<double> gauss(0.0, 1.0);
        for (int k = 0; k < 40; ++k) points.emplace_back(a * gauss(rng), b * gauss(rng), c * gauss(rng));
        auto hull = core::ConvexPolytope::Build(points);
        if (!hull.ok()) return hull.error();
        auto mesh = MeshGeometry(hull.value()->ToMesh());
        if (!mesh.ok()) return mesh.error();
        g = mesh.value();
        break;
      }
      default: {  // a U-shaped bracket: not convex
        core::TriangleMesh m;
        auto slab = [&](const Vec3& centre, const Vec3& half) {
          core::AppendMesh(&m, core::MakeBoxMesh(2 * half), RigidTransform(core::Mat3::Identity(), centre));
        };
        slab(Vec3(0, 0, -a), Vec3(a, 0.3 * b, 0.2 * a));
        slab(Vec3(-a, 0, 0), Vec3(0.2 * a, 0.3 * b, a));
        slab(Vec3(a, 0, 0), Vec3(0.2 * a, 0.3 * b, a));
        auto mesh = MeshGeometry(std::move(m));
        if (!mesh.ok()) return mesh.error();
        g = mesh.value();
        break;
      }
    }
    // A direction on the upper side of the base and a distance between the base and the reach.
    Vec3 d;
    do {
      d = Vec3(2 * unit(rng) - 1, 2 * unit(rng) - 1, 2 * unit(rng) - 1);
    } while (d.norm() > 1.0 || d.norm() < 0.1 || d.dot(ws.up) < -0.2 * d.norm());
    // Within 1.3 times the reach: the arm meets some of them, the broad phase sees them all.
    const double lo = ws.base_radius + 2 * size;
    const double r = lo + unit(rng) * std::max(0.0, 1.3 * ws.reach - lo);
    core::WorldObject o;
    o.id = "obj" + std::to_string(i);
    o.parts.push_back({std::move(g), RigidTransform(RandomRotation(rng), ws.origin + r * d.normalized())});
    out.push_back(std::move(o));
  }
  return out;
}

// A smooth trajectory from q0: joint j moves kStep sin(phase_j + rate_j f) at frame f, within its limits.
std::vector<std::vector<double>> Trajectory(const core::RobotModel& robot, std::vector<double> q, int frames,
                                            std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const size_t dof = q.size();
  std::vector<double> phase(dof), rate(dof);
  for (size_t j = 0; j < dof; ++j) {
    phase[j] = 6.283 * unit(rng);
    rate[j] = 0.001 + 0.01 * unit(rng);
  }
  std::vector<std::vector<double>> out;
  for (int f = 0; f < frames; ++f) {
    for (size_t j = 0; j < dof; ++j) {
      q[j] = std::clamp(q[j] + kStep * std::sin(phase[j] + rate[j] * f), robot.lower_limits()[j],
                        robot.upper_limits()[j]);
    }
    out.push_back(q);
  }
  return out;
}

// A random configuration the scene finds free, and at least `clearance` from every world object (robot
// parts may sit closer to each other by design: a wrist's links a few millimetres apart).
std::vector<double> FreeStart(const core::Scene& scene, std::mt19937_64& rng, double clearance) {
  const core::RobotModel& robot = scene.robot();
  core::SceneCache cache;
  core::SceneDistanceRequest world;
  world.self = false;
  world.max_distance = clearance;
  std::vector<double> q(robot.num_positions());
  for (int attempt = 0; attempt < 20000; ++attempt) {
    for (int j = 0; j < robot.num_positions(); ++j) {
      const double lo = std::max(robot.lower_limits()[j], -M_PI), hi = std::min(robot.upper_limits()[j], M_PI);
      q[j] = std::uniform_real_distribution<double>(lo, hi)(rng);
    }
    auto r = scene.CheckState(q, &cache);
    if (!r.ok() || !r.value().free) continue;
    auto d = scene.ComputeDistance(q, world, &cache);
    if (d.ok() && d.value().lower_bound >= clearance) return q;
  }
  std::cerr << "track: no free start " << clearance << " m from the world in 20000 samples; using the last free one\n";
  return q;
}

double Us(double seconds) { return 1e6 * seconds; }

int RunWorld(const LoadedRobot& loaded, const Workspace& ws, int count, const SuiteOptions& options,
             std::mt19937_64& rng) {
  const core::RobotModel& robot = *loaded.model;
  auto objects = TrackWorld(ws, count, rng);
  if (!objects.ok()) {
    std::cerr << "track: " << objects.error().message << "\n";
    return 1;
  }
  core::SceneDescription d;
  d.robot = loaded.model;
  d.objects = objects.value();
  d.self_clearance_fill = core::SelfClearanceFill::kAtBuild;
  auto built = core::Scene::Build(std::move(d));
  if (!built.ok()) {
    std::cerr << "track: " << built.error().message << "\n";
    return 1;
  }
  const std::shared_ptr<const core::Scene> scene = built.value();
  peers::FclRobot fcl_robot(robot);
  peers::FclWorld fcl_world(*scene);
  auto geometry = core::TrackingGeometry::Build(*scene).value();

  core::TrackRequest nearest;
  nearest.horizon = 0.1 * ws.reach;
  nearest.max_pairs = 1;
  core::TrackRequest nearest_nm = nearest;
  nearest_nm.abs_err = 1e-9;
  core::SceneDistanceRequest cold_nm;
  cold_nm.abs_err = 1e-9;
  core::TrackRequest nearest_gjk = nearest;
  nearest_gjk.convex = core::TrackConvexMethod::kGjk;
  core::TrackRequest per_link = nearest;
  per_link.per_link = true;

  const int trajectories = options.quick ? 2 : 4;
  const int frames = options.quick ? 150 : 600;
  std::vector<std::vector<std::vector<double>>> paths;
  for (int t = 0; t < trajectories; ++t) {
    paths.push_back(Trajectory(robot, FreeStart(*scene, rng, 0.02 * ws.reach), frames, rng));
  }
  // Each method runs a whole trajectory on its own, as a controller's process would (one after the
  // other, each frame's caches would be the other methods'). The first frame of each trajectory
  // starts cold: run, but not timed as a tracking frame. `keep` (untimed) stores what a frame found, for
  // the comparisons below.
  auto run_keep = [&](auto&& frame, std::vector<double>* times, auto&& keep) {
    for (const auto& path : paths) {
      for (size_t f = 0; f < path.size(); ++f) {
        const double t0 = Now();
        frame(path[f], f == 0);
        const double t1 = Now();
        keep();
        if (f > 0) times->push_back(Us(t1 - t0));
      }
    }
  };
  auto run = [&](auto&& frame, std::vector<double>* times) { run_keep(frame, times, [] {}); };
  std::vector<double> ours, ours_gjk, ours_link, cold, cold_link, peer, ours_nm, cold_nm_times;
  std::vector<core::TrackResult> r_all, rg_all, rl_all, rc_all, rn_all;
  std::vector<core::SceneDistanceResult> en_all;
  std::vector<core::SceneDistanceResult> e_all;
  std::vector<double> fcl_all;
  std::unique_ptr<core::Tracker> tracker;
  // A controller keeps one result and lets each frame reuse its storage (Tracker::Update into it).
  core::TrackResult frame_result;
  auto tracking = [&](const core::TrackRequest& request, std::vector<double>* times,
                      std::vector<core::TrackResult>* out) {
    run_keep(
        [&](const std::vector<double>& q, bool start) {
          if (start) tracker = std::make_unique<core::Tracker>(scene, geometry);
          if (core::Status s = tracker->Update(q, request, &frame_result); !s.ok()) {
            throw std::runtime_error("tracker: " + s.error().message);
          }
        },
        times, [&] { out->push_back(frame_result); });
  };
  tracking(nearest, &ours, &r_all);
  tracking(nearest_gjk, &ours_gjk, &rg_all);
  tracking(nearest_nm, &ours_nm, &rn_all);
  tracking(per_link, &ours_link, &rl_all);
  core::SceneCache cache;
  run([&](const std::vector<double>& q, bool) { e_all.push_back(scene->ComputeDistance(q, {}, &cache).value()); },
      &cold);
  run([&](const std::vector<double>& q, bool) { en_all.push_back(scene->ComputeDistance(q, cold_nm, &cache).value()); },
      &cold_nm_times);
  run([&](const std::vector<double>& q, bool) { rc_all.push_back(core::Tracker(scene, geometry).Update(q, per_link).value()); },
      &cold_link);
  std::vector<core::RigidTransform> X_WL(robot.num_links());
  run([&](const std::vector<double>& q, bool) {
        (void)robot.ForwardKinematics(q, std::span<core::RigidTransform>(X_WL), scene->X_WB());
        fcl_robot.Pose(X_WL);
        fcl_all.push_back(fcl_robot.Distance(*scene, *fcl_world.manager));
      },
      &peer);

  int64_t agree = 0, compared = 0, peer_below = 0, peer_above = 0, peer_compared = 0, in_contact = 0;
  int64_t vclip = 0, transitions = 0, gjk = 0, walks = 0, decided = 0, reported = 0, same = 0;
  int64_t link_pairs = 0, link_same = 0, surface = 0;
  int64_t nearest_by[3] = {0, 0, 0};  // the nearest pair's method: V-Clip, GJK, walk
  Work work, work_cold;
  for (size_t i = 0; i < r_all.size(); ++i) {
    if (i % static_cast<size_t>(frames) == 0) continue;  // the cold first frames
    const core::TrackResult& r = r_all[i];
    const core::TrackResult& rg = rg_all[i];
    const core::TrackResult& rl = rl_all[i];
    const core::TrackResult& rc = rc_all[i];
    const core::SceneDistanceResult& e = e_all[i];
    const double fcl = fcl_all[i];
    work.Add(r.stats);
    work_cold.Add(e.stats);
    vclip += r.vclip;
    transitions += r.vclip_transitions;
    gjk += r.gjk;
    walks += r.walks;
    decided += r.decided;
    reported += static_cast<int64_t>(r.pairs.size());
    same += r.same_features;
    surface += r.surface_checks;
    if (!r.pairs.empty()) ++nearest_by[static_cast<int>(r.pairs[0].method)];
    link_pairs += static_cast<int64_t>(rl.pairs.size());
    link_same += rl.same_features;
    // Agreement: the tracker's nearest is distance(q)'s (when within the horizon), and the GJK and cold
    // trackers say the same; FCL's distance lies in our interval (within FCL's own tolerance).
    if (e.upper_bound < nearest.horizon) {
      ++compared;
      const double tol = 1e-9 * (1.0 + e.upper_bound);
      const bool same_nearest = !r.pairs.empty() && std::abs(r.pairs[0].distance.upper - e.upper_bound) <= tol &&
                                !rg.pairs.empty() && std::abs(rg.pairs[0].distance.upper - e.upper_bound) <= tol;
      bool same_links = rl.pairs.size() == rc.pairs.size();
      for (size_t k = 0; same_links && k < rl.pairs.size(); ++k) {
        same_links = std::abs(rl.pairs[k].distance.upper - rc.pairs[k].distance.upper) <= tol;
      }
      // With the 1 nm budget both intervals hold the exact distance and are at most 1 nm wide.
      const core::TrackResult& rn = rn_all[i];
      const core::SceneDistanceResult& en = en_all[i];
      const bool nm_ok = !rn.pairs.empty() && rn.pairs[0].distance.lower <= e.upper_bound + tol &&
                         rn.pairs[0].distance.upper >= e.lower_bound - tol &&
                         rn.pairs[0].distance.upper - rn.pairs[0].distance.lower <= 1e-9 + tol &&
                         en.lower_bound <= e.upper_bound + tol && en.upper_bound >= e.lower_bound - tol;
      agree += same_nearest && same_links && nm_ok;
      ++peer_compared;
      // FCL below our lower bound would contradict our certificate; above our upper bound (which the
      // witness points realise) it is FCL's own tolerance (its GJK on curved primitives).
      peer_below += fcl < e.lower_bound - 1e-6;
      peer_above += fcl > e.upper_bound + 1e-6;
    }
    in_contact += e.upper_bound <= 0.0;
  }
  const double n = static_cast<double>(ours.size());
  auto common = [&](JsonLine& line) {
    line.Add("robot", robot.name()).Add("objects", count).Add("frames", static_cast<int64_t>(ours.size()));
    line.Add("horizon_m", nearest.horizon).Add("frames_in_contact", in_contact);
    line.Add("agree", agree).Add("compared", compared);
  };
  Work none;
  JsonLine a = CaseLine(kSuite, "track_nearest", ours, work, "FCL distance (MoveIt-style)", peer);
  common(a);
  const double p50 = Median(ours);
  a.Add("ours_p99_us", Percentile(ours, 0.99)).Add("cold_us", Median(cold)).Add("ratio_cold", Median(cold) / p50);
  a.Add("cold_bv_tests", work_cold.bv_tests / n).Add("cold_triangle_tests", work_cold.triangle_tests / n);
  a.Add("peer_below_lower", peer_below).Add("peer_above_upper", peer_above).Add("peer_compared", peer_compared);
  a.Add("vclip_per_frame", vclip / n).Add("transitions_per_vclip", vclip > 0 ? transitions / double(vclip) : 0.0);
  a.Add("gjk_per_frame", gjk / n).Add("walks_per_frame", walks / n).Add("decided_per_frame", decided / n);
  a.Add("same_features_share", reported > 0 ? same / double(reported) : 0.0);
  a.Add("surface_checks_per_frame", surface / n);
  a.Add("nearest_by_vclip", nearest_by[0]).Add("nearest_by_gjk", nearest_by[1]).Add("nearest_by_walk", nearest_by[2]);
  a.Add("convex_choice", Median(ours_gjk) < p50 ? "gjk" : "vclip");
  a.Print();
  JsonLine nm = CaseLine(kSuite, "track_nearest_1nm", ours_nm, none, "FCL distance (MoveIt-style)", peer);
  common(nm);
  nm.Add("cold_us", Median(cold_nm_times)).Add("ratio_cold", Median(cold_nm_times) / Median(ours_nm));
  nm.Print();
  JsonLine g = CaseLine(kSuite, "track_nearest_gjk", ours_gjk, none, "FCL distance (MoveIt-style)", peer);
  common(g);
  g.Add("cold_us", Median(cold)).Add("ratio_cold", Median(cold) / Median(ours_gjk));
  g.Add("vclip_over_gjk", p50 / Median(ours_gjk));
  g.Print();
  JsonLine l = CaseLine(kSuite, "track_per_link", ours_link, none, "our tracker made afresh each frame", cold_link);
  common(l);
  l.Add("ours_p99_us", Percentile(ours_link, 0.99)).Add("pairs_per_frame", link_pairs / n);
  l.Add("same_features_share", link_pairs > 0 ? link_same / double(link_pairs) : 0.0);
  l.Print();
  return 0;
}

}  // namespace

int RunTrack(const SuiteOptions& options) {
  RobotSpec spec = options.robot;
  if (!spec.given()) {
    spec.urdf = std::string(PROX_DART_URDF_DIR) + "/KR5/KR5 sixx R650.urdf";
    if (!std::filesystem::exists(spec.urdf)) {
      std::cerr << "track: the default robot " << spec.urdf << " is absent (apt-get install dart-doc), or give --robot\n";
      return 77;
    }
  }
  std::vector<std::string> warnings;
  auto loaded = LoadRobot(spec, {}, &warnings);
  if (!loaded.ok()) {
    std::cerr << "track: " << loaded.error().message << "\n";
    return kBadInput;
  }
  for (const std::string& w : warnings) std::cerr << "track: warning: " << w << "\n";
  auto ws = MeasureWorkspace(*loaded.value().model);
  if (!ws.ok()) {
    std::cerr << "track: " << ws.error().message << "\n";
    return kBadInput;
  }
  std::mt19937_64 rng(options.seed);
  for (int count : {10, 100}) {
    if (int rc = RunWorld(loaded.value(), ws.value(), count, options, rng); rc != 0) return rc;
  }
  return 0;
}

}  // namespace proximity::bench
