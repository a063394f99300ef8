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
    case core::ErrorCode::kStopped:
      return grpc::StatusCode::ABORTED;
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

grpc::Status SceneNameTaken(std::string_view name, std::string_view holder) {
  return {grpc::StatusCode::ALREADY_EXISTS, "name '" + Bounded(name, kMaxQuotedBytes) + "' already names scene " +
                                                std::string(holder) +
                                                "; choose another name, or reassign it to move it to this scene"};
}

grpc::Status SceneNameNotHeld(std::string_view name, std::string_view scene) {
  return {grpc::StatusCode::NOT_FOUND, "scene '" + Bounded(scene, kMaxQuotedBytes) + "' has no name '" +
                                           Bounded(name, kMaxQuotedBytes) + "'"};
}

grpc::Status SessionRefusedWhileDraining() {
  return {grpc::StatusCode::UNAVAILABLE, "the server is draining; open the session elsewhere"};
}

grpc::Status SessionClientGone() { return {grpc::StatusCode::CANCELLED, "the client is gone"}; }

grpc::Status Unauthenticated() {
  return {grpc::StatusCode::UNAUTHENTICATED,
          "this server needs a bearer token: send 'authorization: Bearer <token>' metadata"};
}

grpc::Status NotSceneOwner(std::string_view client, std::string_view id) {
  return {grpc::StatusCode::PERMISSION_DENIED,
          "client '" + std::string(client) + "' does not own scene '" + Bounded(id, kMaxQuotedBytes) +
              "': a client deletes only scenes it created (the built-in scene belongs to nobody)"};
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

int HttpStatus(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return 200;
    case grpc::StatusCode::CANCELLED: return 499;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE: return 400;
    case grpc::StatusCode::UNAUTHENTICATED: return 401;
    case grpc::StatusCode::PERMISSION_DENIED: return 403;
    case grpc::StatusCode::NOT_FOUND: return 404;
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::ABORTED: return 409;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return 429;
    case grpc::StatusCode::UNIMPLEMENTED: return 501;
    case grpc::StatusCode::UNAVAILABLE: return 503;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return 504;
    default: return 500;
  }
}

grpc::Status BadRequestBody(std::string_view why) {
  return {grpc::StatusCode::INVALID_ARGUMENT, "request body: " + Bounded(why, kMaxMessageBytes / 2)};
}

grpc::Status JsonEncodingFailed(std::string_view why) {
  return {grpc::StatusCode::INTERNAL, "the response has no JSON form: " + Bounded(why, kMaxMessageBytes / 2)};
}

grpc::Status ViewerUnknownMethod(std::string_view method, std::string_view methods) {
  return {grpc::StatusCode::UNIMPLEMENTED, "the viewer's API has no method '" + Bounded(method, kMaxQuotedBytes) +
                                               "'; it forwards " + std::string(methods)};
}

grpc::Status ViewerForeignHost(std::string_view what, std::string_view value) {
  return {grpc::StatusCode::PERMISSION_DENIED,
          "the viewer's API answers only its own page on this server: " + std::string(what) + " '" +
              Bounded(value, 200) + "' is not one of its addresses (--viewer-allowed-host adds one)"};
}

grpc::Status ViewerNotJson(std::string_view content_type) {
  return {grpc::StatusCode::INVALID_ARGUMENT,
          "the viewer's API takes Content-Type: application/json, not '" + Bounded(content_type, 200) + "'"};
}

grpc::Status ViewerNeedsClientCertificates() {
  return {grpc::StatusCode::PERMISSION_DENIED,
          "the viewer's API is off: this server requires client certificates (--tls-client-ca), which its HTTP "
          "port cannot check"};
}

}  // namespace proximity::server
