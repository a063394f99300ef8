/// @file
/// CLEAR(q): posing the robot's parts, the broad phase, the exact pair tests behind hull and box
/// early-outs, and the lazily filled self-clearance maps.

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "bvh/mesh_query.h"
#include "bvh/query_internal.h"
#include "bvh/solid_interior.h"
#include "scene/self_clearance.h"
#include "scene/scene_internal.h"
#include "scene/scene_impl.h"
#include "base/numerics.h"

namespace proximity::core {

using namespace internal;  // scene_internal.h

Aabb WorldBounds(const Obb& box_G, const RigidTransform& X_WG) {
  const Mat3 R = X_WG.R * box_G.R_MB;
  const Vec3 c = X_WG * box_G.center;
  const Vec3 half = R.cwiseAbs() * box_G.half_extents;
  Aabb out;
  out.min = c - half;
  out.max = c + half;
  return out;
}

Result<CollisionResult> CollideGeometry(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                        const RigidTransform& X_WB, const CollisionRequest& request) {
  if (a.is_cloud() || b.is_cloud()) return internal::CollideWithCloud(a, X_WA, b, X_WB, 0.0, request);
  if (a.is_mesh() && b.is_mesh()) return Collide(*a.mesh, X_WA, *b.mesh, X_WB, request);
  if (a.is_mesh()) return CollideMeshShape(*a.mesh, X_WA, b.shape, X_WB, request);
  if (b.is_mesh()) return CollideMeshShape(*b.mesh, X_WB, a.shape, X_WA, request);
  return CollideShapes(a.shape, X_WA, b.shape, X_WB, request);
}

namespace internal {

Result<CollisionResult> CollideWithCloud(const Geometry& a, const RigidTransform& X_a, const Geometry& b,
                                         const RigidTransform& X_b, double padding, const CollisionRequest& request) {
  const CloudPair p = SplitCloudPair(a, X_a, b, X_b);
  const bool swap = p.swapped;
  const Geometry &g = p.other, &c = p.cloud;
  const RigidTransform &X_g = p.X_other, &X_c = p.X_cloud;
  if (g.is_cloud()) return InvalidArgument("two point clouds are never tested against each other");
  const CloudCollision r = g.is_mesh() ? CollideMeshCloud(*g.mesh, X_g, *c.cloud, X_c, padding, request,
                                                          g.distance_map.get())
                                       : CollideShapeCloud(g.shape, X_g, *c.cloud, X_c, padding, request);
  CollisionResult out;
  out.colliding = r.colliding;
  out.truncated = r.truncated;
  out.stats = r.stats;
  for (const CloudContact& k : r.contacts) {
    out.contacts.push_back(swap ? TrianglePair{k.point, k.triangle} : TrianglePair{k.triangle, k.point});
  }
  return out;
}

// A clearance as CheckState and MotionRequest take it: finite, >= 0 and within the world's extent.
Status CheckClearance(double clearance) {
  if (std::isfinite(clearance) && clearance >= 0.0 && clearance <= kWorldExtent) return {};
  return InvalidArgument("clearance must be finite, >= 0 and <= " + FormatNumber(kWorldExtent) + " m, got " +
                         FormatNumber(clearance));
}

}  // namespace internal

namespace {

// Whether the convex stand-ins of a and b (WithHulls) provably keep more than `padding` apart, which
// proves the geometries do. ISA-GJK stops at the first separating axis; with padding, GJK stops once
// its certified lower bound passes the padding.
bool HullsApart(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b,
                double padding, QueryStats* stats, GjkCache* cache) {
  bool apart = false;
  const bool warm = WarmStart(cache);
  int32_t iterations = 0;
  const bool tested = WithHulls(a, X_a, b, X_b, [&](const auto& ca, const RigidTransform& X_ca, const auto& cb,
                                                    const RigidTransform& X_cb) {
    if (padding <= 0.0) {
      const GjkIntersectResult r = GjkIntersect(ca, X_ca, cb, X_cb, cache);
      apart = !r.intersecting;
      iterations = r.iterations;
    } else {
      GjkOptions options;
      options.lower_bound_target = std::nextafter(padding, std::numeric_limits<double>::infinity());
      const GjkResult r = GjkDistance(ca, X_ca, cb, X_cb, cache, options);
      apart = r.lower_bound > padding;
      iterations = r.iterations;
    }
  });
  if (tested && stats != nullptr) {
    ++stats->bv_tests;
    CountConvex(stats, warm, iterations);
  }
  return apart;
}

// Sealed convex meshes (Geometry::hull_surface_gap) meet other geometry where their hulls do, nearly
// always: the proofs below decide most such pairs from the simplex ISA-GJK leaves when it finds the
// hulls meeting (a tetrahedron holding the origin of their difference, or the touching simplex of a
// sphere or capsule), without walking triangles. Each keeps a margin above rounding in
// every comparison; false proves nothing (the walk decides).

// The point of A's stand-in that the simplex's weights give (A's frame): with a tetrahedron holding
// the origin, a point of both stand-ins; otherwise A's point nearest B's core.
bool SimplexPointA(const GjkSimplex& s, Vec3* p_A) {
  if (s.size < 1) return false;
  *p_A = Vec3::Zero();
  double weight = 0.0;
  for (int32_t i = 0; i < s.size; ++i) {
    if (!(s.weights[i] >= 0.0)) return false;
    *p_A += s.weights[i] * s.vertices[i].p_A;
    weight += s.weights[i];
  }
  return std::abs(weight - 1.0) < 1e-9;
}

// How deep x (a solid primitive's frame) lies inside it: a lower bound that is concave in x like a
// polytope's (ConvexPolytope::Depth); -infinity for a cone. And a point deep inside it.
double Depth(const Shape& shape, const Vec3& x) {
  return VisitShape(shape, [&](const auto& solid) {
    using S = std::decay_t<decltype(solid)>;
    if constexpr (std::is_same_v<S, Box>) {
      return (solid.half_extents - x.cwiseAbs()).minCoeff();
    } else if constexpr (std::is_same_v<S, Sphere>) {
      return solid.radius - (x - solid.center).norm();
    } else if constexpr (std::is_same_v<S, Capsule>) {
      const Vec3 axis(0.0, 0.0, std::clamp(x.z(), -solid.half_length, solid.half_length));
      return solid.radius - (x - axis).norm();
    } else if constexpr (std::is_same_v<S, Cylinder>) {
      return std::min(solid.radius - x.head<2>().norm(), solid.half_length - std::abs(x.z()));
    } else if constexpr (std::is_same_v<S, ConvexPolytope>) {
      return solid.Depth(x);
    } else {
      return -std::numeric_limits<double>::infinity();
    }
  });
}
Vec3 InnerPoint(const Shape& shape) {
  return VisitShape(shape, [&](const auto& solid) -> Vec3 {
    using S = std::decay_t<decltype(solid)>;
    if constexpr (std::is_same_v<S, Sphere>) {
      return solid.center;
    } else if constexpr (std::is_same_v<S, ConvexPolytope>) {
      Vec3 mean = Vec3::Zero();
      for (const Vec3& v : solid.vertices()) mean += v;
      return mean / static_cast<double>(solid.num_vertices());
    } else {
      return Vec3::Zero();
    }
  });
}

// A point (A's frame) inside both A and B deeper than each needs: depth_a and depth_b give each side's
// depth (concave), minus its need. Tries p, then p moved toward each inner point (inner_a, inner_b) as
// far as the depths' bounds along the way say is best: concave depths lie above the chord between
// their values at the ends, so the chords' crossing is where the smaller of the two bounds peaks. Each
// candidate is then tested itself.
template <class DepthA, class DepthB>
bool CommonInside(const Vec3& p, const Vec3& inner_a, const Vec3& inner_b, DepthA&& depth_a, DepthB&& depth_b) {
  const double a0 = depth_a(p), b0 = depth_b(p);
  if (a0 > 0.0 && b0 > 0.0) return true;
  for (const Vec3& inner : {inner_b, inner_a}) {
    const double a1 = depth_a(inner), b1 = depth_b(inner);
    // min((1 - t) a0 + t a1, (1 - t) b0 + t b1) over t in [0, 1].
    const double slope = (a1 - a0) - (b1 - b0);
    double t = 1.0;
    if (slope != 0.0) t = std::clamp((b0 - a0) / slope, 0.0, 1.0);
    if (std::min((1 - t) * a0 + t * a1, (1 - t) * b0 + t * b1) <= 0.0) continue;
    const Vec3 q = p + t * (inner - p);
    if (depth_a(q) > 0.0 && depth_b(q) > 0.0) return true;
  }
  return false;
}

// Whether, for one of a few directions d (A's frame: `first`, then both ways along each of `axes`'
// columns), the support of B reaches beyond A's by more than margin |d|: then B's extreme point that way
// lies outside A. h_A and h_B give each side's support value along d.
template <class HA, class HB>
bool ReachesBeyond(const Vec3& first, const Mat3& axes, double margin, HA&& h_A, HB&& h_B) {
  for (int k = 0; k < 7; ++k) {
    const Vec3 d = k == 0 ? first : (k % 2 == 0 ? -1.0 : 1.0) * Vec3(axes.col((k - 1) / 2));
    const double n = d.norm();
    if (n > 0.0 && h_B(d) - h_A(d) > margin * n) return true;
  }
  return false;
}

// The support value of hull P (frame S) along d_S.
double HullSupport(const ConvexPolytope& P, const Vec3& d_S) { return d_S.dot(P.vertices()[P.SupportVertex(d_S, -1)]); }

// The proof for a sealed mesh a (its hull is A) and a body B posed at X_AB, whose side is given in B's
// frame: depth_B, how deep a point lies inside B beyond what the proof needs; inner_B, a point well
// inside; support_B, its support value along a direction; axes_B, directions to look along.
//  - A point deeper than the gap inside A's hull is inside a's mesh; with depth_B > 0 there too, it is
//    inside both bodies.
//  - B's extreme point along some direction outside A's hull shows that B is not inside a's mesh.
//  - When B is a sealed mesh too (b_is_surface), a vertex of A's hull (a vertex of a's mesh) outside
//    B's shows that a's mesh is not inside B's.
// Then the surfaces cross: two closed, connected surfaces whose insides share a point while each has a
// point outside the other's inside must (otherwise each, connected and missing the other, would lie
// wholly outside the other's inside, and the insides' common part would be a bounded, non-empty set
// without boundary). A solid, connected, that meets the mesh's inside and leaves it meets its surface,
// and a mesh touching a solid collides.
template <class DepthB, class SupportB>
bool SealedProof(const Geometry& a, const RigidTransform& X_AB, const GjkSimplex& s, const Vec3& inner_B,
                 const Mat3& axes_B, bool b_is_surface, DepthB&& depth_B, SupportB&& support_B) {
  const ConvexPolytope& A = *a.hull;
  const double margin = 1e-10 * (1.0 + X_AB.p.norm());
  Vec3 p_A;
  if (!SimplexPointA(s, &p_A)) return false;
  const RigidTransform X_BA = X_AB.inverse();
  const auto depth_a = [&](const Vec3& x) { return A.Depth(x) - a.hull_surface_gap - margin; };
  const auto depth_b = [&](const Vec3& x) { return depth_B(X_BA * x) - margin; };
  const Obb& box_a = a.mesh->obbs()[0];
  const Vec3 inner_b = X_AB * inner_B;
  if (!CommonInside(p_A, box_a.center, inner_b, depth_a, depth_b)) return false;
  const auto h_A = [&](const Vec3& d) { return HullSupport(A, d); };
  const auto h_B = [&](const Vec3& d) { return support_B(Vec3(X_AB.R.transpose() * d)) + d.dot(X_AB.p); };
  const Vec3 apart = inner_b - box_a.center;  // from A's middle towards B's
  if (!ReachesBeyond(apart, X_AB.R * axes_B, margin, h_A, h_B)) return false;
  return !b_is_surface || ReachesBeyond(Vec3(-apart), box_a.R_MB, margin, h_B, h_A);
}

// Whether a and b, whose hulls ISA-GJK found meeting (its simplex `s`; for a mesh and a primitive the
// hull is its A side, as WithHulls orders them), provably collide by SealedProof; false when it does
// not apply or prove it.
bool SealedContactProven(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b,
                         const GjkSimplex& s) {
  if (a.is_mesh() && b.is_mesh()) {
    const ConvexPolytope& B = *b.hull;
    const Obb& box_b = b.mesh->obbs()[0];
    return SealedProof(
        a, RelativeTransform(X_a, X_b), s, box_b.center, box_b.R_MB, true,
        [&](const Vec3& x) { return B.Depth(x) - b.hull_surface_gap; },
        [&](const Vec3& d) { return HullSupport(B, d); });
  }
  const bool mesh_a = a.is_mesh();
  const Geometry& mesh = mesh_a ? a : b;
  const Shape& shape = mesh_a ? b.shape : a.shape;
  return SealedProof(
      mesh, RelativeTransform(mesh_a ? X_a : X_b, mesh_a ? X_b : X_a), s, InnerPoint(shape), Mat3::Identity(), false,
      [&](const Vec3& x) { return Depth(shape, x); },
      [&](const Vec3& d) { return VisitShape(shape, [&](const auto& solid) { return d.dot(Support(solid, d)); }); });
}

// Closed meshes that are not convex carry balls proven inside their solids (Geometry::interior,
// solid_interior.h). A point in a ball of mesh a's part P and in a ball of mesh b's part Q lies where both
// parts wind around it; a vertex of P outside Q's hull and one of Q outside P's hull lie where the other
// part does not. Then the parts' surfaces cross: were they apart, the winding number of Q, constant on the
// connected surface P, would be 0 all over it (so too P's on Q), and the region around the common point
// where both wind would be bounded with no boundary. The same for a solid primitive holding a point of a
// ball of P and reaching beyond P's hull (its segment between the two crosses P's surface). Margins keep
// every comparison above rounding; false proves nothing (the walk decides).

// The point of a solid primitive (its frame) nearest x, or a point inside it for a polytope or a cone.
Vec3 NearestSolidPoint(const Shape& shape, const Vec3& x) {
  return VisitShape(shape, [&](const auto& solid) -> Vec3 {
    using S = std::decay_t<decltype(solid)>;
    if constexpr (std::is_same_v<S, Box>) {
      return x.cwiseMax(-solid.half_extents).cwiseMin(solid.half_extents);
    } else if constexpr (std::is_same_v<S, Sphere>) {
      const Vec3 d = x - solid.center;
      const double n = d.norm();
      return n <= solid.radius ? x : Vec3(solid.center + (solid.radius / n) * d);
    } else if constexpr (std::is_same_v<S, Capsule>) {
      const Vec3 axis(0.0, 0.0, std::clamp(x.z(), -solid.half_length, solid.half_length));
      const Vec3 d = x - axis;
      const double n = d.norm();
      return n <= solid.radius ? x : Vec3(axis + (solid.radius / n) * d);
    } else if constexpr (std::is_same_v<S, Cylinder>) {
      Vec3 y(x.x(), x.y(), std::clamp(x.z(), -solid.half_length, solid.half_length));
      const double n = x.head<2>().norm();
      if (n > solid.radius) y.head<2>() *= solid.radius / n;
      return y;
    } else {
      return InnerPoint(shape);
    }
  });
}

// Whether `ball` (the shape's frame) and the solid share a point deeper than margin inside the solid.
bool BallMeetsSolid(const Shape& shape, const Vec3& center, double radius, double margin) {
  if (Depth(shape, center) > margin) return true;
  const Vec3 toward = NearestSolidPoint(shape, center) - center;
  const double gap = toward.norm();
  if (!(gap < radius)) return false;
  // Past the nearest point, halfway to the ball's far side along the same line.
  const Vec3 x = center + (0.5 * (gap + radius) / gap) * toward;
  return Depth(shape, x) > margin;
}

bool InteriorContactProven(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b) {
  if (a.is_mesh() && b.is_mesh()) {
    const SolidInterior& in_a = *a.interior;
    const SolidInterior& in_b = *b.interior;
    const RigidTransform X_AB = RelativeTransform(X_a, X_b);
    const double margin = 1e-10 * (1.0 + X_AB.p.norm());
    // Groups first: b's group spheres in a's frame; b's balls moved into it only where a group of a's
    // meets theirs.
    std::array<Vec3, kInteriorBallGroups> group_centers_b;
    for (size_t g = 0; g < in_b.groups.size() && g < group_centers_b.size(); ++g) {
      group_centers_b[g] = X_AB * in_b.groups[g].center;
    }
    std::array<Vec3, kMaxInteriorBalls> centers_b;
    std::array<bool, kMaxInteriorBalls> moved{};
    const Mat3& axes_a = a.mesh->obbs()[0].R_MB;
    const Mat3 axes_b = X_AB.R * b.mesh->obbs()[0].R_MB;
    int32_t reach_tests = 0;
    for (const InteriorBallGroup& ga : in_a.groups) {
      for (size_t g = 0; g < in_b.groups.size() && g < group_centers_b.size(); ++g) {
        const InteriorBallGroup& gb = in_b.groups[g];
        const double group_reach = ga.radius + gb.radius;
        if (!((group_centers_b[g] - ga.center).squaredNorm() < group_reach * group_reach)) continue;
        for (int32_t i = ga.begin; i < ga.end; ++i) {
          const InteriorBall& ball_a = in_a.balls[i];
          for (int32_t j = gb.begin; j < gb.end && static_cast<size_t>(j) < centers_b.size(); ++j) {
            const InteriorBall& ball_b = in_b.balls[j];
            if (!moved[j]) {
              centers_b[j] = X_AB * ball_b.center;
              moved[j] = true;
            }
            const double reach = ball_a.radius + ball_b.radius - margin;
            if (!((centers_b[j] - ball_a.center).squaredNorm() < reach * reach)) continue;
            const ConvexPolytope& P = *in_a.part_hulls[ball_a.part];
            const ConvexPolytope& Q = *in_b.part_hulls[ball_b.part];
            const auto h_P = [&](const Vec3& d) { return HullSupport(P, d); };
            const auto h_Q = [&](const Vec3& d) {
              return HullSupport(Q, Vec3(X_AB.R.transpose() * d)) + d.dot(X_AB.p);
            };
            const Vec3 apart = centers_b[j] - ball_a.center;
            if (ReachesBeyond(apart, axes_b, margin, h_P, h_Q) &&
                ReachesBeyond(Vec3(-apart), axes_a, margin, h_Q, h_P)) {
              return true;
            }
            // The reach tests depend little on which balls met: a few tries settle it.
            if (++reach_tests == 2) return false;
          }
        }
      }
    }
    return false;
  }
  const bool mesh_a = a.is_mesh();
  const Geometry& mesh = mesh_a ? a : b;
  const Shape& shape = mesh_a ? b.shape : a.shape;
  const RigidTransform X_SM = RelativeTransform(mesh_a ? X_b : X_a, mesh_a ? X_a : X_b);
  const double margin = 1e-10 * (1.0 + X_SM.p.norm());
  const Vec3 inner_S = InnerPoint(shape);
  // A sphere around the solid, in the mesh's frame: balls beyond it cannot meet the solid.
  const Obb bound_S = ShapeBoundingObb(shape);
  const Vec3 bound_M = X_SM.inverse() * bound_S.center;
  const double solid_radius = bound_S.half_extents.norm();
  int32_t reach_tests = 0;
  const SolidInterior& interior = *mesh.interior;
  for (const InteriorBallGroup& group : interior.groups) {
    const double group_reach = group.radius + solid_radius;
    if (!((group.center - bound_M).squaredNorm() < group_reach * group_reach)) continue;
    for (int32_t i = group.begin; i < group.end; ++i) {
      const InteriorBall& ball = interior.balls[i];
      const double reach = ball.radius + solid_radius;
      if (!((ball.center - bound_M).squaredNorm() < reach * reach)) continue;
      const Vec3 center_S = X_SM * ball.center;
      if (!BallMeetsSolid(shape, center_S, ball.radius - margin, margin)) continue;
      // The solid reaches beyond the part's hull (directions in the solid's frame).
      const ConvexPolytope& P = *interior.part_hulls[ball.part];
      const auto h_P = [&](const Vec3& d) { return HullSupport(P, Vec3(X_SM.R.transpose() * d)) + d.dot(X_SM.p); };
      const auto h_S = [&](const Vec3& d) {
        return VisitShape(shape, [&](const auto& solid) { return d.dot(Support(solid, d)); });
      };
      if (ReachesBeyond(Vec3(inner_S - center_S), Mat3::Identity(), margin, h_P, h_S)) return true;
      if (++reach_tests == 2) return false;
    }
  }
  return false;
}

// Whether PairCollides may try a contact proof on the pair: no padding, and two meshes that carry what
// the proof needs (`carries`), or one and a solid primitive.
template <class Carries>
bool ProofPair(const Geometry& a, const Geometry& b, double padding, Carries&& carries) {
  if (padding > 0.0 || a.is_cloud() || b.is_cloud()) return false;
  const bool has_a = a.is_mesh() && carries(a), has_b = b.is_mesh() && carries(b);
  return (has_a && (has_b || b.is_primitive())) || (has_b && a.is_primitive());
}
bool SealedPair(const Geometry& a, const Geometry& b, double padding) {
  return ProofPair(a, b, padding, [](const Geometry& g) { return g.hull != nullptr && std::isfinite(g.hull_surface_gap); });
}
bool InteriorPair(const Geometry& a, const Geometry& b, double padding) {
  return ProofPair(a, b, padding, [](const Geometry& g) { return g.interior != nullptr; });
}

}  // namespace

namespace {

// A cell's bound rounded down to a float (never above the double it stands for).
float FloorToFloat(double bound) {
  float value = static_cast<float>(bound);
  if (static_cast<double>(value) > bound) value = std::nextafter(value, 0.0f);
  return value;
}

// How the joints of map's cell move part `side` (0: the pair's first, 1: its second) about the grid point
// whose link poses X_WL holds: each joint's axis in the part's geometry frame (X_WG), turned by at most
// half a step (the cell is the grid point's nearest neighbourhood).
internal::AxisSweep CellSweep(const RobotModel& robot, const internal::SelfClearanceMap& map, int32_t side,
                              std::span<const RigidTransform> X_WL, const RigidTransform& X_WG) {
  internal::AxisSweep sweep;
  const RigidTransform X_GW = X_WG.inverse();
  for (int32_t d = 0; d < map.dims; ++d) {
    if (map.side[d] != side) continue;
    const Joint& joint = robot.joint(map.joint[d]);
    const RigidTransform& X_WC = X_WL[static_cast<size_t>(joint.child_link)];
    sweep.point[sweep.count] = X_GW * X_WC.p;
    sweep.direction[sweep.count] = (X_GW.R * (X_WC.R * joint.axis_J)).normalized();
    sweep.angle[sweep.count] = 0.5 * map.step[d] * (1.0 + 1e-9);
    ++sweep.count;
  }
  return sweep;
}

// The bound cell `cell` (>= 0) of `map` holds once filled, else -1.
double KnownCellBound(const internal::SelfClearanceMap& map, int64_t cell) {
  const float stored = map.cells[cell].load(std::memory_order_relaxed);
  return std::isnan(stored) || std::signbit(stored) ? -1.0 : stored;
}

}  // namespace

double SceneImpl::SelfPairClearanceIfKnown(const SelfPair& pair, std::span<const double> q) const {
  const internal::SelfClearanceMap* map = pair.clearance_map;
  const int64_t cell = map == nullptr ? -1 : map->Cell(q);
  return cell < 0 ? -1.0 : KnownCellBound(*map, cell);
}

int64_t SceneImpl::SelfPairCell(const SelfPair& pair, std::span<const double> q) {
  return pair.clearance_map == nullptr ? -1 : pair.clearance_map->Cell(q);
}

double SceneImpl::SelfPairClearance(const SelfPair& pair, std::span<const double> q, double need,
                                    MapFillScratch* fill) const {
  return SelfPairClearanceInCell(pair, SelfPairCell(pair, q), need, fill);
}

double SceneImpl::SelfPairMapBound(const SelfPair& pair, int64_t cell, std::span<const double> q, double need,
                                   MapFillScratch* fill) const {
  const double bound = SelfPairClearanceInCell(pair, cell, need, fill);
  return cell < 0 || bound > need ? bound : std::max(bound, pair.clearance_map->NearGridBound(cell, q));
}

double SceneImpl::SelfPairClearanceInCell(const SelfPair& pair, int64_t cell, double need,
                                          MapFillScratch* fill) const {
  const internal::SelfClearanceMap* map = pair.clearance_map;
  if (cell < 0) return -1.0;
  const float stored = map->cells[cell].load(std::memory_order_relaxed);
  if (!std::isnan(stored) && !std::signbit(stored)) return stored;
  // A cell is filled in up to two steps, each from the distance at its grid point (the other joints
  // do not move the pair relative to each other, so their values do not matter) less the loss. On
  // first use, the convex stand-ins' distance (one GJK; skipped for pairs whose stand-ins rarely keep
  // apart, map->hulls_settle). Stand-ins closer than map->SettledBy() (a link nested in another's
  // fork, a flange against its wrist) leave the cell open, its bound stored negated (-0 for 0). When
  // an open cell is used again and its bound does not exceed `need`, a walk on the geometries
  // themselves settles it: it proves they keep SettledBy() apart, or finds them closer. States seen
  // once, as random sampling draws them, thus cost little more than without the map; a plan or a path
  // check, which comes back to its neighbourhoods, gets the exact cells.
  const float open_bound = std::isnan(stored) ? 0.0f : -stored;
  if (!std::isnan(stored) && static_cast<double>(open_bound) > need) return open_bound;
  if (std::isnan(stored) && !map->hulls_settle) {
    map->cells[cell].store(-0.0f, std::memory_order_relaxed);
    return 0.0;
  }
  MapFillScratch& scratch = *fill;
  if (scratch.map != map->serial) {
    scratch.map = map->serial;
    scratch.gjk = GjkCache();
  }
  double values[2];
  map->GridPoint(cell, values);
  scratch.q = robot_->DefaultConfiguration();
  for (int32_t d = 0; d < map->dims; ++d) scratch.q[static_cast<size_t>(map->active[d])] = values[d];
  scratch.X_WL.resize(robot_->links().size());
  if (!robot_->ForwardKinematics(scratch.q, std::span<RigidTransform>(scratch.X_WL), RigidTransform()).ok()) {
    return -1.0;
  }
  const RobotPart& a = robot_parts_[pair.a];
  const RobotPart& b = robot_parts_[pair.b];
  const RigidTransform X_a = scratch.X_WL[a.link] * a.X_LG;
  const RigidTransform X_b = scratch.X_WL[b.link] * b.X_LG;
  const double settled = map->SettledBy();
  if (std::isnan(stored)) {
    const double hull = HullLowerBound(a.geometry, X_a, b.geometry, X_b, std::numeric_limits<double>::infinity(),
                                       nullptr, &scratch.gjk);
    const float value = FloorToFloat(std::max(0.0, hull - map->loss));
    map->grid[cell].store(FloorToFloat(std::max(0.0, hull)), std::memory_order_relaxed);
    map->cells[cell].store(hull >= settled ? value : -value, std::memory_order_relaxed);
    return value;
  }
  DistanceRequest request;
  request.max_distance = settled;
  request.stop_below = settled;
  const Result<DistanceResult> exact = GeometryDistance(a.geometry, X_a, b.geometry, X_b, request);
  double lower = open_bound;
  if (exact.ok() && !exact.value().intersecting) {
    lower = std::max(lower, exact.value().lower_bound - map->loss);
    const float at_grid = FloorToFloat(std::max(0.0, exact.value().lower_bound));
    if (at_grid > map->grid[cell].load(std::memory_order_relaxed)) map->grid[cell].store(at_grid, std::memory_order_relaxed);
  }
  if (exact.ok() && exact.value().upper_bound > 0.0 && lower < settled - map->loss && a.geometry.is_mesh() &&
      b.geometry.is_mesh()) {
    // Closer than the loss at the grid point, or not yet known apart: the loss takes every point's
    // motion at the farthest a point of either part can be from each joint's axis; near the axis
    // (where a link meets its neighbour over a joint) points move far less. A walk that lowers each
    // node pair's distance by its own nodes' motion over the cell can still prove the cell apart.
    QueryStats unused;
    const double swept = internal::SweptDistanceLowerBound(
        *a.geometry.mesh, X_a, CellSweep(*robot_, *map, 0, scratch.X_WL, X_a), *b.geometry.mesh, X_b,
        CellSweep(*robot_, *map, 1, scratch.X_WL, X_b), lower, kSweptCellMaxTests, &unused);
    if (swept > lower) lower = swept;
  }
  if (exact.ok() && exact.value().lower_bound <= 0.0 && map->witness != nullptr) {
    // Not proven apart (the walk stops early at points closer than the cell settles, so it does not say
    // whether they meet): if the geometries meet at the grid point, the triangles that do, for CLEAR in
    // this cell to test first.
    internal::LeafPair contact;
    QueryStats unused;
    if (internal::CollideFirstTrusted(*a.geometry.mesh, X_a, *b.geometry.mesh, X_b, &contact, &unused)) {
      map->witness[cell].store(internal::SelfClearanceMap::Witness(contact.a, contact.b), std::memory_order_relaxed);
    }
  }
  const float value = FloorToFloat(std::max(0.0, lower));
  map->cells[cell].store(value, std::memory_order_relaxed);
  return value;
}

bool SceneImpl::FillSelfClearanceMaps(const Interrupt& stop) const {
  bool all = true;
  MapFillScratch fill;
  std::vector<double> q = robot_->DefaultConfiguration();
  for (const SelfPair& pair : self_pairs_) {
    const internal::SelfClearanceMap* map = pair.clearance_map;
    if (map == nullptr) continue;
    int32_t state = internal::SelfClearanceMap::kUnfilled;
    if (!map->fill.compare_exchange_strong(state, internal::SelfClearanceMap::kClaimed)) {
      all = all && state == internal::SelfClearanceMap::kFilled;
      continue;
    }
    bool done = true;
    const int64_t n = map->num_cells();
    for (int64_t cell = 0; cell < n; ++cell) {
      if ((cell & 63) == 0 && stop()) {
        done = false;
        break;
      }
      double values[2];
      map->GridPoint(cell, values);
      for (int32_t d = 0; d < map->dims; ++d) q[static_cast<size_t>(map->active[d])] = values[d];
      if (SelfPairClearanceIfKnown(pair, q) >= 0.0) continue;
      // Both steps: the stand-ins (or the open mark), then, for a cell they leave open, the geometries.
      SelfPairClearance(pair, q, 0.0, &fill);
      if (SelfPairClearanceIfKnown(pair, q) < 0.0) {
        SelfPairClearance(pair, q, std::numeric_limits<double>::infinity(), &fill);
      }
    }
    map->fill.store(done ? internal::SelfClearanceMap::kFilled : internal::SelfClearanceMap::kUnfilled);
    all = all && done;
  }
  return all;
}

bool SceneImpl::AnySelfClearanceMap(int32_t fill, bool equal) const {
  for (const SelfPair& pair : self_pairs_) {
    if (pair.clearance_map != nullptr && (pair.clearance_map->fill.load() == fill) == equal) return true;
  }
  return false;
}

bool SceneImpl::SelfClearanceFilled() const {
  return !AnySelfClearanceMap(internal::SelfClearanceMap::kFilled, false);
}

bool SceneImpl::HasUnclaimedSelfClearanceMaps() const {
  return AnySelfClearanceMap(internal::SelfClearanceMap::kUnfilled, true);
}

bool SceneImpl::SelfPairClearAlong(const SelfPair& pair, std::span<const double> q0, std::span<const double> q1,
                                   double padding, int fill_budget, MapFillScratch* fill) const {
  const internal::SelfClearanceMap* map = pair.clearance_map;
  if (map == nullptr || map->Cell(q0) < 0 || map->Cell(q1) < 0) return false;
  // The segment in grid units: cell i of dimension d spans [i - 0.5, i + 0.5] around grid point i.
  // Walked cell by cell (Amanatides and Woo); where it crosses a cell corner, the cells on both sides
  // of the corner are asked too, so no cell it touches is skipped whatever the rounding.
  std::array<double, 2> u0{}, du{};
  std::array<int64_t, 2> cell{}, last{}, step{};
  std::array<double, 2> t_next{}, t_delta{};
  for (int32_t d = 0; d < map->dims; ++d) {
    const size_t j = static_cast<size_t>(map->active[d]);
    u0[d] = (q0[j] - map->lower[d]) / map->step[d];
    du[d] = (q1[j] - q0[j]) / map->step[d];
    cell[d] = std::clamp<int64_t>(static_cast<int64_t>(std::floor(u0[d] + 0.5)), 0, map->count[d] - 1);
    last[d] = std::clamp<int64_t>(static_cast<int64_t>(std::floor(u0[d] + du[d] + 0.5)), 0, map->count[d] - 1);
    step[d] = du[d] > 0.0 ? 1 : (du[d] < 0.0 ? -1 : 0);
    if (step[d] == 0) {
      t_next[d] = t_delta[d] = std::numeric_limits<double>::infinity();
    } else {
      const double boundary = static_cast<double>(cell[d]) + 0.5 * static_cast<double>(step[d]);
      t_next[d] = (boundary - u0[d]) / du[d];
      t_delta[d] = 1.0 / std::abs(du[d]);
    }
  }
  auto clear = [&](const std::array<int64_t, 2>& c) {
    const int64_t index = map->CellAt(c);
    if (index < 0) return false;
    double bound = KnownCellBound(*map, index);
    if (bound <= padding && fill_budget > 0) {
      --fill_budget;
      bound = SelfPairClearanceInCell(pair, index, padding, fill);
      if (bound <= padding && fill_budget > 0 && KnownCellBound(*map, index) < 0.0) {
        --fill_budget;
        bound = SelfPairClearanceInCell(pair, index, padding, fill);  // an open cell: its second step settles it
      }
    }
    return bound > padding;
  };
  const int64_t max_cells = 4 * (int64_t{map->count[0]} + int64_t{map->count[1]}) + 4;
  for (int64_t n = 0; n < max_cells; ++n) {
    if (!clear(cell)) return false;
    bool done = true;
    for (int32_t d = 0; d < map->dims; ++d) done = done && cell[d] == last[d];
    if (done) return true;
    const double t = std::min(t_next[0], map->dims == 2 ? t_next[1] : std::numeric_limits<double>::infinity());
    if (t > 1.0) return true;
    const bool corner = map->dims == 2 && std::abs(t_next[0] - t_next[1]) <= 1e-9 * std::max(1.0, t);
    if (corner) {
      // Both neighbours across the corner, then the diagonal cell.
      if (!clear({cell[0] + step[0], cell[1]}) || !clear({cell[0], cell[1] + step[1]})) return false;
      for (int32_t d = 0; d < 2; ++d) {
        cell[d] += step[d];
        t_next[d] += t_delta[d];
      }
    } else {
      const int32_t d = map->dims == 2 && t_next[1] < t_next[0] ? 1 : 0;
      cell[d] += step[d];
      t_next[d] += t_delta[d];
    }
  }
  return false;
}

Result<const SceneImpl::SelfPair*> SceneImpl::FindSelfPair(std::string_view link_a, std::string_view link_b) const {
  const Result<LinkIndex> a = robot_->FindLink(link_a);
  if (!a.ok()) return a.error();
  const Result<LinkIndex> b = robot_->FindLink(link_b);
  if (!b.ok()) return b.error();
  for (const SelfPair& sp : self_pairs_) {
    const RobotPart& pa = robot_parts_[sp.a];
    const RobotPart& pb = robot_parts_[sp.b];
    if (pa.geometry_index != 0 || pb.geometry_index != 0) continue;
    if ((pa.link == a.value() && pb.link == b.value()) || (pa.link == b.value() && pb.link == a.value())) return &sp;
  }
  return static_cast<const SelfPair*>(nullptr);
}

Result<double> SceneImpl::SelfClearanceBound(std::string_view link_a, std::string_view link_b,
                                             std::span<const double> q) const {
  if (Status s = robot_->CheckConfiguration(q); !s.ok()) return s.error();
  const Result<const SelfPair*> pair = FindSelfPair(link_a, link_b);
  if (!pair.ok()) return pair.error();
  MapFillScratch fill;
  if (pair.value() == nullptr) return -1.0;
  const SelfPair& sp = *pair.value();
  const int64_t cell = SelfPairCell(sp, q);
  // The larger of both bounds (CLEAR stops at the cell's when it decides).
  const double bound = SelfPairClearanceInCell(sp, cell, 0.0, &fill);
  return cell < 0 ? bound : std::max(bound, sp.clearance_map->NearGridBound(cell, q));
}

Result<bool> SceneImpl::SelfClearAlong(std::string_view link_a, std::string_view link_b, std::span<const double> q0,
                                       std::span<const double> q1) const {
  if (Status s = robot_->CheckConfiguration(q0); !s.ok()) return s.error();
  if (Status s = robot_->CheckConfiguration(q1); !s.ok()) return s.error();
  const Result<const SelfPair*> pair = FindSelfPair(link_a, link_b);
  if (!pair.ok()) return pair.error();
  MapFillScratch fill;
  return pair.value() != nullptr && SelfPairClearAlong(*pair.value(), q0, q1, 0.0, kMapFillBudget, &fill);
}

bool SceneImpl::PairCollides(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b,
                             double padding, QueryStats* stats, GjkCache* hull_cache) {
  if (a.is_cloud() || b.is_cloud()) {
    // Padding and all: the cloud walk takes it as its balls' growth.
    const Result<CollisionResult> r = internal::CollideWithCloud(a, X_a, b, X_b, std::max(0.0, padding), {});
    if (!r.ok()) return true;  // two clouds: never paired by a scene
    if (stats != nullptr) *stats += r.value().stats;
    return r.value().colliding;
  }
  // Sealed convex meshes: where their hulls meet, the hull test's tetrahedron usually proves the
  // geometry meets too (SealedContactProven), so it is kept even without the caller's warm start.
  const bool sealed = SealedPair(a, b, padding);
  std::optional<GjkCache> local;  // made only when needed: every pair test passes here
  GjkCache* cache = hull_cache != nullptr || !sealed ? hull_cache : &local.emplace();
  if (HullsApart(a, X_a, b, X_b, std::max(0.0, padding), stats, cache)) return false;
  if ((sealed && SealedContactProven(a, X_a, b, X_b, cache->simplex)) ||
      (InteriorPair(a, b, padding) && InteriorContactProven(a, X_a, b, X_b))) {
    if (stats != nullptr) ++stats->bv_tests;
    return true;
  }
  if (padding <= 0.0) {
    // Poses and shapes of a built scene are valid: the unvalidated entry points.
    if (a.is_mesh() && b.is_mesh()) {
      QueryStats work;
      internal::LeafPair contact;
      const bool colliding = internal::CollideFirstTrusted(*a.mesh, X_a, *b.mesh, X_b, &contact, &work);
      if (stats != nullptr) *stats += work;
      return colliding;
    }
    CollisionResult r;
    if (a.is_mesh()) {
      internal::CollideMeshShapeTrusted(*a.mesh, X_a, b.shape, X_b, {}, &r);
    } else if (b.is_mesh()) {
      internal::CollideMeshShapeTrusted(*b.mesh, X_b, a.shape, X_a, {}, &r);
    } else {
      r.colliding = internal::ShapesIntersectTrusted(a.shape, X_a, b.shape, X_b);
      r.stats.triangle_tests = 1;
    }
    if (stats != nullptr) *stats += r.stats;
    return r.colliding;
  }
  // Padded: an exact distance walk that stops as soon as it proves the distance is at least the
  // padding, or finds points closer than it. Its interval is exact to 1e-12 relative otherwise.
  DistanceRequest request;
  request.max_distance = padding;
  request.stop_below = padding;
  const Result<DistanceResult> distance = GeometryDistance(a, X_a, b, X_b, request);
  if (!distance.ok()) return true;  // a built scene's poses and shapes are valid: never taken
  const DistanceResult& r = distance.value();
  if (stats != nullptr) *stats += r.stats;
  return r.intersecting || r.lower_bound < padding || r.upper_bound <= padding;
}

bool SceneImpl::WorldPairCollides(int32_t i, int32_t w, const RigidTransform& X_WG, const Obb& box, double clearance,
                                  SceneCacheData* cache, StateResult* out) const {
  ++out->pairs_tested;
  ++out->stats.bv_tests;
  return WorldBoxesOverlap(box, world_parts_[w].box) && WorldPairMeets(i, w, X_WG, clearance, cache, out);
}

bool SceneImpl::WorldPairMeets(int32_t i, int32_t w, const RigidTransform& X_WG, double clearance,
                               SceneCacheData* cache, StateResult* out) const {
  const RobotPart& rp = robot_parts_[i];
  const WorldPart& wp = world_parts_[w];
  const ObjectPart& part = objects_[wp.object].parts[wp.part];
  if (!PairCollides(rp.geometry, X_WG, part.geometry, part.X_WG, rp.padding + clearance, &out->stats,
                    HullCache(cache, WorldPairCache(i, w)))) {
    return false;
  }
  out->free = false;
  out->contact = WorldContact(i, wp.object);
  return true;
}

bool SceneImpl::SelfPairCollides(size_t s, int64_t cell, const RigidTransform& X_a, const Obb& box_a,
                                 const RigidTransform& X_b, const Obb& box_b, double padding, SceneCacheData* cache,
                                 StateResult* out) const {
  ++out->pairs_tested;
  ++out->stats.bv_tests;
  return WorldBoxesOverlap(box_a, box_b) && SelfPairMeets(s, cell, X_a, X_b, padding, cache, out);
}

bool SceneImpl::SelfPairMeets(size_t s, int64_t cell, const RigidTransform& X_a, const RigidTransform& X_b,
                              double padding, SceneCacheData* cache, StateResult* out) const {
  const SelfPair& sp = self_pairs_[s];
  if (SelfPairMeetsAtWitness(sp, cell, X_a, X_b, padding, &out->stats) ||
      PairCollides(robot_parts_[sp.a].geometry, X_a, robot_parts_[sp.b].geometry, X_b, padding, &out->stats,
                   HullCache(cache, SelfPairCache(s)))) {
    out->free = false;
    out->contact = SelfContact(sp.a, sp.b);
    return true;
  }
  return false;
}

bool SceneImpl::SelfPairMeetsAtWitness(const SelfPair& pair, int64_t cell, const RigidTransform& X_a,
                                       const RigidTransform& X_b, double padding, QueryStats* stats) const {
  const internal::SelfClearanceMap* map = pair.clearance_map;
  if (padding > 0.0 || cell < 0 || map->witness == nullptr) return false;
  const uint64_t w = map->witness[cell].load(std::memory_order_relaxed);
  if (w == internal::SelfClearanceMap::kNoWitness) return false;
  const internal::LeafPair leaves{internal::SelfClearanceMap::WitnessA(w), internal::SelfClearanceMap::WitnessB(w)};
  return internal::LeafPairIntersects(*robot_parts_[pair.a].geometry.mesh, X_a, *robot_parts_[pair.b].geometry.mesh,
                                      X_b, leaves, stats);
}

bool SceneImpl::CollideWorld(int32_t i, double clearance, SceneCacheData* cache, StateResult* out) const {
  const RobotPart& rp = robot_parts_[i];
  return VisitWorldParts(cache->part_bounds[i], [&](int32_t w) {
    return !AllowedEntityObject(rp.entity, world_parts_[w].object) &&
           WorldPairCollides(i, w, cache->X_WG[i], cache->part_boxes[i], clearance, cache, out);
  });
}

GjkCache* SceneImpl::HullCache(SceneCacheData* cache, size_t index) const {
  // At most this many pairs keep a warm start (about 26 MB of them); larger scenes start GJK cold.
  constexpr size_t kMaxHullCaches = 1 << 16;
  const size_t n = SelfPairCache(self_pairs_.size());
  if (n > kMaxHullCaches) return nullptr;
  if (cache->hull_caches.size() < n) cache->hull_caches.resize(n);
  SceneCacheData::HullWarmStart& entry = cache->hull_caches[index];
  if (entry.scene != serial_) {
    entry.gjk = GjkCache();
    entry.scene = serial_;
  }
  return &entry.gjk;
}

Status SceneImpl::PoseParts(std::span<const double> q, SceneCacheData* cache, double margin) const {
  // Links no active joint moves sit where this scene's last full forward kinematics put them.
  const size_t num_links = robot_->links().size();
  if (cache->links_scene == serial_ && cache->X_WL.size() == num_links) {
    if (Status s = robot_->ForwardKinematicsMoving(q, std::span<RigidTransform>(cache->X_WL)); !s.ok()) return s;
  } else {
    cache->X_WL.resize(num_links);
    if (Status s = robot_->ForwardKinematics(q, std::span<RigidTransform>(cache->X_WL), X_WB_); !s.ok()) return s;
    cache->links_scene = serial_;
  }
  // Static parts posed for this scene and margin before are where they were.
  const bool keep_static = cache->posed_scene == serial_ && cache->posed_margin == margin &&
                           cache->X_WG.size() == robot_parts_.size() && !part_static_.empty();
  cache->X_WG.resize(robot_parts_.size());
  cache->part_bounds.resize(robot_parts_.size());
  cache->part_boxes.resize(robot_parts_.size());
  cache->posed_scene = serial_;
  cache->posed_margin = margin;
  for (size_t i = 0; i < robot_parts_.size(); ++i) {
    if (keep_static && part_static_[i]) continue;
    const RobotPart& rp = robot_parts_[i];
    const RigidTransform& X_WL = cache->X_WL[rp.link];
    cache->X_WG[i] = rp.GeometryPose(X_WL);
    Obb& box = cache->part_boxes[i];
    box.R_MB.noalias() = X_WL.R * rp.R_LB;
    box.center = X_WL * rp.p_LBo;
    const double grow = rp.padding + margin;
    box.half_extents = rp.local_box.half_extents.array() + grow;
    const Vec3 half = box.R_MB.cwiseAbs() * rp.local_box.half_extents + Vec3::Constant(grow);
    Aabb& b = cache->part_bounds[i];
    b.min = box.center - half;
    b.max = box.center + half;
  }
  return {};
}

Result<StateResult> SceneImpl::CheckState(std::span<const double> q, SceneCacheData* cache, double clearance) const {
  if (Status s = CheckClearance(clearance); !s.ok()) return s.error();
  return CheckStateWith(q, clearance, clearance, cache);
}

Result<StateResult> SceneImpl::CheckStateWith(std::span<const double> q, double clearance, double self_clearance,
                                              SceneCacheData* cache) const {
  if (Status s = PoseParts(q, cache, clearance); !s.ok()) return s.error();  // rejects a wrong size or NaN
  StateResult result;
  result.within_limits = robot_->WithinLimits(q);
  result.free = true;
  const std::vector<RigidTransform>& X_WG = cache->X_WG;
  for (int32_t i = 0; i < static_cast<int32_t>(robot_parts_.size()); ++i) {
    if (CollideWorld(i, clearance, cache, &result)) return result;
  }
  const auto pair_meets = [&](size_t s) {
    const SelfPair& sp = self_pairs_[s];
    const double padding = robot_parts_[sp.a].padding + robot_parts_[sp.b].padding + self_clearance;
    if (!Overlap(cache->part_bounds[sp.a], cache->part_bounds[sp.b])) return false;
    // Links one or two joints apart: the map decides most states with one look-up (its cells are
    // filled on first use, so it is asked only once the boxes meet).
    const int64_t cell = SelfPairCell(sp, q);
    if (cell >= 0 && SelfPairMapBound(sp, cell, q, padding, &cache->map_fill) > padding) return false;
    return SelfPairCollides(s, cell, X_WG[sp.a], cache->part_boxes[sp.a], X_WG[sp.b], cache->part_boxes[sp.b],
                            padding, cache, &result);
  };
  // The pairs whose boxes may meet, in the same order as all of them (SelfCandidates).
  const auto bounds = [&](int32_t i) -> const Aabb& { return cache->part_bounds[i]; };
  if (SelfCandidates(bounds, clearance, &cache->self_candidates)) {
    for (const int32_t s : cache->self_candidates) {
      if (pair_meets(static_cast<size_t>(s))) return result;
    }
    return result;
  }
  for (size_t s = 0; s < self_pairs_.size(); ++s) {
    if (pair_meets(s)) return result;
  }
  return result;
}

}  // namespace proximity::core
