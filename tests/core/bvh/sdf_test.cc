#include "bvh/sdf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/test_util.h"
#include "narrowphase/triangle.h"

namespace proximity::core {
namespace {

using testing::Cases;

// ---- Independent oracles -------------------------------------------------------------------------

// Unsigned distance from p to the mesh surface: every triangle's closest point.
double BruteUnsigned(const Vec3& p, const TriangleMesh& m) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& t : m.triangles) {
    const Vec3 c = ClosestPointOnTriangle(p, m.vertices[t[0]], m.vertices[t[1]], m.vertices[t[2]]);
    best = std::min(best, (p - c).squaredNorm());
  }
  return std::sqrt(best);
}

// Inside test by ray parity: the number of triangles crossed by rays from p in three fixed, generic
// directions; the majority decides (a ray through an edge is a measure-zero accident).
bool InsideByRayParity(const Vec3& p, const TriangleMesh& m) {
  static const Vec3 kDirs[3] = {Vec3(0.3165, 0.7351, 0.5994).normalized(), Vec3(-0.6312, 0.2209, 0.7434).normalized(),
                                Vec3(0.1827, -0.8726, -0.4530).normalized()};
  int inside_votes = 0;
  for (const Vec3& d : kDirs) {
    int crossings = 0;
    for (const auto& t : m.triangles) {
      double s, u, v;
      if (RayTriangle(p, d, m.vertices[t[0]], m.vertices[t[1]], m.vertices[t[2]], &s, &u, &v) && s > 0) ++crossings;
    }
    inside_votes += crossings % 2;
  }
  return inside_votes >= 2;
}

// Exact signed distance (negative inside) by brute force.
double BruteSigned(const Vec3& p, const TriangleMesh& m) {
  const double d = BruteUnsigned(p, m);
  return InsideByRayParity(p, m) ? -d : d;
}

// Closed-form signed distance to the box {|x_i| <= e_i}.
double BoxSignedDistance(const Vec3& p, const Vec3& e) {
  const Vec3 q = p.cwiseAbs() - e;
  return q.cwiseMax(0.0).norm() + std::min(q.maxCoeff(), 0.0);
}

// Generalized winding number of the closed surface at p: the sum of the triangles' solid angles over
// 4 pi (Van Oosterom, Strackee 1983), written here apart from the library's.
double WindingNumber(const Vec3& p, const TriangleMesh& m) {
  double sum = 0.0;
  for (const auto& t : m.triangles) {
    const Vec3 a = m.vertices[t[0]] - p, b = m.vertices[t[1]] - p, c = m.vertices[t[2]] - p;
    const double la = a.norm(), lb = b.norm(), lc = c.norm();
    sum += 2.0 * std::atan2(a.dot(b.cross(c)), la * lb * lc + a.dot(b) * lc + b.dot(c) * la + c.dot(a) * lb);
  }
  return sum / (4.0 * M_PI);
}

// One mesh holding the triangles of both (two parts when they share no vertex).
TriangleMesh Concatenate(const TriangleMesh& a, const TriangleMesh& b) {
  TriangleMesh out = a;
  const int32_t offset = static_cast<int32_t>(a.vertices.size());
  out.vertices.insert(out.vertices.end(), b.vertices.begin(), b.vertices.end());
  for (auto t : b.triangles) out.triangles.push_back({t[0] + offset, t[1] + offset, t[2] + offset});
  return out;
}

TriangleMesh Moved(TriangleMesh m, const Vec3& offset) {
  for (Vec3& v : m.vertices) v += offset;
  return m;
}

TriangleMesh Reversed(TriangleMesh m) {
  for (auto& t : m.triangles) std::swap(t[1], t[2]);
  return m;
}

// Neighbouring nodes differ by at most h: the node values come from a 1-Lipschitz function.
void ExpectNodesLipschitz(const SignedDistanceMap& map) {
  const auto& c = map.cells();
  const double limit = map.cell_size() * (1 + 1e-12) + 2 * map.node_rounding();
  for (int k = 0; k <= c[2]; ++k)
    for (int j = 0; j <= c[1]; ++j)
      for (int i = 0; i <= c[0]; ++i) {
        const double v = map.node_value(i, j, k);
        if (i < c[0]) {
          ASSERT_LE(std::abs(map.node_value(i + 1, j, k) - v), limit) << i << " " << j << " " << k;
        }
        if (j < c[1]) {
          ASSERT_LE(std::abs(map.node_value(i, j + 1, k) - v), limit) << i << " " << j << " " << k;
        }
        if (k < c[2]) {
          ASSERT_LE(std::abs(map.node_value(i, j, k + 1) - v), limit) << i << " " << j << " " << k;
        }
      }
}

std::shared_ptr<const SignedDistanceMap> BuildOrDie(const TriangleMesh& mesh, int cells, SdfBuildOptions options = {},
                                                    const std::string& name = "mesh") {
  auto r = SignedDistanceMap::Build(mesh, cells, options, name);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? r.value() : nullptr;
}

TriangleMesh Box234() { return testing::LoadMeshOrDie(testing::TestDataDir() + "/box_2x3x4.ply"); }

