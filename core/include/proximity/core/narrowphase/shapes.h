#pragma once
/// @file
/// The convex solids a scene holds as primitives: box, sphere, capsule, cylinder, cone, each in its own
/// frame S, and a shared convex polytope (the convex hull of points, built by BuildConvexPolytope in
/// scene/geometry.h). Units: metres.

#include <memory>
#include <variant>

#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"

namespace proximity::core {

/// A ball {x : |x - center| <= radius}; a zero radius is a point. Also the bounding sphere of a model's
/// hierarchy nodes (frame M).
struct Sphere {
  Vec3 center = Vec3::Zero();  ///< p_SC (p_MC for a bounding sphere).
  double radius = 0.0;
};

/// Box {x : |x_i| <= half_extents_i} centred at the origin of its frame; zero extents give a rectangle,
/// segment or point.
struct Box {
  Vec3 half_extents = Vec3::Zero();
};

/// The points within `radius` of the segment from (0, 0, -half_length) to (0, 0, +half_length).
/// A zero half length is a sphere, a zero radius a segment.
struct Capsule {
  double radius = 0.0;
  double half_length = 0.0;
};

/// Solid cylinder of `radius` along z from z = -half_length to z = +half_length.
struct Cylinder {
  double radius = 0.0;
  double half_length = 0.0;
};

/// Solid cone along z: apex at (0, 0, +half_height), base disk of `radius` in the plane
/// z = -half_height. The frame origin is the middle of the axis (the bounding box centre, not the
/// centroid, which is at z = -half_height / 2).
struct Cone {
  double radius = 0.0;
  double half_height = 0.0;
};

/// The convex hull of a point set, built once (opaque: BuildConvexPolytope, ConvexPolytopeMesh).
class ConvexPolytope;

/// A convex solid in its own frame S, as scenes hold them: box, sphere, cylinder, capsule, cone, or a
/// shared convex polytope (never null once validated).
using Shape = std::variant<Box, Sphere, Cylinder, Capsule, Cone, std::shared_ptr<const ConvexPolytope>>;

/// A lower-case name of the shape's type ("box", "sphere", "cylinder", "capsule", "cone", "polytope").
const char* ShapeName(const Shape& shape);

/// Checks that every dimension is finite and >= 0 (and a sphere's centre finite, a polytope non-null);
/// the error names `what`, the shape type and the field.
[[nodiscard]] Status ValidateShape(const Shape& shape, const char* what = "shape");

}  // namespace proximity::core
