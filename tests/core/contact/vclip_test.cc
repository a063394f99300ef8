#include "contact/vclip.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/test_util.h"
#include "narrowphase/gjk.h"
#include "narrowphase/triangle.h"

namespace proximity::core {
namespace {

using testing::Cases;

// ---- Fixtures -----------------------------------------------------------------------------------------

enum class CloudKind { kSphere, kNearSphere, kEllipsoid, kBox, kBoxSurface, kGaussian };
constexpr CloudKind kKinds[] = {CloudKind::kSphere, CloudKind::kNearSphere, CloudKind::kEllipsoid,
                                CloudKind::kBox,    CloudKind::kBoxSurface, CloudKind::kGaussian};

const char* KindName(CloudKind k) {
  switch (k) {
    case CloudKind::kSphere: return "sphere";
    case CloudKind::kNearSphere: return "near-sphere";
    case CloudKind::kEllipsoid: return "ellipsoid";
    case CloudKind::kBox: return "box";
    case CloudKind::kBoxSurface: return "box-surface";
    case CloudKind::kGaussian: return "gaussian";
  }
  return "?";
}

// n points of the given kind, about unit size.
std::vector<Vec3> Cloud(std::mt19937_64& rng, int n, CloudKind kind) {
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(-1.0, 1.0), jitter(0.97, 1.0), stretch(0.3, 1.2);
  const Vec3 axes(stretch(rng), stretch(rng), stretch(rng));
  std::vector<Vec3> p(n);
  for (Vec3& x : p) {
    const Vec3 dir = Vec3(g(rng), g(rng), g(rng)).normalized();
    switch (kind) {
      case CloudKind::kSphere: x = dir; break;
      case CloudKind::kNearSphere: x = jitter(rng) * dir; break;
      case CloudKind::kEllipsoid: x = dir.cwiseProduct(axes); break;
      case CloudKind::kBox: x = Vec3(u(rng), u(rng), u(rng)).cwiseProduct(axes); break;
      case CloudKind::kBoxSurface: {
        Vec3 y(u(rng), u(rng), u(rng));
        const int axis = static_cast<int>(rng() % 3);
        y[axis] = y[axis] < 0 ? -1.0 : 1.0;
        x = y.cwiseProduct(axes);
        break;
      }
      case CloudKind::kGaussian: x = 0.5 * Vec3(g(rng), g(rng), g(rng)).cwiseProduct(axes); break;
    }
  }
  return p;
}

struct Shape {
  std::shared_ptr<const ConvexPolytope> hull;
  std::shared_ptr<const VClipPolyhedron> poly;
  std::string name;
};

Shape MakeShape(std::span<const Vec3> points, const std::string& name) {
  Shape s;
  s.name = name;
  auto hull = ConvexPolytope::Build(points, name);
  EXPECT_TRUE(hull.ok()) << hull.error().message;
  if (!hull.ok()) return s;
  s.hull = hull.value();
  auto poly = VClipPolyhedron::Build(*s.hull);
  EXPECT_TRUE(poly.ok()) << poly.error().message;
  if (poly.ok()) s.poly = poly.value();
  return s;
}

Shape RandomShape(std::mt19937_64& rng, int n, CloudKind kind) {
  const auto points = Cloud(rng, n, kind);
  return MakeShape(points, std::string(KindName(kind)) + "-" + std::to_string(n));
}

Shape BoxShape(const Vec3& half) {
  std::vector<Vec3> corners;
  for (int i = 0; i < 8; ++i) {
    corners.emplace_back(i & 1 ? half.x() : -half.x(), i & 2 ? half.y() : -half.y(), i & 4 ? half.z() : -half.z());
  }
  return MakeShape(corners, "box");
}

// Hulls of the Panda's collision meshes (MoveIt's STL and the MBM set's OBJ), or empty when the shared
// data is absent.
std::vector<Shape> PandaShapes() {
  std::vector<Shape> out;
  const std::string root = testing::SharedDataDir();
  if (root.empty()) return out;
  for (const char* rel : {"robots/panda/moveit_resources_panda_description/meshes/collision",
                          "robots/mbm_panda/meshes/collision"}) {
    const std::filesystem::path dir = std::filesystem::path(root) / rel;
    if (!std::filesystem::is_directory(dir)) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() == ".stl" || entry.path().extension() == ".obj") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const TriangleMesh mesh = testing::LoadMeshOrDie(f.string());
      out.push_back(MakeShape(mesh.vertices, dir.parent_path().parent_path().filename().string() + "/" +
                                                 f.filename().string()));
    }
  }
  return out;
}

double Scale(const ConvexPolytope& h) {
  double s = 0.0;
  for (const Vec3& v : h.vertices()) s = std::max(s, v.cwiseAbs().maxCoeff());
  return s;
}

// max over the hull's face planes of the signed distance of p_W: 0 on the surface, < 0 inside.
double SurfaceResidual(const ConvexPolytope& h, const RigidTransform& X_WH, const Vec3& p_W) {
  const Vec3 p_H = X_WH.inverse() * p_W;
  double worst = -std::numeric_limits<double>::infinity();
  for (const FacePlane& f : h.face_planes()) worst = std::max(worst, f.normal.dot(p_H) - f.offset);
  return worst;
}

// ---- Brute-force oracle -------------------------------------------------------------------------------

struct Oracle {
  bool intersecting = false;
  double distance = 0.0;
};

// Exact distance between two posed hulls from first principles: they intersect when a vertex of one is
// inside the other or an edge of one crosses a triangle of the other; otherwise the distance is the
// minimum over vertex-triangle pairs (both ways) and edge-edge pairs.
Oracle BruteForce(const ConvexPolytope& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                  const RigidTransform& X_WB) {
  std::vector<Vec3> va, vb;
  for (const Vec3& v : a.vertices()) va.push_back(X_WA * v);
  for (const Vec3& v : b.vertices()) vb.push_back(X_WB * v);
  const auto inside = [](const ConvexPolytope& h, const RigidTransform& X_WH, const Vec3& p_W) {
    return SurfaceResidual(h, X_WH, p_W) <= 0.0;
  };
  Oracle o;
  if (inside(b, X_WB, va[0]) || inside(a, X_WA, vb[0])) {
    o.intersecting = true;
    return o;
  }
  const auto crosses = [](const std::vector<Vec3>& ve, const ConvexPolytope& he, const std::vector<Vec3>& vt,
                          const ConvexPolytope& ht) {
    for (const auto& e : he.edges())
      for (const auto& t : ht.faces()) {
        double s;
        if (SegmentTriangle(ve[e[0]], ve[e[1]], vt[t[0]], vt[t[1]], vt[t[2]], &s)) return true;
      }
    return false;
  };
  if (crosses(va, a, vb, b) || crosses(vb, b, va, a)) {
    o.intersecting = true;
    return o;
  }
  double best = std::numeric_limits<double>::infinity();
  const auto vertex_face = [&best](const std::vector<Vec3>& vv, const std::vector<Vec3>& vt, const ConvexPolytope& ht) {
    for (const Vec3& p : vv)
      for (const auto& t : ht.faces()) {
        best = std::min(best, (ClosestPointOnTriangle(p, vt[t[0]], vt[t[1]], vt[t[2]]) - p).squaredNorm());
      }
  };
  vertex_face(va, vb, b);
  vertex_face(vb, va, a);
  for (const auto& e : a.edges())
    for (const auto& f : b.edges()) {
      Vec3 cp, cq;
      best = std::min(best, SegmentSegmentDistanceSquared(va[e[0]], va[e[1]], vb[f[0]], vb[f[1]], &cp, &cq));
    }
  o.distance = std::sqrt(best);
  return o;
}