std::vector<std::pair<std::string, TriangleMesh>> PandaLinks() {
  std::vector<std::pair<std::string, TriangleMesh>> out;
  const std::string root = testing::SharedDataDir();
  if (root.empty()) return out;
  const std::filesystem::path dir =
      std::filesystem::path(root) / "robots/panda/moveit_resources_panda_description/meshes/collision";
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".stl") {
      out.emplace_back(entry.path().filename().string(), testing::LoadMeshOrDie(entry.path().string()));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

Vec3 UniformIn(std::mt19937_64& rng, const Aabb& box) {
  Vec3 p;
  for (int a = 0; a < 3; ++a) p[a] = std::uniform_real_distribution<double>(box.min[a], box.max[a])(rng);
  return p;
}

// ---- Build checks ----------------------------------------------------------------------------------

void ExpectBuildError(const TriangleMesh& mesh, int cells, const SdfBuildOptions& options,
                      const std::vector<std::string>& fragments) {
  auto r = SignedDistanceMap::Build(mesh, cells, options, "the_mesh");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  for (const std::string& f : fragments) EXPECT_NE(r.error().message.find(f), std::string::npos) << r.error().message;
}

TEST(SignedDistanceMap, RejectsOpenMeshes) {
  TriangleMesh box = Box234();
  ASSERT_EQ(box.triangles.size(), 12u);
  box.triangles.pop_back();
  ExpectBuildError(box, 16, {}, {"the_mesh", "not closed", "3 boundary edges", "0 non-manifold", "e.g. vertices"});

  const TriangleMesh quad = testing::LoadMeshOrDie(testing::TestDataDir() + "/quad_and_line.obj");
  ExpectBuildError(quad, 16, {}, {"4 boundary edges"});
}

TEST(SignedDistanceMap, RejectsInconsistentNonManifoldAndInwardMeshes) {
  TriangleMesh flipped_one = Box234();
  std::swap(flipped_one.triangles[3][1], flipped_one.triangles[3][2]);
  ExpectBuildError(flipped_one, 16, {}, {"0 boundary edges", "3 edges used twice in the same direction", "triangle 3"});

  TriangleMesh doubled = Box234();
  doubled.triangles.push_back(doubled.triangles[0]);
  ExpectBuildError(doubled, 16, {}, {"non-manifold", "(3 triangles)"});

  TriangleMesh inward = Box234();
  for (auto& t : inward.triangles) std::swap(t[1], t[2]);
  ExpectBuildError(inward, 16, {}, {"face inward", "signed volume"});

  // Two copies of one triangle facing each other: every edge is shared correctly, but nothing is enclosed.
  TriangleMesh flat;
  flat.vertices = {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0)};
  flat.triangles = {{0, 1, 2}, {0, 2, 1}};
  ExpectBuildError(flat, 16, {}, {"encloses no volume"});

  TriangleMesh zero_area = Box234();
  zero_area.vertices.push_back(zero_area.vertices[0]);  // A vertex repeated in place: zero area.
  zero_area.triangles.push_back({0, 8, 1});
  ExpectBuildError(zero_area, 16, {}, {"triangle 12", "zero area"});
}

TEST(SignedDistanceMap, RejectsNonFiniteVerticesAndBadOptions) {
  TriangleMesh nan = Box234();
  nan.vertices[5].y() = std::numeric_limits<double>::quiet_NaN();
  ExpectBuildError(nan, 16, {}, {"the_mesh", "vertex 5", "non-finite"});

  const TriangleMesh box = Box234();
  ExpectBuildError(box, 1, {}, {"cells", "got 1"});
  ExpectBuildError(box, 5000, {}, {"cells"});
  SdfBuildOptions o;
  o.padding = -0.1;
  ExpectBuildError(box, 16, o, {"padding"});
  o.padding = std::numeric_limits<double>::quiet_NaN();
  ExpectBuildError(box, 16, o, {"padding"});
  o = {};
  o.sample_spacing = 0.0;
  ExpectBuildError(box, 16, o, {"sample_spacing"});
  o = {};
  o.num_threads = -1;
  ExpectBuildError(box, 16, o, {"num_threads"});
  o = {};
  o.sample_spacing = 1e-7;
  auto r = SignedDistanceMap::Build(box, 16, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kResourceExhausted) << r.error().message;
}

TEST(SignedDistanceMap, GridCoversThePaddedBoxWithCubicCells) {
  const TriangleMesh box = Box234();  // 2 x 3 x 4.
  SdfBuildOptions o;
  o.padding = 0.5;
  const auto map = BuildOrDie(box, 20, o);
  ASSERT_TRUE(map);
  EXPECT_DOUBLE_EQ(map->cell_size(), 5.0 / 20);  // (4 + 2 * 0.5) / 20.
  EXPECT_EQ(map->cells()[2], 20);
  EXPECT_EQ(map->cells()[0], 12);  // ceil(3 / 0.25).
  EXPECT_EQ(map->cells()[1], 16);  // ceil(4 / 0.25).
  const Aabb g = map->grid_box();
  for (int a = 0; a < 3; ++a) {
    EXPECT_LE(g.min[a], map->mesh_box().min[a] - 0.5 + 1e-12);
    EXPECT_GE(g.max[a], map->mesh_box().max[a] + 0.5 - 1e-12);
  }
  EXPECT_EQ(map->build_stats().nodes, int64_t{13} * 17 * 21);
  EXPECT_GE(map->memory_bytes(), sizeof(double) * 13 * 17 * 21 + map->samples().size() * sizeof(SdfSample));
}

// Every node (or a random subset) against the brute-force signed distance.
void ExpectNodesExact(const SignedDistanceMap& map, const TriangleMesh& mesh, int max_checks, uint64_t seed) {
  const auto& c = map.cells();
  const int64_t total = int64_t{c[0] + 1} * (c[1] + 1) * (c[2] + 1);
  std::mt19937_64 rng(seed);
  int checked = 0, inside = 0;
  for (int64_t n = 0; n < std::min<int64_t>(total, max_checks); ++n) {
    int64_t idx = total <= max_checks ? n : std::uniform_int_distribution<int64_t>(0, total - 1)(rng);
    const int i = static_cast<int>(idx % (c[0] + 1));
    idx /= c[0] + 1;
    const int j = static_cast<int>(idx % (c[1] + 1));
    const int k = static_cast<int>(idx / (c[1] + 1));
    const Vec3 p = map.node_position(i, j, k);
    const double got = map.node_value(i, j, k);
    const double d = BruteUnsigned(p, mesh);
    ASSERT_NEAR(std::abs(got), d, 1e-9) << "node " << i << " " << j << " " << k;
    if (d > 1e-9) {
      const bool in = InsideByRayParity(p, mesh);
      ASSERT_EQ(got < 0, in) << "sign at node " << i << " " << j << " " << k << " value " << got;
      inside += in;
    }
    ++checked;
  }
  EXPECT_GT(inside, 0) << "no node inside the mesh was checked";
  EXPECT_GT(checked, 0);
}

