#pragma once
/// @file
/// Robots: a kinematic tree with collision geometry, built once from URDF (plus an optional SRDF) into
/// an immutable RobotModel that any number of threads can share. Forward kinematics writes link poses
/// into caller buffers; motion bounds drive certified motion checks (Schwarzer, Saha, Latombe 2005).
///
/// Frames: W world, B the model's root link (placed at X_WB, identity by default), L a link frame,
/// J a joint frame (the URDF joint origin; the child link frame coincides with it at q = 0),
/// G a collision geometry frame. Units: metres and radians.

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "proximity/core/bvh/query_types.h"
#include "proximity/core/narrowphase/shapes.h"
#include "proximity/core/base/file_access.h"
#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"

namespace proximity::core {
/// Index of a link in RobotModel::links(); the root is 0 and parents come before children.
using LinkIndex = int32_t;
/// Index of a joint in RobotModel::joints(); joint i has child link i + 1.
using JointIndex = int32_t;

/// Built meshes shared across links and models, keyed by resolved absolute path and scale.
/// Thread-safe; a file is loaded and built once per (path, scale), with the default hierarchy options.
class MeshCache {
 public:
  /// The built mesh of file `path` scaled per axis by `scale`; loads it on first use, reading it under
  /// `files`. Errors name the file; a mesh with more triangles than `limits.max_link_triangles` is
  /// refused before its hierarchy is built.
  [[nodiscard]] Result<std::shared_ptr<const MeshModel>> Get(const std::string& path, const Vec3& scale,
                                                             const FileAccess& files = {},
                                                             const BuildLimits& limits = {});
  /// Number of distinct (path, scale) entries held.
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::array<double, 3>>, std::shared_ptr<const MeshModel>> models_;
};

/// How a robot is loaded.
struct RobotLoadOptions {
  /// package name -> directory, searched first for package://name/rest URIs.
  std::map<std::string, std::string> package_dirs;
  /// Colon-separated roots crawled for package.xml files whose <name> matches (ROS 1 style). nullopt
  /// reads the ROS_PACKAGE_PATH environment variable; "" disables the crawl.
  std::optional<std::string> ros_package_path;
  /// Directory that relative mesh paths resolve against. Loading from a file sets it to the URDF's
  /// directory when empty.
  std::string urdf_dir;
  /// Cache to share meshes with other models; null uses one private to this load.
  std::shared_ptr<MeshCache> mesh_cache;
  /// Files uploaded with the robot (a content bundle), by the URI or path the URDF names them with
  /// ("package://pkg/meshes/link.stl", "meshes/link.dae"): a mesh URI found here resolves to
  /// kUploadedFilePrefix + the URI and is read from these bytes, before any file is looked for.
  std::map<std::string, std::string> uploaded_files;
  /// Use each link's <visual> geometry as its collision geometry (links without visuals keep their
  /// <collision>): many robots' visual meshes are the only accurate ones, at many more triangles.
  bool collision_from_visual = false;
  /// Which files the load may read (the URDF and SRDF files, meshes, package.xml files). Confined,
  /// mesh URIs that resolve outside the roots count as missing and the package crawl skips roots
  /// outside them.
  FileAccess files;
  /// Caps on links, joints, triangles per link and the model's estimated memory, checked before building.
  BuildLimits limits;
  /// Asked between links while meshes load and motion terms are computed: the load ends with a
  /// kStopped error once it says so.
  Interrupt stop;
};

/// What ResolveMeshUri puts before the URI of a file found in RobotLoadOptions::uploaded_files.
inline constexpr std::string_view kUploadedFilePrefix = "uploaded:";

/// Resolves a URDF mesh URI to an absolute path of an existing file (or an uploaded file's name): package://pkg/rest (through
/// options.package_dirs, then the ROS_PACKAGE_PATH crawl), file://abs, an absolute path, or a path
/// relative to options.urdf_dir. The error names the URI and every place tried.
[[nodiscard]] Result<std::string> ResolveMeshUri(const std::string& uri, const RobotLoadOptions& options);

struct SolidInterior;

/// Kind of a collision geometry; primitives keep their parameters (they are not tessellated).
enum class ShapeType { kMesh, kBox, kCylinder, kSphere };

/// One collision element of a link, posed in the link frame.
struct LinkGeometry {
  ShapeType type = ShapeType::kBox;
  RigidTransform X_LG;            ///< Geometry frame G in link frame L (the URDF <collision><origin>).
  Vec3 box_size = Vec3::Zero();   ///< kBox: full edge lengths along G's axes, centred at G's origin (m).
  double radius = 0.0;            ///< kCylinder, kSphere: radius (m), centred at G's origin.
  double length = 0.0;            ///< kCylinder: length along G's z axis, centred at G's origin (m).
  std::shared_ptr<const MeshModel> mesh;  ///< kMesh: vertices in G, scale applied.
  /// kMesh: the convex hull of the mesh's vertices (frame G), null for a flat mesh. Whatever keeps
  /// away from the hull keeps away from the mesh: a cheap first test before the hierarchy walk.
  std::shared_ptr<const ConvexPolytope> hull;
  bool hull_is_surface = false;   ///< kMesh: the mesh is its hull's surface (IsHullSurface): a convex mesh.
  /// kMesh: how far the mesh lies inside its hull's boundary when it is a sealed surface close to it
  /// (SealedHullGap), +infinity otherwise.
  double hull_surface_gap = std::numeric_limits<double>::infinity();
  /// kMesh: balls proven inside a closed mesh's solid (found at load; an internal type), or null.
  std::shared_ptr<const SolidInterior> interior;
  std::string mesh_path;          ///< kMesh: resolved absolute file path.
  Vec3 mesh_scale = Vec3::Ones(); ///< kMesh: the URDF scale.
  std::string name;               ///< The URDF <collision name>, or "".
};

/// The turn equivalent to `delta` (rad) on a continuous joint that goes the short way round, as OMPL's
/// SO(2) state space interpolates: delta itself when |delta| <= pi (bit for bit), otherwise
/// delta minus the nearest multiple of 2 pi, in [-pi, pi].
double ShortestTurn(double delta);

/// A rigid body of the robot.
struct Link {
  std::string name;
  JointIndex parent_joint = -1;            ///< -1 for the root.
  std::vector<JointIndex> child_joints;
  std::vector<LinkGeometry> geometries;    ///< <collision> (or <visual> with collision_from_visual).
};

/// Joint kinds. Floating and planar URDF joints are rejected at load.
enum class JointType { kRevolute, kContinuous, kPrismatic, kFixed };

/// A joint connecting parent link P to child link C: X_PC(q) = X_PJ * motion(axis, value).
struct Joint {
  std::string name;
  JointType type = JointType::kFixed;
  LinkIndex parent_link = -1;
  LinkIndex child_link = -1;
  RigidTransform X_PJ;           ///< Joint frame J in the parent link frame (URDF <origin>).
  Vec3 axis_J = Vec3::UnitZ();   ///< Unit axis in J (rotation axis through J's origin, or slide direction).
  double lower = 0.0;            ///< Position limits (rad or m); -inf/+inf for continuous joints.
  double upper = 0.0;
  double velocity_limit = 0.0;   ///< URDF <limit velocity> (rad/s or m/s), 0 when absent.
  /// Position in the configuration vector q, or -1 for fixed and mimic joints.
  int32_t active_index = -1;
  /// Mimic joints: value = mimic_multiplier * q[mimic_active_index] + mimic_offset. Chains of mimics are
  /// resolved to the active joint at their end. -1 when not a mimic.
  int32_t mimic_active_index = -1;
  double mimic_multiplier = 1.0;
  double mimic_offset = 0.0;