GjkResult Gjk(const Shape& a, const RigidTransform& X_WA, const Shape& b, const RigidTransform& X_WB,
              GjkCache* cache = nullptr) {
  GjkOptions options;
  options.rel_tolerance = 1e-8;
  return GjkDistance(*a.hull, X_WA, *b.hull, X_WB, cache, options);
}

// Distances agree within 1e-9 relative, with an absolute floor at the rounding level of distances
// between nearly parallel edges (GJK's answers scatter by up to about 7e-12 times the coordinates' scale
// around the brute force's; V-Clip's by about 3e-13).
double Tolerance(double distance, double scale) { return 1e-9 * distance + 1e-11 * scale; }

// Checks a V-Clip answer against GJK (and the brute-force oracle when given): the same verdict and
// distance, witnesses on the shapes that realise the distance.
void ExpectAgrees(const VClipResult& r, const Shape& a, const RigidTransform& X_WA, const Shape& b,
                  const RigidTransform& X_WB, const GjkResult& g, const Oracle* oracle) {
  const double scale = std::max(Scale(*a.hull), Scale(*b.hull)) + X_WA.p.norm() + X_WB.p.norm();
  ASSERT_TRUE(std::isfinite(r.distance));
  ASSERT_TRUE(r.p_WA.allFinite() && r.p_WB.allFinite());
  EXPECT_FALSE(r.fell_back_to_gjk) << "the transition cap was hit";
  if (oracle) {
    EXPECT_EQ(r.penetrating, oracle->intersecting) << "oracle distance " << oracle->distance << " vclip "
                                                   << r.distance;
    if (!oracle->intersecting) {
      EXPECT_NEAR(r.distance, oracle->distance, Tolerance(oracle->distance, scale));
    }
  }
  const double tol = 1e-9 * scale;
  if (r.penetrating) {
    EXPECT_EQ(r.distance, 0.0);
    EXPECT_TRUE(g.intersecting || g.distance <= tol) << "GJK distance " << g.distance;
    EXPECT_EQ(r.p_WA, r.p_WB);
    EXPECT_LE(SurfaceResidual(*a.hull, X_WA, r.p_WA), tol) << "the common point is in A";
    EXPECT_LE(SurfaceResidual(*b.hull, X_WB, r.p_WB), tol) << "the common point is in B";
  } else {
    EXPECT_TRUE(!g.intersecting || r.distance <= tol) << "V-Clip distance " << r.distance;
    if (!g.intersecting) {
      EXPECT_NEAR(r.distance, g.distance, Tolerance(g.distance, scale));
    }
    EXPECT_NEAR((r.p_WA - r.p_WB).norm(), r.distance, 1e-12 * scale);
    EXPECT_NEAR(SurfaceResidual(*a.hull, X_WA, r.p_WA), 0.0, tol) << "p_WA on A's surface";
    EXPECT_NEAR(SurfaceResidual(*b.hull, X_WB, r.p_WB), 0.0, tol) << "p_WB on B's surface";
  }
  EXPECT_TRUE(a.poly->Contains(r.feature_a));
  EXPECT_TRUE(b.poly->Contains(r.feature_b));
}

// ---- VClipPolyhedron --------------------------------------------------------------------------------------

// Every structural invariant V-Clip relies on, checked directly.
void ExpectValidPolyhedron(const VClipPolyhedron& p, const ConvexPolytope& hull) {
  const double tol = 1e-9 * Scale(hull);
  const int32_t V = p.num_vertices(), E = p.num_edges(), F = p.num_faces();
  ASSERT_EQ(V, hull.num_vertices());
  EXPECT_EQ(V - E + F, 2);
  for (int32_t v = 0; v < V; ++v) EXPECT_EQ(p.position(v), hull.vertices()[v]);
  // Every hull triangle lies in exactly one face (its vertices on the face's loop and plane).
  int64_t loop_total = 0;
  for (int32_t f = 0; f < F; ++f) {
    const auto& face = p.faces()[f];
    const int32_t n = face.loop_end - face.loop_begin;
    ASSERT_GE(n, 3);
    loop_total += n;
    EXPECT_NEAR(face.plane.normal.norm(), 1.0, 1e-12);
    Vec3 newell = Vec3::Zero();
    for (int32_t k = 0; k < n; ++k) {
      const int32_t v = p.loop_vertices()[face.loop_begin + k];
      const int32_t w = p.loop_vertices()[face.loop_begin + (k + 1) % n];
      EXPECT_NEAR(face.plane.normal.dot(p.position(v)), face.plane.offset, tol) << "face " << f;
      const auto& e = p.edges()[p.loop_edges()[face.loop_begin + k]];
      // Loop edge k runs v -> w: tail -> head in its left face, head -> tail in its right face.
      if (e.tail == v) {
        EXPECT_EQ(e.head, w);
        EXPECT_EQ(e.left, f);
      } else {
        EXPECT_EQ(e.tail, w);
        EXPECT_EQ(e.head, v);
        EXPECT_EQ(e.right, f);
      }
      newell += p.position(v).cross(p.position(w));
      // Convex: every other loop vertex is on the inner side of this edge.
      const Vec3 inward = face.plane.normal.cross(p.position(w) - p.position(v));
      for (int32_t j = 0; j < n; ++j) {
        EXPECT_GE(inward.dot(p.position(p.loop_vertices()[face.loop_begin + j]) - p.position(v)), -tol * inward.norm());
      }
    }
    if (newell.norm() > 1e-6 * Scale(hull) * Scale(hull)) {
      EXPECT_GT(newell.dot(face.plane.normal), 0.0) << "CCW";
    }
    // Every hull vertex is inside the face's plane.
    for (const Vec3& x : hull.vertices()) EXPECT_LE(face.plane.normal.dot(x) - face.plane.offset, tol);
  }
  EXPECT_EQ(loop_total, 2 * E);
  // Points known to lie in a feature's region satisfy all its planes; each neighbour is adjacent.
  const auto expect_in_region = [&](VClipFeature f, const Vec3& x) {
    for (const VClipVoronoiPlane& plane : p.planes(f)) {
      EXPECT_NEAR(plane.normal.norm(), 1.0, 1e-12);
      EXPECT_GE(plane.Evaluate(x), -tol) << "feature type " << static_cast<int>(f.type) << " index " << f.index;
    }
  };
  for (int32_t f = 0; f < F; ++f) {
    const auto& face = p.faces()[f];
    Vec3 c = Vec3::Zero();
    for (int32_t k = face.loop_begin; k < face.loop_end; ++k) c += p.position(p.loop_vertices()[k]);
    c /= face.loop_end - face.loop_begin;
    expect_in_region({VClipFeatureType::kFace, f}, c + 0.3 * face.plane.normal);
    expect_in_region({VClipFeatureType::kFace, f}, c - 0.3 * face.plane.normal);
    for (int32_t k = 0; k < face.loop_end - face.loop_begin; ++k) {
      EXPECT_EQ(p.planes({VClipFeatureType::kFace, f})[k].neighbor,
                (VClipFeature{VClipFeatureType::kEdge, p.loop_edges()[face.loop_begin + k]}));
    }
  }
  std::vector<Vec3> normal_sum(V, Vec3::Zero());
  for (int32_t e = 0; e < E; ++e) {
    const auto& edge = p.edges()[e];
    const Vec3 out = p.faces()[edge.left].plane.normal + p.faces()[edge.right].plane.normal;
    expect_in_region({VClipFeatureType::kEdge, e}, 0.5 * (p.position(edge.tail) + p.position(edge.head)) + out);
    const auto planes = p.planes({VClipFeatureType::kEdge, e});
    EXPECT_EQ(planes[0].neighbor, (VClipFeature{VClipFeatureType::kVertex, edge.tail}));
    EXPECT_EQ(planes[1].neighbor, (VClipFeature{VClipFeatureType::kVertex, edge.head}));
    EXPECT_EQ(planes[2].neighbor, (VClipFeature{VClipFeatureType::kFace, edge.left}));
    EXPECT_EQ(planes[3].neighbor, (VClipFeature{VClipFeatureType::kFace, edge.right}));
  }
  for (int32_t f = 0; f < F; ++f) {
    const auto& face = p.faces()[f];
    for (int32_t k = face.loop_begin; k < face.loop_end; ++k) normal_sum[p.loop_vertices()[k]] += face.plane.normal;
  }
  for (int32_t v = 0; v < V; ++v) {
    expect_in_region({VClipFeatureType::kVertex, v}, p.position(v) + normal_sum[v]);
    const auto& vertex = p.vertices()[v];
    EXPECT_GE(vertex.edge_end - vertex.edge_begin, 3) << "vertex " << v;
    for (int32_t k = vertex.edge_begin; k < vertex.edge_end; ++k) {
      const auto& e = p.edges()[p.vertex_edges()[k]];
      EXPECT_TRUE(e.tail == v || e.head == v);
    }
  }
}

