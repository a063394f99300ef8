#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/test_util.h"
#include "proximity/core/mesh/mesh.h"


namespace proximity::core {
namespace {

namespace fs = std::filesystem;
using testing::DartUrdfDir;
using testing::IsClosedAndConsistent;
using testing::SignedVolume;
using testing::Soup;
using testing::SharedDataDir;
using testing::TestDataDir;

double Area(const TriangleMesh& m) {
  double twice = 0;
  for (const auto& t : m.triangles) {
    twice += (m.vertices[t[1]] - m.vertices[t[0]]).cross(m.vertices[t[2]] - m.vertices[t[0]]).norm();
  }
  return twice / 2;
}



void ExpectBounds(const TriangleMesh& m, const Vec3& lo, const Vec3& hi, double tol) {
  const auto b = MeshBounds(m);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(b[0][i], lo[i], tol) << "axis " << i;
    EXPECT_NEAR(b[1][i], hi[i], tol) << "axis " << i;
  }
}

std::string Fixture(const std::string& name) { return TestDataDir() + "/" + name; }

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

/// A fresh folder under the system temp folder, removed with its contents at the end of the test.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("proximity_mesh_io_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& bytes) const {
    const std::string file = (path_ / name).string();
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

/// A binary STL: 80-byte header, little-endian triangle count, 50-byte records.
std::string BinaryStl(const TriangleMesh& m) {
  std::string out(80, ' ');
  out.replace(0, 15, "binary-fixture ");
  auto put = [&out](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  const auto count = static_cast<uint32_t>(m.triangles.size());
  put(&count, 4);
  for (const auto& t : m.triangles) {
    const Vec3 n = (m.vertices[t[1]] - m.vertices[t[0]]).cross(m.vertices[t[2]] - m.vertices[t[0]]).normalized();
    for (int i = 0; i < 3; ++i) {
      const auto f = static_cast<float>(n[i]);
      put(&f, 4);
    }
    for (const int32_t v : t) {
      for (int i = 0; i < 3; ++i) {
        const auto f = static_cast<float>(m.vertices[v][i]);
        put(&f, 4);
      }
    }
    const uint16_t attribute = 0;
    put(&attribute, 2);
  }
  return out;
}

void ExpectError(const Result<TriangleMesh>& r, ErrorCode code, const std::string& must_contain,
                 const std::string& also = "") {
  ASSERT_FALSE(r.ok()) << "expected an error mentioning " << must_contain;
  EXPECT_EQ(r.error().code, code) << ErrorCodeName(r.error().code) << ": " << r.error().message;
  EXPECT_NE(r.error().message.find(must_contain), std::string::npos) << r.error().message;
  if (!also.empty()) {
    EXPECT_NE(r.error().message.find(also), std::string::npos) << r.error().message;
  }
}

// ----------------------------------------------------------------------------------------------------------
// The repository's fixtures.

TEST(LoadMesh, AsciiStlTetrahedron) {
  MeshLoadReport report;
  auto r = LoadMesh(Fixture("tetrahedron.stl"), {}, &report);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const TriangleMesh& m = r.value();
  EXPECT_EQ(m.vertices.size(), 4u);
  EXPECT_EQ(m.triangles.size(), 4u);
  EXPECT_TRUE(IsClosedAndConsistent(m));
  EXPECT_NEAR(SignedVolume(m), 1.0 / 6.0, 1e-15);
  ExpectBounds(m, Vec3::Zero(), Vec3::Ones(), 0);
  EXPECT_EQ(report.submeshes, 1);
  EXPECT_EQ(report.skipped_non_triangles, 0);
  EXPECT_EQ(report.removed_degenerate, 0);
}

TEST(LoadMesh, BinaryStlMatchesAscii) {
  const TriangleMesh ascii = testing::LoadMeshOrDie(Fixture("tetrahedron.stl"));
  ASSERT_EQ(ascii.triangles.size(), 4u);
  const std::string bytes = BinaryStl(ascii);
  ASSERT_EQ(bytes.size(), 84u + 50u * 4u);
  TempDir dir;
  auto binary = LoadMesh(dir.Write("tetrahedron_binary.stl", bytes));
  ASSERT_TRUE(binary.ok()) << binary.error().message;
  EXPECT_EQ(Soup(binary.value()), Soup(ascii));
  EXPECT_TRUE(IsClosedAndConsistent(binary.value()));

  auto memory = LoadMeshFromMemory(bytes, "stl", "tetrahedron in memory");
  ASSERT_TRUE(memory.ok()) << memory.error().message;
  EXPECT_EQ(Soup(memory.value()), Soup(ascii));
}

TEST(LoadMesh, BinaryStlOfAnIcosphereKeepsItClosed) {
  const TriangleMesh sphere = MakeIcosphereMesh(0.5, 2);
  auto r = LoadMeshFromMemory(BinaryStl(sphere), ".STL", "sphere");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().triangles.size(), sphere.triangles.size());
  EXPECT_EQ(r.value().vertices.size(), sphere.vertices.size()) << "float copies of one vertex weld back together";
  EXPECT_TRUE(IsClosedAndConsistent(r.value()));
  EXPECT_NEAR(SignedVolume(r.value()), SignedVolume(sphere), 1e-6);
}

TEST(LoadMesh, ObjQuadIsTriangulatedAndLineIsSkipped) {
  MeshLoadReport report;
  auto r = LoadMesh(Fixture("quad_and_line.obj"), {}, &report);
  ASSERT_TRUE(r.ok()) << r.error().message << " (the missing mtllib must not matter)";
  const TriangleMesh& m = r.value();
  EXPECT_EQ(m.triangles.size(), 2u);
  EXPECT_EQ(m.vertices.size(), 4u) << "the vertex used only by the line is dropped";
  EXPECT_EQ(report.skipped_non_triangles, 1);
  EXPECT_NEAR(Area(m), 1.0, 1e-15);
  ExpectBounds(m, Vec3::Zero(), Vec3(1, 1, 0), 0);
  for (const auto& t : m.triangles) {
    const Vec3 n = (m.vertices[t[1]] - m.vertices[t[0]]).cross(m.vertices[t[2]] - m.vertices[t[0]]);
    EXPECT_GT(n.z(), 0) << "the quad's counter-clockwise order is kept";
  }
}

TEST(LoadMesh, PlyBox) {
  auto r = LoadMesh(Fixture("box_2x3x4.ply"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().triangles.size(), 12u);
  EXPECT_EQ(r.value().vertices.size(), 8u);
  EXPECT_TRUE(IsClosedAndConsistent(r.value()));
  EXPECT_NEAR(SignedVolume(r.value()), 24.0, 1e-12);
  ExpectBounds(r.value(), Vec3(-1, -1.5, -2), Vec3(1, 1.5, 2), 0);
}

// boxes_z_up.dae declares Z_UP. Its 1 x 2 x 3 box (corner at the origin) is instanced twice: under
// translate(10, 0, 0) then translate(0, 0, 5), and under translate(-10, 0, 0) with scale(-1, 1, 1).
TEST(LoadMesh, ColladaKeepsItsOwnAxesAndAppliesNodeTransforms) {
  MeshLoadReport report;
  auto r = LoadMesh(Fixture("boxes_z_up.dae"), {}, &report);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const TriangleMesh& m = r.value();
  EXPECT_EQ(report.submeshes, 2);
  EXPECT_EQ(m.triangles.size(), 24u);
  ExpectBounds(m, Vec3(-11, 0, 0), Vec3(11, 2, 8), 1e-6);
  std::vector<double> xs;
  for (const Vec3& v : m.vertices) xs.push_back(v.x());
  EXPECT_NEAR(*std::min_element(xs.begin(), xs.end()), -11, 1e-6);
  // The mirrored instance has its winding reversed: both boxes enclose +6.
  EXPECT_TRUE(IsClosedAndConsistent(m));
  EXPECT_NEAR(SignedVolume(m), 12.0, 1e-5);
}

TEST(LoadMesh, ColladaUnitScaleIsApplied) {
  std::string text = ReadBytes(Fixture("boxes_z_up.dae"));
  const std::string metre = "meter=\"1\"";
  const auto at = text.find(metre);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, metre.size(), "meter=\"0.01\"");
  auto r = LoadMeshFromMemory(text, "dae", "centimetre boxes");
  ASSERT_TRUE(r.ok()) << r.error().message;
  ExpectBounds(r.value(), Vec3(-0.11, 0, 0), Vec3(0.11, 0.02, 0.08), 1e-8);
}

TEST(LoadMesh, FromMemoryMatchesFromFile) {
  for (const std::string name : {"tetrahedron.stl", "quad_and_line.obj", "box_2x3x4.ply", "boxes_z_up.dae"}) {
    SCOPED_TRACE(name);
    MeshLoadReport from_file, from_memory;
    auto a = LoadMesh(Fixture(name), {}, &from_file);
    auto b = LoadMeshFromMemory(ReadBytes(Fixture(name)), fs::path(name).extension().string(), name, {}, &from_memory);
    ASSERT_TRUE(a.ok()) << a.error().message;
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(a.value().vertices, b.value().vertices);
    EXPECT_EQ(a.value().triangles, b.value().triangles);
    EXPECT_EQ(from_file.submeshes, from_memory.submeshes);
    EXPECT_EQ(from_file.skipped_non_triangles, from_memory.skipped_non_triangles);
  }
}

TEST(LoadMesh, ScaleIsAppliedPerAxis) {
  const Vec3 scale(2, 0.5, 3);
  MeshLoadOptions options;
  options.scale = scale;
  auto r = LoadMesh(Fixture("box_2x3x4.ply"), options);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ExpectBounds(r.value(), Vec3(-2, -0.75, -6), Vec3(2, 0.75, 6), 1e-12);
  EXPECT_NEAR(SignedVolume(r.value()), 24.0 * 3, 1e-12);
}

TEST(LoadMesh, MirroringScaleKeepsTrianglesOutward) {
  for (const Vec3& scale : {Vec3(-1, 1, 1), Vec3(1, -2, 1), Vec3(-1, -1, -1), Vec3(-1, -1, 1)}) {
    MeshLoadOptions options;
    options.scale = scale;
    auto r = LoadMesh(Fixture("tetrahedron.stl"), options);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_NEAR(SignedVolume(r.value()), std::abs(scale.prod()) / 6.0, 1e-15) << scale.transpose();
    EXPECT_TRUE(IsClosedAndConsistent(r.value()));
  }
}

TEST(LoadMesh, WeldToleranceOption) {
  // Vertices 5 and 6 lie 1e-5 from vertices 1 and 3; welded, the thin third triangle repeats vertex 3.
  const std::string obj =
      "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n"
      "v 0.00001 0 0\nv 1.00001 1 0\n"
      "f 1 2 3\nf 5 3 4\nf 1 6 3\n";
  TempDir dir;
  const std::string path = dir.Write("near.obj", obj);
  MeshLoadReport report;
  auto exact = LoadMesh(path, {}, &report);
  ASSERT_TRUE(exact.ok()) << exact.error().message;
  EXPECT_EQ(exact.value().vertices.size(), 6u);
  EXPECT_EQ(exact.value().triangles.size(), 3u);

  MeshLoadOptions options;
  options.weld_tolerance = 1e-4;
  auto welded = LoadMesh(path, options, &report);
  ASSERT_TRUE(welded.ok()) << welded.error().message;
  EXPECT_EQ(welded.value().vertices.size(), 4u);
  EXPECT_EQ(welded.value().triangles.size(), 2u);
  EXPECT_EQ(report.removed_degenerate, 1);
  EXPECT_GE(report.welded_vertices, 2);

  options.weld_tolerance = 1e-6;
  auto tight = LoadMesh(path, options);
  ASSERT_TRUE(tight.ok());
  EXPECT_EQ(tight.value().vertices.size(), 6u);
}

TEST(LoadMesh, DegenerateTrianglesAreRemovedWhereAnEdgeCoversThemAndKeptElsewhere) {
  const std::string tetrahedron =
      "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nv 2 0 0\nv 0.5 0 0\n"
      "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";
  MeshLoadReport report;
  // A sliver along the edge 1-2: nothing of the surface is lost without it.
  std::string covered = tetrahedron;
  covered.append("f 1 6 2\n");
  auto r = LoadMeshFromMemory(covered, "obj", "tetrahedron with a covered sliver", {}, &report);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().triangles.size(), 4u);
  EXPECT_EQ(r.value().vertices.size(), 4u);
  EXPECT_EQ(report.removed_degenerate, 1);
  EXPECT_EQ(report.kept_degenerate, 0);
  EXPECT_TRUE(IsClosedAndConsistent(r.value()));
  // A sliver from vertex 1 to (2, 0, 0) reaches out of the tetrahedron: it stays, as a segment.
  std::string reaching = tetrahedron;
  reaching.append("f 1 2 5\n");
  auto out = LoadMeshFromMemory(reaching, "obj", "tetrahedron with a sliver", {}, &report);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out.value().triangles.size(), 5u);
  EXPECT_EQ(report.removed_degenerate, 0);
  EXPECT_EQ(report.kept_degenerate, 1);
}

