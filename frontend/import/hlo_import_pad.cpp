// HLO pad, and the dilation that a pad's interior padding and a convolution's
// lhs_dilate share, as IR: reshapes, broadcasts of the fill value, concats
// and slices (Graph::pad; the IR has no pad op).
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
  std::vector<int64_t> low, high;
  for (size_t d = 0; d < padding.size(); ++d) {
    const hlo::PadDim& p = padding[d];
    if (p.interior < 0) fail(ins, ErrorKind::kInvalidInput, "interior padding must not be negative");
    if (p.interior > 0) x = dilate(x, d, p.interior + 1, value, name + ".d" + std::to_string(d) + ".interior");
    low.push_back(p.low);
    high.push_back(p.high);
  }
  return m_graph.pad(name, x, low, high, ir::PadMode::kConstant, value);
}

}  // namespace tpusim::hlo_detail