TEST(SignedDistanceMap, NodesAreExactSignedDistances) {
  {
    const TriangleMesh box = Box234();
    const auto map = BuildOrDie(box, 24);
    ASSERT_TRUE(map);
    ExpectNodesExact(*map, box, 1 << 30, 1);
    // Closed form too.
    for (int k = 0; k <= map->cells()[2]; k += 3)
      for (int j = 0; j <= map->cells()[1]; ++j)
        for (int i = 0; i <= map->cells()[0]; ++i)
          ASSERT_NEAR(map->node_value(i, j, k), BoxSignedDistance(map->node_position(i, j, k), Vec3(1, 1.5, 2)), 1e-12);
  }
  {
    const TriangleMesh sphere = MakeIcosphereMesh(0.5, 2);
    const auto map = BuildOrDie(sphere, 24);
    ASSERT_TRUE(map);
    ExpectNodesExact(*map, sphere, Cases(2000), 2);
  }
  {
    // Not convex, and with a hole through it: the sign must come from the right side everywhere.
    const TriangleMesh torus = MakeTorusMesh(0.4, 0.15, 24, 12);
    const auto map = BuildOrDie(torus, 32);
    ASSERT_TRUE(map);
    ExpectNodesExact(*map, torus, Cases(1500), 3);
    EXPECT_GT(map->node_value(16, 16, map->cells()[2] / 2), 0.2) << "the hole is outside";
  }
}

TEST(SignedDistanceMap, OverlappingPartsAreTheirUnion) {
  // Two boxes that overlap, as one mesh of two parts: the map is the smaller of the two box distances.
  const Vec3 ea(0.5, 0.5, 0.5), eb(0.3, 0.3, 0.7), ob(0.4, 0.3, 0.1);
  const TriangleMesh mesh = Concatenate(MakeBoxMesh(2 * ea), Moved(MakeBoxMesh(2 * eb), ob));
  const auto map = BuildOrDie(mesh, 32);
  ASSERT_TRUE(map);
  EXPECT_EQ(map->build_stats().parts, 2);
  const auto exact = [&](const Vec3& p) { return std::min(BoxSignedDistance(p, ea), BoxSignedDistance(p - ob, eb)); };
  int inside = 0;
  for (int k = 0; k <= map->cells()[2]; ++k)
    for (int j = 0; j <= map->cells()[1]; ++j)
      for (int i = 0; i <= map->cells()[0]; ++i) {
        const Vec3 p = map->node_position(i, j, k);
        ASSERT_NEAR(map->node_value(i, j, k), exact(p), 1e-12) << p.transpose();
        inside += exact(p) < 0;
      }
  EXPECT_GT(inside, 100);
  ExpectNodesLipschitz(*map);
  // Samples on a box face inside the other box are not on the union's surface, and are dropped.
  EXPECT_GT(map->build_stats().internal_samples_dropped, 0);
  for (const SdfSample& s : map->samples()) ASSERT_NEAR(exact(s.p_MS), 0.0, 1e-12) << s.p_MS.transpose();
  std::mt19937_64 rng(31);
  for (int c = 0; c < Cases(500); ++c) {
    const Vec3 p = UniformIn(rng, map->grid_box());
    const SdfEvaluation e = map->Evaluate(p);
    ASSERT_LE(std::abs(e.value - exact(p)), e.error_bound + 1e-12);
  }
}

TEST(SignedDistanceMap, NestedAndFlippedParts) {
  // A hollow box: an outward outer surface and an inward inner one. The signed distance is exact.
  const Vec3 outer(1.0, 0.8, 0.6), inner(0.5, 0.4, 0.3);
  const TriangleMesh hollow = Concatenate(MakeBoxMesh(2 * outer), Reversed(MakeBoxMesh(2 * inner)));
  const auto map = BuildOrDie(hollow, 32);
  ASSERT_TRUE(map);
  EXPECT_EQ(map->build_stats().parts, 2);
  for (int k = 0; k <= map->cells()[2]; ++k)
    for (int j = 0; j <= map->cells()[1]; ++j)
      for (int i = 0; i <= map->cells()[0]; ++i) {
        const Vec3 p = map->node_position(i, j, k);
        const double exact = std::max(BoxSignedDistance(p, outer), -BoxSignedDistance(p, inner));
        ASSERT_NEAR(map->node_value(i, j, k), exact, 1e-12) << p.transpose();
      }
  EXPECT_GT(map->Value(Vec3::Zero()), 0.29) << "the cavity is outside";

  // A big box with a small inward box that cuts through its +x face: inside is where the winding
  // number is at least 1, and the value is the distance to the nearest triangle with that sign.
  const TriangleMesh cut = Concatenate(MakeBoxMesh(Vec3(1, 1, 1)), Moved(Reversed(MakeBoxMesh(Vec3(0.3, 0.3, 0.3))), Vec3(0.5, 0, 0)));
  const auto cut_map = BuildOrDie(cut, 24);
  ASSERT_TRUE(cut_map);
  ExpectNodesLipschitz(*cut_map);
  std::mt19937_64 rng(32);
  int inside = 0, notch = 0;
  const auto& c = cut_map->cells();
  for (int n = 0; n < Cases(3000); ++n) {
    const int i = static_cast<int>(rng() % (c[0] + 1)), j = static_cast<int>(rng() % (c[1] + 1)),
              k = static_cast<int>(rng() % (c[2] + 1));
    const Vec3 p = cut_map->node_position(i, j, k);
    const double d = BruteUnsigned(p, cut);
    const double w = WindingNumber(p, cut);
    const double v = cut_map->node_value(i, j, k);
    ASSERT_NEAR(std::abs(v), d, 1e-12);
    if (d > 1e-9) {
      ASSERT_EQ(v < 0, w > 0.5) << p.transpose() << " winding " << w;
    }
    inside += w > 0.5;
    // Inside the big box but within the inward box: cut away.
    if ((p - Vec3(0.5, 0, 0)).cwiseAbs().maxCoeff() < 0.149 && p.x() < 0.499) {
      ++notch;
      EXPECT_GT(v, 0.0) << p.transpose();
    }
  }
  EXPECT_GT(inside, 0);
  EXPECT_GT(notch, 0) << "no node in the notch was checked";
  EXPECT_GT(cut_map->Value(Vec3(0.45, 0, 0)), 0.0) << "the notch cut into the +x face is outside";
}

