#include "core/test_util.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <limits>
#include <map>

#include "proximity/core/mesh/mesh.h"
#include "narrowphase/triangle.h"
#include "base/numerics.h"

// assimp 5.2.5 leaks the partly built mesh when an ASCII STL ends inside a facet (a broken file the
// tests load on purpose). The leak is inside assimp, so leak-checking builds ignore leaks from it.
extern "C" const char* __lsan_default_suppressions() { return "leak:libassimp.so\n"; }

namespace proximity::testing {
namespace {
std::string DirIfExists(const char* path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) ? std::string(path) : std::string();
}
}  // namespace

std::string SharedDataDir() { return DirIfExists(PROX_SHARED_DATA_DIR); }
std::string DartUrdfDir() { return DirIfExists(PROX_DART_URDF_DIR); }
std::string TestDataDir() { return PROX_TEST_DATA_DIR; }

core::Mat3 RandomRotation(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double u1 = u(rng), u2 = u(rng), u3 = u(rng);
  const double a = std::sqrt(1 - u1), b = std::sqrt(u1);
  Eigen::Quaterniond q(b * std::cos(2 * M_PI * u3), a * std::sin(2 * M_PI * u2), a * std::cos(2 * M_PI * u2),
                       b * std::sin(2 * M_PI * u3));
  return q.normalized().toRotationMatrix();
}

RigidTransform RandomPose(std::mt19937_64& rng, const Vec3& lo, const Vec3& hi) {
  RigidTransform X;
  X.R = RandomRotation(rng);
  for (int i = 0; i < 3; ++i) X.p[i] = std::uniform_real_distribution<double>(lo[i], hi[i])(rng);
  return X;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TriangleMesh LoadMeshOrDie(const std::string& path) {
  auto r = core::LoadMesh(path);
  if (!r.ok()) {
    ADD_FAILURE() << "loading " << path << ": " << r.error().message;
    return {};
  }
  return std::move(r).value();
}

namespace {
std::vector<Vec3> Posed(const TriangleMesh& m, const RigidTransform& X) {
  std::vector<Vec3> out;
  out.reserve(m.vertices.size());
  for (const Vec3& v : m.vertices) out.push_back(X * v);
  return out;
}
}  // namespace

bool BruteForceCollide(const TriangleMesh& a, const RigidTransform& X_WA, const TriangleMesh& b,
                       const RigidTransform& X_WB) {
  const auto va = Posed(a, X_WA), vb = Posed(b, X_WB);
  for (const auto& ta : a.triangles)
    for (const auto& tb : b.triangles)
      if (core::TrianglesIntersect(va[ta[0]], va[ta[1]], va[ta[2]], vb[tb[0]], vb[tb[1]], vb[tb[2]])) return true;
  return false;
}

double BruteForceDistance(const TriangleMesh& a, const RigidTransform& X_WA, const TriangleMesh& b,
                          const RigidTransform& X_WB, int* tri_a, int* tri_b) {
  const auto va = Posed(a, X_WA), vb = Posed(b, X_WB);
  double best = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < a.triangles.size(); ++i) {
    const auto& ta = a.triangles[i];
    for (size_t j = 0; j < b.triangles.size(); ++j) {
      const auto& tb = b.triangles[j];
      Vec3 pa, pb;
      const double d = core::TriangleDistance(va[ta[0]], va[ta[1]], va[ta[2]], vb[tb[0]], vb[tb[1]], vb[tb[2]], &pa, &pb);
      if (d < best) {
        best = d;
        if (tri_a) *tri_a = static_cast<int>(i);
        if (tri_b) *tri_b = static_cast<int>(j);
      }
    }
  }
  return best;
}

double QueryRoundingAllowance(const TriangleMesh& a, const RigidTransform& X_WA, const TriangleMesh& b,
                              const RigidTransform& X_WB) {
  auto reach = [](const TriangleMesh& m) {
    double r = 0.0;
    for (const Vec3& v : m.vertices) r = std::max(r, v.norm());
    return 3.0 * r;
  };
  return core::RoundingAllowance(X_WA.p.cwiseAbs().maxCoeff() + X_WB.p.cwiseAbs().maxCoeff() + reach(a) + reach(b));
}

TriangleMesh Subdivided(const TriangleMesh& m) {
  TriangleMesh out;
  out.vertices = m.vertices;
  std::map<std::pair<int32_t, int32_t>, int32_t> middle;
  const auto mid = [&](int32_t a, int32_t b) {
    const auto key = std::minmax(a, b);
    auto [it, added] = middle.emplace(key, static_cast<int32_t>(out.vertices.size()));
    if (added) out.vertices.push_back(0.5 * (m.vertices[a] + m.vertices[b]));
    return it->second;
  };
  for (const auto& t : m.triangles) {
    const int32_t ab = mid(t[0], t[1]), bc = mid(t[1], t[2]), ca = mid(t[2], t[0]);
    out.triangles.push_back({t[0], ab, ca});
    out.triangles.push_back({ab, t[1], bc});
    out.triangles.push_back({ca, bc, t[2]});
    out.triangles.push_back({ab, bc, ca});
  }
  return out;
}

