#pragma once

// Pieces the mesh readers share (internal to the mesh loader): what a reader gathers before cleaning, and
// the project's own Wavefront OBJ reader.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proximity/core/mesh/mesh.h"

namespace proximity::core::internal {

/// A file's triangles before cleaning (welding, degenerate removal): vertices with the transforms and
/// scale applied, triangles indexing them, and what the report counts.
struct Gathered {
  std::vector<Vec3> vertices;
  std::vector<std::array<int32_t, 3>> triangles;
  int32_t submeshes = 0;
  int32_t skipped_non_triangles = 0;
};

/// "(x, y, z)" for messages, every digit shown (defined in mesh.cc).
std::string FormatVec(const Vec3& v);

/// The white-space separated words of a line (std::isspace), into `words` (cleared first; the views
/// point into `line`).
void SplitWords(std::string_view line, std::vector<std::string_view>* words);

/// Reads Wavefront OBJ text: vertex positions (`v`) and faces (`f`, corners `i`, `i/t`, `i//n` or `i/t/n`,
/// negative indices counting back from the last vertex read). Polygons are triangulated in their own
/// plane: a convex one as a fan from its first corner, any other by ear clipping, keeping the face's
/// winding. `l` and `p` elements (and faces of fewer than three corners) are counted and skipped;
/// normals, texture coordinates, groups, materials and unknown statements are ignored, and no other file
/// is opened. A line ending in a backslash continues on the next. Coordinates are stored at single
/// precision, as the other formats' reader (assimp) stores them, so one mesh saved in two formats loads
/// the same; only vertices that faces use are kept. `scale` is applied per axis, and a mirroring scale
/// reverses the winding. Errors name `label` and the line.
Result<Gathered> ReadObj(std::string_view bytes, const Vec3& scale, const std::string& label);

}  // namespace proximity::core::internal
