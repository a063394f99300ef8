#pragma once
/// @file
/// A scene: a robot and a world of objects, built once into an immutable object that answers CLEAR(q)
/// (is configuration q free of world and self collision?) from any number of threads.
///
/// Geometry semantics (geometry.h): meshes are surfaces and primitives are solids. A link mesh touching
/// or inside a world box collides; a box wholly inside a link mesh that touches none of its triangles
/// does not. A point cloud is the union of its points' balls: a link collides with it when some ball
/// touches the link's surface or solid.

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/geometry.h"
#include "proximity/core/scene/self_clearance_maps.h"
#include "proximity/core/base/types.h"

namespace proximity::core {

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

/// A part of an attached object, posed in the frame of the link that carries it.
struct AttachedPart {
  Geometry geometry;
  RigidTransform X_LG;
};

/// An object carried by a robot link (a tool, a grasped part): it moves with the link and is checked
/// against the world and the other links like a part of the robot.
struct AttachedObject {
  std::string id;    ///< Unique among world objects, attached objects and link names.
  std::string link;  ///< The carrying link.
  std::vector<AttachedPart> parts;
  /// Links the object may touch (a gripper's fingers): never checked against it. The carrying link is
  /// always among them.
  std::vector<std::string> touch_links;
};

/// When the self-clearance maps of a scene's robot are filled. A map holds certified lower bounds on the
/// distance of two link geometries that one or two revolute joints move relative to each other (a
/// wrist's links), on a grid over those joints; CLEAR and LINK decide such pairs with one look-up where
/// a cell is filled, and fill the cells they meet otherwise (a few distance walks each, paid by that
/// query). The maps belong to the robot model and serve every scene built on it; each is filled once.
enum class SelfClearanceFill {
  /// By one background thread at the lowest scheduling priority, as soon as the scene is built: queries
  /// stop paying for cells once it is done (from milliseconds for most arms to seconds for large maps).
  kBackground,
  /// Before Build returns (the description's `stop` ends it early; the rest fills as kBackground).
  kAtBuild,
  /// Only by the queries that meet the cells.
  kOnUse,
};

/// Blocks until the background thread has filled every map queued so far (or dropped those of scenes
/// destroyed meanwhile). For benchmarks and tests that measure queries on filled maps.
void AwaitSelfClearanceFill();

/// What a scene is built from.
struct SceneDescription {
  std::shared_ptr<const RobotModel> robot;
  RigidTransform X_WB;  ///< The robot's root link in the world.
  std::vector<WorldObject> objects;
  std::vector<AttachedObject> attached;
  /// Pairs that are never checked, by name: two link names, a link name and an object id, or an
  /// attached object id and either, in any order. Added to the robot's own allowed-collision set (SRDF,
  /// adjacent links).
  std::vector<std::pair<std::string, std::string>> allowed_pairs;
  /// Padding (metres, >= 0) that inflates every link and attached object: a link collides with a world
  /// object when their distance is below its padding, and with another link when below the sum of both
  /// paddings. `padding` overrides the default for the links or attached objects it names.
  double default_padding = 0.0;
  std::vector<std::pair<std::string, double>> padding;
  /// Caps on the build (self pairs, estimated memory), checked before the pairs are made. Not part of
  /// the scene's content: Description() leaves them at their defaults.
  BuildLimits limits;
  /// Asked while robot parts are paired and self-clearance maps made: Build ends with a kStopped error.
  Interrupt stop;
  /// When the robot's self-clearance maps are filled. Not part of the scene's content.
  SelfClearanceFill self_clearance_fill = SelfClearanceFill::kBackground;
  /// The self-clearance maps to make, fill and read, shared with the other scenes given the same object
  /// (SelfClearanceMaps::For(robot) once per robot model); null: the scene makes its own. Must be for
  /// `robot`. Not part of the scene's content.
  std::shared_ptr<SelfClearanceMaps> self_clearance_maps;
};

/// A change to a scene's world; Scene::Update applies it to make a new scene (a new version).
struct WorldUpdate {
  std::vector<WorldObject> add;      ///< New objects; their ids must be new.
  std::vector<WorldObject> replace;  ///< Existing ids with new parts or poses (a move).
  std::vector<std::string> remove;   ///< Existing ids; allowed pairs naming them are dropped.
};

/// A pair of scene geometries: the first contact CLEAR found, or the pair a distance names.
struct StateContact {
  bool self = false;          ///< Robot against robot (true) or robot against a world object (false).
  int32_t link = -1;          ///< LinkIndex of the robot link (the carrying link for an attached object).
  int32_t other_link = -1;    ///< self: the other LinkIndex.
  int32_t object = -1;        ///< world: index into the scene's objects.
  int32_t attached = -1;      ///< The robot side is this attached object (index into attached()), or -1.
  int32_t other_attached = -1;  ///< self: the other side is this attached object, or -1.
  std::string Describe(const class Scene& scene) const;  ///< "panda_hand x object 'Cube3'".
  /// The robot side's name: the link, or the attached object's id.
  std::string Name(const class Scene& scene) const;
  /// The other side's name: the other link or attached object (self), or the world object's id.
  std::string OtherName(const class Scene& scene) const;
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
  /// Discrete mode: the largest joint-space step between samples (> 0, finite); the segment's length
  /// over it may not exceed kMaxMotionSteps.
  double resolution = 0.01;
  /// Discrete mode: visit the same states coarse to fine (the ends, then midpoints, then quarter points,
  /// ...) instead of in order from q0. The answer is the same and a collision is met after fewer states,
  /// but a colliding segment then reports t_free = 0 (no sampled prefix is known).
  bool coarse_to_fine = false;
  /// Discrete mode: false leaves q0 and q1 out, for a caller that has checked both as states already (a
  /// planner joining two validated vertices): only the states strictly between are checked.
  bool check_ends = true;
  /// Certified mode: when the segment collides, narrow [t_free, t_collide] to 1/1024 of the segment.
  /// A caller that only needs free or not (a planner growing a tree) turns this off: the check then
  /// stops at the first colliding state it finds, and t_free is only what was certified by then.
  bool narrow_collision = true;
  /// Certified mode: before certifying, sample states at most this far apart (joint-space norm) with
  /// CLEAR, coarse to fine, and stop at the first that collides (most colliding segments end
  /// there, at the cost of a few CLEARs). 0 turns the pre-pass off.
  double prepass_resolution = 0.0;
  /// Both modes: the distance (m) every pair must keep beyond its padding, as for CheckState; closer
  /// counts as a collision (certified: anywhere on the segment). A planner's shortcuts keep a few
  /// millimetres so that certifying them is cheap. Must be finite and >= 0.
  double clearance = 0.0;
  /// Both modes: `clearance` binds robot-world pairs only; pairs of robot parts need only keep their
  /// padding. Some arms hold links millimetres apart by design (a flange in its forearm's fork), where a
  /// clearance between robot parts would reject every state.
  bool clearance_world_only = false;
  /// Asked between samples (and, for CheckPath, between segments); when it says stop the check ends
  /// with MotionResult::stopped (or PathResult::stopped) and answers not free.
  Interrupt stop;
};

/// The answer to LINK(q0, q1).
struct MotionResult {
  bool free = false;
  /// Not free: [0, t_free] is known free (certified, or sampled in discrete mode) and the state at
  /// t_collide (in [0, 1] along q0 -> q1) collides, with `contact` there. Certified mode: `free` is the
  /// same whatever ran before; where in the segment a contact is bracketed, and the work counts, may
  /// differ with what the robot model's self-clearance maps have settled (their cells certify some
  /// pairs along a segment without the walk), always within the guarantee above.
  double t_free = 0.0;
  double t_collide = -1.0;
  StateContact contact;
  /// Certified mode only: the walk reached its smallest segment without deciding (the robot grazes an
  /// obstacle closer than rounding can separate); the answer is then "not free", never a guess of free.
  bool undecided = false;
  /// The request's `stop` ended the check before it decided: not free, and nothing beyond t_free is known.
  bool stopped = false;
  int64_t states = 0;             ///< Configurations whose link poses were computed.
  int64_t distance_queries = 0;   ///< Exact distance lower bounds computed.
  QueryStats stats;
};

/// Options for Scene::ComputeDistance. Budgets as in mesh_query.h's DistanceRequest.
struct SceneDistanceRequest {
  double rel_err = 0.0;  ///< Relative error budget on the clearance.
  double abs_err = 0.0;  ///< Absolute error budget, metres.
  /// The query may stop once it proves the clearance is at least this (metres).
  double max_distance = std::numeric_limits<double>::infinity();
  bool world = true;      ///< Include robot-world pairs.
  bool self = true;       ///< Include robot-robot pairs.
  bool per_pair = false;  ///< Also report every checked pair's interval (each to the same budget).
  /// Asked between pairs; when it says stop the query ends with SceneDistanceResult::stopped.
  Interrupt stop;
};

/// One pair's clearance interval, with points on each side (world frame) realising `upper`.
struct PairDistance {
  StateContact pair;
  double lower = 0.0;
  double upper = std::numeric_limits<double>::infinity();
  Vec3 p_W_robot = Vec3::Zero();
  Vec3 p_W_other = Vec3::Zero();
};

/// The answer to distance(q): the minimum clearance over the checked pairs as a certified interval
/// lower_bound <= clearance <= upper_bound, meeting the request's budget as mesh distances do. Clearance
/// is the distance between padded geometries (distance minus the pair's padding, never below 0); 0
/// means the state collides. The witness pair and points realise upper_bound (points lie on the
/// unpadded surfaces).
struct SceneDistanceResult {
  double lower_bound = 0.0;
  double upper_bound = std::numeric_limits<double>::infinity();
  bool beyond_max_distance = false;  ///< lower_bound >= max_distance; only the interval holds.
  /// The request's `stop` ended the query early: lower_bound is 0 and upper_bound what was seen so far.
  bool stopped = false;
  bool within_limits = true;
  PairDistance nearest;              ///< The witness pair (nearest.pair.link < 0 when no pair exists).
  std::vector<PairDistance> pairs;   ///< per_pair: every pair not excluded, in scene order.
  int64_t pairs_tested = 0;          ///< Pairs that reached an exact query.
  QueryStats stats;
};

/// Options for the continuous checks (time of first contact).
struct ContinuousRequest {
  /// Contact is declared where the clearance falls to this (metres, > 0): conservative advancement
  /// stops within `tolerance` of touching.
  double tolerance = 1e-5;
  int32_t max_iterations = 100000;  ///< Advancement steps before giving up (then `undecided`).
  /// Asked between advancement steps; when it says stop the check ends with ContinuousResult::stopped.
  Interrupt stop;
};

/// The answer to a continuous check along a motion parameterised by t in [0, 1].
struct ContinuousResult {
  /// The motion comes within `tolerance` of contact. [0, t_contact) is certified free of contact; at
  /// t_contact the clearance is at most the tolerance (upper bound `clearance`).
  bool contact = false;
  double t_contact = 1.0;
  double clearance = 0.0;   ///< Clearance upper bound at t_contact when contact (metres).
  bool penetrating = false; ///< The exact state test at t_contact collides (touching counts).
  bool undecided = false;   ///< max_iterations reached; [0, t_contact) is still certified free.
  /// The request's `stop` ended the check: `undecided` is set too, and only [0, t_contact) is
  /// certified free.
  bool stopped = false;
  PairDistance nearest;     ///< The pair that came within tolerance, with points at t_contact.
  int32_t iterations = 0;
  int64_t distance_queries = 0;
  QueryStats stats;
};

/// The answer to a path check: waypoints joined by straight joint-space segments.
struct PathResult {
  bool free = false;
  int32_t segment = -1;   ///< First segment (waypoint i -> i+1) that is not free, or -1.
  MotionResult motion;    ///< That segment's answer (t in [0, 1] along it), or the last segment's.
  int32_t segments_checked = 0;  ///< Segments decided (all of them, up to the first not free).
  bool stopped = false;   ///< The request's `stop` ended the check early; `free` is then false.
  int64_t states = 0;             ///< Summed over the segments checked.
  int64_t distance_queries = 0;
  QueryStats stats;
};

/// A pair of posed scene geometries, the robot side first (Scene::CollidingParts, Scene::NamedParts).
/// The geometry pointers point into the scene and stay valid while it lives.
struct PosedPartPair {
  StateContact pair;                   ///< The named pair the two geometries belong to.
  const Geometry* robot = nullptr;     ///< The robot side's geometry (a link's or an attached object's).
  RigidTransform X_WR;                 ///< Its pose in the world at the state.
  const Geometry* other = nullptr;     ///< The other side's geometry (a link's, an attached or a world object's).
  RigidTransform X_WO;
  double padding = 0.0;                ///< Metres: the pair's total padding (both sides' paddings).
  bool allowed = false;                ///< The pair is excluded from checking (allowed-collision set).
};

/// Options for Scene::CollidingParts.
struct CollidingPartsRequest {
  int32_t max_pairs = 256;  ///< At most this many geometry pairs (>= 1); CollidingPartsResult::truncated beyond.
  bool world = true;        ///< Include robot-world pairs.
  bool self = true;         ///< Include robot-robot pairs.
  /// Asked between pairs; when it says stop the query ends with CollidingPartsResult::stopped.
  Interrupt stop;
};

/// Every colliding geometry pair at a state.
struct CollidingPartsResult {
  std::vector<PosedPartPair> pairs;  ///< World pairs first, then self pairs, in scene order.
  bool truncated = false;            ///< More pairs collide than max_pairs.
  bool stopped = false;              ///< The request's `stop` ended the query; `pairs` is a prefix.
  bool within_limits = true;
  int64_t pairs_tested = 0;
  QueryStats stats;
};

/// Caller-owned scratch for scene queries (link poses, geometry bounds, warm starts); one per thread.
/// Queries take it by pointer: it is state the caller keeps between calls, not an output. Its buffers
/// are made on first use and kept; a moved-from cache starts empty again.
class SceneCache {
 public:
  SceneCache();
  ~SceneCache();
  SceneCache(SceneCache&& other) noexcept;
  SceneCache& operator=(SceneCache&& other) noexcept;
  /// The pose in the world of each link (LinkIndex order) at the state the last query posed; empty
  /// before the first: for Jacobians (RobotModel::PointJacobian) at the state a query was answered at.
  std::span<const RigidTransform> link_poses() const;
  /// What the cache holds (defined inside the core).
  struct Data;

