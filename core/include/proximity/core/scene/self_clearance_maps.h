#pragma once
// What scenes learn about a robot's own geometry, shared by the scenes of one robot model.
#include <cstdint>
#include <memory>

#include "proximity/core/robot/robot_model.h"

namespace proximity::core {

/// The self-clearance maps of one robot model. A pair of link geometries whose relative pose depends on
/// at most two revolute joints (the links of a wrist) gets a map: certified lower bounds on their
/// distance over a grid of those joints, so that CLEAR settles most such pairs without a hierarchy walk.
/// The maps are what queries learn, so they live here rather than in the robot model, which stays
/// immutable once built. The object also keeps the signed distance maps of the robot's part meshes that
/// scenes holding point clouds test points against (bvh/sdf.h): one per mesh, made by the first such
/// scene and kept while the mesh lives.
///
/// Owner: whoever builds scenes. Give one object to every SceneDescription built on the same robot model
/// (SceneDescription::self_clearance_maps) and each map is made and filled once for all of those scenes;
/// Scene::Build makes a private one when none is given, and Scene::Update hands a scene's own to the new
/// version. Scenes hold it by shared_ptr: it lives as long as the last of them or the caller.
///
/// Thread safety: scenes on any number of threads make, fill (SelfClearanceFill) and read the maps of
/// one object concurrently: making a map takes a mutex, cells are written and read atomically, and a
/// filled cell never changes. Every member function is safe to call concurrently with them.
///
/// Memory: at most one map per self pair of the robot, made whole when a scene first pairs it (bytes()
/// is exact from then on, and grows with the robot, never with queries); SceneDescription::limits caps the
/// self pairs a build may make. At most one distance map per part mesh (up to about 2 million nodes).
class SelfClearanceMaps {
 public:
  /// Maps for the scenes built on `robot` (not null: a null robot is an invalid description anyway).
  static std::shared_ptr<SelfClearanceMaps> For(std::shared_ptr<const RobotModel> robot);
  SelfClearanceMaps(const SelfClearanceMaps&) = delete;
  SelfClearanceMaps& operator=(const SelfClearanceMaps&) = delete;
  /// The robot model these maps are for; Scene::Build refuses them for any other.
  const std::shared_ptr<const RobotModel>& robot() const;
  /// Maps made so far (pairs no map suits are not counted).
  int64_t num_maps() const;
  /// Bytes the maps hold (cells and witnesses, and the part meshes' distance maps).
  int64_t bytes() const;

 protected:
  // Made by For only: each is an internal::SelfClearanceMapsImpl (src/scene/self_clearance.h).
  SelfClearanceMaps() = default;
  ~SelfClearanceMaps() = default;
};

}  // namespace proximity::core
