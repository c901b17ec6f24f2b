// Fuzz target: the slice strings of a run. Line 1 is --topology ("4x4x4"), line 2
// ici.ocs_failed_cubes ("none", "3,17"), line 3 (optional) ici.topology ("3d_torus"), and
// any further lines more overrides as given to --set ("ici.ocs_cube_edge=2").
// The slice is made as `tpusim run --topology` makes it (api/strategy.cpp: the shape
// parsed for the kind ici.topology names, on tpuv4 with the overrides) and wired through
// the optical switches (wireSlice).
#include <sstream>

#include "fuzz/fuzz_support.hpp"
#include "sim/interconnect/ocs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tpusim;
  static const HardwareParams tpuv4 = HardwareParams::load("tpuv4");
  return fuzz::expectErrors([&] {
    std::istringstream lines{std::string(fuzz::asText(data, size))};
    std::string shape, failed, kind;
    std::getline(lines, shape);
    std::getline(lines, failed);
    std::getline(lines, kind);
    HardwareParams hw = tpuv4;
    if (!failed.empty()) hw.set("ici.ocs_failed_cubes", failed);
    if (!kind.empty()) hw.set("ici.topology", kind);
    for (std::string line; std::getline(lines, line);) {
      const auto [key, value] = parseOverride(line);
      hw.set(key, value);
    }
    const OcsConfig ocs = ocsConfigOf(hw);
    const Topology slice = Topology::parse(topologyKindFromName(hw.config().ici().topology()), shape);
    wireSlice(slice, ocs);
  });
}
