#include "narrowphase/gjk.h"

#include <limits>

namespace proximity::core::internal {
namespace {

// The closest point to the origin of a sub-simplex: which of the input vertices it uses (indices into
// the simplex), their weights, and the point.
struct SubSimplex {
  std::array<int32_t, 3> index{};
  std::array<double, 3> weight{};
  int32_t size = 0;
  Vec3 v = Vec3::Zero();
};

SubSimplex Vertex(const GjkSimplex& s, int32_t i) {
  SubSimplex r;
  r.size = 1;
  r.index[0] = i;
  r.weight[0] = 1.0;
  r.v = s.vertices[i].w;
  return r;
}

// Segment [a, b]: the parameter of the origin's projection, clamped.
SubSimplex Segment(const GjkSimplex& s, int32_t i, int32_t j) {
  const Vec3& a = s.vertices[i].w;
  const Vec3& b = s.vertices[j].w;
  const Vec3 ab = b - a;
  const double t = -a.dot(ab);
  const double ll = ab.squaredNorm();
  if (t <= 0.0 || !(ll > 0.0)) return Vertex(s, i);
  if (t >= ll) return Vertex(s, j);
  SubSimplex r;
  r.size = 2;
  r.index = {i, j, 0};
  const double u = t / ll;
  r.weight = {1.0 - u, u, 0.0};
  r.v = a + u * ab;
  return r;
}

SubSimplex Closer(const SubSimplex& x, const SubSimplex& y) {
  return y.v.squaredNorm() < x.v.squaredNorm() ? y : x;
}

// Triangle (a, b, c): Ericson's Voronoi-region walk (Real-Time Collision Detection, 5.1.5) for the
// query point at the origin; a flat triangle falls back to the closest of its edges.
SubSimplex TriangleRegion(const GjkSimplex& s, int32_t i, int32_t j, int32_t k) {
  const Vec3& a = s.vertices[i].w;
  const Vec3& b = s.vertices[j].w;
  const Vec3& c = s.vertices[k].w;
  const Vec3 ab = b - a, ac = c - a;
  const double d1 = -ab.dot(a), d2 = -ac.dot(a);
  if (d1 <= 0.0 && d2 <= 0.0) return Vertex(s, i);
  const double d3 = -ab.dot(b), d4 = -ac.dot(b);
  if (d3 >= 0.0 && d4 <= d3) return Vertex(s, j);
  const double vc = d1 * d4 - d3 * d2;
  if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0) return Segment(s, i, j);
  const double d5 = -ab.dot(c), d6 = -ac.dot(c);
  if (d6 >= 0.0 && d5 <= d6) return Vertex(s, k);
  const double vb = d5 * d2 - d1 * d6;
  if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0) return Segment(s, i, k);
  const double va = d3 * d6 - d5 * d4;
  if (va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0) return Segment(s, j, k);
  const Vec3 n = ab.cross(ac);
  const double nn = n.squaredNorm();
  const double denom = va + vb + vc;
  // Flat (or nearly flat) triangle: its area is lost in rounding, so the edges decide.
  if (!(nn > 1e-24 * ab.squaredNorm() * ac.squaredNorm()) || !(denom > 0.0)) {
    return Closer(Closer(Segment(s, i, j), Segment(s, i, k)), Segment(s, j, k));
  }
  SubSimplex r;
  r.size = 3;
  r.index = {i, j, k};
  const double wb = vb / denom, wc = vc / denom;
  r.weight = {1.0 - wb - wc, wb, wc};
  // The projection of the origin onto the plane: exactly normal to the face, so tiny distances keep
  // their relative accuracy.
  r.v = (n.dot(a) / nn) * n;
  return r;
}

Vec3 Store(const SubSimplex& sub, GjkSimplex* s) {
  std::array<GjkVertex, 3> kept;
  for (int32_t m = 0; m < sub.size; ++m) kept[m] = s->vertices[sub.index[m]];
  for (int32_t m = 0; m < sub.size; ++m) {
    s->vertices[m] = kept[m];
    s->weights[m] = sub.weight[m];
  }
  s->size = sub.size;
  return sub.v;
}

}  // namespace

Vec3 SolveSimplex(GjkSimplex* s) {
  switch (s->size) {
    case 1:
      s->weights[0] = 1.0;
      return s->vertices[0].w;
    case 2:
      return Store(Segment(*s, 0, 1), s);
    case 3:
      return Store(TriangleRegion(*s, 0, 1, 2), s);
    case 4:
      break;
    default:
      s->size = 0;
      return Vec3::Zero();
  }
  // Tetrahedron: barycentric coordinates of the origin from signed volumes (the volume with the origin
  // in place of each vertex). The origin is inside when all have the sign of the whole; otherwise the
  // closest point lies on a face that the origin is beyond. A flat tetrahedron tries every face.
  const Vec3& a = s->vertices[0].w;
  const Vec3& b = s->vertices[1].w;
  const Vec3& c = s->vertices[2].w;
  const Vec3& d = s->vertices[3].w;
  const Vec3 ab = b - a, ac = c - a, ad = d - a;
  const double vol_a = b.dot(c.cross(d));
  const double vol_b = -a.dot(ac.cross(ad));
  const double vol_c = ab.dot(ad.cross(a));
  const double vol_d = -ab.dot(ac.cross(a));
  const double vol = ab.dot(ac.cross(ad));
  const double scale = std::max({ab.squaredNorm(), ac.squaredNorm(), ad.squaredNorm()});
  const bool flat = !(std::abs(vol) > 1e-12 * scale * std::sqrt(scale));
  if (!flat) {
    const double sign = vol > 0.0 ? 1.0 : -1.0;
    const bool out_a = sign * vol_a < 0.0, out_b = sign * vol_b < 0.0;
    const bool out_c = sign * vol_c < 0.0, out_d = sign * vol_d < 0.0;
    if (!out_a && !out_b && !out_c && !out_d) {
      s->weights = {vol_a / vol, vol_b / vol, vol_c / vol, vol_d / vol};
      return Vec3::Zero();
    }
    SubSimplex best;
    bool have = false;
    const auto consider = [&](bool outside, int32_t i, int32_t j, int32_t k) {
      if (!outside) return;
      const SubSimplex f = TriangleRegion(*s, i, j, k);
      best = have ? Closer(best, f) : f;
      have = true;
    };
    consider(out_a, 1, 2, 3);
    consider(out_b, 0, 2, 3);
    consider(out_c, 0, 1, 3);
    consider(out_d, 0, 1, 2);
    return Store(best, s);
  }
  SubSimplex best = TriangleRegion(*s, 1, 2, 3);
  best = Closer(best, TriangleRegion(*s, 0, 2, 3));
  best = Closer(best, TriangleRegion(*s, 0, 1, 3));
  best = Closer(best, TriangleRegion(*s, 0, 1, 2));
  return Store(best, s);
}

}  // namespace proximity::core::internal
