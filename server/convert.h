#pragma once
/// @file
/// Wire (proximity.v1) <-> core conversions. Every check names the request field at fault
/// ("objects[2].parts[0].shape.box.size.y must be >= 0, got -1"); errors are core errors, turned
/// into gRPC statuses in one place (errors.h).

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/robot/inverse_kinematics.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/base/file_access.h"
#include "proximity/core/contact/tracker.h"
#include "proximity/core/scene/scene.h"
#include "proximity/planners/joint_space.h"
#include "proximity/planners/planner.h"
#include "proximity/planners/timing.h"
#include "proximity/v1/proximity.pb.h"

namespace proximity::server {

namespace v1 = ::proximity::v1;

/// Largest deviation of a quaternion's norm from 1 that the server normalises away.
inline constexpr double kQuaternionTolerance = 1e-6;

/// A wire pose: finite position, a quaternion within kQuaternionTolerance of unit norm (all zeros is
/// the identity; an unset pose is the identity).
[[nodiscard]] core::Result<core::RigidTransform> ToRigidTransform(const v1::Pose& pose, std::string_view field);
void ToWire(const core::RigidTransform& X, v1::Pose* pose);
void ToWire(const core::Vec3& v, v1::Vector3* out);

/// Server files a request may read (the operator's policy: core::FileAccess) and the paths it read,
/// in order (for the content hash).
struct FileReads {
  core::FileAccess access;
  std::vector<std::string> paths;
};

/// A wire shape as core geometry. Primitives take full sizes on the wire and half sizes in the core.
/// Server mesh files are read under files->access and appended to files->paths; with no `files`, a
/// mesh file is refused.
[[nodiscard]] core::Result<core::Geometry> ToGeometry(const v1::Shape& shape, std::string_view field,
                                                      FileReads* files);

/// What point clouds in a robot link's frame and the self filter need: the scene's robot and its base
/// pose. Without it such clouds are refused.
struct CloudContext {
  const core::RobotModel* robot = nullptr;
  core::RigidTransform X_WB;
};

/// A wire point cloud as core geometry, filtered and built (PointCloud::Build): byte count a whole
/// number of float32 triples, radius and voxel size, a frame and state the robot knows (`context`),
/// the self filter. Its pose: X_OP in the object frame (returned unchanged), or, for a link frame, the
/// link's pose at the state times X_OP, written to *X_WP (else *X_WP is left alone).
[[nodiscard]] core::Result<core::Geometry> ToPointCloud(const v1::PointCloud& cloud, std::string_view field,
                                                        const CloudContext* context, core::RigidTransform* X_WP);

/// Points of the clouds in a request (before filtering), and the most in one cloud.
struct CloudCount {
  int64_t total = 0;
  int64_t largest = 0;
};
CloudCount CloudPoints(const v1::CreateSceneRequest& request);
CloudCount CloudPoints(const v1::UpdateWorldRequest& request);
/// Points kept in a scene's world clouds.
int64_t SceneCloudPoints(const core::Scene& scene);
/// RESOURCE_EXHAUSTED naming the option when a cloud exceeds `max_cloud` points (--max-cloud-points) or
/// the scene's clouds `max_scene` (--max-scene-cloud-points).
[[nodiscard]] core::Status CheckCloudPoints(const CloudCount& count, int64_t scene_points, int64_t max_cloud,
                                            int64_t max_scene);

/// The frame of a world object and its parts' poses in it: what a MOVE keeps.
struct ObjectFrame {
  core::RigidTransform X_WO;
  std::vector<core::RigidTransform> X_OP;
};

/// A wire world object (ADD) as a core object with its parts posed in the world, and its frame.
/// Point clouds need `clouds` for a link frame or the self filter.
[[nodiscard]] core::Status ToWorldObject(const v1::CollisionObject& object, std::string_view field,
                                         core::WorldObject* out, ObjectFrame* frame, FileReads* files,
                                         const CloudContext* clouds = nullptr);

/// A wire attached object as a core one.
[[nodiscard]] core::Result<core::AttachedObject> ToAttachedObject(const v1::AttachedObject& object,
                                                                  std::string_view field,
                                                                  FileReads* files);

/// One configuration in the scene's joint order: by name (every active joint exactly once, any
/// order; names of joints the robot lacks are ignored, as MoveIt ignores them, with one sentence
/// naming them appended to `warnings` when given), in scene order, or a named SRDF group state.
/// Writes dof() values to `q` (resized).
[[nodiscard]] core::Status ResolveState(const core::RobotModel& robot, const v1::JointPositions& state,
                                        std::string_view field, std::vector<double>* q,
                                        std::vector<std::string>* warnings = nullptr);

/// Many configurations: rows of `cols` values in the request's column order, from repeated or
/// packed doubles, copied out row by row in the scene's joint order.
class ConfigurationRows {
 public:
  /// Checks the encoding, the columns (every active joint named exactly once, or none named), the
  /// value count (a multiple of the column count), the row limit, and that every value is finite.
  /// `limit_name` names the server option in the RESOURCE_EXHAUSTED message.
  [[nodiscard]] static core::Result<ConfigurationRows> Make(const core::RobotModel& robot,
                                                            const v1::Configurations& configurations,
                                                            std::string_view field, int64_t max_rows,
                                                            std::string_view limit_name);

