#pragma once
// A MoveIt-style FCL 0.7 robot collision checker, the independent peer of the robot and planning
// benchmarks and tests, and a dense path check built on it. Only tests and benchmarks include this;
// the product never links FCL.
//
// The checker is built the way MoveIt's FCL collision environment builds it: one BVHModel<OBBRSS> per
// link mesh (built once per robot and shared by every scene), fcl::Box / fcl::Cylinder / fcl::Sphere
// objects for the world primitives in a DynamicAABBTreeCollisionManager, the link objects' transforms
// and AABBs updated per state, the links checked against the world manager (collide(object, callback))
// and then against each other through a second manager over the links, with the scene's allowed pairs
// applied in the callback, stopping at the first contact. Link poses come from the core's forward
// kinematics. It keeps its objects and managers across states and looks the allowed pairs up by index,
// so it is somewhat faster than MoveIt itself, which allocates its link objects and self-collision
// manager per call and looks pairs up by name. Attached objects and padding are not modelled (the
// MotionBenchMaker scenes have neither).

#include <fcl/fcl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numbers>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "peers/fcl_peer.h"
#include "narrowphase/triangle.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/scene.h"
#include "bvh/bvh.h"
#include "scene/scene_impl.h"
#include "bvh/point_cloud.h"

namespace proximity::peers {

/// What an FCL object stands for: a robot link or a world object (indices as in the Scene).
struct FclTag {
  bool robot = false;
  int32_t index = -1;
};

/// The broad-phase collision callback's state: the scene whose allowed pairs apply and whether a
/// contact was found. With `referee`, a contact FCL reports between a mesh and a sphere is kept only
/// when the brute-force distance (SphereApartFromMesh) agrees; `refuted` counts those it overruled.
struct FclCallbackData {
  const core::Scene* scene = nullptr;
  bool done = false;
  bool referee = false;
  int64_t refuted = 0;
};

/// For a pair of a triangle mesh (BVHModel) and a sphere: whether every triangle lies farther from
/// the sphere's centre than its radius (brute force over the triangles, in the mesh's frame, with the
/// closest-point kernel tests/core/narrowphase/triangle_test.cc checks against a projection oracle; no
/// FCL narrow phase and none of the scene's walks), i.e. the surfaces FCL's triangle tests compare do
/// not meet. false for other pairs.
/// FCL 0.7's sphere-triangle test reports some spheres centimetres away as touching (upstream fixed it
/// after 0.7), which the dense check must not count against a path.
inline bool SphereApartFromMesh(const fcl::CollisionObjectd* o1, const fcl::CollisionObjectd* o2) {
  const bool sphere_first = o1->getNodeType() == fcl::GEOM_SPHERE;
  const fcl::CollisionObjectd* sphere = sphere_first ? o1 : o2;
  const fcl::CollisionObjectd* mesh = sphere_first ? o2 : o1;
  if (sphere->getNodeType() != fcl::GEOM_SPHERE || mesh->getObjectType() != fcl::OT_BVH) return false;
  const auto* model = dynamic_cast<const fcl::BVHModel<fcl::OBBRSSd>*>(mesh->collisionGeometry().get());
  if (model == nullptr || model->vertices == nullptr || model->tri_indices == nullptr) return false;
  const double radius = static_cast<const fcl::Sphered*>(sphere->collisionGeometry().get())->radius;
  const core::Vec3 centre = mesh->getTransform().inverse() * sphere->getTranslation();
  for (int t = 0; t < model->num_tris; ++t) {
    const fcl::Triangle& tri = model->tri_indices[t];
    const core::Vec3 q =
        core::ClosestPointOnTriangle(centre, model->vertices[tri[0]], model->vertices[tri[1]], model->vertices[tri[2]]);
    if ((q - centre).norm() <= radius) return false;
  }
  return true;
}

/// Whether the scene checks the pair of FCL objects: never two world objects, never allowed pairs.
inline bool FclPairChecked(const core::Scene& scene, fcl::CollisionObjectd* o1, fcl::CollisionObjectd* o2) {
  const auto* a = static_cast<const FclTag*>(o1->getUserData());
  const auto* b = static_cast<const FclTag*>(o2->getUserData());
  if (a->robot && b->robot) return a->index != b->index && !proximity::core::internal::Impl(scene).AllowedLinkLink(a->index, b->index);
  if (a->robot == b->robot) return false;
  const FclTag* link = a->robot ? a : b;
  const FclTag* object = a->robot ? b : a;
  return !proximity::core::internal::Impl(scene).AllowedLinkObject(link->index, object->index);
}

/// MoveIt's collision callback, reduced to what CLEAR needs: skips allowed pairs, runs FCL's narrow
/// phase, stops at the first contact. `cdata` is an FclCallbackData.
inline bool FclCallback(fcl::CollisionObjectd* o1, fcl::CollisionObjectd* o2, void* cdata) {
  auto* data = static_cast<FclCallbackData*>(cdata);
  if (data->done) return true;
  if (!FclPairChecked(*data->scene, o1, o2)) return false;
  fcl::CollisionRequestd request;
  fcl::CollisionResultd result;
  fcl::collide(o1, o2, request, result);
  if (result.isCollision() && data->referee && SphereApartFromMesh(o1, o2)) {
    ++data->refuted;
    return false;
  }
  data->done = result.isCollision();
  return data->done;
}

/// The broad-phase distance callback's state: the scene and the smallest distance so far (metres).
struct FclDistanceData {
  const core::Scene* scene = nullptr;
  double min = std::numeric_limits<double>::infinity();
};

/// MoveIt's distance callback, reduced likewise: the smallest distance over the checked pairs (0 once a
/// pair touches). The broad phase prunes pairs whose boxes are farther than the best so far.
inline bool FclDistanceCallback(fcl::CollisionObjectd* o1, fcl::CollisionObjectd* o2, void* cdata, double& dist) {
  auto* data = static_cast<FclDistanceData*>(cdata);
  if (!FclPairChecked(*data->scene, o1, o2)) return false;
  fcl::DistanceRequestd request;
  fcl::DistanceResultd result;
  fcl::distance(o1, o2, request, result);
  data->min = std::min(data->min, std::max(0.0, result.min_distance));
  dist = data->min;
  return data->min <= 0.0;
}

/// A link geometry as an FCL shape in the geometry's frame (meshes as BVHModel<OBBRSS>).
inline std::shared_ptr<fcl::CollisionGeometryd> FclLinkGeometry(const core::LinkGeometry& g) {
  switch (g.type) {
    case core::ShapeType::kMesh:
      return FclMesh<fcl::OBBRSSd>(g.mesh->mesh());
    case core::ShapeType::kBox:
      return std::make_shared<fcl::Boxd>(g.box_size);
    case core::ShapeType::kCylinder:
      return std::make_shared<fcl::Cylinderd>(g.radius, g.length);
    case core::ShapeType::kSphere:
      return std::make_shared<fcl::Sphered>(g.radius);
  }
  return nullptr;
}

/// A world part as an FCL geometry and its pose X_WG (a core::Sphere may sit off its frame's origin):
/// meshes as BVHModel<OBBRSS>; null for primitives other than box, cylinder and sphere.
inline std::shared_ptr<fcl::CollisionGeometryd> FclWorldGeometry(const core::ObjectPart& part,
                                                                 fcl::Transform3d* X_WG) {
  *X_WG = FclPose(part.X_WG);
  if (part.geometry.is_mesh()) return FclMesh<fcl::OBBRSSd>(part.geometry.mesh->mesh());
  if (part.geometry.is_cloud()) {
    // As MoveIt keeps sensed points: an octomap of occupied cells (resolution: the balls' diameter),
    // checked by FCL's octree collision.
    const core::PointCloud& cloud = *part.geometry.cloud;
    auto tree = std::make_shared<octomap::OcTree>(std::max(2.0 * cloud.radius(), 1e-3));
    for (int32_t i = 0; i < cloud.num_points(); ++i) {
      const core::Vec3& p = cloud.point(i);
      tree->updateNode(octomap::point3d(static_cast<float>(p.x()), static_cast<float>(p.y()), static_cast<float>(p.z())),
                       true);
    }
    return std::make_shared<fcl::OcTreed>(tree);
  }
  if (const auto* b = std::get_if<core::Box>(&part.geometry.shape)) {
    return std::make_shared<fcl::Boxd>(2.0 * b->half_extents);
  }
  if (const auto* c = std::get_if<core::Cylinder>(&part.geometry.shape)) {
    return std::make_shared<fcl::Cylinderd>(c->radius, 2.0 * c->half_length);
  }
  if (const auto* s = std::get_if<core::Sphere>(&part.geometry.shape)) {
    X_WG->translation() += X_WG->linear() * s->center;
    return std::make_shared<fcl::Sphered>(s->radius);
  }
  return nullptr;
}

/// The robot side of the peer, built once per robot: a collision object per link geometry (meshes as
/// BVHModel<OBBRSS>) and a broad-phase manager over them for self collision. Not thread-safe (Pose
/// moves shared objects); use one per thread. `robot` must outlive it.
class FclRobot {
 public:
  explicit FclRobot(const core::RobotModel& robot) : robot_(robot) {
    for (int32_t l = 0; l < robot.num_links(); ++l) {
      for (const core::LinkGeometry& g : robot.link(l).geometries) {
        Part part;
        part.link = l;
        part.X_LG = g.X_LG;
        part.tag = std::make_unique<FclTag>(FclTag{true, l});
        part.object = std::make_unique<fcl::CollisionObjectd>(FclLinkGeometry(g));
        part.object->setUserData(part.tag.get());
        parts_.push_back(std::move(part));
      }
    }
    std::vector<fcl::CollisionObjectd*> objects;
    for (Part& p : parts_) objects.push_back(p.object.get());
    self_manager_.registerObjects(objects);
    self_manager_.setup();
  }