// ----------------------------------------------------------------------------------------------------------
// Errors.

TEST(LoadMeshErrors, MissingFile) {
  const std::string path = Fixture("no_such_mesh.stl");
  ExpectError(LoadMesh(path), ErrorCode::kNotFound, "mesh file not found: " + path);
}

TEST(LoadMeshErrors, Directory) { ExpectError(LoadMesh(TestDataDir()), ErrorCode::kParseError, TestDataDir()); }

TEST(LoadMeshErrors, EmptyFile) {
  const std::string path = Fixture("empty.stl");
  ASSERT_TRUE(fs::exists(path));
  ExpectError(LoadMesh(path), ErrorCode::kParseError, path, "empty");
  ExpectError(LoadMeshFromMemory("", "stl", "nothing"), ErrorCode::kParseError, "nothing", "empty");
}

TEST(LoadMeshErrors, MalformedFiles) {
  for (const std::string name : {"malformed.stl", "malformed.obj"}) {
    const std::string path = Fixture(name);
    ASSERT_TRUE(fs::exists(path)) << path;
    ExpectError(LoadMesh(path), ErrorCode::kParseError, path);
    ExpectError(LoadMeshFromMemory(ReadBytes(path), fs::path(name).extension().string(), "bytes of " + name),
                ErrorCode::kParseError, "bytes of " + name);
  }
}

