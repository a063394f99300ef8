#pragma once
/// @file
/// A C++ client of proximityd for planning remotely: the planners' validity interfaces (validity.h)
/// answered by a proximityd scene over gRPC, so that planners::Plan (or OMPL through the OMPL adapter)
/// runs unchanged against a remote scene.
///
/// RemoteScene holds one channel and one stub (both thread-safe) to a target and a scene id; every call
/// carries a deadline. RemoteStateValidity and RemoteMotionValidator share one RemoteScene.
///
/// CheckState, CheckMotion and CheckMotionsUntilInvalid go through query sessions (the Session RPC,
/// RemoteSession): one stream per calling thread, taken from a pool and kept between calls, so that a
/// query costs one round trip on an open stream, with the server's caches warm from the previous
/// query, instead of a unary call's setup. A lazy planner's candidate edges travel in one round trip.
/// RemoteOptions::use_session = false goes back to one unary RPC per call; CheckStates and Info are
/// unary (one-off calls).
///
/// Errors: a failed call comes back as a core::Error (in the Result or Status) whose message reads
///   "proximityd at <target> (<Rpc>, scene '<id>'): <GRPC_CODE>: <the server's message>"
/// with the code mapped: INVALID_ARGUMENT, OUT_OF_RANGE and FAILED_PRECONDITION -> kInvalidArgument,
/// NOT_FOUND -> kNotFound, RESOURCE_EXHAUSTED -> kResourceExhausted, everything else (UNAVAILABLE,
/// DEADLINE_EXCEEDED, CANCELLED, INTERNAL, ...) -> kInternal. No call throws.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "proximity/clients/remote_channel.h"
#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"
#include "proximity/planners/joint_space.h"
#include "proximity/planners/planner.h"
#include "proximity/planners/validity.h"

