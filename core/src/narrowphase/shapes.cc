// The primitives' names and validation (shapes.h).
#include "proximity/core/narrowphase/shapes.h"

#include <cmath>
#include <string>

#include "narrowphase/convex.h"

namespace proximity::core {
namespace {

std::string VecString(const Vec3& v) {
  std::string out = "(";
  out.append(std::to_string(v.x())).append(", ").append(std::to_string(v.y())).append(", ");
  return out.append(std::to_string(v.z())).append(")");
}

Status CheckLength(double x, const char* what, const char* type, const char* field) {
  if (std::isfinite(x) && x >= 0.0) return {};
  return InvalidArgument(std::string(what) + " (" + type + ") " + field + " must be finite and >= 0, got " +
                         std::to_string(x));
}

}  // namespace

const char* ShapeName(const Shape& shape) {
  struct Names {
    const char* operator()(const Box&) const { return "box"; }
    const char* operator()(const Sphere&) const { return "sphere"; }
    const char* operator()(const Cylinder&) const { return "cylinder"; }
    const char* operator()(const Capsule&) const { return "capsule"; }
    const char* operator()(const Cone&) const { return "cone"; }
    const char* operator()(const std::shared_ptr<const ConvexPolytope>&) const { return "polytope"; }
  };
  return std::visit(Names{}, shape);
}

Status ValidateShape(const Shape& shape, const char* what) {
  const char* type = ShapeName(shape);
  if (const auto* b = std::get_if<Box>(&shape)) {
    for (int i = 0; i < 3; ++i) {
      static const char* kFields[3] = {"half_extents.x", "half_extents.y", "half_extents.z"};
      if (Status s = CheckLength(b->half_extents[i], what, type, kFields[i]); !s.ok()) return s;
    }
  } else if (const auto* s = std::get_if<Sphere>(&shape)) {
    if (!s->center.allFinite()) {
      return InvalidArgument(std::string(what) + " (sphere) center must be finite, got " + VecString(s->center));
    }
    return CheckLength(s->radius, what, type, "radius");
  } else if (const auto* c = std::get_if<Cylinder>(&shape)) {
    if (Status st = CheckLength(c->radius, what, type, "radius"); !st.ok()) return st;
    return CheckLength(c->half_length, what, type, "half_length");
  } else if (const auto* cap = std::get_if<Capsule>(&shape)) {
    if (Status st = CheckLength(cap->radius, what, type, "radius"); !st.ok()) return st;
    return CheckLength(cap->half_length, what, type, "half_length");
  } else if (const auto* cone = std::get_if<Cone>(&shape)) {
    if (Status st = CheckLength(cone->radius, what, type, "radius"); !st.ok()) return st;
    return CheckLength(cone->half_height, what, type, "half_height");
  } else if (const auto* p = std::get_if<std::shared_ptr<const ConvexPolytope>>(&shape)) {
    if (*p == nullptr) return InvalidArgument(std::string(what) + " (polytope) is null");
  }
  return {};
}

}  // namespace proximity::core