  bool is_mimic() const { return mimic_active_index >= 0; }
  bool is_active() const { return active_index >= 0; }
};

/// SRDF <group>: the members as written; RobotModel::GroupActiveJoints resolves them.
struct SrdfGroup {
  std::string name;
  std::vector<std::pair<std::string, std::string>> chains;  ///< (base_link, tip_link).
  std::vector<std::string> joints;
  std::vector<std::string> links;
  std::vector<std::string> subgroups;
};

/// SRDF <group_state>: named joint values (rad or m) for a group.
struct SrdfGroupState {
  std::string name;
  std::string group;
  std::vector<std::pair<std::string, double>> values;
};

/// SRDF <disable_collisions>: a link pair never checked, with the reason given ("Adjacent", "Never", ...).
struct SrdfDisabledCollision {
  std::string link1;
  std::string link2;
  std::string reason;
};

/// SRDF <virtual_joint>: how the robot's root attaches to an outside frame. A fixed one places the root
/// in `parent_frame` at the identity (the SRDF gives no transform): the scene's base pose. Planar and
/// floating ones are held at the identity (the robot does not move its root), with a warning; one whose
/// child is not the URDF's root is skipped with a warning, as MoveIt skips it.
struct SrdfVirtualJoint {
  std::string name;
  std::string type;          ///< "fixed", "planar" or "floating" ("" when absent: read as fixed, with a warning)
  std::string parent_frame;
  std::string child_link;
};

/// SRDF <end_effector>: a group that acts as the end effector of a parent link (and parent group).
struct SrdfEndEffector {
  std::string name;
  std::string group;
  std::string parent_link;
  std::string parent_group;  ///< "" when absent
};

/// The parts of a MoveIt SRDF that matter for proximity queries.
struct Srdf {
  std::string robot_name;
  std::vector<SrdfGroup> groups;
  std::vector<SrdfGroupState> group_states;
  std::vector<SrdfDisabledCollision> disabled_collisions;
  std::vector<SrdfVirtualJoint> virtual_joints;
  std::vector<std::string> passive_joints;
  std::vector<SrdfEndEffector> end_effectors;
  /// Elements of <robot> that are not part of the SRDF format, by name with their count (accepted and
  /// ignored, as MoveIt does).
  std::vector<std::pair<std::string, int>> unknown_elements;
};

/// How far outside a joint limit (rad or m) a start state may lie and still be used, clamped to the limit:
/// MoveIt's start_state_max_bounds_error default.
inline constexpr double kStartBoundsTolerance = 0.05;
/// How far outside a joint limit (rad or m) a goal may lie and still be used, clamped to the limit:
/// MoveIt's default goal joint tolerance (goals written at +-pi against limits of +-3.14159).
inline constexpr double kGoalBoundsTolerance = 1e-4;

/// Why a link pair is left out of collision checking (RobotModel::AllowedReason).
enum class AllowedReason : uint8_t {
  kNone = 0,      ///< checked
  kSameLink = 1,  ///< a link with itself
  kAdjacent = 2,  ///< parent and child of one joint
  kRigid = 3,     ///< rigidly connected through fixed joints only
  kSrdf = 4,      ///< an SRDF <disable_collisions> pair (its reason: RobotModel::SrdfReason)
};
/// "checked", "same link", "adjacent", "rigid", "srdf".
std::string_view AllowedReasonName(AllowedReason reason);

/// Parses SRDF text (structure only; names are checked against a URDF by RobotModel). `name` is used
/// in messages. Errors: malformed XML (with line), missing required attributes, non-finite values.
[[nodiscard]] Result<Srdf> ParseSrdf(std::string_view xml, const std::string& name = "srdf");

/// A robot built once from URDF (+ SRDF): links in topological order, joints, collision geometry,
/// allowed-collision set, and motion-bound coefficients. Immutable; every method is const and thread-safe.
///
/// The configuration q has one value per active joint (revolute, continuous, prismatic; not fixed, not
/// mimic) in active order: depth-first from the root, children in URDF document order.
class RobotModel {
 public:
  /// Builds a robot from URDF text and optional SRDF text ("" for none). Nothing is half-loaded: the
  /// error names the element, file or URI at fault.
  [[nodiscard]] static Result<std::shared_ptr<const RobotModel>> FromUrdfString(
      std::string_view urdf_xml, std::string_view srdf_xml = {}, const RobotLoadOptions& options = {});
  /// The collision mesh files a URDF names, resolved as FromUrdfString resolves them (options' package
  /// map, ROS_PACKAGE_PATH crawl, file access), in link then collision order, without loading any: what
  /// a content id must cover before anything is built. Errors as FromUrdfString's for the same URIs.
  [[nodiscard]] static Result<std::vector<std::string>> CollisionMeshFiles(std::string_view urdf_xml,
                                                                           const RobotLoadOptions& options = {});
  /// Builds a robot from a URDF file and an optional SRDF file ("" for none). Relative mesh paths
  /// resolve against the URDF's directory unless options.urdf_dir is set.
  [[nodiscard]] static Result<std::shared_ptr<const RobotModel>> FromUrdfFile(
      const std::string& urdf_path, const std::string& srdf_path = "", const RobotLoadOptions& options = {});

