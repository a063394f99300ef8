#include "proximity/default_scene/default_scene.h"

#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include "proximity/core/robot/robot_model.h"
#include "proximity/core/narrowphase/shapes.h"

#ifndef PROX_DEFAULT_ROBOT_URDF
#define PROX_DEFAULT_ROBOT_URDF "/usr/share/doc/dart/data/urdf/KR5/KR5 sixx R650.urdf"
#endif

namespace proximity::scenes {

using core::Vec3;

std::string DefaultRobotUrdfPath() { return PROX_DEFAULT_ROBOT_URDF; }

namespace {

DefaultObject MakeBox(std::string id, const Vec3& size, const Vec3& p_WO) {
  DefaultObject o;
  o.id = std::move(id);
  o.kind = DefaultObject::Kind::kBox;
  o.box_size = size;
  o.p_WO = p_WO;
  return o;
}

DefaultObject MakeCylinder(std::string id, double radius, double length, const Vec3& p_WO) {
  DefaultObject o;
  o.id = std::move(id);
  o.kind = DefaultObject::Kind::kCylinder;
  o.radius = radius;
  o.length = length;
  o.p_WO = p_WO;
  return o;
}

}  // namespace

bool IsBuiltInRobot(const std::string& urdf_path) {
  std::error_code ec;
  return urdf_path == DefaultRobotUrdfPath() ||
         std::filesystem::equivalent(urdf_path, DefaultRobotUrdfPath(), ec);
}

DefaultSceneSpec DefaultScene(const std::string& urdf_path) {
  DefaultSceneSpec spec;
  spec.urdf_path = urdf_path;
  if (IsBuiltInRobot(urdf_path)) {
    // The built-in robot's data: the dart-doc URDF mounts base_link on its root link "world" at xyz
    // (0, -0.5, 0), rpy (-1.57, 0, 0) (DART's y-up world). Placing the root at the inverse of that mount
    // puts base_link at the world origin with its z axis up, so the workcell below reads in the robot's
    // own frame. Any other robot stands as its URDF says: its root frame is the workcell's frame.
    const double a = 1.57;
    spec.q_WB = Quaternion(Eigen::AngleAxisd(a, Vec3::UnitX()));
    spec.p_WB = -(spec.q_WB.toRotationMatrix() * Vec3(0.0, -0.5, 0.0));
  }
  // The arm's shoulder is 0.33 m up and it reaches about 0.65 m; at home (all zeros) it stands up and
  // points its wrist forward (+x) at about 0.7 m height.
  spec.objects = {
      // A table in front of the robot, its top 0.15 m below the shoulder-yaw base plate.
      MakeBox("table", Vec3(0.5, 1.0, 0.05), Vec3(0.55, 0.0, 0.1)),
      // A shelf to the robot's left: two side walls, a middle board and a back wall.
      MakeBox("shelf_side_a", Vec3(0.3, 0.02, 0.8), Vec3(0.05, 0.45, 0.4)),
      MakeBox("shelf_side_b", Vec3(0.3, 0.02, 0.8), Vec3(0.05, 0.75, 0.4)),
      MakeBox("shelf_board", Vec3(0.3, 0.3, 0.02), Vec3(0.05, 0.6, 0.45)),
      MakeBox("shelf_back", Vec3(0.02, 0.32, 0.8), Vec3(-0.1, 0.6, 0.4)),
      // A post behind the robot on its right.
      MakeCylinder("post", 0.05, 1.2, Vec3(-0.35, -0.35, 0.6)),
  };
  return spec;
}

core::Result<core::SceneDescription> DefaultSceneDescription(const std::string& urdf_path, bool collision_from_visual) {
  const DefaultSceneSpec spec = DefaultScene(urdf_path);
  core::RobotLoadOptions options;
  options.ros_package_path = "";  // The URDF names its meshes relative to itself; never crawl.
  options.collision_from_visual = collision_from_visual;
  auto robot = core::RobotModel::FromUrdfFile(spec.urdf_path, "", options);
  if (!robot.ok()) return robot.error();
  core::SceneDescription d;
  d.robot = std::move(robot).value();
  d.X_WB = PoseFromQuaternion(spec.p_WB, spec.q_WB);
  for (const DefaultObject& o : spec.objects) {
    core::WorldObject obj;
    obj.id = o.id;
    const core::Shape shape = o.kind == DefaultObject::Kind::kBox
                                  ? core::Shape(core::Box{0.5 * o.box_size})
                                  : core::Shape(core::Cylinder{o.radius, 0.5 * o.length});
    core::ObjectPart part{core::Geometry::Primitive(shape), PoseFromQuaternion(o.p_WO, o.q_WO)};
    obj.parts.push_back(std::move(part));
    d.objects.push_back(std::move(obj));
  }
  return d;
}

}  // namespace proximity::scenes
