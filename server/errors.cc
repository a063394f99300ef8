#include "server/errors.h"

namespace proximity::server {

grpc::StatusCode GrpcCode(core::ErrorCode code, ErrorScope scope) {
  switch (code) {
    case core::ErrorCode::kInvalidArgument:
    case core::ErrorCode::kParseError:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case core::ErrorCode::kNotFound:
      return scope == ErrorScope::kQuery ? grpc::StatusCode::NOT_FOUND : grpc::StatusCode::INVALID_ARGUMENT;
    case core::ErrorCode::kResourceExhausted:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case core::ErrorCode::kInternal:
      return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;
}

std::string Bounded(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  // Cut on a UTF-8 character boundary.
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size() - cut) + " more bytes)";
}

grpc::Status ToGrpcStatus(const core::Error& error, ErrorScope scope) {
  return {GrpcCode(error.code, scope), Bounded(error.message, kMaxMessageBytes)};
}

core::Error WithField(std::string_view field, const core::Error& error) {
  return {error.code, std::string(field) + ": " + error.message};
}

grpc::Status SceneNotFound(std::string_view id) {
  if (id.empty()) return {grpc::StatusCode::INVALID_ARGUMENT, "scene_id is empty"};
  return {grpc::StatusCode::NOT_FOUND, "scene '" + Bounded(id, kMaxQuotedBytes) +
                                           "' is not loaded on this server (create it with CreateScene)"};
}

grpc::Status Unauthenticated() {
  return {grpc::StatusCode::UNAUTHENTICATED,
          "this server needs a bearer token: send 'authorization: Bearer <token>' metadata"};
}

grpc::Status ResponseTooLarge(int64_t bytes, int64_t limit, std::string_view advice) {
  return {grpc::StatusCode::RESOURCE_EXHAUSTED, "the response would be " + std::to_string(bytes) +
                                                    " bytes, more than the server's --max-message-bytes = " +
                                                    std::to_string(limit) + "; " + std::string(advice)};
}

grpc::Status TooManyConcurrentCalls(int32_t limit) {
  return {grpc::StatusCode::RESOURCE_EXHAUSTED, "the server is already serving " + std::to_string(limit) +
                                                    " calls, its --max-concurrent-calls limit; retry later"};
}

grpc::Status CallStopped(bool deadline_passed, std::string_view progress) {
  if (deadline_passed) return {grpc::StatusCode::DEADLINE_EXCEEDED, "deadline exceeded after " + std::string(progress)};
  return {grpc::StatusCode::CANCELLED, "cancelled after " + std::string(progress)};
}

grpc::Status NoStatus() { return {grpc::StatusCode::UNKNOWN, "handler returned without a status"}; }

size_t GrpcCodeIndex(grpc::StatusCode code) {
  const auto c = static_cast<size_t>(code);
  return c < kNumGrpcCodes ? c : static_cast<size_t>(grpc::StatusCode::UNKNOWN);
}

bool IsServerFault(grpc::StatusCode code) {
  return code == grpc::StatusCode::INTERNAL || code == grpc::StatusCode::UNKNOWN;
}

const char* GrpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "Canceled";
    case grpc::StatusCode::UNKNOWN: return "Unknown";
    case grpc::StatusCode::INVALID_ARGUMENT: return "InvalidArgument";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DeadlineExceeded";
    case grpc::StatusCode::NOT_FOUND: return "NotFound";
    case grpc::StatusCode::ALREADY_EXISTS: return "AlreadyExists";
    case grpc::StatusCode::PERMISSION_DENIED: return "PermissionDenied";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "ResourceExhausted";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FailedPrecondition";
    case grpc::StatusCode::ABORTED: return "Aborted";
    case grpc::StatusCode::OUT_OF_RANGE: return "OutOfRange";
    case grpc::StatusCode::UNIMPLEMENTED: return "Unimplemented";
    case grpc::StatusCode::INTERNAL: return "Internal";
    case grpc::StatusCode::UNAVAILABLE: return "Unavailable";
    case grpc::StatusCode::DATA_LOSS: return "DataLoss";
    case grpc::StatusCode::UNAUTHENTICATED: return "Unauthenticated";
    default: return "Unknown";
  }
}

}  // namespace proximity::server