TEST(VClipPolyhedron, BoxHasSixQuadrilateralFaces) {
  const Shape box = BoxShape(Vec3(1.0, 0.5, 0.25));
  ASSERT_TRUE(box.poly);
  EXPECT_EQ(box.hull->num_faces(), 12) << "Qhull splits each square";
  EXPECT_EQ(box.poly->num_vertices(), 8);
  EXPECT_EQ(box.poly->num_edges(), 12);
  EXPECT_EQ(box.poly->num_faces(), 6);
  for (const auto& f : box.poly->faces()) {
    EXPECT_EQ(f.loop_end - f.loop_begin, 4);
    EXPECT_NEAR(f.plane.normal.cwiseAbs().maxCoeff(), 1.0, 1e-15);
  }
  ExpectValidPolyhedron(*box.poly, *box.hull);
  // Shared planes are stored with exactly opposite signs.
  for (int32_t e = 0; e < box.poly->num_edges(); ++e) {
    const auto& edge = box.poly->edges()[e];
    const auto planes = box.poly->planes({VClipFeatureType::kEdge, e});
    for (int side = 0; side < 2; ++side) {
      const int32_t f = side == 0 ? edge.left : edge.right;
      bool found = false;
      for (const auto& q : box.poly->planes({VClipFeatureType::kFace, f})) {
        if (q.neighbor.index == e) {
          found = true;
          EXPECT_EQ(q.normal, -planes[2 + side].normal);
          EXPECT_EQ(q.offset, -planes[2 + side].offset);
        }
      }
      EXPECT_TRUE(found);
    }
  }
}

TEST(VClipPolyhedron, CubeWithPointsOnItsFacesMergesThem) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Vec3> points;
  for (int i = 0; i < 8; ++i) points.emplace_back(i & 1 ? 1.0 : -1.0, i & 2 ? 1.0 : -1.0, i & 4 ? 1.0 : -1.0);
  for (int i = 0; i < 50; ++i) points.emplace_back(1.0, u(rng), u(rng));
  for (int i = 0; i < 50; ++i) points.emplace_back(0.8 * u(rng), 0.8 * u(rng), 0.8 * u(rng));
  const Shape s = MakeShape(points, "cube");
  ASSERT_TRUE(s.poly);
  EXPECT_EQ(s.poly->num_faces(), 6);
  ExpectValidPolyhedron(*s.poly, *s.hull);
  EXPECT_FALSE(VClipPolyhedron::Build(*s.hull, -1.0).ok());
  EXPECT_FALSE(VClipPolyhedron::Build(*s.hull, std::numeric_limits<double>::quiet_NaN()).ok());
}

TEST(VClipPolyhedron, RandomAndPandaHullsAreValid) {
  std::mt19937_64 rng(4);
  for (int n : {8, 50, 250, 1000}) {
    for (CloudKind kind : kKinds) {
      const Shape s = RandomShape(rng, n, kind);
      ASSERT_TRUE(s.poly);
      SCOPED_TRACE(s.name);
      ExpectValidPolyhedron(*s.poly, *s.hull);
      if (kind == CloudKind::kSphere) {
        EXPECT_EQ(s.poly->num_faces(), s.hull->num_faces()) << "points in general position: nothing to merge";
      }
      if (kind == CloudKind::kBoxSurface && n >= 50) {
        // Points on the six sides of a box (the hull cuts its corners): each side is one face.
        int sides = 0;
        for (const auto& f : s.poly->faces()) sides += f.plane.normal.cwiseAbs().maxCoeff() > 1.0 - 1e-12;
        EXPECT_EQ(sides, 6) << "the coplanar triangles of each side are merged";
      }
    }
  }
  for (const Shape& s : PandaShapes()) {
    ASSERT_TRUE(s.poly);
    SCOPED_TRACE(s.name);
    ExpectValidPolyhedron(*s.poly, *s.hull);
    std::printf("%-40s hull: %4d vertices, %4d triangles -> %4d faces\n", s.name.c_str(), s.hull->num_vertices(),
                s.hull->num_faces(), s.poly->num_faces());
  }
}

TEST(VClipPolyhedron, SupportVertexMatchesTheScan) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g(0.0, 1.0);
  for (int n : {8, 250, 1000}) {
    const Shape s = RandomShape(rng, n, CloudKind::kEllipsoid);
    for (int i = 0; i < 200; ++i) {
      const Vec3 d(g(rng), g(rng), g(rng));
      const int32_t k = s.poly->SupportVertex(d, static_cast<int32_t>(rng() % (n + 10)) - 5);
      EXPECT_NEAR(d.dot(s.poly->position(k)), d.dot(s.hull->vertices()[s.hull->SupportVertexBruteForce(d)]), 1e-12);
    }
  }
}

// ---- VClipDistance: random poses -------------------------------------------------------------------------

