#include "proximity/core/mesh/mesh.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "core/test_util.h"

namespace proximity::core {
namespace {

using testing::IsClosedAndConsistent;
using testing::SignedVolume;
using testing::Soup;

using Triangles = std::vector<std::array<int32_t, 3>>;

int EulerCharacteristic(const TriangleMesh& m) {
  std::set<std::pair<int32_t, int32_t>> edges;
  for (const auto& t : m.triangles) {
    for (int i = 0; i < 3; ++i) edges.insert(std::minmax(t[i], t[(i + 1) % 3]));
  }
  return static_cast<int>(m.vertices.size()) - static_cast<int>(edges.size()) + static_cast<int>(m.triangles.size());
}

::testing::AssertionResult HasNoDuplicateVertices(const TriangleMesh& m) {
  std::set<std::array<double, 3>> seen;
  for (size_t i = 0; i < m.vertices.size(); ++i) {
    if (!seen.insert({m.vertices[i].x(), m.vertices[i].y(), m.vertices[i].z()}).second) {
      return ::testing::AssertionFailure() << "vertex " << i << " repeats an earlier position";
    }
  }
  return ::testing::AssertionSuccess();
}

/// For a mesh around the origin whose faces all see the origin from their inside (convex, star-shaped about
/// it): every face normal points away from the origin.
::testing::AssertionResult FacesPointAwayFrom(const TriangleMesh& m, const Vec3& centre) {
  for (size_t i = 0; i < m.triangles.size(); ++i) {
    const auto& t = m.triangles[i];
    const Vec3& a = m.vertices[t[0]];
    const Vec3 n = (m.vertices[t[1]] - a).cross(m.vertices[t[2]] - a);
    if (n.dot((a + m.vertices[t[1]] + m.vertices[t[2]]) / 3 - centre) <= 0) {
      return ::testing::AssertionFailure() << "triangle " << i << " faces inward";
    }
  }
  return ::testing::AssertionSuccess();
}


/// The box split into 36 vertices: every triangle has its own three corners.
std::pair<std::vector<Vec3>, Triangles> Unshared(const TriangleMesh& m) {
  std::vector<Vec3> vertices;
  Triangles triangles;
  for (const auto& t : m.triangles) {
    const auto base = static_cast<int32_t>(vertices.size());
    for (const int32_t i : t) vertices.push_back(m.vertices[i]);
    triangles.push_back({base, base + 1, base + 2});
  }
  return {vertices, triangles};
}

TEST(MakeTriangleMesh, CleanInputComesBackUnchanged) {
  const TriangleMesh box = MakeBoxMesh(Vec3(1, 2, 3));
  MeshLoadReport report;
  report.submeshes = 7;
  auto r = MakeTriangleMesh(box.vertices, box.triangles, 0.0, &report);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().vertices, box.vertices);
  EXPECT_EQ(r.value().triangles, box.triangles);
  EXPECT_EQ(report.removed_degenerate, 0);
  EXPECT_EQ(report.welded_vertices, 0);
  EXPECT_EQ(report.submeshes, 7) << "fields that MakeTriangleMesh does not own are left alone";
  EXPECT_TRUE(MakeTriangleMesh(box.vertices, box.triangles).ok()) << "the report is optional";
}

TEST(MakeTriangleMesh, RejectsIndicesOutOfRangeNamingTheTriangle) {
  const TriangleMesh box = MakeBoxMesh(Vec3::Ones());
  for (const int32_t bad : {8, -1, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()}) {
    Triangles triangles = box.triangles;
    triangles[5][2] = bad;
    auto r = MakeTriangleMesh(box.vertices, triangles);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find("triangle 5 "), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(std::to_string(bad)), std::string::npos) << r.error().message;
  }
}

