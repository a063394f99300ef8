#include "server/call.h"

#include <algorithm>
#include <cctype>

#include "server/log.h"

namespace proximity::server {

namespace {

using Clock = std::chrono::steady_clock;

// Failed calls are logged at most kRate lines a second on average (bursts of kBurst): a client sending
// bad requests in a loop cannot flood the log. Left-out lines are counted in the metrics and the next
// line logged says how many it stands for.
class FailureLogLimiter {
 public:
  static constexpr double kRate = 20.0;
  static constexpr double kBurst = 50.0;

  /// Whether a failed call may be logged now; *suppressed receives the lines left out since the last.
  bool Allow(int64_t* suppressed) {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    tokens_ = std::min(kBurst, tokens_ + kRate * std::chrono::duration<double>(now - last_).count());
    last_ = now;
    if (tokens_ < 1.0) {
      ++suppressed_;
      *suppressed = 0;
      return false;
    }
    tokens_ -= 1.0;
    *suppressed = suppressed_;
    suppressed_ = 0;
    return true;
  }

 private:
  std::mutex mutex_;
  double tokens_ = kBurst;
  Clock::time_point last_ = Clock::now();
  int64_t suppressed_ = 0;
};

FailureLogLimiter& FailureLog() {
  static FailureLogLimiter limiter;
  return limiter;
}

// Equal strings, in time that depends on their lengths only (not on where they differ).
bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// CallRecorder

CallRecorder::CallRecorder(Metrics* metrics, Rpc rpc, std::string_view scene_id)
    : metrics_(metrics), rpc_(rpc), start_(Clock::now()), scene_id_(scene_id) {
  metrics_->Started(rpc);
}

CallRecorder::~CallRecorder() {
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  metrics_->Handled(rpc_, status_.error_code(), seconds);
  const spdlog::level::level_enum level = Level();
  if (!LogEnabled(level)) return;
  int64_t suppressed = 0;
  if (!status_.ok()) {
    if (!FailureLog().Allow(&suppressed)) {
      metrics_->AddSuppressedLogs(1);
      return;
    }
  }
  nlohmann::json fields = {{"rpc", RpcName(rpc_)},
                           {"code", GrpcCodeName(status_.error_code())},
                           {"latency_ms", seconds * 1e3}};
  if (suppressed > 0) fields["suppressed_before"] = suppressed;
  if (!client_.empty()) fields["client"] = client_;
  if (!scene_id_.empty()) fields["scene_id"] = Bounded(scene_id_, kMaxQuotedBytes);
  if (states_ >= 0) fields["states"] = states_;
  for (auto& [key, value] : extra_.items()) fields[key] = value;
  if (!status_.ok()) fields["error"] = Bounded(status_.error_message(), kMaxMessageBytes);
  LogEvent(level, status_.ok() ? "rpc done" : "rpc failed", fields);
}

spdlog::level::level_enum CallRecorder::Level() const {
  if (status_.ok()) {
    return (rpc_ == Rpc::kCreateScene || rpc_ == Rpc::kUpdateWorld || rpc_ == Rpc::kDeleteScene ||
            rpc_ == Rpc::kPlan)
               ? spdlog::level::info
               : spdlog::level::debug;
  }
  return IsServerFault(status_.error_code()) ? spdlog::level::err : spdlog::level::info;
}

// ------------------------------------------------------------------------------------------------
// CallCancel, StreamWatchdog

std::chrono::system_clock::time_point TimeAfter(std::chrono::system_clock::time_point t, double seconds) {
  using TimePoint = std::chrono::system_clock::time_point;
  const double room = std::chrono::duration<double>(TimePoint::max() - t).count();
  if (!(seconds < room - 1.0)) return TimePoint::max();  // the 1 s: the cast's rounding
  return t + std::chrono::duration_cast<TimePoint::duration>(std::chrono::duration<double>(std::max(seconds, 0.0)));
}

CallCancel::CallCancel(grpc::ServerContext* context, double max_seconds)
    : context_(context),
      start_(std::chrono::system_clock::now()),
      deadline_(std::min(context->deadline(), TimeAfter(start_, max_seconds))) {}

grpc::Status CallCancel::status(std::string_view progress) const {
  // The server's deadline runs from when the request arrived, the client's from when it was sent: on
  // a loaded machine the client's timer cancels the call up to the transit delay before the server's
  // clock reaches the deadline. A cancellation within a quarter of the call's time (50 to 250 ms) of
  // the deadline is the deadline's.
  const auto span = deadline_ - start_;
  const auto window = std::clamp<std::chrono::system_clock::duration>(span / 4, std::chrono::milliseconds(50),
                                                                      std::chrono::milliseconds(250));
  return CallStopped(std::chrono::system_clock::now() + window >= deadline_, progress);
}

StreamWatchdog::StreamWatchdog(grpc::ServerContext* context, std::chrono::system_clock::time_point deadline)
    : thread_([this, context, deadline] {
        std::unique_lock lock(mutex_);
        const auto until = TimeAfter(deadline, std::chrono::duration<double>(kGrace).count());
        if (!done_cv_.wait_until(lock, until, [this] { return done_; })) context->TryCancel();
      }) {}

StreamWatchdog::~StreamWatchdog() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_all();
  thread_.join();
}

// ------------------------------------------------------------------------------------------------
// CallScope, Opening

grpc::Status CallScope::FitResponse(google::protobuf::Message* response, std::string_view advice) {
  const auto bytes = static_cast<int64_t>(response->ByteSizeLong());
  if (limits_->max_response_bytes <= 0 || bytes <= limits_->max_response_bytes) return grpc::Status::OK;
  metrics().AddOversizeResponse();
  response->Clear();
  return ResponseTooLarge(bytes, limits_->max_response_bytes, advice);
}

Opening::Opening(SceneRegistry* registry, Metrics* metrics, const ServiceLimits* limits,
                 std::vector<ClientToken> tokens)
    : registry_(registry), metrics_(metrics), limits_(limits), tokens_(std::move(tokens)) {
  for (ClientToken& t : tokens_) {
    named_ = named_ || !t.name.empty();
    t.token = "Bearer " + t.token;  // as the metadata carries it
  }
}

grpc::Status Opening::Authorize(grpc::ServerContext* context, std::string_view* client) const {
  if (tokens_.empty()) return grpc::Status::OK;
  const auto& metadata = context->client_metadata();
  const auto it = metadata.find("authorization");
  const std::string_view given =
      it == metadata.end() ? std::string_view() : std::string_view(it->second.data(), it->second.size());
  // Every token is compared, none skipped once one matched: the time taken does not tell which one did.
  size_t match = tokens_.size();
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const bool equal = ConstantTimeEqual(given, tokens_[i].token);
    match = equal ? i : match;
  }
  if (match == tokens_.size()) return Unauthenticated();
  if (client != nullptr) *client = tokens_[match].name;
  return grpc::Status::OK;
}