 private:
  friend class Scene;
  friend class SceneCacheAccess;  // the core's own queries (src/scene/scene_impl.h)
  Data* data();  // made on first use
  std::unique_ptr<Data> data_;
};

/// A robot in a world, immutable once built.
class Scene {
 public:
  /// Validates the description (robot present, unique object ids, shapes of positive size, finite
  /// poses, every part and the robot's geometry within kWorldExtent of the origin) and builds the scene.
  /// Errors name the problem. Allowed pairs naming unknown things are accepted and ignored, with a
  /// warning (warnings()).
  [[nodiscard]] static Result<std::shared_ptr<const Scene>> Build(SceneDescription description);

  const RobotModel& robot() const;
  const std::shared_ptr<const RobotModel>& robot_ptr() const;
  /// The self-clearance maps this scene reads (its description's, or its own).
  const std::shared_ptr<SelfClearanceMaps>& self_clearance_maps() const;
  const std::vector<WorldObject>& objects() const;
  const RigidTransform& X_WB() const;

  /// CLEAR(q): whether configuration q (one value per active joint, in active order) is free of world
  /// and self collision, with the first contact found otherwise. With a `clearance` (m) every pair must
  /// also stay that far apart beyond its padding: closer counts as a contact. Errors for a wrong size,
  /// a value that is not finite or beyond kMaxJointValue, and a clearance that is negative, not finite
  /// or beyond kWorldExtent.
  [[nodiscard]] Result<StateResult> CheckState(std::span<const double> q, SceneCache* cache,
                                               double clearance = 0.0) const;

