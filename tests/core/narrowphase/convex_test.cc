#include "narrowphase/convex.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "core/test_util.h"

namespace proximity::core {
namespace {

std::vector<Vec3> RandomCloud(std::mt19937_64& rng, int n, int kind) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<Vec3> p(n);
  for (Vec3& x : p) {
    if (kind == 0) {
      x = Vec3(u(rng), u(rng), u(rng));
    } else if (kind == 1) {
      x = Vec3(g(rng), 0.3 * g(rng), 2.0 * g(rng));
    } else {
      x = Vec3(g(rng), g(rng), g(rng)).normalized();  // Every point is a hull vertex.
    }
  }
  return p;
}

Vec3 RandomDirection(std::mt19937_64& rng) {
  std::normal_distribution<double> g(0.0, 1.0);
  return Vec3(g(rng), g(rng), g(rng));
}

double Scale(std::span<const Vec3> points) {
  double s = 0.0;
  for (const Vec3& p : points) s = std::max(s, p.cwiseAbs().maxCoeff());
  return s;
}

// Every hull invariant the narrow phase relies on.
void ExpectValidHull(const ConvexPolytope& hull, std::span<const Vec3> points) {
  const double tol = 1e-9 * Scale(points);
  const int32_t V = hull.num_vertices(), E = hull.num_edges(), F = hull.num_faces();
  EXPECT_EQ(V - E + F, 2) << "Euler characteristic";
  EXPECT_EQ(2 * E, 3 * F);
  ASSERT_EQ(hull.face_planes().size(), hull.faces().size());
  ASSERT_EQ(hull.input_indices().size(), hull.vertices().size());
  // Vertices are input points, each once.
  std::set<int32_t> used;
  for (int32_t i = 0; i < V; ++i) {
    const int32_t k = hull.input_indices()[i];
    ASSERT_GE(k, 0);
    ASSERT_LT(k, static_cast<int32_t>(points.size()));
    EXPECT_EQ(hull.vertices()[i], points[k]);
    EXPECT_TRUE(used.insert(k).second);
  }
  // Closed, consistently oriented, outward.
  const TriangleMesh mesh = hull.ToMesh();
  EXPECT_TRUE(testing::IsClosedAndConsistent(mesh));
  EXPECT_GT(testing::SignedVolume(mesh), 0.0);
  for (int32_t f = 0; f < F; ++f) {
    const auto& t = hull.faces()[f];
    const FacePlane& plane = hull.face_planes()[f];
    EXPECT_NEAR(plane.normal.norm(), 1.0, 1e-12);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(plane.normal.dot(hull.vertices()[t[k]]), plane.offset, tol);
    const Vec3 n = (hull.vertices()[t[1]] - hull.vertices()[t[0]]).cross(hull.vertices()[t[2]] - hull.vertices()[t[0]]);
    if (n.norm() > 1e-6 * Scale(points) * Scale(points)) {
      EXPECT_GT(n.dot(plane.normal), 0.0) << "face " << f;
    }
  }
  // Every input point is inside every face plane.
  double worst = -std::numeric_limits<double>::infinity();
  for (const Vec3& p : points)
    for (const FacePlane& plane : hull.face_planes()) worst = std::max(worst, plane.normal.dot(p) - plane.offset);
  EXPECT_LE(worst, tol);
  // Adjacency is the edge list, both ways.
  int64_t degree_sum = 0;
  for (int32_t v = 0; v < V; ++v) {
    for (int32_t w : hull.neighbors(v)) {
      EXPECT_NE(v, w);
      EXPECT_TRUE(std::binary_search(hull.edges().begin(), hull.edges().end(),
                                     std::array<int32_t, 2>{std::min(v, w), std::max(v, w)}));
    }
    degree_sum += static_cast<int64_t>(hull.neighbors(v).size());
  }
  EXPECT_EQ(degree_sum, 2 * E);
}

// The hill-climbed support value equals the maximum over all vertices, from any start.
void ExpectSupportMatchesBruteForce(const ConvexPolytope& hull, std::mt19937_64& rng, int directions) {
  std::uniform_int_distribution<int32_t> start(-2, hull.num_vertices() + 2);
  for (int i = 0; i < directions; ++i) {
    const Vec3 d = RandomDirection(rng);
    double best = -std::numeric_limits<double>::infinity();
    for (const Vec3& v : hull.vertices()) best = std::max(best, d.dot(v));
    int32_t steps = 0;
    const int32_t s = hull.SupportVertex(d, start(rng), &steps);
    ASSERT_GE(s, 0);
    ASSERT_LT(s, hull.num_vertices());
    EXPECT_NEAR(d.dot(hull.vertices()[s]), best, 1e-12 * std::max(1.0, std::abs(best))) << "direction " << i;
    EXPECT_GE(steps, 1);
    EXPECT_EQ(d.dot(hull.vertices()[hull.SupportVertexBruteForce(d)]), best);
    int32_t hint = start(rng);
    const Vec3 p = CoreSupport(hull, d, &hint);
    EXPECT_EQ(p, hull.vertices()[hint]);
    EXPECT_NEAR(d.dot(p), best, 1e-12 * std::max(1.0, std::abs(best)));
  }
}

TEST(ConvexPolytope, HullsOfRandomCloudsAreValid) {
  std::mt19937_64 rng(1);
  for (int n : {8, 12, 20, 50, 200, 1000}) {
    for (int kind = 0; kind < 3; ++kind) {
      const auto points = RandomCloud(rng, n, kind);
      auto hull = ConvexPolytope::Build(points);
      ASSERT_TRUE(hull.ok()) << hull.error().message;
      SCOPED_TRACE(::testing::Message() << "n=" << n << " kind=" << kind);
      ExpectValidHull(*hull.value(), points);
      if (kind == 2) {
        EXPECT_EQ(hull.value()->num_vertices(), n) << "points on a sphere are all vertices";
      }
    }
  }
}

TEST(ConvexPolytope, CubeWithInteriorAndFacePointsHasEightVertices) {
  std::vector<Vec3> points;
  for (int i = 0; i < 8; ++i) points.emplace_back(i & 1 ? 1.0 : -1.0, i & 2 ? 1.0 : -1.0, i & 4 ? 1.0 : -1.0);
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int i = 0; i < 100; ++i) points.emplace_back(0.9 * u(rng), 0.9 * u(rng), 0.9 * u(rng));
  for (int i = 0; i < 20; ++i) points.emplace_back(1.0, u(rng), u(rng));  // On a face.
  auto hull = ConvexPolytope::Build(points, "cube");
  ASSERT_TRUE(hull.ok()) << hull.error().message;
  const ConvexPolytope& h = *hull.value();
  EXPECT_EQ(h.num_vertices(), 8);
  EXPECT_EQ(h.num_faces(), 12);
  EXPECT_EQ(h.num_edges(), 18);
  for (int32_t k : h.input_indices()) EXPECT_LT(k, 8);
  ExpectValidHull(h, points);
  // Triangles of one square face share its plane.
  for (const FacePlane& p : h.face_planes()) {
    EXPECT_NEAR(p.normal.cwiseAbs().maxCoeff(), 1.0, 1e-12);
    EXPECT_NEAR(p.offset, 1.0, 1e-12);
  }
}