namespace proximity::clients {

using core::Result;
using core::Status;

/// How a remote LINK is checked: what the CheckMotion request carries (the server narrows collisions and
/// runs no pre-pass). The modes of RemoteMotionRequest, without the core's scene API.
struct RemoteMotionRequest {
  enum class Mode {
    kCertified,  ///< Never "free" when any point of the segment collides.
    kDiscrete,   ///< States at most `resolution` apart, as OMPL's DiscreteMotionValidator.
  };
  Mode mode = Mode::kCertified;
  /// Discrete mode: the largest joint-space step between samples (> 0, finite).
  double resolution = 0.01;
};

/// What a track query asks (TrackRequest on the wire; the fields of core::TrackRequest).
struct RemoteTrackRequest {
  /// Metres, finite, >= 0: pairs whose clearance is beyond it are not reported.
  double horizon = 0.25;
  /// The closest pairs reported (1 to 4096): overall, or per robot link with per_link.
  int32_t max_pairs = 8;
  bool per_link = false;
  bool world = true;  ///< Robot-world pairs.
  bool self = true;   ///< Robot-robot pairs.
  /// Error budget on each reported pair's clearance: upper <= lower (1 + rel_err) or upper - lower <=
  /// abs_err. Finite, >= 0. Convex pairs are exact whatever the budget.
  double rel_err = 0.0;
  double abs_err = 0.0;
  bool gradient = true;  ///< Each reported pair's gradient (one value per joint).
  enum class Convex { kVClip, kGjk };
  Convex convex = Convex::kVClip;  ///< Which algorithm decides pairs of convex polyhedra.
};

/// A closest feature on one side of a tracked pair (numbered as core::TrackFeatureType).
struct RemoteTrackFeature {
  enum class Type : int8_t { kNone = -1, kVertex = 0, kEdge = 1, kFace = 2, kTriangle = 3 };
  Type type = Type::kNone;
  int32_t index = -1;
  friend bool operator==(const RemoteTrackFeature&, const RemoteTrackFeature&) = default;
};

/// Where and how a RemoteScene calls proximityd.
struct RemoteOptions {
  /// A gRPC target: "127.0.0.1:50051", "localhost:50051"; several replicas: "127.0.0.1:50061,127.0.0.1:50062"
  /// or "ipv4:a:p,b:p"; a name resolving to several: "dns:///proximityd.ns.svc.cluster.local:50051"
  /// (remote_channel.h).
  std::string target;
  /// The scene's id, or the alias "default" for the daemon's built-in scene.
  std::string scene_id = "default";
  /// Deadline of every call (> 0).
  std::chrono::milliseconds deadline{10'000};
  /// CheckStates: most configurations per request; larger batches are sent in several requests.
  int64_t batch_rows = 50'000;
  /// Largest message sent or received, bytes (> 0).
  int32_t max_message_bytes = 64 << 20;
  /// Spread calls over every address the target names (gRPC's round_robin); unset: on for several
  /// addresses and dns: names, off for one address.
  std::optional<bool> round_robin;
  /// Retries after UNAVAILABLE: gRPC's retry policy, then whole-call repeats (remote_channel.h).
  RetryPolicy retry;
  /// Longest wait between attempts to reconnect to a lost replica; 0: gRPC's default (1 s, growing to
  /// 120 s). A short one picks a restarted replica up sooner.
  std::chrono::milliseconds max_reconnect_backoff{0};
  /// Scenes made by RemoteScene::Create: how many times one call may upload the scene again after a
  /// NOT_FOUND and retry (>= 1), and how many CreateScene sends one upload may make until a replica
  /// newly loads it (>= 1; behind round robin a send may reach a replica that has it).
  int restore_rounds = 3;
  int restore_sends = 4;
  /// CheckState, CheckMotion and CheckMotionsUntilInvalid through query sessions (true), or one unary
  /// RPC per call.
  bool use_session = true;
  /// A session is replaced by a new one once it is this old (> 0): keep it below the server's
  /// --max-call-seconds (300 s by default) minus `deadline`, at which the server ends a stream.
  std::chrono::seconds session_lifetime{200};
};

/// A scene as GetScene describes it: what a planner needs to build its joint space.
struct RemoteSceneInfo {
  std::string scene_id;  ///< The content id ("default" resolved).
  uint64_t version = 0;
  std::string robot_name;
  std::vector<std::string> joint_names;  ///< The scene's joint order; configurations follow it.
  std::vector<double> lower, upper;      ///< Per joint (rad or m); -inf / +inf for continuous joints.
  std::vector<bool> continuous, prismatic;
};

/// Where a link must be, for RemoteScene::SolveIk (the wire's PoseGoal): the link by name and the target
/// in the world (the frame of the scene's objects). Zero sizes and tolerances take the server's
/// defaults (MoveIt's pose goals: a 1e-4 m sphere, 1e-3 rad per axis).
struct RemotePoseGoal {
  std::string link;
  core::RigidTransform X_WT;
  core::Vec3 point_L = core::Vec3::Zero();  ///< The point of the link (link frame) that must reach X_WT's origin.
  enum class Region { kSphere, kBox, kCylinder };
  Region region = Region::kSphere;
  core::Vec3 region_size = core::Vec3::Zero();  ///< Sphere: x radius; box: half-extents; cylinder: x radius, z half-length.
  core::Vec3 orientation_tolerance = core::Vec3::Zero();
  bool position_only = false;
};

/// How RemoteScene::SolveIk searches.
struct RemoteIkRequest {
  std::vector<double> seed;      ///< Where the first descent starts (scene joint order); empty: the default state.
  std::string group;             ///< Only the SRDF group's joints move; empty: every joint moving the link.
  bool avoid_collisions = true;  ///< Only a configuration free of world and self contact.
  double search_time_s = 0.0;    ///< Seconds of random restarts; 0: the server's 1 s.
  uint64_t random_seed = 0;      ///< The same request and seed give the same answer.
};

/// What GetIK answered.
struct RemoteIk {
  bool found = false;
  std::vector<double> q;             ///< The solution in the scene's joint order (found only).
  double position_error = 0.0;       ///< m
  double orientation_error = 0.0;    ///< rad
  int32_t attempts = 0;              ///< Descents tried.
  int32_t rejected = 0;              ///< Solutions found in collision (avoid_collisions).
  std::string message;               ///< Why none was found.
  std::vector<std::string> warnings;
};

/// One proximityd scene over gRPC. Immutable after Connect and thread-safe.
class RemoteScene {
 public:
  /// A client of `options.target` (the channel connects on first use: an unreachable target is
  /// reported by the first call). Errors: empty target or scene id, deadline <= 0, batch_rows < 1,
  /// max_message_bytes < 1.
  [[nodiscard]] static Result<std::shared_ptr<const RemoteScene>> Connect(RemoteOptions options);
  /// CreateScene with `create_scene_request` (a serialized proximity.v1.CreateSceneRequest, e.g.
  /// RobotSceneRequest's), then a client of the scene it made: options.scene_id becomes its id (a content
  /// hash, the same on every replica). The request is kept: a replica that answers NOT_FOUND for the
  /// scene (one that never saw it, or restarted) is sent it again and the call retried. Errors: Connect's,
  /// an unparsable request, the CreateScene's.
  [[nodiscard]] static Result<std::shared_ptr<const RemoteScene>> Create(RemoteOptions options,
                                                                        std::string create_scene_request);
  /// Sends the kept CreateScene again (until a replica newly loads it, at most options().restore_sends
  /// times). Error: the scene was not made by Create, the send failed, or the id differs.
  [[nodiscard]] Status Upload() const;
  ~RemoteScene();
  RemoteScene(const RemoteScene&) = delete;
  RemoteScene& operator=(const RemoteScene&) = delete;