  int64_t rows() const { return rows_; }
  int32_t dof() const { return cols_; }
  /// Row i in the scene's joint order, into q (dof() values).
  void Row(int64_t i, double* q) const {
    const int64_t base = i * cols_;
    if (packed_ != nullptr) {
      if (column_to_active_.empty()) {
        std::memcpy(q, packed_ + base * 8, static_cast<size_t>(cols_) * 8);
      } else {
        for (int32_t c = 0; c < cols_; ++c) std::memcpy(&q[column_to_active_[c]], packed_ + (base + c) * 8, 8);
      }
    } else if (column_to_active_.empty()) {
      std::memcpy(q, values_ + base, static_cast<size_t>(cols_) * sizeof(double));
    } else {
      for (int32_t c = 0; c < cols_; ++c) q[column_to_active_[c]] = values_[base + c];
    }
  }
  /// All rows, row after row in the scene's joint order.
  std::vector<double> All() const;

 private:
  const double* values_ = nullptr;   // repeated positions
  const char* packed_ = nullptr;     // positions_f64le (not necessarily 8-byte aligned)
  int64_t rows_ = 0;
  int32_t cols_ = 0;
  std::vector<int32_t> column_to_active_;  // empty: columns are in scene order
};

/// Names of a core contact / pair on the wire.
void ToWire(const core::Scene& scene, const core::StateContact& contact, v1::PairId* out);
void ToWire(const core::Scene& scene, const core::PairDistance& pair, v1::PairDistance* out);
void ToWire(const core::Scene& scene, const core::MotionResult& motion, v1::MotionResult* out);
void ToWire(const core::Scene& scene, const core::PathResult& path, v1::PathResult* out);

/// Work counters of one request, summed as the core reports them.
struct Work {
  int64_t states = 0;
  int64_t pairs_tested = 0;
  int64_t distance_queries = 0;
  int64_t bv_tests = 0;
  int64_t triangle_tests = 0;

