#include "proximity/core/base/result.h"

#include <charconv>

namespace proximity::core {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kParseError:
      return "parse_error";
    case ErrorCode::kResourceExhausted:
      return "resource_exhausted";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::string FormatNumber(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

Status CheckCap(int64_t value, int64_t cap, const std::string& what, std::string_view field) {
  if (cap <= 0 || value <= cap) return {};
  return ResourceExhausted(what + ": " + std::to_string(value) + ", more than the limit of " + std::to_string(cap) +
                           " (" + std::string(field) + ")");
}

std::string Status::ToString() const {
  if (ok_) return "ok";
  return std::string(ErrorCodeName(error_.code)) + ": " + error_.message;
}

}  // namespace proximity::core