TEST(MakeTriangleMesh, RejectsNonFiniteCoordinatesNamingTheVertex) {
  const TriangleMesh box = MakeBoxMesh(Vec3::Ones());
  const double kInf = std::numeric_limits<double>::infinity();
  for (const double bad : {std::numeric_limits<double>::quiet_NaN(), kInf, -kInf}) {
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<Vec3> vertices = box.vertices;
      vertices[6][axis] = bad;
      auto r = MakeTriangleMesh(vertices, box.triangles);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
      EXPECT_NE(r.error().message.find("vertex 6 "), std::string::npos) << r.error().message;
    }
  }
  std::vector<Vec3> vertices = box.vertices;
  vertices.emplace_back(std::nan(""), 0, 0);
  EXPECT_FALSE(MakeTriangleMesh(vertices, box.triangles).ok()) << "unreferenced vertices are checked too";
}

TEST(MakeTriangleMesh, RejectsBadWeldTolerance) {
  const TriangleMesh box = MakeBoxMesh(Vec3::Ones());
  for (const double bad : {-1e-9, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    auto r = MakeTriangleMesh(box.vertices, box.triangles, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find("weld tolerance"), std::string::npos) << r.error().message;
  }
}

TEST(MakeTriangleMesh, RejectsMeshesWithoutTriangles) {
  auto none = MakeTriangleMesh({Vec3::Zero(), Vec3::UnitX(), Vec3::UnitY()}, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no triangles"), std::string::npos) << none.error().message;

  auto all_degenerate =
      MakeTriangleMesh({Vec3::Zero(), Vec3::UnitX(), 2 * Vec3::UnitX()}, {{0, 1, 2}, {0, 0, 1}, {2, 1, 0}});
  ASSERT_FALSE(all_degenerate.ok());
  EXPECT_EQ(all_degenerate.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(all_degenerate.error().message.find("no triangle with an area"), std::string::npos)
      << all_degenerate.error().message;
  EXPECT_NE(all_degenerate.error().message.find("3"), std::string::npos) << all_degenerate.error().message;
}

TEST(MakeTriangleMesh, WeldsCoincidentVerticesExactly) {
  const TriangleMesh box = MakeBoxMesh(Vec3(1, 2, 3));
  auto [vertices, triangles] = Unshared(box);
  ASSERT_EQ(vertices.size(), 36u);
  MeshLoadReport report;
  auto r = MakeTriangleMesh(vertices, triangles, 0.0, &report);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().vertices.size(), 8u);
  EXPECT_EQ(report.welded_vertices, 28);
  EXPECT_EQ(report.removed_degenerate, 0);
  EXPECT_TRUE(IsClosedAndConsistent(r.value()));
  EXPECT_TRUE(HasNoDuplicateVertices(r.value()));
  EXPECT_EQ(Soup(r.value()), Soup(box));
}

TEST(MakeTriangleMesh, SignedZerosAreOneVertex) {
  auto r = MakeTriangleMesh({Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0), Vec3(-0.0, -0.0, -0.0)},
                            {{0, 1, 2}, {3, 2, 1}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().vertices.size(), 3u);
}

TEST(MakeTriangleMesh, ZeroToleranceKeepsNearbyVerticesApart) {
  const TriangleMesh box = MakeBoxMesh(Vec3::Ones());
  auto [vertices, triangles] = Unshared(box);
  vertices[0] += Vec3(1e-12, 0, 0);
  MeshLoadReport report;
  auto r = MakeTriangleMesh(vertices, triangles, 0.0, &report);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().vertices.size(), 9u);
  EXPECT_EQ(report.welded_vertices, 27);
  EXPECT_FALSE(IsClosedAndConsistent(r.value()));
}

TEST(MakeTriangleMesh, ToleranceWeldsPerturbedCopies) {
  const TriangleMesh box = MakeBoxMesh(Vec3(1, 2, 3));
  auto [vertices, triangles] = Unshared(box);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> noise(-1e-4, 1e-4);
  for (Vec3& v : vertices) v += Vec3(noise(rng), noise(rng), noise(rng));

  MeshLoadReport report;
  auto welded = MakeTriangleMesh(vertices, triangles, 1e-3, &report);
  ASSERT_TRUE(welded.ok());
  EXPECT_EQ(welded.value().vertices.size(), 8u);
  EXPECT_EQ(report.welded_vertices, 28);
  EXPECT_TRUE(IsClosedAndConsistent(welded.value()));
  for (const Vec3& v : welded.value().vertices) {
    EXPECT_NE(std::find(vertices.begin(), vertices.end(), v), vertices.end())
        << "a welded vertex takes the position of one of its inputs";
  }

  auto too_tight = MakeTriangleMesh(vertices, triangles, 1e-6, &report);
  ASSERT_TRUE(too_tight.ok());
  EXPECT_EQ(too_tight.value().vertices.size(), 36u);
  EXPECT_EQ(report.welded_vertices, 0);
}

// Whatever the input, the kept vertices are more than the tolerance apart and every input vertex lies within
// the tolerance of the vertex that replaced it.
TEST(MakeTriangleMesh, ToleranceWeldingProperties) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> coord(-1, 1);
  for (const double tol : {0.05, 0.2, 0.7}) {
    std::vector<Vec3> vertices;
    for (int i = 0; i < 300; ++i) vertices.emplace_back(coord(rng), coord(rng), coord(rng));
    // One triangle per vertex so that the output keeps a record of where each vertex went.
    const Vec3 far_a(10, 0, 0), far_b(0, 10, 0);
    const auto a = static_cast<int32_t>(vertices.size()), b = a + 1;
    vertices.push_back(far_a);
    vertices.push_back(far_b);
    Triangles triangles;
    for (int32_t i = 0; i < 300; ++i) triangles.push_back({i, a, b});

    MeshLoadReport report;
    auto r = MakeTriangleMesh(vertices, triangles, tol, &report);
    ASSERT_TRUE(r.ok());
    const TriangleMesh& m = r.value();
    ASSERT_EQ(m.triangles.size(), 300u);
    EXPECT_EQ(report.removed_degenerate, 0);
    for (size_t i = 0; i < m.vertices.size(); ++i) {
      for (size_t j = i + 1; j < m.vertices.size(); ++j) {
        ASSERT_GT((m.vertices[i] - m.vertices[j]).norm(), tol) << i << " " << j;
      }
    }
    for (int32_t i = 0; i < 300; ++i) {
      EXPECT_LE((m.vertices[m.triangles[i][0]] - vertices[i]).norm(), tol) << i;
    }
    EXPECT_EQ(report.welded_vertices, static_cast<int32_t>(vertices.size() - m.vertices.size()));
    EXPECT_GT(report.welded_vertices, 0) << "the tolerance is large enough to weld some of 300 points";
  }
}

