#pragma once
/// @file
/// A scene: a robot and a world of objects, built once into an immutable object that answers CLEAR(q)
/// (is configuration q free of world and self collision?) from any number of threads.
///
/// Geometry semantics: meshes are surfaces and primitives are solids, as in mesh_query.h and
/// shape_query.h. A link mesh touching or inside a world box collides; a box wholly inside a link mesh
/// that touches none of its triangles does not.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "proximity/core/bounding_volume.h"
#include "proximity/core/bvh.h"
#include "proximity/core/result.h"
#include "proximity/core/robot_model.h"
#include "proximity/core/shape_query.h"
#include "proximity/core/types.h"

namespace proximity::core {

/// A piece of geometry: a built triangle mesh (surface) or a convex primitive (solid).
struct Geometry {
  std::shared_ptr<const MeshModel> mesh;  ///< Set for a mesh; null for a primitive.
  Shape shape;                            ///< The primitive when mesh is null.

  bool is_mesh() const { return mesh != nullptr; }
};

/// One part of a world object, at its pose in the world.
struct ObjectPart {
  Geometry geometry;
  RigidTransform X_WG;
};

/// A world object: an id (unique in the scene) and its parts.
struct WorldObject {
  std::string id;
  std::vector<ObjectPart> parts;
};

/// What a scene is built from.
struct SceneDescription {
  std::shared_ptr<const RobotModel> robot;
  RigidTransform X_WB;  ///< The robot's root link in the world.
  std::vector<WorldObject> objects;
  /// Pairs that are never checked, by name: two link names, or a link name and an object id, in either
  /// order. Added to the robot's own allowed-collision set (SRDF, adjacent links).
  std::vector<std::pair<std::string, std::string>> allowed_pairs;
};

/// The first contact CLEAR found.
struct StateContact {
  bool self = false;          ///< Link against link (true) or link against a world object (false).
  int32_t link = -1;          ///< LinkIndex of the robot link.
  int32_t other_link = -1;    ///< self: the other LinkIndex.
  int32_t object = -1;        ///< world: index into the scene's objects.
  std::string Describe(const class Scene& scene) const;  ///< "panda_hand x object 'Cube3'".
};

/// The answer to CLEAR(q).
struct StateResult {
  bool free = false;
  /// q lies within the joint limits (continuous joints have none). CLEAR checks geometry only; a
  /// configuration outside the limits is flagged here, never clamped.
  bool within_limits = true;
  StateContact contact;        ///< Valid when !free.
  int64_t pairs_tested = 0;    ///< Geometry pairs that reached an exact test.
  QueryStats stats;
};

/// How CheckMotion decides a straight joint-space segment.
struct MotionRequest {
  enum class Mode {
    /// Certified (Schwarzer, Saha, Latombe): never answers free when any configuration on the segment
    /// collides; cost grows with closeness to obstacles, not with length.
    kCertified,
    /// Sampled like OMPL's DiscreteMotionValidator: states at most `resolution` apart (joint-space
    /// Euclidean norm, radians or metres), in order from q0; misses what lies between samples.
    kDiscrete,
  };
  Mode mode = Mode::kCertified;
  double resolution = 0.01;
};

/// The answer to LINK(q0, q1).
struct MotionResult {
  bool free = false;
  /// Not free: [0, t_free] is known free (certified, or sampled in discrete mode) and the state at
  /// t_collide (in [0, 1] along q0 -> q1) collides, with `contact` there.
  double t_free = 0.0;
  double t_collide = -1.0;
  StateContact contact;
  /// Certified mode only: the walk reached its smallest segment without deciding (the robot grazes an
  /// obstacle closer than rounding can separate); the answer is then "not free", never a guess of free.
  bool undecided = false;
  int64_t states = 0;             ///< Configurations whose link poses were computed.
  int64_t distance_queries = 0;   ///< Exact distance lower bounds computed.
  QueryStats stats;
};

/// Caller-owned scratch for scene queries (link poses, geometry bounds); one per thread.
struct SceneCache {
  std::vector<RigidTransform> X_WL;  ///< Per link.
  std::vector<RigidTransform> X_WG;  ///< Per robot geometry.
  std::vector<Aabb> part_bounds;     ///< Per robot geometry, in the world.
};

/// A robot in a world, immutable once built.
class Scene {
 public:
  /// Validates the description (robot present, unique object ids, valid shapes and finite poses,
  /// allowed pairs naming existing links and objects) and builds the scene. Errors name the problem.
  [[nodiscard]] static Result<std::shared_ptr<const Scene>> Build(SceneDescription description);

