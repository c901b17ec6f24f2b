#include "frontend/lower/tiling.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
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
uint64_t streamedEdge(uint64_t extent, double bytes_per_edge, double room, uint64_t align, bool repeated = false) {
  // One tile, loaded once: nothing to double-buffer.
  if (!repeated && static_cast<double>(extent) * bytes_per_edge <= room) return extent;
  uint64_t edge = static_cast<uint64_t>(room / (2 * bytes_per_edge));
  if (edge >= extent) return extent;
  if (edge >= align) edge = edge / align * align;
  return edge >= std::min(extent, align) ? edge : 0;
}

// Tiles of `tile` along `extent`: how many full ones, and the size of the last partial one (0 if none).
struct Cuts {
  uint64_t full, rest;
};
Cuts cutsOf(uint64_t extent, uint64_t tile) {
  return {extent / tile, extent % tile};
}

// The MXU cycles of every tile of a blocking, edge tiles included: one
// closed-form timing per distinct tile shape, times how many there are.
uint64_t tileCycles(uint64_t m, uint64_t m_tile, uint64_t k, uint64_t k_tile, uint64_t n, uint64_t n_tile,
                    const GemmCostModel& model) {
  const Cuts cm = cutsOf(m, m_tile), ck = cutsOf(k, k_tile), cn = cutsOf(n, n_tile);
  uint64_t cycles = 0;
  for (const auto& [mc, ms] : {std::pair{cm.full, m_tile}, std::pair{uint64_t{cm.rest > 0}, cm.rest}}) {
    for (const auto& [kc, ks] : {std::pair{ck.full, k_tile}, std::pair{uint64_t{ck.rest > 0}, ck.rest}}) {
      for (const auto& [nc, ns] : {std::pair{cn.full, n_tile}, std::pair{uint64_t{cn.rest > 0}, cn.rest}}) {
        if (mc * kc * nc == 0) continue;
        cycles += mc * kc * nc * chooseMxuSplit(ms, ks, ns, model).cycles;
      }
    }
  }
  return cycles;
}

// One way to block the GEMM, before it is scored.
struct Candidate {
  GemmBlocking blocking;
  uint64_t m_tile, n_block, k_tile;
  double held, hbm;
  uint64_t tiles;
  // Resident blockings: the block loaded (not overlapped) before each block's
  // streamed tiles, and how many blocks.
  double resident_bytes = 0;
  uint64_t blocks = 1;
};

uint64_t roundUp(double bytes) {
  return static_cast<uint64_t>(std::ceil(bytes));
}