TEST(VClipDistance, MatchesGjkAndBruteForceOnRandomHulls) {
  std::mt19937_64 rng(6);
  int separated = 0, penetrating = 0;
  // (size, cases): the brute-force oracle is quadratic in the size.
  const std::pair<int, int> plan[] = {{8, Cases(300)}, {50, Cases(120)}, {250, Cases(24)}, {1000, Cases(4)}};
  for (const auto& [n, cases] : plan) {
    for (int i = 0; i < cases; ++i) {
      const CloudKind ka = kKinds[rng() % 6], kb = kKinds[rng() % 6];
      const Shape a = RandomShape(rng, n, ka);
      const Shape b = RandomShape(rng, i % 2 ? n : 8 + static_cast<int>(rng() % 60), kb);
      const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
      const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-1.5), Vec3::Constant(1.5));
      SCOPED_TRACE(a.name + " vs " + b.name + " case " + std::to_string(i));
      const Oracle oracle = BruteForce(*a.hull, X_WA, *b.hull, X_WB);
      const GjkResult g = Gjk(a, X_WA, b, X_WB);
      VClipCache cache;
      const VClipResult cold = VClipDistance(*a.poly, X_WA, *b.poly, X_WB, &cache);
      EXPECT_TRUE(cold.cold_start);
      ExpectAgrees(cold, a, X_WA, b, X_WB, g, &oracle);
      // Warm from the answer itself: no transition needed.
      const VClipResult again = VClipDistance(*a.poly, X_WA, *b.poly, X_WB, &cache);
      EXPECT_FALSE(again.cold_start);
      EXPECT_EQ(again.transitions, 0);
      EXPECT_EQ(again.distance, cold.distance);
      // Swapped roles give the same distance.
      const VClipResult swapped = VClipDistance(*b.poly, X_WB, *a.poly, X_WA);
      ExpectAgrees(swapped, b, X_WB, a, X_WA, g, &oracle);
      (oracle.intersecting ? penetrating : separated)++;
    }
  }
  EXPECT_GT(separated, (separated + penetrating) / 5);
  EXPECT_GT(penetrating, (separated + penetrating) / 5);
  std::printf("random poses: %d separated, %d penetrating\n", separated, penetrating);
}

TEST(VClipDistance, PandaLinkHullsMatchGjkAndBruteForce) {
  const std::vector<Shape> links = PandaShapes();
  if (links.empty()) GTEST_SKIP() << "../shared/data/robots/panda is not present; this test needs it";
  std::mt19937_64 rng(7);
  int separated = 0, penetrating = 0;
  const int cases = Cases(60);
  for (int k = 0; k < cases; ++k) {
    const Shape& a = links[rng() % links.size()];
    const Shape& b = links[rng() % links.size()];
    ASSERT_TRUE(a.poly && b.poly);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.05), Vec3::Constant(0.05));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.15), Vec3::Constant(0.15));
    SCOPED_TRACE(a.name + " vs " + b.name);
    const Oracle oracle = BruteForce(*a.hull, X_WA, *b.hull, X_WB);
    const GjkResult g = Gjk(a, X_WA, b, X_WB);
    ExpectAgrees(VClipDistance(*a.poly, X_WA, *b.poly, X_WB), a, X_WA, b, X_WB, g, &oracle);
    (oracle.intersecting ? penetrating : separated)++;
  }
  EXPECT_GT(separated, cases / 8);
  EXPECT_GT(penetrating, cases / 8);
  std::printf("Panda hulls: %d separated, %d penetrating\n", separated, penetrating);
}

// ---- Degenerate ties: boxes --------------------------------------------------------------------------------

RigidTransform Pose(const Eigen::AngleAxisd& rotation, const Vec3& p) {
  return RigidTransform(rotation.toRotationMatrix(), p);
}

void ExpectBoxDistance(const Shape& a, const RigidTransform& X_WA, const Shape& b, const RigidTransform& X_WB,
                       double expected, const char* what) {
  SCOPED_TRACE(what);
  const GjkResult g = Gjk(a, X_WA, b, X_WB);
  for (int start = 0; start < 3; ++start) {
    // Cold, and warm from two arbitrary feature pairs.
    VClipCache cache;
    if (start == 1) cache = {{VClipFeatureType::kFace, 0}, {VClipFeatureType::kFace, 5}};
    if (start == 2) cache = {{VClipFeatureType::kEdge, 7}, {VClipFeatureType::kVertex, 3}};
    const VClipResult r = VClipDistance(*a.poly, X_WA, *b.poly, X_WB, &cache);
    EXPECT_NEAR(r.distance, expected, 1e-12);
    if (expected == 0.0) {
      EXPECT_TRUE(r.penetrating || r.distance <= 1e-12) << "touching";
    }
    ExpectAgrees(r, a, X_WA, b, X_WB, g, nullptr);
  }
}

TEST(VClipDistance, BoxesFaceOnFaceEdgeOnEdgeVertexOnFace) {
  const Shape a = BoxShape(Vec3(1.0, 1.0, 1.0));
  const Shape b = BoxShape(Vec3(0.5, 0.5, 0.5));
  const Eigen::AngleAxisd none(0.0, Vec3::UnitZ());
  const RigidTransform X_WA = RigidTransform::Identity();
  // Face on face, parallel, overlapping in x and y; and turned about z.
  ExpectBoxDistance(a, X_WA, b, Pose(none, Vec3(0.2, 0.1, 1.8)), 0.3, "face on face");
  ExpectBoxDistance(a, X_WA, b, Pose(Eigen::AngleAxisd(0.5, Vec3::UnitZ()), Vec3(0.7, -0.6, 1.75)), 0.25,
                    "face on face, turned");
  // Face on face with only an edge strip overlapping (the top face of B reaches over A's edge).
  ExpectBoxDistance(a, X_WA, b, Pose(none, Vec3(1.5, 0.0, 1.8)), 0.3, "faces overlapping in a strip");
  // Edge on edge, parallel: both boxes turned 45 degrees about x, B above A.
  const Eigen::AngleAxisd diamond(M_PI / 4, Vec3::UnitX());
  ExpectBoxDistance(a, Pose(diamond, Vec3::Zero()), b,
                    Pose(diamond, Vec3(0.7, 0.0, std::sqrt(2.0) + 0.4 + 0.5 * std::sqrt(2.0))), 0.4,
                    "parallel edges");
  // Edge on face: B turned 45 degrees about x, its lowest edge parallel to A's top face.
  ExpectBoxDistance(a, X_WA, b, Pose(diamond, Vec3(0.3, 0.2, 1.0 + 0.2 + 0.5 * std::sqrt(2.0))), 0.2,
                    "edge on face");
  // Vertex on face: B's diagonal along z.
  const Eigen::AngleAxisd corner_down(std::acos(1.0 / std::sqrt(3.0)), Vec3(1.0, -1.0, 0.0).normalized());
  ExpectBoxDistance(a, X_WA, b, Pose(corner_down, Vec3(0.1, -0.3, 1.0 + 0.25 + 0.5 * std::sqrt(3.0))), 0.25,
                    "vertex on face");
  // Side by side: face on face along x.
  ExpectBoxDistance(a, X_WA, b, Pose(none, Vec3(2.0, 0.25, -0.25)), 0.5, "side by side");
  // Touching: face on face, and parallel edges in contact.
  ExpectBoxDistance(a, X_WA, b, Pose(none, Vec3(0.2, 0.1, 1.5)), 0.0, "faces touching");
  ExpectBoxDistance(a, Pose(diamond, Vec3::Zero()), b,
                    Pose(diamond, Vec3(0.7, 0.0, 1.5 * std::sqrt(2.0))), 0.0, "edges touching");
  // Identical boxes in the same pose.
  ExpectBoxDistance(a, X_WA, a, X_WA, 0.0, "coincident");
}

// ---- Coherent motion ------------------------------------------------------------------------------------

Mat3 SmallRotation(const Vec3& omega) {
  const double angle = omega.norm();
  return angle > 0.0 ? Eigen::AngleAxisd(angle, omega / angle).toRotationMatrix() : Mat3::Identity();
}

