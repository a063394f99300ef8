#pragma once
/// @file
/// The built-in scene proximityd loads at start (scene id alias "default"): the KUKA KR5 sixx R650
/// from Debian's dart-doc in a small workcell of primitives (a table, a shelf, a post). It is sized so
/// that a real fraction of random states within the joint limits, and of straight motions between
/// them, collide, while the robot's zero (home) state is free.
///
/// The workcell is given once, as plain data (DefaultScene()); DefaultSceneDescription() builds the
/// core description from it and the server turns the same data into a CreateSceneRequest, so the
/// default scene's id is the content hash like any other scene's.

#include <map>
#include <string>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/scene/scene.h"
#include "proximity/core/base/types.h"

namespace proximity::scenes {

using Quaternion = Eigen::Quaterniond;

// Poses are made with core::PoseFromQuaternion, as the server converts wire poses, so the default scene
// built in process and through a CreateSceneRequest are bit-identical.
using core::PoseFromQuaternion;

/// A world object of the default workcell: one box or one cylinder, centred on its frame.
struct DefaultObject {
  enum class Kind { kBox, kCylinder };
  std::string id;
  Kind kind = Kind::kBox;
  core::Vec3 box_size = core::Vec3::Zero();  ///< kBox: full edge lengths (m).
  double radius = 0.0;                       ///< kCylinder: radius (m).
  double length = 0.0;                       ///< kCylinder: full length along z (m).
  core::Vec3 p_WO = core::Vec3::Zero();      ///< The object frame's origin in the world (m).
  Quaternion q_WO = Quaternion::Identity();  ///< Its orientation (unit).
};

/// The default scene as data: the robot's URDF file, its base pose and the workcell objects.
struct DefaultSceneSpec {
  std::string urdf_path;      ///< Absolute path; meshes resolve relative to it.
  std::string srdf_path;      ///< Empty: no SRDF.
  std::map<std::string, std::string> package_dirs;  ///< package://NAME/ resolves under package_dirs[NAME].
  core::Vec3 p_WB = core::Vec3::Zero();  ///< The URDF's root link in the world (m).
  Quaternion q_WB = Quaternion::Identity();
  std::vector<DefaultObject> objects;
};

/// The KR5 URDF shipped by Debian's dart-doc, as found at build time.
std::string DefaultRobotUrdfPath();

/// Whether `urdf_path` names the built-in robot's URDF (the same file).
bool IsBuiltInRobot(const std::string& urdf_path);

/// The default workcell around the robot whose URDF is `urdf_path`. The built-in robot is placed by its
/// own data (undoing the y-up mount of its dart-doc URDF); any other robot's root frame is the
/// workcell's frame, as its URDF says.
DefaultSceneSpec DefaultScene(const std::string& urdf_path = DefaultRobotUrdfPath());

/// Loads the robot (no ROS package crawl; mesh paths relative to the URDF; its visual geometry as
/// collision geometry with `collision_from_visual`) and returns the default scene's description, ready
/// for core::Scene::Build. Errors name the missing or broken file.
[[nodiscard]] core::Result<core::SceneDescription> DefaultSceneDescription(
    const std::string& urdf_path = DefaultRobotUrdfPath(), bool collision_from_visual = false);

}  // namespace proximity::scenes
