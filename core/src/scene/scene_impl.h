#pragma once
/// @file
/// What a Scene is inside: its data (robot parts, world parts and their broad-phase tree, self pairs,
/// allowed-collision matrices, the lane plan) and the steps of its build and queries, which the scene's
/// source files define. Every Scene is a SceneImpl (Build and Update make them); Scene's methods reach
/// it by a static cast, so the installed header shows no internals and the queries pay no indirection.
/// A SceneCache's buffers are a SceneCacheData, made on the cache's first use.

#include <bit>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "scene/scene_internal.h"
#include "robot/robot_motion.h"

namespace proximity::core {

/// Options for SceneImpl::NearbyParts (the tracker's broad phase).
struct NearbyPartsRequest {
  /// Metres, finite, in [0, kWorldExtent]: pairs whose padded clearance may be at most this are kept.
  double horizon = 0.1;
  bool world = true;  ///< Include robot-world pairs.
  bool self = true;   ///< Include robot-robot pairs.
  int32_t max_pairs = 1 << 16;  ///< At most this many pairs (>= 1); NearbyPartsResult::truncated beyond.
};

/// A geometry pair the broad phase keeps, with its cheap bound and stable indices. Its poses point into
/// the SceneCache the query posed (valid until that cache is posed again) and into the scene.
struct NearbyPart {
  StateContact pair;                    ///< The named pair the two geometries belong to.
  const Geometry* robot = nullptr;      ///< The robot side's geometry (a link's or an attached object's).
  const Geometry* other = nullptr;      ///< The other side's (a link's, an attached or a world object's).
  const RigidTransform* X_WR = nullptr;  ///< The robot side's pose in the world at the state.
  const RigidTransform* X_WO = nullptr;  ///< The other side's.
  double padding = 0.0;                 ///< Metres: both sides' paddings.
  /// The robot side's index among the scene's robot geometries (stable for the scene's life).
  int32_t robot_part = -1;
  /// The other side: the world part's index among the scene's world parts, or (self) the other robot
  /// geometry's index. Together with `pair.self` and robot_part, a key that names the pair in the scene.
  int32_t other_part = -1;
  /// A certified lower bound on the pair's padded clearance (m): the distance between their world boxes
  /// grown by the padding, never more than the truth.
  double box_clearance = 0.0;