  const core::RobotModel& robot() const { return robot_; }
  /// Link geometries (FCL objects) on the robot side.
  size_t num_parts() const { return parts_.size(); }

  /// Poses the link objects for the link poses X_WL (one per link) and refreshes their AABBs.
  void Pose(const std::vector<core::RigidTransform>& X_WL) {
    for (Part& p : parts_) {
      p.object->setTransform(FclPose(X_WL[p.link] * p.X_LG));
      p.object->computeAABB();
    }
  }

  /// CLEAR against `world` for the pose last given to Pose(): links against the world manager, then
  /// links against links; exact (FCL's narrow phase), first contact.
  /// With `refuted` (the dense check's referee): mesh-sphere contacts the brute-force distance
  /// overrules are not contacts, and are counted in *refuted.
  bool Free(const core::Scene& scene, const fcl::DynamicAABBTreeCollisionManagerd& world, int64_t* refuted = nullptr) {
    FclCallbackData data;
    data.scene = &scene;
    data.referee = refuted != nullptr;
    const auto finish = [&](bool free) {
      if (refuted != nullptr) *refuted += data.refuted;
      return free;
    };
    for (Part& p : parts_) {
      world.collide(p.object.get(), &data, &FclCallback);
      if (data.done) return finish(false);
    }
    self_manager_.update();
    self_manager_.collide(&data, &FclCallback);
    return finish(!data.done);
  }