// Depth against the least gap over every face plane: hulls with fewer planes than a block, with
// coplanar triangles (a cube's planes are each kept once), and with hundreds; points inside, on and
// beyond the surface.
TEST(ConvexPolytope, DepthIsTheLeastGapToAFacePlane) {
  std::mt19937_64 rng(5);
  std::vector<std::vector<Vec3>> clouds;
  clouds.push_back({Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0), Vec3(0, 0, 1)});  // 4 planes
  std::vector<Vec3> cube;
  for (int i = 0; i < 8; ++i) cube.emplace_back(i & 1 ? 1.0 : -1.0, i & 2 ? 1.0 : -1.0, i & 4 ? 1.0 : -1.0);
  clouds.push_back(cube);
  for (int n : {9, 30, 300}) clouds.push_back(RandomCloud(rng, n, 2));
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  for (const std::vector<Vec3>& points : clouds) {
    auto hull = ConvexPolytope::Build(points);
    ASSERT_TRUE(hull.ok()) << hull.error().message;
    const ConvexPolytope& h = *hull.value();
    int inside = 0, outside = 0;
    const auto check = [&](const Vec3& x) {
      double expected = std::numeric_limits<double>::infinity();
      for (const FacePlane& f : h.face_planes()) expected = std::min(expected, f.offset - f.normal.dot(x));
      EXPECT_NEAR(h.Depth(x), expected, 1e-12) << "at " << x.transpose() << " of a hull of " << h.num_faces();
      (expected > 0.0 ? inside : outside) += 1;
    };
    for (int i = 0; i < 500; ++i) check(Vec3(u(rng), u(rng), u(rng)));
    for (const Vec3& v : h.vertices()) check(v);
    EXPECT_GT(inside, 0);
    EXPECT_GT(outside, 0);
  }
}