  const RobotModel& robot() const { return *robot_; }
  const std::shared_ptr<const RobotModel>& robot_ptr() const { return robot_; }
  const std::vector<WorldObject>& objects() const { return objects_; }
  const RigidTransform& X_WB() const { return X_WB_; }

  /// CLEAR(q): whether configuration q (one value per active joint, in active order) is free of world
  /// and self collision, with the first contact found otherwise. Errors for a wrong size or NaN.
  [[nodiscard]] Status CheckState(std::span<const double> q, SceneCache* cache, StateResult* result) const;

  /// LINK(q0, q1): whether the straight joint-space segment q0 -> q1 is free, certified or sampled as
  /// `request` says. Errors for wrong sizes, NaN or a bad resolution.
  [[nodiscard]] Status CheckMotion(std::span<const double> q0, std::span<const double> q1,
                                   const MotionRequest& request, SceneCache* cache, MotionResult* result) const;

  /// Whether the pair (link, object) is excluded from checking.
  bool AllowedLinkObject(int32_t link, int32_t object) const {
    return link_object_allowed_[static_cast<size_t>(link) * objects_.size() + static_cast<size_t>(object)] != 0;
  }
  /// Whether the link pair is excluded from checking (the robot's set plus the scene's pairs).
  bool AllowedLinkLink(int32_t a, int32_t b) const {
    return link_link_allowed_[static_cast<size_t>(a) * robot_->links().size() + static_cast<size_t>(b)] != 0;
  }

 private:
  Scene() = default;

  // A robot geometry: link, the geometry and its pose in the link frame, and its bound in its frame.
  struct RobotPart {
    int32_t link;
    Geometry geometry;
    RigidTransform X_LG;
    Obb local_box;  ///< Bounding box in the geometry frame G.
  };
  // A world part with its world bounding box, for the broad phase.
  struct WorldPart {
    int32_t object;
    int32_t part;
    Aabb bounds;
  };
  // Nodes of a binary AABB tree over world parts: leaves hold a range of world_parts_.
  struct BroadNode {
    Aabb bounds;
    int32_t first = 0;  ///< Leaf: first world part. Internal: left child (right = first + 1).
    int32_t count = 0;  ///< Leaf: number of parts; internal: 0.
  };

  void BuildBroadPhase();
  Status CheckMotionDiscrete(std::span<const double> q0, std::span<const double> q1, double resolution,
                             SceneCache* cache, MotionResult* result) const;
  Status CheckMotionCertified(std::span<const double> q0, std::span<const double> q1, SceneCache* cache,
                              MotionResult* result) const;
  bool CollideWorld(const RobotPart& rp, const RigidTransform& X_WG, const Aabb& bounds, StateResult* out) const;

  std::shared_ptr<const RobotModel> robot_;
  RigidTransform X_WB_;
  std::vector<WorldObject> objects_;
  std::vector<RobotPart> robot_parts_;
  std::vector<std::pair<int32_t, int32_t>> self_pairs_;  ///< Robot part pairs to test for self collision.
  std::vector<WorldPart> world_parts_;
  std::vector<BroadNode> broad_;
  std::vector<uint8_t> link_object_allowed_;
  std::vector<uint8_t> link_link_allowed_;
};

/// World bounds of a box (OBB in frame G posed at X_WG).
Aabb WorldBounds(const Obb& box_G, const RigidTransform& X_WG);

/// Certified lower bound on the distance between two posed geometries (0 when they touch); the query
/// may stop once it proves the distance is at least `enough`.
[[nodiscard]] Status GeometryDistanceLowerBound(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                                const RigidTransform& X_WB, double enough, double* lower_bound,
                                                QueryStats* stats);

/// Collision between two posed geometries, dispatching to the mesh and shape queries.
[[nodiscard]] Status CollideGeometry(const Geometry& a, const RigidTransform& X_WA, const Geometry& b,
                                     const RigidTransform& X_WB, bool* colliding, QueryStats* stats);

}  // namespace proximity::core