TEST(LoadMeshErrors, UnknownFormatAndGarbage) {
  TempDir dir;
  const std::string path = dir.Write("mesh.unknown", "solid? no.\n\x01\x02\x03");
  ExpectError(LoadMesh(path), ErrorCode::kParseError, path);
  ExpectError(LoadMeshFromMemory("\x7f\x45\x4c\x46 not a mesh", "stl", "garbage"), ErrorCode::kParseError,
              "garbage");
  ExpectError(LoadMeshFromMemory("solid x\nendsolid x\n", "stl", "empty solid"), ErrorCode::kParseError,
              "empty solid");
}

TEST(LoadMeshErrors, NonFiniteCoordinates) {
  TempDir dir;
  for (const std::string bad : {"nan", "inf", "-inf"}) {
    const std::string path =
        dir.Write("bad_" + bad + ".obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nv " + bad + " 0 0\nf 1 2 3\nf 1 4 2\n");
    ExpectError(LoadMesh(path), ErrorCode::kParseError, path, "vertex");
  }
}

TEST(LoadMeshErrors, ScaleThatOverflowsIsReported) {
  MeshLoadOptions options;
  options.scale = Vec3(1, 1, 1e308);  // z = 2 * 1e308 overflows
  ExpectError(LoadMesh(Fixture("box_2x3x4.ply"), options), ErrorCode::kParseError, "box_2x3x4.ply", "vertex");
}

TEST(LoadMeshErrors, NoTriangles) {
  TempDir dir;
  const std::string lines = dir.Write("lines.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nl 1 2\nl 2 3\n");
  ExpectError(LoadMesh(lines), ErrorCode::kParseError, lines, "has no triangles");
  const std::string flat = dir.Write("collinear.obj", "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n");
  ExpectError(LoadMesh(flat), ErrorCode::kParseError, flat, "no triangle with an area");
  const std::string points = dir.Write("points.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\np 1\np 2\np 3\n");
  ExpectError(LoadMesh(points), ErrorCode::kParseError, points, "has no triangles");
  const std::string vertices_only = dir.Write("vertices.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\n");
  ExpectError(LoadMesh(vertices_only), ErrorCode::kParseError, vertices_only);
}

TEST(LoadMeshErrors, BadOptions) {
  const std::string path = Fixture("tetrahedron.stl");
  const double nan = std::nan("");
  for (const Vec3& scale : {Vec3(0, 1, 1), Vec3(1, 1, -0.0), Vec3(nan, 1, 1), Vec3(1, HUGE_VAL, 1)}) {
    MeshLoadOptions options;
    options.scale = scale;
    ExpectError(LoadMesh(path, options), ErrorCode::kInvalidArgument, path, "scale");
    ExpectError(LoadMeshFromMemory(ReadBytes(path), "stl", "bytes", options), ErrorCode::kInvalidArgument, "scale");
  }
  for (const double tol : {-1e-3, nan, HUGE_VAL}) {
    MeshLoadOptions options;
    options.weld_tolerance = tol;
    ExpectError(LoadMesh(path, options), ErrorCode::kInvalidArgument, path, "weld tolerance");
  }
  MeshLoadOptions options;
  options.scale = Vec3::Zero();
  ExpectError(LoadMesh(Fixture("missing.stl"), options), ErrorCode::kInvalidArgument, "scale");
}

TEST(LoadMeshErrors, ReportIsUntouchedOnError) {
  MeshLoadReport report;
  report.submeshes = -5;
  EXPECT_FALSE(LoadMesh(Fixture("malformed.stl"), {}, &report).ok());
  EXPECT_EQ(report.submeshes, -5);
}

TEST(LoadMeshErrors, NothingIsPrintedToStdout) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  for (const std::string name : {"malformed.stl", "malformed.obj", "empty.stl", "quad_and_line.obj"}) {
    (void)LoadMesh(Fixture(name));
  }
  (void)LoadMeshFromMemory("v 0 0 0\nf 1 2 3\n", "obj", "broken");
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "");
}