  /// The pair with its poses copied (while the cache that posed it is unchanged).
  PosedPartPair Posed() const { return {pair, robot, *X_WR, other, *X_WO, padding, false}; }
};

/// The pairs near each other at a state (SceneImpl::NearbyParts).
struct NearbyPartsResult {
  std::vector<NearbyPart> pairs;  ///< World pairs first (by robot geometry), then self pairs, in scene order.
  bool truncated = false;         ///< More pairs than max_pairs are near.
  bool within_limits = true;
  int32_t num_robot_parts = 0;    ///< Robot geometries in the scene (bounds on the keys above).
  int32_t num_world_parts = 0;
};

/// A SceneCache's buffers for the core's queries that take a SceneCache but are not Scene's (the tracker's).
class SceneCacheAccess {
 public:
  static SceneCache::Data* Data(SceneCache* cache) { return cache->data(); }
};

namespace internal {
struct SelfClearanceMap;
struct LanePlan;
struct LanePoses;

// What filling a self-clearance map's cell works in: the grid point's configuration and link poses, and
// GJK's warm start, kept from one fill to the next of the same map (a plan moves through neighbouring
// cells). Keyed by the map's serial: a map freed and another made at the same address must not inherit
// a simplex on other shapes. A query's is in its SceneCache; the background fill keeps its own.
struct MapFillScratch {
  uint64_t map = 0;
  GjkCache gjk;
  std::vector<double> q;
  std::vector<RigidTransform> X_WL;
};
}  // namespace internal

/// What a SceneCache holds: buffers the queries reuse and warm starts they learn.
struct SceneCache::Data {
  std::vector<RigidTransform> X_WL;  ///< Per link.
  std::vector<RigidTransform> X_WG;  ///< Per robot geometry.
  std::vector<Aabb> part_bounds;     ///< Per robot geometry, in the world.
  std::vector<Obb> part_boxes;       ///< Per robot geometry: its bounding box in the world, grown by its padding.
  /// GJK warm starts of the hull tests (Geometry::hull), one per pair of a robot geometry with a world
  /// part or another robot geometry, each stamped with the serial number of the scene it belongs to: an
  /// entry is reset when first used with another scene (moving between scenes costs nothing up front).
  struct HullWarmStart {
    uint64_t scene = 0;
    GjkCache gjk;
  };
  std::vector<HullWarmStart> hull_caches;
  /// CheckStates' poses of a block of configurations (kept to reuse its buffers).
  std::shared_ptr<internal::LanePoses> lanes;
  /// Where the queries fill self-clearance map cells.
  internal::MapFillScratch map_fill;
  /// The self pairs a state's boxes may meet (SceneImpl::SelfCandidates).
  std::vector<int32_t> self_candidates;
  /// The scene (serial number) and margin the robot parts above were last posed for by PoseParts: static
  /// parts (SceneImpl::part_static_) sit where they did then.
  uint64_t posed_scene = 0;
  double posed_margin = -1.0;
  /// The scene (serial number) whose forward kinematics last filled every entry of X_WL: the links no
  /// active joint moves sit where they did then (PoseParts poses only the others). Whoever writes X_WL
  /// in full sets it.
  uint64_t links_scene = 0;
  /// SceneImpl::NearbyParts' pairs within its horizon plus a margin at the state the list was made (a
  /// Verlet list): while no robot geometry's box has moved more than half the margin since, every pair
  /// near now is in it, and only the listed pairs' boxes are measured.
  struct NearbyList {
    uint64_t scene = 0;  ///< Serial number of the scene it lists; 0: none.
    double horizon = -1.0, margin = 0.0;
    bool world = false, self = false;
    std::vector<Aabb> boxes;  ///< Each robot geometry's box, grown by its padding, when the list was made.
    std::vector<std::pair<int32_t, int32_t>> world_pairs;  ///< (robot geometry, world part), in scan order.
    std::vector<int32_t> self_pairs;  ///< Indices into the scene's self pairs, in their order.
  } nearby_list;
};

namespace internal {

/// The buffers and warm starts of a SceneCache, by the name the scene's files use.
using SceneCacheData = SceneCache::Data;

class SceneImpl final : public Scene {
 public:
  // Scene's queries (scene.h documents them), on the cache's data; Scene's accessors read the members
  // below directly (scene.cc).
  [[nodiscard]] Result<StateResult> CheckState(std::span<const double> q, SceneCacheData* cache,
                                               double clearance = 0.0) const;

  [[nodiscard]] Status CheckStates(std::span<const double> qs, std::span<StateResult> out, SceneCacheData* cache,
                                   double clearance = 0.0) const;

  [[nodiscard]] Result<MotionResult> CheckMotion(std::span<const double> q0, std::span<const double> q1,
                                                 const MotionRequest& request, SceneCacheData* cache) const;

  double RobotDisplacementBound(std::span<const double> dq) const;

  [[nodiscard]] Result<SceneDistanceResult> ComputeDistance(std::span<const double> q,
                                                            const SceneDistanceRequest& request,
                                                            SceneCacheData* cache) const;

  [[nodiscard]] Result<ContinuousResult> TimeOfFirstContact(std::span<const double> q0, std::span<const double> q1,
                                                            const ContinuousRequest& request,
                                                            SceneCacheData* cache) const;

  [[nodiscard]] Result<ContinuousResult> TimeOfFirstContact(const Geometry& body, const RigidTransform& X0,
                                                            const RigidTransform& X1,
                                                            const ContinuousRequest& request) const;

