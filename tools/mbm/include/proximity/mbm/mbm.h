#pragma once
/// @file
/// Reader for MotionBenchMaker problems: a `sceneNNNN.yaml` (a MoveIt PlanningScene in YAML) paired with a
/// `requestNNNN.yaml` (a MoveIt MotionPlanRequest in YAML). Everything is kept as plain names and numbers,
/// independent of any RobotModel; a scene builder maps the names onto a model later.
///
/// Format notes (what the 700 Panda problems contain, and what the reader accepts):
/// * Quaternions are written w last, as a list [x, y, z, w]; a map {x, y, z, w} is accepted too. Positions
///   are a list [x, y, z] or a map {x, y, z}. Quaternions are normalised; a zero or non-finite one is an error.
/// * Collision objects have no `pose` field in these files: their `primitive_poses` are absolute, in the
///   model root frame R (panda_link0). When an object does have a `pose` X_RO, primitive poses are taken
///   relative to it (MoveIt's rule): X_RP = X_RO * X_OP.
/// * Objects have no `header.frame_id` in the problems (root frame); a frame_id, when given, is kept as is.
/// * Primitive types: box (full edge lengths), cylinder ([height, radius], axis along local z, centred),
///   sphere ([radius]). Cones, meshes and planes are rejected with an error naming the object: skipping
///   an obstacle would make collision checks silently optimistic. The problems contain none of them.
/// * `robot_state`, `fixed_frame_transforms`, `name` of the scene and the request's workspace, scaling
///   factors and multi-DOF start state are ignored.
/// Units are metres, radians and seconds.

#include <string>
#include <utility>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/scene.h"
#include "proximity/core/base/types.h"

