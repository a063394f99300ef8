#include "proximity/clients/remote_validity.h"

#include <grpcpp/grpcpp.h>

#include <Eigen/Geometry>

#include <algorithm>
#include <atomic>
#include <bit>
#include <optional>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "proximity/v1/proximity.grpc.pb.h"

namespace proximity::clients {
namespace {

namespace v1 = ::proximity::v1;

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

// A stream an HTTP/2 intermediary reset with INTERNAL_ERROR: an L7 proxy (nginx's grpc_pass) whose
// replica died after answering had begun cannot send a status, so it resets the stream, which gRPC
// reports as INTERNAL "Received RST_STREAM with error code 2". proximityd ends every call with a status;
// such a call is repeated as after UNAVAILABLE.
bool ResetByProxy(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::INTERNAL &&
         s.error_message().find("RST_STREAM with error code 2") != std::string::npos;
}

core::ErrorCode CoreCode(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::FAILED_PRECONDITION:
      return core::ErrorCode::kInvalidArgument;
    case grpc::StatusCode::NOT_FOUND:
      return core::ErrorCode::kNotFound;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return core::ErrorCode::kResourceExhausted;
    default:
      return core::ErrorCode::kInternal;
  }
}

// A motion request's mode and (discrete) resolution, as the wire carries them.
void SetMotionMode(const RemoteMotionRequest& m, v1::CheckMotionRequest* out) {
  const bool discrete = m.mode == RemoteMotionRequest::Mode::kDiscrete;
  out->set_mode(discrete ? v1::MOTION_MODE_DISCRETE : v1::MOTION_MODE_CERTIFIED);
  out->set_resolution(discrete ? m.resolution : 0.0);
}

// q into a reused JointPositions (scene order, no names): no allocation once its capacity suffices.
void SetPositions(std::span<const double> q, v1::JointPositions* out) {
  auto* p = out->mutable_positions();
  p->Resize(static_cast<int>(q.size()), 0.0);
  std::copy(q.begin(), q.end(), p->mutable_data());
}

// Rows as packed little-endian float64 into `bytes` (its capacity reused).
void PackRows(std::span<const double> values, std::string* bytes) {
  bytes->resize(values.size() * sizeof(double));
  if constexpr (std::endian::native == std::endian::little) {
    if (!values.empty()) std::memcpy(bytes->data(), values.data(), bytes->size());
  } else {
    for (size_t i = 0; i < values.size(); ++i) {
      uint64_t u;
      std::memcpy(&u, &values[i], sizeof(u));
      for (size_t b = 0; b < sizeof(u); ++b) (*bytes)[i * 8 + b] = static_cast<char>((u >> (8 * b)) & 0xff);
    }
  }
}

// The channel's arguments: message limits, balancing and retries (remote_channel.h), reconnect backoff.
grpc::ChannelArguments ChannelArguments(const RemoteOptions& options, bool several) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  const std::string config = ServiceConfigJson(options.round_robin.value_or(several), options.retry);
  if (!config.empty()) args.SetServiceConfigJSON(config);
  if (options.retry.enabled) {
    args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
    // A call stays retryable while its request is buffered; gRPC's default (256 KiB) is less than a batch.
    args.SetInt(GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE, options.max_message_bytes);
  }
  if (options.max_reconnect_backoff.count() > 0) {
    const int max_ms = static_cast<int>(std::min<int64_t>(options.max_reconnect_backoff.count(), INT32_MAX));
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, std::min(100, max_ms));
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, std::min(100, max_ms));
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, max_ms);
  }
  return args;
}

}  // namespace

struct RemoteScene::Impl {
  RemoteOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::ProximityService::Stub> stub;
  /// The CreateScene that made the scene (RemoteScene::Create), sent again after NOT_FOUND; empty otherwise.
  std::optional<v1::CreateSceneRequest> upload;
  mutable std::atomic<int64_t> retries{0};
  mutable std::atomic<int64_t> uploads{0};
  // Idle sessions (after the stub, so that they close first); one is taken per call.
  std::mutex pool_mutex;
  std::vector<std::unique_ptr<RemoteSession>> idle;

  // Runs f(session) on a pooled session (a new one when none is idle) and returns it to the pool.
  template <class F>
  auto WithSession(const RemoteScene& scene, F&& f) {
    std::unique_ptr<RemoteSession> session;
    {
      std::lock_guard lock(pool_mutex);
      if (!idle.empty()) {
        session = std::move(idle.back());
        idle.pop_back();
      }
    }
    if (session == nullptr) session = std::make_unique<RemoteSession>(scene);
    auto result = f(*session);
    std::lock_guard lock(pool_mutex);
    idle.push_back(std::move(session));
    return result;
  }

  void Prepare(grpc::ClientContext* context) const {
    context->set_deadline(std::chrono::system_clock::now() + options.deadline);
  }

  core::Error RpcError(const char* rpc, const grpc::Status& s) const {
    return {CoreCode(s.error_code()), "proximityd at " + options.target + " (" + rpc + ", scene '" +
                                          options.scene_id + "'): " + CodeName(s.error_code()) + ": " +
                                          s.error_message()};
  }

  /// Sends the kept CreateScene until a replica newly loads it (at most options.restore_sends times).
  grpc::Status SendUpload() const;

  /// Runs `attempt(context)` (one RPC on a fresh context with the call's deadline) through a replica's
  /// loss: after NOT_FOUND for an uploaded scene, uploads it again and retries (options.restore_rounds
  /// times at most); after UNAVAILABLE that gRPC's own retries did not cure, backs off and repeats
  /// (options.retry.rounds times at most). Every query is idempotent, so a repeat answers the same.
  template <class Attempt>
  grpc::Status Run(Attempt&& attempt, std::chrono::milliseconds deadline) const {
    int restores = 0;
    int rounds = 0;
    for (;;) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + deadline);
      const grpc::Status s = attempt(&context);
      if (s.error_code() == grpc::StatusCode::NOT_FOUND && upload.has_value() && restores < options.restore_rounds) {
        ++restores;
        if (const grpc::Status u = SendUpload(); !u.ok()) return u;
      } else if ((s.error_code() == grpc::StatusCode::UNAVAILABLE || ResetByProxy(s)) && options.retry.enabled &&
                 rounds < options.retry.rounds) {
        std::this_thread::sleep_for(options.retry.Backoff(rounds));
        ++rounds;
        retries.fetch_add(1, std::memory_order_relaxed);
      } else {
        return s;
      }
    }
  }
  template <class Attempt>
  grpc::Status Run(Attempt&& attempt) const {
    return Run(std::forward<Attempt>(attempt), options.deadline);
  }
};