// Every blocking that fits: the whole GEMM; one operand's block resident while
// the other streams in the largest tiles that fit; out accumulating over k tiles.
std::vector<Candidate> candidatesOf(const GemmShape& s, double vmem, uint64_t align) {
  std::vector<Candidate> out;
  const double md = static_cast<double>(s.m), kd = static_cast<double>(s.k), nd = static_cast<double>(s.n);
  const double lhs = md * kd * s.lhs_element, rhs = kd * nd * s.rhs_element, result = md * nd * s.out_element;
  if (lhs + rhs + result <= vmem) {
    out.push_back({GemmBlocking::kWhole, s.m, s.n, s.k, lhs + rhs + result, lhs + rhs + result, 1});
  }
  bool resident_found = false;
  for (const bool rhs_resident : {true, false}) {
    // Written for the rhs-resident case; the lhs-resident one swaps m with n.
    const uint64_t streamed_extent = rhs_resident ? s.m : s.n, block_extent = rhs_resident ? s.n : s.m;
    const double streamed_element = rhs_resident ? s.lhs_element : s.rhs_element;
    const double resident_element = rhs_resident ? s.rhs_element : s.lhs_element;
    const double streamed_total = rhs_resident ? lhs : rhs, resident_total = rhs_resident ? rhs : lhs;
    for (uint64_t block : edgeCandidates(block_extent, align)) {
      const double resident = kd * static_cast<double>(block) * resident_element;
      if (resident >= vmem) continue;
      const double row = kd * streamed_element + static_cast<double>(block) * s.out_element;
      const uint64_t blocks = ceilDiv(block_extent, block);
      const uint64_t largest = streamedEdge(streamed_extent, row, vmem - resident, align, blocks > 1);
      if (largest == 0) continue;
      resident_found = true;
      const double hbm = static_cast<double>(blocks) * streamed_total + resident_total + result;
      {
        const uint64_t edge = largest;
        // One streamed slot only when a single tile is all there is: the lowering
        // alternates two slots from tile to tile, across blocks too.
        const bool single = edge == streamed_extent && blocks == 1;
        const double held = resident + (single ? 1.0 : 2.0) * static_cast<double>(edge) * row;
        const uint64_t tiles = blocks * ceilDiv(streamed_extent, edge);
        if (rhs_resident) {
          out.push_back({GemmBlocking::kRhsResident, edge, block, s.k, held, hbm, tiles, resident, blocks});
        } else {
          out.push_back({GemmBlocking::kLhsResident, block, edge, s.k, held, hbm, tiles, resident, blocks});
        }
      }
    }
  }
  if (!resident_found) {
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
            static_cast<double>(ceilDiv(s.n, n_block)) * lhs + static_cast<double>(ceilDiv(s.m, m_tile)) * rhs + result;
        const uint64_t tiles = ceilDiv(s.m, m_tile) * ceilDiv(s.n, n_block) * ceilDiv(s.k, k_tile);
        out.push_back({GemmBlocking::kKSplit, m_tile, n_block, k_tile,
                       accumulators + 2 * static_cast<double>(k_tile) * per_k, bytes, tiles});
      }
    }
  }
  return out;
}

// The cycles a blocking needs at the least: the slower of its HBM transfers and
// its MXU work (double buffering overlaps the two, and neighbouring ops overlap
// its first load and last store), plus the reload of each resident block after
// the first, which waits for the block before it to finish. (Charging each op's
// own pipeline fill as well chose worse tiles: on the zoo it cost 2.7 to 7.7%
// against this bound.)
double estimatedCycles(const Candidate& c, uint64_t mxu_cycles, const GemmCostModel& model) {
  const double blocks = static_cast<double>(c.blocks), bw = model.hbm_bytes_per_cycle;
  return std::max(c.hbm / bw, static_cast<double>(mxu_cycles)) + (blocks - 1) * c.resident_bytes / bw;
}

}  // namespace

MxuSplit chooseMxuSplit(uint64_t m, uint64_t k, uint64_t n, const GemmCostModel& model) {
  const auto timed = [&](MxuSplitAxis axis, bool transposed) {
    // K is split only into shares of at least the array's rows: a shorter one wastes rows.
    const uint64_t extent = axis == MxuSplitAxis::kRows ? m : axis == MxuSplitAxis::kCols ? n : k;
    const uint64_t most = axis == MxuSplitAxis::kDepth ? std::max<uint64_t>(1, k / model.array.rows) : extent;
    const uint64_t pieces = std::min({model.mxus, extent, most});
    const uint64_t piece = ceilDiv(extent, pieces);
    const uint64_t rows = axis == MxuSplitAxis::kRows ? piece : m, cols = axis == MxuSplitAxis::kCols ? piece : n;
    const uint64_t depth = axis == MxuSplitAxis::kDepth ? piece : k;
    const MatmulShape shape{transposed ? cols : rows, depth, transposed ? rows : cols, model.passes,
                            model.feed_interval};
    uint64_t cycles = arrayTiming(model.array, sweptShape(model.array, shape, model.int8)).cycles;
    if (axis == MxuSplitAxis::kDepth) cycles += ceilDiv(m * n * (pieces - 1), model.vector_width);
    return MxuSplit{axis, transposed, pieces, cycles};
  };
  MxuSplit best = timed(MxuSplitAxis::kCols, false);
  for (const MxuSplitAxis axis : {MxuSplitAxis::kCols, MxuSplitAxis::kRows, MxuSplitAxis::kDepth}) {
    if (axis == MxuSplitAxis::kDepth && !model.split_depth) continue;
    for (const bool transposed : {false, true}) {
      const MxuSplit other = timed(axis, transposed);
      if (other.cycles < best.cycles) best = other;
    }
  }
  return best;
}

