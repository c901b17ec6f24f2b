#include "api/plan_text.hpp"

#include <cstdio>
#include <utility>
#include <vector>

namespace tpusim::plan_text {

namespace {

// 3 significant digits in the largest unit below 1000 of it.
std::string scaled(double value, const std::vector<std::pair<double, const char*>>& units) {
  for (const auto& [scale, unit] : units) {
    if (value >= scale || scale == units.back().first) {
      char text[64];
      std::snprintf(text, sizeof(text), "%.3g %s", value / scale, unit);
      return text;
    }
  }
  return "";
}

}  // namespace

std::string value(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string bytes(uint64_t bytes) {
  constexpr double kKiB = 1024.0;
  return scaled(static_cast<double>(bytes),
                {{kKiB * kKiB * kKiB, "GiB"}, {kKiB * kKiB, "MiB"}, {kKiB, "KiB"}, {1.0, "B"}});
}

std::string time(double seconds) {
  return scaled(seconds, {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}});
}

std::string bubble(double bubble) {
  char text[32];
  std::snprintf(text, sizeof(text), "bubble %.0f%%", 100.0 * bubble);
  return text;
}

}  // namespace tpusim::plan_text
