#include "contact/contact_impl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace proximity::core {
namespace {

using Vec2 = Eigen::Vector2d;

double Cross2(const Vec2& a, const Vec2& b) { return a.x() * b.y() - a.y() * b.x(); }

bool FiniteNonNegative(double x) { return std::isfinite(x) && x >= 0.0; }

// The feature tolerances of ContactOptions, with the angle as its cosine and sine.
struct Tolerance {
  double distance = 0.0;
  double cos_angle = 1.0;
  double sin_angle = 0.0;
};

Tolerance MakeTolerance(const ContactOptions& o) {
  return {o.feature_distance_tolerance, std::cos(o.feature_angle_tolerance), std::sin(o.feature_angle_tolerance)};
}

// A unit direction; a zero or non-finite one reads as +z.
Vec3 UnitOrZ(const Vec3& d) {
  const double n = d.norm();
  if (!(n > 0.0) || !std::isfinite(n)) return Vec3::UnitZ();
  return d / n;
}

// Whether the great-circle arc from unit a to unit b (shorter than a half circle; a point when a = b)
// passes within the tolerance angle of unit n.
bool ArcNear(const Vec3& n, const Vec3& a, const Vec3& b, const Tolerance& t) {
  if (n.dot(a) >= t.cos_angle || n.dot(b) >= t.cos_angle) return true;
  Vec3 m = a.cross(b);
  const double mm = m.norm();
  if (!(mm > 1e-15)) return false;
  m /= mm;
  const double nm = n.dot(m);
  const Vec3 np = n - nm * m;  // n's projection on the arc's plane.
  // Inside the wedge from a to b: the nearest point of the arc is the projection's direction.
  if (a.cross(np).dot(m) < 0.0 || np.cross(b).dot(m) < 0.0) return false;
  if (!(np.squaredNorm() > 0.0)) return false;
  return std::abs(nm) <= t.sin_angle;
}

// ---- Polyhedral shapes as vertices, face planes and edges with their Gauss-map arcs --------------------

// An edge between vertices v0 and v1 whose normal cone is the great arc from unit a to unit b (the
// normals of the two faces at the edge). Coplanar triangles of one facet give a point arc (a = b).
struct HullEdge {
  int32_t v0 = 0;
  int32_t v1 = 0;
  Vec3 a = Vec3::UnitZ();
  Vec3 b = Vec3::UnitZ();
};

struct PolyhedralHull {
  std::vector<Vec3> vertices;  // Frame S; the index is the feature id.
  std::vector<FacePlane> faces;
  std::vector<HullEdge> edges;
};

void BuildHull(const Box& box, PolyhedralHull* h) {
  const Vec3& e = box.half_extents;
  h->vertices.resize(8);
  for (int32_t c = 0; c < 8; ++c) {
    h->vertices[c] = Vec3(c & 1 ? e.x() : -e.x(), c & 2 ? e.y() : -e.y(), c & 4 ? e.z() : -e.z());
  }
  h->faces.clear();
  for (int axis = 0; axis < 3; ++axis) {
    for (double sign : {1.0, -1.0}) h->faces.push_back({sign * Vec3::Unit(axis), e[axis]});
  }
  h->edges.clear();
  for (int axis = 0; axis < 3; ++axis) {
    const int j = (axis + 1) % 3, k = (axis + 2) % 3;
    for (int32_t c = 0; c < 8; ++c) {
      if (c & (1 << axis)) continue;
      const double sj = c & (1 << j) ? 1.0 : -1.0, sk = c & (1 << k) ? 1.0 : -1.0;
      h->edges.push_back({c, c | (1 << axis), sj * Vec3::Unit(j), sk * Vec3::Unit(k)});
    }
  }
}

void BuildHull(const Triangle& t, PolyhedralHull* h) {
  h->vertices = {t.a, t.b, t.c};
  h->faces.clear();
  h->edges.clear();
  const Vec3 normal = (t.b - t.a).cross(t.c - t.a);
  const double scale = std::max({(t.b - t.a).squaredNorm(), (t.c - t.a).squaredNorm(), (t.c - t.b).squaredNorm()});
  if (normal.norm() > 1e-12 * scale && scale > 0.0) {
    // Two faces (+m, -m); each edge's normal cone is the half circle from m through the edge's outward
    // in-plane normal to -m, kept as two quarter arcs.
    const Vec3 m = normal.normalized();
    h->faces.push_back({m, m.dot(t.a)});
    h->faces.push_back({-m, -m.dot(t.a)});
    for (int32_t i = 0; i < 3; ++i) {
      const int32_t j = (i + 1) % 3;
      const Vec3 out = (h->vertices[j] - h->vertices[i]).cross(m).normalized();
      h->edges.push_back({i, j, m, out});
      h->edges.push_back({i, j, out, -m});
    }
    return;
  }
  // A segment (or a point): the normal cone of the segment is the whole circle normal to it, kept as
  // four quarter arcs.
  int32_t bi = 0, bj = 1;
  double best = -1.0;
  for (int32_t i = 0; i < 3; ++i) {
    for (int32_t j = i + 1; j < 3; ++j) {
      const double d = (h->vertices[j] - h->vertices[i]).squaredNorm();
      if (d > best) {
        best = d;
        bi = i;
        bj = j;
      }
    }
  }
  if (!(best > 0.0)) return;
  const Vec3 dir = (h->vertices[bj] - h->vertices[bi]).normalized();
  const Vec3 w1 = internal::AnyOrthogonal(dir);
  const Vec3 w2 = dir.cross(w1);
  const std::array<Vec3, 4> ring{w1, w2, Vec3(-w1), Vec3(-w2)};
  for (int32_t q = 0; q < 4; ++q) h->edges.push_back({bi, bj, ring[q], ring[(q + 1) % 4]});
}

void BuildHull(const ConvexPolytope& p, PolyhedralHull* h) {
  h->vertices = p.vertices();
  h->faces = p.face_planes();
  h->edges.clear();
  struct HalfEdge {
    int32_t lo, hi, face;
  };
  std::vector<HalfEdge> half;
  half.reserve(3 * p.faces().size());
  for (int32_t f = 0; f < p.num_faces(); ++f) {
    const auto& t = p.faces()[f];
    for (int k = 0; k < 3; ++k) {
      const int32_t u = t[k], w = t[(k + 1) % 3];
      half.push_back({std::min(u, w), std::max(u, w), f});
    }
  }
  std::sort(half.begin(), half.end(), [](const HalfEdge& x, const HalfEdge& y) {
    return x.lo != y.lo ? x.lo < y.lo : (x.hi != y.hi ? x.hi < y.hi : x.face < y.face);
  });
  h->edges.reserve(half.size() / 2);
  for (size_t i = 0; i + 1 < half.size(); ++i) {
    if (half[i].lo != half[i + 1].lo || half[i].hi != half[i + 1].hi) continue;
    h->edges.push_back({half[i].lo, half[i].hi, p.face_planes()[half[i].face].normal,
                        p.face_planes()[half[i + 1].face].normal});
    ++i;
  }
}

// The support set of a polyhedral shape: the vertices within the distance tolerance of the extreme
// plane, and the ends of every edge whose normal cone passes within the angle tolerance of n (which
// covers the faces within the angle: their normal is an end of their edges' arcs). Together: every
// vertex that is extreme for some direction within the angle of n, or nearly extreme along n.
void PolyhedralSupportSet(const PolyhedralHull& h, const Vec3& n, const Tolerance& t, SupportSet* out) {
  out->clear();
  const int32_t count = static_cast<int32_t>(h.vertices.size());
  if (count == 0) return;
  double top = -std::numeric_limits<double>::infinity();
  for (const Vec3& v : h.vertices) top = std::max(top, n.dot(v));
  std::vector<char> keep(count, 0);
  for (int32_t i = 0; i < count; ++i) keep[i] = n.dot(h.vertices[i]) >= top - t.distance;
  for (const HullEdge& e : h.edges) {
    if (keep[e.v0] && keep[e.v1]) continue;
    if (ArcNear(n, e.a, e.b, t)) keep[e.v0] = keep[e.v1] = 1;
  }
  for (int32_t i = 0; i < count; ++i)
    if (keep[i]) out->Add(h.vertices[i], i);
}

// ---- Separating axes of polyhedral pairs ------------------------------------------------------------

// A Gauss-map arc a-b with the normal of its plane, b x a (zero for a point arc).
struct Arc {
  Vec3 a, b, bxa;
};

// Whether the arcs a-b and c-d cross on the unit sphere (Gregorius 2013): c and d on opposite sides of
// the plane of a, b; a and b on opposite sides of the plane of c, d; and on the same hemisphere.
bool ArcsCross(const Arc& p, const Arc& q) {
  const double cba = q.a.dot(p.bxa), dba = q.b.dot(p.bxa);
  if (!(cba * dba < 0.0)) return false;
  const double adc = p.a.dot(q.bxa), bdc = p.b.dot(q.bxa);
  return adc * bdc < 0.0 && cba * bdc > 0.0;
}

internal::SatResult HullSat(const PolyhedralHull& ha, const RigidTransform& X_WA, const PolyhedralHull& hb,
                            const RigidTransform& X_WB, double bias) {
  const RigidTransform X_AB = RelativeTransform(X_WA, X_WB);
  const std::vector<Vec3>& va = ha.vertices;
  std::vector<Vec3> vb(hb.vertices.size());
  for (size_t i = 0; i < vb.size(); ++i) vb[i] = X_AB * hb.vertices[i];
  internal::SatResult r;
  const double inf = std::numeric_limits<double>::infinity();

  // Faces of A: the separation is how far B's lowest vertex lies above the plane.
  double face_a = -inf;
  Vec3 axis_a = Vec3::UnitZ();
  for (const FacePlane& f : ha.faces) {
    double lowest = inf;
    for (const Vec3& v : vb) lowest = std::min(lowest, f.normal.dot(v));
    ++r.axes;
    const double sep = lowest - f.offset;
    if (sep > face_a) {
      face_a = sep;
      axis_a = f.normal;
    }
  }
  // Faces of B, posed in A; the axis from A to B is the face's inward normal.
  double face_b = -inf;
  Vec3 axis_b = Vec3::UnitZ();
  for (const FacePlane& f : hb.faces) {
    const Vec3 n = X_AB.R * f.normal;
    const double offset = f.offset + n.dot(X_AB.p);
    double lowest = inf;
    for (const Vec3& v : va) lowest = std::min(lowest, n.dot(v));
    ++r.axes;
    const double sep = lowest - offset;
    if (sep > face_b) {
      face_b = sep;
      axis_b = -n;
    }
  }
  // Edge pairs whose arcs cross on the Gauss map of A + (-B): the faces of the Minkowski difference.
  double edge = -inf;
  Vec3 axis_e = Vec3::UnitZ();
  // Arcs of A, and of -B posed in A; point arcs (edges inside a planar facet) make no Minkowski face.
  std::vector<std::pair<Arc, int32_t>> arcs_a, arcs_b;
  arcs_a.reserve(ha.edges.size());
  arcs_b.reserve(hb.edges.size());
  for (size_t i = 0; i < ha.edges.size(); ++i) {
    const HullEdge& e = ha.edges[i];
    const Vec3 bxa = e.b.cross(e.a);
    if (bxa.squaredNorm() > 1e-24) arcs_a.push_back({{e.a, e.b, bxa}, static_cast<int32_t>(i)});
  }
  for (size_t j = 0; j < hb.edges.size(); ++j) {
    const HullEdge& e = hb.edges[j];
    const Vec3 c = -(X_AB.R * e.a), d = -(X_AB.R * e.b);
    const Vec3 dxc = d.cross(c);
    if (dxc.squaredNorm() > 1e-24) arcs_b.push_back({{c, d, dxc}, static_cast<int32_t>(j)});
  }
  for (const auto& [arc_a, i] : arcs_a) {
    const HullEdge& ea = ha.edges[i];
    const Vec3 dir_a = va[ea.v1] - va[ea.v0];
    for (const auto& [arc_b, j] : arcs_b) {
      if (!ArcsCross(arc_a, arc_b)) continue;
      const HullEdge& eb = hb.edges[j];
      const Vec3 dir_b = vb[eb.v1] - vb[eb.v0];
      Vec3 axis = dir_a.cross(dir_b);
      const double len = axis.norm();
      if (!(len > 1e-12 * dir_a.norm() * dir_b.norm())) continue;  // Parallel edges: the faces decide.
      axis /= len;
      if (axis.dot(ea.a + ea.b) < 0.0) axis = -axis;  // Outward from A: on A's arc.
      ++r.axes;
      const double sep = axis.dot(vb[eb.v0] - va[ea.v0]);
      if (sep > edge) {
        edge = sep;
        axis_e = axis;
      }
    }
  }
  double best = face_a;
  Vec3 axis = axis_a;
  if (face_b > best + bias) {
    best = face_b;
    axis = axis_b;
  }
  if (edge > best + bias) {
    best = edge;
    axis = axis_e;
  }
  if (!std::isfinite(best)) {  // No faces and no edges (two points): the line between them.
    const Vec3 d = (vb.empty() ? Vec3::Zero() : vb[0]) - (va.empty() ? Vec3::Zero() : va[0]);
    axis = UnitOrZ(d);
    best = 0.0;
  }
  r.separation = best;
  r.n_W = X_WA.R * axis;
  return r;
}

template <class A, class B>
internal::SatResult SatOf(const A& a, const RigidTransform& X_WA, const B& b, const RigidTransform& X_WB,
                          double bias) {
  PolyhedralHull ha, hb;
  BuildHull(a, &ha);
  BuildHull(b, &hb);
  return HullSat(ha, X_WA, hb, X_WB, bias);
}

// ---- Regions in the contact plane ---------------------------------------------------------------------

// A vertex of a projected support set: position in the contact plane, height along n, feature id.
struct Vert2 {
  Vec2 x = Vec2::Zero();
  double h = 0.0;
  int32_t id = -1;
};

// Orthonormal u, v with u x v = n (Duff et al., "Building an Orthonormal Basis, Revisited", JCGT 2017).
void PlaneBasis(const Vec3& n, Vec3* u, Vec3* v) {
  const double sign = std::copysign(1.0, n.z());
  const double a = -1.0 / (sign + n.z());
  const double b = n.x() * n.y() * a;
  *u = Vec3(1.0 + sign * n.x() * n.x() * a, sign * b, -sign * n.x());
  *v = Vec3(b, sign + n.y() * n.y() * a, -n.y());
  if (u->cross(*v).dot(n) < 0.0) *v = -*v;
}

// Convex hull of projected points, counter-clockwise, without points closer than eps to each other (of
// such, the one nearer the other shape is kept: the higher one for A, sense = +1, the lower for B,
// sense = -1) and without vertices within eps of the line through their neighbours (Andrew's monotone
// chain). One or two points when the set is a point or a segment.
std::vector<Vert2> Hull2(std::vector<Vert2> pts, double sense, double eps) {
  std::sort(pts.begin(), pts.end(), [](const Vert2& p, const Vert2& q) {
    return p.x.x() != q.x.x() ? p.x.x() < q.x.x() : (p.x.y() != q.x.y() ? p.x.y() < q.x.y() : p.id < q.id);
  });
  std::vector<Vert2> unique;
  for (const Vert2& p : pts) {
    bool merged = false;
    for (size_t k = unique.size(); k-- > 0;) {
      if (unique[k].x.x() < p.x.x() - eps) break;
      if ((unique[k].x - p.x).norm() <= eps) {
        const double better = sense * (p.h - unique[k].h);
        if (better > 0.0 || (better == 0.0 && p.id < unique[k].id)) unique[k] = p;
        merged = true;
        break;
      }
    }
    if (!merged) unique.push_back(p);
  }
  if (unique.size() <= 2) return unique;
  std::sort(unique.begin(), unique.end(), [](const Vert2& p, const Vert2& q) {
    return p.x.x() != q.x.x() ? p.x.x() < q.x.x() : p.x.y() < q.x.y();
  });
  const auto turns_left = [eps](const Vert2& o, const Vert2& a, const Vert2& b) {
    const Vec2 ob = b.x - o.x;
    return Cross2(a.x - o.x, ob) > eps * ob.norm();
  };
  std::vector<Vert2> hull;
  for (int pass = 0; pass < 2; ++pass) {
    const size_t start = hull.size();
    for (size_t i = 0; i < unique.size(); ++i) {
      const Vert2& p = pass == 0 ? unique[i] : unique[unique.size() - 1 - i];
      while (hull.size() >= start + 2 && !turns_left(hull[hull.size() - 2], hull.back(), p)) hull.pop_back();
      hull.push_back(p);
    }
    hull.pop_back();  // The last point of each chain starts the other.
  }
  if (hull.size() == 2 && (hull[0].x - hull[1].x).norm() <= eps) hull.pop_back();
  return hull;
}

// Height of a projected support set above point x of the plane: the set's point, its segment (clamped),
// or its polygon (barycentric in the fan from vertex 0, clamped to the polygon). Exact at the vertices
// and linear along the edges; exact everywhere for planar sets.
double Lift(const std::vector<Vert2>& p, const Vec2& x) {
  if (p.size() == 1) return p[0].h;
  if (p.size() == 2) {
    const Vec2 d = p[1].x - p[0].x;
    const double dd = d.squaredNorm();
    const double t = dd > 0.0 ? std::clamp((x - p[0].x).dot(d) / dd, 0.0, 1.0) : 0.0;
    return p[0].h + t * (p[1].h - p[0].h);
  }
  double best_min = -std::numeric_limits<double>::infinity();
  double best_h = p[0].h;
  for (size_t i = 1; i + 1 < p.size(); ++i) {
    const Vec2 &a = p[0].x, &b = p[i].x, &c = p[i + 1].x;
    const double area = Cross2(b - a, c - a);
    if (!(area > 0.0)) continue;
    double wa = Cross2(c - b, x - b) / area, wb = Cross2(a - c, x - c) / area, wc = Cross2(b - a, x - a) / area;
    const double lowest = std::min({wa, wb, wc});
    if (lowest <= best_min) continue;
    best_min = lowest;
    wa = std::max(wa, 0.0);
    wb = std::max(wb, 0.0);
    wc = std::max(wc, 0.0);
    const double sum = wa + wb + wc;
    best_h = sum > 0.0 ? (wa * p[0].h + wb * p[i].h + wc * p[i + 1].h) / sum : p[0].h;
  }
  return best_h;
}

// A feature of one side's projected set: a vertex (i1 = -1) or an edge.
struct Label {
  int side = 0;  // 0: A, 1: B.
  int32_t i0 = -1;
  int32_t i1 = -1;
};

Label VertexLabel(int side, int32_t id) { return {side, id, -1}; }
Label EdgeLabel(int side, int32_t i, int32_t j) { return {side, std::min(i, j), std::max(i, j)}; }

void Name(ContactId* id, const Label& l) {
  std::array<int32_t, 2>& slot = l.side == 0 ? id->a : id->b;
  slot = {l.i0, l.i1};
}

// The point where two edges of the working polygon cross: an edge of each side names both; two edges of
// one side meet at their shared vertex.
ContactId Crossing(const Label& e1, const Label& e2) {
  ContactId id;
  if (e1.side != e2.side) {
    Name(&id, e1);
    Name(&id, e2);
    return id;
  }
  int32_t shared = e2.i0;
  if (e1.i0 == e2.i0 || e1.i1 == e2.i0) shared = e2.i0;
  else if (e1.i0 == e2.i1 || e1.i1 == e2.i1) shared = e2.i1;
  Name(&id, VertexLabel(e2.side, shared));
  return id;
}

ContactId Single(const Label& l) {
  ContactId id;
  Name(&id, l);
  return id;
}

// A point of the region; split points (from disjoint projections) lift A at x and B at x_b.
struct RegionPoint {
  Vec2 x = Vec2::Zero();
  ContactId id;
  bool split = false;
  Vec2 x_b = Vec2::Zero();
};

// Signed distance of x from the line through q0, q1 (positive on the left: inside a counter-clockwise
// polygon).
double LineDistance(const Vec2& q0, const Vec2& q1, const Vec2& x) {
  const Vec2 d = q1 - q0;
  const double len = d.norm();
  return len > 0.0 ? Cross2(d, x - q0) / len : (x - q0).norm();
}

Label EdgeOf(const std::vector<Vert2>& p, int side, size_t i) {
  return EdgeLabel(side, p[i].id, p[(i + 1) % p.size()].id);
}

// Whether point x lies in the projected set q (within eps).
bool Contains(const std::vector<Vert2>& q, const Vec2& x, double eps, int32_t* tests) {
  if (q.size() == 1) return (x - q[0].x).norm() <= eps;
  if (q.size() == 2) {
    const Vec2 d = q[1].x - q[0].x;
    const double t = std::clamp((x - q[0].x).dot(d) / d.squaredNorm(), 0.0, 1.0);
    ++*tests;
    return (q[0].x + t * d - x).norm() <= eps;
  }
  for (size_t i = 0; i < q.size(); ++i) {
    ++*tests;
    if (LineDistance(q[i].x, q[(i + 1) % q.size()].x, x) < -eps) return false;
  }
  return true;
}

// Segment p (side sp) clipped by polygon q (side sq): parametric clipping against each edge's half-plane.
void ClipSegment(const std::vector<Vert2>& p, int sp, const std::vector<Vert2>& q, int sq, double eps,
                 std::vector<RegionPoint>* out, int32_t* tests) {
  double t0 = 0.0, t1 = 1.0;
  ContactId id0 = Single(VertexLabel(sp, p[0].id)), id1 = Single(VertexLabel(sp, p[1].id));
  const Label seg = EdgeLabel(sp, p[0].id, p[1].id);
  for (size_t j = 0; j < q.size(); ++j) {
    const Vec2 &q0 = q[j].x, &q1 = q[(j + 1) % q.size()].x;
    const double d0 = LineDistance(q0, q1, p[0].x), d1 = LineDistance(q0, q1, p[1].x);
    *tests += 2;
    const bool in0 = d0 >= -eps, in1 = d1 >= -eps;
    if (!in0 && !in1) return;
    if (in0 && in1) continue;
    const double t = std::clamp(d0 / (d0 - d1), 0.0, 1.0);
    if (!in0) {
      if (t > t0) {
        t0 = t;
        id0 = Crossing(seg, EdgeOf(q, sq, j));
      }
    } else if (t < t1) {
      t1 = t;
      id1 = Crossing(seg, EdgeOf(q, sq, j));
    }
  }
  const Vec2 d = p[1].x - p[0].x;
  const double len = d.norm();
  if (t0 > t1 + eps / std::max(len, 1e-300)) return;
  const Vec2 x0 = p[0].x + t0 * d, x1 = p[0].x + std::max(t0, t1) * d;
  out->push_back({x0, id0});
  if ((x1 - x0).norm() > eps) out->push_back({x1, id1});
}

// Two segments: a crossing point, or the overlap of collinear ones.
void IntersectSegments(const std::vector<Vert2>& p, const std::vector<Vert2>& q, double eps,
                       std::vector<RegionPoint>* out, int32_t* tests) {
  const Vec2 r = p[1].x - p[0].x, s = q[1].x - q[0].x;
  const double lr = r.norm(), ls = s.norm();
  *tests += 2;
  const double dq0 = LineDistance(p[0].x, p[1].x, q[0].x), dq1 = LineDistance(p[0].x, p[1].x, q[1].x);
  if (std::abs(dq0) <= eps && std::abs(dq1) <= eps) {
    // Collinear: the overlap of the intervals, each end named by the vertex that bounds it.
    const double tq0 = (q[0].x - p[0].x).dot(r) / (lr * lr), tq1 = (q[1].x - p[0].x).dot(r) / (lr * lr);
    const int lo_q = tq0 <= tq1 ? 0 : 1;
    const double qlo = std::min(tq0, tq1), qhi = std::max(tq0, tq1);
    const ContactId lo_id = qlo > 0.0 ? Single(VertexLabel(1, q[lo_q].id)) : Single(VertexLabel(0, p[0].id));
    const ContactId hi_id = qhi < 1.0 ? Single(VertexLabel(1, q[1 - lo_q].id)) : Single(VertexLabel(0, p[1].id));
    const double lo = std::max(0.0, qlo), hi = std::min(1.0, qhi);
    if (lo > hi + eps / lr) return;
    const Vec2 x0 = p[0].x + lo * r, x1 = p[0].x + std::max(lo, hi) * r;
    out->push_back({x0, lo_id});
    if ((x1 - x0).norm() > eps) out->push_back({x1, hi_id});
    return;
  }
  const double denom = Cross2(r, s);
  if (!(std::abs(denom) > 0.0)) return;
  const Vec2 w = q[0].x - p[0].x;
  const double t = Cross2(w, s) / denom, u = Cross2(w, r) / denom;
  const double et = eps / lr, eu = eps / ls;
  if (t < -et || t > 1.0 + et || u < -eu || u > 1.0 + eu) return;
  const Vec2 x = p[0].x + std::clamp(t, 0.0, 1.0) * r;
  ContactId id;
  if (t <= et || t >= 1.0 - et) {
    id = Single(VertexLabel(0, p[t <= et ? 0 : 1].id));
  } else if (u <= eu || u >= 1.0 - eu) {
    id = Single(VertexLabel(1, q[u <= eu ? 0 : 1].id));
  } else {
    id = Crossing(EdgeLabel(0, p[0].id, p[1].id), EdgeLabel(1, q[0].id, q[1].id));
  }
  out->push_back({x, id});
}

// Polygon p (A) clipped by polygon q (B), Sutherland-Hodgman, tracking for every vertex the features
// that made it and, for the edge leaving it, the side and edge it runs along.
void ClipPolygons(const std::vector<Vert2>& p, const std::vector<Vert2>& q, double eps,
                  std::vector<RegionPoint>* out, int32_t* tests) {
  struct Working {
    Vec2 x;
    ContactId id;
    Label edge;
  };
  std::vector<Working> in, next;
  for (size_t i = 0; i < p.size(); ++i) in.push_back({p[i].x, Single(VertexLabel(0, p[i].id)), EdgeOf(p, 0, i)});
  for (size_t j = 0; j < q.size() && !in.empty(); ++j) {
    const Vec2 &q0 = q[j].x, &q1 = q[(j + 1) % q.size()].x;
    const Label clip = EdgeOf(q, 1, j);
    next.clear();
    const size_t n = in.size();
    std::vector<double> d(n);
    for (size_t k = 0; k < n; ++k) d[k] = LineDistance(q0, q1, in[k].x);
    *tests += static_cast<int32_t>(n);
    for (size_t k = 0; k < n; ++k) {
      const Working& cur = in[k];
      const size_t k1 = (k + 1) % n;
      const bool cur_in = d[k] >= -eps, next_in = d[k1] >= -eps;
      if (cur_in) next.push_back(cur);
      if (cur_in != next_in) {
        const double t = std::clamp(d[k] / (d[k] - d[k1]), 0.0, 1.0);
        const Vec2 x = cur.x + t * (in[k1].x - cur.x);
        const ContactId id = Crossing(cur.edge, clip);
        next.push_back({x, id, cur_in ? clip : cur.edge});
      }
    }
    std::swap(in, next);
  }
  for (const Working& w : in) out->push_back({w.x, w.id});
}

// How many features a point's id names (a lone vertex ranks before a crossing).
int Rank(const ContactId& id) {
  return (id.a[0] >= 0 ? 1 : 0) + (id.a[1] >= 0 ? 1 : 0) + (id.b[0] >= 0 ? 1 : 0) + (id.b[1] >= 0 ? 1 : 0);
}

// Drops points within eps of the previous one (cyclically), keeping the one with the simpler id.
void MergeClosePoints(std::vector<RegionPoint>* pts, double eps) {
  std::vector<RegionPoint> kept;
  for (const RegionPoint& p : *pts) {
    if (!kept.empty() && (kept.back().x - p.x).norm() <= eps) {
      if (Rank(p.id) < Rank(kept.back().id)) kept.back() = p;
      continue;
    }
    kept.push_back(p);
  }
  while (kept.size() > 1 && (kept.back().x - kept.front().x).norm() <= eps) {
    if (Rank(kept.back().id) < Rank(kept.front().id)) kept.front() = kept.back();
    kept.pop_back();
  }
  *pts = std::move(kept);
}

// The closest points of two disjoint projected sets (A's at x, B's at x_b), named by the features
// (vertex or edge) of each side that realise the distance; *gap receives the distance.
RegionPoint ClosestPoint(const std::vector<Vert2>& pa, const std::vector<Vert2>& pb, double* gap) {
  double best = std::numeric_limits<double>::infinity();
  RegionPoint r;
  r.split = true;
  // Sets the pair (x_from on side_from, x_to on side_to).
  const auto set = [&](int side_from, const Vec2& x_from, const Vec2& x_to) {
    r.x = side_from == 0 ? x_from : x_to;
    r.x_b = side_from == 0 ? x_to : x_from;
  };
  // Vertex of one side against a vertex or an edge of the other.
  const auto scan = [&](const std::vector<Vert2>& from, int side_from, const std::vector<Vert2>& to, int side_to) {
    const size_t edges = to.size() == 1 ? 0 : (to.size() == 2 ? 1 : to.size());
    for (const Vert2& v : from) {
      for (const Vert2& w : to) {
        const double d = (v.x - w.x).norm();
        if (d < best) {
          best = d;
          set(side_from, v.x, w.x);
          r.id = ContactId();
          Name(&r.id, VertexLabel(side_from, v.id));
          Name(&r.id, VertexLabel(side_to, w.id));
        }
      }
      for (size_t j = 0; j < edges; ++j) {
        const Vec2 &q0 = to[j].x, &q1 = to[(j + 1) % to.size()].x;
        const Vec2 e = q1 - q0;
        const double ee = e.squaredNorm();
        if (!(ee > 0.0)) continue;
        const double t = (v.x - q0).dot(e) / ee;
        if (t <= 0.0 || t >= 1.0) continue;
        const Vec2 c = q0 + t * e;
        const double d = (v.x - c).norm();
        if (d < best) {
          best = d;
          set(side_from, v.x, c);
          r.id = ContactId();
          Name(&r.id, VertexLabel(side_from, v.id));
          Name(&r.id, EdgeOf(to, side_to, j));
        }
      }
    }
  };
  scan(pa, 0, pb, 1);
  scan(pb, 1, pa, 0);
  *gap = best;
  return r;
}

// Keeps at most four points: the deepest, the farthest from it, the one making the largest triangle
// with those, and the one adding the most area outside that triangle; in their polygon order.
void ReduceToFour(std::vector<ContactPoint>* points, const std::vector<Vec2>& x) {
  const size_t n = points->size();
  if (n <= 4) return;
  size_t i1 = 0;
  for (size_t i = 1; i < n; ++i)
    if ((*points)[i].depth > (*points)[i1].depth) i1 = i;
  size_t i2 = i1;
  double far = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = (x[i] - x[i1]).squaredNorm();
    if (d > far) {
      far = d;
      i2 = i;
    }
  }
  std::vector<size_t> keep{i1};
  if (i2 != i1) {
    keep.push_back(i2);
    size_t i3 = i1;
    double area = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double a = std::abs(Cross2(x[i2] - x[i1], x[i] - x[i1]));
      if (a > area) {
        area = a;
        i3 = i;
      }
    }
    if (i3 != i1) {
      keep.push_back(i3);
      std::array<size_t, 3> tri{i1, i2, i3};
      if (Cross2(x[i2] - x[i1], x[i3] - x[i1]) < 0.0) std::swap(tri[1], tri[2]);
      size_t i4 = i1;
      double added = 0.0;
      for (size_t i = 0; i < n; ++i) {
        for (int k = 0; k < 3; ++k) {
          const Vec2 &e0 = x[tri[k]], &e1 = x[tri[(k + 1) % 3]];
          const double a = -Cross2(e1 - e0, x[i] - e0);
          if (a > added) {
            added = a;
            i4 = i;
          }
        }
      }
      if (i4 != i1) keep.push_back(i4);
    }
  }
  std::sort(keep.begin(), keep.end());
  std::vector<ContactPoint> reduced;
  for (size_t i : keep) reduced.push_back((*points)[i]);
  *points = std::move(reduced);
}