grpc::Status RemoteScene::Impl::SendUpload() const {
  uploads.fetch_add(1, std::memory_order_relaxed);
  grpc::Status s;
  for (int i = 0; i < options.restore_sends; ++i) {
    v1::CreateSceneResponse response;
    grpc::ClientContext context;
    Prepare(&context);
    s = stub->CreateScene(&context, *upload, &response);
    if (!s.ok()) return s;
    if (response.scene().scene_id() != options.scene_id) {
      return {grpc::StatusCode::FAILED_PRECONDITION, "the uploaded scene got id '" + response.scene().scene_id() +
                                                         "', expected '" + options.scene_id + "'"};
    }
    if (response.created()) break;
  }
  return s;
}

RemoteScene::RemoteScene(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RemoteScene::~RemoteScene() = default;

const RemoteOptions& RemoteScene::options() const { return impl_->options; }

Result<std::shared_ptr<const RemoteScene>> RemoteScene::Connect(RemoteOptions options) {
  if (options.target.empty()) return core::InvalidArgument("remote scene: target is empty (expected host:port)");
  if (options.scene_id.empty()) return core::InvalidArgument("remote scene: scene_id is empty");
  if (options.deadline.count() <= 0) {
    return core::InvalidArgument("remote scene: deadline must be > 0 ms, got " +
                                 std::to_string(options.deadline.count()));
  }
  if (options.batch_rows < 1) {
    return core::InvalidArgument("remote scene: batch_rows must be >= 1, got " + std::to_string(options.batch_rows));
  }
  if (options.session_lifetime.count() <= 0) {
    return core::InvalidArgument("remote scene: session_lifetime must be > 0 s, got " +
                                 std::to_string(options.session_lifetime.count()));
  }
  if (options.max_message_bytes < 1) {
    return core::InvalidArgument("remote scene: max_message_bytes must be >= 1, got " +
                                 std::to_string(options.max_message_bytes));
  }
  if (options.restore_rounds < 1 || options.restore_sends < 1) {
    return core::InvalidArgument("remote scene: restore_rounds and restore_sends must be >= 1, got " +
                                 std::to_string(options.restore_rounds) + " and " +
                                 std::to_string(options.restore_sends));
  }
  if (options.max_reconnect_backoff.count() < 0) {
    return core::InvalidArgument("remote scene: max_reconnect_backoff must be >= 0 ms, got " +
                                 std::to_string(options.max_reconnect_backoff.count()));
  }
  if (Status valid = ValidateRetryPolicy(options.retry); !valid.ok()) {
    return core::InvalidArgument("remote scene: " + valid.error().message);
  }
  auto resolved = ResolveTarget(options.target);
  if (!resolved.ok()) return core::InvalidArgument("remote scene: " + resolved.error().message);
  auto impl = std::make_unique<Impl>();
  impl->channel = grpc::CreateCustomChannel(resolved.value().target, grpc::InsecureChannelCredentials(),
                                            ChannelArguments(options, resolved.value().several));
  impl->stub = v1::ProximityService::NewStub(impl->channel);
  impl->options = std::move(options);
  return std::shared_ptr<const RemoteScene>(new RemoteScene(std::move(impl)));
}

Result<std::shared_ptr<const RemoteScene>> RemoteScene::Create(RemoteOptions options,
                                                              std::string create_scene_request) {
  v1::CreateSceneRequest request;
  if (!request.ParseFromString(create_scene_request)) {
    return core::InvalidArgument("remote scene: create_scene_request is not a serialized CreateSceneRequest");
  }
  if (options.scene_id.empty()) options.scene_id = "default";  // replaced by the created scene's id
  auto connected = Connect(std::move(options));
  if (!connected.ok()) return connected.error();
  // Connect's result is shared as const; the scene is made here before anyone else can see it.
  auto scene = std::const_pointer_cast<RemoteScene>(connected.value());
  Impl& impl = *scene->impl_;
  v1::CreateSceneResponse response;
  scene->calls_.fetch_add(1, std::memory_order_relaxed);
  const grpc::Status s = impl.Run([&](grpc::ClientContext* context) {
    return impl.stub->CreateScene(context, request, &response);
  });
  if (!s.ok()) {
    scene->failures_.fetch_add(1, std::memory_order_relaxed);
    return impl.RpcError("CreateScene", s);
  }
  impl.options.scene_id = response.scene().scene_id();
  impl.upload = std::move(request);
  return std::shared_ptr<const RemoteScene>(std::move(scene));
}

Status RemoteScene::Upload() const {
  if (!impl_->upload.has_value()) {
    return core::Error{core::ErrorCode::kNotFound, "proximityd at " + impl_->options.target + " (scene '" +
                                                       impl_->options.scene_id + "'): not made by RemoteScene::Create"};
  }
  calls_.fetch_add(1, std::memory_order_relaxed);
  if (const grpc::Status s = impl_->SendUpload(); !s.ok()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return impl_->RpcError("CreateScene", s);
  }
  return Status::Ok();
}

int64_t RemoteScene::retries() const { return impl_->retries.load(std::memory_order_relaxed); }
int64_t RemoteScene::uploads() const { return impl_->uploads.load(std::memory_order_relaxed); }

std::string RobotSceneRequest(const std::string& urdf, const std::string& srdf,
                              const std::map<std::string, std::string>& files) {
  v1::CreateSceneRequest request;
  v1::RobotSource* robot = request.mutable_robot();
  robot->set_urdf(urdf);
  robot->set_srdf(srdf);
  for (const auto& [name, bytes] : files) (*robot->mutable_files())[name] = bytes;
  return request.SerializeAsString();
}

Result<RemoteSceneInfo> RemoteScene::Info() const { return InfoWithin(impl_->options.deadline); }

Result<RemoteSceneInfo> RemoteScene::InfoWithin(std::chrono::milliseconds deadline) const {
  v1::GetSceneRequest request;
  request.set_scene_id(impl_->options.scene_id);
  v1::GetSceneResponse response;
  calls_.fetch_add(1, std::memory_order_relaxed);
  const grpc::Status s = impl_->Run(
      [&](grpc::ClientContext* context) { return impl_->stub->GetScene(context, request, &response); }, deadline);
  if (!s.ok()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return impl_->RpcError("GetScene", s);
  }
  const v1::SceneInfo& scene = response.scene();
  if (scene.limits_size() != scene.joint_names_size()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return core::Error{core::ErrorCode::kInternal,
                       "proximityd at " + impl_->options.target + " (GetScene, scene '" + impl_->options.scene_id +
                           "'): " + std::to_string(scene.joint_names_size()) + " joint names but " +
                           std::to_string(scene.limits_size()) + " limits"};
  }
  RemoteSceneInfo info;
  info.scene_id = scene.scene_id();
  info.version = scene.version();
  info.robot_name = scene.robot_name();
  info.joint_names.assign(scene.joint_names().begin(), scene.joint_names().end());
  for (const v1::JointLimit& l : scene.limits()) {
    info.lower.push_back(l.lower());
    info.upper.push_back(l.upper());
    info.continuous.push_back(l.continuous());
    info.prismatic.push_back(l.prismatic());
  }
  return info;
}

Result<RemoteIk> RemoteScene::SolveIk(const RemotePoseGoal& goal, const RemoteIkRequest& ik) const {
  v1::GetIKRequest request;
  request.set_scene_id(impl_->options.scene_id);
  v1::PoseGoal* g = request.mutable_goal();
  g->set_link(goal.link);
  const auto vec = [](const core::Vec3& v, v1::Vector3* out) {
    out->set_x(v.x());
    out->set_y(v.y());
    out->set_z(v.z());
  };
  vec(goal.X_WT.p, g->mutable_pose()->mutable_position());
  const Eigen::Quaterniond r(goal.X_WT.R);
  v1::Quaternion* o = g->mutable_pose()->mutable_orientation();
  o->set_x(r.x());
  o->set_y(r.y());
  o->set_z(r.z());
  o->set_w(r.w());
  vec(goal.point_L, g->mutable_point_offset());
  g->set_region(goal.region == RemotePoseGoal::Region::kBox        ? v1::POSITION_REGION_BOX
                : goal.region == RemotePoseGoal::Region::kCylinder ? v1::POSITION_REGION_CYLINDER
                                                                   : v1::POSITION_REGION_SPHERE);
  vec(goal.region_size, g->mutable_region_size());
  vec(goal.orientation_tolerance, g->mutable_orientation_tolerance());
  g->set_position_only(goal.position_only);
  if (!ik.seed.empty()) {
    for (double v : ik.seed) request.mutable_seed()->add_positions(v);
  }
  request.set_group(ik.group);
  request.set_avoid_collisions(ik.avoid_collisions);
  request.set_timeout(ik.search_time_s);
  request.set_random_seed(ik.random_seed);
  v1::GetIKResponse response;
  calls_.fetch_add(1, std::memory_order_relaxed);
  // The call may search for search_time_s (1 s by default) beyond the usual deadline.
  const auto search = std::chrono::milliseconds(static_cast<int64_t>(1e3 * (ik.search_time_s > 0 ? ik.search_time_s : 1.0)));
  const grpc::Status s = impl_->Run(
      [&](grpc::ClientContext* context) { return impl_->stub->GetIK(context, request, &response); },
      impl_->options.deadline + search);
  if (!s.ok()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return impl_->RpcError("GetIK", s);
  }
  RemoteIk out;
  out.found = response.found();
  out.q.assign(response.solution().positions().begin(), response.solution().positions().end());
  out.position_error = response.position_error();
  out.orientation_error = response.orientation_error();
  out.attempts = response.attempts();
  out.rejected = response.rejected();
  out.message = response.message();
  out.warnings.assign(response.warnings().begin(), response.warnings().end());
  return out;
}

RemotePoseGoalSampler::RemotePoseGoalSampler(std::shared_ptr<const RemoteScene> scene, RemotePoseGoal goal,
                                             std::vector<double> start, std::string group, double search_time_s)
    : scene_(std::move(scene)), goal_(std::move(goal)) {
  request_.seed = std::move(start);
  request_.group = std::move(group);
  request_.avoid_collisions = false;  // the planner checks every goal it keeps
  request_.search_time_s = search_time_s;
}

Result<bool> RemotePoseGoalSampler::Sample(std::span<double> q) {
  request_.random_seed = static_cast<uint64_t>(draws_++);
  Result<RemoteIk> r = scene_->SolveIk(goal_, request_);
  if (!r.ok()) return r.error();
  if (!r.value().found) return false;
  if (r.value().q.size() != q.size()) {
    return core::Error{core::ErrorCode::kInternal, "GetIK answered " + std::to_string(r.value().q.size()) +
                                                       " joint values for a space of " + std::to_string(q.size())};
  }
  ++solutions_;
  std::copy(r.value().q.begin(), r.value().q.end(), q.begin());
  return true;
}

Status RemoteScene::WaitUntilServing(std::chrono::milliseconds timeout) const {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // Each attempt ends by the overall timeout at the latest.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    auto info = InfoWithin(std::clamp(left, std::chrono::milliseconds(1), impl_->options.deadline));
    if (info.ok()) return Status::Ok();
    if (std::chrono::steady_clock::now() >= until) return info.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Result<bool> RemoteScene::CheckState(std::span<const double> q) const {
  if (impl_->options.use_session) {
    return impl_->WithSession(*this, [&](RemoteSession& s) { return s.CheckState(q); });
  }
  // Per-thread messages, cleared and refilled: a warm call allocates nothing for them.
  thread_local v1::CheckStateRequest request;
  thread_local v1::CheckStateResponse response;
  request.set_scene_id(impl_->options.scene_id);
  SetPositions(q, request.mutable_state());
  response.Clear();
  calls_.fetch_add(1, std::memory_order_relaxed);
  const grpc::Status s =
      impl_->Run([&](grpc::ClientContext* context) { return impl_->stub->CheckState(context, request, &response); });
  if (!s.ok()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return impl_->RpcError("CheckState", s);
  }
  return response.free() && response.within_limits();
}

Result<std::vector<uint8_t>> RemoteScene::CheckStates(std::span<const planners::Configuration> states) const {
  if (states.empty()) return std::vector<uint8_t>();
  const size_t dof = states.front().size();
  std::vector<double> rows;
  rows.reserve(states.size() * dof);
  for (size_t i = 0; i < states.size(); ++i) {
    if (states[i].size() != dof) {
      return core::InvalidArgument("CheckStates: configuration " + std::to_string(i) + " has " +
                                   std::to_string(states[i].size()) + " values, configuration 0 has " +
                                   std::to_string(dof));
    }
    rows.insert(rows.end(), states[i].begin(), states[i].end());
  }
  return CheckStates(rows, static_cast<int32_t>(dof));
}

Result<std::vector<uint8_t>> RemoteScene::CheckStates(std::span<const double> rows, int32_t dof) const {
  if (dof < 1) return core::InvalidArgument("CheckStates: dof must be >= 1, got " + std::to_string(dof));
  if (rows.size() % static_cast<size_t>(dof) != 0) {
    return core::InvalidArgument("CheckStates: " + std::to_string(rows.size()) + " values is not a whole number of " +
                                 std::to_string(dof) + "-value configurations");
  }
  const int64_t n = static_cast<int64_t>(rows.size()) / dof;
  std::vector<uint8_t> valid(static_cast<size_t>(n), 0);
  v1::CheckStatesRequest request;
  v1::CheckStatesResponse response;
  request.set_scene_id(impl_->options.scene_id);
  for (int64_t first = 0; first < n; first += impl_->options.batch_rows) {
    const int64_t count = std::min<int64_t>(impl_->options.batch_rows, n - first);
    PackRows(rows.subspan(static_cast<size_t>(first * dof), static_cast<size_t>(count * dof)),
             request.mutable_states()->mutable_positions_f64le());
    request.mutable_states()->set_width(static_cast<uint32_t>(dof));
    request.mutable_states()->set_count(static_cast<uint32_t>(count));
    response.Clear();
    calls_.fetch_add(1, std::memory_order_relaxed);
    const grpc::Status s = impl_->Run(
        [&](grpc::ClientContext* context) { return impl_->stub->CheckStates(context, request, &response); });
    if (!s.ok()) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      core::Error e = impl_->RpcError("CheckStates", s);
      e.message = "configurations " + std::to_string(first) + ".." + std::to_string(first + count - 1) + ": " + e.message;
      return e;
    }
    if (response.free_size() != count || response.within_limits_size() != count) {
      failures_.fetch_add(1, std::memory_order_relaxed);
      return core::Error{core::ErrorCode::kInternal,
                         "proximityd at " + impl_->options.target + " (CheckStates): " + std::to_string(count) +
                             " configurations sent, " + std::to_string(response.free_size()) + " answers received"};
    }
    for (int64_t i = 0; i < count; ++i) {
      valid[static_cast<size_t>(first + i)] =
          response.free(static_cast<int>(i)) && response.within_limits(static_cast<int>(i)) ? 1 : 0;
    }
  }
  return valid;
}

Result<planners::MotionCheck> RemoteScene::CheckMotion(std::span<const double> q0, std::span<const double> q1,
                                                       const RemoteMotionRequest& motion) const {
  if (impl_->options.use_session) {
    return impl_->WithSession(*this, [&](RemoteSession& s) { return s.CheckMotion(q0, q1, motion); });
  }
  thread_local v1::CheckMotionRequest request;
  thread_local v1::CheckMotionResponse response;
  request.set_scene_id(impl_->options.scene_id);
  SetPositions(q0, request.mutable_start());
  SetPositions(q1, request.mutable_goal());
  SetMotionMode(motion, &request);
  response.Clear();
  calls_.fetch_add(1, std::memory_order_relaxed);
  const grpc::Status s =
      impl_->Run([&](grpc::ClientContext* context) { return impl_->stub->CheckMotion(context, request, &response); });
  if (!s.ok()) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    return impl_->RpcError("CheckMotion", s);
  }
  const v1::MotionResult& r = response.result();
  planners::MotionCheck out;
  out.valid = r.free();
  out.last_valid_t = r.free() ? 1.0 : r.t_free();
  out.states = response.stats().states();
  return out;
}

