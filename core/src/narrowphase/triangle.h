#pragma once
/// @file
/// Exact tests on triangles, segments and rays: the leaves of every mesh query.
/// All functions take points in one common frame, are closed-set (touching counts as intersecting),
/// never return NaN for finite input, and handle degenerate (zero-area) triangles and zero-length segments.
/// Output pointers may be null when the caller does not need that output.

#include "proximity/core/base/types.h"

namespace proximity::core {

/// Closest point on triangle (a, b, c) to p (Ericson's Voronoi-region walk). Exact up to rounding.
Vec3 ClosestPointOnTriangle(const Vec3& p, const Vec3& a, const Vec3& b, const Vec3& c);

/// Squared distance between segments [p0, p1] and [q0, q1]; closest points in *cp, *cq.
/// Robust for parallel and zero-length segments.
double SegmentSegmentDistanceSquared(const Vec3& p0, const Vec3& p1, const Vec3& q0, const Vec3& q1, Vec3* cp,
                                     Vec3* cq);

/// Whether triangles (a0, a1, a2) and (b0, b1, b2) share at least one point (Möller 1997 interval test,
/// coplanar case by 2D edge and containment tests).
bool TrianglesIntersect(const Vec3& a0, const Vec3& a1, const Vec3& a2, const Vec3& b0, const Vec3& b1,
                        const Vec3& b2);

/// Euclidean distance between two triangles, with closest points p_A on the first and p_B on the second.
/// Returns 0 when they intersect, with p_A == p_B a common point.
double TriangleDistance(const Vec3& a0, const Vec3& a1, const Vec3& a2, const Vec3& b0, const Vec3& b1,
                        const Vec3& b2, Vec3* p_A, Vec3* p_B);

/// Ray origin + t * dir (t >= 0) against triangle (a, b, c), Möller–Trumbore. On a hit returns true and
/// sets *t and the barycentrics (*u, *v) of the hit point a + u (b - a) + v (c - a). Back faces hit too.
/// A ray parallel to the plane misses unless it lies in it; a ray in the plane hits at the first point
/// it shares with the closed triangle (t = 0 when it starts inside), as SegmentTriangle does.
bool RayTriangle(const Vec3& origin, const Vec3& dir, const Vec3& a, const Vec3& b, const Vec3& c, double* t,
                 double* u, double* v);

/// Segment [p0, p1] against triangle (a, b, c): whether they share a point; *t in [0, 1] along the
/// segment at the first shared point. Coplanar segments are handled.
bool SegmentTriangle(const Vec3& p0, const Vec3& p1, const Vec3& a, const Vec3& b, const Vec3& c, double* t);

}  // namespace proximity::core