TEST(ConvexPolytope, RejectsFlatTooSmallAndNonFiniteInput) {
  std::vector<Vec3> square = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0.5, 0.5, 0}};
  auto flat = ConvexPolytope::Build(square, "square");
  ASSERT_FALSE(flat.ok());
  EXPECT_EQ(flat.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(flat.error().message.find("square"), std::string::npos) << flat.error().message;
  EXPECT_NE(flat.error().message.find("flat"), std::string::npos) << flat.error().message;

  std::vector<Vec3> line = {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {-1, -1, -1}};
  auto collinear = ConvexPolytope::Build(line, "line");
  ASSERT_FALSE(collinear.ok());
  EXPECT_EQ(collinear.error().code, ErrorCode::kInvalidArgument);

  std::vector<Vec3> same(6, Vec3(1, 2, 3));
  EXPECT_FALSE(ConvexPolytope::Build(same).ok());

  std::vector<Vec3> three = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}};
  auto few = ConvexPolytope::Build(three, "three");
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.error().message.find("at least 4"), std::string::npos);

  std::vector<Vec3> nan = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, std::nan("")}};
  auto bad = ConvexPolytope::Build(nan, "nan");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("point 3"), std::string::npos) << bad.error().message;
}

TEST(ConvexPolytope, FromMeshUsesItsVertices) {
  auto hull = ConvexPolytope::Build(MakeIcosphereMesh(0.5, 2), "icosphere");
  ASSERT_TRUE(hull.ok()) << hull.error().message;
  EXPECT_EQ(hull.value()->num_vertices(), static_cast<int32_t>(MakeIcosphereMesh(0.5, 2).vertices.size()));
  ExpectValidHull(*hull.value(), MakeIcosphereMesh(0.5, 2).vertices);
}

