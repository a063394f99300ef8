// Mesh bytes through the loader and the hierarchy build: the first byte picks the format (STL, OBJ,
// PLY, COLLADA) and the weld tolerance, the rest is the file. A loaded mesh must satisfy TriangleMesh's
// contract, build into a MeshModel, give a certified distance interval to a box, and (as a robot link's
// mesh) a hull whose sealed gap holds what it claims.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "bvh/bvh.h"
#include "proximity/core/mesh/mesh.h"
#include "bvh/mesh_query.h"
#include "narrowphase/convex.h"

namespace {

using namespace proximity;

const std::shared_ptr<const core::MeshModel>& Box() {
  static const auto box = core::MeshModel::Build(core::MakeBoxMesh(core::Vec3(0.5, 0.25, 1.0))).value();
  return box;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const char* const kFormats[] = {"stl", "obj", "ply", "dae"};
  const std::string hint = kFormats[data[0] & 3];
  core::MeshLoadOptions options;
  if (data[0] & 4) options.weld_tolerance = 1e-3;
  if (data[0] & 8) options.scale = core::Vec3(2.0, -1.0, 0.5);  // a mirroring scale flips the winding
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);

  core::MeshLoadReport report;
  auto loaded = core::LoadMeshFromMemory(bytes, hint, "fuzz." + hint, options, &report);
  if (!loaded.ok()) {
    fuzz::CheckError(loaded.error());
    return 0;
  }
  const core::TriangleMesh& mesh = loaded.value();
  PROX_FUZZ_CHECK(!mesh.triangles.empty(), "a loaded mesh has triangles");
  const auto nv = static_cast<int64_t>(mesh.vertices.size());
  for (const core::Vec3& v : mesh.vertices) PROX_FUZZ_CHECK(v.allFinite(), "vertex coordinates are finite");
  for (const auto& t : mesh.triangles) {
    for (int32_t i : t) PROX_FUZZ_CHECK(i >= 0 && i < nv, "triangle index in range");
  }
  // Degenerate triangles (zero area, or a repeated vertex) stay when no edge of another triangle covers
  // them (they are checked as segments), and are counted; at least one triangle keeps an area.
  const int32_t degenerate = core::CountDegenerateTriangles(mesh);
  PROX_FUZZ_CHECK(degenerate < static_cast<int32_t>(mesh.triangles.size()), "a triangle with an area remains");
  PROX_FUZZ_CHECK(report.kept_degenerate == degenerate, "the kept degenerate triangles are counted");
  PROX_FUZZ_CHECK(report.submeshes >= 1 && report.removed_degenerate >= 0 && report.welded_vertices >= 0,
                  "report counts");

  auto model = core::MeshModel::Build(std::move(loaded).value(), {}, "fuzz." + hint);
  if (!model.ok()) {
    fuzz::CheckError(model.error());
    return 0;
  }
  const core::MeshModel& m = *model.value();
  PROX_FUZZ_CHECK(m.num_triangles() >= 1 && m.num_nodes() >= 1, "a built model has nodes");

  // The mesh's distance to a box placed beside its bounds: a certified, ordered, finite interval. The
  // core answers queries on geometry within kWorldExtent of the origin (scenes refuse the rest).
  const auto bounds = core::MeshBounds(m.mesh());
  if (bounds[0].cwiseAbs().maxCoeff() > core::kWorldExtent || bounds[1].cwiseAbs().maxCoeff() > core::kWorldExtent) {
    return 0;
  }
  core::RigidTransform X_WB;
  X_WB.p = bounds[1] + core::Vec3(0.3, 0.1, -0.2);
  core::DistanceRequest request;
  request.rel_err = 0.05;
  const core::Result<core::DistanceResult> distance =
      core::ComputeDistance(m, core::RigidTransform::Identity(), *Box(), X_WB, request, nullptr);
  PROX_FUZZ_CHECK(distance.ok(), distance.status().ToString());
  const core::DistanceResult& r = distance.value();
  PROX_FUZZ_CHECK(fuzz::NotNan(r.lower_bound) && fuzz::NotNan(r.upper_bound), "distance bounds are numbers");
  PROX_FUZZ_CHECK(r.lower_bound >= 0.0 && r.lower_bound <= r.upper_bound, "0 <= lower <= upper");
  PROX_FUZZ_CHECK(std::isfinite(r.upper_bound), "two non-empty meshes have a finite distance");
  PROX_FUZZ_CHECK(r.p_WA.allFinite() && r.p_WB.allFinite(), "witness points are finite");
  const core::Result<core::CollisionResult> c = core::Collide(m, core::RigidTransform::Identity(), *Box(), X_WB, {});
  PROX_FUZZ_CHECK(c.ok(), c.status().ToString());
  PROX_FUZZ_CHECK(!c.value().colliding || r.lower_bound == 0.0, "colliding meshes have no positive lower bound");

  // The hull a robot link gets at load, and whether the mesh is a sealed surface close to it: a gap is
  // +infinity or a number >= 0 that no vertex lies deeper than (up to rounding at the mesh's scale).
  auto hull = core::ConvexPolytope::Build(m.mesh(), "fuzz." + hint);
  if (!hull.ok()) {
    fuzz::CheckError(hull.error());
    return 0;
  }
  const double gap = core::SealedHullGap(m.mesh(), *hull.value());
  PROX_FUZZ_CHECK(!std::isnan(gap) && gap >= 0.0, "a sealed gap is a number >= 0 or infinity");
  if (std::isfinite(gap)) {
    const double scale = std::max(bounds[0].cwiseAbs().maxCoeff(), bounds[1].cwiseAbs().maxCoeff());
    for (const auto& t : m.mesh().triangles) {
      for (int32_t i : t) {
        PROX_FUZZ_CHECK(hull.value()->Depth(m.mesh().vertices[i]) <= gap + 1e-12 * (1.0 + scale),
                        "no corner of a sealed mesh lies deeper than its gap");
      }
    }
  }
  return 0;
}
