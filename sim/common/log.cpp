#include "sim/common/log.hpp"

#include <array>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>

#include "sim/common/error.hpp"

namespace tpusim {

void setLogLevel(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, spdlog::level::level_enum>, 7> kLevels = {{
      {"trace", spdlog::level::trace},
      {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},
      {"critical", spdlog::level::critical},
      {"off", spdlog::level::off},
  }};
  // Logs go to stderr so that stdout carries only results.
  static const bool kInstalled = [] {
    auto logger = spdlog::stderr_color_mt("tpusim");
    logger->set_pattern("[%l] %v");
    spdlog::set_default_logger(logger);
    return true;
  }();
  (void)kInstalled;
  for (const auto& [level_name, level] : kLevels) {
    if (level_name == name) {
      spdlog::set_level(level);
      return;
    }
  }
  throw Error(ErrorKind::kInvalidConfig,
              "unknown log level '" + std::string(name) + "' (use trace, debug, info, warn, error, critical or off)");
}

}  // namespace tpusim