TEST(ConvexPolytope, HullSurfaceIsRecognisedOnlyForConvexMeshes) {
  const auto surface = [](const TriangleMesh& m) {
    auto hull = ConvexPolytope::Build(m);
    EXPECT_TRUE(hull.ok());
    return hull.ok() && IsHullSurface(m, *hull.value(), 1e-9);
  };
  EXPECT_TRUE(surface(MakeIcosphereMesh(0.3, 2)));
  EXPECT_TRUE(surface(MakeBoxMesh(Vec3(0.2, 0.3, 0.5))));
  EXPECT_TRUE(surface(MakeCylinderMesh(0.1, 0.4, 24)));
  // The inner ring of a torus lies deep inside its hull.
  EXPECT_FALSE(surface(MakeTorusMesh(0.2, 0.05, 24, 12)));
  // Every vertex on the hull, but one more triangle across the inside: too much area.
  TriangleMesh chord = MakeBoxMesh(Vec3(0.2, 0.3, 0.5));
  auto corner = [&](double sx, double sy, double sz) {
    for (int32_t v = 0; v < static_cast<int32_t>(chord.vertices.size()); ++v) {
      const Vec3& p = chord.vertices[v];
      if (p.x() * sx > 0 && p.y() * sy > 0 && p.z() * sz > 0) return v;
    }
    ADD_FAILURE() << "no such corner";
    return 0;
  };
  chord.triangles.push_back({corner(-1, -1, -1), corner(1, 1, -1), corner(1, -1, 1)});
  EXPECT_FALSE(surface(chord));
  // A dent: the top face's triangles fan to a vertex pushed 5 cm inside.
  TriangleMesh dent = MakeBoxMesh(Vec3(0.2, 0.3, 0.5));
  const int32_t n = static_cast<int32_t>(dent.vertices.size());
  dent.vertices.push_back(Vec3(0.0, 0.0, 0.2));
  std::vector<std::array<int32_t, 3>> triangles;
  for (const auto& t : dent.triangles) {
    if (dent.vertices[t[0]].z() > 0.2 && dent.vertices[t[1]].z() > 0.2 && dent.vertices[t[2]].z() > 0.2) {
      for (int k = 0; k < 3; ++k) triangles.push_back({t[k], t[(k + 1) % 3], n});
    } else {
      triangles.push_back(t);
    }
  }
  dent.triangles = triangles;
  ASSERT_EQ(dent.triangles.size(), 16u);
  EXPECT_FALSE(surface(dent));
}

// SealedHullGap: convex meshes lie on their hull (gap 0 up to rounding), a dented box as deep as its
// dent, and any mesh that is open, inconsistently oriented, in pieces, or with a hull vertex off its
// surface is not sealed.
TEST(ConvexPolytope, SealedHullGapSaysHowFarASealedSurfaceLiesInside) {
  const auto gap = [](const TriangleMesh& m) {
    auto hull = ConvexPolytope::Build(m);
    EXPECT_TRUE(hull.ok());
    return hull.ok() ? SealedHullGap(m, *hull.value()) : -1.0;
  };
  const TriangleMesh box = MakeBoxMesh(Vec3(0.2, 0.3, 0.5));
  EXPECT_LE(gap(box), 1e-15);
  EXPECT_LE(gap(MakeIcosphereMesh(0.3, 2)), 1e-15);
  // A cylinder's caps are fans that the hull may split otherwise, on the same planes.
  EXPECT_LE(gap(MakeCylinderMesh(0.1, 0.4, 24)), 1e-15);
  // The top face fanned to a vertex 3 cm below its middle: the fan's triangles lie up to 3 cm off the
  // top face's plane, and no closer to any other.
  const TriangleMesh dent = testing::DentedBoxMesh(Vec3(0.2, 0.3, 0.5), 0.03);
  ASSERT_EQ(dent.triangles.size(), 14u);
  EXPECT_TRUE(testing::IsClosedAndConsistent(dent));
  EXPECT_NEAR(gap(dent), 0.03, 1e-12);
  // A dent deeper than half the way to the middle: the middle may lie outside the surface.
  TriangleMesh deep = dent;
  deep.vertices.back() = Vec3(0.0, 0.0, 0.0);
  EXPECT_TRUE(std::isinf(gap(deep)));
  // Open: one triangle missing.
  TriangleMesh open = box;
  open.triangles.pop_back();
  EXPECT_TRUE(std::isinf(gap(open)));
  // One triangle turned over.
  TriangleMesh flipped = box;
  std::swap(flipped.triangles[0][1], flipped.triangles[0][2]);
  EXPECT_TRUE(std::isinf(gap(flipped)));
  // A hull vertex on no triangle.
  TriangleMesh stray = box;
  stray.vertices.push_back(Vec3(0.3, 0.3, 0.3));
  EXPECT_TRUE(std::isinf(gap(stray)));
  // Two pieces: a box inside a bigger one (the hull is the outer box's, every vertex on one piece).
  TriangleMesh nested = MakeBoxMesh(Vec3(1.0, 1.0, 1.0));
  AppendMesh(&nested, MakeBoxMesh(Vec3(0.2, 0.2, 0.2)));
  EXPECT_TRUE(std::isinf(gap(nested)));
  // A torus winds around no point of its hull's middle.
  EXPECT_TRUE(std::isinf(gap(MakeTorusMesh(0.2, 0.05, 24, 12))));
}