// A degenerate triangle is its hull segment: dropped when that segment is an edge of a kept triangle
// (nothing of the surface is lost), kept as a segment otherwise (a lone sliver can run through a link).
TEST(MakeTriangleMesh, DropsDegenerateTrianglesOnlyWhereAnEdgeCoversThem) {
  const TriangleMesh box = MakeBoxMesh(Vec3::Ones());
  std::vector<Vec3> vertices = box.vertices;
  Triangles triangles = box.triangles;
  const auto n = static_cast<int32_t>(vertices.size());
  vertices.push_back(Vec3(5, 5, 5));
  vertices.push_back(Vec3(6, 6, 6));
  vertices.push_back(Vec3(7, 7, 7));
  vertices.push_back(Vec3(8, 8, 8));  // used by no triangle
  triangles.push_back({n, n + 1, n + 2});  // collinear, no edge covers it: kept
  triangles.push_back({0, 0, 1});          // repeated index on the box edge 0-1: dropped
  triangles.push_back({n + 1, 3, n + 1});  // repeated index, segment 3-(6,6,6): kept
  triangles.push_back({0, 1, 0});          // repeated index on the box edge 0-1: dropped
  MeshLoadReport report;
  auto r = MakeTriangleMesh(vertices, triangles, 0.0, &report);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(report.removed_degenerate, 2);
  EXPECT_EQ(report.kept_degenerate, 2);
  Triangles expected = box.triangles;
  expected.push_back({n, n + 1, n + 2});
  expected.push_back({n + 1, 3, n + 1});
  EXPECT_EQ(r.value().triangles, expected);
  std::vector<Vec3> expected_vertices = box.vertices;
  expected_vertices.insert(expected_vertices.end(), {Vec3(5, 5, 5), Vec3(6, 6, 6), Vec3(7, 7, 7)});
  EXPECT_EQ(r.value().vertices, expected_vertices) << "vertices used by no kept triangle go";
  EXPECT_EQ(CountDegenerateTriangles(r.value()), 2);
}