  const RemoteOptions& options() const;

  /// GetScene: the scene's joints, limits and continuous flags.
  [[nodiscard]] Result<RemoteSceneInfo> Info() const;
  /// Retries Info() until it succeeds or `timeout` passes (no attempt outlives it); the last error
  /// otherwise.
  [[nodiscard]] Status WaitUntilServing(std::chrono::milliseconds timeout) const;

  /// CheckState: CLEAR(q) and q within the joint limits (q in the scene's joint order).
  [[nodiscard]] Result<bool> CheckState(std::span<const double> q) const;
  /// CheckStates with packed float64 rows: one flag per state, 1 when states[i] is collision-free and
  /// within the limits, else 0. All rows must have the same length. Sent in requests of at most
  /// options().batch_rows rows; an error names the rows of the request that failed.
  [[nodiscard]] Result<std::vector<uint8_t>> CheckStates(std::span<const planners::Configuration> states) const;
  /// The same for `rows` holding rows.size() / dof configurations of dof values each, row after row.
  [[nodiscard]] Result<std::vector<uint8_t>> CheckStates(std::span<const double> rows, int32_t dof) const;
  /// CheckMotion of the straight segment q0 -> q1 as `request` says (certified or discrete):
  /// valid = free, last_valid_t = t_free (1 when free), states = the server's count.
  /// The wire carries the mode and the discrete resolution only: the server narrows a collision to
  /// 2^-10 of the segment and runs no sampled pre-pass (request.narrow_collision and
  /// request.prepass_resolution are not sent), so last_valid_t is the tight certified prefix.
  [[nodiscard]] Result<planners::MotionCheck> CheckMotion(std::span<const double> q0, std::span<const double> q1,
                                                          const RemoteMotionRequest& request) const;

  /// The segments starts[i] -> ends[i] (rows of `dof` values) checked in order as `request` says,
  /// up to and including the first that is not free (planners::MotionValidator::CheckMotionsUntilInvalid):
  /// one session round trip (one unary call per segment without sessions).
  [[nodiscard]] Result<std::vector<planners::MotionCheck>> CheckMotionsUntilInvalid(
      std::span<const double> starts, std::span<const double> ends, int32_t dof,
      const RemoteMotionRequest& request) const;
  /// Every segment starts[i] -> ends[i] as `request` says (planners::MotionValidator::CheckMotions): one
  /// session round trip (one unary call per segment without sessions).
  [[nodiscard]] Result<std::vector<planners::MotionCheck>> CheckMotions(std::span<const double> starts,
                                                                        std::span<const double> ends, int32_t dof,
                                                                        const RemoteMotionRequest& request) const;

  /// A planner's steps in chains (planners::MotionValidator::CheckStepsUntilInvalid): step k is
  /// CheckState of states[k], then the segment starts[k] -> ends[k] checked as `request` says; each chain
  /// is decided in order up to its first state or segment that is not valid. Through a session: every
  /// chain's states and segments interleaved in one message (SessionRequest.chains), one round trip.
  /// Without sessions: one CheckStates call for the states, then one call per segment of each chain up
  /// to its first invalid state. `after` as planners::MotionValidator::CheckStepsUntilInvalid takes it
  /// (a chain decided only when an earlier one ended complete; SessionRequest.after over a session,
  /// in waves of calls without).
  [[nodiscard]] Result<std::vector<planners::StepChecks>> CheckStepsUntilInvalid(
      std::span<const double> states, std::span<const double> starts, std::span<const double> ends,
      std::span<const int32_t> chains, int32_t dof, const RemoteMotionRequest& request,
      std::span<const int32_t> after = {}) const;