// The support set of a disk-capped shape's flat disk: `count` rim points at z, ids first..first+count-1.
void AddDisk(double radius, double z, int32_t count, int32_t first, SupportSet* out) {
  for (int32_t k = 0; k < count; ++k) {
    const double angle = 2.0 * M_PI * k / count;
    out->Add(Vec3(radius * std::cos(angle), radius * std::sin(angle), z), first + k);
  }
}

Status Check(bool ok, const char* what, const std::string& message) {
  if (ok) return Status::Ok();
  return InvalidArgument(std::string(what) + ": " + message);
}

}  // namespace

// ---- Support sets ---------------------------------------------------------------------------------------

void ComputeSupportSet(const Sphere& shape, const Vec3& n_S, const ContactOptions&, SupportSet* out) {
  out->clear();
  out->Add(shape.center + shape.radius * UnitOrZ(n_S), 0);
}

void ComputeSupportSet(const Capsule& shape, const Vec3& n_S, const ContactOptions& options, SupportSet* out) {
  out->clear();
  const Vec3 n = UnitOrZ(n_S);
  const Tolerance t = MakeTolerance(options);
  const double h = shape.half_length;
  const double drop = 2.0 * h * std::abs(n.z());  // How far the lower end lies below the upper one.
  const bool both = std::abs(n.z()) <= t.sin_angle || drop <= t.distance;
  const Vec3 offset = shape.radius * n;
  if (both || n.z() < 0.0) out->Add(Vec3(0.0, 0.0, -h) + offset, 0);
  if (both || n.z() >= 0.0) out->Add(Vec3(0.0, 0.0, h) + offset, 1);
}

