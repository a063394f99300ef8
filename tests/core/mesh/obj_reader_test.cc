// The project's OBJ reader against assimp's OBJ importer on every real OBJ file at hand (an independent
// reader as the oracle), polygon triangulation against the polygon's own area, and the reader's syntax and
// errors.

#include <gtest/gtest.h>

#include <assimp/Importer.hpp>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/test_util.h"
#include "proximity/core/mesh/mesh.h"

namespace proximity::core {
namespace {

namespace fs = std::filesystem;


using Triangle = std::array<Vec3, 3>;

/// The mesh's triangles as coordinates, each rotated to start at its lexicographically smallest corner
/// (winding kept), sorted: two meshes with the same triangles give the same list whatever their order.
std::vector<Triangle> Canonical(const TriangleMesh& m) {
  const auto less = [](const Vec3& a, const Vec3& b) { return std::lexicographical_compare(a.data(), a.data() + 3, b.data(), b.data() + 3); };
  std::vector<Triangle> out;
  for (const auto& t : m.triangles) {
    Triangle c = {m.vertices[t[0]], m.vertices[t[1]], m.vertices[t[2]]};
    while (less(c[1], c[0]) || less(c[2], c[0])) std::rotate(c.begin(), c.begin() + 1, c.end());
    out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [&](const Triangle& a, const Triangle& b) {
    for (int k = 0; k < 3; ++k) {
      if (less(a[k], b[k])) return true;
      if (less(b[k], a[k])) return false;
    }
    return false;
  });
  return out;
}

/// The same file read by assimp's OBJ importer (triangulated, identical vertices joined), cleaned the
/// same way.
TriangleMesh ReadWithAssimpObj(const std::string& path) {
  Assimp::Importer importer;
  const aiScene* scene =
      importer.ReadFile(path, aiProcess_Triangulate | aiProcess_JoinIdenticalVertices | aiProcess_SortByPType);
  EXPECT_NE(scene, nullptr) << importer.GetErrorString();
  std::vector<Vec3> vertices;
  std::vector<std::array<int32_t, 3>> triangles;
  for (unsigned i = 0; scene != nullptr && i < scene->mNumMeshes; ++i) {
    const aiMesh& mesh = *scene->mMeshes[i];
    const auto base = static_cast<int32_t>(vertices.size());
    for (unsigned v = 0; v < mesh.mNumVertices; ++v) {
      vertices.emplace_back(mesh.mVertices[v].x, mesh.mVertices[v].y, mesh.mVertices[v].z);
    }
    for (unsigned f = 0; f < mesh.mNumFaces; ++f) {
      const aiFace& face = mesh.mFaces[f];
      if (face.mNumIndices != 3) continue;
      triangles.push_back({base + static_cast<int32_t>(face.mIndices[0]), base + static_cast<int32_t>(face.mIndices[1]),
                           base + static_cast<int32_t>(face.mIndices[2])});
    }
  }
  auto mesh = MakeTriangleMesh(std::move(vertices), std::move(triangles));
  EXPECT_TRUE(mesh.ok()) << path;
  return mesh.ok() ? std::move(mesh).value() : TriangleMesh{};
}

std::vector<std::string> ObjFilesUnder(const std::string& dir) {
  std::vector<std::string> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".obj") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void ExpectSameAsAssimp(const std::string& path) {
  SCOPED_TRACE(path);
  MeshLoadReport report;
  const Result<TriangleMesh> ours = LoadMesh(path, {}, &report);
  ASSERT_TRUE(ours.ok()) << ours.error().message;
  const TriangleMesh theirs = ReadWithAssimpObj(path);
  ASSERT_EQ(ours.value().triangles.size(), theirs.triangles.size());
  EXPECT_EQ(ours.value().vertices.size(), theirs.vertices.size());
  const std::vector<Triangle> a = Canonical(ours.value()), b = Canonical(theirs);
  double worst = 0.0, extent = 0.0;
  for (size_t t = 0; t < a.size(); ++t) {
    for (int k = 0; k < 3; ++k) {
      worst = std::max(worst, (a[t][k] - b[t][k]).cwiseAbs().maxCoeff());
      extent = std::max(extent, b[t][k].cwiseAbs().maxCoeff());
    }
  }
  // Both store single precision; the two number parsers may round the last bit differently.
  EXPECT_LE(worst, 1e-6 * std::max(1.0, extent)) << "largest coordinate difference";
}

TEST(ObjReader, MatchesAssimpOnTheRepositorysObjFile) {
  ExpectSameAsAssimp(testing::TestDataDir() + "/quad_and_line.obj");
}

TEST(ObjReader, MatchesAssimpOnTheSharedObjFiles) {
  const std::string data = testing::SharedDataDir();
  PROX_REQUIRE_DIR(data, "../shared/data");
  const auto files = ObjFilesUnder(data);
  EXPECT_GE(files.size(), 12u);
  for (const std::string& f : files) ExpectSameAsAssimp(f);
}

TEST(ObjReader, MatchesAssimpOnDartsObjFiles) {
  const std::string dart = testing::DartUrdfDir();
  PROX_REQUIRE_DIR(dart, "/usr/share/doc/dart/data/urdf (Debian dart-doc)");
  const auto files = ObjFilesUnder(fs::path(dart).parent_path().string() + "/obj");
  EXPECT_GE(files.size(), 3u);
  for (const std::string& f : files) ExpectSameAsAssimp(f);
}

/// Random simple polygons (star-shaped about the origin with random radii, so most are concave) in
/// random planes: the triangles must have the polygon's corners, n - 2 of them, all facing the polygon's
/// normal, with areas summing to the polygon's own area (a fold or overlap would add area).
TEST(ObjReader, PolygonsTriangulateToTheirOwnArea) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int concave = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 3 + static_cast<int>(rng() % 40);
    // A frame for the polygon's plane.
    const Vec3 normal = Vec3(unit(rng) - 0.5, unit(rng) - 0.5, unit(rng) - 0.5).normalized();
    const Vec3 e1 = normal.unitOrthogonal(), e2 = normal.cross(e1);
    std::vector<Vec3> corners;
    for (int i = 0; i < n; ++i) {
      const double angle = 2.0 * M_PI * (i + 0.8 * unit(rng)) / n;
      const double radius = 0.2 + unit(rng);
      corners.push_back(Vec3(1, 2, 3) + radius * (std::cos(angle) * e1 + std::sin(angle) * e2));
    }
    Vec3 twice_area = Vec3::Zero();  // the polygon's vector area, by the shoelace formula in 3D
    for (int i = 0; i < n; ++i) twice_area += corners[i].cross(corners[(i + 1) % n]);
    bool is_concave = false;
    for (int i = 0; i < n; ++i) {
      const Vec3 turn = (corners[(i + 1) % n] - corners[i]).cross(corners[(i + 2) % n] - corners[(i + 1) % n]);
      is_concave = is_concave || turn.dot(normal) < 0.0;
    }
    concave += is_concave;
    std::ostringstream obj;
    obj.precision(17);
    for (const Vec3& c : corners) obj << "v " << c.x() << " " << c.y() << " " << c.z() << "\n";
    obj << "f";
    for (int i = 1; i <= n; ++i) obj << " " << i;
    obj << "\n";
    SCOPED_TRACE("trial " + std::to_string(trial) + ", " + std::to_string(n) + " corners");
    const Result<TriangleMesh> mesh = LoadMeshFromMemory(obj.str(), "obj", "polygon");
    ASSERT_TRUE(mesh.ok()) << mesh.error().message;
    const TriangleMesh& m = mesh.value();
    EXPECT_EQ(m.triangles.size(), static_cast<size_t>(n - 2));
    EXPECT_EQ(m.vertices.size(), static_cast<size_t>(n));
    double sum = 0.0;
    for (const auto& t : m.triangles) {
      const Vec3 a = (m.vertices[t[1]] - m.vertices[t[0]]).cross(m.vertices[t[2]] - m.vertices[t[0]]);
      EXPECT_GT(a.dot(normal), 0.0) << "a triangle faces away from the polygon";
      sum += a.norm();
    }
    EXPECT_NEAR(sum, twice_area.norm(), 1e-5 * twice_area.norm()) << "the triangles overlap or leave a gap";
  }
  EXPECT_GT(concave, 150) << "the generator should give mostly concave polygons";
}