TEST(SignedDistanceMap, Ur5LinksWithOverlappingParts) {
  // UR5 collision meshes are unions of overlapping closed shells, some with small inward parts.
  const std::string root = testing::SharedDataDir();
  PROX_REQUIRE_DIR(root, "../shared/data");
  const std::filesystem::path dir = std::filesystem::path(root) / "robots/ur5/ur_description/meshes/ur5/collision";
  PROX_REQUIRE_DIR(std::filesystem::is_directory(dir) ? dir.string() : std::string(), dir.string());
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".stl") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 5u);
  std::mt19937_64 rng(33);
  int multi_part = 0;
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    const TriangleMesh mesh = testing::LoadMeshOrDie(file.string());
    const auto map = BuildOrDie(mesh, 24, {}, file.string());
    ASSERT_TRUE(map);
    multi_part += map->build_stats().parts > 1;
    ExpectNodesLipschitz(*map);
    const auto& c = map->cells();
    int inside = 0;
    for (int n = 0; n < Cases(250); ++n) {
      const int i = static_cast<int>(rng() % (c[0] + 1)), j = static_cast<int>(rng() % (c[1] + 1)),
                k = static_cast<int>(rng() % (c[2] + 1));
      const Vec3 p = map->node_position(i, j, k);
      const double d = BruteUnsigned(p, mesh);
      const double v = map->node_value(i, j, k);
      if (d < 1e-9) continue;
      const bool in = WindingNumber(p, mesh) > 0.5;
      ASSERT_EQ(v < 0, in) << p.transpose();
      // Outside: the distance to the surface. Inside: never less deep than the nearest triangle.
      if (in) {
        ASSERT_GE(-v, d - 1e-12);
        ++inside;
      } else {
        ASSERT_NEAR(v, d, 1e-12);
      }
    }
    EXPECT_GT(inside, 0);
  }
  EXPECT_GE(multi_part, 3);
}

TEST(SignedDistanceMap, ThreadCountDoesNotChangeTheMap) {
  const TriangleMesh torus = MakeTorusMesh(0.4, 0.15, 24, 12);
  SdfBuildOptions one, three;
  one.num_threads = 1;
  three.num_threads = 3;
  const auto a = BuildOrDie(torus, 24, one), b = BuildOrDie(torus, 24, three);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->build_stats().threads, 1);
  EXPECT_EQ(b->build_stats().threads, 3);
  for (int k = 0; k <= a->cells()[2]; ++k)
    for (int j = 0; j <= a->cells()[1]; ++j)
      for (int i = 0; i <= a->cells()[0]; ++i) ASSERT_EQ(a->node_value(i, j, k), b->node_value(i, j, k));
  ASSERT_EQ(a->samples().size(), b->samples().size());
}

// Random points inside the grid (uniform, and near the surface) and outside it: the exact signed
// distance lies within Evaluate's bound, which inside the grid is at most (sqrt(3) / 2) h.
struct BoundCheck {
  double worst_error_over_h = 0.0;   // max |value - exact| / h
  double worst_error_over_bound = 0.0;
  double mean_bound_over_h = 0.0;
};

BoundCheck ExpectWithinBound(const SignedDistanceMap& map, const TriangleMesh& mesh, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  BoundCheck out;
  const Aabb grid = map.grid_box();
  Aabb wide;
  wide.min = grid.min - grid.half_extents();
  wide.max = grid.max + grid.half_extents();
  const double h = map.cell_size();
  std::uniform_real_distribution<double> near(-2.0, 2.0);
  std::uniform_int_distribution<std::size_t> pick(0, map.samples().size() - 1);
  int outside = 0;
  for (int c = 0; c < n; ++c) {
    Vec3 p;
    switch (c % 3) {
      case 0: p = UniformIn(rng, grid); break;
      case 1: {
        const SdfSample& s = map.samples()[pick(rng)];
        p = s.p_MS + near(rng) * h * s.n_M + 0.3 * h * Vec3(near(rng), near(rng), near(rng));
        break;
      }
      default: p = UniformIn(rng, wide); break;
    }
    const SdfEvaluation e = map.Evaluate(p);
    const double exact = BruteSigned(p, mesh);
    const double err = std::abs(e.value - exact);
    // The oracle itself rounds at about 1e-16 of the coordinates.
    EXPECT_LE(err, e.error_bound + 1e-12) << "at " << p.transpose() << " value " << e.value << " exact " << exact;
    EXPECT_NEAR(map.Value(p), e.value, 1e-15 * (1 + std::abs(e.value)));
    const bool in_grid = (p.array() >= grid.min.array()).all() && (p.array() <= grid.max.array()).all();
    EXPECT_EQ(e.inside_grid, in_grid);
    if (in_grid) {
      EXPECT_LE(e.error_bound, map.interpolation_error_bound());
      out.worst_error_over_h = std::max(out.worst_error_over_h, err / h);
    } else {
      ++outside;
      EXPECT_GT(e.value, 0.0);
    }
    out.worst_error_over_bound = std::max(out.worst_error_over_bound, err / e.error_bound);
    out.mean_bound_over_h += e.error_bound / h / n;
  }
  EXPECT_GT(outside, 0);
  EXPECT_LE(out.worst_error_over_h, 0.5 * std::sqrt(3.0));
  return out;
}

TEST(SignedDistanceMap, ValuesWithinTheDocumentedBound) {
  const std::vector<std::pair<std::string, TriangleMesh>> meshes = {
      {"box", Box234()}, {"icosphere", MakeIcosphereMesh(0.5, 2)}, {"torus", MakeTorusMesh(0.4, 0.15, 24, 12)}};
  uint64_t seed = 10;
  for (const auto& [name, mesh] : meshes) {
    for (int cells : {16, 32}) {
      const auto map = BuildOrDie(mesh, cells);
      ASSERT_TRUE(map);
      const BoundCheck b = ExpectWithinBound(*map, mesh, Cases(800), seed++);
      std::cout << name << " N=" << cells << ": worst |error| / h " << b.worst_error_over_h
                << ", worst |error| / bound " << b.worst_error_over_bound << ", mean bound / h "
                << b.mean_bound_over_h << "\n";
    }
  }
}