TEST(ConvexPolytope, HillClimbingSupportMatchesBruteForce) {
  std::mt19937_64 rng(3);
  for (int n : {8, 16, 17, 30, 100, 400, 1000}) {
    for (int kind = 0; kind < 3; ++kind) {
      const auto points = RandomCloud(rng, n, kind);
      auto hull = ConvexPolytope::Build(points);
      ASSERT_TRUE(hull.ok()) << hull.error().message;
      SCOPED_TRACE(::testing::Message() << "n=" << n << " kind=" << kind);
      ExpectSupportMatchesBruteForce(*hull.value(), rng, testing::Cases(500));
    }
  }
}

TEST(ConvexPolytope, HillClimbingVisitsFewVerticesFromANearbyStart) {
  std::mt19937_64 rng(4);
  const auto points = RandomCloud(rng, 1000, 2);
  auto hull = ConvexPolytope::Build(points);
  ASSERT_TRUE(hull.ok());
  const ConvexPolytope& h = *hull.value();
  // A slowly turning direction: each query starts where the last ended.
  int32_t vertex = 0;
  int64_t warm_steps = 0, cold_steps = 0;
  for (int i = 0; i < 200; ++i) {
    const double t = 0.01 * i;
    const Vec3 d(std::cos(t), std::sin(t), 0.3);
    int32_t steps = 0;
    vertex = h.SupportVertex(d, vertex, &steps);
    warm_steps += steps;
    EXPECT_EQ(d.dot(h.vertices()[vertex]), d.dot(h.vertices()[h.SupportVertexBruteForce(d)]));
    h.SupportVertex(d, 0, &steps);
    cold_steps += steps;
  }
  EXPECT_LT(warm_steps * 3, cold_steps) << "warm " << warm_steps << " cold " << cold_steps;
  EXPECT_LT(warm_steps, 200 * 40) << "a warm climb looks at a few neighbourhoods, not the polytope";
}

TEST(ConvexPolytope, PandaLinkHullsAreValidAndSupportsExact) {
  const std::string root = testing::SharedDataDir();
  PROX_REQUIRE_DIR(root, "../shared/data");
  const std::filesystem::path dir =
      std::filesystem::path(root) / "robots/panda/moveit_resources_panda_description/meshes/collision";
  PROX_REQUIRE_DIR(std::filesystem::is_directory(dir) ? dir.string() : std::string(), dir.string());
  int meshes = 0;
  std::mt19937_64 rng(5);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".stl") continue;
    const TriangleMesh mesh = testing::LoadMeshOrDie(entry.path().string());
    auto hull = ConvexPolytope::Build(mesh, entry.path().string());
    ASSERT_TRUE(hull.ok()) << hull.error().message;
    SCOPED_TRACE(entry.path().string() + " hull vertices " + std::to_string(hull.value()->num_vertices()));
    ExpectValidHull(*hull.value(), mesh.vertices);
    ExpectSupportMatchesBruteForce(*hull.value(), rng, testing::Cases(2000));
    ++meshes;
  }
  EXPECT_GE(meshes, 5);
}