  /// GetIK: joint values putting goal.link at goal.X_WT (finding none is an answer: found false).
  [[nodiscard]] Result<RemoteIk> SolveIk(const RemotePoseGoal& goal, const RemoteIkRequest& request = {}) const;

  /// Queries answered so far (an RPC each without sessions; a session query each with them) and how many
  /// failed (an error answer, or a call or stream that failed).
  int64_t calls() const { return calls_.load(std::memory_order_relaxed); }
  int64_t failures() const { return failures_.load(std::memory_order_relaxed); }
  /// Whole calls repeated after UNAVAILABLE (beyond gRPC's own retries), and scene uploads after NOT_FOUND.
  int64_t retries() const;
  int64_t uploads() const;
  /// Sessions opened so far (a new one per calling thread, and after one ended).
  int64_t sessions_opened() const { return sessions_.load(std::memory_order_relaxed); }
  /// Session messages sent so far, each one round trip (a batch of queries counts once; calls() counts
  /// its queries). Unary calls are not counted here.
  int64_t session_round_trips() const { return session_round_trips_.load(std::memory_order_relaxed); }

 private:
  friend class RemoteSession;
  struct Impl;
  explicit RemoteScene(std::unique_ptr<Impl> impl);
  Result<RemoteSceneInfo> InfoWithin(std::chrono::milliseconds deadline) const;
  Result<std::vector<planners::MotionCheck>> Motions(std::span<const double> starts, std::span<const double> ends,
                                                     int32_t dof, const RemoteMotionRequest& request,
                                                     bool until_invalid) const;

  std::unique_ptr<Impl> impl_;
  mutable std::atomic<int64_t> calls_{0};
  mutable std::atomic<int64_t> failures_{0};
  mutable std::atomic<int64_t> sessions_{0};
  mutable std::atomic<int64_t> session_round_trips_{0};
};

/// A certified distance interval from a session's distance query.
struct RemoteDistance {
  double lower = 0.0;  ///< Metres, certified lower bound of the clearance (0 when colliding).
  double upper = 0.0;  ///< Metres, realised by the witness points.
};

/// One pair of a session's track query (TrackedPair on the wire; names as the scene gives them).
struct RemoteTrackedPair {
  bool self = false;     ///< Robot against robot (true) or against a world object.
  std::string robot;     ///< The robot side: link name, or attached object id.
  std::string other;     ///< The other link or attached object (self), or the world object id.
  double lower = 0.0;    ///< Metres, certified lower bound of the pair's clearance.
  double upper = 0.0;    ///< Metres, realised by the witness points.
  /// Metres: negative by the overlap depth for convex pairs that overlap; upper when apart.
  double signed_distance = 0.0;
  core::Vec3 point_robot = core::Vec3::Zero();  ///< World frame, on the unpadded surface.
  core::Vec3 point_other = core::Vec3::Zero();
  core::Vec3 normal = core::Vec3::UnitZ();      ///< Unit, world frame, towards the robot side.
  RemoteTrackFeature feature_robot, feature_other;
  bool same_features = false;  ///< The features this pair had at the session's previous track query.
  /// How the pair's distance was found (numbered as core::TrackMethod).
  enum class Method : uint8_t { kVClip, kGjk, kWalk };
  Method method = Method::kGjk;
  /// d signed_distance / d q, one value per joint in the scene's joint order; empty without a gradient.
  std::vector<double> gradient;
};

/// A track query's answer (TrackResponse).
struct RemoteTrack {
  std::vector<RemoteTrackedPair> pairs;  ///< Nearest first; empty when none is within the horizon.
  bool within_limits = true;
  int32_t candidates = 0;     ///< Pairs the broad phase found within the horizon.
  int32_t decided = 0;        ///< Pairs whose distance was computed.
  int32_t same_features = 0;  ///< Reported pairs whose features did not change.
};

/// One query session (the Session RPC) on a RemoteScene's scene: a stream opened at the first query and
/// kept, whose server-side caches (link poses, GJK warm starts) persist from query to query. Every round
/// trip has the scene's deadline (the stream is cancelled when it passes). When the stream has ended
/// while idle (the server drained it or its --max-call-seconds passed), the next round trip is retried
/// once on a new stream; queries are read-only, so a retry changes no answer. As unary calls, a session
/// rides through a replica's loss: a stream lost with its server (UNAVAILABLE, or reset by an L7 proxy
/// whose replica died) is opened again after a backoff (options().retry), and an open that fails
/// NOT_FOUND for a scene made by RemoteScene::Create uploads the scene again first; the round trip is
/// then repeated. Not thread-safe: one session per thread (RemoteScene keeps a pool of them for its own
/// calls).
class RemoteSession {
 public:
  /// A session on `scene` (which must outlive it); `cold_caches` asks the server to start every query
  /// from empty caches (for measurement).
  explicit RemoteSession(const RemoteScene& scene, bool cold_caches = false);
  ~RemoteSession();  ///< Closes the stream (the server ends the call OK).
  RemoteSession(const RemoteSession&) = delete;
  RemoteSession& operator=(const RemoteSession&) = delete;