TEST(SignedDistanceMap, ExactWhereTheDistanceIsLinear) {
  // Near the middle of the box's +z face every corner of the cells around is closest to that face, so
  // phi = z - 2 there and the trilinear interpolant reproduces it and its gradient exactly.
  const auto map = BuildOrDie(Box234(), 32);
  ASSERT_TRUE(map);
  ASSERT_LT(map->cell_size(), 0.16);
  std::mt19937_64 rng(4);
  Aabb region;
  region.min = Vec3(-0.2, -0.2, 1.8);
  region.max = Vec3(0.2, 0.2, 2.2);
  for (int c = 0; c < Cases(500); ++c) {
    const Vec3 p = UniformIn(rng, region);
    const SdfEvaluation e = map->Evaluate(p);
    ASSERT_NEAR(e.value, p.z() - 2.0, 1e-12);
    ASSERT_LT((e.gradient_M - Vec3::UnitZ()).norm(), 1e-12) << e.gradient_M.transpose();
  }
}

TEST(SignedDistanceMap, GradientIsTheInterpolantsDerivative) {
  const auto map = BuildOrDie(MakeTorusMesh(0.4, 0.15, 24, 12), 24);
  ASSERT_TRUE(map);
  std::mt19937_64 rng(5);
  const double h = map->cell_size();
  const Aabb grid = map->grid_box();
  for (int c = 0; c < Cases(400); ++c) {
    Vec3 p = UniformIn(rng, grid);
    // Stay away from cell faces, where the interpolant's derivative jumps.
    for (int a = 0; a < 3; ++a) {
      double u = (p[a] - grid.min[a]) / h;
      u = std::floor(u) + std::clamp(u - std::floor(u), 0.1, 0.9);
      p[a] = grid.min[a] + std::min(u, map->cells()[a] - 0.1) * h;
    }
    const Vec3 g = map->Gradient(p);
    const double step = 1e-5 * h;
    for (int a = 0; a < 3; ++a) {
      Vec3 d = Vec3::Zero();
      d[a] = step;
      const double fd = (map->Value(p + d) - map->Value(p - d)) / (2 * step);
      ASSERT_NEAR(g[a], fd, 1e-6) << "axis " << a;
    }
    EXPECT_LE(g.norm(), std::sqrt(3.0) + 1e-9);
  }
  // Outside the grid the value grows with the distance to it, along the gradient.
  const Vec3 far = grid.max + Vec3(1.0, 0.0, 0.0);
  const SdfEvaluation e = map->Evaluate(far);
  EXPECT_FALSE(e.inside_grid);
  EXPECT_NEAR(e.gradient_M.x(), 1.0, 1e-12);
  EXPECT_GE(e.value, 1.0);
  // Non-finite points give +infinity, never NaN.
  const SdfEvaluation bad = map->Evaluate(Vec3(std::nan(""), 0, 0));
  EXPECT_EQ(bad.value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(map->Value(Vec3(0, std::numeric_limits<double>::infinity(), 0)), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(map->Gradient(Vec3(std::nan(""), 0, 0)).isZero());
  // Huge but finite coordinates stay finite.
  EXPECT_TRUE(std::isfinite(map->Value(Vec3(1e300, -1e300, 0))));
}

TEST(SignedDistanceMap, SamplesCoverTheSurfaceWithOutwardNormals) {
  const TriangleMesh sphere = MakeIcosphereMesh(0.5, 3);
  SdfBuildOptions o;
  o.sample_spacing = 0.04;
  const auto map = BuildOrDie(sphere, 32, o);
  ASSERT_TRUE(map);
  const auto& samples = map->samples();
  // Vertices + edge points + one face point per spacing^2 of area.
  double area = 0.0;
  for (const auto& t : sphere.triangles) {
    area += 0.5 * (sphere.vertices[t[1]] - sphere.vertices[t[0]]).cross(sphere.vertices[t[2]] - sphere.vertices[t[0]]).norm();
  }
  EXPECT_GE(samples.size(), sphere.vertices.size() + static_cast<std::size_t>(area / (0.04 * 0.04)) - 1);
  for (std::size_t s = 0; s < samples.size(); s += (s % 7 == 0 ? 1 : 5)) {
    ASSERT_LT(BruteUnsigned(samples[s].p_MS, sphere), 1e-12) << "sample " << s;
    ASSERT_NEAR(samples[s].n_M.norm(), 1.0, 1e-12);
    ASSERT_GT(samples[s].n_M.dot(samples[s].p_MS.normalized()), 0.99) << "sample " << s << " normal is not outward";
  }
  // The hierarchy: the root holds every sample, children split their parent's run, leaves partition
  // the samples, and every sphere holds its node's samples.
  const auto& tree = map->sample_tree();
  ASSERT_FALSE(tree.empty());
  EXPECT_EQ(tree[0].begin, 0);
  EXPECT_EQ(static_cast<std::size_t>(tree[0].end), samples.size());
  std::vector<int> seen(samples.size(), 0);
  for (const SdfSampleNode& n : tree) {
    for (int32_t s = n.begin; s < n.end; ++s) ASSERT_LE((samples[s].p_MS - n.bound.center).norm(), n.bound.radius);
    if (n.first_child < 0) {
      for (int32_t s = n.begin; s < n.end; ++s) ++seen[s];
    } else {
      ASSERT_EQ(tree[n.first_child].begin, n.begin);
      ASSERT_EQ(tree[n.first_child].end, tree[n.first_child + 1].begin);
      ASSERT_EQ(tree[n.first_child + 1].end, n.end);
    }
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
  // Random surface points (area-uniform) have a sample within about the spacing.
  std::mt19937_64 rng(6);
  std::uniform_int_distribution<std::size_t> tri(0, sphere.triangles.size() - 1);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  double worst = 0.0;
  for (int c = 0; c < Cases(400); ++c) {
    const auto& t = sphere.triangles[tri(rng)];
    double u = u01(rng), v = u01(rng);
    if (u + v > 1) u = 1 - u, v = 1 - v;
    const Vec3 p = sphere.vertices[t[0]] + u * (sphere.vertices[t[1]] - sphere.vertices[t[0]]) +
                   v * (sphere.vertices[t[2]] - sphere.vertices[t[0]]);
    double nearest = std::numeric_limits<double>::infinity();
    for (const SdfSample& s : samples) nearest = std::min(nearest, (s.p_MS - p).norm());
    worst = std::max(worst, nearest);
  }
  std::cout << "largest distance from a surface point to its nearest sample: " << worst / 0.04 << " spacings\n";
  EXPECT_LT(worst, 1.0 * 0.04);
  // Deterministic.
  const auto again = BuildOrDie(sphere, 32, o);
  ASSERT_TRUE(again);
  ASSERT_EQ(again->samples().size(), samples.size());
  for (std::size_t s = 0; s < samples.size(); ++s) ASSERT_EQ(again->samples()[s].p_MS, samples[s].p_MS);
}

TEST(SignedDistanceMap, PandaLinks) {
  PROX_REQUIRE_DIR(testing::SharedDataDir(), "../shared/data");
  const auto links = PandaLinks();
  PROX_REQUIRE_DIR(links.empty() ? std::string() : std::string("ok"), "../shared/data/robots/panda collision meshes");
  uint64_t seed = 20;
  for (const auto& [name, mesh] : links) {
    SCOPED_TRACE(name);
    const auto map = BuildOrDie(mesh, 32, {}, name);
    ASSERT_TRUE(map);
    ExpectNodesExact(*map, mesh, Cases(600), seed++);
    ExpectNodesLipschitz(*map);
    EXPECT_EQ(map->build_stats().parts, 1);
    const BoundCheck b = ExpectWithinBound(*map, mesh, Cases(300), seed++);
    std::cout << name << " N=32: " << map->cells()[0] << "x" << map->cells()[1] << "x" << map->cells()[2]
              << " cells, h " << map->cell_size() << ", worst |error| / h " << b.worst_error_over_h << "\n";
  }
}

TEST(SignedDistanceMap, BuildCostForPandaLinks) {
  PROX_REQUIRE_DIR(testing::SharedDataDir(), "../shared/data");
  const auto links = PandaLinks();
  PROX_REQUIRE_DIR(links.empty() ? std::string() : std::string("ok"), "../shared/data/robots/panda collision meshes");
  // Timings are printed, never asserted (the benchmark covers every link at 32, 64 and 128). Every
  // link at N = 32, three at 64; one of each under a sanitizer.
  for (int cells : {32, 64}) {
    const std::size_t count =
        testing::kSanitizedSlowdown != 1 ? 1 : (cells == 32 ? links.size() : std::min<std::size_t>(3, links.size()));
    double seconds = 0.0;
    std::size_t bytes = 0, samples = 0;
    for (std::size_t l = 0; l < count; ++l) {
      const auto map = BuildOrDie(links[l].second, cells, {}, links[l].first);
      ASSERT_TRUE(map);
      const SdfBuildStats& s = map->build_stats();
      std::cout << links[l].first << " N=" << cells << ": " << s.seconds * 1e3 << " ms on " << s.threads
                << " threads, " << map->memory_bytes() / 1024.0 << " KiB, " << map->samples().size() << " samples, "
                << static_cast<double>(s.box_tests) / s.nodes << " box and "
                << static_cast<double>(s.triangle_tests) / s.nodes << " triangle tests per node, "
                << s.sign_fallbacks << " winding-number signs\n";
      EXPECT_GT(s.nodes, 0);
      EXPECT_GE(s.triangle_tests, s.nodes);
      seconds += s.seconds;
      bytes += map->memory_bytes();
      samples += map->samples().size();
    }
    std::cout << count << " Panda links at N=" << cells << ": " << seconds * 1e3 << " ms, " << bytes / 1024.0
              << " KiB, " << samples << " samples in all\n";
  }
}

// ---- Contacts --------------------------------------------------------------------------------------

// Each contact's depth against the exact depth of its sample in the other (posed) mesh.
// At most `max_checks` contacts, spread over the list, are checked.
void ExpectContactsExact(const SdfContactResult& r, const SignedDistanceMap& a, const TriangleMesh& mesh_a,
                         const RigidTransform& X_WA, const SignedDistanceMap& b, const TriangleMesh& mesh_b,
                         const RigidTransform& X_WB, double margin, int max_checks = 1 << 30) {
  const std::size_t stride = std::max<std::size_t>(1, r.contacts.size() / std::max(1, max_checks));
  for (std::size_t k = 0; k < r.contacts.size(); k += stride) {
    const SdfContact& c = r.contacts[k];
    const SignedDistanceMap& from = c.sample_of_b ? b : a;
    const RigidTransform& X_WF = c.sample_of_b ? X_WB : X_WA;
    ASSERT_LT((X_WF * from.samples()[c.sample].p_MS - c.p_W).norm(), 1e-12);
    const TriangleMesh& other = c.sample_of_b ? mesh_a : mesh_b;
    const RigidTransform& X_WO = c.sample_of_b ? X_WA : X_WB;
    const double exact = -BruteSigned(X_WO.inverse() * c.p_W, other);
    EXPECT_LE(std::abs(c.depth - exact), c.error_bound + 1e-12) << "depth " << c.depth << " exact " << exact;
    EXPECT_GT(-c.depth, -1e300);
    EXPECT_LT(-c.depth, margin);
    EXPECT_NEAR(c.normal_W.norm(), 1.0, 1e-12);
  }
}

TEST(SdfContacts, SpheresPenetrateByTheClosedFormDepth) {
  const double ra = 0.5, rb = 0.3, penetration = 0.1;
  const TriangleMesh ma = MakeIcosphereMesh(ra, 3), mb = MakeIcosphereMesh(rb, 3);
  const auto a = BuildOrDie(ma, 48), b = BuildOrDie(mb, 48);
  ASSERT_TRUE(a && b);
  // The inscribed polyhedra lie inside their spheres by at most the sagitta of their largest face.
  const auto sagitta = [](const TriangleMesh& m, double r) {
    double s = 0.0;
    for (const auto& t : m.triangles) {
      s = std::max(s, r - ((m.vertices[t[0]] + m.vertices[t[1]] + m.vertices[t[2]]) / 3).norm());
    }
    return s;
  };
  const double sag = sagitta(ma, ra) + sagitta(mb, rb);
  std::mt19937_64 rng(7);
  for (int c = 0; c < Cases(4); ++c) {
    RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    RigidTransform X_WB;
    X_WB.R = testing::RandomRotation(rng);
    const Vec3 dir = testing::RandomRotation(rng).col(0);
    X_WB.p = X_WA.p + (ra + rb - penetration) * dir;
    SdfContactResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, SdfContacts(*a, X_WA, *b, X_WB, {}));
    ASSERT_FALSE(r.contacts.empty());
    EXPECT_FALSE(r.truncated);
    ExpectContactsExact(r, *a, ma, X_WA, *b, mb, X_WB, 0.0, Cases(100));
    for (std::size_t k = 1; k < r.contacts.size(); ++k) ASSERT_GE(r.contacts[k - 1].depth, r.contacts[k].depth);
    const SdfContact& deepest = r.contacts.front();
    // Samples near the deepest point are within a spacing s of it; the depth falls off as
    // s^2 (1/ra + 1/rb) / 2 there.
    const double s = std::max(a->sample_spacing(), b->sample_spacing());
    const double sampling = s * s * (1 / ra + 1 / rb) / 2;
    EXPECT_LE(deepest.depth, penetration + deepest.error_bound + 1e-12);
    EXPECT_GE(deepest.depth, penetration - sag - sampling - deepest.error_bound);
    // The chosen sample may sit up to sqrt(2 bound / (1/ra + 1/rb)) from the deepest point (its depth
    // is overestimated by up to the bound), so its normal may turn by that over rb.
    const double offset = std::sqrt(2 * deepest.error_bound / (1 / ra + 1 / rb)) + s;
    EXPECT_GT(deepest.normal_W.dot(dir), std::cos(offset / rb + 2 * b->cell_size() / rb))
        << "the normal points from A to B";
    std::cout << "spheres: " << r.contacts.size() << " contacts, deepest " << deepest.depth << " (closed form "
              << penetration << ", bound " << deepest.error_bound << "), normal error "
              << std::acos(std::min(1.0, deepest.normal_W.dot(dir))) << " rad; samples tested "
              << r.stats.samples_tested << " of " << a->samples().size() + b->samples().size() << "\n";
  }
}

TEST(SdfContacts, BoxIntoBox) {
  const Vec3 ea(0.5, 0.5, 0.5), eb(0.25, 0.25, 0.25);
  const TriangleMesh ma = MakeBoxMesh(2 * ea), mb = MakeBoxMesh(2 * eb);
  const auto a = BuildOrDie(ma, 32), b = BuildOrDie(mb, 32);
  ASSERT_TRUE(a && b);
  // B pushed 0.1 into A's +x face.
  const RigidTransform X_WA(Eigen::AngleAxisd(0.3, Vec3(1, 2, 3).normalized()).toRotationMatrix(), Vec3(0.2, -0.1, 0.4));
  const RigidTransform X_AB(Mat3::Identity(), Vec3(0.5 + 0.25 - 0.1, 0.05, -0.02));
  const RigidTransform X_WB = X_WA * X_AB;
  SdfContactResult r;
  PROX_ASSERT_OK_AND_ASSIGN(r, SdfContacts(*a, X_WA, *b, X_WB, {}));
  ASSERT_FALSE(r.contacts.empty());
  ExpectContactsExact(r, *a, ma, X_WA, *b, mb, X_WB, 0.0);
  int deep_face = 0;
  const Vec3 x_W = X_WA.R.col(0);
  for (const SdfContact& c : r.contacts) {
    // Closed form: the box signed distance of the sample in the other box's frame.
    const RigidTransform& X_WO = c.sample_of_b ? X_WA : X_WB;
    const double exact = -BoxSignedDistance(X_WO.inverse() * c.p_W, c.sample_of_b ? ea : eb);
    ASSERT_LE(std::abs(c.depth - exact), c.error_bound + 1e-12);
    ASSERT_LE(c.depth, 0.1 + c.error_bound + 1e-12);
    // Samples of B's face deep in A, away from its edges: A's distance is linear there, so the normal is
    // exactly A's +x axis.
    const Vec3 p_A = X_WA.inverse() * c.p_W;
    if (c.sample_of_b && std::abs(p_A.x() - 0.4) < 1e-9 && std::abs(p_A.y() - 0.05) < 0.15 &&
        std::abs(p_A.z() + 0.02) < 0.15) {
      ++deep_face;
      EXPECT_NEAR(c.depth, 0.1, 1e-9);
      EXPECT_LT((c.normal_W - x_W).norm(), 1e-9);
    }
  }
  EXPECT_GT(deep_face, 10);
  EXPECT_NEAR(r.contacts.front().depth, 0.1, 1e-9);
  // Samples of A inside B whose nearest face of B is clearly B's -x face: B moves along +x to separate.
  int of_a = 0;
  for (const SdfContact& c : r.contacts) {
    if (c.sample_of_b) continue;
    const Vec3 q = X_WB.inverse() * c.p_W;
    const double to_minus_x = q.x() + eb.x();
    double to_others = eb.x() - q.x();
    for (int axis = 1; axis < 3; ++axis) to_others = std::min(to_others, eb[axis] - std::abs(q[axis]));
    if (to_minus_x + 2 * b->cell_size() >= to_others) continue;
    ++of_a;
    EXPECT_LT((c.normal_W - x_W).norm(), 1e-9) << q.transpose();
  }
  EXPECT_GT(of_a, 0);
}

TEST(SdfContacts, MarginSeparationAndCompleteness) {
  const TriangleMesh ma = MakeIcosphereMesh(0.3, 2), mb = MakeBoxMesh(Vec3(0.4, 0.3, 0.5));
  const auto a = BuildOrDie(ma, 32), b = BuildOrDie(mb, 32);
  ASSERT_TRUE(a && b);
  const double bound = std::max(a->interpolation_error_bound(), b->interpolation_error_bound());
  std::mt19937_64 rng(8);
  int separated = 0, touching = 0;
  for (int c = 0; c < Cases(12); ++c) {
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.1), Vec3::Constant(0.1));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.6), Vec3::Constant(0.6));
    const double margin = std::uniform_real_distribution<double>(0.0, 0.1)(rng);
    SdfContactOptions o;
    o.margin = margin;
    SdfContactResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, SdfContacts(*a, X_WA, *b, X_WB, o));
    ExpectContactsExact(r, *a, ma, X_WA, *b, mb, X_WB, margin);
    const double distance = testing::BruteForceDistance(ma, X_WA, mb, X_WB);
    if (distance > margin + bound) {
      ++separated;
      EXPECT_TRUE(r.contacts.empty()) << "distance " << distance << " margin " << margin;
    }
    // Completeness: every sample within the margin by its interpolated value and its exact distance is
    // reported (pruning drops only samples whose exact distance is at least the margin).
    std::set<std::pair<bool, int32_t>> reported;
    for (const SdfContact& k : r.contacts) reported.insert({k.sample_of_b, k.sample});
    for (const bool of_b : {true, false}) {
      const SignedDistanceMap& from = of_b ? *b : *a;
      const SignedDistanceMap& in = of_b ? *a : *b;
      const TriangleMesh& other = of_b ? ma : mb;
      const RigidTransform X_IF = (of_b ? X_WA : X_WB).inverse() * (of_b ? X_WB : X_WA);
      for (int32_t s = 0; s < static_cast<int32_t>(from.samples().size()); ++s) {
        const Vec3 p_I = X_IF * from.samples()[s].p_MS;
        if (in.Value(p_I) >= margin) {
          ASSERT_FALSE(reported.count({of_b, s}));
          continue;
        }
        if (BruteSigned(p_I, other) < margin) {
          ASSERT_TRUE(reported.count({of_b, s})) << "a sample within the margin was dropped";
          ++touching;
        }
      }
    }
  }
  EXPECT_GT(separated, 0);
  EXPECT_GT(touching, 0);
}