  /// distance(q) (metres) for the pose last given to Pose(): links against the world manager, then
  /// links against links, as MoveIt's FCL distance does.
  double Distance(const core::Scene& scene, const fcl::DynamicAABBTreeCollisionManagerd& world) {
    FclDistanceData data;
    data.scene = &scene;
    for (Part& p : parts_) {
      world.distance(p.object.get(), &data, &FclDistanceCallback);
      if (data.min <= 0.0) return 0.0;
    }
    self_manager_.update();
    self_manager_.distance(&data, &FclDistanceCallback);
    return data.min;
  }

  /// Every pair FCL finds in contact for the current pose, without a broad phase, named (for
  /// disagreement reports).
  std::vector<std::string> AllContacts(const core::Scene& scene,
                                       const std::vector<fcl::CollisionObjectd*>& world) const {
    std::vector<std::string> out;
    auto hit = [](fcl::CollisionObjectd* a, fcl::CollisionObjectd* b) {
      fcl::CollisionRequestd request;
      fcl::CollisionResultd result;
      fcl::collide(a, b, request, result);
      return result.isCollision();
    };
    for (size_t i = 0; i < parts_.size(); ++i) {
      const std::string& link = robot_.link(parts_[i].link).name;
      for (fcl::CollisionObjectd* w : world) {
        const int32_t o = static_cast<const FclTag*>(w->getUserData())->index;
        if (hit(parts_[i].object.get(), w)) {
          out.push_back(link + " x '" + scene.objects()[o].id + "'" +
                        (proximity::core::internal::Impl(scene).AllowedLinkObject(parts_[i].link, o) ? " (allowed)" : ""));
        }
      }
      for (size_t j = i + 1; j < parts_.size(); ++j) {
        if (parts_[i].link == parts_[j].link) continue;
        if (hit(parts_[i].object.get(), parts_[j].object.get())) {
          out.push_back(link + " x " + robot_.link(parts_[j].link).name +
                        (proximity::core::internal::Impl(scene).AllowedLinkLink(parts_[i].link, parts_[j].link) ? " (allowed)" : ""));
        }
      }
    }
    return out;
  }