TEST(VClipDistance, CoherentMotionNeverCyclesAndMatchesGjk) {
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const int total_steps = Cases(1000000);
  // Pairs of sizes, each driven along a smooth path that passes near and sometimes through A.
  const std::pair<int, int> sizes[] = {{8, 8}, {8, 50}, {50, 50}, {8, 250}, {50, 250}, {250, 250}, {1000, 8},
                                       {1000, 250}, {1000, 1000}, {250, 50}};
  const int scenarios = 40;
  const int steps_per_scenario = std::max(1, total_steps / scenarios);
  int64_t steps = 0, transitions = 0, penetrating = 0, max_transitions = 0, cold_transitions = 0;
  int64_t gjk_disagreements = 0, fallbacks = 0;
  double worst_relative = 0.0, worst_absolute = 0.0, worst_absolute_distance = 0.0;
  std::map<int, int64_t> transition_histogram;
  for (int s = 0; s < scenarios; ++s) {
    const auto [na, nb] = sizes[s % std::size(sizes)];
    const Shape a = RandomShape(rng, na, kKinds[rng() % 6]);
    const Shape b = RandomShape(rng, nb, kKinds[rng() % 6]);
    ASSERT_TRUE(a.poly && b.poly);
    const double scale = std::max(Scale(*a.hull), Scale(*b.hull));
    // A turns slowly in place; B follows a Lissajous path around A's centre, with amplitude chosen so
    // that it passes at distances from deep penetration to well apart.
    RigidTransform X_WA(testing::RandomRotation(rng), Vec3::Zero());
    RigidTransform X_WB(testing::RandomRotation(rng), Vec3::Zero());
    const Vec3 omega_a = 0.004 * Vec3(u(rng), u(rng), u(rng)), omega_b = 0.01 * Vec3(u(rng), u(rng), u(rng));
    const Mat3 turn_a = SmallRotation(omega_a), turn_b = SmallRotation(omega_b);
    const Vec3 amplitude = Vec3(2.2, 1.8, 1.5) + 0.5 * Vec3(u(rng), u(rng), u(rng));
    const Vec3 frequency = Vec3(1.0, 1.3, 0.7) + 0.2 * Vec3(u(rng), u(rng), u(rng));
    const Vec3 phase(u(rng), u(rng), u(rng));
    const double dt = 2.0 * M_PI / 2000.0;  // About 0.005 in translation per step.
    VClipCache cache;
    GjkCache gjk_cache;
    SCOPED_TRACE(a.name + " vs " + b.name);
    for (int i = 0; i < steps_per_scenario; ++i) {
      const double t = i * dt;
      X_WA.R = turn_a * X_WA.R;
      X_WB.R = turn_b * X_WB.R;
      for (int k = 0; k < 3; ++k) X_WB.p[k] = amplitude[k] * std::sin(frequency[k] * t + 3.0 * phase[k]);
      const VClipResult r = VClipDistance(*a.poly, X_WA, *b.poly, X_WB, &cache);
      const GjkResult g = Gjk(a, X_WA, b, X_WB, &gjk_cache);
      if (i == 0) {
        cold_transitions += r.transitions;
      } else {
        ++steps;
        transitions += r.transitions;
        max_transitions = std::max<int64_t>(max_transitions, r.transitions);
        ++transition_histogram[std::min(r.transitions, 10)];
      }
      fallbacks += r.fell_back_to_gjk;
      penetrating += r.penetrating;
      const double tol = 1e-9 * scale;
      bool ok;
      if (r.penetrating || g.intersecting) {
        ok = (r.penetrating || r.distance <= tol) && (g.intersecting || g.distance <= tol);
      } else {
        const double error = std::abs(r.distance - g.distance);
        ok = error <= Tolerance(g.distance, scale);
        worst_relative = std::max(worst_relative, error / std::max(g.distance, 1e-300));
        if (error / scale > worst_absolute) {
          worst_absolute = error / scale;
          worst_absolute_distance = g.distance;
        }
      }
      if (!ok) {
        ++gjk_disagreements;
        if (gjk_disagreements < 10) {
          const Oracle oracle = BruteForce(*a.hull, X_WA, *b.hull, X_WB);
          ADD_FAILURE() << "step " << i << ": V-Clip " << r.distance << (r.penetrating ? " (penetrating)" : "")
                        << " GJK " << g.distance << (g.intersecting ? " (intersecting)" : "") << " brute force "
                        << oracle.distance << (oracle.intersecting ? " (intersecting)" : "") << " features "
                        << static_cast<int>(r.feature_a.type) << ":" << r.feature_a.index << " "
                        << static_cast<int>(r.feature_b.type) << ":" << r.feature_b.index;
        }
      }
    }
  }
  EXPECT_EQ(fallbacks, 0) << "the transition cap was hit";
  EXPECT_EQ(gjk_disagreements, 0);
  EXPECT_GT(penetrating, steps / 50) << "the paths pass through A";
  EXPECT_LT(penetrating, steps / 2) << "the paths leave A";
  const double mean = static_cast<double>(transitions) / std::max<int64_t>(steps, 1);
  EXPECT_LT(mean, 2.0) << "coherent queries need few transitions";
  std::printf("coherent motion: %lld warm steps, %.3f transitions per step (max %lld), %lld penetrating, "
              "worst relative error vs GJK %.2e, cold starts %.1f transitions on average\n",
              static_cast<long long>(steps), mean, static_cast<long long>(max_transitions),
              static_cast<long long>(penetrating), worst_relative,
              static_cast<double>(cold_transitions) / scenarios);
  std::printf("worst absolute error vs GJK %.2e x scale at distance %.3e\n", worst_absolute, worst_absolute_distance);
  std::printf("transitions per step histogram:");
  for (const auto& [k, count] : transition_histogram) {
    std::printf(" %d%s:%lld", k, k == 10 ? "+" : "", static_cast<long long>(count));
  }
  std::printf("\n");
}

// Persistent ties: boxes sliding face on face with their faces parallel, and turning about a common
// axis so that edges stay parallel, through contact and back.
TEST(VClipDistance, CoherentMotionThroughDegenerateTiesNeverCycles) {
  const Shape a = BoxShape(Vec3(1.0, 0.6, 0.4));
  const Shape b = BoxShape(Vec3(0.5, 0.3, 0.2));
  const int steps = Cases(100000);
  int64_t transitions = 0, penetrating = 0;
  VClipCache cache;
  for (int i = 0; i < steps; ++i) {
    const double t = i * 2.0 * M_PI / 5000.0;
    const int mode = (i / 5000) % 3;
    RigidTransform X_WA = RigidTransform::Identity(), X_WB;
    if (mode == 0) {
      // B over A's top face, same orientation up to a turn about z; the gap goes through zero.
      X_WB = Pose(Eigen::AngleAxisd(0.3 * std::sin(0.5 * t), Vec3::UnitZ()),
                  Vec3(1.6 * std::sin(t), 0.9 * std::cos(1.3 * t), 0.6 + 0.05 + 0.1 * std::sin(2.0 * t)));
    } else if (mode == 1) {
      // Both turned about x by the same angle, near 45 degrees: A's top edge and B's bottom edge are
      // parallel to x; B slides along x above it.
      const double angle = M_PI / 4 + 0.3 * std::sin(0.3 * t);
      const Eigen::AngleAxisd turn(angle, Vec3::UnitX());
      const double top_a = 0.6 * std::sin(angle) + 0.4 * std::cos(angle);
      const double bottom_b = 0.3 * std::sin(angle) + 0.2 * std::cos(angle);
      X_WA = Pose(turn, Vec3::Zero());
      X_WB = Pose(turn, Vec3(1.6 * std::sin(t), 0.0, top_a + bottom_b + 0.05 * std::sin(3.0 * t)));
    } else {
      // Side by side, faces parallel along y, B sliding along z.
      X_WB = Pose(Eigen::AngleAxisd(0.0, Vec3::UnitZ()),
                  Vec3(0.4 * std::sin(t), 0.9 + 0.01 * std::cos(2.0 * t), 0.7 * std::sin(0.7 * t)));
    }
    const VClipResult r = VClipDistance(*a.poly, X_WA, *b.poly, X_WB, &cache);
    ASSERT_FALSE(r.fell_back_to_gjk) << "step " << i;
    transitions += r.transitions;
    penetrating += r.penetrating;
    if (i % 10 == 0) {
      const GjkResult g = Gjk(a, X_WA, b, X_WB);
      if (g.intersecting || r.penetrating) {
        ASSERT_TRUE((r.penetrating || r.distance <= 1e-12) && (g.intersecting || g.distance <= 1e-12))
            << "step " << i << " V-Clip " << r.distance << " GJK " << g.distance;
      } else {
        ASSERT_NEAR(r.distance, g.distance, Tolerance(g.distance, 2.0)) << "step " << i;
      }
    }
  }
  EXPECT_GT(penetrating, steps / 20);
  std::printf("boxes with ties: %.3f transitions per step, %lld of %d penetrating\n",
              static_cast<double>(transitions) / steps, static_cast<long long>(penetrating), steps);
}