  /// CLEAR over many configurations at once: `qs` holds out.size() configurations of dof() values each,
  /// row after row, and out[i] receives configuration i's answer, the one CheckState gives (the same
  /// free/not free and first contact; the work counts are the batch's). Configurations go through
  /// forward kinematics, part poses and bounds a block at a time across SIMD lanes (AVX-512, AVX2 or
  /// the x86-64 baseline, whichever the CPU runs), the broad phase once per block, and the exact tests
  /// only for the pairs whose boxes meet. Every configuration is validated before any is checked:
  /// errors as CheckState, naming the configuration's index, and for qs.size() != out.size() * dof().
  [[nodiscard]] Status CheckStates(std::span<const double> qs, std::span<StateResult> out, SceneCache* cache,
                                   double clearance = 0.0) const;

  /// LINK(q0, q1): whether the straight joint-space segment q0 -> q1 is free, certified or sampled as
  /// `request` says. Continuous joints turn the short way (RobotModel::MotionEnd), in every motion query.
  /// Errors for wrong sizes, values that are not finite or beyond kMaxJointValue, and a resolution that
  /// is not finite and > 0 or would take more than kMaxMotionSteps samples.
  [[nodiscard]] Result<MotionResult> CheckMotion(std::span<const double> q0, std::span<const double> q1,
                                                 const MotionRequest& request, SceneCache* cache) const;