// Dense samples of each primitive's surface (frame S).
std::vector<Vec3> SampleSurface(const Sphere& s, int n) {
  std::vector<Vec3> out;
  const double golden = M_PI * (3.0 - std::sqrt(5.0));
  for (int i = 0; i < n; ++i) {
    const double z = 1.0 - 2.0 * (i + 0.5) / n, r = std::sqrt(1.0 - z * z);
    out.push_back(s.center + s.radius * Vec3(r * std::cos(golden * i), r * std::sin(golden * i), z));
  }
  return out;
}
std::vector<Vec3> SampleSurface(const Box& b, int n) {
  std::vector<Vec3> out;
  for (int i = 0; i <= n; ++i)
    for (int j = 0; j <= n; ++j)
      for (int axis = 0; axis < 3; ++axis)
        for (double sign : {-1.0, 1.0}) {
          Vec3 p;
          p[axis] = sign;
          p[(axis + 1) % 3] = -1.0 + 2.0 * i / n;
          p[(axis + 2) % 3] = -1.0 + 2.0 * j / n;
          out.push_back(p.cwiseProduct(b.half_extents));
        }
  return out;
}
std::vector<Vec3> SampleSurface(const Capsule& c, int n) {
  std::vector<Vec3> out;
  for (const Vec3& p : SampleSurface(Sphere{Vec3::Zero(), c.radius}, n * n)) {
    out.push_back(p + Vec3(0, 0, p.z() >= 0 ? c.half_length : -c.half_length));
  }
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= n; ++j) {
      const double a = 2 * M_PI * i / n;
      out.emplace_back(c.radius * std::cos(a), c.radius * std::sin(a), -c.half_length + 2.0 * c.half_length * j / n);
    }
  return out;
}
std::vector<Vec3> SampleSurface(const Cylinder& c, int n) {
  std::vector<Vec3> out;
  for (int i = 0; i < 4 * n; ++i) {
    const double a = 2 * M_PI * i / (4 * n);
    for (int j = 0; j <= n; ++j) {
      const double f = static_cast<double>(j) / n;
      out.emplace_back(c.radius * std::cos(a), c.radius * std::sin(a), -c.half_length + 2.0 * c.half_length * f);
      out.emplace_back(f * c.radius * std::cos(a), f * c.radius * std::sin(a), c.half_length);
      out.emplace_back(f * c.radius * std::cos(a), f * c.radius * std::sin(a), -c.half_length);
    }
  }
  return out;
}
std::vector<Vec3> SampleSurface(const Cone& c, int n) {
  std::vector<Vec3> out;
  for (int i = 0; i < 4 * n; ++i) {
    const double a = 2 * M_PI * i / (4 * n);
    for (int j = 0; j <= n; ++j) {
      const double f = static_cast<double>(j) / n;
      // Lateral surface from the apex (f = 0) to the rim, and the base disk.
      out.emplace_back(f * c.radius * std::cos(a), f * c.radius * std::sin(a), c.half_height - 2.0 * c.half_height * f);
      out.emplace_back(f * c.radius * std::cos(a), f * c.radius * std::sin(a), -c.half_height);
    }
  }
  return out;
}
std::vector<Vec3> SampleSurface(const Triangle& t, int n) {
  std::vector<Vec3> out;
  for (int i = 0; i <= n; ++i)
    for (int j = 0; i + j <= n; ++j) {
      const double u = static_cast<double>(i) / n, v = static_cast<double>(j) / n;
      out.push_back(t.a + u * (t.b - t.a) + v * (t.c - t.a));
    }
  return out;
}

// Support value >= every sample, and within `gap` of the best one; the support point itself lies in
// the shape (checked by `inside`).
template <class Shape, class Inside>
void ExpectSupportBoundsSamples(const Shape& shape, int n, double gap, Inside inside, std::mt19937_64& rng) {
  const auto samples = SampleSurface(shape, n);
  for (int i = 0; i < testing::Cases(300); ++i) {
    Vec3 d = RandomDirection(rng);
    if (i % 10 == 0) d = Vec3::Unit(i / 10 % 3) * (i % 20 == 0 ? 1.0 : -1.0);  // Axis directions: ties.
    const Vec3 p = Support(shape, d);
    ASSERT_TRUE(p.allFinite());
    EXPECT_TRUE(inside(p)) << p.transpose();
    const double h = d.dot(p);
    double best = -std::numeric_limits<double>::infinity();
    for (const Vec3& q : samples) best = std::max(best, d.dot(q));
    EXPECT_GE(h, best - 1e-12 * d.norm()) << "direction " << d.transpose();
    EXPECT_LE(h - best, gap * d.norm()) << "direction " << d.transpose();
  }
}