Result<std::vector<planners::MotionCheck>> RemoteScene::Motions(std::span<const double> starts,
                                                                std::span<const double> ends, int32_t dof,
                                                                const RemoteMotionRequest& request,
                                                                bool until_invalid) const {
  const char* what = until_invalid ? "CheckMotionsUntilInvalid" : "CheckMotions";
  if (impl_->options.use_session) {
    return impl_->WithSession(*this, [&](RemoteSession& s) {
      return until_invalid ? s.CheckMotionsUntilInvalid(starts, ends, dof, request)
                           : s.CheckMotions(starts, ends, dof, request);
    });
  }
  if (dof < 1 || starts.size() != ends.size() || starts.size() % static_cast<size_t>(dof) != 0) {
    return core::InvalidArgument(std::string(what) + ": " + std::to_string(starts.size()) + " start and " +
                                 std::to_string(ends.size()) + " end values are not rows of " + std::to_string(dof));
  }
  std::vector<planners::MotionCheck> checks;
  const auto d = static_cast<size_t>(dof);
  for (size_t i = 0; i < starts.size(); i += d) {
    Result<planners::MotionCheck> check = CheckMotion(starts.subspan(i, d), ends.subspan(i, d), request);
    if (!check.ok()) return check.error();
    checks.push_back(check.value());
    if (until_invalid && !check.value().valid) break;
  }
  return checks;
}

