#pragma once
/// @file
/// Bounding volumes (sphere, AABB, OBB): fitting to points and triangles, overlap tests, and distance
/// lower bounds between volumes in different frames. Every distance bound here is a true lower bound on
/// the distance between any point of one volume and any point of the other.

#include <cmath>
#include <limits>
#include <span>

#include "proximity/core/base/types.h"
#include "proximity/core/narrowphase/shapes.h"

namespace proximity::core {

/// An axis-aligned box in its model's frame M; empty when min > max on any axis.
struct Aabb {
  Vec3 min = Vec3::Constant(std::numeric_limits<double>::infinity());
  Vec3 max = Vec3::Constant(-std::numeric_limits<double>::infinity());

  void Extend(const Vec3& p) {
    min = min.cwiseMin(p);
    max = max.cwiseMax(p);
  }
  void Extend(const Aabb& o) {
    min = min.cwiseMin(o.min);
    max = max.cwiseMax(o.max);
  }
  bool empty() const { return (min.array() > max.array()).any(); }
  Vec3 center() const { return 0.5 * (min + max); }
  Vec3 half_extents() const { return 0.5 * (max - min); }
  double SurfaceArea() const {
    const Vec3 d = max - min;
    return 2.0 * (d.x() * d.y() + d.y() * d.z() + d.z() * d.x());
  }
};

/// An oriented box in its model's frame M: R_MB's columns are the box axes, `center` is p_MBo, and the
/// box is {center + R_MB * x : |x_i| <= half_extents_i}.
struct Obb {
  Mat3 R_MB = Mat3::Identity();
  Vec3 center = Vec3::Zero();
  Vec3 half_extents = Vec3::Zero();

  double Volume() const { return 8.0 * half_extents.prod(); }
};

/// Fits an AABB to points.
Aabb FitAabb(std::span<const Vec3> points);
/// Fits a small enclosing sphere to points: the smaller of Ritter's sphere and the sphere about the
/// bounding box's centre. Not the minimal sphere in general, always enclosing (inflated by rounding).
Sphere FitSphere(std::span<const Vec3> points);
/// The minimal enclosing sphere of one triangle (circumsphere, or the longest edge's diameter sphere
/// when the triangle is obtuse).
Sphere FitTriangleSphere(const Vec3& a, const Vec3& b, const Vec3& c);
/// Fits an OBB to triangles given as consecutive vertex triples: axes from the area-weighted covariance
/// of the triangle surfaces (Gottschalk, Lin, Manocha 1996), extents from the vertices; the AABB is
/// taken instead when it is smaller. Always enclosing (inflated by rounding).
Obb FitObb(std::span<const Vec3> triangle_vertices);

/// Whether sphere a (frame A) and sphere b (frame B) overlap, with b's centre already in A.
inline bool SpheresOverlap(const Vec3& center_a, double radius_a, const Vec3& center_b_in_A, double radius_b) {
  const double r = radius_a + radius_b;
  return (center_a - center_b_in_A).squaredNorm() <= r * r;
}
/// Lower bound on the distance between two spheres (both centres in one frame); 0 when they overlap.
inline double SphereDistanceLowerBound(const Vec3& center_a, double radius_a, const Vec3& center_b,
                                       double radius_b) {
  const double d = (center_a - center_b).norm() - radius_a - radius_b;
  return d > 0.0 ? d : 0.0;
}

/// The pose of box b relative to box a, for the separating-axis tests: R is R_ab (b's axes in a's box
/// frame) and T is p_ab (b's centre in a's box frame), given X_AB between the two models' frames.
struct BoxPairFrame {
  Mat3 R;
  Vec3 T;
};
inline BoxPairFrame MakeBoxPairFrame(const Obb& a, const Obb& b, const RigidTransform& X_AB) {
  const Mat3 R_Ab = X_AB.R * b.R_MB;
  return {a.R_MB.transpose() * R_Ab, a.R_MB.transpose() * (X_AB.R * b.center + X_AB.p - a.center)};
}

/// Whether two OBBs overlap: the 15-axis separating-axis test (Gottschalk, Lin, Manocha 1996), with a
/// small tolerance on near-parallel edge axes so that rounding never reports a false separation.
inline bool ObbsOverlap(const Vec3& half_a, const Vec3& half_b, const BoxPairFrame& f);
/// Lower bound on the distance between two OBBs: the largest gap of their projections over the same
/// 15 axes (each normalised) and the direction between their centres; 0 when they overlap. Returns as
/// soon as a gap >= `enough` is found, since callers only need to know the bound reached it.
inline double ObbDistanceLowerBound(const Vec3& half_a, const Vec3& half_b, const BoxPairFrame& f,
                                    double enough = std::numeric_limits<double>::infinity());
/// Upper bound on how far any point of sphere `s` (in frame B) moves in frame A when B's pose in A
/// changes from X_AB0 to X_AB1: |X_AB1 p - X_AB0 p| for every p with |p - c| <= r. Sound for tiny
/// rotations (no cancellation) and for any 3x3 matrices, not only exact rotations.
double SphereMotionBound(const RigidTransform& X_AB0, const RigidTransform& X_AB1, const Sphere& s);

/// SphereMotionBound for many spheres under one change of pose: the rotation's change and its norm
/// bound computed once, then each sphere's bound in a few operations (the same bounds, to the bit).
class SphereMotion {
 public:
  SphereMotion(const RigidTransform& X_AB0, const RigidTransform& X_AB1);
  double Of(const Sphere& s) const {
    const double d = (dR_ * s.center + dp_).norm() + spin_ * s.radius;
    return d * (1.0 + 1e-12) + 1e-15 * (s.center.norm() + s.radius + poses_);
  }