  /// A certified lower bound (m) on the distance between the geometries of two robot links (their first
  /// geometries) at q, from the precomputed self-clearance map of the pair (kept for link pairs that at
  /// most two revolute joints move relative to each other, such as a wrist's, and that the scene checks);
  /// -1 when the pair has none or q lies outside those joints' limits. The bound is the larger of q's
  /// cell's and the one from the distance at the cell's grid point less how far q moves the pair from
  /// it. For tests and diagnostics: CLEAR uses the maps itself. Errors for unknown link names or a wrong
  /// size of q.
  [[nodiscard]] Result<double> SelfClearanceBound(std::string_view link_a, std::string_view link_b,
                                                  std::span<const double> q) const;
  bool SelfClearanceFilled() const;
  /// Whether the self-clearance map of the two links (as above) proves them apart everywhere on the
  /// joint-space segment q0 -> q1, as certified LINK asks it (filling cells within the same budget);
  /// false when it does not or the pair has none. For tests and diagnostics. Errors as above.
  [[nodiscard]] Result<bool> SelfClearAlong(std::string_view link_a, std::string_view link_b,
                                            std::span<const double> q0, std::span<const double> q1) const;


  [[nodiscard]] Result<PathResult> CheckPath(std::span<const double> waypoints, const MotionRequest& request,
                                             SceneCacheData* cache) const;

  [[nodiscard]] Result<CollidingPartsResult> CollidingParts(std::span<const double> q,
                                                            const CollidingPartsRequest& request,
                                                            SceneCacheData* cache) const;

  /// Every checked geometry pair (allowed pairs skipped) whose padded clearance may be within
  /// `request.horizon` at q, by the broad phase alone: world boxes within the horizon of each other
  /// (a superset of the pairs that are; no exact test is made). Leaves the link poses at q in
  /// cache->X_WL, for Jacobians. What a clearance tracker starts each frame from. Errors as CheckState,
  /// and for a horizon that is not finite, negative or beyond kWorldExtent, or max_pairs < 1.
  [[nodiscard]] Result<NearbyPartsResult> NearbyParts(std::span<const double> q, const NearbyPartsRequest& request,
                                                      SceneCacheData* cache) const;
  /// The same into `out`, whose buffers are reused (a tracker's every frame allocates nothing).
  [[nodiscard]] Status NearbyParts(std::span<const double> q, const NearbyPartsRequest& request, SceneCacheData* cache,
                                   NearbyPartsResult* out) const;
  /// The scene's robot geometries (links' and attached objects'), by NearbyPart::robot_part.
  int32_t num_robot_parts() const { return static_cast<int32_t>(robot_parts_.size()); }
  const Geometry& robot_part_geometry(int32_t i) const { return robot_parts_[static_cast<size_t>(i)].geometry; }
  /// The world objects' parts, by NearbyPart::other_part (world pairs).
  int32_t num_world_parts() const { return static_cast<int32_t>(world_parts_.size()); }
  const Geometry& world_part_geometry(int32_t k) const {
    const WorldPart& w = world_parts_[static_cast<size_t>(k)];
    return objects_[static_cast<size_t>(w.object)].parts[static_cast<size_t>(w.part)].geometry;
  }
  /// The padding of a link (metres).
  double LinkPadding(int32_t link) const { return link_padding_[static_cast<size_t>(link)]; }
  /// Whether the pair (link, object) is excluded from checking.
  bool AllowedLinkObject(int32_t link, int32_t object) const { return AllowedEntityObject(link, object); }
  /// Whether the link pair is excluded from checking (the robot's set plus the scene's pairs).
  bool AllowedLinkLink(int32_t a, int32_t b) const { return AllowedEntities(a, b); }

  [[nodiscard]] Result<std::vector<PosedPartPair>> NamedParts(std::string_view a, std::string_view b,
                                                              std::span<const double> q, SceneCacheData* cache,
                                                              std::string_view field_a = "a",
                                                              std::string_view field_b = "b") const;

  [[nodiscard]] Result<std::shared_ptr<const Scene>> Update(const WorldUpdate& update) const;

  SceneDescription Description() const;

  // Build's and the queries' steps, and the scene's data (the files of src/scene).

