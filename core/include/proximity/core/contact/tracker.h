#pragma once
/// @file
/// Clearance tracking for controllers: the closest robot-world and robot-robot pairs along a measured
/// joint trajectory, frame after frame, each with a certified distance interval, witness points, a unit
/// normal, the closest features on both sides and the gradient of the distance with respect to the
/// joints.
///
/// A Tracker is caller-owned state over one scene (one per controller, session or thread; never shared
/// between threads while in use). Each Update(q) takes the pairs the scene's broad phase finds within
/// the request's horizon and decides them nearest first, from the cheapest bound up:
///  - two convex polyhedra (meshes that are their own hull, boxes, polytopes) by V-Clip, warm-started
///    from the pair's last closest features (Mirtich 1998; typically 0 to 2 transitions a frame), with
///    EPA for the depth and normal when they overlap;
///  - convex pairs with a curved side (spheres, capsules, cylinders, cones) by GJK warm-started from the
///    pair's last simplex, and EPA when they overlap;
///  - pairs with a mesh that is not convex by its hull first (V-Clip or GJK, warm), and only when the
///    hulls come closer than what the frame still needs, by the exact hierarchy walk warm-started from
///    the pair's last closest triangles and walk front.
/// Pairs are skipped once their cheap bound reaches the k-th best distance found (overall or per link),
/// so a frame costs a few warm convex tests and rarely a walk. Pairs that leave the horizon are
/// forgotten; pairs that enter it start cold and are warm from the next frame.
///
/// Guarantees (per reported pair, with padding as in the scene: clearance = distance - padding):
///  - lower <= exact clearance <= upper, and the witness points realise `upper` (up to rounding);
///    with a zero error budget the interval is exact up to rounding (V-Clip, GJK and the walk's 1e-12);
///  - `normal_W` is a unit vector along which moving the robot side's witness point increases the
///    distance (apart: from the other witness to the robot's; overlapping convex pairs: EPA's separating
///    direction; touching mesh surfaces: the last frame's, else the line between the parts' centres);
///  - `gradient` is n · (J_robot(p_robot) - J_other(p_other)), the derivative of the distance with
///    respect to q wherever the closest features stay the same (the distance is smooth there);
///  - feature ids name vertices, edges and faces of the V-Clip polyhedra, or mesh triangles, and stay
///    the same from frame to frame while those features stay closest.
/// The k pairs reported are the k smallest by upper bound among the pairs whose clearance may be within
/// the horizon; a pair is left out only when its certified lower bound is at least the k-th upper
/// bound reported (of its link, per link), or beyond the horizon.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"
#include "proximity/core/scene/scene.h"

namespace proximity::core {

/// A convex polyhedron with the adjacency V-Clip walks (opaque: built by TrackingGeometry).
class VClipPolyhedron;

/// What a TrackFeature names.
enum class TrackFeatureType : int8_t {
  kNone = -1,     ///< No feature (a curved side, or no answer).
  kVertex = 0,    ///< A vertex of the side's V-Clip polyhedron (its hull's vertex index).
  kEdge = 1,      ///< An edge of the V-Clip polyhedron.
  kFace = 2,      ///< A face of the V-Clip polyhedron (merged coplanar triangles).
  kTriangle = 3,  ///< A triangle of the side's mesh (its index in the mesh as loaded).
};

/// A closest feature on one side of a tracked pair.
struct TrackFeature {
  TrackFeatureType type = TrackFeatureType::kNone;
  int32_t index = -1;
  friend bool operator==(const TrackFeature&, const TrackFeature&) = default;
};

/// How a pair's distance was found this frame.
enum class TrackMethod : uint8_t {
  kVClip,  ///< V-Clip on two convex polyhedra.
  kGjk,    ///< GJK (and EPA when overlapping) on two convex shapes.
  kWalk,   ///< The exact hierarchy walk (a side is a mesh that is not its hull).
};

/// Which algorithm decides pairs of convex polyhedra (and the hull bounds of non-convex meshes).
enum class TrackConvexMethod : uint8_t {
  kVClip,  ///< V-Clip feature tracking (the default).
  kGjk,    ///< GJK warm-started from the last simplex (for comparison).
};

/// Options for Tracker::Update.
struct TrackRequest {
  /// Metres, finite, in [0, kWorldExtent]: pairs whose clearance is beyond it are not reported.
  double horizon = 0.25;
  /// The closest pairs reported (1 to kMaxTrackPairs): overall, or per robot link with per_link.
  int32_t max_pairs = 8;
  bool per_link = false;
  bool world = true;  ///< Robot-world pairs.
  bool self = true;   ///< Robot-robot pairs.
  /// Error budget on each reported pair's clearance (as SceneDistanceRequest): upper <= lower (1 +
  /// rel_err) or upper - lower <= abs_err. Finite, >= 0. Convex pairs are exact whatever the budget.
  double rel_err = 0.0;
  double abs_err = 0.0;
  bool gradient = true;  ///< Compute each reported pair's gradient (dof values).
  TrackConvexMethod convex = TrackConvexMethod::kVClip;
  /// Asked between pairs; when it says stop the frame ends with TrackResult::stopped (nothing reported).
  Interrupt stop;
};

/// The largest TrackRequest::max_pairs.
inline constexpr int32_t kMaxTrackPairs = 4096;

/// One tracked pair in a frame.
struct TrackedPair {
  /// The pair's names, its clearance interval [lower, upper] and the witness points (world frame)
  /// realising upper (on the unpadded surfaces).
  PairDistance distance;
  /// The distance minus the padding, signed: negative by the overlap depth for convex pairs that
  /// overlap (EPA), 0 for mesh surfaces that touch; equals distance.upper when apart.
  double signed_distance = 0.0;
  Vec3 normal_W = Vec3::UnitZ();  ///< Unit; see the file comment.
  TrackFeature feature_robot;
  TrackFeature feature_other;
  /// The features are those this pair had in the previous frame.
  bool same_features = false;
  TrackMethod method = TrackMethod::kGjk;
  /// d signed_distance / d q, one value per active joint (empty when the request asked for none).
  std::vector<double> gradient;
  /// Stable keys: the robot geometry's index in the scene, and the world part's or (self) the other
  /// robot geometry's (NearbyPart).
  int32_t robot_part = -1;
  int32_t other_part = -1;
};

/// One frame's answer.
struct TrackResult {
  std::vector<TrackedPair> pairs;  ///< Nearest first (by upper bound).
  bool stopped = false;
  bool within_limits = true;
  int32_t candidates = 0;      ///< Pairs the broad phase kept within the horizon.
  int32_t decided = 0;         ///< Pairs whose distance was computed (the others were skipped on bounds).
  int32_t vclip = 0;           ///< V-Clip queries (exact pairs and hull bounds).
  int32_t vclip_transitions = 0;
  int32_t gjk = 0;             ///< GJK queries (exact pairs and hull bounds).
  int32_t walks = 0;           ///< Hierarchy walks.
  /// Convex mesh pairs settled by their hulls' distance and one test of their last closest triangles.
  int32_t surface_checks = 0;
  int32_t same_features = 0;   ///< Reported pairs whose features did not change.
  QueryStats stats;
};

/// The V-Clip polyhedra of a scene's convex geometry (link and world meshes' hulls, boxes, polytopes),
/// built once per scene and shared by every tracker on it: immutable, so any number of threads may
/// read it. Null entries stand for geometry V-Clip does not take (curved primitives, meshes without a
/// hull, flat boxes).
class TrackingGeometry {
 public:
  /// Builds the polyhedra of every robot and world part of `scene` (a few tens of microseconds per
  /// hull of a few hundred vertices). Errors only if a hull is broken (kInternal).
  [[nodiscard]] static Result<std::shared_ptr<const TrackingGeometry>> Build(const Scene& scene);