void ComputeSupportSet(const Box& shape, const Vec3& n_S, const ContactOptions& options, SupportSet* out) {
  PolyhedralHull h;
  BuildHull(shape, &h);
  PolyhedralSupportSet(h, UnitOrZ(n_S), MakeTolerance(options), out);
}

void ComputeSupportSet(const Triangle& shape, const Vec3& n_S, const ContactOptions& options, SupportSet* out) {
  PolyhedralHull h;
  BuildHull(shape, &h);
  PolyhedralSupportSet(h, UnitOrZ(n_S), MakeTolerance(options), out);
}

void ComputeSupportSet(const ConvexPolytope& shape, const Vec3& n_S, const ContactOptions& options,
                       SupportSet* out) {
  PolyhedralHull h;
  BuildHull(shape, &h);
  PolyhedralSupportSet(h, UnitOrZ(n_S), MakeTolerance(options), out);
}

void ComputeSupportSet(const Cylinder& shape, const Vec3& n_S, const ContactOptions& options, SupportSet* out) {
  out->clear();
  const Vec3 n = UnitOrZ(n_S);
  const Tolerance t = MakeTolerance(options);
  const int32_t k = options.disk_points;
  const double r = shape.radius, h = shape.half_length;
  const double nxy = std::hypot(n.x(), n.y());
  const double top = r * nxy + h * std::abs(n.z());  // The support value.
  // A cap counts when its normal is within the angle of n, or the whole disk within the distance.
  const bool cap_top = n.z() >= t.cos_angle || top - (-r * nxy + h * n.z()) <= t.distance;
  const bool cap_bottom = -n.z() >= t.cos_angle || top - (-r * nxy - h * n.z()) <= t.distance;
  if (cap_top) AddDisk(r, h, k, 0, out);
  if (cap_bottom) AddDisk(r, -h, k, k, out);
  if (nxy > 1e-12) {
    // The rim points in n's azimuth; both (the side's segment) when the side's normal is within the angle.
    const Vec3 rim(r * n.x() / nxy, r * n.y() / nxy, 0.0);
    const bool side = std::abs(n.z()) <= t.sin_angle;
    if (!cap_top && (side || top - (r * nxy + h * n.z()) <= t.distance)) out->Add(rim + Vec3(0.0, 0.0, h), 2 * k);
    if (!cap_bottom && (side || top - (r * nxy - h * n.z()) <= t.distance)) {
      out->Add(rim + Vec3(0.0, 0.0, -h), 2 * k + 1);
    }
  }
  if (out->size() == 0) out->Add(Vec3(0.0, 0.0, n.z() >= 0.0 ? h : -h), n.z() >= 0.0 ? 2 * k : 2 * k + 1);
}