  [[nodiscard]] Result<bool> CheckState(std::span<const double> q);
  /// One flag per row (1: free and within limits), in one round trip (at most the server's
  /// --max-session-batch rows).
  [[nodiscard]] Result<std::vector<uint8_t>> CheckStates(std::span<const double> rows, int32_t dof);
  [[nodiscard]] Result<planners::MotionCheck> CheckMotion(std::span<const double> q0, std::span<const double> q1,
                                                          const RemoteMotionRequest& request);
  /// As RemoteScene::CheckMotionsUntilInvalid, in one round trip.
  [[nodiscard]] Result<std::vector<planners::MotionCheck>> CheckMotionsUntilInvalid(
      std::span<const double> starts, std::span<const double> ends, int32_t dof, const RemoteMotionRequest& request);
  /// As RemoteScene::CheckMotions, in one round trip (at most the server's --max-session-batch segments).
  [[nodiscard]] Result<std::vector<planners::MotionCheck>> CheckMotions(std::span<const double> starts,
                                                                        std::span<const double> ends, int32_t dof,
                                                                        const RemoteMotionRequest& request);
  /// As RemoteScene::CheckStepsUntilInvalid, in one round trip (2 queries a step: at most half the
  /// server's --max-session-batch steps).
  [[nodiscard]] Result<std::vector<planners::StepChecks>> CheckStepsUntilInvalid(
      std::span<const double> states, std::span<const double> starts, std::span<const double> ends,
      std::span<const int32_t> chains, int32_t dof, const RemoteMotionRequest& request,
      std::span<const int32_t> after = {});
  /// Distance intervals at each row (rel_err >= 0: the upper bound may exceed the lower by that
  /// fraction), in one round trip.
  [[nodiscard]] Result<std::vector<RemoteDistance>> Distances(std::span<const double> rows, int32_t dof,
                                                              double rel_err);
  /// Clearance tracking at q, warm-started from this session's previous track query (the server keeps
  /// one tracker per session).
  [[nodiscard]] Result<RemoteTrack> Track(std::span<const double> q, const RemoteTrackRequest& request = {});
  /// One track query per row (a trajectory's frames, each warm from the one before), in one round trip.
  [[nodiscard]] Result<std::vector<RemoteTrack>> Track(std::span<const double> rows, int32_t dof,
                                                       const RemoteTrackRequest& request);
  /// Round trips made so far.
  int64_t round_trips() const;