TEST(SdfContacts, KeepsTheDeepestAndValidatesInput) {
  const auto a = BuildOrDie(MakeIcosphereMesh(0.5, 2), 32), b = BuildOrDie(MakeIcosphereMesh(0.3, 2), 32);
  ASSERT_TRUE(a && b);
  const RigidTransform X_WA;
  const RigidTransform X_WB(Mat3::Identity(), Vec3(0.6, 0, 0));
  SdfContactResult all, few;
  PROX_ASSERT_OK_AND_ASSIGN(all, SdfContacts(*a, X_WA, *b, X_WB, {}));
  ASSERT_GT(all.contacts.size(), 5u);
  SdfContactOptions o;
  o.max_contacts = 5;
  PROX_ASSERT_OK_AND_ASSIGN(few, SdfContacts(*a, X_WA, *b, X_WB, o));
  ASSERT_EQ(few.contacts.size(), 5u);
  EXPECT_TRUE(few.truncated);
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(few.contacts[k].depth, all.contacts[k].depth);
    EXPECT_EQ(few.contacts[k].sample, all.contacts[k].sample);
  }
  // Separated far beyond the margin: the whole sample sets are pruned at once.
  SdfContactResult none;
  PROX_ASSERT_OK_AND_ASSIGN(none, SdfContacts(*a, X_WA, *b, RigidTransform(Mat3::Identity(), Vec3(5, 0, 0)), {}));
  EXPECT_TRUE(none.contacts.empty());
  EXPECT_EQ(none.stats.samples_tested, 0);
  EXPECT_EQ(none.stats.nodes_tested, 2);
  EXPECT_EQ(none.stats.nodes_pruned, 2);

  RigidTransform bad;
  bad.p.x() = std::numeric_limits<double>::quiet_NaN();
  Status s = SdfContacts(*a, bad, *b, X_WB, {}).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("X_WA"), std::string::npos);
  bad = RigidTransform();
  bad.R(0, 0) = 2.0;
  EXPECT_FALSE(SdfContacts(*a, X_WA, *b, bad, {}).ok());
  o = {};
  o.margin = std::numeric_limits<double>::infinity();
  s = SdfContacts(*a, X_WA, *b, X_WB, o).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("margin"), std::string::npos);
  o = {};
  o.max_contacts = 0;
  s = SdfContacts(*a, X_WA, *b, X_WB, o).status();
  EXPECT_NE(s.error().message.find("max_contacts"), std::string::npos);
}

}  // namespace
}  // namespace proximity::core