  /// Upper bound (m) on how far any point of any robot part (link geometry or attached object) can be
  /// from where it is at q when each entry of q changes by at most |dq[i]| (prismatic joints within
  /// their limits; revolute and continuous joints anywhere): the sum over the joints moving the part of
  /// |dq| times the joint's worst lever over the limits. Bounds the gap between a certified segment and
  /// a curve that stays within dq of it (a corner blend's arc and its chords). Infinite when a part's
  /// prismatic joint has unbounded limits. Precondition: dq.size() == dof().
  double RobotDisplacementBound(std::span<const double> dq) const;

  /// distance(q): the minimum clearance between the robot and the world and between robot parts, as a
  /// certified interval with its witness pair (see SceneDistanceResult). Errors as CheckState, and for
  /// a bad budget.
  [[nodiscard]] Result<SceneDistanceResult> ComputeDistance(std::span<const double> q,
                                                            const SceneDistanceRequest& request,
                                                            SceneCache* cache) const;

  /// Time of first contact along the straight joint-space segment q0 -> q1 (continuous joints the short
  /// way) by conservative advancement on certified distance lower bounds and the robot's motion bounds.
  [[nodiscard]] Result<ContinuousResult> TimeOfFirstContact(std::span<const double> q0, std::span<const double> q1,
                                                            const ContinuousRequest& request,
                                                            SceneCache* cache) const;