namespace proximity::mbm {

/// The shape of a MoveIt solid primitive.
enum class MbmShapeType { kBox, kCylinder, kSphere };

/// Returns "box", "cylinder" or "sphere".
const char* MbmShapeTypeName(MbmShapeType type);

/// One solid primitive of a collision object.
struct MbmPrimitive {
  /// The shape.
  MbmShapeType type = MbmShapeType::kBox;
  /// As in the file, all positive, in metres: box {x, y, z} full edge lengths; cylinder {height, radius};
  /// sphere {radius}.
  std::vector<double> dimensions;
  /// Pose of the primitive's frame P (centred on the shape) in the model root frame R. The rotation is
  /// exactly Eigen::Quaterniond(w, x, y, z).normalized().toRotationMatrix() of the file's quaternion
  /// (composed with the object pose when the object has one).
  core::RigidTransform X_RP;
};

/// One world collision object: an id and its primitives.
struct MbmCollisionObject {
  /// The object's id, unique within its scene.
  std::string id;
  /// The object's header.frame_id, or "" when absent (meaning the model root frame).
  std::string frame_id;
  /// The object's primitives, at least one, in file order.
  std::vector<MbmPrimitive> primitives;
};

/// A MoveIt PlanningScene as used by MotionBenchMaker.
struct MbmScene {
  /// The file path, or the name given to LoadMbmSceneFromString.
  std::string source;
  /// The scene's robot_model_name (e.g. "panda").
  std::string robot_model_name;
  /// World collision objects in file order; ids are unique.
  std::vector<MbmCollisionObject> objects;
  /// allowed_collision_matrix.entry_names, in file order (empty when the scene has no matrix).
  std::vector<std::string> acm_names;
  /// allowed_collision_matrix.entry_values as read: acm_values[i][j] is true when collisions between
  /// acm_names[i] and acm_names[j] are allowed (ignored). Square, the size of acm_names, and symmetric.
  std::vector<std::vector<bool>> acm_values;
  /// The allowed pairs (acm_names[i], acm_names[j]) with i < j and acm_values[i][j] true, row by row.
  std::vector<std::pair<std::string, std::string>> allowed_pairs;
};

/// One joint goal: the joint's name and its target position (radians or metres).
struct MbmJointConstraint {
  /// The joint's name as written (e.g. "panda_joint1").
  std::string joint_name;
  /// The target position (radians for revolute joints, metres for prismatic ones).
  double position = 0.0;
};

/// One entry of goal_constraints: the joint constraints that together make one goal.
struct MbmGoal {
  /// The joint constraints in file order, at least one; joint names are unique.
  std::vector<MbmJointConstraint> joint_constraints;
};

/// A MoveIt MotionPlanRequest as used by MotionBenchMaker (joint-space start and goal).
struct MbmRequest {
  /// The file path, or the name given to LoadMbmRequestFromString.
  std::string source;
  /// The planning group (e.g. "panda_arm").
  std::string group_name;
  /// The planner the problem was made for, or "" when absent.
  std::string planner_id;
  /// allowed_planning_time in seconds, or 0 when absent.
  double allowed_planning_time = 0.0;
  /// start_state.joint_state.name, in file order; unique.
  std::vector<std::string> start_joint_names;
  /// start_state.joint_state.position, parallel to start_joint_names (radians or metres).
  std::vector<double> start_joint_positions;
  /// goal_constraints in file order, at least one; reaching any one of them solves the request.
  std::vector<MbmGoal> goals;
};

/// A scene and its request.
struct MbmProblem {
  /// "<family>/NNNN", e.g. "box/0001": the family folder's name without its "_<robot_model_name>" suffix.
  std::string name;
  /// The family, e.g. "box".
  std::string family;
  /// The problem number NNNN.
  int index = 0;
  /// The parsed sceneNNNN.yaml.
  MbmScene scene;
  /// The parsed requestNNNN.yaml.
  MbmRequest request;
};

/// Reads a sceneNNNN.yaml. Errors name the file, line, object id and field.
core::Result<MbmScene> LoadMbmScene(const std::string& path);
/// Parses scene YAML text; `name` stands for the file in error messages and in MbmScene::source.
core::Result<MbmScene> LoadMbmSceneFromString(const std::string& text, const std::string& name = "<string>");

/// Reads a requestNNNN.yaml. Errors name the file, line and field.
core::Result<MbmRequest> LoadMbmRequest(const std::string& path);
/// Parses request YAML text; `name` stands for the file in error messages and in MbmRequest::source.
core::Result<MbmRequest> LoadMbmRequestFromString(const std::string& text, const std::string& name = "<string>");

/// The family folders directly under a problems root (folders that hold sceneNNNN.yaml files), sorted by
/// name. NotFound when `root` is not a folder or holds no family.
core::Result<std::vector<std::string>> ListMbmFamilyDirs(const std::string& root);

/// Loads the problems of one family folder (pairs sceneNNNN.yaml with requestNNNN.yaml, by number) or,
/// when `dir_or_family_dir` holds no scene files itself, of every family folder under it. Sorted by
/// family folder name, then number. A scene without its request (or the reverse) is a NotFound error.
core::Result<std::vector<MbmProblem>> LoadMbmProblems(const std::string& dir_or_family_dir);

/// The scene an MBM problem describes for `robot`: every primitive as a Box, Cylinder or Sphere in the
/// robot's root frame (the scene's world frame), and the ACM's allowed pairs: entries naming links or
/// the scene's objects apply to them, others are kept and ignored by the built scene with a warning
/// (Scene::warnings), as MoveIt accepts them.
[[nodiscard]] core::Result<core::SceneDescription> MbmSceneDescription(const MbmScene& scene,
                                                           std::shared_ptr<const core::RobotModel> robot);
/// The request's start state in `robot`'s active joint order, as MoveIt reads it: values of joints that
/// are fixed or mimic in `robot` are ignored (the MBM Panda's fingers), and so are values of joints
/// `robot` lacks (the wheels of a base its URDF fixes), with one warning naming them; values within
/// core::kStartBoundsTolerance of a joint limit are clamped to it, with one warning; a value further out
/// is an error naming the joint, its value and its limits. Warnings are appended to `warnings` when given.
[[nodiscard]] core::Result<std::vector<double>> MbmStartConfiguration(const MbmRequest& request, const core::RobotModel& robot,
                                                                      std::vector<std::string>* warnings = nullptr);
/// Goal `goal`'s joint constraints as a configuration; every active joint must be constrained.
/// Constraints on joints `robot` lacks are ignored with one warning; values within
/// core::kGoalBoundsTolerance of a joint limit are clamped to it with one warning, values further out
/// are an error naming the joint, its value and its limits.
[[nodiscard]] core::Result<std::vector<double>> MbmGoalConfiguration(const MbmRequest& request, const core::RobotModel& robot,
                                                               size_t goal = 0,
                                                               std::vector<std::string>* warnings = nullptr);

}  // namespace proximity::mbm
