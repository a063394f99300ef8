#pragma once
/// @file
/// Structured logs on stderr: one JSON object per line (ts, level, msg, then the event's fields:
/// rpc, scene_id, code, latency_ms, states, ...) or, for people at a terminal, one text line.

#include <spdlog/common.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace proximity::server {

enum class LogFormat { kJson, kText };

/// Sets the format and the lowest level written. Thread-safe; the default is JSON at info.
void ConfigureLogging(LogFormat format, spdlog::level::level_enum level);

/// Parses "trace|debug|info|warn|error|critical|off"; false when unknown.
bool ParseLogLevel(std::string_view name, spdlog::level::level_enum* level);

/// Whether an event at `level` would be written (skip building its fields otherwise).
bool LogEnabled(spdlog::level::level_enum level);

/// Writes one event. `fields` is a JSON object (or null).
void LogEvent(spdlog::level::level_enum level, std::string_view msg, const nlohmann::json& fields = nullptr);

}  // namespace proximity::server