// ---- Penetration ---------------------------------------------------------------------------------------------

TEST(VClipDistance, PenetrationAgreesWithGjkIntersect) {
  std::mt19937_64 rng(9);
  int penetrating = 0, separated = 0, vertex_face = 0, edge_face = 0;
  int64_t local_min_scans = 0;
  for (int i = 0; i < Cases(1500); ++i) {
    const int n = i % 3 == 0 ? 8 : (i % 3 == 1 ? 60 : 250);
    const Shape a = RandomShape(rng, n, kKinds[rng() % 6]);
    const Shape b = RandomShape(rng, 8 + static_cast<int>(rng() % 100), kKinds[rng() % 6]);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.8), Vec3::Constant(0.8));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-0.8), Vec3::Constant(0.8));
    const GjkResult g = Gjk(a, X_WA, b, X_WB);
    if (!g.intersecting && g.distance < 1e-9) continue;  // Touching within rounding: either answer is right.
    const bool intersecting = GjkIntersect(*a.hull, X_WA, *b.hull, X_WB).intersecting;
    const VClipResult r = VClipDistance(*a.poly, X_WA, *b.poly, X_WB);
    SCOPED_TRACE(a.name + " vs " + b.name + " case " + std::to_string(i));
    EXPECT_EQ(r.penetrating, intersecting);
    ExpectAgrees(r, a, X_WA, b, X_WB, g, nullptr);
    if (r.penetrating) {
      // The penetrating features are a vertex-face or edge-face pair.
      const bool vf = (r.feature_a.type == VClipFeatureType::kVertex && r.feature_b.type == VClipFeatureType::kFace) ||
                      (r.feature_a.type == VClipFeatureType::kFace && r.feature_b.type == VClipFeatureType::kVertex);
      const bool ef = (r.feature_a.type == VClipFeatureType::kEdge && r.feature_b.type == VClipFeatureType::kFace) ||
                      (r.feature_a.type == VClipFeatureType::kFace && r.feature_b.type == VClipFeatureType::kEdge);
      EXPECT_TRUE(vf || ef);
      (vf ? vertex_face : edge_face)++;
    }
    local_min_scans += r.local_min_scans;
    (r.penetrating ? penetrating : separated)++;
  }
  EXPECT_GT(penetrating, Cases(1500) / 10);
  EXPECT_GT(separated, Cases(1500) / 10);
  EXPECT_GT(vertex_face, 0) << "penetration found by the local-minimum check";
  EXPECT_GT(edge_face, 0) << "penetration found by an edge crossing a face";
  EXPECT_GT(local_min_scans, 0);
  std::printf("penetration: %d vertex-face, %d edge-face, %lld local-minimum scans\n", vertex_face, edge_face,
              static_cast<long long>(local_min_scans));
}

// One polyhedron wholly inside the other: no surfaces cross, only the local-minimum check can see it.
TEST(VClipDistance, ContainmentIsPenetration) {
  std::mt19937_64 rng(16);
  for (int i = 0; i < Cases(100); ++i) {
    const Shape big = RandomShape(rng, 250, CloudKind::kSphere);
    std::vector<Vec3> points = Cloud(rng, 8 + static_cast<int>(rng() % 100), kKinds[rng() % 6]);
    for (Vec3& p : points) p *= 0.2;
    const Shape small = MakeShape(points, "small");
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    RigidTransform X_WB = X_WA;
    X_WB.R = testing::RandomRotation(rng);
    X_WB.p += Vec3(0.1, -0.2, 0.15);
    const GjkResult g = Gjk(big, X_WA, small, X_WB);
    ASSERT_TRUE(g.intersecting);
    for (int order = 0; order < 2; ++order) {
      VClipCache cache;
      const VClipResult r = order == 0 ? VClipDistance(*big.poly, X_WA, *small.poly, X_WB, &cache)
                                       : VClipDistance(*small.poly, X_WB, *big.poly, X_WA, &cache);
      EXPECT_TRUE(r.penetrating);
      EXPECT_FALSE(r.fell_back_to_gjk);
      EXPECT_LE(SurfaceResidual(*big.hull, X_WA, r.p_WA), 1e-12);
      EXPECT_LE(SurfaceResidual(*small.hull, X_WB, r.p_WA), 1e-12);
    }
  }
}

// ---- Bad input --------------------------------------------------------------------------------------------