TEST(MakeTriangleMesh, TrianglesDegenerateAfterWeldingAreDropped) {
  std::vector<Vec3> vertices = {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0), Vec3(1e-4, 0, 0), Vec3(0, 0, 1)};
  const Triangles triangles = {{0, 1, 2}, {0, 3, 4}, {0, 2, 4}};
  MeshLoadReport report;
  auto loose = MakeTriangleMesh(vertices, triangles, 0.0, &report);
  ASSERT_TRUE(loose.ok());
  EXPECT_EQ(loose.value().triangles.size(), 3u);
  auto welded = MakeTriangleMesh(vertices, triangles, 1e-3, &report);
  ASSERT_TRUE(welded.ok());
  EXPECT_EQ(welded.value().triangles.size(), 2u);
  EXPECT_EQ(report.removed_degenerate, 1);
  EXPECT_EQ(report.welded_vertices, 1);
}

// The zero-area test is relative to the triangle's size: collinear triangles are dropped at every scale and
// thin but genuine triangles are kept at every scale.
TEST(MakeTriangleMesh, DegeneracyIsScaleInvariant) {
  const Vec3 direction(0.1234567, 0.7654321, -0.3141592);
  const Vec3 across = direction.cross(Vec3(0.3, -0.2, 0.9)).normalized();
  for (const double s : {1e-9, 1e-3, 1.0, 1e3, 1e9}) {
    const Vec3 origin = s * Vec3(0.3, -0.7, 0.1);
    // Rounding leaves the middle point a few ulps off the line: the cross product is not exactly zero.
    const std::vector<Vec3> vertices = {origin, origin + s * direction, origin + 0.37 * s * direction,
                                        origin + 0.37 * s * direction + 1e-9 * s * across,
                                        origin + s * Vec3(0.25, 0.25, 0.25)};
    const Triangles triangles = {{0, 1, 2}, {0, 1, 3}, {0, 1, 4}};
    MeshLoadReport report;
    auto r = MakeTriangleMesh(vertices, triangles, 0.0, &report);
    ASSERT_TRUE(r.ok()) << s;
    EXPECT_EQ(report.removed_degenerate, 1) << "scale " << s;
    EXPECT_EQ(r.value().triangles, (Triangles{{0, 1, 2}, {0, 1, 3}})) << "scale " << s;
    EXPECT_EQ(r.value().vertices, (std::vector<Vec3>{vertices[0], vertices[1], vertices[3], vertices[4]}));
  }
}

TEST(MakeTriangleMesh, KeepsInputVertexOrder) {
  const TriangleMesh box = MakeBoxMesh(Vec3(1, 2, 3));
  std::vector<Vec3> vertices;
  std::vector<int32_t> where;
  for (const Vec3& v : box.vertices) {
    vertices.emplace_back(100, 100, 100 + vertices.size());  // unreferenced
    where.push_back(static_cast<int32_t>(vertices.size()));
    vertices.push_back(v);
  }
  Triangles triangles;
  for (const auto& t : box.triangles) triangles.push_back({where[t[0]], where[t[1]], where[t[2]]});
  auto r = MakeTriangleMesh(vertices, triangles);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().vertices, box.vertices);
  EXPECT_EQ(r.value().triangles, box.triangles);
}