  /// The URDF <robot name>.
  const std::string& name() const { return name_; }
  const std::vector<Link>& links() const { return links_; }
  const std::vector<Joint>& joints() const { return joints_; }
  const Link& link(LinkIndex i) const { return links_[i]; }
  const Joint& joint(JointIndex i) const { return joints_[i]; }
  int32_t num_links() const { return static_cast<int32_t>(links_.size()); }
  int32_t num_joints() const { return static_cast<int32_t>(joints_.size()); }
  /// Size of q.
  int32_t num_positions() const { return static_cast<int32_t>(active_joints_.size()); }
  /// Joint index of each entry of q.
  const std::vector<JointIndex>& active_joints() const { return active_joints_; }
  /// Whether some active or mimic joint lies between link l and the root (its pose depends on q).
  bool LinkMoves(LinkIndex l) const { return link_moves_[static_cast<size_t>(l)] != 0; }
  /// Names of the entries of q, in order.
  const std::vector<std::string>& active_joint_names() const { return active_joint_names_; }
  /// Lower and upper position limits per entry of q (rad or m; +/-inf for continuous joints).
  const std::vector<double>& lower_limits() const { return lower_limits_; }
  const std::vector<double>& upper_limits() const { return upper_limits_; }
  /// The SRDF as parsed (empty when none was given).
  const Srdf& srdf() const { return srdf_; }
  /// What loading accepted where ROS is lenient but the user should hear about, one sentence per kind:
  /// SRDF elements that are not part of the format, SRDF <disable_collisions> naming links the URDF
  /// lacks (skipped, as MoveIt skips them), SRDF virtual joints that are planar or floating (held at the
  /// identity), of no or an unknown type (read as fixed) or not attached to the root (skipped), links
  /// whose visual meshes are missing when collision comes from visual geometry (they keep their
  /// <collision> geometry). Empty for most robots.
  const std::vector<std::string>& warnings() const { return warnings_; }

