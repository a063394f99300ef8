#include "proximity/clients/remote_validity.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <optional>
#include <cstdio>
#include <cstring>
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

v1::MotionMode WireMode(core::MotionRequest::Mode mode) {
  return mode == core::MotionRequest::Mode::kDiscrete ? v1::MOTION_MODE_DISCRETE : v1::MOTION_MODE_CERTIFIED;
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
      } else if (s.error_code() == grpc::StatusCode::UNAVAILABLE && options.retry.enabled &&
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
                                                       const core::MotionRequest& motion) const {
  thread_local v1::CheckMotionRequest request;
  thread_local v1::CheckMotionResponse response;
  request.set_scene_id(impl_->options.scene_id);
  SetPositions(q0, request.mutable_start());
  SetPositions(q1, request.mutable_goal());
  request.set_mode(WireMode(motion.mode));
  request.set_resolution(motion.mode == core::MotionRequest::Mode::kDiscrete ? motion.resolution : 0.0);
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

Result<planners::MotionCheck> RemoteMotionValidator::CheckMotion(std::span<const double> q0,
                                                                 std::span<const double> q1) const {
  checks_.fetch_add(1, std::memory_order_relaxed);
  Result<planners::MotionCheck> check = scene_->CheckMotion(q0, q1, request_);
  if (check.ok()) states_.fetch_add(check.value().states, std::memory_order_relaxed);
  return check;
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