void ExpectProceduralInvariants(const TriangleMesh& m, int euler) {
  EXPECT_TRUE(IsClosedAndConsistent(m));
  EXPECT_TRUE(HasNoDuplicateVertices(m));
  EXPECT_EQ(EulerCharacteristic(m), euler);
  MeshLoadReport report;
  auto cleaned = MakeTriangleMesh(m.vertices, m.triangles, 0.0, &report);
  ASSERT_TRUE(cleaned.ok()) << cleaned.error().message;
  EXPECT_EQ(report.removed_degenerate, 0);
  EXPECT_EQ(report.welded_vertices, 0);
  EXPECT_EQ(cleaned.value().triangles, m.triangles) << "already valid: every vertex used, no degenerate";
  EXPECT_EQ(cleaned.value().vertices, m.vertices);
}

TEST(ProceduralMeshes, Box) {
  const Vec3 size(0.5, 2, 3.25);
  const TriangleMesh box = MakeBoxMesh(size);
  EXPECT_EQ(box.vertices.size(), 8u);
  EXPECT_EQ(box.triangles.size(), 12u);
  ExpectProceduralInvariants(box, 2);
  EXPECT_TRUE(FacesPointAwayFrom(box, Vec3::Zero()));
  EXPECT_NEAR(SignedVolume(box), size.prod(), 1e-14);
  const auto bounds = MeshBounds(box);
  EXPECT_EQ(bounds[0], -size / 2);
  EXPECT_EQ(bounds[1], size / 2);
}

TEST(ProceduralMeshes, Icosphere) {
  const double r = 0.7;
  for (int s = 0; s <= 4; ++s) {
    SCOPED_TRACE(s);
    const TriangleMesh m = MakeIcosphereMesh(r, s);
    const int faces = 20 << (2 * s);
    EXPECT_EQ(static_cast<int>(m.triangles.size()), faces);
    EXPECT_EQ(static_cast<int>(m.vertices.size()), faces / 2 + 2);
    ExpectProceduralInvariants(m, 2);
    EXPECT_TRUE(FacesPointAwayFrom(m, Vec3::Zero()));
    for (const Vec3& v : m.vertices) ASSERT_NEAR(v.norm(), r, 2e-15 * r);
    // The polyhedron lies between the ball through its vertices and the ball touching its closest face plane.
    double inner = r;
    for (const auto& t : m.triangles) {
      const Vec3 n = (m.vertices[t[1]] - m.vertices[t[0]]).cross(m.vertices[t[2]] - m.vertices[t[0]]).normalized();
      inner = std::min(inner, n.dot(m.vertices[t[0]]));
    }
    const double ball = 4.0 / 3.0 * std::numbers::pi;
    const double volume = SignedVolume(m);
    EXPECT_GT(volume, ball * std::pow(inner, 3));
    EXPECT_LT(volume, ball * std::pow(r, 3));
  }
  // Second-order convergence: each subdivision halves the edges and quarters the missing volume.
  const double sphere = 4.0 / 3.0 * std::numbers::pi * std::pow(r, 3);
  double previous_gap = sphere - SignedVolume(MakeIcosphereMesh(r, 1));
  for (int s = 2; s <= 5; ++s) {
    const double gap = sphere - SignedVolume(MakeIcosphereMesh(r, s));
    EXPECT_GT(gap / previous_gap, 0.2) << s;
    EXPECT_LT(gap / previous_gap, 0.3) << s;
    previous_gap = gap;
  }
  EXPECT_EQ(MakeIcosphereMesh(1, -2).triangles.size(), 20u);
}