/// The box of box_2x3x4.ply as a binary PLY with quad faces.
std::string BinaryPlyBox(const std::string& endianness) {
  const TriangleMesh box = MakeBoxMesh(Vec3(2, 3, 4));
  std::string out = "ply\nformat " + endianness +
                    " 1.0\nelement vertex 8\nproperty float x\nproperty float y\nproperty float z\n"
                    "element face 12\nproperty list uchar int vertex_indices\nend_header\n";
  const bool swap = endianness == "binary_big_endian";
  auto put = [&](const void* p, size_t n) {
    std::string bytes(static_cast<const char*>(p), n);
    if (swap) std::reverse(bytes.begin(), bytes.end());
    out += bytes;
  };
  for (const Vec3& v : box.vertices) {
    for (int i = 0; i < 3; ++i) {
      const auto f = static_cast<float>(v[i]);
      put(&f, 4);
    }
  }
  for (const auto& t : box.triangles) {
    const uint8_t three = 3;
    put(&three, 1);
    for (const int32_t i : t) put(&i, 4);
  }
  return out;
}

TEST(LoadMesh, BinaryPly) {
  for (const std::string endianness : {"binary_little_endian", "binary_big_endian"}) {
    SCOPED_TRACE(endianness);
    auto r = LoadMeshFromMemory(BinaryPlyBox(endianness), "ply", "binary box");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(Soup(r.value()), Soup(MakeBoxMesh(Vec3(2, 3, 4))));
  }
}

// assimp 5.2.5 hangs on a PLY header without end_header and crashes on truncated PLY bodies; the loader
// must turn all of these into errors.
TEST(LoadMeshErrors, TruncatedPly) {
  TempDir dir;
  const std::string ascii = ReadBytes(Fixture("box_2x3x4.ply"));
  const std::string binary = BinaryPlyBox("binary_little_endian");
  ASSERT_FALSE(ascii.empty());
  int errors = 0;
  for (const std::string* whole : {&ascii, &binary}) {
    for (size_t n = 1; n < whole->size(); ++n) {
      auto r = LoadMeshFromMemory(whole->substr(0, n), "ply", "truncated ply");
      if (!r.ok()) {
        ++errors;
        EXPECT_EQ(r.error().code, ErrorCode::kParseError) << r.error().message;
      }
    }
  }
  EXPECT_GT(errors, static_cast<int>(ascii.size() + binary.size()) / 2);
  const std::string path = dir.Write("cut.ply", binary.substr(0, binary.size() - 3));
  ExpectError(LoadMesh(path), ErrorCode::kParseError, path, "ends inside face 11");
}

TEST(LoadMeshErrors, PlyWithoutEndHeader) {
  ExpectError(LoadMeshFromMemory("ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\n", "ply", "headless"),
              ErrorCode::kParseError, "headless", "end_header");
}

// Found by mesh_fuzz: a binary PLY whose faces have no vertex indices (the body of a 4-vertex file
// under a header that declares 3, so the fourth vertex's zero bytes are read as empty faces). assimp
// 5.2.5's triangulation asserted on it and aborted the process.
TEST(LoadMeshErrors, PlyFaceWithoutIndices) {
  std::string binary =
      "ply\nformat binary_big_endian 1.0\ncomment fuzz seed\nelement vertex 3\nproperty float x\n"
      "property float y\nproperty float z\nelement face 4\nproperty list uchar int vertex_indices\nend_header\n";
  const unsigned char body[] = {
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3f, 0x80, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3f, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3f, 0x80, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
      0x00, 0x03, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x03, 0x00, 0x00,
      0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03};
  binary.append(reinterpret_cast<const char*>(body), sizeof body);
  ExpectError(LoadMeshFromMemory(binary, "ply", "empty faces"), ErrorCode::kParseError, "empty faces",
              "face 0 has no vertex indices");
  // The same in ASCII.
  const std::string ascii = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                            "property float z\nelement face 2\nproperty list uchar int vertex_indices\nend_header\n"
                            "0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n0\n";
  ExpectError(LoadMeshFromMemory(ascii, "ply", "empty ascii face"), ErrorCode::kParseError, "empty ascii face",
              "face 1 has no vertex indices");
}

// Found by mesh_fuzz: an OBJ whose material library cannot be opened, with a texture line ahead of it.
// assimp 5.2.5 then parses the OBJ bytes themselves as the library and writes through a null material
// (a segmentation fault). Material libraries are never read now.
TEST(LoadMeshErrors, ObjTextureLineAndAMissingMaterialLibrary) {
  ExpectError(LoadMeshFromMemory("map_Ks\nmtllib 5\n", "obj", "fuzz obj"), ErrorCode::kParseError, "fuzz obj");
  // The same after a NUL byte, which assimp takes for a line end (a later input).
  ExpectError(LoadMeshFromMemory(std::string("norm\x01\0 \0mtllib s", 16), "obj", "fuzz obj 2"), ErrorCode::kParseError,
              "fuzz obj 2");
  auto r = LoadMeshFromMemory("map_Kd x.png\n  mtllib missing.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "obj",
                              "textured triangle");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().triangles.size(), 1u);
}

// OBJ is read by the project's reader, with an "obj" hint, with none, or with an extension assimp does not
// know, and assimp's OBJ importer is taken out: these bytes (an mtllib, PLY words among the vertices; the
// input during which a mesh_fuzz run stopped at heap corruption, which was a PLY's: finding 11, test
// PlyElementsDeclaredTwice) get the reader's message naming the bad line, whatever the route.
TEST(LoadMeshErrors, ObjBytesNeverReachAssimp) {
  const std::string input = ReadBytes(TestDataDir() + "/../fuzz/corpus/mesh_fuzz/regression_obj_mtllib_and_ply_words");
  ASSERT_GT(input.size(), 1u);
  const std::string bytes = input.substr(1);  // the fuzzer's first byte picks the format
  for (const std::string hint : {"obj", "", "unknownformat"}) {
    ExpectError(LoadMeshFromMemory(bytes, hint, "heap " + hint), ErrorCode::kParseError, "heap " + hint,
                "line 4: vertex coordinate 'end_headerne' is not a number");
  }
}