// ------------------------------------------------------------------------------------------------
// The token file

core::Result<std::vector<ClientToken>> ParseTokenFile(std::string_view text) {
  constexpr size_t kMinTokenBytes = 16;
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  const auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
  };
  std::vector<ClientToken> out;
  std::vector<size_t> lines;  // where each token was read
  bool single = false;
  size_t line_no = 0;
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    while (!line.empty() && space(line.front())) line.remove_prefix(1);
    while (!line.empty() && space(line.back())) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string_view> words;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && space(line[i])) ++i;
      size_t j = i;
      while (j < line.size() && !space(line[j])) ++j;
      if (j > i) words.push_back(line.substr(i, j - i));
      i = j;
    }
    const std::string where = "line " + std::to_string(line_no) + ": ";
    if (out.empty() && words.size() == 1) {
      // Today's format: the one token, every caller the same client.
      if (words[0].size() < kMinTokenBytes) {
        return core::InvalidArgument(where + "the token must be at least " + std::to_string(kMinTokenBytes) +
                                     " characters");
      }
      out.push_back({"", std::string(words[0])});
      single = true;
      continue;
    }
    if (single) {
      return core::InvalidArgument(where + "the file's first token line holds a single token, so nothing but "
                                   "blank lines and comments may follow it (write NAME TOKEN on every line to "
                                   "name clients)");
    }
    if (words.size() != 2) {
      return core::InvalidArgument(where + "expected NAME TOKEN (a client name, whitespace, its token), got " +
                                   std::to_string(words.size()) + " words");
    }
    const std::string_view name = words[0];
    const std::string_view token = words[1];
    if (name.size() > 64 || !std::all_of(name.begin(), name.end(), name_char)) {
      return core::InvalidArgument(where + "a client name must be 1 to 64 letters, digits, '.', '_' or '-'");
    }
    if (token.size() < kMinTokenBytes) {
      return core::InvalidArgument(where + "the token of client '" + std::string(name) + "' must be at least " +
                                   std::to_string(kMinTokenBytes) + " characters");
    }
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k].name == name) {
        return core::InvalidArgument(where + "client '" + std::string(name) + "' is named already on line " +
                                     std::to_string(lines[k]));
      }
      if (out[k].token == token) {
        return core::InvalidArgument(where + "client '" + std::string(name) + "' has the same token as client '" +
                                     out[k].name + "' on line " + std::to_string(lines[k]) +
                                     " (each client needs its own)");
      }
    }
    out.push_back({std::string(name), std::string(token)});
    lines.push_back(line_no);
  }
  if (out.empty()) return core::InvalidArgument("the file holds no token (only blank lines and comments)");
  return out;
}

}  // namespace proximity::server
