// Graph::pad: padding built from slices, broadcasts and concats (the IR has no pad op, and
// these already have kernels, costs and gradients).
#include <algorithm>

#include "frontend/ir/graph.hpp"
#include "frontend/ir/graph_builders.hpp"

namespace tpusim::ir {

using builder_detail::shapeError;

const char* padModeName(PadMode mode) {
  switch (mode) {
    case PadMode::kConstant: return "constant";
    case PadMode::kEdge: return "edge";
    case PadMode::kReflect: return "reflect";
  }
  return "?";
}

int Graph::pad(const std::string& name, int x, const std::vector<int64_t>& low, const std::vector<int64_t>& high,
               PadMode mode, int fill) {
  const size_t rank = tensor(x).shape.size();
  if (low.size() != rank || high.size() != rank) {
    shapeError(name, "pads for " + std::to_string(low.size()) + " and " + std::to_string(high.size()) +
                         " dimensions of a rank-" + std::to_string(rank) + " tensor");
  }
  if (mode == PadMode::kConstant && (fill < 0 || !tensor(fill).shape.empty())) {
    shapeError(name, "constant padding needs a scalar fill value");
  }
  for (size_t d = 0; d < rank; ++d) {
    const std::string part = name + ".d" + std::to_string(d);
    Shape shape = tensor(x).shape;
    // Negative pads cut elements off that end. A pad below -shape[d] cuts more than there is;
    // checked before the negation, which -2^63 does not have.
    const auto emptied = [&] {
      shapeError(name, "negative padding leaves dimension " + std::to_string(d) + " (of " + std::to_string(shape[d]) +
                           ") empty");
    };
    if (low[d] < -shape[d] || high[d] < -shape[d]) emptied();
    const int64_t low_cut = std::max<int64_t>(0, -low[d]), high_cut = std::max<int64_t>(0, -high[d]);
    if (low_cut > 0 || high_cut > 0) {
      if (low_cut >= shape[d] - high_cut) emptied();
      std::vector<int64_t> starts(rank, 0);
      starts[d] = low_cut;
      shape[d] -= low_cut + high_cut;
      x = stridedSlice(part + ".cut", x, starts, std::vector<int64_t>(rank, 1), shape);
    }
    const int64_t extent = shape[d];
    const auto side = [&](int64_t count, bool before) {
      const std::string piece = part + (before ? ".low" : ".high");
      Shape out = shape;
      out[d] = count;
      if (mode == PadMode::kConstant) return broadcastTo(piece, fill, out, TensorRole::kActivation);
      if (extent == 0) shapeError(name, std::string(padModeName(mode)) + " padding of an empty dimension");
      std::vector<int64_t> starts(rank, 0), steps(rank, 1);
      if (mode == PadMode::kEdge) {  // the border element, repeated
        Shape border = shape;
        border[d] = 1;
        starts[d] = before ? 0 : extent - 1;
        return broadcastTo(piece, stridedSlice(piece + ".border", x, starts, steps, border), out,
                           TensorRole::kActivation);
      }
      if (count >= extent) {  // kReflect mirrors without repeating the border
        shapeError(name, "reflect padding of " + std::to_string(count) + " needs a dimension longer than that (" +
                             std::to_string(d) + " has " + std::to_string(extent) + ")");
      }
      starts[d] = before ? count : extent - 2;
      steps[d] = -1;
      return stridedSlice(piece, x, starts, steps, out);
    };
    std::vector<int> parts;
    if (low[d] > 0) parts.push_back(side(low[d], true));
    parts.push_back(x);
    if (high[d] > 0) parts.push_back(side(high[d], false));
    if (parts.size() > 1) x = concat(part, parts, static_cast<int64_t>(d));
  }
  return x;
}

}  // namespace tpusim::ir