  /// Link index by name; NotFound naming it.
  [[nodiscard]] Result<LinkIndex> FindLink(std::string_view name) const;
  /// Joint index by name; NotFound naming it.
  [[nodiscard]] Result<JointIndex> FindJoint(std::string_view name) const;
  /// Position of an active joint in q; NotFound for unknown names, InvalidArgument for fixed or mimic joints.
  [[nodiscard]] Result<int32_t> ActiveIndex(std::string_view joint_name) const;

  /// The default configuration: per active joint 0 if within its limits, otherwise the middle of them.
  std::vector<double> DefaultConfiguration() const;
  /// Maps {joint name -> value} onto q. Unknown names are errors naming them, unless `ignored` is given:
  /// then they are appended to it and skipped (as MoveIt ignores joint-state entries for joints the
  /// robot lacks; SRDF virtual joints and their "name/x" entries count as unknown: they move nothing
  /// here). Values given for fixed or mimic joints are ignored (the model determines them). Active joints
  /// not named keep their DefaultConfiguration() value, or are an error naming them when `require_all`.
  /// Values of known joints must be finite.
  [[nodiscard]] Result<std::vector<double>> Configuration(const std::map<std::string, double>& values,
                                                          bool require_all = false,
                                                          std::vector<std::string>* ignored = nullptr) const;
  /// Moves every entry of q that lies outside its joint's limits by at most `tolerance` onto the limit,
  /// and returns the positions in q it moved (ascending). A value further out is an InvalidArgument
  /// naming the joint, its value and its limits (q is then unchanged); CheckConfiguration errors as well.
  [[nodiscard]] Result<std::vector<int32_t>> ClampToLimits(std::span<double> q, double tolerance) const;
  /// One sentence for a warning about ClampToLimits' joints: "`what`: clamped joint 'a' from 3.1416 to
  /// 3.14159, ... (within `tolerance` of the limits)". `before` is q as given.
  std::string ClampWarning(std::string_view what, std::span<const double> before, std::span<const double> after,
                           const std::vector<int32_t>& clamped, double tolerance) const;
  /// Whether `name` is an SRDF virtual joint of this model (or "virtual/x": one of its coordinates).
  bool IsVirtualJoint(std::string_view name) const;
  /// The SRDF group state `state` (of `group`, or of any group when ""), completed with defaults. A
  /// state outside the joint limits loads (as MoveIt loads it) but is an error here, naming the joint.
  [[nodiscard]] Result<std::vector<double>> NamedConfiguration(const std::string& state,
                                                               const std::string& group = "") const;
  /// Active-q positions of the joints an SRDF group moves (chains, joints, links' parent joints,
  /// subgroups), ascending. Errors name an unknown group or a subgroup cycle.
  [[nodiscard]] Result<std::vector<int32_t>> GroupActiveIndices(const std::string& group) const;

