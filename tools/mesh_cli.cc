// proximity-mesh: loads two mesh files, poses them, and prints collision, certified distance bounds,
// nearest points and the work each query did.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>

#include "proximity/core/mesh/mesh.h"
#include "proximity/core/scene/geometry.h"

namespace {

using proximity::core::RigidTransform;
using proximity::core::Vec3;

// x y z roll pitch yaw (metres or mesh units, radians; R = Rz(yaw) Ry(pitch) Rx(roll)).
RigidTransform PoseFrom(const std::vector<double>& v) {
  RigidTransform X;
  X.p = Vec3(v[0], v[1], v[2]);
  X.R = (Eigen::AngleAxisd(v[5], Vec3::UnitZ()) * Eigen::AngleAxisd(v[4], Vec3::UnitY()) *
         Eigen::AngleAxisd(v[3], Vec3::UnitX()))
            .toRotationMatrix();
  return X;
}

std::string Fmt(const Vec3& p) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%.6g, %.6g, %.6g]", p.x(), p.y(), p.z());
  return buf;
}

int Triangles(const proximity::core::Geometry& g) {
  return static_cast<int>(proximity::core::MeshOf(*g.mesh).triangles.size());
}

double Micros(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  namespace pc = proximity::core;
  CLI::App app{"Collision and certified distance between two meshes"};
  std::string path_a, path_b;
  std::vector<double> pose_a(6, 0.0), pose_b(6, 0.0);
  double scale_a = 1.0, scale_b = 1.0;
  pc::DistanceRequest dreq;
  bool all_contacts = false, json = false;
  app.add_option("mesh_a", path_a, "First mesh file (STL, OBJ, DAE, PLY)")->required();
  app.add_option("mesh_b", path_b, "Second mesh file")->required();
  app.add_option("--pose-a", pose_a, "Pose of A: x y z roll pitch yaw")->expected(6);
  app.add_option("--pose-b", pose_b, "Pose of B: x y z roll pitch yaw")->expected(6);
  app.add_option("--scale-a", scale_a, "Uniform scale applied to A");
  app.add_option("--scale-b", scale_b, "Uniform scale applied to B");
  app.add_option("--rel-err", dreq.rel_err, "Relative error budget for the distance (0 = exact)");
  app.add_option("--abs-err", dreq.abs_err, "Absolute error budget for the distance (0 = exact)");
  app.add_flag("--all-contacts", all_contacts, "Report every intersecting triangle pair, not only the first");
  app.add_flag("--json", json, "Print one JSON object instead of text");
  CLI11_PARSE(app, argc, argv);

  auto load = [](const std::string& path, double scale) -> pc::Result<pc::Geometry> {
    pc::MeshLoadOptions opt;
    opt.scale = Vec3::Constant(scale);
    auto mesh = pc::LoadMesh(path, opt);
    if (!mesh.ok()) return mesh.error();
    auto model = pc::BuildMeshModel(std::move(mesh).value(), path);
    if (!model.ok()) return model.error();
    pc::Geometry g;
    g.mesh = std::move(model).value();
    return g;
  };
  const auto t_load = std::chrono::steady_clock::now();
  auto a = load(path_a, scale_a);
  auto b = load(path_b, scale_b);
  const double load_us = Micros(t_load);
  for (const auto* r : {&a, &b}) {
    if (!r->ok()) {
      std::cerr << "error: " << r->error().message << "\n";
      return 2;
    }
  }
  const RigidTransform X_WA = PoseFrom(pose_a), X_WB = PoseFrom(pose_b);

  pc::CollisionRequest creq;
  creq.all_contacts = all_contacts;
  auto t0 = std::chrono::steady_clock::now();
  const pc::Result<pc::CollisionResult> collision = pc::CollideGeometry(a.value(), X_WA, b.value(), X_WB, creq);
  const double collide_us = Micros(t0);
  if (!collision.ok()) {
    std::cerr << "error: " << collision.error().message << "\n";
    return 2;
  }
  const pc::CollisionResult& col = collision.value();
  t0 = std::chrono::steady_clock::now();
  const pc::Result<pc::DistanceResult> distance =
      pc::GeometryDistance(a.value(), X_WA, b.value(), X_WB, dreq);
  const double distance_us = Micros(t0);
  if (!distance.ok()) {
    std::cerr << "error: " << distance.error().message << "\n";
    return 2;
  }
  const pc::DistanceResult& dist = distance.value();

  if (json) {
    std::printf(
        "{\"mesh_a\": \"%s\", \"mesh_b\": \"%s\", \"triangles_a\": %d, \"triangles_b\": %d, \"colliding\": %s, "
        "\"contacts\": %zu, \"collide_bv_tests\": %lld, \"collide_triangle_tests\": %lld, \"lower_bound\": %.17g, "
        "\"upper_bound\": %.17g, \"p_WA\": [%.17g, %.17g, %.17g], \"p_WB\": [%.17g, %.17g, %.17g], "
        "\"distance_bv_tests\": %lld, \"distance_triangle_tests\": %lld, \"collide_us\": %.2f, \"distance_us\": %.2f}\n",
        path_a.c_str(), path_b.c_str(), Triangles(a.value()), Triangles(b.value()),
        col.colliding ? "true" : "false", col.contacts.size(), (long long)col.stats.bv_tests,
        (long long)col.stats.triangle_tests, dist.lower_bound, dist.upper_bound, dist.p_WA.x(), dist.p_WA.y(),
        dist.p_WA.z(), dist.p_WB.x(), dist.p_WB.y(), dist.p_WB.z(), (long long)dist.stats.bv_tests,
        (long long)dist.stats.triangle_tests, collide_us, distance_us);
    return 0;
  }
  std::printf("A: %s (%d triangles)\nB: %s (%d triangles)\nloaded and built in %.1f ms\n", path_a.c_str(),
              Triangles(a.value()), path_b.c_str(), Triangles(b.value()), load_us / 1e3);
  std::printf("collision: %s", col.colliding ? "YES" : "no");
  if (col.colliding) {
    std::printf(" (%zu triangle pair%s%s, first A#%d x B#%d)", col.contacts.size(), col.contacts.size() == 1 ? "" : "s",
                col.truncated ? ", truncated" : "", col.contacts[0].triangle_a, col.contacts[0].triangle_b);
  }
  std::printf("  [%lld BV tests, %lld triangle tests, %.1f us]\n", (long long)col.stats.bv_tests,
              (long long)col.stats.triangle_tests, collide_us);
  std::printf("distance: %.9g <= d <= %.9g (rel_err %g, abs_err %g)%s  [%lld BV tests, %lld triangle tests, %.1f us]\n",
              dist.lower_bound, dist.upper_bound, dreq.rel_err, dreq.abs_err, dist.intersecting ? " intersecting" : "",
              (long long)dist.stats.bv_tests, (long long)dist.stats.triangle_tests, distance_us);
  std::printf("nearest points: A %s on triangle %d, B %s on triangle %d\n", Fmt(dist.p_WA).c_str(),
              dist.triangles.triangle_a, Fmt(dist.p_WB).c_str(), dist.triangles.triangle_b);
  return 0;
}
