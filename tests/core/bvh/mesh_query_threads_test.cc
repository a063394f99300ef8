// Built models are immutable: many threads query the same models at once, each with its own cache,
// and get exactly the answers a single thread gets. Run under the thread sanitizer build as well.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "core/test_util.h"
#include "bvh/mesh_query.h"

namespace proximity::core {
namespace {

struct Answer {
  bool colliding;
  double distance;
};

TEST(MeshQueryThreads, SharedModelsGiveSingleThreadAnswers) {
  std::shared_ptr<const MeshModel> a, b;
  Vec3 lo(-1.5, -1.5, -1.5), hi(1.5, 1.5, 1.5);
  const std::string shared = testing::SharedDataDir();
  if (!shared.empty()) {
    a = MeshModel::Build(testing::LoadMeshOrDie(shared + "/scenes/fcl/env.obj")).value();
    b = MeshModel::Build(testing::LoadMeshOrDie(shared + "/scenes/fcl/rob.obj")).value();
    lo = Vec3(-3000, -3000, 0);
    hi = Vec3(3000, 3000, 3000);
  } else {
    a = MeshModel::Build(MakeTorusMesh(1.0, 0.3, 64, 24)).value();
    b = MeshModel::Build(MakeIcosphereMesh(0.5, 3)).value();
  }
  std::mt19937_64 rng(21);
  std::vector<RigidTransform> poses;
  for (int i = 0; i < 300; ++i) poses.push_back(testing::RandomPose(rng, lo, hi));

  std::vector<Answer> reference;
  for (const auto& X : poses) {
    CollisionResult c;
    DistanceResult d;
    PROX_ASSERT_OK_AND_ASSIGN(c, Collide(*a, {}, *b, X, {}));
    PROX_ASSERT_OK_AND_ASSIGN(d, ComputeDistance(*a, {}, *b, X, {}, nullptr));
    reference.push_back({c.colliding, d.upper_bound});
  }

  constexpr int kThreads = 4;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      DistanceCache cache;
      for (int round = 0; round < 2; ++round) {
        for (size_t k = 0; k < poses.size(); ++k) {
          const size_t i = (k * (2 * t + 1) + t) % poses.size();  // each thread its own order
          DistanceRequest req;
          req.rel_err = (round == 0) ? 0.0 : 0.2;
          const Result<CollisionResult> collision = Collide(*a, {}, *b, poses[i], {});
          const Result<DistanceResult> distance = ComputeDistance(*a, {}, *b, poses[i], req, &cache);
          if (!collision.ok() || !distance.ok()) {
            ++mismatches[t];
            continue;
          }
          const CollisionResult& c = collision.value();
          const DistanceResult& d = distance.value();
          const double truth = reference[i].distance;
          const bool distance_ok = round == 0 ? std::abs(d.upper_bound - truth) <= 1e-12 * std::max(1.0, truth)
                                              : d.lower_bound <= truth * (1 + 1e-12) && d.upper_bound >= truth * (1 - 1e-12);
          if (c.colliding != reference[i].colliding || !distance_ok) ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace proximity::core
