// Ops that only move elements, as views and one Transpose or BroadcastTo (whose kernels, costs
// and gradients exist):
//   Tile          x [d...] viewed as [1, d0, 1, d1, ...], broadcast to [r0, d0, r1, d1, ...], viewed
//                 as [r0 d0, r1 d1, ...]
//   DepthToSpace  [N, C, H, W] as [N, b, b, C / b^2, H, W] (DCR; CRD: [N, C / b^2, b, b, H, W]),
//                 transposed so each b x b block lands beside its pixel: [N, C / b^2, H b, W b]
//   SpaceToDepth  the reverse of DCR: [N, C, H / b, b, W / b, b] to [N, C b^2, H / b, W / b]
#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

void Importer::importRearrange(const onnx::NodeProto& node, const std::string& label) {
  ir::Graph& g = m_result.graph;
  const std::string& type = node.op_type();
  const std::string name = opName(node);
  const int x = value(node.input(0), label);
  const ir::Shape shape = g.tensor(x).shape;
  if (type == "Tile") {
    expectInputCount(node, 2, 2, label);
    rejectAttributesExcept(node, {});
    const std::vector<int64_t> repeats = constantInts(node, 1, label);
    if (repeats.size() != shape.size()) {
      invalid(label + ": Tile has " + std::to_string(repeats.size()) + " repeats for a rank-" +
              std::to_string(shape.size()) + " input");
    }
    ir::Shape spread, broadcast, out;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (repeats[d] < 1) invalid(label + ": Tile's repeats must be at least 1");
      spread.insert(spread.end(), {1, shape[d]});
      broadcast.insert(broadcast.end(), {repeats[d], shape[d]});
      out.push_back(repeats[d] * shape[d]);
    }
    const int copies =
        g.broadcastTo(name + ".copies", g.reshape(name + ".spread", x, spread), broadcast, ir::TensorRole::kActivation);
    define(node, g.reshape(name, copies, out));
    return;
  }
  expectInputCount(node, 1, 1, label);
  rejectAttributesExcept(node, {"blocksize", "mode"});
  const int64_t b = intAttribute(node, "blocksize", 0);
  if (shape.size() != 4) invalid(label + ": " + type + " needs [N, C, H, W]");
  const int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
  if (b < 1) invalid(label + ": blocksize must be at least 1");
  if (type == "DepthToSpace") {
    const auto* mode_attr = attribute(node, "mode");
    const std::string mode = mode_attr ? mode_attr->s() : "DCR";
    if (mode != "DCR" && mode != "CRD") invalid(label + ": unknown mode '" + mode + "' (DCR or CRD)");
    if (c % (b * b) != 0) invalid(label + ": " + std::to_string(c) + " channels are not a multiple of blocksize^2");
    const bool dcr = mode == "DCR";
    const ir::Shape blocks = dcr ? ir::Shape{n, b, b, c / (b * b), h, w} : ir::Shape{n, c / (b * b), b, b, h, w};
    const std::vector<int64_t> perm =
        dcr ? std::vector<int64_t>{0, 3, 4, 1, 5, 2} : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
    const int moved = g.transpose(name + ".moved", g.reshape(name + ".blocks", x, blocks), perm);
    define(node, g.reshape(name, moved, {n, c / (b * b), h * b, w * b}));
    return;
  }
  rejectAttributesExcept(node, {"blocksize"});
  if (h % b != 0 || w % b != 0) invalid(label + ": H and W must be multiples of blocksize");
  const int moved =
      g.transpose(name + ".moved", g.reshape(name + ".blocks", x, {n, c, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
  define(node, g.reshape(name, moved, {n, c * b * b, h / b, w / b}));
}

}  // namespace tpusim::onnx_detail