  // A robot geometry: link, the geometry and its pose in the link frame, and its bound in its frame.
  // Links and attached objects are the scene's "entities" for the allowed-collision matrix: entity
  // = link index, or num_links + attached index.
  struct RobotPart {
    int32_t link;
    int32_t entity;
    int32_t attached = -1;
    int32_t geometry_index = -1;  ///< Link geometry: its index in the link's geometries; -1 when attached.
    Geometry geometry;
    RigidTransform X_LG;
    Obb local_box;        ///< Bounding box in the geometry frame G.
    Mat3 R_LB;            ///< The box's axes in the link frame (X_LG.R * local_box.R_MB).
    Vec3 p_LBo;           ///< The box's centre in the link frame.
    bool identity_X_LG = false;  ///< The geometry sits at the link frame (X_WG is X_WL).
    double padding = 0.0;
    double reach = 0.0;   ///< Attached: farthest point from the link origin (m), for motion bounds; 0 for
                          ///< link geometry, which the robot's own bounds already cover.
    /// X_WG from the link's pose X_WL.
    RigidTransform GeometryPose(const RigidTransform& X_WL) const { return identity_X_LG ? X_WL : X_WL * X_LG; }
  };
  // A world part with its world bounding box, for the broad phase.
  struct WorldPart {
    int32_t object;
    int32_t part;
    Aabb bounds;
    Obb box;  ///< The part's bounding box in the world (the first box its hierarchy walk tests).
  };
  // Nodes of a binary AABB tree over world parts: leaves hold a range of world_parts_.
  struct BroadNode {
    Aabb bounds;
    int32_t first = 0;  ///< Leaf: first world part. Internal: left child (right = first + 1).
    int32_t count = 0;  ///< Leaf: number of parts; internal: 0.
  };

