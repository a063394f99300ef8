// Suite envrob: FCL's own env/rob meshes and pose extents (env at identity, rob at seeded random poses
// with translations in [-3000, 3000] x [-3000, 3000] x [0, 3000]), ours beside FCL 0.7.
#include <iostream>
#include <random>

#include "bench_util.h"
#include "peers/fcl_peer.h"
#include "bvh/mesh_query.h"

namespace proximity::bench {
namespace {

using core::RigidTransform;
using core::Vec3;
using peers::FclMesh;
using peers::FclPose;

// One of FCL's mesh hierarchies for both models.
struct FclPair {
  std::string name;
  std::shared_ptr<fcl::CollisionGeometryd> env, rob;
};

// FCL's exact distance at every pose, timed; the distances go to *distances when given.
std::vector<double> FclDistanceTimes(const FclPair& pair, const std::vector<RigidTransform>& poses, int reps,
                                     std::vector<double>* distances) {
  fcl::CollisionObjectd oa(pair.env, fcl::Transform3d::Identity()), ob(pair.rob, fcl::Transform3d::Identity());
  return TimePerItem(static_cast<int>(poses.size()), reps, [&](int i) {
    ob.setTransform(FclPose(poses[i]));
    fcl::DistanceRequestd req;
    req.enable_nearest_points = true;
    fcl::DistanceResultd res;
    fcl::distance(&oa, &ob, req, res);
    if (distances != nullptr) (*distances)[i] = res.min_distance;
  });
}

}  // namespace

int RunEnvRob(const SuiteOptions& options) {
  auto env_mesh = core::LoadMesh(options.data_dir + "/scenes/fcl/env.obj");
  auto rob_mesh = core::LoadMesh(options.data_dir + "/scenes/fcl/rob.obj");
  if (!env_mesh.ok() || !rob_mesh.ok()) {
    std::cerr << "envrob needs ../shared/data/scenes/fcl: "
              << (!env_mesh.ok() ? env_mesh.error().message : rob_mesh.error().message) << "\n";
    return 77;
  }
  core::BvhBuildOptions build;
  if (options.leaf_size > 0) build.max_leaf_triangles = options.leaf_size;
  if (options.split == "sah") build.split = core::SplitRule::kSurfaceArea;
  if (options.split == "median") build.split = core::SplitRule::kMedian;
  const double t_build = Now();
  const auto env = core::MeshModel::Build(env_mesh.value(), build).value();
  const auto rob = core::MeshModel::Build(rob_mesh.value(), build).value();
  std::cerr << "built env (" << env->num_triangles() << " triangles, depth " << env->depth() << ") and rob ("
            << rob->num_triangles() << ") in " << (Now() - t_build) * 1e3 << " ms\n";
  const FclPair obbrss{"fcl-0.7-OBBRSS", FclMesh<fcl::OBBRSSd>(env_mesh.value()),
                       FclMesh<fcl::OBBRSSd>(rob_mesh.value())};
  const FclPair rss{"fcl-0.7-RSS", FclMesh<fcl::RSSd>(env_mesh.value()), FclMesh<fcl::RSSd>(rob_mesh.value())};

  const int n = options.quick ? 500 : 2000;
  const int reps = options.quick ? 2 : 5;
  std::mt19937_64 rng(options.seed);
  std::vector<RigidTransform> poses(n);
  for (auto& X : poses) {
    X.R = RandomRotation(rng);
    X.p = Vec3(std::uniform_real_distribution<double>(-3000, 3000)(rng),
               std::uniform_real_distribution<double>(-3000, 3000)(rng),
               std::uniform_real_distribution<double>(0, 3000)(rng));
  }
  const RigidTransform I;

  // Collide, first contact, against FCL's collision hierarchy of choice (OBBRSS).
  {
    std::vector<char> ours_flag(n), peer_flag(n);
    Work work;
    const auto ours = TimePerItem(n, reps, [&](int i) {
      const core::CollisionResult r = core::Collide(*env, I, *rob, poses[i], {}).value_or({});
      ours_flag[i] = r.colliding;
      work.Add(r.stats);
    });
    fcl::CollisionObjectd oa(obbrss.env, fcl::Transform3d::Identity()), ob(obbrss.rob, fcl::Transform3d::Identity());
    const auto peer = TimePerItem(n, reps, [&](int i) {
      ob.setTransform(FclPose(poses[i]));
      fcl::CollisionRequestd req;
      fcl::CollisionResultd res;
      fcl::collide(&oa, &ob, req, res);
      peer_flag[i] = res.isCollision();
    });
    int agree = 0, colliding = 0;
    for (int i = 0; i < n; ++i) agree += ours_flag[i] == peer_flag[i], colliding += ours_flag[i];
    CaseLine("envrob", "collide", ours, work, obbrss.name, peer).Add("colliding", colliding).Add("agree", agree).Print();
  }

  // FCL's exact distance with each mesh volume it offers for distance; the faster is the peer.
  std::vector<double> peer_distance(n);
  std::vector<double> peer_best = FclDistanceTimes(rss, poses, reps, &peer_distance);
  std::string peer_best_name = rss.name;
  if (auto t = FclDistanceTimes(obbrss, poses, reps, nullptr); Median(t) < Median(peer_best)) {
    peer_best = t;
    peer_best_name = obbrss.name;
  }

  // Distances matter where the meshes are apart; colliding poses end at the first contact. Every
  // distance case also reports its times over the separated poses alone (same poses for both).
  std::vector<char> separated(n);
  for (int i = 0; i < n; ++i) separated[i] = peer_distance[i] > 0.0;
  auto add_separated = [](JsonLine& line, const std::vector<double>& ours, const std::vector<double>& peer,
                          const std::vector<char>& keep) {
    const auto o = Select(ours, keep), p = Select(peer, keep);
    line.Add("separated", static_cast<int64_t>(o.size())).Add("ours_separated_us", Median(o));
    line.Add("peer_separated_us", Median(p)).Add("ratio_separated", Median(p) / Median(o));
  };

  std::vector<double> exact_ours;
  for (double rel : {0.0, 0.05, 0.2, 0.5}) {
    core::DistanceRequest req;
    req.rel_err = rel;
    Work work;
    double max_rel_diff = 0.0;
    int budget_violations = 0;
    const auto ours = TimePerItem(n, reps, [&](int i) {
      const core::DistanceResult r = core::ComputeDistance(*env, I, *rob, poses[i], req, nullptr).value_or({});
      work.Add(r.stats);
      const double truth = peer_distance[i];
      if (rel == 0.0) {
        max_rel_diff = std::max(max_rel_diff, std::abs(r.upper_bound - truth) / std::max(1e-9, truth));
      } else if (r.lower_bound > truth * (1 + 1e-9) + 1e-9 || r.upper_bound > r.lower_bound * (1 + rel) * (1 + 1e-12)) {
        ++budget_violations;
      }
    });
    if (rel == 0.0) exact_ours = ours;
    const std::string name = rel == 0.0 ? "distance_exact" : "distance_rel_" + std::to_string(rel).substr(0, 4);
    JsonLine line = CaseLine("envrob", name, ours, work, peer_best_name + " exact", peer_best);
    add_separated(line, ours, peer_best, separated);
    if (rel == 0.0) {
      line.Add("max_rel_diff_vs_peer", max_rel_diff);
    } else {
      line.Add("speedup_vs_our_exact", Median(exact_ours) / Median(ours));
      line.Add("speedup_vs_our_exact_separated",
               Median(Select(exact_ours, separated)) / Median(Select(ours, separated)));
      line.Add("budget_violations", budget_violations);
    }
    line.Print();
  }

  // Warm-started exact distance along straight-line motions (100 steps each; up to 600 units and 0.5
  // rad from a random start), against FCL cold on every step.
  {
    const int motions = options.quick ? 20 : 50, steps = 100;
    std::vector<RigidTransform> path;
    for (int m = 0; m < motions; ++m) {
      const RigidTransform X0 = poses[m];
      const Eigen::Quaterniond q0(X0.R);
      const Vec3 axis = Vec3(std::normal_distribution<double>()(rng), std::normal_distribution<double>()(rng),
                             std::normal_distribution<double>()(rng)).normalized();
      const double angle = std::uniform_real_distribution<double>(0.0, 0.5)(rng);
      const Eigen::Quaterniond q1 = Eigen::Quaterniond(Eigen::AngleAxisd(angle, axis)) * q0;
      const Vec3 p1 = X0.p + Vec3(std::uniform_real_distribution<double>(-600, 600)(rng),
                                  std::uniform_real_distribution<double>(-600, 600)(rng),
                                  std::uniform_real_distribution<double>(-600, 600)(rng));
      for (int s = 0; s < steps; ++s) {
        const double t = s / double(steps - 1);
        path.emplace_back(q0.slerp(t, q1).toRotationMatrix(), (1 - t) * X0.p + t * p1);
      }
    }
    Work work;
    std::vector<double> ours(path.size(), 1e300);
    for (int r = 0; r < reps; ++r) {
      for (int m = 0; m < motions; ++m) {
        core::DistanceCache cache;
        for (int s = 0; s < steps; ++s) {
          const int i = m * steps + s;
          const double t0 = Now();
          const core::DistanceResult res = core::ComputeDistance(*env, I, *rob, path[i], {}, &cache).value_or({});
          ours[i] = std::min(ours[i], (Now() - t0) * 1e6);
          work.Add(res.stats);
        }
      }
    }
    const FclPair& best = peer_best_name == rss.name ? rss : obbrss;
    std::vector<double> path_distance(path.size());
    const auto peer = FclDistanceTimes(best, path, reps, &path_distance);
    std::vector<char> apart(path.size());
    for (size_t i = 0; i < path.size(); ++i) apart[i] = path_distance[i] > 0.0;
    JsonLine line = CaseLine("envrob", "distance_warm_motion", ours, work, peer_best_name + " exact, cold", peer);
    add_separated(line, ours, peer, apart);
    line.Print();
  }
  return 0;
}

}  // namespace proximity::bench