// OBJ text without a usable extension is recognised by its content, as before, and read by the project's
// reader.
TEST(LoadMesh, ObjWithoutAnExtensionIsReadByItsContent) {
  for (const std::string hint : {"", "txt", "unknownformat"}) {
    const auto r = LoadMeshFromMemory("# a triangle\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", hint, "no extension");
    ASSERT_TRUE(r.ok()) << hint << ": " << r.error().message;
    EXPECT_EQ(r.value().triangles.size(), 1u);
  }
}

// assimp follows an OBJ's mtllib to the real file system, whatever FileAccess allows; a FIFO there
// blocked the load for ever. Loads open no file but the mesh's own.
TEST(LoadMesh, ObjMaterialLibraryIsNeverOpened) {
  TempDir dir;
  const std::string fifo = dir.Write("material.mtl", "");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string obj = "mtllib " + fifo + "\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";
  const std::string path = dir.Write("triangle.obj", obj);
  // On a thread, so that a load that blocks fails the test instead of hanging it.
  auto done = std::make_shared<std::promise<bool>>();
  std::future<bool> loaded = done->get_future();
  std::thread([obj, path, done] {
    done->set_value(LoadMeshFromMemory(obj, "obj", "in memory").ok() && LoadMesh(path).ok());
  }).detach();
  ASSERT_EQ(loaded.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "the load opened the FIFO";
  EXPECT_TRUE(loaded.get());
}

// Found by mesh_fuzz (tests/fuzz/RESULTS.md, finding 11): a PLY header declaring its vertex and face
// elements twice. assimp 5.2.5 sizes its arrays by the first of each and writes the later ones past their
// ends (heap corruption, seen by AddressSanitizer only when a damaged block was freed, inputs later; found
// with valgrind over the fuzzer's corpus). One vertex element and one face or tristrips element only; the
// format is given once.
TEST(LoadMeshErrors, PlyElementsDeclaredTwice) {
  const std::string input = ReadBytes(TestDataDir() + "/../fuzz/corpus/mesh_fuzz/regression_ply_duplicate_elements");
  ASSERT_GT(input.size(), 1u);
  ExpectError(LoadMeshFromMemory(input.substr(1), "ply", "fuzz ply"), ErrorCode::kParseError, "fuzz ply",
              "format twice");
  const std::string head = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                           "property float z\n";
  const std::string body = "0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n";
  const std::string faces = "element face 1\nproperty list uchar int vertex_indices\n";
  const std::string strips = "element tristrips 1\nproperty list uchar int vertex_indices\n";
  ExpectError(LoadMeshFromMemory(head + faces + faces + "end_header\n" + body + "3 0 1 2\n", "ply", "two faces"),
              ErrorCode::kParseError, "two faces", "second face element (after face)");
  ExpectError(LoadMeshFromMemory(head + faces + strips + "end_header\n" + body + "3 0 1 2\n", "ply", "face, strip"),
              ErrorCode::kParseError, "face, strip", "second tristrips element (after face)");
  ExpectError(LoadMeshFromMemory(head + "element vertex 3\nproperty float x\n" + faces + "end_header\n" + body,
                                 "ply", "two vertex"),
              ErrorCode::kParseError, "two vertex", "second vertex element");
  // One of each loads.
  const auto one = LoadMeshFromMemory(head + faces + "end_header\n" + body, "ply", "one of each");
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one.value().triangles.size(), 1u);
}

// Found by mesh_fuzz: a binary PLY with a blank line after end_header. assimp reads its body from another
// offset than the PLY check does, gets faces without indices from it, and its triangulation aborted the
// process. Faces are checked on assimp's own reading now, before its post-processing runs.
TEST(LoadMeshErrors, PlyBodyAssimpReadsAsEmptyFaces) {
  std::string bytes = "ply\nformat binary_big_endian 1.0\ncomment fuzz seed\nelement vertex 4\nproperty float x\nproperty float y\nproperty float z\nelement face 4\nproperty list uchar int vertex_indices\nend_header\n";
  const unsigned char body[] = {
      0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3f, 0x80, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3f, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3f, 0x80, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
      0x00, 0x03, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x03, 0x00, 0x00,
      0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03};
  bytes.append(reinterpret_cast<const char*>(body), sizeof body);
  ExpectError(LoadMeshFromMemory(bytes, "ply", "blank line ply"), ErrorCode::kParseError, "blank line ply",
              "has no vertex indices");
}

// Found by mesh_fuzz: one byte (0xb6) inserted into an index list of tests/data/boxes_z_up.dae made
// assimp 5.2.5 allocate 4.8 GB; other stray characters there made it allocate 3 GB or dereference null.
// Index lists hold unsigned integers only.
TEST(LoadMeshErrors, ColladaIndexListWithAStrayByte) {
  std::string text = ReadBytes(Fixture("boxes_z_up.dae"));
  const std::string list = "4 5 6 4 6 7";
  const auto at = text.find(list);
  ASSERT_NE(at, std::string::npos);
  text.insert(at + 8, "\xb6");
  ExpectError(LoadMeshFromMemory(text, "dae", "stray byte"), ErrorCode::kParseError, "stray byte", "<p> list");
  ExpectError(LoadMeshFromMemory(text, "", "no hint"), ErrorCode::kParseError, "no hint", "<p> list");
  std::string vcount = "<COLLADA><library_geometries><geometry><mesh><polylist count=\"1\"><vcount>3x</vcount>"
                       "<p>0 1 2</p></polylist></mesh></geometry></library_geometries></COLLADA>";
  ExpectError(LoadMeshFromMemory(vcount, "dae", "vcount"), ErrorCode::kParseError, "vcount", "<vcount> list");
  // The fixture itself still loads.
  EXPECT_TRUE(LoadMeshFromMemory(ReadBytes(Fixture("boxes_z_up.dae")), "dae", "fixture").ok());
}

