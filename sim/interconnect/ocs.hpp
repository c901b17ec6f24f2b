// Optical circuit switches as in TPU v4 (Jouppi et al., ISCA 2023, sections 2 and 3): a pod
// is built of cubes of e x e x e chips (e = 4: 64 chips) wired electrically inside; every
// link that leaves a cube through one of its faces, wraparounds included, goes through an
// OCS. A slice takes whole cubes (each dimension a multiple of e) or fits in one cube; the
// switches wire the chosen cubes into the slice's torus, so any healthy cubes serve, and a
// failed cube is routed around by choosing others. Each OCS pass adds its insertion latency
// to the link; wiring the slice costs one reconfiguration before the job starts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/params.hpp"
#include "sim/interconnect/topology.hpp"

namespace tpusim {

struct OcsConfig {
  int cube_edge = 0;                 // e; 0: no OCS, the slice is wired directly
  int pod_cubes = 0;                 // cubes in the pod
  double insertion_latency_ns = 0;   // added to each link through an OCS
  double reconfiguration_s = 0;      // to wire a slice, once per job
  std::vector<int> failed_cubes;     // cube ids in [0, pod_cubes)
};

// From ici.ocs_cube_edge, ici.ocs_pod_cubes, ici.ocs_latency_ns, ici.ocs_reconfiguration_ms
// and ici.ocs_failed_cubes ("none", or "3,17": comma-separated ids). Bad ids are kInvalidConfig errors.
OcsConfig ocsConfigOf(const HardwareParams& hw);

struct OcsWiring {
  bool used = false;              // false: no OCS (cube_edge 0, or a slice inside one cube)
  std::vector<int> cubes;         // physical cube of each slice cube, slice cube order (x fastest)
  std::vector<LinkId> ocs_links;  // directed links through an OCS, ascending
};

// Chooses the lowest-numbered healthy cubes for `slice` and lists the links that cross a
// cube face; on a twisted k x k x 2k slice, those are its wraparounds (the ones that carry the
// twist) and the z links between cubes. One-line kInvalidConfig errors: a dimension larger than
// the cube edge but not a multiple of it, a twisted slice whose k is not a multiple of the edge
// (the twist needs switched wraparounds), more cubes than the pod has, or too few healthy ones.
OcsWiring wireSlice(const Topology& slice, const OcsConfig& config);

}  // namespace tpusim