TEST(ProceduralMeshes, Cylinder) {
  const double r = 0.3, length = 1.7;
  for (const int n : {3, 4, 7, 64}) {
    SCOPED_TRACE(n);
    const TriangleMesh m = MakeCylinderMesh(r, length, n);
    EXPECT_EQ(static_cast<int>(m.triangles.size()), 4 * n);
    EXPECT_EQ(static_cast<int>(m.vertices.size()), 2 * n + 2);
    ExpectProceduralInvariants(m, 2);
    EXPECT_TRUE(FacesPointAwayFrom(m, Vec3::Zero()));
    // A prism over the inscribed regular n-gon.
    const double polygon = 0.5 * n * r * r * std::sin(2 * std::numbers::pi / n);
    EXPECT_NEAR(SignedVolume(m), polygon * length, 1e-13);
    const auto bounds = MeshBounds(m);
    EXPECT_DOUBLE_EQ(bounds[0].z(), -length / 2);
    EXPECT_DOUBLE_EQ(bounds[1].z(), length / 2);
    EXPECT_DOUBLE_EQ(bounds[1].x(), r);
    for (const Vec3& v : m.vertices) {
      const double rho = v.head<2>().norm();
      EXPECT_TRUE(std::abs(rho - r) < 1e-15 || rho == 0) << v.transpose();
    }
  }
  EXPECT_EQ(MakeCylinderMesh(r, length, 1).triangles.size(), 12u);
}

TEST(ProceduralMeshes, Torus) {
  const double major = 1.5, minor = 0.4;
  for (const auto& [nu, nv] : std::vector<std::pair<int, int>>{{3, 3}, {12, 5}, {64, 32}}) {
    SCOPED_TRACE(::testing::Message() << nu << "x" << nv);
    const TriangleMesh m = MakeTorusMesh(major, minor, nu, nv);
    EXPECT_EQ(static_cast<int>(m.triangles.size()), 2 * nu * nv);
    EXPECT_EQ(static_cast<int>(m.vertices.size()), nu * nv);
    ExpectProceduralInvariants(m, 0);
    for (const Vec3& v : m.vertices) {
      const Vec3 core = major * Vec3(v.x(), v.y(), 0).normalized();
      ASSERT_NEAR((v - core).norm(), minor, 1e-14);
    }
    // Each of the nu pieces is the inscribed nv-gon (area A, centroid at radius `major`) swept through an
    // angle 2 pi / nu with planar sides: volume sin(2 pi / nu) * major * A.
    const double polygon = 0.5 * nv * minor * minor * std::sin(2 * std::numbers::pi / nv);
    const double expected = nu * std::sin(2 * std::numbers::pi / nu) * major * polygon;
    EXPECT_NEAR(SignedVolume(m), expected, 1e-12);
    EXPECT_GT(SignedVolume(m), 0);
    EXPECT_LT(SignedVolume(m), 2 * std::numbers::pi * std::numbers::pi * major * minor * minor);
  }
  // Outward: every face normal points away from the nearest point of the tube's centre line.
  const TriangleMesh m = MakeTorusMesh(major, minor, 24, 12);
  for (const auto& t : m.triangles) {
    const Vec3 c = (m.vertices[t[0]] + m.vertices[t[1]] + m.vertices[t[2]]) / 3;
    const Vec3 n = (m.vertices[t[1]] - m.vertices[t[0]]).cross(m.vertices[t[2]] - m.vertices[t[0]]);
    ASSERT_GT(n.dot(c - major * Vec3(c.x(), c.y(), 0).normalized()), 0);
  }
  EXPECT_EQ(MakeTorusMesh(major, minor, 0, 2).triangles.size(), 18u);
}

TEST(MeshBounds, EmptyAndNonEmpty) {
  const auto empty = MeshBounds(TriangleMesh{});
  EXPECT_TRUE((empty[0].array() == std::numeric_limits<double>::infinity()).all());
  EXPECT_TRUE((empty[1].array() == -std::numeric_limits<double>::infinity()).all());
  TriangleMesh m;
  m.vertices = {Vec3(1, -2, 3), Vec3(-4, 5, 0.5), Vec3(0, 0, 7)};
  m.triangles = {{0, 1, 2}};
  const auto b = MeshBounds(m);
  EXPECT_EQ(b[0], Vec3(-4, -2, 0.5));
  EXPECT_EQ(b[1], Vec3(1, 5, 7));
}

}  // namespace
}  // namespace proximity::core