Result<std::vector<planners::MotionCheck>> RemoteScene::CheckMotionsUntilInvalid(
    std::span<const double> starts, std::span<const double> ends, int32_t dof,
    const RemoteMotionRequest& request) const {
  return Motions(starts, ends, dof, request, true);
}

Result<std::vector<planners::MotionCheck>> RemoteScene::CheckMotions(std::span<const double> starts,
                                                                     std::span<const double> ends, int32_t dof,
                                                                     const RemoteMotionRequest& request) const {
  return Motions(starts, ends, dof, request, false);
}

Result<std::vector<planners::StepChecks>> RemoteScene::CheckStepsUntilInvalid(
    std::span<const double> states, std::span<const double> starts, std::span<const double> ends,
    std::span<const int32_t> chains, int32_t dof, const RemoteMotionRequest& request,
    std::span<const int32_t> after) const {
  if (impl_->options.use_session) {
    return impl_->WithSession(*this, [&](RemoteSession& s) {
      return s.CheckStepsUntilInvalid(states, starts, ends, chains, dof, request, after);
    });
  }
  if (Status st = planners::CheckStepChains(states, starts, ends, chains, after, dof); !st.ok()) return st.error();
  return planners::DecideStepWaves(
      states, starts, ends, chains, after, dof, [&](std::span<const double> rows) { return CheckStates(rows, dof); },
      [&](std::span<const double> a, std::span<const double> b) { return Motions(a, b, dof, request, true); });
}

// ------------------------------------------------------------------------------------------------
// RemoteSession