  /// The polyhedron of robot part i / world part k (NearbyPart indices), or null.
  const VClipPolyhedron* robot(int32_t i) const { return robot_[static_cast<size_t>(i)].get(); }
  const VClipPolyhedron* world(int32_t k) const { return world_[static_cast<size_t>(k)].get(); }
  /// Whether it was built for this scene (by its serial number).
  bool Fits(const Scene& scene) const { return scene.serial() == scene_; }
  /// Bytes held (approximate), for memory caps.
  int64_t MemoryBytes() const { return bytes_; }

 private:
  TrackingGeometry() = default;
  std::vector<std::shared_ptr<const VClipPolyhedron>> robot_, world_;
  int64_t bytes_ = 0;
  uint64_t scene_ = 0;  // Scene::serial() of the scene it was built for
};

/// Caller-owned clearance tracking over one scene (see the file comment). Not thread-safe (one per
/// controller, session or thread); cheap to create when given the scene's TrackingGeometry.
class Tracker {
 public:
  /// `geometry`: the scene's polyhedra (TrackingGeometry::Build), shared; null, or geometry built for
  /// another scene, builds them for this tracker alone.
  explicit Tracker(std::shared_ptr<const Scene> scene, std::shared_ptr<const TrackingGeometry> geometry = nullptr);
  ~Tracker();
  /// Movable; a moved-from tracker may only be destroyed or assigned to.
  Tracker(Tracker&& other) noexcept;
  Tracker& operator=(Tracker&& other) noexcept;

  /// One frame at configuration q. Errors (kInvalidArgument, naming the field) for q as CheckState, a
  /// bad horizon, max_pairs or budget; the tracker's state is then untouched.
  [[nodiscard]] Result<TrackResult> Update(std::span<const double> q, const TrackRequest& request);
  /// The same frame written into *out, whose storage (the pairs and their gradients) is reused: once
  /// its sizes have settled, a control loop that keeps one TrackResult allocates nothing for it per
  /// frame. On an error *out is left as it was.
  [[nodiscard]] Status Update(std::span<const double> q, const TrackRequest& request, TrackResult* out);

  /// Forgets every warm start (the next frame starts cold; answers are the same either way).
  void Reset();

  const std::shared_ptr<const Scene>& scene() const;
  /// Pairs with warm-start state kept.
  size_t tracked_pairs() const;
  /// Bytes held by the warm starts and polyhedra (approximate), for memory caps.
  int64_t MemoryBytes() const;

 private:
  class Impl;  // the warm starts and the frame's steps (tracker.cc)
  std::unique_ptr<Impl> impl_;
};

}  // namespace proximity::core
