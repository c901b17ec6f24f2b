#include "frontend/lower/tiling.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

uint64_t ceilDiv(uint64_t a, uint64_t b) {
  return (a + b - 1) / b;
}

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

// Tile edges to try along a dimension: the whole extent, then multiples of align below it.
std::vector<uint64_t> edgeCandidates(uint64_t extent, uint64_t align) {
  std::vector<uint64_t> edges = {extent};
  if (extent == 0) return edges;
  for (uint64_t edge = (extent - 1) / align * align; edge >= align; edge -= align) edges.push_back(edge);
  return edges;
}

// The whole extent and align x 2^i below it: the accumulator shapes worth trying.
std::vector<uint64_t> powerCandidates(uint64_t extent, uint64_t align) {
  std::vector<uint64_t> edges = {extent};
  for (uint64_t edge = align; edge < extent; edge *= 2) edges.push_back(edge);
  return edges;
}

// The largest streamed edge (a multiple of align, or the whole extent) with
// 2 * edge * bytes_per_edge <= room; 0 when not even min(extent, align) fits.
uint64_t streamedEdge(uint64_t extent, double bytes_per_edge, double room, uint64_t align) {
  if (static_cast<double>(extent) * bytes_per_edge <= room) return extent;  // one tile: nothing to double-buffer
  uint64_t edge = static_cast<uint64_t>(room / (2 * bytes_per_edge));
  if (edge >= extent) return extent;
  if (edge >= align) edge = edge / align * align;
  return edge >= std::min(extent, align) ? edge : 0;
}

// A block of one operand [k, block] resident, the other streamed in [edge, k] tiles.
// Written for the rhs-resident case; the lhs-resident one swaps m with n.
bool residentBlocking(uint64_t m, uint64_t k, uint64_t n, double streamed_element, double resident_element,
                      double out_element, double vmem, uint64_t align, uint64_t& best_edge, uint64_t& best_block,
                      double& best_hbm, double& best_vmem) {
  bool found = false;
  uint64_t best_tiles = 0;
  const double md = static_cast<double>(m), kd = static_cast<double>(k), nd = static_cast<double>(n);
  for (uint64_t block : edgeCandidates(n, align)) {
    const double resident = kd * static_cast<double>(block) * resident_element;
    if (resident >= vmem) continue;
    const double row = kd * streamed_element + static_cast<double>(block) * out_element;
    const uint64_t edge = streamedEdge(m, row, vmem - resident, align);
    if (edge == 0) continue;
    const uint64_t blocks = ceilDiv(n, block);
    const uint64_t tiles = blocks * ceilDiv(m, edge);
    const double hbm =
        static_cast<double>(blocks) * md * kd * streamed_element + kd * nd * resident_element + md * nd * out_element;
    // Fewest bytes first, then the fewest tiles.
    if (!found || hbm < best_hbm || (hbm == best_hbm && tiles < best_tiles)) {
      found = true;
      best_edge = edge;
      best_block = block;
      best_hbm = hbm;
      best_tiles = tiles;
      best_vmem = resident + (edge == m ? 1.0 : 2.0) * static_cast<double>(edge) * row;
    }
  }
  return found;
}

uint64_t roundUp(double bytes) {
  return static_cast<uint64_t>(std::ceil(bytes));
}

}  // namespace

const char* gemmBlockingName(GemmBlocking blocking) {
  switch (blocking) {
    case GemmBlocking::kWhole: return "whole";
    case GemmBlocking::kRhsResident: return "rhs_resident";
    case GemmBlocking::kLhsResident: return "lhs_resident";
    case GemmBlocking::kKSplit: return "k_split";
  }
  return "?";
}

GemmTiling chooseGemmTiling(const GemmShape& s, uint64_t vmem_bytes, uint64_t align) {
  const double md = static_cast<double>(s.m), kd = static_cast<double>(s.k), nd = static_cast<double>(s.n);
  const double vmem = static_cast<double>(vmem_bytes);
  const double lhs = md * kd * s.lhs_element;
  const double rhs = kd * nd * s.rhs_element;
  const double out = md * nd * s.out_element;
  if (lhs + rhs + out <= vmem || s.m == 0 || s.n == 0 || s.k == 0) {
    return {GemmBlocking::kWhole, s.m, s.n, s.k, roundUp(lhs + rhs + out), roundUp(lhs + rhs + out)};
  }
  GemmTiling best;
  double best_hbm = 0;
  bool found = false;
  const auto consider = [&](GemmBlocking blocking, uint64_t m_tile, uint64_t n_block, uint64_t k_tile, double held,
                            double hbm) {
    if (found && hbm >= best_hbm) return;
    best = {blocking, m_tile, n_block, k_tile, roundUp(held), roundUp(hbm)};
    best_hbm = hbm;
    found = true;
  };
  uint64_t edge = 0, block = 0;
  double hbm = 0, held = 0;
  if (residentBlocking(s.m, s.k, s.n, s.lhs_element, s.rhs_element, s.out_element, vmem, align, edge, block, hbm,
                       held)) {
    consider(GemmBlocking::kRhsResident, edge, block, s.k, held, hbm);
  }
  if (residentBlocking(s.n, s.k, s.m, s.rhs_element, s.lhs_element, s.out_element, vmem, align, edge, block, hbm,
                       held)) {
    consider(GemmBlocking::kLhsResident, block, edge, s.k, held, hbm);
  }
  if (!found) {
    // Accumulate in VMEM: out [m_tile, n_block] resident (two, so one can drain while the
    // next fills), lhs and rhs tiles along k streamed.
    for (uint64_t m_tile : powerCandidates(s.m, align)) {
      for (uint64_t n_block : powerCandidates(s.n, align)) {
        const double mt = static_cast<double>(m_tile), nb = static_cast<double>(n_block);
        const double accumulators = 2 * mt * nb * s.out_element;
        if (accumulators >= vmem) continue;
        const double per_k = mt * s.lhs_element + nb * s.rhs_element;
        const uint64_t k_tile = streamedEdge(s.k, per_k, vmem - accumulators, align);
        if (k_tile == 0 || k_tile == s.k) continue;  // all of k fits: a resident blocking covers it
        const double bytes =
            static_cast<double>(ceilDiv(s.n, n_block)) * lhs + static_cast<double>(ceilDiv(s.m, m_tile)) * rhs + out;
        consider(GemmBlocking::kKSplit, m_tile, n_block, k_tile, accumulators + 2 * static_cast<double>(k_tile) * per_k,
                 bytes);
      }
    }
  }
  if (!found) {
    throw Error(ErrorKind::kResource, "a " + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
                                          std::to_string(s.n) + " matmul has no tiling that fits " + mib(vmem_bytes) +
                                          " of VMEM");
  }
  return best;
}

uint64_t rowsPerTile(uint64_t rows, uint64_t row_bytes, uint64_t resident, uint64_t vmem, const std::string& what) {
  if (rows * row_bytes + resident <= vmem) return rows;
  const uint64_t tile = resident < vmem ? (vmem - resident) / (2 * std::max<uint64_t>(row_bytes, 1)) : 0;
  if (tile == 0) {
    throw Error(ErrorKind::kResource, what + " needs " + mib(resident + 2 * row_bytes) +
                                          " of VMEM for its smallest tile (one row of " + mib(row_bytes) + " plus " +
                                          mib(resident) + " held), more than the " + mib(vmem) + " there is");
  }
  return std::min(tile, rows);
}

}  // namespace tpusim
