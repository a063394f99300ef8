#pragma once
/// @file
/// What the scene's source files share and nobody outside them sees: the convex stand-ins of a
/// geometry pair, request checks, step counts and the constants of the motion checks.

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <variant>

#include "proximity/core/base/result.h"
#include "bvh/point_cloud.h"
#include "bvh/shape_query.h"
#include "narrowphase/gjk.h"
#include "proximity/core/scene/scene.h"

namespace proximity::core {

/// World bounds of a box (OBB in frame G posed at X_WG).
Aabb WorldBounds(const Obb& box_G, const RigidTransform& X_WG);

/// What GeometryDistanceLowerBound proves, and the work it took.
struct ClearanceBound {
  double lower_bound = 0.0;  ///< Certified lower bound on the padded clearance (m), >= 0.
  QueryStats stats;
};

/// Certified lower bound on the clearance between two posed geometries inflated by `padding` (>= 0) in
/// total: distance minus padding, 0 when they touch; the query may stop once it proves the clearance
/// is at least `enough`. Without padding the walk keeps a 100% relative budget (the bound is at least
/// half the distance); with padding it keeps an absolute one of enough / 4 (a relative budget on the
/// raw distance says nothing about the padded clearance, so a pair just outside its padding would never
/// be proven clear).
/// When a mesh carries its hull (Geometry::hull) the hulls are tried first, with `hull_cache` (one per
/// pair, or null; caller-owned warm-start state) as GJK's warm start.
[[nodiscard]] Result<ClearanceBound> GeometryDistanceLowerBound(const Geometry& a, const RigidTransform& X_WA,
                                                                const Geometry& b, const RigidTransform& X_WB,
                                                                double enough, double padding,
                                                                GjkCache* hull_cache = nullptr);


}  // namespace proximity::core