void ComputeSupportSet(const Cone& shape, const Vec3& n_S, const ContactOptions& options, SupportSet* out) {
  out->clear();
  const Vec3 n = UnitOrZ(n_S);
  const Tolerance t = MakeTolerance(options);
  const int32_t k = options.disk_points;
  const double r = shape.radius, h = shape.half_height;
  const double nxy = std::hypot(n.x(), n.y());
  const double apex = h * n.z(), rim_value = r * nxy - h * n.z();
  const double top = std::max(apex, rim_value);
  const bool base = -n.z() >= t.cos_angle || top - (-r * nxy - h * n.z()) <= t.distance;
  // The side's outward normal in n's azimuth, (2h cos, 2h sin, r) / |.|.
  const double slant = std::hypot(2.0 * h, r);
  bool side = false;
  bool whole_top = false;  // n along +z and a side within the angle: every generator (a flat cone).
  if (slant > 0.0) {
    if (nxy > 1e-12) {
      side = (2.0 * h * nxy + r * n.z()) / slant >= t.cos_angle;
    } else if (n.z() > 0.0) {
      whole_top = r / slant >= t.cos_angle;
    }
  }
  if (base || whole_top) AddDisk(r, -h, k, 0, out);
  if (side || whole_top || top - apex <= t.distance) out->Add(Vec3(0.0, 0.0, h), k);
  if (!base && nxy > 1e-12 && (side || top - rim_value <= t.distance)) {
    out->Add(Vec3(r * n.x() / nxy, r * n.y() / nxy, -h), k + 1);
  }
  if (out->size() == 0) {
    if (apex >= rim_value || !(nxy > 1e-12)) {
      out->Add(Vec3(0.0, 0.0, h), k);
    } else {
      out->Add(Vec3(r * n.x() / nxy, r * n.y() / nxy, -h), k + 1);
    }
  }
}

