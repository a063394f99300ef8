#pragma once
/// @file
/// The one place gRPC statuses are built: core errors translated to gRPC codes, and the few statuses
/// the service makes itself (an unknown scene, a missing token, another client's scene, an oversized
/// response, a call stopped by its client or its deadline, a Session refused or left by its client). No other server file constructs a grpc::Status or names a code
/// (grpc::StatusCode::...).
///
/// Codes: kInvalidArgument and kParseError -> INVALID_ARGUMENT, kResourceExhausted ->
/// RESOURCE_EXHAUSTED, kInternal -> INTERNAL, kNotFound -> NOT_FOUND for queries. NOT_FOUND on the
/// wire means "unknown scene id" (clients re-send a scene on it), so while a scene is being built
/// (CreateScene, UpdateWorld) every core error about the request's content is INVALID_ARGUMENT: a
/// missing URDF, SRDF or mesh file, an unknown link in an allowed pair, an unknown object id.

#include <grpcpp/support/status.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proximity/core/base/result.h"

namespace proximity::server {

/// Where an error arose, which decides what a core kNotFound means on the wire.
enum class ErrorScope {
  kQuery,         ///< A query on a loaded scene.
  kSceneContent,  ///< Building a scene from a request: anything missing is a bad argument.
};

/// Longest status message sent (and logged): request strings echoed in messages stay bounded.
inline constexpr size_t kMaxMessageBytes = 1024;
/// Longest request string (an id, a name) quoted in a message or a log line.
inline constexpr size_t kMaxQuotedBytes = 96;

/// `text`, cut to at most `max_bytes` (on a character boundary) with a note of how much was left out.
std::string Bounded(std::string_view text, size_t max_bytes);

/// The gRPC code of a core error code in `scope`.
grpc::StatusCode GrpcCode(core::ErrorCode code, ErrorScope scope = ErrorScope::kQuery);

/// The gRPC status of a core error in `scope`; the message is kept, bounded to kMaxMessageBytes.
grpc::Status ToGrpcStatus(const core::Error& error, ErrorScope scope = ErrorScope::kQuery);
inline grpc::Status ToGrpcStatus(const core::Status& status, ErrorScope scope = ErrorScope::kQuery) {
  return status.ok() ? grpc::Status::OK : ToGrpcStatus(status.error(), scope);
}

/// A core error prefixed with the request field it concerns ("state: " + message).
core::Error WithField(std::string_view field, const core::Error& error);

using core::ResourceExhausted;

// ---- Statuses of the service itself -------------------------------------------------------------

/// No scene `id` is loaded: NOT_FOUND naming it (bounded to kMaxQuotedBytes), or INVALID_ARGUMENT
/// when the request gave no id at all.
grpc::Status SceneNotFound(std::string_view id);
/// ALREADY_EXISTS: `name` names scene `holder` (another one).
grpc::Status SceneNameTaken(std::string_view name, std::string_view holder);
/// NOT_FOUND: scene `scene` does not hold `name`.
grpc::Status SceneNameNotHeld(std::string_view name, std::string_view scene);

/// UNAUTHENTICATED: the server needs a bearer token and the call did not carry it.
grpc::Status Unauthenticated();

/// PERMISSION_DENIED: the named client `client` does not own scene `id` (DeleteScene): other clients
/// created it, or it is the built-in scene.
grpc::Status NotSceneOwner(std::string_view client, std::string_view id);

/// RESOURCE_EXHAUSTED: a response of `bytes` would exceed the server's --max-message-bytes (`limit`);
/// `advice` tells the client how to ask for less.
grpc::Status ResponseTooLarge(int64_t bytes, int64_t limit, std::string_view advice);

/// RESOURCE_EXHAUSTED: the server is already serving `limit` calls, its --max-concurrent-calls.
grpc::Status TooManyConcurrentCalls(int32_t limit);
/// UNAVAILABLE: a Session opened while the server drains (the client opens it elsewhere).
grpc::Status SessionRefusedWhileDraining();
/// CANCELLED: a Session whose client stopped reading (a reply could not be sent).
grpc::Status SessionClientGone();

/// A call that stopped before its answer: DEADLINE_EXCEEDED when `deadline_passed`, else CANCELLED;
/// the message says how far it got ("cancelled after 12 of 100 states").
grpc::Status CallStopped(bool deadline_passed, std::string_view progress);

/// UNKNOWN: what a call reports when its handler left without a status (a bug, shown as such).
grpc::Status NoStatus();

// ---- Codes --------------------------------------------------------------------------------------

/// The codes gRPC defines (OK = 0 .. UNAUTHENTICATED = 16).
inline constexpr size_t kNumGrpcCodes = 17;

/// The index of `code` among gRPC's codes, [0, kNumGrpcCodes); a code gRPC does not define counts as
/// UNKNOWN.
size_t GrpcCodeIndex(grpc::StatusCode code);

/// Whether `code` reports a fault of the server rather than of the request (INTERNAL, UNKNOWN).
bool IsServerFault(grpc::StatusCode code);

/// The name go-grpc-prometheus gives a code ("OK", "InvalidArgument", ...), for metrics and logs.
const char* GrpcCodeName(grpc::StatusCode code);

/// The HTTP status of a call's gRPC code, for the viewer's JSON API (as grpc-gateway maps them):
/// INVALID_ARGUMENT 400, UNAUTHENTICATED 401, PERMISSION_DENIED 403, NOT_FOUND 404, RESOURCE_EXHAUSTED
/// 429, CANCELLED 499, UNAVAILABLE 503, DEADLINE_EXCEEDED 504, server faults 500.
int HttpStatus(grpc::StatusCode code);

/// INVALID_ARGUMENT: a viewer API request body that is not the method's request in JSON.
grpc::Status BadRequestBody(std::string_view why);
/// INTERNAL: a response that protobuf's JSON mapping could not print.
grpc::Status JsonEncodingFailed(std::string_view why);
/// UNIMPLEMENTED: the viewer's API forwards no method `method` (`methods`: those it forwards).
grpc::Status ViewerUnknownMethod(std::string_view method, std::string_view methods);

/// PERMISSION_DENIED: the server requires client certificates, which its HTTP port cannot check, so the
/// viewer's API does not forward calls.
grpc::Status ViewerNeedsClientCertificates();
/// PERMISSION_DENIED: a viewer API request whose Host (or Origin, `what`) does not name this server.
grpc::Status ViewerForeignHost(std::string_view what, std::string_view value);
/// INVALID_ARGUMENT: a viewer API request that is not application/json (the viewer answers it 415).
grpc::Status ViewerNotJson(std::string_view content_type);

}  // namespace proximity::server