TEST(VClipDistance, AnyCacheContentsGiveTheRightAnswer) {
  std::mt19937_64 rng(10);
  const Shape a = RandomShape(rng, 250, CloudKind::kEllipsoid);
  const Shape b = RandomShape(rng, 50, CloudKind::kBox);
  const Shape c = RandomShape(rng, 8, CloudKind::kGaussian);
  const Shape d = RandomShape(rng, 1000, CloudKind::kSphere);
  const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-0.2), Vec3::Constant(0.2));
  const RigidTransform X_WB = testing::RandomPose(rng, Vec3(2.0, -0.3, -0.3), Vec3(2.5, 0.3, 0.3));
  const GjkResult g = Gjk(a, X_WA, b, X_WB);
  ASSERT_FALSE(g.intersecting);

  // Empty cache and no cache.
  VClipCache empty;
  const VClipResult first = VClipDistance(*a.poly, X_WA, *b.poly, X_WB, &empty);
  EXPECT_TRUE(first.cold_start);
  ExpectAgrees(first, a, X_WA, b, X_WB, g, nullptr);
  ExpectAgrees(VClipDistance(*a.poly, X_WA, *b.poly, X_WB, nullptr), a, X_WA, b, X_WB, g, nullptr);
  EXPECT_TRUE(a.poly->Contains(empty.feature_a));

  // A cache from another pair: in range for this one (used as a start) or not (cold start).
  VClipCache other;
  VClipDistance(*d.poly, X_WA, *c.poly, X_WB, &other);
  const VClipResult from_other = VClipDistance(*a.poly, X_WA, *b.poly, X_WB, &other);
  ExpectAgrees(from_other, a, X_WA, b, X_WB, g, nullptr);
  VClipCache big;
  VClipDistance(*d.poly, X_WA, *d.poly, X_WB, &big);
  const VClipResult from_big = VClipDistance(*c.poly, X_WA, *c.poly, X_WB, &big);
  const GjkResult gc = Gjk(c, X_WA, c, X_WB);
  ExpectAgrees(from_big, c, X_WA, c, X_WB, gc, nullptr);

  // Out-of-range and malformed features, every type combination, face-face included.
  const VClipFeatureType types[] = {VClipFeatureType::kVertex, VClipFeatureType::kEdge, VClipFeatureType::kFace,
                                    static_cast<VClipFeatureType>(7), static_cast<VClipFeatureType>(-1)};
  const int32_t indices[] = {-7, -1, 0, 3, 49, 1000000, std::numeric_limits<int32_t>::max()};
  for (VClipFeatureType ta : types)
    for (VClipFeatureType tb : types)
      for (int32_t ia : indices)
        for (int32_t ib : indices) {
          VClipCache cache{{ta, ia}, {tb, ib}};
          const bool valid = a.poly->Contains(cache.feature_a) && b.poly->Contains(cache.feature_b);
          const VClipResult r = VClipDistance(*a.poly, X_WA, *b.poly, X_WB, &cache);
          EXPECT_EQ(r.cold_start, !valid);
          ExpectAgrees(r, a, X_WA, b, X_WB, g, nullptr);
          EXPECT_TRUE(a.poly->Contains(cache.feature_a) && b.poly->Contains(cache.feature_b))
              << "the cache is left valid";
        }

  // Non-finite poses: no NaN, no crash.
  RigidTransform bad = X_WB;
  bad.p.x() = std::numeric_limits<double>::quiet_NaN();
  VClipCache cache = empty;
  const VClipResult nan = VClipDistance(*a.poly, X_WA, *b.poly, bad, &cache);
  EXPECT_TRUE(std::isfinite(nan.distance));
  EXPECT_TRUE(nan.p_WA.allFinite() && nan.p_WB.allFinite());
  EXPECT_EQ(cache, empty) << "the cache is untouched";
  bad.R(0, 0) = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(std::isfinite(VClipDistance(*a.poly, bad, *b.poly, X_WB).distance));
}

TEST(VClipDistance, TransitionCapFallsBackToGjk) {
  std::mt19937_64 rng(11);
  const Shape a = RandomShape(rng, 1000, CloudKind::kSphere);
  const Shape b = RandomShape(rng, 1000, CloudKind::kEllipsoid);
  for (int i = 0; i < Cases(20); ++i) {
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-2), Vec3::Constant(2));
    VClipOptions options;
    options.max_transitions = 1;
    VClipCache cache;
    const VClipResult r = VClipDistance(*a.poly, X_WA, *b.poly, X_WB, &cache, options);
    const GjkResult g = Gjk(a, X_WA, b, X_WB);
    EXPECT_TRUE(r.fell_back_to_gjk || r.transitions == 0);
    EXPECT_EQ(r.penetrating, g.intersecting);
    if (!g.intersecting) {
      EXPECT_NEAR(r.distance, g.distance, 1e-9 * std::max(1.0, g.distance));
    }
    EXPECT_TRUE(a.poly->Contains(cache.feature_a) && b.poly->Contains(cache.feature_b));
    // From there, an uncapped query finishes the job without falling back.
    ExpectAgrees(VClipDistance(*a.poly, X_WA, *b.poly, X_WB, &cache), a, X_WA, b, X_WB, g, nullptr);
  }
}

// ---- NearestVertexPair ------------------------------------------------------------------------------------

// The claims of NearestVertexPair, checked by brute force: an upper bound on the distance realised by
// the reported vertices, and a mutual local minimum over the edge graphs.
void ExpectMutualLocalMinimum(const VertexPairResult& r, const Shape& a, const RigidTransform& X_WA, const Shape& b,
                              const RigidTransform& X_WB, const GjkResult& g) {
  ASSERT_GE(r.vertex_a, 0);
  ASSERT_GE(r.vertex_b, 0);
  const double scale = std::max(Scale(*a.hull), Scale(*b.hull)) + X_WA.p.norm() + X_WB.p.norm();
  const Vec3 pa = X_WA * a.hull->vertices()[r.vertex_a], pb = X_WB * b.hull->vertices()[r.vertex_b];
  EXPECT_NEAR((pa - pb).norm(), r.distance, 1e-12 * scale);
  EXPECT_NEAR((r.p_WA - pa).norm(), 0.0, 1e-12 * scale);
  EXPECT_NEAR((r.p_WB - pb).norm(), 0.0, 1e-12 * scale);
  EXPECT_GE(r.distance, g.distance - 1e-12 * scale) << "an upper bound";
  const double slack = 1e-12 * scale;
  for (int32_t k : b.hull->neighbors(r.vertex_b)) {
    EXPECT_GE((X_WB * b.hull->vertices()[k] - pa).norm(), r.distance - slack);
  }
  for (int32_t k : a.hull->neighbors(r.vertex_a)) {
    EXPECT_GE((X_WA * a.hull->vertices()[k] - pb).norm(), r.distance - slack);
  }
}

// Index of the vertex of h (posed) nearest to p_W, and that distance.
std::pair<int32_t, double> NearestBruteForce(const ConvexPolytope& h, const RigidTransform& X_WH, const Vec3& p_W) {
  std::pair<int32_t, double> best{-1, std::numeric_limits<double>::infinity()};
  for (int32_t k = 0; k < h.num_vertices(); ++k) {
    const double dk = (X_WH * h.vertices()[k] - p_W).norm();
    if (dk < best.second) best = {k, dk};
  }
  return best;
}

TEST(NearestVertexPair, IsAnUpperBoundAndAMutualLocalMinimum) {
  std::mt19937_64 rng(12);
  int global = 0, cases = 0;
  for (int i = 0; i < Cases(400); ++i) {
    const int na = std::array{8, 16, 50, 250, 1000}[rng() % 5], nb = std::array{8, 16, 50, 250}[rng() % 4];
    const CloudKind ka = kKinds[rng() % 6], kb = kKinds[rng() % 6];
    const Shape a = RandomShape(rng, na, ka), b = RandomShape(rng, nb, kb);
    const RigidTransform X_WA = testing::RandomPose(rng, Vec3::Constant(-1), Vec3::Constant(1));
    const RigidTransform X_WB = testing::RandomPose(rng, Vec3::Constant(-2), Vec3::Constant(2));
    SCOPED_TRACE(a.name + " vs " + b.name);
    const GjkResult g = Gjk(a, X_WA, b, X_WB);
    VertexPairCache cache;
    const VertexPairResult r = NearestVertexPair(*a.hull, X_WA, *b.hull, X_WB, &cache);
    ExpectMutualLocalMinimum(r, a, X_WA, b, X_WB, g);
    EXPECT_EQ(cache.vertex_a, r.vertex_a);
    EXPECT_EQ(cache.vertex_b, r.vertex_b);
    // Where the search is exact (small polytopes are scanned; on a sphere the distance from a point is
    // linear in the vertex), each vertex is a nearest vertex of its polytope to the other.
    const Vec3 pa = r.p_WA, pb = r.p_WB;
    if (b.hull->num_vertices() <= ConvexPolytope::kBruteForceMaxVertices || kb == CloudKind::kSphere) {
      EXPECT_NEAR(NearestBruteForce(*b.hull, X_WB, pa).second, r.distance, 1e-12 * (1 + r.distance));
    }
    if (a.hull->num_vertices() <= ConvexPolytope::kBruteForceMaxVertices || ka == CloudKind::kSphere) {
      EXPECT_NEAR(NearestBruteForce(*a.hull, X_WA, pb).second, r.distance, 1e-12 * (1 + r.distance));
    }
    // How often it is the closest vertex pair outright (reported, not promised).
    double best = std::numeric_limits<double>::infinity();
    for (const Vec3& v : a.hull->vertices()) best = std::min(best, NearestBruteForce(*b.hull, X_WB, X_WA * v).second);
    EXPECT_GE(r.distance, best - 1e-12);
    global += r.distance <= best + 1e-12;
    ++cases;
    // A warm start from its own answer stays there in one round.
    const VertexPairResult again = NearestVertexPair(*a.hull, X_WA, *b.hull, X_WB, &cache);
    EXPECT_EQ(again.rounds, 1);
    EXPECT_EQ(again.distance, r.distance);
  }
  std::printf("nearest vertex pair: the closest vertex pair in %d of %d cases\n", global, cases);
}