 private:
  Mat3 dR_;
  Vec3 dp_;
  double spin_ = 0.0;
  double poses_ = 0.0;  // |p0| + |p1|
};

/// Exact distance between two AABBs in one frame (0 when they overlap).
double AabbDistance(const Aabb& a, const Aabb& b);

// Definitions of the inline tests above: they run in every hierarchy walk.

inline bool ObbsOverlap(const Vec3& a, const Vec3& b, const BoxPairFrame& f) {
  const Mat3& R = f.R;
  const Vec3& T = f.T;
  // A small addend keeps near-parallel edge pairs, whose cross product is nearly null, from
  // reporting a separation that rounding invented.
  const Mat3 AbsR = R.cwiseAbs().array() + 1e-12;
  for (int i = 0; i < 3; ++i) {
    if (std::abs(T[i]) > a[i] + AbsR.row(i).dot(b)) return false;
  }
  for (int j = 0; j < 3; ++j) {
    if (std::abs(T.dot(R.col(j))) > AbsR.col(j).dot(a) + b[j]) return false;
  }
  for (int i = 0; i < 3; ++i) {
    const int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
    for (int j = 0; j < 3; ++j) {
      const int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
      const double t = std::abs(T[i2] * R(i1, j) - T[i1] * R(i2, j));
      const double ra = a[i1] * AbsR(i2, j) + a[i2] * AbsR(i1, j);
      const double rb = b[j1] * AbsR(i, j2) + b[j2] * AbsR(i, j1);
      if (t > ra + rb) return false;
    }
  }
  return true;
}

inline double ObbDistanceLowerBound(const Vec3& a, const Vec3& b, const BoxPairFrame& f, double enough) {
  const Mat3& R = f.R;
  const Vec3& T = f.T;
  const Mat3 AbsR = R.cwiseAbs();
  double best = 0.0;
  for (int i = 0; i < 3; ++i) {
    best = std::max(best, std::abs(T[i]) - a[i] - AbsR.row(i).dot(b));
  }
  if (best >= enough) return best;
  for (int j = 0; j < 3; ++j) {
    best = std::max(best, std::abs(T.dot(R.col(j))) - AbsR.col(j).dot(a) - b[j]);
  }
  if (best >= enough) return best;
  {
    // The direction between the centres: for small boxes far apart it is close to the direction of
    // the closest points, which the face and edge axes miss when corners face each other.
    const double t2 = T.squaredNorm();
    if (t2 > 0.0) {
      const double t = std::sqrt(t2);
      const Vec3 L = T / t;
      const double gap = t - (a.array() * L.array().abs()).sum() - (b.array() * (R.transpose() * L).array().abs()).sum();
      if (gap > best) best = gap;
      if (best >= enough) return best;
    }
  }
  for (int i = 0; i < 3; ++i) {
    const int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
    for (int j = 0; j < 3; ++j) {
      const int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
      const double gap = std::abs(T[i2] * R(i1, j) - T[i1] * R(i2, j)) -
                         (a[i1] * AbsR(i2, j) + a[i2] * AbsR(i1, j)) - (b[j1] * AbsR(i, j2) + b[j2] * AbsR(i, j1));
      if (gap <= 0.0) continue;
      // The axis is A_i x B_j, of length sin(angle) = sqrt(1 - R_ij^2); the gap along the unit axis is
      // gap / length. Nearly parallel axes add nothing reliable.
      const double norm2 = 1.0 - R(i, j) * R(i, j);
      if (norm2 < 1e-12 || gap * gap <= best * best * norm2) continue;
      best = gap / std::sqrt(norm2);
      if (best >= enough) return best;
    }
  }
  return best;
}

}  // namespace proximity::core