const char* gemmBlockingName(GemmBlocking blocking) {
  switch (blocking) {
    case GemmBlocking::kWhole: return "whole";
    case GemmBlocking::kRhsResident: return "rhs_resident";
    case GemmBlocking::kLhsResident: return "lhs_resident";
    case GemmBlocking::kKSplit: return "k_split";
  }
  return "?";
}

GemmTiling chooseGemmTiling(const GemmShape& s, uint64_t vmem_bytes, uint64_t align, const GemmCostModel* model) {
  const double md = static_cast<double>(s.m), kd = static_cast<double>(s.k), nd = static_cast<double>(s.n);
  const double result = md * nd * s.out_element;
  if (s.m == 0 || s.n == 0 || s.k == 0) {
    const double all = md * kd * s.lhs_element + kd * nd * s.rhs_element + result;
    return {GemmBlocking::kWhole, s.m, s.n, s.k, roundUp(all), roundUp(all), 0, 0};
  }
  const std::vector<Candidate> candidates = candidatesOf(s, static_cast<double>(vmem_bytes), align);
  if (candidates.empty()) {
    throw Error(ErrorKind::kResource, "a " + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
                                          std::to_string(s.n) + " matmul has no tiling that fits " + mib(vmem_bytes) +
                                          " of VMEM");
  }
  // Without a cost model: the fewest HBM bytes, then the fewest tiles. With one: the
  // fewest estimated cycles, then bytes, then tiles.
  const Candidate* best = nullptr;
  double best_cycles = 0;
  uint64_t best_mxu = 0;
  for (const Candidate& c : candidates) {
    uint64_t mxu = 0;
    double cycles = 0;
    if (model) {
      mxu = tileCycles(s.m, c.m_tile, s.k, c.k_tile, s.n, c.n_block, *model);
      cycles = estimatedCycles(c, mxu, *model);
    }
    const auto key = [](double cy, double hbm, uint64_t tiles) { return std::tuple{cy, hbm, tiles}; };
    if (!best || key(cycles, c.hbm, c.tiles) < key(best_cycles, best->hbm, best->tiles)) {
      best = &c;
      best_cycles = cycles;
      best_mxu = mxu;
    }
  }
  return {best->blocking,      best->m_tile,       best->n_block, best->k_tile,
          roundUp(best->held), roundUp(best->hbm), best_mxu,      static_cast<uint64_t>(best_cycles + 0.5)};
}

uint64_t rowsPerTile(uint64_t rows, uint64_t row_bytes, uint64_t resident, uint64_t vmem, const std::string& what,
                     uint64_t stream_tile) {
  // Tiles of at most `stream_tile` bytes (at least one row) pipeline their loads, compute and stores.
  const uint64_t capped =
      stream_tile > 0 ? std::max<uint64_t>(1, stream_tile / std::max<uint64_t>(row_bytes, 1)) : rows;
  if (capped < rows && 2 * capped * row_bytes + resident <= vmem) return capped;
  if (rows * row_bytes + resident <= vmem) return rows;
  const uint64_t tile = resident < vmem ? (vmem - resident) / (2 * std::max<uint64_t>(row_bytes, 1)) : 0;
  if (tile == 0) {
    throw Error(ErrorKind::kResource, what + " needs " + mib(resident + 2 * row_bytes) +
                                          " of VMEM for its smallest tile (one row of " + mib(row_bytes) + " plus " +
                                          mib(resident) + " held), more than the " + mib(vmem) + " there is");
  }
  return std::min({tile, rows, capped});
}

}  // namespace tpusim