 private:
  Result<std::vector<planners::MotionCheck>> Motions(std::span<const double> starts, std::span<const double> ends,
                                                     int32_t dof, const RemoteMotionRequest& request,
                                                     bool until_invalid);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A serialized proximity.v1.CreateSceneRequest for RemoteScene::Create: a robot (URDF and optional SRDF
/// text) with the files its URDF names (meshes), keyed exactly as the URDF writes them, and no world.
std::string RobotSceneRequest(const std::string& urdf, const std::string& srdf,
                              const std::map<std::string, std::string>& files);

/// The joint space of the remote scene (GetScene's limits; continuous joints wrap), so that a planner
/// can be built without the robot in process.
[[nodiscard]] Result<planners::JointSpace> RemoteSpace(const RemoteScene& scene);

/// planners::StateValidityChecker answered by RemoteScene::CheckState, and a batch of states by
/// RemoteScene::CheckStates in one round trip. Thread-safe.
class RemoteStateValidity final : public planners::StateValidityChecker {
 public:
  /// `scene` must not be null.
  explicit RemoteStateValidity(std::shared_ptr<const RemoteScene> scene) : scene_(std::move(scene)) {}
  [[nodiscard]] Result<bool> IsValid(std::span<const double> q) const override;
  /// IsValid's answers for every row from the CheckStates RPC with packed rows: one request (one per
  /// options().batch_rows rows beyond that), which the server checks a block of rows at a time. An error
  /// names the request's rows and the server's message the row within them.
  [[nodiscard]] Result<std::vector<uint8_t>> AreValid(std::span<const double> qs, int32_t dof) const override;
  /// Configurations checked so far (IsValid calls and AreValid rows).
  int64_t checks() const { return checks_.load(std::memory_order_relaxed); }
  const RemoteScene& scene() const { return *scene_; }

 private:
  friend class RemoteMotionValidator;  // counts the states of the steps it sends
  std::shared_ptr<const RemoteScene> scene_;
  mutable std::atomic<int64_t> checks_{0};
};

/// planners::MotionValidator answered by RemoteScene::CheckMotion (certified by default), and a lazy
/// planner's candidate edges by RemoteScene::CheckMotionsUntilInvalid and the simplifier's shortcuts by
/// RemoteScene::CheckMotions, each batch in one round trip. Thread-safe.
class RemoteMotionValidator final : public planners::MotionValidator {
 public:
  /// `scene` must not be null.
  explicit RemoteMotionValidator(std::shared_ptr<const RemoteScene> scene, RemoteMotionRequest request = {})
      : scene_(std::move(scene)), request_(request) {}
  [[nodiscard]] Result<planners::MotionCheck> CheckMotion(std::span<const double> q0,
                                                          std::span<const double> q1) const override;
  [[nodiscard]] Result<std::vector<planners::MotionCheck>> CheckMotionsUntilInvalid(
      std::span<const double> starts, std::span<const double> ends, int32_t dof) const override;
  [[nodiscard]] Result<std::vector<planners::MotionCheck>> CheckMotions(std::span<const double> starts,
                                                                        std::span<const double> ends,
                                                                        int32_t dof) const override;
  /// With a RemoteStateValidity of the same RemoteScene: RemoteScene::CheckStepsUntilInvalid (one round
  /// trip over a session), each checker counting its own checks. Any other state checker: the default.
  [[nodiscard]] Result<std::vector<planners::StepChecks>> CheckStepsUntilInvalid(
      const planners::StateValidityChecker& state_checker, std::span<const double> states,
      std::span<const double> starts, std::span<const double> ends, std::span<const int32_t> chains,
      std::span<const int32_t> after, int32_t dof) const override;
  bool certified() const override { return request_.mode == RemoteMotionRequest::Mode::kCertified; }
  /// True: every batch is a round trip (a session message, or unary calls).
  bool calls_are_round_trips() const override { return true; }
  /// "remote certified (127.0.0.1:50051, scene 'default')".
  std::string Describe() const override;
  /// CheckMotion calls and configurations the server posed for them so far.
  int64_t checks() const { return checks_.load(std::memory_order_relaxed); }
  int64_t states() const { return states_.load(std::memory_order_relaxed); }
  const RemoteScene& scene() const { return *scene_; }

 private:
  // Counts the checks and states of a batch's answers.
  Result<std::vector<planners::MotionCheck>> Counted(Result<std::vector<planners::MotionCheck>> checks) const;

  std::shared_ptr<const RemoteScene> scene_;
  RemoteMotionRequest request_;
  mutable std::atomic<int64_t> checks_{0};
  mutable std::atomic<int64_t> states_{0};
};

/// Goal configurations for a planner run here (planners::Plan(context, start, sampler, ...)) drawn from
/// the daemon's inverse kinematics of a pose goal: draw k asks GetIK seeded at the start with random
/// seed k (collisions are left to the planner's state checks); a draw that finds none returns false.
class RemotePoseGoalSampler final : public planners::GoalSampler {
 public:
  /// `search_time_s` bounds each draw on the server (> 0).
  RemotePoseGoalSampler(std::shared_ptr<const RemoteScene> scene, RemotePoseGoal goal, std::vector<double> start,
                        std::string group = "", double search_time_s = 0.05);
  [[nodiscard]] Result<bool> Sample(std::span<double> q) override;
  int64_t draws() const { return draws_; }
  int64_t solutions() const { return solutions_; }

 private:
  std::shared_ptr<const RemoteScene> scene_;
  RemotePoseGoal goal_;
  RemoteIkRequest request_;
  int64_t draws_ = 0, solutions_ = 0;
};

}  // namespace proximity::clients