  Work& operator+=(const Work& o) {
    states += o.states;
    pairs_tested += o.pairs_tested;
    distance_queries += o.distance_queries;
    bv_tests += o.bv_tests;
    triangle_tests += o.triangle_tests;
    return *this;
  }
  void Add(const core::QueryStats& s) {
    bv_tests += s.bv_tests;
    triangle_tests += s.triangle_tests;
  }
  void ToWire(v1::WorkStats* out) const;
};

/// The work of a state check, a motion or path check, a distance query and a time of first contact.
Work StateWork(const core::StateResult& r);
Work MotionWork(const core::MotionResult& r);
Work MotionWork(const core::PathResult& r);
Work DistanceWork(const core::SceneDistanceResult& r);
Work ContactWork(const core::ContinuousResult& r);
/// A track query's: one state, its decided pairs as distance queries.
Work TrackWork(const core::TrackResult& r);

/// Answers on the wire (their work stats apart).
void ToWire(const core::Scene& scene, const core::StateResult& r, v1::CheckStateResponse* out);
void ToWire(const core::Scene& scene, const core::SceneDistanceResult& r, v1::ComputeDistanceResponse* out);
void ToWire(const core::Scene& scene, const core::ContinuousResult& r, v1::TimeOfFirstContactResponse* out);
void ToWire(const core::Scene& scene, const core::TrackResult& r, v1::TrackResponse* out);
/// Whether a track answer proves its pairs apart: every reported pair's lower bound > 0 (no pair: nothing
/// within the horizon). What until_invalid calls valid, as a distance answer's lower_bound > 0.
bool TrackApart(const core::TrackResult& r);

/// Triangles of the inline meshes a request adds (objects and attached objects), counted from the
/// request: nothing is read or built.
int64_t InlineTriangles(const v1::CreateSceneRequest& request);
int64_t InlineTriangles(const v1::UpdateWorldRequest& request);
/// RESOURCE_EXHAUSTED naming the server option `limit_name` when a scene's `triangles` exceed `limit`.
[[nodiscard]] core::Status CheckSceneTriangles(int64_t triangles, int64_t limit, std::string_view limit_name);

/// A ListScenes page size: 0, or more than `max_page`, is `max_page`; a negative size is refused.
[[nodiscard]] core::Result<int32_t> ToPageSize(int32_t page_size, int32_t max_page);

/// One path: its rows (ConfigurationRows::Make, at most `max_waypoints`, the option `limit_name`), at
/// least one.
[[nodiscard]] core::Result<ConfigurationRows> ToPath(const core::RobotModel& robot, const v1::Configurations& path,
                                                     std::string_view field, int64_t max_waypoints,
                                                     std::string_view limit_name);

/// Paths ("paths[i]", each as ToPath) and their waypoints in all.
struct Paths {
  std::vector<ConfigurationRows> paths;
  int64_t waypoints = 0;
};
/// Every path is checked, and at most `max_total` waypoints in all (the option `total_limit_name`).
[[nodiscard]] core::Result<Paths> ToPaths(const core::RobotModel& robot,
                                          const google::protobuf::RepeatedPtrField<v1::Configurations>& paths,
                                          int64_t max_waypoints, std::string_view limit_name, int64_t max_total,
                                          std::string_view total_limit_name);

/// The distance query of a ComputeDistance request. The core checks the budget (finite, >= 0) and
/// names the bad field; 0 max_distance on the wire means no cap.
core::SceneDistanceRequest ToDistanceRequest(const v1::ComputeDistanceRequest& request);

/// Defaults of a wire TrackRequest's zero horizon and max_pairs.
inline constexpr double kDefaultTrackHorizon = 0.25;
inline constexpr int32_t kDefaultTrackPairs = 8;

/// The tracker's options of a wire TrackRequest (not its state): horizon (0 means kDefaultTrackHorizon;
/// finite, in [0, core::kWorldExtent]), max_pairs (0 means kDefaultTrackPairs; at most
/// core::kMaxTrackPairs), the budgets (finite, >= 0), the pair kinds, the gradient and the convex method.
/// Errors name the field under `field` ("track." gives "track.horizon: ...").
[[nodiscard]] core::Result<core::TrackRequest> ToTrackRequest(const v1::TrackRequest& request,
                                                              std::string_view field);

/// The continuous-check options of a tolerance (0 means 1e-5; negative or not finite is refused).
[[nodiscard]] core::Result<core::ContinuousRequest> ToContinuousRequest(double tolerance);

/// One part of a free-flying body, posed so that the core's body motion (linear translation, slerp
/// rotation of the given frame) moves it exactly as the body moves it.
struct BodyPart {
  core::Geometry geometry;
  core::RigidTransform X0, X1;  ///< The part frame at t = 0 and t = 1.
};
/// The parts of a wire body motion. A part offset from the body origin is refused while the body
/// rotates (it would sweep a curve the core's motion is not). Server mesh files are read under `access`.
[[nodiscard]] core::Result<std::vector<BodyPart>> ToBodyParts(const v1::BodyMotion& body,
                                                              const core::FileAccess& access);

/// The motion request of a wire mode and resolution (0 means 0.01); errors name `field`.
[[nodiscard]] core::Result<core::MotionRequest> ToMotionRequest(v1::MotionMode mode, double resolution,
                                                                std::string_view field);

/// Planning time when a PlanRequest gives none (seconds).
inline constexpr double kDefaultPlanTimeLimit = 5.0;

/// What a PlanRequest asks of the planner besides its start and goal, checked.
struct PlanSettings {
  planners::PlannerOptions options;
  core::MotionRequest motion;  ///< Certified (planned lazily) or discrete with its resolution.
  double time_limit_s = kDefaultPlanTimeLimit;
  int64_t max_iterations = 0;  ///< 0: none.
};

/// The planner, seed, range, simplification, motion check, time and iteration limits of a PlanRequest.
/// Errors name the field: an unknown planner or mode, a negative or non-finite time limit, range or
/// resolution, a negative iteration limit, and a time limit above `max_time_limit_s` (the server option
/// `limit_name`).
[[nodiscard]] core::Result<PlanSettings> ToPlanSettings(const v1::PlanRequest& request, double max_time_limit_s,
                                                        std::string_view limit_name);

/// Moves q's values within `tolerance` outside a joint limit onto it (RobotModel::ClampToLimits), one
/// sentence naming them appended to `warnings` (when given); further out is an error naming `what`.
[[nodiscard]] core::Status ClampState(const core::RobotModel& robot, std::vector<double>* q, const char* what,
                                      double tolerance, std::vector<std::string>* warnings);

/// The start and goal of a PlanRequest in the scene's joint order (ResolveState), each within the
/// joint limits (the planner's space is bounded by them): a value within core::kStartBoundsTolerance
/// (start) or core::kGoalBoundsTolerance (goal) of a limit is clamped to it, with one sentence appended
/// to `warnings`; errors name "start" or "goal", and the joint, its value and its limits. With a
/// goal_pose the goal must be unset and *goal is left empty.
[[nodiscard]] core::Status ToPlanEnds(const core::RobotModel& robot, const v1::PlanRequest& request,
                                      std::vector<double>* start, std::vector<double>* goal,
                                      std::vector<std::string>* warnings = nullptr);

/// A wire pose goal as the core's, in the robot's root frame (the scene's base pose X_WB maps the
/// world target into it). Unset region sizes and orientation tolerances take MoveIt's pose-goal
/// defaults (a 1e-4 m sphere, 1e-3 rad). Errors name the field: an unknown link, non-finite numbers, a
/// quaternion that is not unit, a region size or tolerance <= 0, an unknown region shape.
[[nodiscard]] core::Result<core::PoseGoal> ToPoseGoal(const core::RobotModel& robot, const core::RigidTransform& X_WB,
                                                      const v1::PoseGoal& goal, std::string_view field);

/// A Plan's timing request, resolved per joint of the scene: limits (the request's, else the URDF's
/// velocity and default_acceleration, scaled), the sample step, the blends' tolerance. Errors name the
/// field: an unknown or repeated joint, a negative or non-finite value, a scaling outside (0, 1], and
/// (given the planner's `space`) a joint that may move without both limits.
struct TimingSettings {
  planners::TimingLimits limits;
  double resample_dt = 0.01;
  double path_tolerance = 0.0;
};
[[nodiscard]] core::Result<TimingSettings> ToTimingSettings(const core::RobotModel& robot,
                                                            const planners::JointSpace& space,
                                                            const v1::TimingRequest& request);
/// A timed trajectory on the wire, in the scene's joint order.
void ToWire(const core::RobotModel& robot, const planners::TimedTrajectory& trajectory, v1::TimedTrajectory* out);

/// The wire names of planner types and outcomes.
v1::Planner ToWire(planners::PlannerType type);
v1::PlanOutcome ToWire(planners::PlanOutcome outcome);
void ToWire(const planners::PlanStats& stats, v1::PlanStats* out);

/// A planned path as packed rows in the scene's joint order, joint names set. Wrapping coordinates are
/// unwrapped row by row (JointSpace::SegmentEnd), so each straight segment between rows is the one the
/// planner validated and CheckPath checks; the first and last rows are the path's ends exactly (the
/// start and the goal as given: the last segment may then turn a continuous joint across +-pi, the
/// short way, as every motion query reads it).
void ToWire(const planners::JointSpace& space, const core::RobotModel& robot,
            const std::vector<planners::Configuration>& path, v1::Configurations* out);

}  // namespace proximity::server
