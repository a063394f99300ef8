#pragma once
/// @file
/// Triangle meshes: import from files (OBJ with the project's own reader; STL, COLLADA, PLY through
/// assimp), validation, and procedural meshes for tests and primitives.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "proximity/core/base/file_access.h"
#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"

namespace proximity::core {

/// An indexed triangle mesh in its own frame M: vertices p_MV and counter-clockwise (outward) triangles.
/// Every index is in range and every coordinate finite. A triangle may be degenerate (zero area, or two
/// corners on one vertex): geometrically its hull segment or a point, which the narrowphase treats as such.
struct TriangleMesh {
  std::vector<Vec3> vertices;
  std::vector<std::array<int32_t, 3>> triangles;
};

/// How a mesh file is read.
struct MeshLoadOptions {
  /// Per-axis scale applied to every vertex (URDF <mesh scale>). Components must be finite and non-zero.
  Vec3 scale = Vec3::Ones();
  /// Vertices closer than this (after scaling, in mesh units) are welded into one; 0 welds only
  /// coincident vertices. Must be >= 0.
  double weld_tolerance = 0.0;
  /// Which files LoadMesh may read (confined loads give one message for every failure to read).
  FileAccess files;
};

/// What loading changed about the file's contents.
struct MeshLoadReport {
  int32_t submeshes = 0;                ///< Meshes merged into one: assimp's (node transforms applied), or OBJ
                                        ///< groups and materials that hold faces.
  int32_t skipped_non_triangles = 0;    ///< Point and line elements (polygons are triangulated).
  int32_t removed_degenerate = 0;       ///< Triangles with zero area (after welding) that were dropped: each
                                        ///< one's hull segment is an edge (or its point a vertex) of a kept
                                        ///< triangle, so no point of the surface was lost.
  int32_t kept_degenerate = 0;          ///< Triangles with zero area kept as their hull segment or point.
  int32_t welded_vertices = 0;          ///< Input vertices merged into another.
};

/// Loads a mesh file: OBJ with the project's own reader, the other formats through assimp. COLLADA files
/// keep the geometry's own axes (the root-node up-axis rotation assimp adds is reset, as ROS loaders do);
/// other node transforms are applied. Errors name
/// the file: missing, unreadable, not a mesh, no triangles, non-finite coordinates, bad options.
[[nodiscard]] Result<TriangleMesh> LoadMesh(const std::string& path, const MeshLoadOptions& options = {},
                                            MeshLoadReport* report = nullptr);

/// Loads a mesh from bytes in memory; `format_hint` is a file extension such as "stl" or "obj".
/// `name` is used in error messages.
[[nodiscard]] Result<TriangleMesh> LoadMeshFromMemory(const std::string& bytes, const std::string& format_hint,
                                                      const std::string& name,
                                                      const MeshLoadOptions& options = {},
                                                      MeshLoadReport* report = nullptr);

/// Validates and cleans raw arrays into a TriangleMesh: checks indices and finiteness, welds
/// vertices within `weld_tolerance`, drops zero-area triangles whose hull segment is an edge of another
/// triangle (keeping the others as segments), and unreferenced vertices. At least one triangle must keep
/// an area.
[[nodiscard]] Result<TriangleMesh> MakeTriangleMesh(std::vector<Vec3> vertices,
                                                    std::vector<std::array<int32_t, 3>> triangles,
                                                    double weld_tolerance = 0.0,
                                                    MeshLoadReport* report = nullptr);

/// Triangles of zero area (two corners on one vertex, or a height at the rounding level of the longest
/// edge): the ones MakeTriangleMesh keeps as their hull segment.
int32_t CountDegenerateTriangles(const TriangleMesh& mesh);

/// Axis-aligned box centred at the origin with full edge lengths `size`; 12 triangles.
TriangleMesh MakeBoxMesh(const Vec3& size);
/// Sphere of `radius` centred at the origin: an icosahedron subdivided `subdivisions` times
/// (20 * 4^subdivisions triangles), vertices on the sphere.
TriangleMesh MakeIcosphereMesh(double radius, int subdivisions);
/// Cylinder along z centred at the origin, `segments` around, capped.
TriangleMesh MakeCylinderMesh(double radius, double length, int segments);
/// Torus in the xy plane: `major` radius of the tube's centre line, `minor` tube radius.
TriangleMesh MakeTorusMesh(double major, double minor, int major_segments, int minor_segments);

/// Appends `part`'s vertices (posed by X_MP, the part's frame P in `into`'s frame M) and triangles to
/// `into`: several pieces as one triangle soup.
void AppendMesh(TriangleMesh* into, const TriangleMesh& part, const RigidTransform& X_MP = RigidTransform());

/// Axis-aligned bounds of the vertices; {+inf, -inf} for an empty mesh.
std::array<Vec3, 2> MeshBounds(const TriangleMesh& mesh);

}  // namespace proximity::core