struct RemoteSession::Impl {
  using Stream = grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>;
  using Clock = std::chrono::steady_clock;

  const RemoteScene* scene;
  const RemoteScene::Impl* remote;
  bool cold;
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<Stream> stream;
  Clock::time_point opened_at;
  bool answered = false;  // the open stream has answered a batch
  int64_t round_trips = 0;
  // Reused from round trip to round trip.
  v1::SessionRequest request;
  v1::SessionResponse response;

  // The round-trip deadline: a watchdog thread per open stream cancels it when a round trip outlives
  // the deadline (a synchronous Read cannot time out by itself). It polls a clock stamp, so a round
  // trip costs no wake-up.
  std::mutex mutex;
  std::condition_variable cv;
  bool closing = false;
  std::atomic<int64_t> busy_since{0};  // steady-clock ns at the round trip's start; 0: idle
  std::atomic<bool> timed_out{false};
  std::thread watchdog;

  Impl(const RemoteScene& s, bool cold_caches) : scene(&s), remote(s.impl_.get()), cold(cold_caches) {}
  ~Impl() { Close(); }

  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  }

  // Opens the stream; the caller has stamped busy_since (opening waits for the connection).
  void Start() {
    context = std::make_unique<grpc::ClientContext>();
    const RemoteOptions& o = remote->options;
    context->set_deadline(std::chrono::system_clock::now() + o.session_lifetime + o.deadline);
    opened_at = Clock::now();
    answered = false;
    timed_out.store(false);
    closing = false;
    scene->sessions_.fetch_add(1, std::memory_order_relaxed);
    const int64_t deadline_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(o.deadline).count();
    const auto poll = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(o.deadline) / 10,
                                 std::chrono::milliseconds(1), std::chrono::milliseconds(20));
    watchdog = std::thread([this, deadline_ns, poll, ctx = context.get()] {
      std::unique_lock lock(mutex);
      while (!cv.wait_for(lock, poll, [this] { return closing; })) {
        const int64_t since = busy_since.load(std::memory_order_relaxed);
        if (since != 0 && Now() - since > deadline_ns) {
          timed_out.store(true);
          ctx->TryCancel();
          return;
        }
      }
    });
    stream = remote->stub->Session(context.get());
  }

  void StopWatchdog() {
    {
      std::lock_guard lock(mutex);
      closing = true;
    }
    cv.notify_all();
    if (watchdog.joinable()) watchdog.join();
  }

  // Ends the stream: a healthy one is closed (the server ends the call OK); the status it ended with.
  grpc::Status Close() {
    if (stream == nullptr) return grpc::Status::OK;
    busy_since.store(Now());  // the close is a round trip too: it has the deadline
    stream->WritesDone();
    while (stream->Read(&response)) {
    }
    grpc::Status s = stream->Finish();
    busy_since.store(0);
    StopWatchdog();
    if (timed_out.load()) {
      s = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                       "no answer within the deadline of " + std::to_string(remote->options.deadline.count()) + " ms");
    }
    stream.reset();
    context.reset();
    return s;
  }

  core::Error Failure(const grpc::Status& s) const {
    scene->failures_.fetch_add(1, std::memory_order_relaxed);
    return remote->RpcError("Session", s);
  }

  // Sends `request` (its queries filled by the caller) and reads its answers into `response`. A stream
  // that ended while idle is replaced once. As RemoteScene::Impl::Run does for unary calls: a stream
  // lost with its server (UNAVAILABLE, or reset by an L7 proxy) is opened again after a backoff
  // (options.retry.rounds times at most), and an open that fails NOT_FOUND for an uploaded scene uploads
  // it again first (options.restore_rounds times at most); the round trip is then repeated.
  Status RoundTrip() {
    int restores = 0;
    int rounds = 0;
    for (int attempt = 0;; ++attempt) {
      if (stream != nullptr && Clock::now() - opened_at > remote->options.session_lifetime) Close();
      const bool fresh = stream == nullptr;
      busy_since.store(Now(), std::memory_order_relaxed);
      if (fresh) {
        Start();
        v1::SessionOpen* open = request.mutable_open();
        open->set_scene_id(remote->options.scene_id);
        open->set_cold_caches(cold);
      } else {
        request.clear_open();
      }
      ++round_trips;
      scene->session_round_trips_.fetch_add(1, std::memory_order_relaxed);
      const bool ok = stream->Write(request) && stream->Read(&response);
      busy_since.store(0, std::memory_order_relaxed);
      if (ok) {
        answered = true;
        return Status::Ok();
      }
      const bool was_idle_reuse = answered;
      const grpc::Status s = Close();
      const bool expired = timed_out.load();
      const bool retry = attempt == 0 && was_idle_reuse &&
                         (s.error_code() == grpc::StatusCode::CANCELLED ||
                          s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                          s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) &&
                         !expired;
      if (retry) continue;
      const RemoteOptions& o = remote->options;
      if (fresh && s.error_code() == grpc::StatusCode::NOT_FOUND && remote->upload.has_value() &&
          restores < o.restore_rounds) {
        ++restores;
        if (const grpc::Status u = remote->SendUpload(); !u.ok()) return Failure(u);
        continue;
      }
      if (!expired && (s.error_code() == grpc::StatusCode::UNAVAILABLE || ResetByProxy(s)) && o.retry.enabled &&
          rounds < o.retry.rounds) {
        std::this_thread::sleep_for(o.retry.Backoff(rounds));
        ++rounds;
        remote->retries.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      return Failure(s.ok() ? grpc::Status(grpc::StatusCode::INTERNAL, "the stream ended without an answer") : s);
    }
  }

  // The answer to query i of the last round trip, checked: its kind, or the server's error for it.
  Result<const v1::SessionAnswer*> AnswerAt(int i, v1::SessionAnswer::AnswerCase kind) { return AnswerAt(i, kind, i); }
  // The same for answer i to query `query` (chains skip the queries after a chain's first invalid one).
  Result<const v1::SessionAnswer*> AnswerAt(int i, v1::SessionAnswer::AnswerCase kind, int query) {
    scene->calls_.fetch_add(1, std::memory_order_relaxed);
    if (i >= response.answers_size()) {
      return Failure(grpc::Status(grpc::StatusCode::INTERNAL, std::to_string(request.queries_size()) +
                                                                  " queries sent, " +
                                                                  std::to_string(response.answers_size()) +
                                                                  " answers received"));
    }
    const v1::SessionAnswer& a = response.answers(i);
    if (a.answer_case() == v1::SessionAnswer::kError) {
      return Failure(grpc::Status(static_cast<grpc::StatusCode>(a.error().code()), a.error().message()));
    }
    if (a.answer_case() != kind || a.id() != static_cast<uint64_t>(query)) {
      return Failure(grpc::Status(grpc::StatusCode::INTERNAL, "answer " + std::to_string(i) + " is not the query's"));
    }
    return &a;
  }

  v1::SessionQuery* Add(int i) {
    v1::SessionQuery* q = request.add_queries();
    q->set_id(static_cast<uint64_t>(i));
    return q;
  }

  // One query per row of `rows` (add(i, row, query) fills query i), one round trip, and one answer of
  // `kind` per row (read(answer) makes the row's result).
  template <class T, class AddFn, class ReadFn>
  Result<std::vector<T>> PerRow(std::span<const double> rows, int32_t dof, const char* what,
                                v1::SessionAnswer::AnswerCase kind, AddFn&& add, ReadFn&& read) {
    if (Status st = Rows(rows, dof, what); !st.ok()) return st.error();
    const auto d = static_cast<size_t>(dof);
    const size_t n = rows.size() / d;
    request.clear_queries();
    request.set_until_invalid(false);
    for (size_t i = 0; i < n; ++i) add(rows.subspan(i * d, d), Add(static_cast<int>(i)));
    if (Status st = RoundTrip(); !st.ok()) return st.error();
    std::vector<T> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      auto a = AnswerAt(static_cast<int>(i), kind);
      if (!a.ok()) return a.error();
      out.push_back(read(*a.value()));
    }
    return out;
  }

  static Status Rows(std::span<const double> rows, int32_t dof, const char* what) {
    if (dof < 1 || rows.size() % static_cast<size_t>(dof) != 0) {
      return core::InvalidArgument(std::string(what) + ": " + std::to_string(rows.size()) +
                                   " values are not rows of dof = " + std::to_string(dof));
    }
    return Status::Ok();
  }

  void AddMotion(int i, std::span<const double> q0, std::span<const double> q1, const RemoteMotionRequest& m) {
    v1::CheckMotionRequest* motion = Add(i)->mutable_motion();
    SetPositions(q0, motion->mutable_start());
    SetPositions(q1, motion->mutable_goal());
    SetMotionMode(m, motion);
  }

  static planners::MotionCheck ToCheck(const v1::CheckMotionResponse& r) {
    planners::MotionCheck out;
    out.valid = r.result().free();
    out.last_valid_t = r.result().free() ? 1.0 : r.result().t_free();
    out.states = r.stats().states();
    return out;
  }
};