  [[nodiscard]] static Result<std::shared_ptr<SceneImpl>> Make(SceneDescription description);
  // Make's steps (scene_build.cc): the description's names indexed and checked, the allowed-collision
  // matrices, the robot's parts and the pairs of them CLEAR tests.
  struct Names;
  void AllowEntities(size_t a, size_t b);
  void AllowRobotPairs(const SceneDescription& d, const Names& names);
  void AllowNamedPairs(const std::vector<std::pair<std::string, std::string>>& pairs, const Names& names);
  static RobotPart MakeRobotPart(int32_t link, int32_t entity, int32_t attached, Geometry geometry,
                                 const RigidTransform& X_LG);
  void AddRobotParts(const SceneDescription& d, const std::vector<double>& padding);
  [[nodiscard]] Status PairRobotParts(const BuildLimits& limits, const Interrupt& stop);
  bool AllowedEntities(int32_t a, int32_t b) const {
    return entity_allowed_[static_cast<size_t>(a) * num_entities_ + static_cast<size_t>(b)] != 0;
  }
  bool AllowedEntityObject(int32_t entity, int32_t object) const {
    return entity_object_allowed_[static_cast<size_t>(entity) * objects_.size() + static_cast<size_t>(object)] != 0;
  }
  // Poses and world bounds of every robot part at q, the bounds grown by the part's padding and
  // `margin`; an error status on bad q.
  Status PoseParts(std::span<const double> q, SceneCacheData* cache, double margin = 0.0) const;
  // CheckState on a validated clearance: `clearance` for robot-world pairs, `self_clearance` for pairs of
  // robot parts (each beyond the paddings).
  Result<StateResult> CheckStateWith(std::span<const double> q, double clearance, double self_clearance,
                                     SceneCacheData* cache) const;
  // Two robot parts checked against each other, with the deepest link both hang below: joints above
  // it move both alike and cannot bring them closer.
  struct SelfPair {
    int32_t a, b;
    int32_t ancestor;
    // Link geometry moved relative to each other by at most two revolute joints: the robot model's
    // self-clearance map of the pair (see self_clearance.h), else null.
    const SelfClearanceMap* clearance_map = nullptr;
  };
  static std::unique_ptr<SelfClearanceMap> MakeSelfClearanceMap(const RobotModel& robot, const RobotPart& a,
                                                                         const RobotPart& b, int32_t ancestor);
  // A certified lower bound (m) on the distance between the pair's parts at q from its self-clearance
  // map, filling q's cell as far as deciding against `need` takes (see the definition) in `fill`; -1
  // when the pair has no map or q lies off its grid.
  double SelfPairClearance(const SelfPair& pair, std::span<const double> q, double need, MapFillScratch* fill) const;
  // The same for cell `cell` of the pair's map (SelfPairCell); -1 for cell -1.
  double SelfPairClearanceInCell(const SelfPair& pair, int64_t cell, double need, MapFillScratch* fill) const;
  // The bound CLEAR takes from the pair's map at q, in its cell `cell`: the cell's
  // (SelfPairClearanceInCell, filling as `need` asks) when it exceeds `need`, else the larger of it and
  // the one from the cell's grid point (SelfClearanceMap::NearGridBound); -1 for cell -1.
  double SelfPairMapBound(const SelfPair& pair, int64_t cell, std::span<const double> q, double need,
                          MapFillScratch* fill) const;
  // q's cell in the pair's self-clearance map; -1 when the pair has no map or q lies off its grid.
  static int64_t SelfPairCell(const SelfPair& pair, std::span<const double> q);
  // Fills every cell of the maps of this scene's self pairs that no other fill has claimed (both steps
  // of SelfPairClearance, so that no query pays for a walk), until `stop` says so: maps it could not
  // finish are released for another fill. Returns whether every map is filled.
  bool FillSelfClearanceMaps(const Interrupt& stop) const;
  // Whether some map of this scene's self pairs is neither filled nor being filled.
  bool HasUnclaimedSelfClearanceMaps() const;
  // Whether some map of this scene's self pairs has (equal) or has not (!equal) the fill state `fill`.
  bool AnySelfClearanceMap(int32_t fill, bool equal) const;
  // The same when q's cell is filled already, else -1: never fills.
  double SelfPairClearanceIfKnown(const SelfPair& pair, std::span<const double> q) const;
  // Whether the pair's map proves it keeps more than `padding` apart everywhere on the joint-space
  // segment q0 -> q1: every cell the segment passes through holds a larger bound. Cells not settled
  // yet are filled, up to `fill_budget` of them; false (nothing proven) when the pair has no map, the
  // segment leaves the grid, a cell's bound falls short or the budget runs out.
  bool SelfPairClearAlong(const SelfPair& pair, std::span<const double> q0, std::span<const double> q1,
                          double padding, int fill_budget, MapFillScratch* fill) const;
  // Calls visit(k) for each world part k whose bounds overlap `bounds`, walking the broad-phase tree;
  // stops and returns true as soon as a call does.
  template <class Visit>
  bool VisitWorldParts(const Aabb& bounds, Visit&& visit) const;
  // NearbyParts' list (SceneCacheData::NearbyList) at the robot geometries' boxes posed last in `cache`:
  // the pairs within the request's horizon plus `margin`, at most `cap` of them (false when there are
  // more; the list then holds the first `cap` and is not kept for later states).
  bool ListNearbyParts(const NearbyPartsRequest& request, double margin, size_t cap, SceneCacheData* cache) const;
  // A tree of boxes over `items` (each has .bounds; reordered into the leaves' order), median splits along
  // the longest side, leaves of at most two; and its walk: visit(k) for each item k whose bounds overlap
  // `bounds`, stopping with true as soon as a call returns true.
  template <class Item>
  static void BuildBoxTree(std::vector<Item>* items, std::vector<BroadNode>* nodes);
  template <class Item, class Visit>
  static bool VisitBoxTree(const std::vector<BroadNode>& nodes, const std::vector<Item>& items, const Aabb& bounds,
                           Visit&& visit);
  // The self pairs CLEAR looks at for robot part boxes `bounds` (bounds(i): part i's box in the world,
  // grown by its padding and `grow`), in self_pairs_' order, into `out`: every pair whose two boxes may
  // overlap. Pairs of a part no active joint moves (static: fixed to the robot's base, as the parts of
  // links outside the planned group are) with a moving one are found through a tree of the static
  // parts' boxes, so that a many-link robot planning a few joints does not test every such pair's boxes
  // in every state; the others are listed. False (out untouched) when the robot has no static part with
  // a moving partner: then every pair is a candidate.
  template <class Bounds>
  bool SelfCandidates(Bounds&& bounds, double grow, std::vector<int32_t>* out) const;
  void BuildStaticSelfPhase();
  // The self pair of the two links' first geometries, or null (SelfClearanceBound, SelfClearAlong).
  Result<const SelfPair*> FindSelfPair(std::string_view link_a, std::string_view link_b) const;
  // How many cells of a self-clearance map one LINK may fill (each about one distance walk): a
  // planner's short edges settle their cells and are certified by look-ups from then on; a long edge
  // over cold cells leaves its pairs to the walk.
  static constexpr int kMapFillBudget = 16;
  // Motion bound (m) of robot part i along q0 -> q1, in the frame of link `ancestor` (0: the world).
  double PartMotion(int32_t i, std::span<const double> q0, std::span<const double> q1, int32_t ancestor = 0) const {
    const RobotPart& rp = robot_parts_[i];
    return MotionBoundRelative(*robot_, rp.link, ancestor, q0, q1, rp.reach);
  }
  // Bound (m) on how much the distance between the two parts can shrink along q0 -> q1.
  double SelfPairMotion(const SelfPair& p, std::span<const double> q0, std::span<const double> q1) const {
    return PartMotion(p.a, q0, q1, p.ancestor) + PartMotion(p.b, q0, q1, p.ancestor);
  }
  // Whether two posed geometries collide once inflated by `padding` in total (touching counts).
  // `hull_cache`: the pair's warm start for the hull test, or null.
  static bool PairCollides(const Geometry& a, const RigidTransform& X_a, const Geometry& b,
                           const RigidTransform& X_b, double padding, QueryStats* stats, GjkCache* hull_cache);
  StateContact WorldContact(int32_t part, int32_t object) const {
    return {false, robot_parts_[part].link, -1, object, robot_parts_[part].attached, -1};
  }
  StateContact SelfContact(int32_t i, int32_t j) const {
    return {true, robot_parts_[i].link, robot_parts_[j].link, -1, robot_parts_[i].attached, robot_parts_[j].attached};
  }
  const RigidTransform& WorldPartPose(int32_t k) const {
    return objects_[world_parts_[k].object].parts[world_parts_[k].part].X_WG;
  }
  void BuildBroadPhase();
  // ComputeDistance's steps (distance.cc): the candidate pairs with their cheap bounds, and one pair's
  // query to the budget (stopping at `stop`).
  struct DistanceCandidate;
  std::vector<DistanceCandidate> DistanceCandidates(const SceneDistanceRequest& request,
                                                    const SceneCacheData& cache) const;
  PairDistance QueryPair(const DistanceCandidate& c, double stop, const SceneDistanceRequest& request,
                         const SceneCacheData& cache, SceneDistanceResult* result) const;
  Result<MotionResult> CheckMotionDiscrete(std::span<const double> q0, std::span<const double> q1, int64_t steps,
                                           const MotionRequest& request, SceneCacheData* cache) const;
  // The certified walk, continuing from `prepass` (the sampled pre-pass's answer, or an empty result).
  Result<MotionResult> CheckMotionCertified(std::span<const double> q0, std::span<const double> q1, bool narrow,
                                            double clearance, double self_clearance, const Interrupt& stop,
                                            SceneCacheData* cache, MotionResult prepass) const;
  Result<MotionResult> SampleSegment(std::span<const double> q0, std::span<const double> q1, int64_t steps,
                                     bool coarse_to_fine, bool ends, double clearance, double self_clearance,
                                     const Interrupt& stop, SceneCacheData* cache) const;
  // Part `part` against the world, every pair keeping `clearance` beyond the part's padding.
  bool CollideWorld(int32_t part, double clearance, SceneCacheData* cache, StateResult* out) const;
  // One robot-world pair (part i, world part w) or self pair s, posed as given: counted in *out, boxes
  // first, then the exact test; a contact is recorded in *out. CheckState and CheckStates share them.
  bool WorldPairCollides(int32_t i, int32_t w, const RigidTransform& X_WG, const Obb& box, double clearance,
                         SceneCacheData* cache, StateResult* out) const;
  // `cell`: the state's cell in the pair's map (SelfPairCell), whose witness is tested first.
  bool SelfPairCollides(size_t s, int64_t cell, const RigidTransform& X_a, const Obb& box_a, const RigidTransform& X_b,
                        const Obb& box_b, double padding, SceneCacheData* cache, StateResult* out) const;
  // The exact test of the two above, for a pair whose boxes are known to meet (and counted).
  bool WorldPairMeets(int32_t i, int32_t w, const RigidTransform& X_WG, double clearance, SceneCacheData* cache,
                      StateResult* out) const;
  bool SelfPairMeets(size_t s, int64_t cell, const RigidTransform& X_a, const RigidTransform& X_b, double padding,
                     SceneCacheData* cache, StateResult* out) const;
  // Whether the pair's map holds a witness for `cell` (two meshes, no padding) whose triangles meet at
  // these poses: a proven contact.
  bool SelfPairMeetsAtWitness(const SelfPair& pair, int64_t cell, const RigidTransform& X_a, const RigidTransform& X_b,
                              double padding, QueryStats* stats) const;
  // The hull test's warm start for pair `index` (WorldPairCache, SelfPairCache) in `cache`, reset if it
  // last served another scene; null when the scene has too many pairs to keep one each.
  GjkCache* HullCache(SceneCacheData* cache, size_t index) const;
  size_t WorldPairCache(int32_t part, int32_t world_part) const {
    return static_cast<size_t>(part) * world_parts_.size() + static_cast<size_t>(world_part);
  }
  size_t SelfPairCache(size_t self_pair) const { return robot_parts_.size() * world_parts_.size() + self_pair; }

