#pragma once
/// @file
/// The one translation point from core errors to gRPC statuses.
///
/// Codes: kInvalidArgument and kParseError -> INVALID_ARGUMENT, kResourceExhausted ->
/// RESOURCE_EXHAUSTED, kInternal -> INTERNAL, kNotFound -> NOT_FOUND for queries. NOT_FOUND on the
/// wire means "unknown scene id" (clients re-send a scene on it), so while a scene is being built
/// (CreateScene, UpdateWorld) every core error about the request's content is INVALID_ARGUMENT: a
/// missing URDF, SRDF or mesh file, an unknown link in an allowed pair, an unknown object id.

#include <grpcpp/support/status.h>

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

/// The name go-grpc-prometheus gives a code ("OK", "InvalidArgument", ...), for metrics and logs.
const char* GrpcCodeName(grpc::StatusCode code);

}  // namespace proximity::server