  /// InvalidArgument unless q has num_positions() finite entries within +-kMaxJointValue; names the bad
  /// index and joint.
  [[nodiscard]] Status CheckConfiguration(std::span<const double> q) const;
  /// InvalidArgument naming the first active joint whose value lies outside [lower - tolerance,
  /// upper + tolerance] (continuous joints have no limits), or a CheckConfiguration error.
  [[nodiscard]] Status CheckLimits(std::span<const double> q, double tolerance = 0.0) const;
  /// Whether every entry of q lies within its joint's limits widened by `tolerance`; CheckLimits
  /// without the message, for hot paths. Precondition: q has num_positions() entries.
  bool WithinLimits(std::span<const double> q, double tolerance = 0.0) const {
    for (size_t i = 0; i < q.size(); ++i) {
      if (q[i] < lower_limits_[i] - tolerance || q[i] > upper_limits_[i] + tolerance) return false;
    }
    return true;
  }

  /// Whether some active joint is continuous (its motions then turn the short way; see MotionEnd).
  bool has_continuous_joints() const { return !continuous_indices_.empty(); }
  /// Whether active joint i (a position in q) is continuous.
  bool is_continuous(int32_t i) const {
    return joints_[active_joints_[static_cast<size_t>(i)]].type == JointType::kContinuous;
  }
  /// The end of the motion from q0 towards q1 as every motion query and planner moves: q1 itself for
  /// every joint but the continuous ones, whose value becomes q0 + ShortestTurn(q1 - q0) (the short way
  /// round, OMPL's SO(2) convention). A motion from q0 to q1 is the straight segment from q0 to this
  /// end: from -3.1 to 3.1 rad a continuous joint turns 0.083 rad through pi, not 6.2 rad through 0.
  /// Writes num_positions() values into `out` (which may alias q1). Precondition: both sizes match.
  void MotionEnd(std::span<const double> q0, std::span<const double> q1, std::span<double> out) const;

  /// Poses X_WL of every link (in LinkIndex order) at q with the root at X_WB. Limits are not checked.
  [[nodiscard]] Result<std::vector<RigidTransform>> ForwardKinematics(
      std::span<const double> q, const RigidTransform& X_WB = RigidTransform::Identity()) const;
  /// As above, into caller-owned storage: `X_WL` must hold num_links() entries. Allocates nothing, for
  /// the hot paths that pose the robot at every configuration they check (scene queries, benchmarks).
  [[nodiscard]] Status ForwardKinematics(std::span<const double> q, std::span<RigidTransform> X_WL,
                                         const RigidTransform& X_WB = RigidTransform::Identity()) const;

  /// ForwardKinematics of the links some active (or mimic) joint moves only: X_WL's other entries, which
  /// do not depend on q, are read and kept, and must hold what ForwardKinematics gave them at the same
  /// X_WB. The moved links' poses are ForwardKinematics' bit for bit; errors as ForwardKinematics'.
  [[nodiscard]] Status ForwardKinematicsMoving(std::span<const double> q, std::span<RigidTransform> X_WL) const;

  /// The linear Jacobian of a point fixed to link k, at world position p_W, given the link poses X_WL
  /// at the configuration (ForwardKinematics): column j of `J` (3 x num_positions(), column-major, so
  /// J[3 j + i] is coordinate i) is d p_W / d q_j, the point's velocity per unit rate of active joint j
  /// (revolute: axis_W x (p_W - o_W) about the joint's axis through its origin o_W; prismatic: axis_W),
  /// mimic joints adding their multiplier's share to the joint they follow. Columns of joints that do
  /// not move link k are zero. Preconditions: X_WL holds num_links() poses, J 3 num_positions() values.
  void PointJacobian(LinkIndex k, const Vec3& p_W, std::span<const RigidTransform> X_WL, std::span<double> J) const;
  /// Adds J^T v_W to g, J being PointJacobian(k, p_W, X_WL): the gradient with respect to q of v_W . p for
  /// the point p fixed to link k (a distance's gradient from its direction and witness points), without
  /// forming J. Preconditions as PointJacobian's, g of num_positions() values.
  void AddPointGradient(LinkIndex k, const Vec3& p_W, const Vec3& v_W, std::span<const RigidTransform> X_WL,
                        std::span<double> g) const;
  /// PointJacobian and the link's angular velocity together: column j of `J` (6 x num_positions(),
  /// column-major, J[6 j + i]) holds the point's velocity in rows 0-2 and link k's angular velocity in
  /// rows 3-5 (axis_W for revolute and continuous joints, 0 for prismatic ones) per unit rate of active
  /// joint j. Preconditions as PointJacobian's, J of 6 num_positions() values.
  void FrameJacobian(LinkIndex k, const Vec3& p_W, std::span<const RigidTransform> X_WL, std::span<double> J) const;