  std::shared_ptr<const RobotModel> robot_;
  std::shared_ptr<SelfClearanceMaps> self_clearance_maps_;  // never null; shared with other scenes
  RigidTransform X_WB_;
  uint64_t serial_ = 0;  // unique among the scenes of this process (SceneCacheData::HullWarmStart::scene)
  std::vector<WorldObject> objects_;
  std::vector<AttachedObject> attached_;
  std::vector<std::pair<std::string, std::string>> allowed_pairs_;
  std::vector<std::string> warnings_;
  double default_padding_ = 0.0;
  std::vector<std::pair<std::string, double>> padding_;
  std::vector<double> link_padding_;  ///< Per link.
  uint64_t version_ = 0;
  std::vector<RobotPart> robot_parts_;
  std::vector<SelfPair> self_pairs_;  ///< Robot part pairs to test for self collision.
  std::vector<WorldPart> world_parts_;
  std::vector<BroadNode> broad_;
  // The world parts' boxes by coordinate, eight to a block (block b holds parts 8b to 8b + 7; slots past
  // the last part hold empty boxes, which overlap nothing): a world of up to kFlatWorldParts parts is
  // scanned a block at a time, in one pass of comparisons, where a walk of the tree above would branch
  // at every node for the few parts a typical scene has.
  struct WorldBoxBlock {
    double lo[3][8];
    double hi[3][8];
  };
  static constexpr size_t kFlatWorldParts = 64;
  std::vector<WorldBoxBlock> world_blocks_;
  // The static self phase (SelfCandidates): the static parts' boxes at no clearance (grown a little
  // above rounding) and their tree (leaf k: static_boxes_[k]); the moving parts with static partners
  // (movers_with_static_) and, for the r-th of them, the pair index of it and static part k at
  // static_pair_of_[r * static_boxes_.size() + k], -1 if none; the pairs not found through the tree, in
  // order (listed_pairs_).
  struct StaticBox {
    int32_t part;
    Aabb bounds;
  };
  std::vector<uint8_t> part_static_;  // per robot part: no active joint moves it
  std::vector<StaticBox> static_boxes_;
  std::vector<BroadNode> static_broad_;
  std::vector<int32_t> static_pair_of_;
  std::vector<int32_t> movers_with_static_;
  std::vector<int32_t> listed_pairs_;
  size_t num_entities_ = 0;
  std::vector<uint8_t> entity_object_allowed_;  ///< num_entities x objects
  std::vector<uint8_t> entity_allowed_;         ///< num_entities x num_entities
  std::shared_ptr<const LanePlan> lane_plan_;  ///< What CheckStates' lane pass reads.
  SelfClearanceFill self_clearance_fill_ = SelfClearanceFill::kBackground;
  void BuildLanePlan();
  // CheckStates on validated configurations, a block of `lanes` <= kLanes of them (q holds kLanes
  // pointers; those past `lanes` repeat one of the others): `clearance` for robot-world pairs,
  // `self_clearance` for pairs of robot parts, as CheckStateWith. PrepareLanes(cache, clearance) first.
  // `first_colliding`: only the first colliding lane matters (a motion's samples in visiting order); once
  // lane k is found colliding the lanes after it are left unfinished, and only out[0..k] are answers.
  void CheckStateBlock(const double* const* q, int32_t lanes, double clearance, double self_clearance,
                       SceneCacheData* cache, StateResult* out, bool first_colliding = false) const;
  // Sizes the cache's lane buffers and grows each part's box by its padding and `clearance`.
  void PrepareLanes(SceneCacheData* cache, double clearance) const;
};

template <class Item, class Visit>
bool SceneImpl::VisitBoxTree(const std::vector<BroadNode>& nodes, const std::vector<Item>& items, const Aabb& bounds,
                             Visit&& visit) {
  if (nodes.empty()) return false;
  int32_t stack[64];
  int32_t top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const BroadNode& n = nodes[stack[--top]];
    if (!Overlap(n.bounds, bounds)) continue;
    if (n.count == 0) {  // the left child on top: leaves are met in the items' order
      stack[top++] = n.first + 1;
      stack[top++] = n.first;
      continue;
    }
    for (int32_t k = n.first; k < n.first + n.count; ++k) {
      if (Overlap(items[k].bounds, bounds) && visit(k)) return true;
    }
  }
  return false;
}

template <class Visit>
bool SceneImpl::VisitWorldParts(const Aabb& bounds, Visit&& visit) const {
  if (world_parts_.size() > kFlatWorldParts) return VisitBoxTree(broad_, world_parts_, bounds, visit);
  // The same parts in the same order as the tree's walk (Overlap's closed boxes; parts in index order),
  // after the one test of the root's box that keeps a robot part far from everything at that.
  if (broad_.empty() || !Overlap(broad_[0].bounds, bounds)) return false;
  for (size_t b = 0; b < world_blocks_.size(); ++b) {
    const WorldBoxBlock& block = world_blocks_[b];
    const auto le = [](double x, double y) { return static_cast<uint32_t>(x <= y); };  // no branch
    uint32_t mask = 0;
    for (uint32_t l = 0; l < 8; ++l) {
      const uint32_t overlap = le(block.lo[0][l], bounds.max.x()) & le(block.lo[1][l], bounds.max.y()) &
                               le(block.lo[2][l], bounds.max.z()) & le(bounds.min.x(), block.hi[0][l]) &
                               le(bounds.min.y(), block.hi[1][l]) & le(bounds.min.z(), block.hi[2][l]);
      mask |= overlap << l;
    }
    for (; mask != 0; mask &= mask - 1) {
      if (visit(static_cast<int32_t>(8 * b + static_cast<size_t>(std::countr_zero(mask))))) return true;
    }
  }
  return false;
}

template <class Bounds>
bool SceneImpl::SelfCandidates(Bounds&& bounds, double grow, std::vector<int32_t>* out) const {
  if (static_broad_.empty()) return false;
  out->assign(listed_pairs_.begin(), listed_pairs_.end());
  const size_t ns = static_boxes_.size();
  for (size_t r = 0; r < movers_with_static_.size(); ++r) {
    Aabb box = bounds(movers_with_static_[r]);
    box.min.array() -= grow;  // the static boxes are not grown by it
    box.max.array() += grow;
    VisitBoxTree(static_broad_, static_boxes_, box, [&](int32_t k) {
      const int32_t s = static_pair_of_[r * ns + static_cast<size_t>(k)];
      if (s >= 0) out->push_back(s);
      return false;
    });
  }
  std::sort(out->begin(), out->end());
  return true;
}

/// The SceneImpl a Scene is.
inline const SceneImpl& Impl(const Scene& scene) { return static_cast<const SceneImpl&>(scene); }

}  // namespace internal
}  // namespace proximity::core