TriangleMesh CrossedBoxesMesh() {
  TriangleMesh cross = core::MakeBoxMesh(Vec3(0.3, 0.08, 0.08));
  const TriangleMesh bar = core::MakeBoxMesh(Vec3(0.07, 0.07, 0.3));  // no face in a plane of the other's
  const auto offset = static_cast<int32_t>(cross.vertices.size());
  cross.vertices.insert(cross.vertices.end(), bar.vertices.begin(), bar.vertices.end());
  for (const auto& t : bar.triangles) cross.triangles.push_back({t[0] + offset, t[1] + offset, t[2] + offset});
  return Subdivided(cross);
}

TriangleMesh DentedBoxMesh(const Vec3& size, double dent) {
  TriangleMesh m = core::MakeBoxMesh(size);
  const auto n = static_cast<int32_t>(m.vertices.size());
  const double top = 0.5 * size.z();
  m.vertices.push_back(Vec3(0.0, 0.0, top - dent));
  std::vector<std::array<int32_t, 3>> triangles;
  for (const auto& t : m.triangles) {
    if (m.vertices[t[0]].z() != top || m.vertices[t[1]].z() != top || m.vertices[t[2]].z() != top) {
      triangles.push_back(t);
      continue;
    }
    for (int k = 0; k < 3; ++k) {
      // The square's outline only: the diagonal its two triangles share is dropped.
      const Vec3 &a = m.vertices[t[k]], &b = m.vertices[t[(k + 1) % 3]];
      if (a.x() != b.x() && a.y() != b.y()) continue;
      triangles.push_back({t[k], t[(k + 1) % 3], n});
    }
  }
  m.triangles = triangles;
  return m;
}

double SignedVolume(const TriangleMesh& m) {
  double six_v = 0;
  for (const auto& t : m.triangles) six_v += m.vertices[t[0]].dot(m.vertices[t[1]].cross(m.vertices[t[2]]));
  return six_v / 6;
}

::testing::AssertionResult IsClosedAndConsistent(const TriangleMesh& m) {
  std::map<std::pair<int32_t, int32_t>, int> directed;
  for (const auto& t : m.triangles) {
    for (int i = 0; i < 3; ++i) ++directed[{t[i], t[(i + 1) % 3]}];
  }
  for (const auto& [edge, count] : directed) {
    if (count != 1) {
      return ::testing::AssertionFailure() << "directed edge " << edge.first << "->" << edge.second << " used "
                                           << count << " times";
    }
    if (!directed.contains({edge.second, edge.first})) {
      return ::testing::AssertionFailure() << "edge " << edge.first << "->" << edge.second
                                           << " has no opposite (open boundary)";
    }
  }
  return ::testing::AssertionSuccess();
}

std::multiset<std::array<std::array<double, 3>, 3>> Soup(const TriangleMesh& m) {
  std::multiset<std::array<std::array<double, 3>, 3>> soup;
  for (const auto& t : m.triangles) {
    std::array<std::array<double, 3>, 3> tri;
    for (int i = 0; i < 3; ++i) tri[i] = {m.vertices[t[i]].x(), m.vertices[t[i]].y(), m.vertices[t[i]].z()};
    std::rotate(tri.begin(), std::min_element(tri.begin(), tri.end()), tri.end());
    soup.insert(tri);
  }
  return soup;
}

double PointMeshDistance(const Vec3& p_W, const TriangleMesh& mesh, const RigidTransform& X_WM) {
  const auto v = Posed(mesh, X_WM);
  double best = std::numeric_limits<double>::infinity();
  for (const auto& t : mesh.triangles)
    best = std::min(best, (core::ClosestPointOnTriangle(p_W, v[t[0]], v[t[1]], v[t[2]]) - p_W).norm());
  return best;
}

std::shared_ptr<const core::ConvexPolytope> RandomHull(std::mt19937_64& rng, int n, double size,
                                                       double min_stretch) {
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> stretch(min_stretch, 1.5);
  const Vec3 axes(stretch(rng), stretch(rng), stretch(rng));
  std::vector<Vec3> p(n);
  for (Vec3& x : p) x = size * Vec3(g(rng), g(rng), g(rng)).cwiseProduct(axes);
  auto hull = core::ConvexPolytope::Build(p);
  EXPECT_TRUE(hull.ok()) << hull.error().message;
  return hull.value();
}

std::shared_ptr<const core::ConvexPolytope> TessellatedHull(const core::Cylinder& c, int n, bool outer) {
  const double r = outer ? c.radius / std::cos(M_PI / n) : c.radius;
  std::vector<Vec3> p;
  for (int i = 0; i < n; ++i) {
    const double t = 2 * M_PI * i / n;
    p.emplace_back(r * std::cos(t), r * std::sin(t), c.half_length);
    p.emplace_back(r * std::cos(t), r * std::sin(t), -c.half_length);
  }
  return core::ConvexPolytope::Build(p).value();
}

std::shared_ptr<const core::ConvexPolytope> TessellatedHull(const core::Cone& c, int n, bool outer) {
  const double r = outer ? c.radius / std::cos(M_PI / n) : c.radius;
  std::vector<Vec3> p = {Vec3(0, 0, c.half_height)};
  for (int i = 0; i < n; ++i) {
    const double t = 2 * M_PI * i / n;
    p.emplace_back(r * std::cos(t), r * std::sin(t), -c.half_height);
  }
  return core::ConvexPolytope::Build(p).value();
}

}  // namespace proximity::testing