namespace proximity::core::internal {

inline bool Overlap(const Aabb& a, const Aabb& b) {
  return (a.min.array() <= b.max.array()).all() && (b.min.array() <= a.max.array()).all();
}

// Whether two boxes posed in the world overlap (the 15-axis test): the first test of every hierarchy
// walk, done here without setting a walk up, so that pairs near each other but apart cost one test.
inline bool WorldBoxesOverlap(const Obb& a, const Obb& b) {
  const Mat3 R_ab = a.R_MB.transpose() * b.R_MB;
  const Vec3 T = a.R_MB.transpose() * (b.center - a.center);
  return ObbsOverlap(a.half_extents, b.half_extents, BoxPairFrame{R_ab, T});
}

inline Obb GeometryBox(const Geometry& g) {
  if (g.is_cloud()) return g.cloud->box();
  return g.is_mesh() ? g.mesh->obb(0) : ShapeBoundingObb(g.shape);
}

// Calls f(ca, X_a, cb, X_b) with the convex stand-ins of a and b when one is a mesh with a hull and the
// other a primitive or a mesh with a hull (the mesh's side always first), and returns true; false when
// there is no such pair (two primitives are tested exactly anyway).
template <class F>
bool WithHulls(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b, F&& f) {
  if (a.is_cloud() || b.is_cloud()) return false;  // a cloud has no convex stand-in
  const bool hull_a = a.is_mesh() && a.hull != nullptr;
  const bool hull_b = b.is_mesh() && b.hull != nullptr;
  if (hull_a && hull_b) {
    f(*a.hull, X_a, *b.hull, X_b);
    return true;
  }
  // Otherwise one side must be a mesh with a hull and the other a primitive.
  const bool mesh_and_primitive = (hull_a && !b.is_mesh()) || (hull_b && !a.is_mesh());
  if (!mesh_and_primitive) return false;
  const ConvexPolytope& hull = hull_a ? *a.hull : *b.hull;
  const RigidTransform& X_hull = hull_a ? X_a : X_b;
  const Geometry& other = hull_a ? b : a;
  const RigidTransform& X_other = hull_a ? X_b : X_a;
  std::visit(
      [&](const auto& shape) {
        if constexpr (std::is_same_v<std::decay_t<decltype(shape)>, std::shared_ptr<const ConvexPolytope>>) {
          f(hull, X_hull, *shape, X_other);
        } else {
          f(hull, X_hull, shape, X_other);
        }
      },
      other.shape);
  return true;
}

// Whether `cache` holds a previous answer of its pair (a simplex or a separating axis) to start from.
inline bool WarmStart(const GjkCache* cache) {
  return cache != nullptr && (cache->simplex.size > 0 || cache->v_A.squaredNorm() > 0.0);
}

// Certified lower bound (m) on the distance between the convex stand-ins of a and b (WithHulls), GJK
// stopping once it reaches `target`; -1 when there are none. (distance.cc)
double HullLowerBound(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b,
                      double target, QueryStats* stats, GjkCache* cache);

// The most distance (m) a self-clearance map gives up per cell (its grid is made fine enough that the
// pair moves at most this much relative to each other within a cell), the least, and the map's size
// limit. Between them each map takes a loss from its own pair: a fraction of the clearance the pair
// typically keeps (kSelfClearanceLossShare of a low percentile over sampled configurations), so that
// links a few millimetres apart across a wrist get cells fine enough to decide them, and pairs that
// keep centimetres apart keep coarse, quickly filled grids.
constexpr double kSelfClearanceLoss = 0.015;
constexpr double kSelfClearanceMinLoss = 0.0005;
constexpr double kSelfClearanceLossShare = 0.75;
constexpr int64_t kSelfClearanceMaxCells = int64_t{1} << 19;
// The most box tests a cell's swept walk (SweptDistanceLowerBound) makes before it gives the cell up to
// the walks of the states in it: the fill's cost per cell stays bounded whatever the meshes.
constexpr int64_t kSweptCellMaxTests = 4096;

// A pair holding a point cloud, its other side first: `other` (a mesh or a solid) and `cloud`, and
// whether the cloud was the pair's first side (answers then swap back). Two clouds: `other` is a cloud.
struct CloudPair {
  const Geometry& other;
  const RigidTransform& X_other;
  const Geometry& cloud;
  const RigidTransform& X_cloud;
  bool swapped;
};
inline CloudPair SplitCloudPair(const Geometry& a, const RigidTransform& X_a, const Geometry& b,
                                const RigidTransform& X_b) {
  if (a.is_cloud()) return {b, X_b, a, X_a, true};
  return {a, X_a, b, X_b, false};
}

// Collision of a point cloud with a mesh or a solid (either side; the contacts name the mesh triangle
// and the cloud's point on their sides), balls grown by `padding`. (state_check.cc)
Result<CollisionResult> CollideWithCloud(const Geometry& a, const RigidTransform& X_a, const Geometry& b,
                                         const RigidTransform& X_b, double padding, const CollisionRequest& request);

// A clearance as CheckState and MotionRequest take it: finite, >= 0 and within the world's extent.
// (state_check.cc)
Status CheckClearance(double clearance);

// The number of steps a sampled check of a segment of `length` takes at `resolution`: an error naming
// `field` unless the resolution is finite and > 0 and the steps stay within kMaxMotionSteps.
// (motion_check.cc)
Result<int64_t> MotionSteps(double length, double resolution, const char* field);

// robot.MotionEnd(q0, q1) written into *storage, which the returned span views. (motion_check.cc)
std::span<const double> ShortWayEnd(const RobotModel& robot, std::span<const double> q0, std::span<const double> q1,
                                    std::vector<double>* storage);

// The Euclidean length of the joint-space segment q0 -> q1. (motion_check.cc)
double SegmentLength(std::span<const double> q0, std::span<const double> q1);

// How often the motion checks ask a request's `stop`: every this many states (a power of two).
constexpr int64_t kStopPollStates = 8;

}  // namespace proximity::core::internal
