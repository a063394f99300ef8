#pragma once
// Balls proven inside a closed mesh's solid, found once at load: what lets CLEAR prove that two closed
// meshes, convex or not, collide without walking their triangles (state_check.cc).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "bvh/bvh.h"
#include "narrowphase/convex.h"

namespace proximity::core {

// A ball inside one connected part of a closed mesh (frame G): the part winds around the centre and no
// triangle of the part comes closer to it than the radius, so the winding number of the part is the
// same non-zero integer all over the ball.
struct InteriorBall {
  Vec3 center = Vec3::Zero();
  double radius = 0.0;
  int32_t part = 0;  // Index into SolidInterior::part_hulls.
};

// The most balls a mesh keeps: more and smaller ones cost every pair test that reaches them and rarely
// prove what the larger ones do not.
inline constexpr size_t kMaxInteriorBalls = 32;

// Balls [begin, end) of a SolidInterior and a sphere holding them all: a pair test looks at the
// groups' spheres first and at their balls only where those meet.
struct InteriorBallGroup {
  Vec3 center = Vec3::Zero();
  double radius = 0.0;
  int32_t begin = 0;
  int32_t end = 0;
};
inline constexpr size_t kInteriorBallGroups = 4;

// The balls of a closed mesh (at most kMaxInteriorBalls, in up to kInteriorBallGroups groups of
// neighbours) and, for each part a ball lies in, that part's convex hull (whose outside the part's
// winding number is 0; every hull vertex is a vertex of the part).
struct SolidInterior {
  std::vector<InteriorBall> balls;
  std::vector<InteriorBallGroup> groups;
  std::vector<std::shared_ptr<const ConvexPolytope>> part_hulls;
};

// The interior of `model`'s mesh, or null when it has none to offer: a mesh that is not closed and
// consistently oriented (every edge run once each way), a flat one, one of so few triangles that its
// walk is as cheap as the balls' test, or one whose checks would cost more than a capped amount of
// work. `hull` is the hull of the whole mesh (used when it is one part).
// Every ball is verified exactly (winding number and distance over its part's triangles); a signed
// distance map only proposes them.
std::shared_ptr<const SolidInterior> FindSolidInterior(const MeshModel& model,
                                                       const std::shared_ptr<const ConvexPolytope>& hull);

}  // namespace proximity::core