// ---- Validation -----------------------------------------------------------------------------------------

namespace internal {

Status ValidateContactOptions(const ContactOptions& o) {
  if (!FiniteNonNegative(o.contact_margin)) return InvalidArgument("contact_margin must be finite and >= 0");
  if (!FiniteNonNegative(o.feature_distance_tolerance)) {
    return InvalidArgument("feature_distance_tolerance must be finite and >= 0");
  }
  if (!(o.feature_angle_tolerance >= 0.0 && o.feature_angle_tolerance <= 0.5)) {
    return InvalidArgument("feature_angle_tolerance must be in [0, 0.5] rad");
  }
  if (o.disk_points < 3 || o.disk_points > 1024) return InvalidArgument("disk_points must be in [3, 1024]");
  if (!FiniteNonNegative(o.gjk.rel_tolerance) || !FiniteNonNegative(o.gjk.abs_tolerance)) {
    return InvalidArgument("gjk tolerances must be finite and >= 0");
  }
  if (o.gjk.max_iterations < 1) return InvalidArgument("gjk.max_iterations must be at least 1");
  return Status::Ok();
}

Status ValidatePose(const RigidTransform& X, const char* what) {
  return Check(X.R.allFinite() && X.p.allFinite(), what, "pose is not finite");
}

Status ValidateContactShape(const Sphere& s, const char* what) {
  return Check(s.center.allFinite() && FiniteNonNegative(s.radius), what, "sphere centre and radius must be finite, radius >= 0");
}
Status ValidateContactShape(const Capsule& s, const char* what) {
  return Check(FiniteNonNegative(s.radius) && FiniteNonNegative(s.half_length), what,
               "capsule radius and half_length must be finite and >= 0");
}
Status ValidateContactShape(const Box& s, const char* what) {
  return Check(s.half_extents.allFinite() && (s.half_extents.array() >= 0.0).all(), what,
               "box half_extents must be finite and >= 0");
}
Status ValidateContactShape(const Cylinder& s, const char* what) {
  return Check(FiniteNonNegative(s.radius) && FiniteNonNegative(s.half_length), what,
               "cylinder radius and half_length must be finite and >= 0");
}
Status ValidateContactShape(const Cone& s, const char* what) {
  return Check(FiniteNonNegative(s.radius) && FiniteNonNegative(s.half_height), what,
               "cone radius and half_height must be finite and >= 0");
}
Status ValidateContactShape(const Triangle& s, const char* what) {
  return Check(s.a.allFinite() && s.b.allFinite() && s.c.allFinite(), what, "triangle vertices must be finite");
}
Status ValidateContactShape(const ConvexPolytope& s, const char* what) {
  return Check(s.num_vertices() > 0, what, "polytope has no vertices");
}

Vec3 AnyOrthogonal(const Vec3& n) {
  const Vec3 c = std::abs(n.x()) < 0.6 ? Vec3::UnitX() : (std::abs(n.y()) < 0.6 ? Vec3::UnitY() : Vec3::UnitZ());
  return UnitOrZ(n.cross(c));
}

// ---- Candidate axes --------------------------------------------------------------------------------------

void AppendCandidateAxes(const Sphere&, const Mat3&, std::vector<Vec3>*, std::vector<Vec3>*) {}
void AppendCandidateAxes(const Capsule&, const Mat3& R, std::vector<Vec3>*, std::vector<Vec3>* edges) {
  edges->push_back(R.col(2));
}
void AppendCandidateAxes(const Box&, const Mat3& R, std::vector<Vec3>* faces, std::vector<Vec3>* edges) {
  for (int i = 0; i < 3; ++i) {
    faces->push_back(R.col(i));
    edges->push_back(R.col(i));
  }
}
void AppendCandidateAxes(const Cylinder&, const Mat3& R, std::vector<Vec3>* faces, std::vector<Vec3>* edges) {
  faces->push_back(R.col(2));
  edges->push_back(R.col(2));
}
void AppendCandidateAxes(const Cone&, const Mat3& R, std::vector<Vec3>* faces, std::vector<Vec3>* edges) {
  faces->push_back(R.col(2));
  edges->push_back(R.col(2));
}
void AppendCandidateAxes(const Triangle& t, const Mat3& R, std::vector<Vec3>* faces, std::vector<Vec3>* edges) {
  faces->push_back(R * (t.b - t.a).cross(t.c - t.a));
  edges->push_back(R * (t.b - t.a));
  edges->push_back(R * (t.c - t.b));
  edges->push_back(R * (t.a - t.c));
}
void AppendCandidateAxes(const ConvexPolytope& p, const Mat3& R, std::vector<Vec3>* faces,
                         std::vector<Vec3>* edges) {
  for (const FacePlane& f : p.face_planes()) faces->push_back(R * f.normal);
  for (const auto& e : p.edges()) edges->push_back(R * (p.vertices()[e[1]] - p.vertices()[e[0]]));
}

// ---- Separating axes --------------------------------------------------------------------------------------

SatResult PolyhedralSat(const Box& a, const RigidTransform& X_WA, const Box& b, const RigidTransform& X_WB,
                        double bias) {
  return SatOf(a, X_WA, b, X_WB, bias);
}
SatResult PolyhedralSat(const Box& a, const RigidTransform& X_WA, const Triangle& b, const RigidTransform& X_WB,
                        double bias) {
  return SatOf(a, X_WA, b, X_WB, bias);
}
SatResult PolyhedralSat(const Box& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                        const RigidTransform& X_WB, double bias) {
  return SatOf(a, X_WA, b, X_WB, bias);
}
SatResult PolyhedralSat(const Triangle& a, const RigidTransform& X_WA, const Box& b, const RigidTransform& X_WB,
                        double bias) {
  return SatOf(a, X_WA, b, X_WB, bias);
}
SatResult PolyhedralSat(const Triangle& a, const RigidTransform& X_WA, const Triangle& b,
                        const RigidTransform& X_WB, double bias) {
  return SatOf(a, X_WA, b, X_WB, bias);
}
SatResult PolyhedralSat(const Triangle& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                        const RigidTransform& X_WB, double bias) {
  return SatOf(a, X_WA, b, X_WB, bias);
}
SatResult PolyhedralSat(const ConvexPolytope& a, const RigidTransform& X_WA, const Box& b,
                        const RigidTransform& X_WB, double bias) {
  return SatOf(a, X_WA, b, X_WB, bias);
}
SatResult PolyhedralSat(const ConvexPolytope& a, const RigidTransform& X_WA, const Triangle& b,
                        const RigidTransform& X_WB, double bias) {
  return SatOf(a, X_WA, b, X_WB, bias);
}
SatResult PolyhedralSat(const ConvexPolytope& a, const RigidTransform& X_WA, const ConvexPolytope& b,
                        const RigidTransform& X_WB, double bias) {
  return SatOf(a, X_WA, b, X_WB, bias);
}

// ---- The region -------------------------------------------------------------------------------------------

void BuildContactRegion(const SupportSet& a, const RigidTransform& X_WA, const SupportSet& b,
                        const RigidTransform& X_WB, const Vec3& n_W, const ContactOptions& options,
                        ContactManifold* m) {
  m->points.clear();
  m->disjoint_projections = false;
  m->stats.support_points_a = a.size();
  m->stats.support_points_b = b.size();
  if (a.size() == 0 || b.size() == 0) return;
  Vec3 u, v;
  PlaneBasis(n_W, &u, &v);
  double magnitude = 0.0;
  const auto project = [&](const SupportSet& s, const RigidTransform& X) {
    std::vector<Vert2> out(s.p_S.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const Vec3 p = X * s.p_S[i];
      out[i] = {Vec2(u.dot(p), v.dot(p)), n_W.dot(p), s.ids[i]};
      magnitude = std::max(magnitude, p.cwiseAbs().maxCoeff());
    }
    return out;
  };
  std::vector<Vert2> pa = project(a, X_WA), pb = project(b, X_WB);
  // Tolerance in the plane: relative to the sets' extent, above rounding at the coordinates' magnitude.
  Vec2 lo = pa[0].x, hi = pa[0].x;
  for (const auto* set : {&pa, &pb}) {
    for (const Vert2& p : *set) {
      lo = lo.cwiseMin(p.x);
      hi = hi.cwiseMax(p.x);
    }
  }
  const double extent = (hi - lo).maxCoeff();
  const double eps = std::max(1e-9 * extent + 1e-14 * magnitude, 1e-15);
  pa = Hull2(std::move(pa), 1.0, eps);
  pb = Hull2(std::move(pb), -1.0, eps);
  m->stats.polygon_a = static_cast<int32_t>(pa.size());
  m->stats.polygon_b = static_cast<int32_t>(pb.size());

  std::vector<RegionPoint> region;
  int32_t* tests = &m->stats.clip_tests;
  if (pa.size() == 1) {
    if (Contains(pb, pa[0].x, eps, tests)) region.push_back({pa[0].x, Single(VertexLabel(0, pa[0].id))});
  } else if (pb.size() == 1) {
    if (Contains(pa, pb[0].x, eps, tests)) region.push_back({pb[0].x, Single(VertexLabel(1, pb[0].id))});
  } else if (pa.size() == 2 && pb.size() == 2) {
    IntersectSegments(pa, pb, eps, &region, tests);
  } else if (pa.size() == 2) {
    ClipSegment(pa, 0, pb, 1, eps, &region, tests);
  } else if (pb.size() == 2) {
    ClipSegment(pb, 1, pa, 0, eps, &region, tests);
  } else {
    ClipPolygons(pa, pb, eps, &region, tests);
  }
  MergeClosePoints(&region, eps);
  if (region.empty()) {
    double gap = 0.0;
    region.push_back(ClosestPoint(pa, pb, &gap));
    m->disjoint_projections = gap > options.feature_distance_tolerance;
  }

  std::vector<Vec2> xs;
  m->points.reserve(region.size());
  for (const RegionPoint& r : region) {
    const Vec2& x_b = r.split ? r.x_b : r.x;
    const double ha = Lift(pa, r.x), hb = Lift(pb, x_b);
    ContactPoint c;
    c.p_WA = r.x.x() * u + r.x.y() * v + ha * n_W;
    c.p_WB = x_b.x() * u + x_b.y() * v + hb * n_W;
    c.p_W = 0.5 * (c.p_WA + c.p_WB);
    c.depth = ha - hb;
    c.id = r.id;
    m->points.push_back(c);
    xs.push_back(r.x);
  }
  if (options.reduce_to_four) ReduceToFour(&m->points, xs);
}

}  // namespace internal
}  // namespace proximity::core