TEST(Primitives, SupportsBoundDenseSurfaceSamples) {
  std::mt19937_64 rng(6);
  const double e = 1e-12;
  const Sphere sphere{Vec3(0.1, -0.2, 0.3), 0.7};
  ExpectSupportBoundsSamples(sphere, 20000, 0.02,
                             [&](const Vec3& p) { return (p - sphere.center).norm() <= sphere.radius + e; }, rng);
  const Box box{Vec3(0.3, 0.5, 1.1)};
  ExpectSupportBoundsSamples(box, 10, 1e-12,
                             [&](const Vec3& p) { return (p.cwiseAbs() - box.half_extents).maxCoeff() <= e; }, rng);
  const Capsule capsule{0.4, 0.9};
  ExpectSupportBoundsSamples(capsule, 100, 0.01, [&](const Vec3& p) {
    const double z = std::clamp(p.z(), -capsule.half_length, capsule.half_length);
    return (p - Vec3(0, 0, z)).norm() <= capsule.radius + e;
  }, rng);
  const Cylinder cylinder{0.6, 0.4};
  ExpectSupportBoundsSamples(cylinder, 200, 0.001, [&](const Vec3& p) {
    return p.head<2>().norm() <= cylinder.radius + e && std::abs(p.z()) <= cylinder.half_length + e;
  }, rng);
  const Cone cone{0.5, 0.8};
  ExpectSupportBoundsSamples(cone, 200, 0.001, [&](const Vec3& p) {
    const double allowed = cone.radius * (cone.half_height - p.z()) / (2 * cone.half_height);
    return p.head<2>().norm() <= allowed + e && std::abs(p.z()) <= cone.half_height + e;
  }, rng);
  const Triangle triangle{Vec3(0, 0, 0), Vec3(1, 0.2, 0), Vec3(0.3, 1, 0.5)};
  ExpectSupportBoundsSamples(triangle, 20, 1e-12, [&](const Vec3& p) {
    return p == triangle.a || p == triangle.b || p == triangle.c;
  }, rng);
}

TEST(Primitives, ConeApexIsUpAndBaseDown) {
  const Cone cone{0.5, 0.8};
  EXPECT_EQ(Support(cone, Vec3::UnitZ()), Vec3(0, 0, 0.8));
  EXPECT_NEAR(Support(cone, -Vec3::UnitZ()).z(), -0.8, 0.0);
  EXPECT_EQ(Support(cone, Vec3(1, 0, -0.1)), Vec3(0.5, 0, -0.8));
}

TEST(Primitives, DegenerateShapesGiveFinitePoints) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100; ++i) {
    const Vec3 d = i == 0 ? Vec3::Zero() : RandomDirection(rng);
    EXPECT_EQ(Support(Sphere{Vec3(1, 2, 3), 0.0}, d), Vec3(1, 2, 3));
    const Vec3 c = Support(Capsule{0.5, 0.0}, d);
    const Vec3 s = Support(Sphere{Vec3::Zero(), 0.5}, d);
    EXPECT_TRUE(c.isApprox(s, 1e-15) || (c - s).norm() < 1e-15) << "a zero-length capsule is a sphere";
    EXPECT_TRUE(Support(Cylinder{0.0, 1.0}, d).allFinite());
    EXPECT_TRUE(Support(Cylinder{1.0, 0.0}, d).allFinite());
    EXPECT_TRUE(Support(Cone{0.0, 1.0}, d).allFinite());
    EXPECT_TRUE(Support(Box{Vec3::Zero()}, d).allFinite());
    EXPECT_TRUE(Support(Triangle{}, d).allFinite());
  }
  // Directions along the axis of a cylinder: a point of the cap, no division by zero.
  EXPECT_EQ(Support(Cylinder{1.0, 2.0}, Vec3(0, 0, 3)), Vec3(0, 0, 2));
  EXPECT_EQ(Support(Cylinder{1.0, 2.0}, Vec3(0, 0, -3)), Vec3(0, 0, -2));
}

}  // namespace
}  // namespace proximity::core