RemoteSession::RemoteSession(const RemoteScene& scene, bool cold_caches)
    : impl_(std::make_unique<Impl>(scene, cold_caches)) {}
RemoteSession::~RemoteSession() = default;

int64_t RemoteSession::round_trips() const { return impl_->round_trips; }

Result<bool> RemoteSession::CheckState(std::span<const double> q) {
  Impl& s = *impl_;
  s.request.clear_queries();
  s.request.set_until_invalid(false);
  SetPositions(q, s.Add(0)->mutable_state()->mutable_state());
  if (Status st = s.RoundTrip(); !st.ok()) return st.error();
  auto a = s.AnswerAt(0, v1::SessionAnswer::kState);
  if (!a.ok()) return a.error();
  return a.value()->state().free() && a.value()->state().within_limits();
}

Result<std::vector<uint8_t>> RemoteSession::CheckStates(std::span<const double> rows, int32_t dof) {
  return impl_->PerRow<uint8_t>(
      rows, dof, "CheckStates", v1::SessionAnswer::kState,
      [](std::span<const double> q, v1::SessionQuery* query) { SetPositions(q, query->mutable_state()->mutable_state()); },
      [](const v1::SessionAnswer& a) -> uint8_t { return a.state().free() && a.state().within_limits() ? 1 : 0; });
}

Result<planners::MotionCheck> RemoteSession::CheckMotion(std::span<const double> q0, std::span<const double> q1,
                                                         const RemoteMotionRequest& request) {
  Impl& s = *impl_;
  s.request.clear_queries();
  s.request.set_until_invalid(false);
  s.AddMotion(0, q0, q1, request);
  if (Status st = s.RoundTrip(); !st.ok()) return st.error();
  auto a = s.AnswerAt(0, v1::SessionAnswer::kMotion);
  if (!a.ok()) return a.error();
  return Impl::ToCheck(a.value()->motion());
}

Result<std::vector<planners::MotionCheck>> RemoteSession::Motions(std::span<const double> starts,
                                                                  std::span<const double> ends, int32_t dof,
                                                                  const RemoteMotionRequest& request,
                                                                  bool until_invalid) {
  Impl& s = *impl_;
  const char* what = until_invalid ? "CheckMotionsUntilInvalid" : "CheckMotions";
  if (Status st = Impl::Rows(starts, dof, what); !st.ok()) return st.error();
  if (starts.size() != ends.size()) {
    return core::InvalidArgument(std::string(what) + ": " + std::to_string(starts.size()) + " start values but " +
                                 std::to_string(ends.size()) + " end values");
  }
  const auto d = static_cast<size_t>(dof);
  const size_t n = starts.size() / d;
  std::vector<planners::MotionCheck> checks;
  if (n == 0) return checks;
  s.request.clear_queries();
  s.request.set_until_invalid(until_invalid);
  for (size_t i = 0; i < n; ++i) s.AddMotion(static_cast<int>(i), starts.subspan(i * d, d), ends.subspan(i * d, d), request);
  if (Status st = s.RoundTrip(); !st.ok()) return st.error();
  // Every edge; or with until_invalid a prefix, up to the first edge that is not free (or fails: that
  // answer is the error).
  const int answered = s.response.answers_size();
  for (int i = 0; i < answered; ++i) {
    auto a = s.AnswerAt(i, v1::SessionAnswer::kMotion);
    if (!a.ok()) return a.error();
    checks.push_back(Impl::ToCheck(a.value()->motion()));
  }
  const bool complete = until_invalid ? !checks.empty() && (!checks.back().valid || checks.size() == n)
                                      : checks.size() == n;
  if (!complete) {
    return s.Failure(grpc::Status(grpc::StatusCode::INTERNAL, std::to_string(n) + " edges sent, " +
                                                                  std::to_string(answered) + " answers received" +
                                                                  (until_invalid ? ", the last one free" : "")));
  }
  return checks;
}