TEST(NearestVertexPair, WarmStartsFollowCoherentMotionCheaply) {
  std::mt19937_64 rng(13);
  int64_t warm_evaluations = 0, cold_evaluations = 0;
  for (int trial = 0; trial < Cases(10); ++trial) {
    const Shape a = RandomShape(rng, 1000, CloudKind::kNearSphere), b = RandomShape(rng, 250, CloudKind::kEllipsoid);
    const RigidTransform X_WA = RigidTransform::Identity();
    RigidTransform X_WB(testing::RandomRotation(rng), Vec3(3.0, -1.0, 0.5));
    const Mat3 turn = SmallRotation(Vec3(0.01, -0.005, 0.003));
    VertexPairCache cache;
    for (int step = 0; step < 200; ++step) {
      X_WB.R = turn * X_WB.R;
      X_WB.p += Vec3(-0.01, 0.005, 0.0);
      const GjkResult g = Gjk(a, X_WA, b, X_WB);
      const VertexPairResult warm = NearestVertexPair(*a.hull, X_WA, *b.hull, X_WB, &cache);
      const VertexPairResult cold = NearestVertexPair(*a.hull, X_WA, *b.hull, X_WB);
      ExpectMutualLocalMinimum(warm, a, X_WA, b, X_WB, g);
      warm_evaluations += warm.evaluations;
      cold_evaluations += cold.evaluations;
    }
  }
  EXPECT_LT(2 * warm_evaluations, cold_evaluations) << "warm " << warm_evaluations << " cold " << cold_evaluations;
}

TEST(NearestVertexPair, BadCachesAndPosesAreHandled) {
  std::mt19937_64 rng(15);
  const Shape a = RandomShape(rng, 250, CloudKind::kEllipsoid), b = RandomShape(rng, 50, CloudKind::kBox);
  const RigidTransform X_WA = RigidTransform::Identity();
  const RigidTransform X_WB(testing::RandomRotation(rng), Vec3(2.5, 0.3, -0.2));
  const GjkResult g = Gjk(a, X_WA, b, X_WB);
  for (const VertexPairCache& start : {VertexPairCache{-5, 3}, VertexPairCache{0, 1000000}, VertexPairCache{249, 49},
                                       VertexPairCache{std::numeric_limits<int32_t>::max(), -1}}) {
    VertexPairCache cache = start;
    ExpectMutualLocalMinimum(NearestVertexPair(*a.hull, X_WA, *b.hull, X_WB, &cache), a, X_WA, b, X_WB, g);
    EXPECT_TRUE(cache.vertex_a >= 0 && cache.vertex_a < 250 && cache.vertex_b >= 0 && cache.vertex_b < 50);
  }
  RigidTransform bad = X_WB;
  bad.R(1, 2) = std::numeric_limits<double>::quiet_NaN();
  VertexPairCache cache{3, 4};
  const VertexPairResult r = NearestVertexPair(*a.hull, X_WA, *b.hull, bad, &cache);
  EXPECT_EQ(r.distance, std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.vertex_a, -1);
  EXPECT_EQ(cache.vertex_a, 3);
  EXPECT_EQ(cache.vertex_b, 4);
}

// ---- Timing (for reports; run with --gtest_also_run_disabled_tests) ----------------------------------------

TEST(VClipDistance, DISABLED_TimingOfWarmCoherentQueries) {
  std::mt19937_64 rng(14);
  std::vector<Shape> shapes;
  shapes.push_back(RandomShape(rng, 8, CloudKind::kGaussian));
  shapes.push_back(RandomShape(rng, 250, CloudKind::kSphere));
  shapes.push_back(RandomShape(rng, 940, CloudKind::kSphere));
  for (Shape& s : PandaShapes()) {
    if (s.name == "mbm_panda/link6.obj") shapes.push_back(std::move(s));
  }
  using Clock = std::chrono::steady_clock;
  for (const Shape& s : shapes) {
    const double size = Scale(*s.hull);
    for (int motion = 0; motion < 2; ++motion) {
      // 0: B circles A at about one size apart, tumbling; 1: B's path passes through A.
      const int steps = 20000;
      std::vector<RigidTransform> poses;
      RigidTransform X_WB(testing::RandomRotation(rng), Vec3::Zero());
      const Mat3 turn = SmallRotation(Vec3(0.01, -0.005, 0.003));
      for (int i = 0; i < steps; ++i) {
        const double t = i * 2.0 * M_PI / 2000.0;
        X_WB.R = turn * X_WB.R;
        X_WB.p = motion == 0 ? Vec3(3.0 * size * std::cos(t), 3.0 * size * std::sin(t), 0.5 * size * std::sin(0.3 * t))
                             : Vec3(3.0 * size * std::sin(t), 2.0 * size * std::sin(1.3 * t + 0.4),
                                    1.5 * size * std::cos(0.7 * t));
        poses.push_back(X_WB);
      }
      const RigidTransform X_WA = RigidTransform::Identity();
      VClipCache cache;
      std::vector<double> per_call;
      int64_t transitions = 0, penetrating = 0;
      for (int i = 0; i < steps; ++i) {
        const auto t0 = Clock::now();
        const VClipResult r = VClipDistance(*s.poly, X_WA, *s.poly, poses[i], &cache);
        const auto t1 = Clock::now();
        if (i == 0) continue;
        per_call.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        transitions += r.transitions;
        penetrating += r.penetrating;
      }
      double sum = 0.0;
      auto t0 = Clock::now();
      for (int i = 1; i < steps; ++i) sum += VClipDistance(*s.poly, X_WA, *s.poly, poses[i], &cache).distance;
      const double vclip_mean = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / (steps - 1);
      GjkCache gjk_cache;
      t0 = Clock::now();
      for (int i = 1; i < steps; ++i) sum -= Gjk(s, X_WA, s, poses[i], &gjk_cache).distance;
      const double gjk_mean = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / (steps - 1);
      EXPECT_NEAR(sum, 0.0, 1e-6);
      std::sort(per_call.begin(), per_call.end());
      std::printf("%-20s %4d vertices, %s: V-Clip median %.3f us/query (p90 %.3f, mean %.3f), %.3f "
                  "transitions/step, %.0f%% penetrating; GJK warm mean %.3f us\n",
                  s.name.c_str(), s.poly->num_vertices(), motion == 0 ? "orbit  " : "through",
                  per_call[per_call.size() / 2], per_call[per_call.size() * 9 / 10], vclip_mean,
                  static_cast<double>(transitions) / (steps - 1), 100.0 * penetrating / (steps - 1), gjk_mean);
    }
  }
}

}  // namespace
}  // namespace proximity::core
