// Suite envrob: FCL's own env/rob meshes and pose extents (env at identity, rob at seeded random poses
// with translations in [-3000, 3000] x [-3000, 3000] x [0, 3000]), ours beside FCL 0.7.
#include <fcl/fcl.h>

#include <iostream>
#include <random>

#include "bench_util.h"
#include "proximity/core/mesh_query.h"

namespace proximity::bench {
namespace {

using core::RigidTransform;
using core::Vec3;

template <class BV>
std::shared_ptr<fcl::BVHModel<BV>> FclModel(const core::TriangleMesh& m) {
  auto model = std::make_shared<fcl::BVHModel<BV>>();
  std::vector<fcl::Vector3d> v(m.vertices.begin(), m.vertices.end());
  std::vector<fcl::Triangle> t;
  for (const auto& tri : m.triangles) t.emplace_back(tri[0], tri[1], tri[2]);
  model->beginModel();
  model->addSubModel(v, t);
  model->endModel();
  return model;
}

fcl::Transform3d FclPose(const RigidTransform& X) {
  fcl::Transform3d T = fcl::Transform3d::Identity();
  T.linear() = X.R;
  T.translation() = X.p;
  return T;
}

core::Mat3 RandomRotation(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double u1 = u(rng), u2 = u(rng), u3 = u(rng);
  const double a = std::sqrt(1 - u1), b = std::sqrt(u1);
  return Eigen::Quaterniond(b * std::cos(2 * M_PI * u3), a * std::sin(2 * M_PI * u2), a * std::cos(2 * M_PI * u2),
                            b * std::sin(2 * M_PI * u3))
      .normalized()
      .toRotationMatrix();
}

struct Counters {
  double bv = 0, tri = 0;
};

void Emit(const std::string& name, int n, const std::vector<double>& ours, const Counters& work, const std::string& peer,
          const std::vector<double>& peer_t) {
  JsonLine line;
  line.Add("suite", "envrob").Add("case", name).Add("n", n);
  line.Add("ours_us", Median(ours)).Add("ours_mean_us", Mean(ours)).Add("ours_p95_us", Percentile(ours, 0.95));
  line.Add("peer", peer);
  if (!peer_t.empty()) {
    line.Add("peer_us", Median(peer_t)).Add("peer_mean_us", Mean(peer_t));
    line.Add("ratio", Median(peer_t) / Median(ours)).Add("ratio_mean", Mean(peer_t) / Mean(ours));
  }
  line.Add("ours_bv_tests", work.bv).Add("ours_triangle_tests", work.tri);
  line.Print();
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
  const double t_build = Now();
  core::BvhBuildOptions build;
  if (options.leaf_size > 0) build.max_leaf_triangles = options.leaf_size;
  if (options.split == "sah") build.split = core::SplitRule::kSurfaceArea;
  if (options.split == "median") build.split = core::SplitRule::kMedian;
  const auto env = core::MeshModel::Build(env_mesh.value(), build).value();
  const auto rob = core::MeshModel::Build(rob_mesh.value(), build).value();
  const double build_ms = (Now() - t_build) * 1e3;
  std::cerr << "built env (" << env->num_triangles() << " triangles, depth " << env->depth() << ") and rob ("
            << rob->num_triangles() << ") in " << build_ms << " ms\n";
  auto fenv_obbrss = FclModel<fcl::OBBRSSd>(env_mesh.value());
  auto frob_obbrss = FclModel<fcl::OBBRSSd>(rob_mesh.value());
  auto fenv_rss = FclModel<fcl::RSSd>(env_mesh.value());
  auto frob_rss = FclModel<fcl::RSSd>(rob_mesh.value());

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

  // Collide, first contact.
  {
    std::vector<char> ours_flag(n), peer_flag(n);
    Counters work;
    const auto ours = TimePerItem(n, reps, [&](int i) {
      core::CollisionResult r;
      (void)core::Collide(*env, I, *rob, poses[i], {}, &r);
      ours_flag[i] = r.colliding;
      work.bv += r.stats.bv_tests;
      work.tri += r.stats.triangle_tests;
    });
    fcl::CollisionObjectd oa(fenv_obbrss, fcl::Transform3d::Identity()), ob(frob_obbrss, fcl::Transform3d::Identity());
    const auto peer = TimePerItem(n, reps, [&](int i) {
      ob.setTransform(FclPose(poses[i]));
      fcl::CollisionRequestd req;
      fcl::CollisionResultd res;
      fcl::collide(&oa, &ob, req, res);
      peer_flag[i] = res.isCollision();
    });
    int agree = 0, colliding = 0;
    for (int i = 0; i < n; ++i) agree += ours_flag[i] == peer_flag[i], colliding += ours_flag[i];
    work.bv /= double(n) * reps;
    work.tri /= double(n) * reps;
    JsonLine line;
    line.Add("suite", "envrob").Add("case", "collide").Add("n", n).Add("ours_us", Median(ours));
    line.Add("ours_mean_us", Mean(ours)).Add("ours_p95_us", Percentile(ours, 0.95)).Add("peer", "fcl-0.7-OBBRSS");
    line.Add("peer_us", Median(peer)).Add("peer_mean_us", Mean(peer)).Add("ratio", Median(peer) / Median(ours));
    line.Add("ratio_mean", Mean(peer) / Mean(ours)).Add("ours_bv_tests", work.bv).Add("ours_triangle_tests", work.tri);
    line.Add("colliding", colliding).Add("agree", agree);
    line.Print();
  }

  // FCL's exact distance with each mesh volume it offers for distance; the faster is the peer.
  std::vector<double> peer_distance(n);
  std::vector<double> peer_best;
  std::string peer_best_name;
  for (int which = 0; which < 2; ++which) {
    fcl::CollisionObjectd oa(which == 0 ? std::shared_ptr<fcl::CollisionGeometryd>(fenv_rss) : fenv_obbrss,
                             fcl::Transform3d::Identity());
    fcl::CollisionObjectd ob(which == 0 ? std::shared_ptr<fcl::CollisionGeometryd>(frob_rss) : frob_obbrss,
                             fcl::Transform3d::Identity());
    const auto t = TimePerItem(n, reps, [&](int i) {
      ob.setTransform(FclPose(poses[i]));
      fcl::DistanceRequestd req;
      req.enable_nearest_points = true;
      fcl::DistanceResultd res;
      fcl::distance(&oa, &ob, req, res);
      peer_distance[i] = res.min_distance;
    });
    const std::string name = which == 0 ? "fcl-0.7-RSS" : "fcl-0.7-OBBRSS";
    if (peer_best.empty() || Median(t) < Median(peer_best)) {
      peer_best = t;
      peer_best_name = name;
    }
  }

  std::vector<double> exact_ours;
  for (double rel : {0.0, 0.05, 0.2, 0.5}) {
    core::DistanceRequest req;
    req.rel_err = rel;
    Counters work;
    double max_rel_diff = 0.0;
    int budget_violations = 0;
    const auto ours = TimePerItem(n, reps, [&](int i) {
      core::DistanceResult r;
      (void)core::ComputeDistance(*env, I, *rob, poses[i], req, nullptr, &r);
      work.bv += r.stats.bv_tests;
      work.tri += r.stats.triangle_tests;
      const double truth = peer_distance[i];
      if (rel == 0.0) {
        max_rel_diff = std::max(max_rel_diff, std::abs(r.upper_bound - truth) / std::max(1e-9, truth));
      } else if (r.lower_bound > truth * (1 + 1e-9) + 1e-9 || r.upper_bound > r.lower_bound * (1 + rel) * (1 + 1e-12)) {
        ++budget_violations;
      }
    });
    work.bv /= double(n) * reps;
    work.tri /= double(n) * reps;
    if (rel == 0.0) exact_ours = ours;
    JsonLine line;
    const std::string name = rel == 0.0 ? "distance_exact" : "distance_rel_" + std::to_string(rel).substr(0, 4);
    line.Add("suite", "envrob").Add("case", name).Add("n", n).Add("ours_us", Median(ours));
    line.Add("ours_mean_us", Mean(ours)).Add("ours_p95_us", Percentile(ours, 0.95)).Add("peer", peer_best_name + " exact");
    line.Add("peer_us", Median(peer_best)).Add("peer_mean_us", Mean(peer_best));
    line.Add("ratio", Median(peer_best) / Median(ours)).Add("ratio_mean", Mean(peer_best) / Mean(ours));
    line.Add("ours_bv_tests", work.bv).Add("ours_triangle_tests", work.tri);
    if (rel == 0.0) {
      line.Add("max_rel_diff_vs_peer", max_rel_diff);
    } else {
      line.Add("speedup_vs_our_exact", Median(exact_ours) / Median(ours)).Add("budget_violations", budget_violations);
    }
    line.Print();
  }

  // Warm-started exact distance along straight-line motions, against FCL cold on every step.
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
    const int total = static_cast<int>(path.size());
    Counters work;
    std::vector<double> ours(total, 1e300);
    for (int r = 0; r < reps; ++r) {
      for (int m = 0; m < motions; ++m) {
        core::DistanceCache cache;
        for (int s = 0; s < steps; ++s) {
          const int i = m * steps + s;
          core::DistanceResult res;
          const double t0 = Now();
          (void)core::ComputeDistance(*env, I, *rob, path[i], {}, &cache, &res);
          ours[i] = std::min(ours[i], (Now() - t0) * 1e6);
          work.bv += res.stats.bv_tests;
          work.tri += res.stats.triangle_tests;
        }
      }
    }
    work.bv /= double(total) * reps;
    work.tri /= double(total) * reps;
    const bool rss_best = peer_best_name == "fcl-0.7-RSS";
    fcl::CollisionObjectd oa(rss_best ? std::shared_ptr<fcl::CollisionGeometryd>(fenv_rss) : fenv_obbrss,
                             fcl::Transform3d::Identity());
    fcl::CollisionObjectd ob(rss_best ? std::shared_ptr<fcl::CollisionGeometryd>(frob_rss) : frob_obbrss,
                             fcl::Transform3d::Identity());
    const auto peer = TimePerItem(total, reps, [&](int i) {
      ob.setTransform(FclPose(path[i]));
      fcl::DistanceRequestd req;
      req.enable_nearest_points = true;
      fcl::DistanceResultd res;
      fcl::distance(&oa, &ob, req, res);
    });
    Emit("distance_warm_motion", total, ours, work, peer_best_name + " exact, cold", peer);
  }
  return 0;
}

}  // namespace proximity::bench
