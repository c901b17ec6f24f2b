#include "sim/hbm/cmem_config.hpp"

#include <cmath>
#include <cstdio>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.10g", value);
  return text;
}

}  // namespace

const char* cmemModeName(CmemMode mode) {
  switch (mode) {
    case CmemMode::kOff: return "off";
    case CmemMode::kCache: return "cache";
    case CmemMode::kSoftware: return "software";
  }
  return "?";
}

CmemGeometry cmemGeometryOf(const config::HardwareConfig& hw) {
  const config::CmemConfig& cmem = hw.cmem();
  CmemGeometry geometry;
  // The mode's choices were checked when the parameters loaded.
  geometry.mode = cmem.mode() == "cache"      ? CmemMode::kCache
                  : cmem.mode() == "software" ? CmemMode::kSoftware
                                              : CmemMode::kOff;
  if (geometry.mode == CmemMode::kOff) return geometry;
  const std::string on = "cmem.mode=" + cmem.mode();
  const double bytes = cmem.capacity_mib() * 1024.0 * 1024.0;
  if (bytes <= 0) {
    throw Error(ErrorKind::kInvalidConfig, on + " needs cmem.capacity_mib > 0 (" + hw.name() + " sets " +
                                               number(cmem.capacity_mib()) + ": no CMEM)");
  }
  const uint64_t line = static_cast<uint64_t>(cmem.line_bytes());
  if (bytes != std::floor(bytes) || static_cast<uint64_t>(bytes) % line != 0) {
    throw Error(ErrorKind::kInvalidConfig, "cmem.capacity_mib " + number(cmem.capacity_mib()) + " (" + number(bytes) +
                                               " bytes) is not a whole number of cmem.line_bytes " +
                                               std::to_string(line) + " lines");
  }
  geometry.capacity_bytes = static_cast<uint64_t>(bytes);
  geometry.line_bytes = line;
  geometry.lines = geometry.capacity_bytes / line;
  geometry.bandwidth_gbps = cmem.bandwidth_gbps();
  geometry.hit_latency_ns = cmem.hit_latency_ns();
  if (geometry.mode == CmemMode::kCache) {
    const uint64_t ways = static_cast<uint64_t>(cmem.associativity());
    if (geometry.lines % ways != 0) {
      throw Error(ErrorKind::kInvalidConfig, "cmem.associativity " + std::to_string(ways) + " does not divide the " +
                                                 std::to_string(geometry.lines) +
                                                 " lines of CMEM (cmem.capacity_mib / cmem.line_bytes)");
    }
    geometry.ways = ways;
    geometry.sets = geometry.lines / ways;
  }
  return geometry;
}

}  // namespace tpusim
