#include "sim/interconnect/ocs.hpp"

#include <algorithm>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

std::vector<int> parseCubeList(const std::string& text, int pod_cubes) {
  std::vector<int> cubes;
  size_t begin = 0;
  while (begin <= text.size()) {  // every item, empty ones too ("3," has "3" and "")
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, comma - begin);
    begin = comma + 1;
    size_t used = 0;
    int cube = -1;
    try {
      cube = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || cube < 0 || cube >= pod_cubes) {
      throw Error(ErrorKind::kInvalidConfig, "ici.ocs_failed_cubes: '" + item + "' is not a cube id in [0, " +
                                                 std::to_string(pod_cubes) + ")");
    }
    cubes.push_back(cube);
  }
  std::sort(cubes.begin(), cubes.end());
  cubes.erase(std::unique(cubes.begin(), cubes.end()), cubes.end());
  return cubes;
}

}  // namespace

OcsConfig ocsConfigOf(const HardwareParams& hw) {
  const config::IciConfig& ici = hw.config().ici();
  OcsConfig config;
  config.cube_edge = static_cast<int>(ici.ocs_cube_edge());
  config.pod_cubes = static_cast<int>(ici.ocs_pod_cubes());
  config.insertion_latency_ns = ici.ocs_latency_ns();
  config.reconfiguration_s = ici.ocs_reconfiguration_ms() * 1e-3;
  if (config.cube_edge > 0 && config.pod_cubes == 0) {
    throw Error(ErrorKind::kInvalidConfig, "ici.ocs_cube_edge is set but ici.ocs_pod_cubes is 0: a pod has cubes");
  }
  if (ici.ocs_failed_cubes() != "none") config.failed_cubes = parseCubeList(ici.ocs_failed_cubes(), config.pod_cubes);
  return config;
}

OcsWiring wireSlice(const Topology& slice, const OcsConfig& config) {
  OcsWiring wiring;
  const int e = config.cube_edge;
  if (e == 0) return wiring;
  int needed = 1;
  bool inside_one = true;
  for (int d = 0; d < kDims; ++d) {
    const int n = slice.dim(d);
    if (n > e && n % e != 0) {
      throw Error(ErrorKind::kInvalidConfig, "slice " + slice.shapeString() + ": each dimension must fit in one " +
                                                 std::to_string(e) + "-chip cube edge or be a multiple of it");
    }
    needed *= n >= e ? n / e : 1;
    inside_one = inside_one && n < e;
  }
  if (slice.kind() == TopologyKind::kTwistedTorus3d && slice.dim(0) % e != 0) {
    // The twist's wrapping x and y links jump k chips along z: a cube's fixed electrical
    // wiring has no such link, so k must span whole cubes and every wrap pass an OCS.
    throw Error(ErrorKind::kInvalidConfig, "twisted slice " + slice.shapeString() + ": k must be a multiple of the " +
                                               std::to_string(e) + "-chip cube edge to wire the twist through the OCS");
  }
  if (inside_one) return wiring;  // electrical links inside one cube
  if (needed > config.pod_cubes) {
    throw Error(ErrorKind::kInvalidConfig, "slice " + slice.shapeString() + " needs " + std::to_string(needed) +
                                               " cubes; the pod has " + std::to_string(config.pod_cubes));
  }
  for (int cube = 0; cube < config.pod_cubes && static_cast<int>(wiring.cubes.size()) < needed; ++cube) {
    if (!std::binary_search(config.failed_cubes.begin(), config.failed_cubes.end(), cube)) {
      wiring.cubes.push_back(cube);
    }
  }
  if (static_cast<int>(wiring.cubes.size()) < needed) {
    throw Error(ErrorKind::kInvalidConfig,
                "slice " + slice.shapeString() + " needs " + std::to_string(needed) + " healthy cubes; the pod has " +
                    std::to_string(config.pod_cubes - static_cast<int>(config.failed_cubes.size())) + " of " +
                    std::to_string(config.pod_cubes) + " (ici.ocs_failed_cubes)");
  }
  wiring.used = true;
  // A link crosses a cube face when its two ends lie in different cubes along its
  // dimension, or it wraps around a dimension of at least one cube edge. On the twisted
  // torus the wrapping x and y links are the ones that also shift z by k: the switches
  // connect the face of one cube to the opposite face of the cube k chips along z, so the
  // twist costs no more OCS passes than the regular wraparound.
  for (LinkId link = 0; link < slice.numLinkSlots(); ++link) {
    if (!slice.linkExists(link)) continue;
    const int d = slice.linkDim(link);
    if (slice.dim(d) < e) continue;
    const int from = slice.coords(slice.linkSource(link))[d];
    const int dir = slice.linkDir(link);
    const bool wraps = dir > 0 ? from == slice.dim(d) - 1 : from == 0;
    const int to = wraps ? (dir > 0 ? 0 : slice.dim(d) - 1) : from + dir;
    if (wraps || from / e != to / e) wiring.ocs_links.push_back(link);
  }
  return wiring;
}

}  // namespace tpusim