  /// Whether the pair (a, b) is excluded from collision checking by default: SRDF disabled pairs, links
  /// joined by a joint (parent and child), links rigidly connected through fixed joints, and a == b.
  /// Symmetric. Precondition: valid indices.
  bool AllowedCollision(LinkIndex a, LinkIndex b) const {
    return allowed_[static_cast<size_t>(a) * links_.size() + static_cast<size_t>(b)] != 0;
  }
  /// By name; NotFound naming an unknown link.
  [[nodiscard]] Result<bool> AllowedCollision(std::string_view a, std::string_view b) const;
  /// Why (a, b) is allowed: the first that applies of same link, adjacent, rigid, SRDF; kNone when the
  /// pair is checked. Symmetric. Precondition: valid indices.
  AllowedReason AllowedPairReason(LinkIndex a, LinkIndex b) const {
    return static_cast<AllowedReason>(allowed_[static_cast<size_t>(a) * links_.size() + static_cast<size_t>(b)]);
  }
  /// The reason attribute of the SRDF <disable_collisions> that allowed (a, b) ("Never", "Adjacent",
  /// "Default", ... as written; "" when it gave none or the pair is not an SRDF pair).
  std::string SrdfReason(LinkIndex a, LinkIndex b) const;

  /// Upper bound (m) on the path length of every point of link k's collision geometry along the straight
  /// joint-space segment q0 -> q1 (any finite q0, q1; limits not required). Sum over the joints j moving k
  /// of |dq_j| * lever_kj (revolute, continuous) or |dq_j| (prismatic), mimics scaled by |multiplier|.
  /// Preconditions: valid k; q0, q1 of size num_positions(). Allocates nothing.
  double MotionBound(LinkIndex k, std::span<const double> q0, std::span<const double> q1) const;
  /// As above for any point within `reach` (m) of link k's origin instead of k's geometry (an object
  /// the link carries): every revolute lever grows by `reach`, which bounds the distance from the last
  /// joint's axis (through the origin) and adds to the chain's reach for the joints before it.
  double MotionBound(LinkIndex k, std::span<const double> q0, std::span<const double> q1, double reach) const;
 private:
  friend class RobotMotionAccess;  // the motion terms' readers (src/robot/robot_motion.h)
  // One moving joint on the path from the root to a link, for MotionBound.
  struct MotionTerm {
    JointIndex joint = -1;
    int32_t source = -1;       // entry of q driving the joint
    double multiplier = 1.0;   // joint value = multiplier * q[source] + offset
    double offset = 0.0;
    bool prismatic = false;
    double lever = 0.0;        // revolute: constant part of the lever radius
  };

  RobotModel() = default;
  // Orders, indexes and validates the tree, applies the SRDF, and precomputes the allowed set and the
  // motion terms. Called once by the loader after links_ and joints_ are filled in document order;
  // mimic_leader[j] is the document index of the joint j mimics, or -1.
  [[nodiscard]] Status Finalize(const std::vector<JointIndex>& mimic_leader, const Interrupt& stop = {});
  Status ApplySrdf();
  [[nodiscard]] Status ComputeMotionTerms(const Interrupt& stop);

  std::string name_;
  std::vector<Link> links_;
  std::vector<Joint> joints_;
  std::vector<JointIndex> active_joints_;
  std::vector<uint8_t> link_moves_;        // per link: LinkMoves
  std::vector<JointIndex> moving_joints_;  // joints whose child link moves, in order
  std::vector<std::string> active_joint_names_;
  std::vector<double> lower_limits_;
  std::vector<double> upper_limits_;
  std::vector<int32_t> continuous_indices_;     // positions in q of the continuous joints
  std::unordered_map<std::string, LinkIndex> link_by_name_;
  std::unordered_map<std::string, JointIndex> joint_by_name_;
  Srdf srdf_;
  std::vector<std::string> warnings_;
  std::vector<uint8_t> allowed_;                  // num_links x num_links, row-major: AllowedReason codes
  std::map<std::pair<LinkIndex, LinkIndex>, std::string> srdf_reasons_;  // (min, max) -> reason attribute
  std::vector<std::vector<MotionTerm>> motion_terms_;  // per link, root to tip
};

}  // namespace proximity::core
