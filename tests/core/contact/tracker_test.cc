// Clearance tracking (contact/tracker.h): every frame's interval brackets a brute-force distance (all
// triangle pairs, GJK per triangle against primitives) along 1 kHz trajectories and after jumps; the
// pairs reported are the k nearest of distance(q)'s per-pair answers; gradients match central
// differences of the exact distance; V-Clip's features are the closest features a cold search finds and
// persist along smooth motion; overlapping pairs say so with a normal; bad input leaves the tracker as
// it was; real robots agree with the exact per-pair distance.

#include "proximity/core/contact/tracker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <new>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "contact/vclip.h"
#include "proximity/core/mesh/mesh.h"
#include "bvh/bvh.h"
#include "bvh/shape_query.h"
#include "narrowphase/convex.h"
#include "narrowphase/gjk.h"
#include "scene/scene_impl.h"

// Allocations made through operator new in this test binary (UpdateIntoAResult counts them per frame).
// Every unaligned form is replaced, so that each allocation and release pairs malloc with free (the
// sanitizers' own operators would otherwise meet memory they did not allocate); GCC warns on free() in
// a delete.
namespace {
std::atomic<int64_t> g_allocations{0};
void* CountedAllocation(std::size_t size) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
}  // namespace
void* operator new(std::size_t size) {
  if (void* p = CountedAllocation(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return CountedAllocation(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return CountedAllocation(size); }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace proximity::core {
namespace {

constexpr double kTol = 1e-9;

Geometry MeshGeometry(TriangleMesh mesh) {
  Geometry g;
  auto hull = ConvexPolytope::Build(mesh);
  EXPECT_TRUE(hull.ok());
  g.hull = hull.value();
  g.hull_is_surface = IsHullSurface(mesh, *g.hull, 1e-9);
  g.mesh = testing::ValueOrFail(MeshModel::Build(std::move(mesh)));
  return g;
}

// A U-shaped bracket (three boxes' surfaces): not convex.
Geometry Bracket(double size) {
  TriangleMesh m;
  auto slab = [&](const Vec3& centre, const Vec3& half) {
    AppendMesh(&m, MakeBoxMesh(2 * half), RigidTransform(Mat3::Identity(), centre));
  };
  slab(Vec3(0, 0, -size), Vec3(size, 0.3 * size, 0.2 * size));
  slab(Vec3(-size, 0, 0), Vec3(0.2 * size, 0.3 * size, size));
  slab(Vec3(size, 0, 0), Vec3(0.2 * size, 0.3 * size, size));
  return MeshGeometry(std::move(m));
}

Geometry ConvexMesh(std::mt19937_64& rng, double size) {
  return MeshGeometry(testing::RandomHull(rng, 40, size, 0.5)->ToMesh());
}

// Three revolute joints and a prismatic one; geometry comes as attached objects.
std::shared_ptr<const RobotModel> Arm() {
  const std::string urdf = R"(<robot name="arm">
    <link name="base"/><link name="l1"/><link name="l2"/><link name="l3"/><link name="l4"/>
    <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
      <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
    <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.3"/>
      <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
    <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="0.45 0 0" rpy="0.3 0 0"/>
      <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
    <joint name="j4" type="prismatic"><parent link="l3"/><child link="l4"/><origin xyz="0.3 0 0"/>
      <axis xyz="1 0 0"/><limit lower="-0.1" upper="0.2" effort="1" velocity="1"/></joint>
  </robot>)";
  return testing::ValueOrFail(RobotModel::FromUrdfString(urdf));
}

AttachedObject Attach(const std::string& id, const std::string& link, Geometry g, const RigidTransform& X_LG) {
  AttachedObject a;
  a.id = id;
  a.link = link;
  a.parts.push_back({std::move(g), X_LG});
  return a;
}

WorldObject Object(const std::string& id, Geometry g, const RigidTransform& X_WG) {
  WorldObject o;
  o.id = id;
  o.parts.push_back({std::move(g), X_WG});
  return o;
}

// The arm with a non-convex bracket, a convex mesh and a box on its links, in a world of every kind of
// geometry around it.
std::shared_ptr<const Scene> ArmScene(uint64_t seed, double padding = 0.0) {
  std::mt19937_64 rng(seed);
  SceneDescription d;
  d.robot = Arm();
  d.attached.push_back(Attach("bracket", "l2", Bracket(0.08), RigidTransform(Mat3::Identity(), Vec3(0.2, 0, 0))));
  d.attached.push_back(Attach("hull", "l3", ConvexMesh(rng, 0.05), RigidTransform(Mat3::Identity(), Vec3(0.15, 0, 0))));
  d.attached.push_back(Attach("tool", "l4", Geometry::Primitive(Box{Vec3(0.06, 0.03, 0.02)}), RigidTransform()));
  auto pose = [&] {
    RigidTransform X;
    do {
      X = testing::RandomPose(rng, Vec3(-0.8, -0.8, -0.2), Vec3(0.8, 0.8, 0.9));
    } while (X.p.head<2>().norm() < 0.25);
    return X;
  };
  std::vector<Geometry> world = {Bracket(0.1),
                                 Bracket(0.06),
                                 ConvexMesh(rng, 0.06),
                                 Geometry::Primitive(Box{Vec3(0.1, 0.05, 0.08)}),
                                 Geometry::Primitive(Box{Vec3(0.04, 0.2, 0.03)}),
                                 Geometry::Primitive(Sphere{Vec3::Zero(), 0.07}),
                                 Geometry::Primitive(Capsule{0.04, 0.1}),
                                 Geometry::Primitive(Cylinder{0.05, 0.08}),
                                 Geometry::Primitive(testing::RandomHull(rng, 30, 0.05, 0.5))};
  for (size_t i = 0; i < world.size(); ++i) d.objects.push_back(Object("o" + std::to_string(i), world[i], pose()));
  d.default_padding = padding;
  return testing::ValueOrFail(Scene::Build(std::move(d)));
}


// Brute force: every triangle pair between meshes, GJK from each triangle to a primitive, GJK between
// primitives.
double BruteDistance(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b) {
  if (a.is_mesh() && b.is_mesh()) return testing::BruteForceDistance(a.mesh->mesh(), X_a, b.mesh->mesh(), X_b);
  if (!a.is_mesh() && !b.is_mesh()) {
    double d = 0.0;
    VisitShape(a.shape, [&](const auto& sa) {
      VisitShape(b.shape, [&](const auto& sb) { d = GjkDistance(sa, X_a, sb, X_b).distance; });
    });
    return d;
  }
  const Geometry& m = a.is_mesh() ? a : b;
  const Geometry& s = a.is_mesh() ? b : a;
  const RigidTransform& X_m = a.is_mesh() ? X_a : X_b;
  const RigidTransform& X_s = a.is_mesh() ? X_b : X_a;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& t : m.mesh->mesh().triangles) {
    const Triangle tri{X_m * m.mesh->mesh().vertices[t[0]], X_m * m.mesh->mesh().vertices[t[1]],
                       X_m * m.mesh->mesh().vertices[t[2]]};
    VisitShape(s.shape, [&](const auto& solid) {
      best = std::min(best, GjkDistance(tri, RigidTransform(), solid, X_s).distance);
    });
  }
  return best;
}

// Every geometry pair of the scene posed at q, by (self, robot part, other part).
using PairKey = std::tuple<bool, int32_t, int32_t>;
std::map<PairKey, PosedPartPair> PosedPairs(const Scene& scene, std::span<const double> q) {
  SceneCache cache;
  NearbyPartsRequest all;
  all.horizon = kWorldExtent;
  const NearbyPartsResult r = testing::ValueOrFail(internal::Impl(scene).NearbyParts(q, all, SceneCacheAccess::Data(&cache)));
  std::map<PairKey, PosedPartPair> out;
  for (const NearbyPart& p : r.pairs) out[{p.pair.self, p.robot_part, p.other_part}] = p.Posed();
  return out;
}

PairKey Key(const TrackedPair& p) { return {p.distance.pair.self, p.robot_part, p.other_part}; }

// A 1 kHz-like trajectory: every joint moves at most `step` per frame along a smooth wave, and every
// `jump_every` frames (0: never) the robot jumps to a random configuration.
std::vector<std::vector<double>> Trajectory(const RobotModel& robot, std::mt19937_64& rng, int frames, double step,
                                            int jump_every) {
  const int dof = robot.num_positions();
  auto random_q = [&] {
    std::vector<double> q(dof);
    for (int j = 0; j < dof; ++j) {
      const double lo = std::max(robot.lower_limits()[j], -3.0), hi = std::min(robot.upper_limits()[j], 3.0);
      q[j] = std::uniform_real_distribution<double>(lo, hi)(rng);
    }
    return q;
  };
  std::vector<double> q = random_q(), phase(dof), rate(dof);
  for (int j = 0; j < dof; ++j) {
    phase[j] = std::uniform_real_distribution<double>(0, 6.3)(rng);
    rate[j] = std::uniform_real_distribution<double>(0.002, 0.02)(rng);
  }
  std::vector<std::vector<double>> out;
  for (int f = 0; f < frames; ++f) {
    if (jump_every > 0 && f > 0 && f % jump_every == 0) q = random_q();
    for (int j = 0; j < dof; ++j) {
      const double lo = robot.lower_limits()[j], hi = robot.upper_limits()[j];
      q[j] = std::clamp(q[j] + step * std::sin(phase[j] + rate[j] * f), std::max(lo, -1e3), std::min(hi, 1e3));
    }
    out.push_back(q);
  }
  return out;
}

TEST(Tracker, IntervalsBracketBruteForceAlongTrajectoriesAndAfterJumps) {
  int64_t checked = 0, vclip = 0, gjk = 0, walks = 0;
  for (uint64_t seed : {1u, 2u, 3u}) {
    for (double padding : {0.0, 0.01}) {
      auto scene = ArmScene(seed, padding);
      Tracker tracker(scene);
      std::mt19937_64 rng(seed + 10);
      TrackRequest request;
      request.horizon = 0.2;
      request.max_pairs = kMaxTrackPairs;
      for (const auto& q : Trajectory(scene->robot(), rng, testing::Cases(240), 1e-3, 60)) {
        const TrackResult r = testing::ValueOrFail(tracker.Update(q, request));
        vclip += r.vclip;
        gjk += r.gjk;
        walks += r.walks;
        const auto posed = PosedPairs(*scene, q);
        for (const TrackedPair& p : r.pairs) {
          const PosedPartPair& pp = posed.at(Key(p));
          const double d = BruteDistance(*pp.robot, pp.X_WR, *pp.other, pp.X_WO);
          const double clearance = std::max(0.0, d - pp.padding);
          ASSERT_LE(p.distance.lower, clearance + kTol) << p.distance.pair.Describe(*scene);
          ASSERT_GE(p.distance.upper, clearance - kTol) << p.distance.pair.Describe(*scene);
          // Exact: the interval is as narrow as rounding allows, and the witnesses realise it.
          ASSERT_LE(p.distance.upper - p.distance.lower, kTol * (1.0 + d));
          if (d > pp.padding) {
            EXPECT_NEAR((p.distance.p_W_robot - p.distance.p_W_other).norm() - pp.padding, p.distance.upper, 1e-8);
          }
          EXPECT_NEAR(p.normal_W.norm(), 1.0, 1e-12);
          ++checked;
        }
        // Completeness: every pair distance(q) finds within the horizon is reported, with its value.
        SceneDistanceRequest all;
        all.per_pair = true;
        SceneCache cache;
        const SceneDistanceResult exact = testing::ValueOrFail(scene->ComputeDistance(q, all, &cache));
        int within = 0;
        for (const PairDistance& e : exact.pairs) within += e.upper < request.horizon - kTol;
        int reported_within = 0;
        for (const TrackedPair& p : r.pairs) reported_within += p.distance.upper < request.horizon - kTol;
        EXPECT_EQ(reported_within, within);
      }
    }
  }
  EXPECT_GT(checked, 500);
  // Every path was taken: V-Clip, GJK, hierarchy walks.
  EXPECT_GT(vclip, 0);
  EXPECT_GT(gjk, 0);
  EXPECT_GT(walks, 0);
}

// The broad phase keeps a list of the pairs within the horizon plus a margin and measures only those
// while the robot's boxes stay near where the list saw them: along smooth motion and after jumps its
// pairs, bounds, order and truncation are those of a cache that has seen no other state.
TEST(Tracker, BroadPhaseListKeepsExactlyThePairsWithinTheHorizon) {
  int64_t frames = 0, reused = 0, pairs = 0, truncated = 0;
  for (uint64_t seed : {1u, 2u, 3u}) {
    auto scene = ArmScene(seed, seed == 2 ? 0.01 : 0.0);
    const internal::SceneImpl& impl = internal::Impl(*scene);
    std::mt19937_64 rng(seed + 20);
    for (const int32_t max_pairs : {1 << 16, 3}) {
      SceneCache kept;
      NearbyPartsRequest request;
      request.horizon = 0.15;
      request.max_pairs = max_pairs;
      for (const auto& q : Trajectory(scene->robot(), rng, testing::Cases(400), 2e-3, 100)) {
        const std::vector<Aabb> boxes_before = SceneCacheAccess::Data(&kept)->nearby_list.boxes;
        const NearbyPartsResult r = testing::ValueOrFail(impl.NearbyParts(q, request, SceneCacheAccess::Data(&kept)));
        const auto& list = SceneCacheAccess::Data(&kept)->nearby_list;
        reused += !boxes_before.empty() && list.boxes.size() == boxes_before.size() &&
                  std::equal(list.boxes.begin(), list.boxes.end(), boxes_before.begin(),
                             [](const Aabb& x, const Aabb& y) { return x.min == y.min && x.max == y.max; });
        // The reference: a fresh cache, and every pair of the scene with its bound.
        SceneCache fresh, every;
        const NearbyPartsResult f = testing::ValueOrFail(impl.NearbyParts(q, request, SceneCacheAccess::Data(&fresh)));
        NearbyPartsRequest all = request;
        all.horizon = kWorldExtent;
        all.max_pairs = 1 << 16;
        const NearbyPartsResult a = testing::ValueOrFail(impl.NearbyParts(q, all, SceneCacheAccess::Data(&every)));
        std::vector<PairKey> within;
        for (const NearbyPart& p : a.pairs) {
          if (p.box_clearance <= request.horizon) within.push_back({p.pair.self, p.robot_part, p.other_part});
        }
        ASSERT_EQ(r.truncated, static_cast<int32_t>(within.size()) > max_pairs);
        ASSERT_EQ(r.pairs.size(), std::min(within.size(), static_cast<size_t>(max_pairs)));
        ASSERT_EQ(f.truncated, r.truncated);
        ASSERT_EQ(f.pairs.size(), r.pairs.size());
        for (size_t i = 0; i < r.pairs.size(); ++i) {
          const PairKey key{r.pairs[i].pair.self, r.pairs[i].robot_part, r.pairs[i].other_part};
          ASSERT_EQ(key, within[i]) << "pair " << i;
          ASSERT_EQ(key, (PairKey{f.pairs[i].pair.self, f.pairs[i].robot_part, f.pairs[i].other_part}));
          ASSERT_EQ(r.pairs[i].box_clearance, f.pairs[i].box_clearance);
        }
        ++frames;
        pairs += static_cast<int64_t>(r.pairs.size());
        truncated += r.truncated;
      }
    }
  }
  EXPECT_GT(pairs, frames);       // the horizon keeps pairs
  EXPECT_GT(truncated, 0);        // and more than three of them at times
  EXPECT_GT(reused, frames / 2);  // most states are answered from a kept list
  EXPECT_LT(reused, frames);      // and lists are made again as the robot moves and jumps
}

TEST(Tracker, ReportsTheKNearestOverallAndPerLink) {
  auto scene = ArmScene(4);
  std::mt19937_64 rng(44);
  Tracker overall(scene), per_link(scene);
  TrackRequest k3;
  k3.horizon = 0.5;
  k3.max_pairs = 3;
  TrackRequest k1_link = k3;
  k1_link.max_pairs = 1;
  k1_link.per_link = true;
  for (const auto& q : Trajectory(scene->robot(), rng, testing::Cases(200), 1e-3, 25)) {
    SceneDistanceRequest all;
    all.per_pair = true;
    SceneCache cache;
    const SceneDistanceResult exact = testing::ValueOrFail(scene->ComputeDistance(q, all, &cache));
    std::vector<double> uppers;
    std::map<int32_t, double> link_best;  // per link: the nearest pair involving it
    for (const PairDistance& e : exact.pairs) {
      if (e.lower > k3.horizon) continue;
      uppers.push_back(e.upper);
      for (int32_t link : {e.pair.link, e.pair.self ? e.pair.other_link : e.pair.link}) {
        auto it = link_best.find(link);
        if (it == link_best.end() || e.upper < it->second) link_best[link] = e.upper;
      }
    }
    std::sort(uppers.begin(), uppers.end());
    const TrackResult r = testing::ValueOrFail(overall.Update(q, k3));
    ASSERT_EQ(r.pairs.size(), std::min<size_t>(3, uppers.size()));
    for (size_t i = 0; i < r.pairs.size(); ++i) EXPECT_NEAR(r.pairs[i].distance.upper, uppers[i], kTol);
    const TrackResult l = testing::ValueOrFail(per_link.Update(q, k1_link));
    std::map<int32_t, double> got;
    for (const TrackedPair& p : l.pairs) {
      for (int32_t link : {p.distance.pair.link, p.distance.pair.self ? p.distance.pair.other_link : p.distance.pair.link}) {
        auto it = got.find(link);
        if (it == got.end() || p.distance.upper < it->second) got[link] = p.distance.upper;
      }
    }
    ASSERT_EQ(got.size(), link_best.size());
    for (const auto& [link, best] : link_best) EXPECT_NEAR(got.at(link), best, kTol) << link;
  }
}

// Update into a caller's result gives the frames the returning Update gives, and makes each in the
// storage of a frame given back earlier: a control loop that keeps one result stops allocating for it
// (counted: each frame into the kept result allocates at least one vector per reported pair, and one
// for the list, less than the returning Update, whose tracker has the same history).
TEST(Tracker, UpdateIntoAResultGivesTheSameFramesInReusedStorage) {
  auto scene = ArmScene(9);
  std::mt19937_64 rng(90);
  Tracker returning(scene), into(scene);
  TrackRequest request;
  request.horizon = 2.0;  // every pair: the same number reported at every frame
  request.max_pairs = 2;
  request.per_link = true;
  TrackResult frame;
  int64_t compared = 0, frames = 0;
  for (const auto& q : Trajectory(scene->robot(), rng, testing::Cases(120), 1e-3, 25)) {
    const int64_t a0 = g_allocations.load();
    const Result<TrackResult> returned = returning.Update(q, request);
    const int64_t a1 = g_allocations.load();
    ASSERT_TRUE(into.Update(q, request, &frame).ok());
    const int64_t a2 = g_allocations.load();
    const TrackResult& r = testing::ValueOrFail(returned);
    ASSERT_EQ(frame.pairs.size(), r.pairs.size());
    ASSERT_FALSE(frame.pairs.empty());
    EXPECT_EQ(frame.candidates, r.candidates);
    EXPECT_EQ(frame.decided, r.decided);
    for (size_t i = 0; i < r.pairs.size(); ++i) {
      const TrackedPair& a = frame.pairs[i];
      const TrackedPair& b = r.pairs[i];
      EXPECT_EQ(a.robot_part, b.robot_part);
      EXPECT_EQ(a.other_part, b.other_part);
      EXPECT_EQ(a.distance.lower, b.distance.lower);
      EXPECT_EQ(a.distance.upper, b.distance.upper);
      EXPECT_EQ(a.distance.p_W_robot, b.distance.p_W_robot);
      EXPECT_EQ(a.normal_W, b.normal_W);
      EXPECT_TRUE(a.feature_robot == b.feature_robot && a.feature_other == b.feature_other);
      EXPECT_EQ(a.same_features, b.same_features);
      EXPECT_EQ(a.gradient, b.gradient);
      ++compared;
    }
    // From the third frame on the kept result's storage holds a frame as large (two results take turns).
    if (++frames >= 3) {
      EXPECT_LE((a2 - a1) + static_cast<int64_t>(r.pairs.size()) + 1, a1 - a0) << "frame " << frames;
    }
  }
  EXPECT_GT(compared, 100);
  // A refused frame leaves the caller's result as it was.
  const TrackResult before = frame;
  TrackRequest bad = request;
  bad.horizon = -1.0;
  const std::vector<double> q = {0.3, 0.2, -0.4, 0.05};
  EXPECT_FALSE(into.Update(q, bad, &frame).ok());
  EXPECT_FALSE(into.Update(std::vector<double>{0.3}, request, &frame).ok());
  ASSERT_EQ(frame.pairs.size(), before.pairs.size());
  for (size_t i = 0; i < frame.pairs.size(); ++i) {
    EXPECT_EQ(frame.pairs[i].distance.upper, before.pairs[i].distance.upper);
  }
}

TEST(Tracker, GradientMatchesCentralDifferencesOfTheExactDistance) {
  int64_t compared = 0, polyhedral = 0;
  for (uint64_t seed : {5u, 6u, 7u}) {
    auto scene = ArmScene(seed);
    std::mt19937_64 rng(seed);
    TrackRequest request;
    request.horizon = 0.3;
    request.max_pairs = kMaxTrackPairs;
    for (const auto& q : Trajectory(scene->robot(), rng, testing::Cases(40), 0.05, 1)) {
      Tracker tracker(scene);
      const TrackResult r = testing::ValueOrFail(tracker.Update(q, request));
      for (const TrackedPair& p : r.pairs) {
        if (p.distance.upper < 1e-3) continue;  // near contact the closest features may switch within h
        ASSERT_EQ(p.gradient.size(), q.size());
        for (size_t j = 0; j < q.size(); ++j) {
          const double h = 1e-6;
          std::vector<double> qp = q, qm = q;
          qp[j] += h;
          qm[j] -= h;
          // Central differences of the exact distance, where the closest features stay the same.
          Tracker tp(scene), tm(scene);
          const TrackResult rp = testing::ValueOrFail(tp.Update(qp, request));
          const TrackResult rm = testing::ValueOrFail(tm.Update(qm, request));
          auto find = [&](const TrackResult& x) -> const TrackedPair* {
            for (const TrackedPair& y : x.pairs)
              if (Key(y) == Key(p)) return &y;
            return nullptr;
          };
          const TrackedPair* a = find(rp);
          const TrackedPair* b = find(rm);
          if (a == nullptr || b == nullptr) continue;
          if (!(a->feature_robot == p.feature_robot && a->feature_other == p.feature_other &&
                b->feature_robot == p.feature_robot && b->feature_other == p.feature_other)) {
            continue;
          }
          const auto pp = PosedPairs(*scene, qp).at(Key(p));
          const auto pm = PosedPairs(*scene, qm).at(Key(p));
          const double dp = BruteDistance(*pp.robot, pp.X_WR, *pp.other, pp.X_WO);
          const double dm = BruteDistance(*pm.robot, pm.X_WR, *pm.other, pm.X_WO);
          // Curved primitives (no features) are as precise as GJK converges on them (a relative gap of
          // about 1e-9, so witness points within microns): there the gradient holds to 1e-4.
          const bool curved = p.feature_robot.type == TrackFeatureType::kNone ||
                              p.feature_other.type == TrackFeatureType::kNone;
          EXPECT_NEAR(p.gradient[j], (dp - dm) / (2 * h), curved ? 1e-4 : 1e-6)
              << p.distance.pair.Describe(*scene) << " joint " << j;
          polyhedral += !curved;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 200);
  EXPECT_GT(polyhedral, 100);
}

// The V-Clip polyhedron a test builds on its own for a convex geometry (as the tracker does: a mesh's
// hull, or a box's corners).
std::shared_ptr<const VClipPolyhedron> Polyhedron(const Geometry& g) {
  std::shared_ptr<const ConvexPolytope> hull = g.hull;
  if (!g.is_mesh()) {
    if (const auto* b = std::get_if<Box>(&g.shape)) {
      std::vector<Vec3> c;
      for (int i = 0; i < 8; ++i) {
        c.emplace_back((i & 1 ? 1 : -1) * b->half_extents.x(), (i & 2 ? 1 : -1) * b->half_extents.y(),
                       (i & 4 ? 1 : -1) * b->half_extents.z());
      }
      hull = testing::ValueOrFail(ConvexPolytope::Build(c, "box"));
    } else if (const auto* p = std::get_if<std::shared_ptr<const ConvexPolytope>>(&g.shape)) {
      hull = *p;
    } else {
      return nullptr;
    }
  }
  return testing::ValueOrFail(VClipPolyhedron::Build(*hull));
}

TEST(Tracker, VClipFeaturesAreTheClosestFeaturesAndPersistAlongSmoothMotion) {
  int64_t frames = 0, same = 0, compared = 0;
  for (uint64_t seed : {8u, 9u, 10u, 11u}) {
    auto scene = ArmScene(seed);
    Tracker tracker(scene);
    std::mt19937_64 rng(seed);
    TrackRequest request;
    request.horizon = 0.3;
    request.max_pairs = kMaxTrackPairs;
    std::map<PairKey, std::pair<TrackFeature, TrackFeature>> last_cold;
    for (const auto& q : Trajectory(scene->robot(), rng, testing::Cases(300), 1e-3, 0)) {
      const TrackResult r = testing::ValueOrFail(tracker.Update(q, request));
      const auto posed = PosedPairs(*scene, q);
      std::map<PairKey, std::pair<TrackFeature, TrackFeature>> cold_now;
      for (const TrackedPair& p : r.pairs) {
        if (p.method != TrackMethod::kVClip || p.distance.upper <= 1e-6) continue;
        const PosedPartPair& pp = posed.at(Key(p));
        // An independent cold search from the centroids finds the closest features.
        const auto a = Polyhedron(*pp.robot);
        const auto b = Polyhedron(*pp.other);
        const VClipResult cold = VClipDistance(*a, pp.X_WR, *b, pp.X_WO);
        ASSERT_TRUE(cold.cold_start);
        const std::pair<TrackFeature, TrackFeature> features{
            {static_cast<TrackFeatureType>(cold.feature_a.type), cold.feature_a.index},
            {static_cast<TrackFeatureType>(cold.feature_b.type), cold.feature_b.index}};
        EXPECT_EQ(p.feature_robot, features.first) << p.distance.pair.Describe(*scene);
        EXPECT_EQ(p.feature_other, features.second) << p.distance.pair.Describe(*scene);
        ++compared;
        // Where the cold search finds the same features as in the last frame, the tracker says so.
        auto it = last_cold.find(Key(p));
        if (it != last_cold.end() && it->second == features) {
          EXPECT_TRUE(p.same_features);
          ++same;
        }
        cold_now[Key(p)] = features;
        ++frames;
      }
      last_cold = cold_now;
    }
  }
  EXPECT_GT(compared, 100);
  // Along 1e-3 rad steps the closest features mostly stay the same.
  EXPECT_GT(same, frames / 2);
}

TEST(Tracker, OverlappingConvexPairsSayTouchingWithANormalAndAGradient) {
  const std::string urdf = R"(<robot name="slider"><link name="base"/>
    <link name="tool"><collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link>
    <joint name="x" type="prismatic"><parent link="base"/><child link="tool"/><axis xyz="1 0 0"/>
      <limit lower="-5" upper="5" effort="1" velocity="1"/></joint></robot>)";
  SceneDescription d;
  d.robot = testing::ValueOrFail(RobotModel::FromUrdfString(urdf));
  d.objects.push_back(Object("wall", Geometry::Primitive(Box{Vec3(0.1, 1.0, 1.0)}), RigidTransform(Mat3::Identity(), Vec3(0.5, 0, 0))));
  auto scene = testing::ValueOrFail(Scene::Build(std::move(d)));
  for (TrackConvexMethod method : {TrackConvexMethod::kVClip, TrackConvexMethod::kGjk}) {
    Tracker tracker(scene);
    TrackRequest request;
    request.convex = method;
    // Apart (0.2 m), touching, then 0.05 m deep: the wall's face is at x = 0.4, the tool's at x + 0.1.
    for (double x : {0.1, 0.3, 0.35}) {
      const std::vector<double> q = {x};
      const TrackResult r = testing::ValueOrFail(tracker.Update(q, request));
      ASSERT_EQ(r.pairs.size(), 1u) << x;
      const TrackedPair& p = r.pairs[0];
      const double depth = x + 0.1 - 0.4;
      EXPECT_NEAR(p.signed_distance, -depth, 1e-9) << x;
      EXPECT_NEAR(p.distance.upper, std::max(0.0, -depth), 1e-9);
      EXPECT_LE(p.distance.lower, std::max(0.0, -depth) + 1e-12);
      EXPECT_NEAR(p.normal_W.x(), -1.0, 1e-9) << x;  // moving the tool towards -x separates it
      ASSERT_EQ(p.gradient.size(), 1u);
      EXPECT_NEAR(p.gradient[0], -1.0, 1e-9) << x;
    }
  }
}

TEST(Tracker, ConvexMeshesOffTheirHullsKeepTheUpperBoundOnTheSurface) {
  // A box whose +x face has a vertex at its centre pushed 0.3 mm inward: accepted as its hull's surface
  // at the URDF loader's 1 mm tolerance, yet 0.3 mm farther than its hull from a sphere ahead of that
  // face. A tracker that took the hulls' distance for the mesh's would claim an upper bound below the
  // truth.
  TriangleMesh m;
  AppendMesh(&m, MakeBoxMesh(Vec3(0.1, 0.1, 0.1)));
  // Replace the +x face (vertices 1, 3, 5, 7: x = +0.05) by four triangles around a dented centre.
  std::erase_if(m.triangles, [&](const std::array<int32_t, 3>& t) {
    return m.vertices[t[0]].x() > 0 && m.vertices[t[1]].x() > 0 && m.vertices[t[2]].x() > 0;
  });
  m.vertices.push_back(Vec3(0.05 - 3e-4, 0, 0));
  const int32_t c = static_cast<int32_t>(m.vertices.size()) - 1;
  m.triangles.push_back({1, 3, c});
  m.triangles.push_back({3, 7, c});
  m.triangles.push_back({7, 5, c});
  m.triangles.push_back({5, 1, c});
  Geometry dented;
  dented.hull = testing::ValueOrFail(ConvexPolytope::Build(m));
  dented.hull_is_surface = IsHullSurface(m, *dented.hull, 1e-3);
  ASSERT_TRUE(dented.hull_is_surface);
  dented.mesh = testing::ValueOrFail(MeshModel::Build(m));
  const std::string urdf = R"(<robot name="slider"><link name="base"/><link name="tool"/>
    <joint name="x" type="prismatic"><parent link="base"/><child link="tool"/><axis xyz="1 0 0"/>
      <limit lower="-5" upper="5" effort="1" velocity="1"/></joint></robot>)";
  SceneDescription d;
  d.robot = testing::ValueOrFail(RobotModel::FromUrdfString(urdf));
  d.attached.push_back(Attach("dented", "tool", dented, RigidTransform()));
  d.objects.push_back(Object("ball", Geometry::Primitive(Sphere{Vec3::Zero(), 0.01}),
                             RigidTransform(Mat3::Identity(), Vec3(0.2, 0.0, 0.0))));
  d.objects.push_back(Object("block", Geometry::Primitive(Box{Vec3(0.01, 0.01, 0.01)}),
                             RigidTransform(testing::RandomRotation(*std::make_unique<std::mt19937_64>(3)),
                                            Vec3(0.2, 0.002, -0.001))));
  auto scene = testing::ValueOrFail(Scene::Build(std::move(d)));
  for (TrackConvexMethod method : {TrackConvexMethod::kVClip, TrackConvexMethod::kGjk}) {
    Tracker tracker(scene);
    TrackRequest request;
    request.convex = method;
    request.max_pairs = 4;
    int checked = 0;
    for (double x = 0.0; x < 0.12; x += 1e-3) {
      const std::vector<double> q = {x};
      const TrackResult r = testing::ValueOrFail(tracker.Update(q, request));
      const auto posed = PosedPairs(*scene, q);
      for (const TrackedPair& p : r.pairs) {
        const PosedPartPair& pp = posed.at(Key(p));
        const double truth = BruteDistance(*pp.robot, pp.X_WR, *pp.other, pp.X_WO);
        ASSERT_GE(p.distance.upper, truth - kTol) << x;
        ASSERT_LE(p.distance.lower, truth + kTol) << x;
        EXPECT_NEAR((p.distance.p_W_robot - p.distance.p_W_other).norm(), p.distance.upper, 1e-9);
        ++checked;
      }
    }
    EXPECT_GT(checked, 100);
  }
}

TEST(Tracker, SharesTrackingGeometryOnlyWithItsOwnScene) {
  // Two scenes with the same numbers of parts but other shapes: polyhedra built for the first must not
  // answer for the second.
  auto first = ArmScene(21);
  auto second = ArmScene(22);
  ASSERT_EQ(internal::Impl(*first).num_world_parts(), internal::Impl(*second).num_world_parts());
  auto geometry = testing::ValueOrFail(TrackingGeometry::Build(*first));
  EXPECT_TRUE(geometry->Fits(*first));
  EXPECT_FALSE(geometry->Fits(*second));
  Tracker shared(first, geometry), other(second, geometry);
  std::mt19937_64 rng(23);
  TrackRequest request;
  request.horizon = 0.3;
  request.max_pairs = kMaxTrackPairs;
  int checked = 0;
  for (const auto& q : Trajectory(second->robot(), rng, testing::Cases(60), 1e-3, 20)) {
    ASSERT_TRUE(shared.Update(q, request).ok());
    const TrackResult r = testing::ValueOrFail(other.Update(q, request));
    const auto posed = PosedPairs(*second, q);
    for (const TrackedPair& p : r.pairs) {
      const PosedPartPair& pp = posed.at(Key(p));
      const double d = std::max(0.0, BruteDistance(*pp.robot, pp.X_WR, *pp.other, pp.X_WO) - pp.padding);
      ASSERT_LE(p.distance.lower, d + kTol);
      ASSERT_GE(p.distance.upper, d - kTol);
      ++checked;
    }
  }
  EXPECT_GT(checked, 20);
}

TEST(Tracker, RefusesBadInputByNameAndKeepsItsState) {
  auto scene = ArmScene(12);
  Tracker tracker(scene);
  const std::vector<double> q = {0.3, 0.2, -0.4, 0.05};
  TrackRequest ok;
  ok.horizon = 1.0;
  ASSERT_TRUE(tracker.Update(q, ok).ok());
  const size_t kept = tracker.tracked_pairs();
  ASSERT_GT(kept, 0u);
  auto expect_error = [&](std::vector<double> qq, TrackRequest r, const std::string& names) {
    const Result<TrackResult> out = tracker.Update(qq, r);
    ASSERT_FALSE(out.ok()) << names;
    EXPECT_EQ(out.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(out.error().message.find(names), std::string::npos) << out.error().message;
    EXPECT_EQ(tracker.tracked_pairs(), kept);
  };
  expect_error({0.3, 0.2}, ok, "4");
  expect_error({0.3, std::nan(""), -0.4, 0.05}, ok, "nan");
  TrackRequest bad = ok;
  bad.horizon = -1.0;
  expect_error(q, bad, "horizon");
  bad.horizon = std::nan("");
  expect_error(q, bad, "horizon");
  bad.horizon = 1e9;
  expect_error(q, bad, "horizon");
  bad = ok;
  bad.max_pairs = 0;
  expect_error(q, bad, "max_pairs");
  bad.max_pairs = kMaxTrackPairs + 1;
  expect_error(q, bad, "max_pairs");
  bad = ok;
  bad.rel_err = -0.1;
  expect_error(q, bad, "rel_err");
}

TEST(Tracker, RealRobotsAgreeWithTheExactPerPairDistance) {
  const auto robots = Robots();
  if (robots.empty()) GTEST_SKIP() << "no robots: ../shared/data and dart-doc are both absent";
  for (const RobotCase& rc : robots) {
    std::mt19937_64 rng(17);
    const SceneDescription d = RandomWorldScene(rc, rng, 10);
    auto scene = testing::ValueOrFail(Scene::Build(d));
    Tracker tracker(scene);
    TrackRequest request;
    request.horizon = 0.3;
    request.max_pairs = 8;
    int64_t pairs = 0;
    for (const auto& q : Trajectory(scene->robot(), rng, testing::Cases(150), 1e-3, 50)) {
      const TrackResult r = testing::ValueOrFail(tracker.Update(q, request));
      SceneDistanceRequest exact_request;
      SceneCache cache;
      const SceneDistanceResult exact = testing::ValueOrFail(scene->ComputeDistance(q, exact_request, &cache));
      if (exact.upper_bound < request.horizon) {
        ASSERT_FALSE(r.pairs.empty()) << rc.name;
        EXPECT_NEAR(r.pairs[0].distance.upper, exact.upper_bound, 1e-9 * (1 + exact.upper_bound)) << rc.name;
      }
      const auto posed = PosedPairs(*scene, q);
      for (const TrackedPair& p : r.pairs) {
        const PosedPartPair& pp = posed.at(Key(p));
        DistanceRequest exact_pair;
        const DistanceResult e =
            testing::ValueOrFail(GeometryDistance(*pp.robot, pp.X_WR, *pp.other, pp.X_WO, exact_pair));
        EXPECT_LE(p.distance.lower, std::max(0.0, e.upper_bound - pp.padding) + kTol) << rc.name;
        EXPECT_GE(p.distance.upper, std::max(0.0, e.lower_bound - pp.padding) - kTol) << rc.name;
        ++pairs;
      }
    }
    EXPECT_GT(pairs, 0) << rc.name;
  }
}

}  // namespace
}  // namespace proximity::core
