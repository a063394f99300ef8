// The installed primitives (shapes.h): every dimension of every shape is validated with an error that
// names the caller's `what`, the shape and the field; zero sizes (points, segments, flat boxes) are valid.
#include "proximity/core/narrowphase/shapes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "narrowphase/convex.h"

namespace proximity::core {
namespace {

struct Field {
  std::string shape;  // the name ShapeName gives
  std::string field;  // the field an error names
  std::function<Shape(double)> make;  // the shape with that field set to the value, the others valid
};

std::vector<Field> Fields() {
  return {
      {"box", "half_extents.x", [](double v) { return Shape{Box{Vec3(v, 0.1, 0.1)}}; }},
      {"box", "half_extents.y", [](double v) { return Shape{Box{Vec3(0.1, v, 0.1)}}; }},
      {"box", "half_extents.z", [](double v) { return Shape{Box{Vec3(0.1, 0.1, v)}}; }},
      {"sphere", "radius", [](double v) { return Shape{Sphere{Vec3(1.0, 2.0, 3.0), v}}; }},
      {"cylinder", "radius", [](double v) { return Shape{Cylinder{v, 0.2}}; }},
      {"cylinder", "half_length", [](double v) { return Shape{Cylinder{0.1, v}}; }},
      {"capsule", "radius", [](double v) { return Shape{Capsule{v, 0.2}}; }},
      {"capsule", "half_length", [](double v) { return Shape{Capsule{0.1, v}}; }},
      {"cone", "radius", [](double v) { return Shape{Cone{v, 0.2}}; }},
      {"cone", "half_height", [](double v) { return Shape{Cone{0.1, v}}; }},
  };
}

TEST(Shapes, EveryDimensionIsCheckedAndNamed) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const Field& f : Fields()) {
    SCOPED_TRACE(f.shape + "." + f.field);
    EXPECT_STREQ(ShapeName(f.make(0.5)), f.shape.c_str());
    EXPECT_TRUE(ValidateShape(f.make(0.5)).ok());
    EXPECT_TRUE(ValidateShape(f.make(0.0)).ok()) << "a zero size is a flat or degenerate shape, not an error";
    for (const double bad : {-1e-12, -1.0, inf, -inf, std::nan("")}) {
      const Status s = ValidateShape(f.make(bad), "obstacle 7");
      ASSERT_FALSE(s.ok()) << bad;
      EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
      for (const std::string& word : {std::string("obstacle 7"), f.shape, f.field}) {
        EXPECT_NE(s.error().message.find(word), std::string::npos) << s.error().message << " lacks " << word;
      }
    }
  }
}

TEST(Shapes, SphereCentreAndPolytope) {
  const Status centre = ValidateShape(Sphere{Vec3(0.0, std::nan(""), 0.0), 0.1}, "ball");
  ASSERT_FALSE(centre.ok());
  EXPECT_NE(centre.error().message.find("center"), std::string::npos) << centre.error().message;
  EXPECT_NE(centre.error().message.find("ball"), std::string::npos) << centre.error().message;

  const Status null = ValidateShape(std::shared_ptr<const ConvexPolytope>(), "hull");
  ASSERT_FALSE(null.ok());
  EXPECT_NE(null.error().message.find("polytope"), std::string::npos) << null.error().message;
  const std::vector<Vec3> corners = {Vec3(0, 0, 0), Vec3(1, 0, 0), Vec3(0, 1, 0), Vec3(0, 0, 1)};
  auto tetra = ConvexPolytope::Build(corners);
  ASSERT_TRUE(tetra.ok()) << tetra.error().message;
  const Shape polytope = tetra.value();
  EXPECT_STREQ(ShapeName(polytope), "polytope");
  EXPECT_TRUE(ValidateShape(polytope).ok());
}

}  // namespace
}  // namespace proximity::core