namespace proximity::core {
namespace {

// Unsigned maps of open meshes (a box missing a face, a flat quad with a line): every value within its
// bound of the brute-force distance to the triangles, inside the grid and beyond; never negative; no
// samples; contacts refuse them.
TEST(SignedDistanceMap, UnsignedMapsOfOpenMeshes) {
  TriangleMesh open_box = Box234();
  open_box.triangles.pop_back();
  open_box.triangles.pop_back();
  const TriangleMesh quad = testing::LoadMeshOrDie(testing::TestDataDir() + "/quad_and_line.obj");
  std::mt19937_64 rng(41);
  for (const TriangleMesh* mesh : {static_cast<const TriangleMesh*>(&open_box), &quad}) {
    SdfBuildOptions options;
    options.unsigned_distance = true;
    const auto model = testing::ValueOrFail(MeshModel::Build(*mesh));
    const auto map = testing::ValueOrFail(SignedDistanceMap::Build(*model, 16, options));
    EXPECT_TRUE(map->is_unsigned());
    EXPECT_TRUE(map->samples().empty());
    const Aabb grid = map->grid_box();
    const Vec3 half = 0.5 * (grid.max - grid.min);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int c = 0; c < Cases(2000); ++c) {
      const Vec3 centre = 0.5 * (grid.max + grid.min);
      const Vec3 p = centre + 1.5 * Vec3(u(rng) * half.x(), u(rng) * half.y(), u(rng) * half.z());
      const SdfEvaluation e = map->Evaluate(p);
      const double exact = BruteUnsigned(p, *mesh);
      EXPECT_LE(std::abs(e.value - exact), e.error_bound + 1e-12) << "at " << p.transpose();
      EXPECT_GE(e.value + e.error_bound, 0.0);
    }
    SdfContactOptions contact;
    auto refused = SdfContacts(*map, RigidTransform::Identity(), *map, RigidTransform::Identity(), contact);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("unsigned"), std::string::npos);
  }
}

}  // namespace
}  // namespace proximity::core