  /// Time of first contact of a free-flying rigid body (`body`, pose X0 at t = 0 to X1 at t = 1,
  /// translation linear and rotation by slerp) against the world objects; the robot is ignored.
  [[nodiscard]] Result<ContinuousResult> TimeOfFirstContact(const Geometry& body, const RigidTransform& X0,
                                                            const RigidTransform& X1,
                                                            const ContinuousRequest& request) const;

  /// Whether every self-clearance map of the scene's link pairs is filled ahead of the queries
  /// (SceneDescription::self_clearance_fill); true for a scene without maps. For tests and diagnostics.
  bool SelfClearanceFilled() const;
  /// Checks a path: `waypoints` holds n configurations (n >= 1) of dof() values each, row after row;
  /// segments are checked in order and the first one that is not free is reported. request.stop is
  /// asked before each segment and inside each (a cancelled call, an expired deadline) and ends the
  /// check with PathResult::stopped.
  [[nodiscard]] Result<PathResult> CheckPath(std::span<const double> waypoints, const MotionRequest& request,
                                             SceneCache* cache) const;

  /// Every geometry pair that collides at q by CheckState's test (padding counted, allowed pairs
  /// skipped), not only the first: CLEAR's broad phase and exact tests, run to the end. Errors as
  /// CheckState, and for max_pairs < 1.
  [[nodiscard]] Result<CollidingPartsResult> CollidingParts(std::span<const double> q,
                                                            const CollidingPartsRequest& request,
                                                            SceneCache* cache) const;

  /// Every geometry pair between the two things named (each a link name, an attached object id or a
  /// world object id), posed at q, whether or not the scene checks the pair (PosedPartPair::allowed).
  /// A world object named first is swapped to the second place. Errors (kInvalidArgument) for an unknown
  /// name (naming `field_a` or `field_b`), two world objects, the same thing twice, a thing without
  /// geometry, and as CheckState for q.
  [[nodiscard]] Result<std::vector<PosedPartPair>> NamedParts(std::string_view a, std::string_view b,
                                                              std::span<const double> q, SceneCache* cache,
                                                              std::string_view field_a = "a",
                                                              std::string_view field_b = "b") const;

  /// A new scene with the world changed as `update` says and everything else (robot, attached
  /// objects, allowed pairs, padding) kept; this scene is untouched. version() counts up by one.
  [[nodiscard]] Result<std::shared_ptr<const Scene>> Update(const WorldUpdate& update) const;

  const std::vector<AttachedObject>& attached() const;
  /// Everything the scene was built from, to rebuild or modify it.
  SceneDescription Description() const;
  /// 0 for a built scene; +1 per Update.
  uint64_t version() const;
  /// Unique among the scenes of this process, never reused: what per-scene state (warm starts,
  /// prebuilt polyhedra) is stamped with to recognise its scene.
  uint64_t serial() const;
  /// What Build accepted but the user should hear about, one sentence each: allowed pairs naming
  /// something that is neither a link, an attached object nor a world object (accepted and ignored, as
  /// MoveIt does). Empty for most scenes.
  const std::vector<std::string>& warnings() const;
  /// The allowed pairs the description gave (SceneDescription::allowed_pairs), as given.
  const std::vector<std::pair<std::string, std::string>>& allowed_pairs() const;
  int32_t dof() const;

 protected:
  // Scenes are made by Build and Update only: each is an internal::SceneImpl (src/scene/scene_impl.h),
  // whose data and steps this class's methods reach without a virtual call.
  Scene() = default;
  ~Scene() = default;
  Scene(const Scene&) = delete;
  Scene& operator=(const Scene&) = delete;
};

/// The instruction set Scene::CheckStates poses its blocks of configurations with on this CPU: "avx512",
/// "avx2" or "baseline" (x86-64 without either). The environment variable PROXIMITY_SIMD=avx2 or
/// =baseline lowers it (for comparisons; answers are the same).
std::string_view BatchInstructionSet();

}  // namespace proximity::core
