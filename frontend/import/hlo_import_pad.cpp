// HLO pad, and the dilation that a pad's interior padding and a convolution's
// lhs_dilate share, as IR: reshapes, broadcasts of the fill value, concats
// and slices (the IR has no pad op).
#include "frontend/import/hlo_attributes.hpp"
#include "frontend/import/hlo_importer.hpp"

namespace tpusim::hlo_detail {

using ir::Shape;

int Importer::zeroOf(int x, const std::string& name) {
  const DType dtype = m_graph.tensor(x).dtype;
  const int zero = m_graph.addConstant(name, {}, dtype);
  ir::TensorValue value = ir::TensorValue::zeros({}, dtype);
  m_constants[zero] = value;
  m_result.initializers[name] = std::move(value);
  return zero;
}

// A unit dimension after `dim`, factor - 1 fills joined along it, the two merged,
// and the fills after the last element sliced off.
int Importer::dilate(int x, size_t dim, int64_t factor, int fill, const std::string& name) {
  const Shape shape = shapeOf(x);
  if (shape[dim] == 0 || factor == 1) return x;
  Shape spread = shape;
  spread.insert(spread.begin() + static_cast<std::ptrdiff_t>(dim) + 1, 1);
  const int column = m_graph.reshape(name + ".unit", x, spread);
  Shape fills_shape = spread;
  fills_shape[dim + 1] = factor - 1;
  const int fills = m_graph.broadcastTo(name + ".fill", fill, fills_shape, ir::TensorRole::kActivation);
  const int joined = m_graph.concat(name + ".join", {column, fills}, static_cast<int64_t>(dim) + 1);
  Shape merged = shape;
  merged[dim] = shape[dim] * factor;
  const int flat = m_graph.reshape(name + ".merge", joined, merged);
  Shape out = shape;
  out[dim] = (shape[dim] - 1) * factor + 1;
  return m_graph.stridedSlice(name, flat, std::vector<int64_t>(shape.size(), 0), std::vector<int64_t>(shape.size(), 1),
                              out);
}

int Importer::pad(const HloInstruction& ins, int x, int value, const std::string& name) {
  if (!shapeOf(value).empty()) fail(ins, ErrorKind::kInvalidInput, "pad's padding value must be a scalar");
  const hlo::HloAttribute* attribute = ins.attribute("padding");
  if (attribute == nullptr) fail(ins, ErrorKind::kInvalidInput, "pad needs padding=low_high_interior...");
  const std::vector<hlo::PadDim> padding = hlo::readPadding(*attribute, shapeOf(x).size());
  for (size_t d = 0; d < padding.size(); ++d) {
    const hlo::PadDim& p = padding[d];
    const std::string part = name + ".d" + std::to_string(d);
    if (p.interior < 0) fail(ins, ErrorKind::kInvalidInput, "interior padding must not be negative");
    if (p.interior > 0) x = dilate(x, d, p.interior + 1, value, part + ".interior");
    const Shape shape = shapeOf(x);
    if (p.low < 0 || p.high < 0) {  // negative edge padding cuts elements off
      const int64_t low_cut = std::max<int64_t>(0, -p.low);
      const int64_t high_cut = std::max<int64_t>(0, -p.high);
      if (low_cut + high_cut > shape[d])
        fail(ins, ErrorKind::kInvalidInput, "negative padding removes more than dimension " + std::to_string(d));
      std::vector<int64_t> starts(shape.size(), 0);
      starts[d] = low_cut;
      Shape out = shape;
      out[d] = shape[d] - low_cut - high_cut;
      if (out[d] > 0 || low_cut == 0) {
        x = m_graph.stridedSlice(part + ".cut", x, starts, std::vector<int64_t>(shape.size(), 1), out);
      } else {
        fail(ins, ErrorKind::kUnsupported, "padding that leaves a dimension empty is not supported yet");
      }
    }
    std::vector<int> parts;
    auto edge = [&](int64_t size, const std::string& side) {
      Shape edge_shape = shapeOf(x);
      edge_shape[d] = size;
      parts.push_back(m_graph.broadcastTo(part + "." + side, value, edge_shape, ir::TensorRole::kActivation));
    };
    if (p.low > 0) edge(p.low, "low");
    parts.push_back(x);
    if (p.high > 0) edge(p.high, "high");
    if (parts.size() > 1) x = m_graph.concat(part + ".edges", parts, static_cast<int64_t>(d));
  }
  return x;
}

}  // namespace tpusim::hlo_detail