// Found by mesh_fuzz (tests/fuzz/RESULTS.md, finding 10): a float_array whose count a stray byte made
// unreadable (assimp reads it as 0) under an accessor of 4 points made assimp read past the empty array (a
// crash). Accessors must fit in the arrays they name, and their numbers must be unsigned integers.
TEST(LoadMeshErrors, ColladaAccessorPastItsArray) {
  const std::string tetra =
      "<COLLADA><library_geometries><geometry id=\"tet\"><mesh>"
      "<source id=\"pos\"><float_array id=\"pos-array\" count=\"12\">0 0 0 1 0 0 0 1 0 0 0 1</float_array>"
      "<technique_common><accessor source=\"#pos-array\" count=\"4\" stride=\"3\">"
      "<param name=\"X\" type=\"float\"/><param name=\"Y\" type=\"float\"/><param name=\"Z\" type=\"float\"/>"
      "</accessor></technique_common></source>"
      "<source id=\"names\"><Name_array id=\"names-array\" count=\"12\">a b c d e f g h i j k l</Name_array>"
      "<technique_common><accessor source=\"#names-array\" count=\"4\" stride=\"3\">"
      "<param name=\"X\" type=\"name\"/></accessor></technique_common></source>"
      "<vertices id=\"vtx\"><input semantic=\"POSITION\" source=\"#pos\"/></vertices>"
      "<triangles count=\"4\"><input semantic=\"VERTEX\" source=\"#vtx\" offset=\"0\"/>"
      "<p>0 2 1 0 1 3 0 3 2 1 2 3</p></triangles></mesh></geometry></library_geometries>"
      "<library_visual_scenes><visual_scene id=\"scene\"><node id=\"a\"><instance_geometry url=\"#tet\"/></node>"
      "</visual_scene></library_visual_scenes><scene><instance_visual_scene url=\"#scene\"/></scene></COLLADA>";
  // The well-formed document loads (the Name_array beside it is read by no mesh input).
  const Result<TriangleMesh> good = LoadMeshFromMemory(tetra, "dae", "tetra");
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good.value().triangles.size(), 4u);
  const auto changed = [&](const std::string& from, const std::string& to) {
    std::string text = tetra;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
  };
  struct Case {
    std::string name, text, says;
  };
  const std::vector<Case> cases = {
      {"stray byte in count", changed("count=\"12\">0", "count=\"\xbf" "2\">0"), "not an unsigned integer"},
      {"short array", changed("count=\"12\">0", "count=\"9\">0"), "of an array of 9 values"},
      {"offset past the end", changed("count=\"4\" stride", "offset=\"1\" count=\"4\" stride"), "from offset 1"},
      {"negative count", changed("count=\"4\" stride", "count=\"-1\" stride"), "count=\"-1\""},
      {"fractional stride", changed("stride=\"3\">", "stride=\"3.5\">"), "stride=\"3.5\""},
      {"unknown array", changed("source=\"#pos-array\"", "source=\"#nowhere\""), "\"#nowhere\""},
      {"names as positions", changed("source=\"#pos\"/>", "source=\"#names\"/>"), "holds names"},
  };
  for (const Case& c : cases) {
    ExpectError(LoadMeshFromMemory(c.text, "dae", c.name), ErrorCode::kParseError, c.name, c.says);
    ExpectError(LoadMeshFromMemory(c.text, "", c.name), ErrorCode::kParseError, c.name, c.says);
  }
  // The repository's COLLADA fixture still loads (the shared robots' files are loaded by the tests below).
  EXPECT_TRUE(LoadMeshFromMemory(ReadBytes(Fixture("boxes_z_up.dae")), "dae", "fixture").ok());
}

// Found by mesh_fuzz (tests/fuzz/RESULTS.md, finding 12): a form feed inside a <p> list made assimp 5.2.5
// allocate 1.6 to 6 GB. XML allows no control character but tab, line feed and carriage return.
TEST(LoadMeshErrors, ColladaControlCharacter) {
  const std::string input = ReadBytes(TestDataDir() + "/../fuzz/corpus/mesh_fuzz/regression_dae_form_feed_in_index_list");
  ASSERT_GT(input.size(), 1u);
  ExpectError(LoadMeshFromMemory(input.substr(1), "dae", "form feed"), ErrorCode::kParseError, "form feed",
              "control character 0x0c");
  std::string text = ReadBytes(Fixture("boxes_z_up.dae"));
  for (const char c : {'\0', '\x01', '\v', '\x1f'}) {
    std::string bad = text;
    bad.insert(bad.find("<p>") + 3, 1, c);
    ExpectError(LoadMeshFromMemory(bad, "dae", "control"), ErrorCode::kParseError, "control", "control character");
  }
  // Tabs, carriage returns and line feeds are XML white space: the fixture with them between indices loads.
  std::string spaced = text;
  spaced.insert(spaced.find("<p>") + 3, "\t\r\n");
  EXPECT_TRUE(LoadMeshFromMemory(spaced, "dae", "white space").ok());
}

