#include "narrowphase/bounding_volume.h"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>

namespace proximity::core {
namespace {

// Relative padding that keeps fitted volumes enclosing despite rounding in the fit and in the
// transforms a query applies: a few ulps of the largest magnitude involved.
double Padding(double magnitude) { return 16.0 * std::numeric_limits<double>::epsilon() * (1.0 + magnitude); }

double MaxAbs(std::span<const Vec3> points) {
  double m = 0.0;
  for (const Vec3& p : points) m = std::max(m, p.cwiseAbs().maxCoeff());
  return m;
}

Sphere RitterSphere(std::span<const Vec3> points) {
  auto farthest = [&](const Vec3& from) {
    const Vec3* best = &points[0];
    double best_d2 = -1.0;
    for (const Vec3& p : points) {
      const double d2 = (p - from).squaredNorm();
      if (d2 > best_d2) {
        best_d2 = d2;
        best = &p;
      }
    }
    return *best;
  };
  const Vec3 y = farthest(points[0]);
  const Vec3 z = farthest(y);
  Vec3 c = 0.5 * (y + z);
  double r = 0.5 * (y - z).norm();
  for (const Vec3& p : points) {
    const double d = (p - c).norm();
    if (d > r) {
      const double nr = 0.5 * (r + d);
      c += (d - nr) / d * (p - c);
      r = nr;
    }
  }
  return {c, r};
}

double MaxDistance(std::span<const Vec3> points, const Vec3& c) {
  double m2 = 0.0;
  for (const Vec3& p : points) m2 = std::max(m2, (p - c).squaredNorm());
  return std::sqrt(m2);
}

// Extents of `points` along the columns of R, as a box.
Obb BoxAlong(std::span<const Vec3> points, const Mat3& R) {
  Vec3 lo = Vec3::Constant(std::numeric_limits<double>::infinity());
  Vec3 hi = -lo;
  for (const Vec3& p : points) {
    const Vec3 q = R.transpose() * p;
    lo = lo.cwiseMin(q);
    hi = hi.cwiseMax(q);
  }
  Obb box;
  box.R_MB = R;
  box.center = R * (0.5 * (lo + hi));
  box.half_extents = 0.5 * (hi - lo);
  return box;
}

}  // namespace

Aabb FitAabb(std::span<const Vec3> points) {
  Aabb box;
  for (const Vec3& p : points) box.Extend(p);
  return box;
}

Sphere FitSphere(std::span<const Vec3> points) {
  if (points.empty()) return {};
  const Sphere ritter = RitterSphere(points);
  const Vec3 box_center = FitAabb(points).center();
  Sphere s = ritter;
  const double box_radius = MaxDistance(points, box_center);
  if (box_radius < s.radius) s = {box_center, box_radius};
  // Ritter's growth step can leave a point a rounding error outside; measure, then pad.
  s.radius = MaxDistance(points, s.center);
  s.radius += Padding(MaxAbs(points) + s.radius);
  return s;
}

Sphere FitTriangleSphere(const Vec3& a, const Vec3& b, const Vec3& c) {
  const Vec3 pts[3] = {a, b, c};
  Sphere best{0.5 * (a + b), 0.0};
  best.radius = std::numeric_limits<double>::infinity();
  // The minimal sphere of a triangle is the diameter sphere of an edge when it contains the third
  // vertex, otherwise the circumsphere.
  for (int i = 0; i < 3; ++i) {
    const Vec3 m = 0.5 * (pts[i] + pts[(i + 1) % 3]);
    const double r = MaxDistance(pts, m);
    if (r < best.radius) best = {m, r};
  }
  const Vec3 ab = b - a, ac = c - a;
  const Vec3 n = ab.cross(ac);
  const double n2 = n.squaredNorm();
  if (n2 > 0.0) {
    const Vec3 center = a + (ac.squaredNorm() * n.cross(ab) + ab.squaredNorm() * ac.cross(n)) / (2.0 * n2);
    const double r = MaxDistance(pts, center);
    if (std::isfinite(r) && r < best.radius) best = {center, r};
  }
  best.radius += Padding(MaxAbs(pts) + best.radius);
  return best;
}

Obb FitObb(std::span<const Vec3> triangle_vertices) {
  const std::size_t n = triangle_vertices.size();
  if (n == 0) return {};
  // Area-weighted second moments of the triangle surfaces (the continuous formulation, which a
  // dense region of small triangles cannot skew).
  double total_area = 0.0;
  Vec3 mean = Vec3::Zero();
  Mat3 second = Mat3::Zero();
  for (std::size_t i = 0; i + 2 < n; i += 3) {
    const Vec3& p = triangle_vertices[i];
    const Vec3& q = triangle_vertices[i + 1];
    const Vec3& r = triangle_vertices[i + 2];
    const double area = 0.5 * (q - p).cross(r - p).norm();
    const Vec3 m = (p + q + r) / 3.0;
    total_area += area;
    mean += area * m;
    second += (area / 12.0) * (9.0 * m * m.transpose() + p * p.transpose() + q * q.transpose() + r * r.transpose());
  }
  Mat3 axes = Mat3::Identity();
  if (total_area > 0.0) {
    mean /= total_area;
    const Mat3 cov = second / total_area - mean * mean.transpose();
    Eigen::SelfAdjointEigenSolver<Mat3> eig(cov);
    if (eig.info() == Eigen::Success && eig.eigenvectors().allFinite()) {
      axes = eig.eigenvectors();
      if (axes.determinant() < 0.0) axes.col(2) = -axes.col(2);
    }
  }
  Obb box = BoxAlong(triangle_vertices, axes);
  const Obb aligned = BoxAlong(triangle_vertices, Mat3::Identity());
  if (aligned.Volume() <= box.Volume()) box = aligned;
  box.half_extents.array() += Padding(MaxAbs(triangle_vertices) + box.half_extents.maxCoeff());
  return box;
}

double SphereMotionBound(const RigidTransform& X_AB0, const RigidTransform& X_AB1, const Sphere& s) {
  // |(R1 - R0) p + (t1 - t0)| <= |(R1 - R0) c + t1 - t0| + ||R1 - R0||_2 r. The spectral norm is bounded
  // from the entries of R1 - R0 themselves, by the smaller of the Frobenius norm and
  // sqrt(||.||_1 ||.||_inf); the exact 2 sin(theta / 2) = sqrt(3 - trace(R1 R0^T)) cancels to 0 in
  // floating point for rotations below about 1e-8 rad.
  const Mat3 dR = X_AB1.R - X_AB0.R;
  const Mat3 abs_dR = dR.cwiseAbs();
  const double spin =
      std::min(dR.norm(), std::sqrt(abs_dR.colwise().sum().maxCoeff() * abs_dR.rowwise().sum().maxCoeff()));
  const double d = (dR * s.center + (X_AB1.p - X_AB0.p)).norm() + spin * s.radius;
  // Rounding in the products and norms above.
  return d * (1.0 + 1e-12) + 1e-15 * (s.center.norm() + s.radius + X_AB0.p.norm() + X_AB1.p.norm());
}

SphereMotion::SphereMotion(const RigidTransform& X_AB0, const RigidTransform& X_AB1)
    : dR_(X_AB1.R - X_AB0.R), dp_(X_AB1.p - X_AB0.p), poses_(X_AB0.p.norm() + X_AB1.p.norm()) {
  // As SphereMotionBound: the spectral norm of dR bounded from its entries.
  const Mat3 abs_dR = dR_.cwiseAbs();
  spin_ = std::min(dR_.norm(), std::sqrt(abs_dR.colwise().sum().maxCoeff() * abs_dR.rowwise().sum().maxCoeff()));
}

double AabbDistance(const Aabb& a, const Aabb& b) {
  const Vec3 gap = (a.min - b.max).cwiseMax(b.min - a.max).cwiseMax(0.0);
  return gap.norm();
}

}  // namespace proximity::core