Result<std::vector<planners::MotionCheck>> RemoteSession::CheckMotionsUntilInvalid(std::span<const double> starts,
                                                                                   std::span<const double> ends,
                                                                                   int32_t dof,
                                                                                   const RemoteMotionRequest& request) {
  return Motions(starts, ends, dof, request, true);
}

Result<std::vector<planners::MotionCheck>> RemoteSession::CheckMotions(std::span<const double> starts,
                                                                       std::span<const double> ends, int32_t dof,
                                                                       const RemoteMotionRequest& request) {
  return Motions(starts, ends, dof, request, false);
}

Result<std::vector<planners::StepChecks>> RemoteSession::CheckStepsUntilInvalid(
    std::span<const double> states, std::span<const double> starts, std::span<const double> ends,
    std::span<const int32_t> chains, int32_t dof, const RemoteMotionRequest& request, std::span<const int32_t> after) {
  Impl& s = *impl_;
  if (Status st = planners::CheckStepChains(states, starts, ends, chains, after, dof); !st.ok()) return st.error();
  const auto d = static_cast<size_t>(dof);
  const size_t n = states.size() / d;
  const int32_t whole[1] = {static_cast<int32_t>(n)};
  if (chains.empty()) chains = whole;
  std::vector<planners::StepChecks> out(chains.size());
  if (n == 0) return out;
  // Query 2k: step k's state; 2k + 1: its segment. A chain of m steps is 2m queries; the server stops
  // each chain after its first query that is not free.
  s.request.clear_queries();
  s.request.set_until_invalid(true);
  s.request.clear_chains();
  s.request.clear_after();
  for (size_t k = 0; k < n; ++k) {
    SetPositions(states.subspan(k * d, d), s.Add(static_cast<int>(2 * k))->mutable_state()->mutable_state());
    s.AddMotion(static_cast<int>(2 * k + 1), starts.subspan(k * d, d), ends.subspan(k * d, d), request);
  }
  for (const int32_t length : chains) s.request.add_chains(static_cast<uint32_t>(2 * length));
  // On the wire a prerequisite is counted from 1 (0: none).
  for (const int32_t c : after) s.request.add_after(static_cast<uint32_t>(c + 1));
  const Status sent = s.RoundTrip();
  s.request.clear_chains();
  s.request.clear_after();
  if (!sent.ok()) return sent.error();
  // The answers: each chain's prefix, chain after chain, each ending with its first invalid query or
  // complete. Answer ids are the queries' places, so every answer is checked against its query.
  const int answered = s.response.answers_size();
  int at = 0;  // the next answer
  size_t step = 0;
  std::vector<char> complete(chains.size(), 0);
  for (size_t c = 0; c < chains.size(); ++c) {
    planners::StepChecks& chain = out[c];
    const auto length = static_cast<size_t>(chains[c]);
    if (!after.empty() && after[c] >= 0 && complete[static_cast<size_t>(after[c])] == 0) {
      // Skipped: the server answers none of its queries (a server older than SessionRequest.after
      // answers them; those answers are passed over, so that the result is the same).
      chain.skipped = true;
      while (at < answered && s.response.answers(at).id() >= 2 * step &&
             s.response.answers(at).id() < 2 * (step + length)) {
        ++at;
      }
      step += length;
      continue;
    }
    bool invalid = false;
    for (size_t j = 0; j < 2 * length && !invalid; ++j) {
      // AnswerAt checks that the answer exists and is this query's: a chain answered short of its
      // first invalid query is an error.
      const int query = static_cast<int>(2 * step + j);
      if (j % 2 == 0) {
        auto a = s.AnswerAt(at, v1::SessionAnswer::kState, query);
        if (!a.ok()) return a.error();
        ++chain.state_checks;
        invalid = !(a.value()->state().free() && a.value()->state().within_limits());
      } else {
        auto a = s.AnswerAt(at, v1::SessionAnswer::kMotion, query);
        if (!a.ok()) return a.error();
        chain.motions.push_back(Impl::ToCheck(a.value()->motion()));
        invalid = !chain.motions.back().valid;
        chain.valid_steps += !invalid;
      }
      ++at;
    }
    complete[c] = chain.valid_steps == length ? 1 : 0;
    step += length;
  }
  if (at != answered) {
    return s.Failure(grpc::Status(grpc::StatusCode::INTERNAL, std::to_string(answered) + " answers to " +
                                                                  std::to_string(2 * n) + " step queries, " +
                                                                  std::to_string(at) + " expected"));
  }
  return out;
}

Result<std::vector<RemoteDistance>> RemoteSession::Distances(std::span<const double> rows, int32_t dof,
                                                             double rel_err) {
  return impl_->PerRow<RemoteDistance>(
      rows, dof, "Distances", v1::SessionAnswer::kDistance,
      [rel_err](std::span<const double> q, v1::SessionQuery* query) {
        v1::ComputeDistanceRequest* r = query->mutable_distance();
        SetPositions(q, r->mutable_state());
        r->set_rel_err(rel_err);
      },
      [](const v1::SessionAnswer& a) { return RemoteDistance{a.distance().lower_bound(), a.distance().upper_bound()}; });
}

namespace {

void SetTrackRequest(const RemoteTrackRequest& in, v1::TrackRequest* out) {
  out->set_horizon(in.horizon);
  out->set_max_pairs(static_cast<uint32_t>(in.max_pairs));  // >= 1: checked by Track
  out->set_per_link(in.per_link);
  out->set_exclude_world(!in.world);
  out->set_exclude_self(!in.self);
  out->set_rel_err(in.rel_err);
  out->set_abs_err(in.abs_err);
  out->set_skip_gradient(!in.gradient);
  out->set_convex(in.convex == RemoteTrackRequest::Convex::kGjk ? v1::TRACK_CONVEX_METHOD_GJK
                                                             : v1::TRACK_CONVEX_METHOD_VCLIP);
}

core::Vec3 FromWire(const v1::Vector3& v) { return {v.x(), v.y(), v.z()}; }

// The wire's feature types start at UNSPECIFIED = 0 where ours start at kNone = -1.
RemoteTrackFeature FromWire(const v1::TrackFeature& f) {
  const int type = std::clamp(static_cast<int>(f.type()), 0, static_cast<int>(v1::TRACK_FEATURE_TYPE_TRIANGLE));
  return {static_cast<RemoteTrackFeature::Type>(type - 1), f.index()};
}

RemoteTrack FromWire(const v1::TrackResponse& r) {
  RemoteTrack out;
  out.within_limits = r.within_limits();
  out.candidates = static_cast<int32_t>(r.candidates());
  out.decided = static_cast<int32_t>(r.decided());
  out.same_features = static_cast<int32_t>(r.same_features());
  out.pairs.reserve(static_cast<size_t>(r.pairs_size()));
  for (const v1::TrackedPair& p : r.pairs()) {
    RemoteTrackedPair& o = out.pairs.emplace_back();
    const v1::PairDistance& d = p.distance();
    o.self = d.pair().self();
    o.robot = d.pair().robot();
    o.other = d.pair().other();
    o.lower = d.lower();
    o.upper = d.upper();
    o.point_robot = FromWire(d.point_robot());
    o.point_other = FromWire(d.point_other());
    o.signed_distance = p.signed_distance();
    o.normal = FromWire(p.normal());
    o.feature_robot = FromWire(p.feature_robot());
    o.feature_other = FromWire(p.feature_other());
    o.same_features = p.same_features();
    switch (p.method()) {
      case v1::TRACK_METHOD_VCLIP:
        o.method = RemoteTrackedPair::Method::kVClip;
        break;
      case v1::TRACK_METHOD_WALK:
        o.method = RemoteTrackedPair::Method::kWalk;
        break;
      default:
        o.method = RemoteTrackedPair::Method::kGjk;
    }
    o.gradient.assign(p.gradient().begin(), p.gradient().end());
  }
  return out;
}

}  // namespace