// The COLLADA checks read the document in linear time: a tag never closed, or many accessors outside any
// <source>, once made every element search to the document's end or back to its start.
TEST(LoadMeshErrors, ColladaChecksOfHostileDocumentsEnd) {
  std::string unclosed = "<COLLADA><library_geometries>";
  for (int k = 0; k < 100'000; ++k) unclosed += "<accessor ";
  ExpectError(LoadMeshFromMemory(unclosed, "dae", "unclosed"), ErrorCode::kParseError, "unclosed",
              "opening tag longer than 4096 bytes");
  std::string orphans = "<COLLADA><library_geometries><float_array id=\"a\" count=\"3\">0 0 0</float_array>";
  for (int k = 0; k < 50'000; ++k) orphans += "<accessor source=\"#a\" count=\"1\" stride=\"3\"/>";
  orphans += "<accessor source=\"#a\" count=\"2\" stride=\"3\"/></library_geometries></COLLADA>";
  ExpectError(LoadMeshFromMemory(orphans, "dae", "orphans"), ErrorCode::kParseError, "orphans",
              "reads 2 elements of stride 3 from offset 0 of an array of 3 values");
}

// Found by mesh_fuzz (tests/fuzz/RESULTS.md, finding 5): a primitive with a count and no inputs made
// assimp dereference a null pointer (a crash of the process that loads it).
TEST(LoadMeshErrors, ColladaPrimitiveWithoutVertexInput) {
  const std::string crash = "<COLLADA><library_geometries><geometry><mesh><polylist count=\"1\"></polylist></mesh>"
                            "</geometry></library_geometries></COLLADA>";
  ExpectError(LoadMeshFromMemory(crash, "dae", "no inputs"), ErrorCode::kParseError, "no inputs", "<polylist>");
  ExpectError(LoadMeshFromMemory(crash, "", "no hint"), ErrorCode::kParseError, "no hint", "VERTEX");
  // Self-closing, and with inputs other than VERTEX, in every primitive kind.
  for (const std::string kind : {"triangles", "polylist", "polygons", "trifans", "tristrips", "lines", "linestrips"}) {
    const std::string closed = "<COLLADA><library_geometries><geometry><mesh><" + kind +
                               " count=\"2\"/></mesh></geometry></library_geometries></COLLADA>";
    ExpectError(LoadMeshFromMemory(closed, "dae", kind), ErrorCode::kParseError, kind, "<" + kind + ">");
    const std::string normal_only = "<COLLADA><library_geometries><geometry><mesh><" + kind +
                                    " count=\"1\"><input semantic=\"NORMAL\" source=\"#n\" offset=\"0\"/>"
                                    "<p>0 1 2</p></" + kind + "></mesh></geometry></library_geometries></COLLADA>";
    ExpectError(LoadMeshFromMemory(normal_only, "dae", kind), ErrorCode::kParseError, kind, "VERTEX");
  }
  // A file whose primitives have their VERTEX input still loads, from memory and from a file.
  EXPECT_TRUE(LoadMeshFromMemory(ReadBytes(Fixture("boxes_z_up.dae")), "dae", "fixture").ok());
  EXPECT_TRUE(LoadMesh(Fixture("boxes_z_up.dae")).ok());
}

TEST(LoadMeshErrors, PlyFaceIndexOutOfRange) {
  std::string text = ReadBytes(Fixture("box_2x3x4.ply"));
  const std::string last_face = "4 3 0 4 7";
  const auto at = text.find(last_face);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, last_face.size(), "4 3 0 4 8");
  ExpectError(LoadMeshFromMemory(text, "ply", "bad index"), ErrorCode::kParseError, "bad index", "out of range");
}

// ----------------------------------------------------------------------------------------------------------
// Shared robots and scenes (../shared/data); see its README for the counts.

struct CountedMesh {
  const char* path;
  int triangles;
};

void ExpectLoads(const std::string& root, const std::vector<CountedMesh>& meshes) {
  for (const auto& [relative, triangles] : meshes) {
    const std::string path = root + "/" + relative;
    SCOPED_TRACE(path);
    MeshLoadReport report;
    auto r = LoadMesh(path, {}, &report);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(static_cast<int>(r.value().triangles.size()) + report.removed_degenerate, triangles);
    EXPECT_EQ(report.removed_degenerate, 0);
    EXPECT_GT(SignedVolume(r.value()), 0) << "collision meshes face outward";
  }
}

TEST(SharedMeshFiles, PandaCollisionStl) {
  const std::string data = SharedDataDir();
  PROX_REQUIRE_DIR(data, "../shared/data");
  ExpectLoads(data + "/robots/panda/moveit_resources_panda_description/meshes/collision",
              {{"finger.stl", 32}, {"hand.stl", 200}, {"link0.stl", 200}, {"link1.stl", 300}, {"link2.stl", 300},
               {"link3.stl", 300}, {"link4.stl", 300}, {"link5.stl", 300}, {"link6.stl", 200}, {"link7.stl", 200}});
}

TEST(SharedMeshFiles, Ur5CollisionStl) {
  const std::string data = SharedDataDir();
  PROX_REQUIRE_DIR(data, "../shared/data");
  ExpectLoads(data + "/robots/ur5/ur_description/meshes/ur5/collision",
              {{"base.stl", 578}, {"forearm.stl", 1050}, {"shoulder.stl", 674}, {"upper_arm.stl", 1176},
               {"wrist_1.stl", 702}, {"wrist_2.stl", 702}, {"wrist_3.stl", 446}});
}

TEST(SharedMeshFiles, MbmPandaCollisionObj) {
  const std::string data = SharedDataDir();
  PROX_REQUIRE_DIR(data, "../shared/data");
  const std::string dir = data + "/robots/mbm_panda/meshes/collision";
  ExpectLoads(dir, {{"finger.obj", 32}, {"hand.obj", 200}, {"link0.obj", 200}, {"link1.obj", 300},
                    {"link2.obj", 300}, {"link3.obj", 300}, {"link4.obj", 300}, {"link5.obj", 300},
                    {"link6.obj", 1308}, {"link7.obj", 200}});
  MeshLoadReport report;
  auto link6 = LoadMesh(dir + "/link6.obj", {}, &report);
  ASSERT_TRUE(link6.ok());
  EXPECT_EQ(link6.value().triangles.size(), 1308u);
  EXPECT_EQ(report.skipped_non_triangles, 19) << "the 19 'l' elements";
  EXPECT_GT(report.submeshes, 1);
}

// Both Panda folders hold the same geometry for every link except link6 (200 vs 1308 triangles).
TEST(SharedMeshFiles, MbmPandaObjMatchesPandaStl) {
  const std::string data = SharedDataDir();
  PROX_REQUIRE_DIR(data, "../shared/data");
  for (const std::string link : {"finger", "hand", "link0", "link1", "link2", "link3", "link4", "link5", "link7"}) {
    SCOPED_TRACE(link);
    const TriangleMesh obj = testing::LoadMeshOrDie(data + "/robots/mbm_panda/meshes/collision/" + link + ".obj");
    const TriangleMesh stl = testing::LoadMeshOrDie(
        data + "/robots/panda/moveit_resources_panda_description/meshes/collision/" + link + ".stl");
    const auto a = MeshBounds(obj), b = MeshBounds(stl);
    EXPECT_LT((a[0] - b[0]).cwiseAbs().maxCoeff(), 1e-5);
    EXPECT_LT((a[1] - b[1]).cwiseAbs().maxCoeff(), 1e-5);
    EXPECT_EQ(obj.vertices.size(), stl.vertices.size());
    EXPECT_NEAR(SignedVolume(obj), SignedVolume(stl), 1e-4 * SignedVolume(stl));
  }
}

TEST(SharedMeshFiles, FclSceneObj) {
  const std::string data = SharedDataDir();
  PROX_REQUIRE_DIR(data, "../shared/data");
  const TriangleMesh env = testing::LoadMeshOrDie(data + "/scenes/fcl/env.obj");
  const TriangleMesh rob = testing::LoadMeshOrDie(data + "/scenes/fcl/rob.obj");
  EXPECT_EQ(env.triangles.size(), 2180u);
  EXPECT_EQ(rob.triangles.size(), 216u);
  ExpectBounds(env, Vec3(-3004, -3004, -14.5), Vec3(2988, 3004, 2988), 1.0);
  ExpectBounds(rob, Vec3(-500, -605, -425), Vec3(500, 605, 425), 1e-3);
}

// The UR5 visual COLLADA files declare Z_UP; read in their own axes they line up with the collision STLs.
// Read through assimp's +Y-up root rotation, the y and z ranges of Base would be swapped (y in [-0.003, 0.021]).
TEST(SharedMeshFiles, Ur5ColladaUpAxisMatchesCollisionStl) {
  const std::string data = SharedDataDir();
  PROX_REQUIRE_DIR(data, "../shared/data");
  const std::string ur5 = data + "/robots/ur5/ur_description/meshes/ur5";
  for (const auto& [visual, collision] : std::vector<std::pair<std::string, std::string>>{
           {"Base.dae", "base.stl"}, {"UpperArm.dae", "upper_arm.stl"}, {"Wrist3.dae", "wrist_3.stl"}}) {
    SCOPED_TRACE(visual);
    const auto a = MeshBounds(testing::LoadMeshOrDie(ur5 + "/visual/" + visual));
    const auto b = MeshBounds(testing::LoadMeshOrDie(ur5 + "/collision/" + collision));
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(a[0][i], b[0][i], 5e-4) << "axis " << i;
      EXPECT_NEAR(a[1][i], b[1][i], 5e-4) << "axis " << i;
    }
  }
}

