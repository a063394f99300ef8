#pragma once
// Small pieces of a triangle mesh's topology shared by the builders that read it: the solid angle a
// triangle subtends (the term of a closed surface's winding number), the mesh's connected parts, and
// whether its hull's vertices lie on its triangles.

#include <cmath>
#include <cstdint>
#include <vector>

#include "proximity/core/base/types.h"
#include "proximity/core/mesh/mesh.h"

namespace proximity::core {
class ConvexPolytope;
}  // namespace proximity::core

namespace proximity::core::internal {

// Solid angle of triangle (a, b, c) seen from p, signed positive when the triangle turns
// counter-clockwise around p's view direction (Van Oosterom, Strackee, "The solid angle of a plane
// triangle", IEEE TBME 1983). Over a closed, outward surface the sum is 4 pi times the winding number.
inline double SolidAngle(const Vec3& p, const Vec3& a, const Vec3& b, const Vec3& c) {
  const Vec3 x = a - p, y = b - p, z = c - p;
  const double lx = x.norm(), ly = y.norm(), lz = z.norm();
  const double num = x.dot(y.cross(z));
  const double den = lx * ly * lz + x.dot(y) * lz + x.dot(z) * ly + y.dot(z) * lx;
  return 2.0 * std::atan2(num, den);
}

// The connected parts of a mesh: triangles linked through shared vertices.
struct MeshParts {
  std::vector<int32_t> of_triangle;  // Part of each triangle, numbered in order of first triangle.
  int32_t count = 0;
};
MeshParts ConnectedParts(const TriangleMesh& mesh);

// Whether every vertex of `hull` (built from the mesh's vertices) is a corner of some triangle of the
// mesh: then a point of the hull outside another body is one of the surface's.
bool HullVerticesOnTriangles(const TriangleMesh& mesh, const ConvexPolytope& hull);

}  // namespace proximity::core::internal