Result<RemoteTrack> RemoteSession::Track(std::span<const double> q, const RemoteTrackRequest& request) {
  auto frames = Track(q, static_cast<int32_t>(q.size()), request);
  if (!frames.ok()) return frames.error();
  return std::move(frames.value().front());
}

Result<std::vector<RemoteTrack>> RemoteSession::Track(std::span<const double> rows, int32_t dof,
                                                      const RemoteTrackRequest& request) {
  if (rows.empty()) return core::InvalidArgument("Track: no configuration given");
  if (request.max_pairs < 1) {
    return core::InvalidArgument("Track: max_pairs must be at least 1, got " + std::to_string(request.max_pairs));
  }
  return impl_->PerRow<RemoteTrack>(
      rows, dof, "Track", v1::SessionAnswer::kTrack,
      [&request](std::span<const double> q, v1::SessionQuery* query) {
        v1::TrackRequest* t = query->mutable_track();
        SetPositions(q, t->mutable_state());
        SetTrackRequest(request, t);
      },
      [](const v1::SessionAnswer& a) { return FromWire(a.track()); });
}

Result<planners::JointSpace> RemoteSpace(const RemoteScene& scene) {
  auto info = scene.Info();
  if (!info.ok()) return info.error();
  const RemoteSceneInfo& i = info.value();
  auto space = planners::JointSpace::Create(i.lower, i.upper, i.continuous);
  if (!space.ok()) {
    return core::Error{space.error().code, "proximityd at " + scene.options().target + " (scene '" + i.scene_id +
                                               "'): " + space.error().message};
  }
  return space;
}

Result<bool> RemoteStateValidity::IsValid(std::span<const double> q) const {
  checks_.fetch_add(1, std::memory_order_relaxed);
  return scene_->CheckState(q);
}

Result<std::vector<uint8_t>> RemoteStateValidity::AreValid(std::span<const double> qs, int32_t dof) const {
  if (dof >= 1) {
    checks_.fetch_add(static_cast<int64_t>(qs.size() / static_cast<size_t>(dof)), std::memory_order_relaxed);
  }
  return scene_->CheckStates(qs, dof);
}

Result<planners::MotionCheck> RemoteMotionValidator::CheckMotion(std::span<const double> q0,
                                                                 std::span<const double> q1) const {
  checks_.fetch_add(1, std::memory_order_relaxed);
  Result<planners::MotionCheck> check = scene_->CheckMotion(q0, q1, request_);
  if (check.ok()) states_.fetch_add(check.value().states, std::memory_order_relaxed);
  return check;
}

Result<std::vector<planners::MotionCheck>> RemoteMotionValidator::Counted(
    Result<std::vector<planners::MotionCheck>> checks) const {
  if (checks.ok()) {
    checks_.fetch_add(static_cast<int64_t>(checks.value().size()), std::memory_order_relaxed);
    for (const planners::MotionCheck& c : checks.value()) states_.fetch_add(c.states, std::memory_order_relaxed);
  }
  return checks;
}

Result<std::vector<planners::MotionCheck>> RemoteMotionValidator::CheckMotionsUntilInvalid(
    std::span<const double> starts, std::span<const double> ends, int32_t dof) const {
  return Counted(scene_->CheckMotionsUntilInvalid(starts, ends, dof, request_));
}

Result<std::vector<planners::MotionCheck>> RemoteMotionValidator::CheckMotions(std::span<const double> starts,
                                                                               std::span<const double> ends,
                                                                               int32_t dof) const {
  return Counted(scene_->CheckMotions(starts, ends, dof, request_));
}

Result<std::vector<planners::StepChecks>> RemoteMotionValidator::CheckStepsUntilInvalid(
    const planners::StateValidityChecker& state_checker, std::span<const double> states,
    std::span<const double> starts, std::span<const double> ends, std::span<const int32_t> chains,
    std::span<const int32_t> after, int32_t dof) const {
  const auto* remote = dynamic_cast<const RemoteStateValidity*>(&state_checker);
  if (remote == nullptr || &remote->scene() != scene_.get()) {
    return MotionValidator::CheckStepsUntilInvalid(state_checker, states, starts, ends, chains, after, dof);
  }
  Result<std::vector<planners::StepChecks>> checks =
      scene_->CheckStepsUntilInvalid(states, starts, ends, chains, dof, request_, after);
  if (checks.ok()) {
    for (const planners::StepChecks& chain : checks.value()) {
      remote->checks_.fetch_add(chain.state_checks, std::memory_order_relaxed);
      checks_.fetch_add(static_cast<int64_t>(chain.motions.size()), std::memory_order_relaxed);
      for (const planners::MotionCheck& c : chain.motions) states_.fetch_add(c.states, std::memory_order_relaxed);
    }
  }
  return checks;
}

std::string RemoteMotionValidator::Describe() const {
  std::string mode = "certified";
  if (!certified()) {
    char text[48];
    std::snprintf(text, sizeof(text), "discrete %.4g", request_.resolution);
    mode = text;
  }
  return "remote " + mode + " (" + scene_->options().target + ", scene '" + scene_->options().scene_id + "')";
}

}  // namespace proximity::clients
