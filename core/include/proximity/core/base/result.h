#pragma once
/// @file
/// Error values for everything a user's input can break (files, meshes, poses, requests).
/// Queries and loaders return these instead of throwing.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace proximity::core {

/// What kind of failure an Error reports; maps one to one onto gRPC status codes in the server.
enum class ErrorCode {
  kInvalidArgument,  ///< A value the caller passed is malformed: NaN, negative tolerance, bad index.
  kNotFound,         ///< A file, name or id does not exist.
  kParseError,       ///< A file exists but its contents cannot be understood.
  kResourceExhausted,///< A request exceeds a configured limit.
  kInternal,         ///< A broken invariant inside the library (a bug).
  kStopped,          ///< The caller's Interrupt ended the work before it was done (a build).
};

/// Returns a stable lower-case name for a code ("invalid_argument", ...).
const char* ErrorCodeName(ErrorCode code);

/// A failure with a message that names what is wrong (the file, field, index or value).
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

/// Success, or an Error. The result of operations that produce no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : ok_(false), error_(std::move(error)) {}  // NOLINT: implicit by design
  static Status Ok() { return {}; }

  bool ok() const { return ok_; }
  const Error& error() const { return error_; }
  /// "code: message", or "ok".
  std::string ToString() const;

 private:
  bool ok_ = true;
  Error error_;
};

/// A value of type T, or an Error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  /// The value; precondition ok().
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  /// The value, or `fallback` when this holds an error (std::expected's value_or).
  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }
  T value_or(T fallback) && { return ok() ? std::move(*this).value() : std::move(fallback); }
  /// The error; precondition !ok().
  const Error& error() const { return std::get<Error>(v_); }
  Status status() const { return ok() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

inline Error InvalidArgument(std::string message) {
  return {ErrorCode::kInvalidArgument, std::move(message)};
}
/// The shortest decimal form of v that reads back as v ("2.9", "1e-19", "inf"), for messages.
std::string FormatNumber(double v);

inline Error ResourceExhausted(std::string message) {
  return {ErrorCode::kResourceExhausted, std::move(message)};
}
/// OK when `value` is within `cap` (0: no cap), else kResourceExhausted "<what>: <value>, more than the
/// limit of <cap> (<field>)": how every BuildLimits refusal reads.
Status CheckCap(int64_t value, int64_t cap, const std::string& what, std::string_view field);

inline Error Stopped(std::string message) { return {ErrorCode::kStopped, std::move(message)}; }
inline Error NotFound(std::string message) { return {ErrorCode::kNotFound, std::move(message)}; }
inline Error ParseError(std::string message) { return {ErrorCode::kParseError, std::move(message)}; }

}  // namespace proximity::core