TEST(ObjReader, Syntax) {
  // Negative (relative) indices, corners with texture and normal indices, a continued line, comments,
  // CRLF line ends, a face before the vertex it names, and statements that do not change the geometry.
  const std::string text =
      "# comment\r\nmtllib any.mtl\r\no first\r\nv 0 0 0\r\nv 1 0 0\r\nv 1 1 0\r\nvt 0 0\r\nvn 0 0 1\r\n"
      "usemtl a\r\ns 1\r\nf 1/1/1 2/1/1 -1/1/1\r\nf 1//1 \\\r\n 3//1 4//1\r\nv 0 1 0\r\nusemtl b\r\n"
      "f -4/1 -2/1 -1/1\r\nl 1 2\r\np 3\r\nf 1 2\r\nunknown statement\r\n";
  MeshLoadReport report;
  const Result<TriangleMesh> mesh = LoadMeshFromMemory(text, "obj", "syntax", {}, &report);
  ASSERT_TRUE(mesh.ok()) << mesh.error().message;
  EXPECT_EQ(mesh.value().triangles.size(), 3u) << "the third face repeats the second; both are kept";
  EXPECT_EQ(mesh.value().vertices.size(), 4u);
  EXPECT_EQ(report.skipped_non_triangles, 3) << "one line, one point, one two-corner face";
  EXPECT_EQ(report.submeshes, 2) << "faces under usemtl a, then under usemtl b";
  for (const auto& t : mesh.value().triangles) {
    const TriangleMesh& m = mesh.value();
    EXPECT_GT((m.vertices[t[1]] - m.vertices[t[0]]).cross(m.vertices[t[2]] - m.vertices[t[0]]).z(), 0.0);
  }
  // A mirroring scale reverses the winding, so the outward side stays outward.
  MeshLoadOptions mirror;
  mirror.scale = Vec3(1, 1, -2);
  const Result<TriangleMesh> flipped = LoadMeshFromMemory("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\n"
                                                          "f 1 4 3\nf 2 3 4\n", "obj", "tetrahedron", mirror);
  ASSERT_TRUE(flipped.ok()) << flipped.error().message;
  EXPECT_GT(testing::SignedVolume(flipped.value()), 0.0);
  EXPECT_NEAR(testing::SignedVolume(flipped.value()), 2.0 / 6.0, 1e-12);
  // A vertex no face uses may hold anything finite or not; it is not kept.
  const Result<TriangleMesh> unused = LoadMeshFromMemory("v nan 0 0\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 2 3 4\n", "obj", "unused");
  ASSERT_TRUE(unused.ok()) << unused.error().message;
  EXPECT_EQ(unused.value().vertices.size(), 3u);
}