// README: zero-area triangles in Forearm (6), Shoulder (4), UpperArm (8), Wrist1 (2), Wrist2 (2).
TEST(SharedMeshFiles, Ur5ColladaDegenerateTriangles) {
  const std::string data = SharedDataDir();
  PROX_REQUIRE_DIR(data, "../shared/data");
  const std::string dir = data + "/robots/ur5/ur_description/meshes/ur5/visual/";
  const std::vector<std::tuple<std::string, int, int>> files = {
      {"Base.dae", 1932, 0},      {"Forearm.dae", 21028, 6}, {"Shoulder.dae", 13492, 4}, {"UpperArm.dae", 29436, 8},
      {"Wrist1.dae", 14074, 2},   {"Wrist2.dae", 14074, 2},  {"Wrist3.dae", 1658, 0}};
  for (const auto& [name, triangles, degenerate] : files) {
    SCOPED_TRACE(name);
    MeshLoadReport report;
    auto r = LoadMesh(dir + name, {}, &report);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(report.removed_degenerate, degenerate);
    EXPECT_EQ(static_cast<int>(r.value().triangles.size()), triangles - degenerate);
    EXPECT_EQ(report.skipped_non_triangles, 0);
    EXPECT_GT(SignedVolume(r.value()), 0);
  }
}

// A binary STL states its triangle count in its header; every triangle is either kept or counted as degenerate.
void ExpectBinaryStlCountsMatchHeader(const std::string& folder) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    std::string ext = entry.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    if (ext != ".stl") continue;
    SCOPED_TRACE(entry.path().string());
    const std::string bytes = ReadBytes(entry.path().string());
    ASSERT_GE(bytes.size(), 84u);
    uint32_t count;
    std::memcpy(&count, bytes.data() + 80, 4);
    ASSERT_EQ(bytes.size(), 84u + 50u * count) << "not a binary STL";
    MeshLoadReport report;
    auto r = LoadMesh(entry.path().string(), {}, &report);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r.value().triangles.size() + report.removed_degenerate, count);
    EXPECT_GT(SignedVolume(r.value()), 0);
    ++files;
  }
  EXPECT_GT(files, 0) << "no STL in " << folder;
}

TEST(DartMeshFiles, Kr5Stl) {
  const std::string dart = DartUrdfDir();
  PROX_REQUIRE_DIR(dart, "/usr/share/doc/dart/data/urdf (Debian dart-doc)");
  ExpectBinaryStlCountsMatchHeader(dart + "/KR5/meshes");
}

TEST(DartMeshFiles, WamStl) {
  const std::string dart = DartUrdfDir();
  PROX_REQUIRE_DIR(dart, "/usr/share/doc/dart/data/urdf (Debian dart-doc)");
  ExpectBinaryStlCountsMatchHeader(dart + "/wam/meshes/wam");
}

// wam_base.dae declares Y_UP, so nothing is rotated: it matches the STL export of the same part.
TEST(DartMeshFiles, WamYUpColladaMatchesStl) {
  const std::string dart = DartUrdfDir();
  PROX_REQUIRE_DIR(dart, "/usr/share/doc/dart/data/urdf (Debian dart-doc)");
  const TriangleMesh dae = testing::LoadMeshOrDie(dart + "/wam/meshes/wam/wam_base.dae");
  const TriangleMesh stl = testing::LoadMeshOrDie(dart + "/wam/meshes/wam/wam_base.STL");
  const auto a = MeshBounds(dae), b = MeshBounds(stl);
  EXPECT_LT((a[0] - b[0]).cwiseAbs().maxCoeff(), 1e-5);
  EXPECT_LT((a[1] - b[1]).cwiseAbs().maxCoeff(), 1e-5);
  EXPECT_EQ(dae.triangles.size(), stl.triangles.size());
  EXPECT_NEAR(SignedVolume(dae), SignedVolume(stl), 1e-6);
}

}  // namespace
}  // namespace proximity::core
