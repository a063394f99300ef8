#include "server/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <ctime>

namespace proximity::server {

namespace {

std::atomic<LogFormat> g_format{LogFormat::kJson};

spdlog::logger& Logger() {
  // stderr, unbuffered, with spdlog's own lock so lines from many threads never interleave.
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("proximityd", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("%v");
    l->set_level(spdlog::level::info);
    l->flush_on(spdlog::level::trace);
    return l;
  }();
  return *logger;
}

std::string Timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms));
  return buf;
}

}  // namespace

void ConfigureLogging(LogFormat format, spdlog::level::level_enum level) {
  g_format.store(format);
  Logger().set_level(level);
}

bool ParseLogLevel(std::string_view name, spdlog::level::level_enum* level) {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"warning", spdlog::level::warn}, {"error", spdlog::level::err},
      {"critical", spdlog::level::critical}, {"off", spdlog::level::off}};
  for (const auto& [n, l] : kLevels) {
    if (n == name) {
      *level = l;
      return true;
    }
  }
  return false;
}

bool LogEnabled(spdlog::level::level_enum level) { return Logger().should_log(level); }

void LogEvent(spdlog::level::level_enum level, std::string_view msg, const nlohmann::json& fields) {
  spdlog::logger& logger = Logger();
  if (!logger.should_log(level)) return;
  const auto level_name = spdlog::level::to_string_view(level);
  std::string line;
  if (g_format.load() == LogFormat::kJson) {
    nlohmann::json event = {{"ts", Timestamp()},
                            {"level", std::string(level_name.data(), level_name.size())},
                            {"msg", msg}};
    if (fields.is_object()) {
      for (const auto& [key, value] : fields.items()) event[key] = value;
    }
    // Replace invalid UTF-8 (a file name, a client's id) rather than throw.
    line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = Timestamp() + " " + std::string(level_name.data(), level_name.size()) + " " + std::string(msg);
    if (fields.is_object()) {
      for (const auto& [key, value] : fields.items()) {
        line += " " + key + "=" +
                (value.is_string() ? value.get<std::string>()
                                   : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      }
    }
  }
  logger.log(level, "{}", line);
}

}  // namespace proximity::server