void ExpectObjError(const std::string& text, const std::string& says) {
  SCOPED_TRACE(text.substr(0, 80));
  const Result<TriangleMesh> r = LoadMeshFromMemory(text, "obj", "bad.obj");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kParseError);
  EXPECT_NE(r.error().message.find("bad.obj"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
}

TEST(ObjReaderErrors, NameTheLineAndWhatIsWrong) {
  ExpectObjError("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 x 0\nf 1 2 3\n", "line 4: vertex coordinate 'x' is not a number");
  ExpectObjError("v 0 0 0\nv 1 0\n", "line 2: a vertex needs three coordinates");
  ExpectObjError("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", "line 4: face corner '0'");
  ExpectObjError("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 a/1\n", "face corner 'a/1'");
  ExpectObjError("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 -4\n", "'-4' refers to no vertex (3 read so far)");
  ExpectObjError("v 0 0 0\nv 1 0 0\nv 0 1 0\n\nf 1 2 7\n", "line 5: face corner 7 refers to no vertex (the file has 3)");
  ExpectObjError("v 0 0 0\nv 1 0 0\nv inf 1 0\nf 1 2 3\n", "vertex 3 has a non-finite coordinate");
  ExpectObjError("v 0 0 0\nv 1 0 0\nv 1e39 1 0\nf 1 2 3\n", "non-finite");  // beyond single precision
  ExpectObjError("v 0 0 0\nv 1 0 0\nl 1 2\n", "has no triangles (only 1 point or line elements)");
  ExpectObjError("# nothing\n", "has no triangles");
}

// Ear clipping is quadratic in a non-convex face's corners: a hostile face of many corners ends with an
// error within a budget proportional to the file's size, not after hours.
TEST(ObjReaderErrors, AHugeNonConvexFaceIsRefusedWithinItsBudget) {
  std::ostringstream obj;
  const int n = 40'000;  // a comb: teeth alternate between radius 1 and 0.5
  for (int i = 0; i < n; ++i) {
    const double angle = 2.0 * M_PI * i / n, radius = i % 2 == 0 ? 1.0 : 0.5;
    obj << "v " << radius * std::cos(angle) << " " << radius * std::sin(angle) << " 0\n";
  }
  obj << "f";
  for (int i = 1; i <= n; ++i) obj << " " << i;
  obj << "\n";
  ExpectObjError(obj.str(), "too complex to triangulate");
  // A convex face of 64 corners is a fan: no ear clipping, no budget spent.
  std::ostringstream ok;
  ok << "v 0 0 0\n";
  for (int i = 0; i < 64; ++i) ok << "v " << std::cos(2.0 * M_PI * i / 64) << " " << std::sin(2.0 * M_PI * i / 64) << " 0\n";
  ok << "f";
  for (int i = 2; i <= 65; ++i) ok << " " << i;
  ok << "\n";
  const Result<TriangleMesh> disc = LoadMeshFromMemory(ok.str(), "obj", "disc");
  ASSERT_TRUE(disc.ok()) << disc.error().message;
  EXPECT_EQ(disc.value().triangles.size(), 62u);
}

}  // namespace
}  // namespace proximity::core