 private:
  struct Part {
    int32_t link = -1;
    core::RigidTransform X_LG;
    std::unique_ptr<FclTag> tag;
    std::unique_ptr<fcl::CollisionObjectd> object;
  };
  const core::RobotModel& robot_;
  std::vector<Part> parts_;
  fcl::DynamicAABBTreeCollisionManagerd self_manager_;
};

/// The world side of the peer for one scene: an FCL object per primitive in a broad-phase manager.
/// Point clouds become an octree (MoveIt's way), or with `cloud_spheres` one fcl::Sphere per point of
/// its ball's radius: the cloud's exact semantics, for the dense check of returned paths.
struct FclWorld {
  std::vector<std::unique_ptr<FclTag>> tags;
  std::vector<std::unique_ptr<fcl::CollisionObjectd>> objects;
  std::unique_ptr<fcl::DynamicAABBTreeCollisionManagerd> manager;

  explicit FclWorld(const core::Scene& scene, bool cloud_spheres = false)
      : manager(std::make_unique<fcl::DynamicAABBTreeCollisionManagerd>()) {
    std::vector<fcl::CollisionObjectd*> raw;
    for (int32_t o = 0; o < static_cast<int32_t>(scene.objects().size()); ++o) {
      for (const core::ObjectPart& part : scene.objects()[o].parts) {
        if (cloud_spheres && part.geometry.is_cloud()) {
          const core::PointCloud& cloud = *part.geometry.cloud;
          for (int32_t i = 0; i < cloud.num_points(); ++i) {
            fcl::Transform3d X_WP = fcl::Transform3d::Identity();
            X_WP.translation() = part.X_WG * cloud.point(i);
            tags.push_back(std::make_unique<FclTag>(FclTag{false, o}));
            objects.push_back(std::make_unique<fcl::CollisionObjectd>(
                std::make_shared<fcl::Sphered>(cloud.point_radius(i)), X_WP));
            objects.back()->setUserData(tags.back().get());
            objects.back()->computeAABB();
            raw.push_back(objects.back().get());
          }
          continue;
        }
        fcl::Transform3d X_WG;
        auto geometry = FclWorldGeometry(part, &X_WG);
        if (geometry == nullptr) continue;  // Not produced by the MBM reader.
        tags.push_back(std::make_unique<FclTag>(FclTag{false, o}));
        objects.push_back(std::make_unique<fcl::CollisionObjectd>(geometry, X_WG));
        objects.back()->setUserData(tags.back().get());
        objects.back()->computeAABB();
        raw.push_back(objects.back().get());
      }
    }
    manager->registerObjects(raw);
    manager->setup();
  }
  /// The world objects, for checks without the broad phase.
  std::vector<fcl::CollisionObjectd*> Raw() const {
    std::vector<fcl::CollisionObjectd*> raw;
    for (const auto& o : objects) raw.push_back(o.get());
    return raw;
  }
};

/// The answer of DensePathCheck.
struct DensePathResult {
  /// Every waypoint within the joint limits and every dense state collision-free (world and self).
  bool valid = false;
  /// The first segment (waypoint i -> i + 1) holding a colliding state, and where on it (t in [0, 1]),
  /// or -1; a colliding first waypoint is segment 0 at t = 0 (a one-waypoint path: segment 0).
  int32_t segment = -1;
  double t = 0.0;
  /// The colliding configuration found (empty when none).
  std::vector<double> q_collide;
  /// The first waypoint outside the joint limits, or -1.
  int32_t outside_limits = -1;
  /// States checked for collision.
  int64_t states = 0;
  /// States where FCL reported a mesh-sphere contact that the brute-force distance overruled
  /// (SphereApartFromMesh), the state then being decided by its other pairs.
  int64_t refuted = 0;
  /// Non-empty when the path is malformed (empty, a waypoint of the wrong size or with NaN); then
  /// valid is false and nothing was checked.
  std::string error;
};

/// Checks a joint-space path independently of the core's collision code: each straight segment
/// a -> b is walked in n = ceil(max_j |b_j - a_j| / max_step) equal steps (states at most `max_step`
/// apart in every joint, both ends included), link poses come from the core's forward kinematics and
/// each state is checked exactly by the FCL checker (world and self, the scene's allowed pairs), with
/// mesh-sphere contacts refereed by brute force (SphereApartFromMesh). Stops at the first colliding state. Joints without finite limits (continuous) move the shorter way
/// round when `wrap_continuous`. Each waypoint must also lie within the joint limits (no tolerance).
inline DensePathResult DensePathCheck(FclRobot& robot, const FclWorld& world, const core::Scene& scene,
                                      const std::vector<std::vector<double>>& path, double max_step = 1e-3,
                                      bool wrap_continuous = true) {
  DensePathResult out;
  const core::RobotModel& model = robot.robot();
  const size_t dof = static_cast<size_t>(model.num_positions());
  if (path.empty()) {
    out.error = "empty path";
    return out;
  }
  if (!(max_step > 0.0)) {
    out.error = "max_step must be positive";
    return out;
  }
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i].size() != dof) {
      out.error = "waypoint " + std::to_string(i) + " has " + std::to_string(path[i].size()) + " values, the robot " +
                  model.name() + " has " + std::to_string(dof) + " joints";
      return out;
    }
    for (size_t j = 0; j < dof; ++j) {
      if (!std::isfinite(path[i][j])) {
        out.error = "waypoint " + std::to_string(i) + " joint " + model.active_joint_names()[j] + " is not finite";
        return out;
      }
    }
    if (out.outside_limits < 0 && !model.WithinLimits(path[i])) out.outside_limits = static_cast<int32_t>(i);
  }
  const auto& lower = model.lower_limits();
  std::vector<core::RigidTransform> X_WL(static_cast<size_t>(model.num_links()));
  std::vector<double> q(dof), d(dof);
  auto free_at = [&](std::span<const double> state) {
    (void)model.ForwardKinematics(state, std::span<core::RigidTransform>(X_WL), scene.X_WB());
    robot.Pose(X_WL);
    ++out.states;
    int64_t refuted = 0;
    const bool free = robot.Free(scene, *world.manager, &refuted);
    out.refuted += refuted > 0;
    return free;
  };
  if (!free_at(path[0])) {
    out.segment = 0;
    out.t = 0.0;
    out.q_collide = path[0];
    return out;
  }
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const std::vector<double>& a = path[i];
    const std::vector<double>& b = path[i + 1];
    double span = 0.0;
    for (size_t j = 0; j < dof; ++j) {
      d[j] = b[j] - a[j];
      if (wrap_continuous && !std::isfinite(lower[j])) {
        d[j] = std::remainder(d[j], 2.0 * std::numbers::pi);
      }
      span = std::max(span, std::abs(d[j]));
    }
    auto end = [&](size_t j) { return d[j] == b[j] - a[j] ? b[j] : a[j] + d[j]; };
    const int64_t steps = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(span / max_step)));
    for (int64_t s = 1; s <= steps; ++s) {
      const double t = static_cast<double>(s) / static_cast<double>(steps);
      for (size_t j = 0; j < dof; ++j) q[j] = s == steps ? end(j) : a[j] + t * d[j];
      if (!free_at(q)) {
        out.segment = static_cast<int32_t>(i);
        out.t = t;
        out.q_collide = q;
        return out;
      }
    }
  }
  out.valid = out.outside_limits < 0;
  return out;
}

}  // namespace proximity::peers
