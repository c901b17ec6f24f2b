// 3-D Conv and ConvTranspose as 2-D ones, one per kernel depth, the depth folded into the batch
// (as TPU compilers lower a convolution of more spatial dimensions than the MXU's im2col
// takes: the products and their MXU costs are the 3-D convolution's, no more):
//   Conv           x padded along depth; for each kernel depth kd, the depth slices kd dd, kd dd + sd, ...
//                  (one per output depth) as a batch of [N x OD, C, H, W], convolved in 2-D by w[:, :, kd];
//                  the KD results added
//   ConvTranspose  x's depth slices as a batch, transposed in 2-D by w[:, :, kd]; each result spread along
//                  the output depth (stride sd: zeros between) and shifted to kd dd, less the pads; added
// Both are graph ops with gradients, so they train.
#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

namespace {

// The height and width part of a 3-D geometry.
ir::ConvGeometry planeGeometry(const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                               const std::vector<int64_t>& pads, int64_t group) {
  ir::ConvGeometry g;
  g.strides = {strides[1], strides[2]};
  g.dilations = {dilations[1], dilations[2]};
  g.pads = {pads[1], pads[2], pads[4], pads[5]};
  g.group = group;
  return g;
}

}  // namespace

int Importer::conv3d(const std::string& name, int x, int w, const ConvAttributes& a) {
  ir::Graph& g = m_result.graph;
  const ir::Shape x_shape = g.tensor(x).shape, w_shape = g.tensor(w).shape;
  const int64_t n = x_shape[0], c = x_shape[1], depth = x_shape[2];
  const int64_t span = a.dilations[0] * (a.kernel[0] - 1) + 1;
  const int64_t padded_depth = depth + a.pads[0] + a.pads[3];
  if (padded_depth < span) invalid("op '" + name + "': the kernel is deeper than the padded input");
  const int64_t out_depth = (padded_depth - span) / a.strides[0] + 1;
  // [N, D, C, H, W], padded along D.
  int depth_major = g.transpose(name + ".depth_major", x, {0, 2, 1, 3, 4});
  if (a.pads[0] != 0 || a.pads[3] != 0) {
    const DType dtype = g.tensor(x).dtype;
    depth_major = g.pad(name + ".depth_padded", depth_major, {0, a.pads[0], 0, 0, 0}, {0, a.pads[3], 0, 0, 0},
                        ir::PadMode::kConstant, constantTensor(name + ".zero", ir::TensorValue::zeros({}, dtype)));
  }
  const ir::Shape padded = g.tensor(depth_major).shape;
  const ir::ConvGeometry plane = planeGeometry(a.strides, a.dilations, a.pads, a.group);
  int sum = -1;
  for (int64_t kd = 0; kd < a.kernel[0]; ++kd) {
    const std::string part = name + ".kd" + std::to_string(kd);
    const int slices = g.stridedSlice(part + ".slices", depth_major, {0, kd * a.dilations[0], 0, 0, 0},
                                      {1, a.strides[0], 1, 1, 1}, {n, out_depth, c, padded[3], padded[4]});
    const int batch = g.reshape(part + ".batch", slices, {n * out_depth, c, padded[3], padded[4]});
    const int kernel =
        g.reshape(part + ".kernel", g.slice(part + ".kernel_slice", w, 2, kd, 1, ir::TensorRole::kActivation),
                  {w_shape[0], w_shape[1], w_shape[3], w_shape[4]});
    const int y = g.conv(part + ".conv", batch, kernel, plane);
    sum = sum < 0 ? y : g.add(part + ".sum", sum, y);
  }
  const ir::Shape& y_shape = g.tensor(sum).shape;
  const int unfolded = g.reshape(name + ".unfolded", sum, {n, out_depth, w_shape[0], y_shape[2], y_shape[3]});
  return g.transpose(name, unfolded, {0, 2, 1, 3, 4});
}

int Importer::convTranspose3d(const std::string& name, int x, int w, const ir::Shape& out_shape,
                              const ConvAttributes& a) {
  ir::Graph& g = m_result.graph;
  const ir::Shape x_shape = g.tensor(x).shape, w_shape = g.tensor(w).shape;
  const int64_t n = x_shape[0], c = x_shape[1], depth = x_shape[2];
  const int64_t m = out_shape[1], out_depth = out_shape[2];
  const DType dtype = g.tensor(x).dtype;
  const int zero = constantTensor(name + ".zero", ir::TensorValue::zeros({}, dtype));
  const int batch = g.reshape(name + ".batch", g.transpose(name + ".depth_major", x, {0, 2, 1, 3, 4}),
                              {n * depth, c, x_shape[3], x_shape[4]});
  const ir::ConvGeometry plane = planeGeometry(a.strides, a.dilations, a.pads, a.group);
  const int64_t stride = a.strides[0];
  int sum = -1;
  for (int64_t kd = 0; kd < a.kernel[0]; ++kd) {
    const std::string part = name + ".kd" + std::to_string(kd);
    const int kernel =
        g.reshape(part + ".kernel", g.slice(part + ".kernel_slice", w, 2, kd, 1, ir::TensorRole::kActivation),
                  {w_shape[0], w_shape[1], w_shape[3], w_shape[4]});
    const int y = g.convTranspose(part + ".conv", batch, kernel, {n * depth, m, out_shape[3], out_shape[4]}, plane);
    // Input depth d lands at output depth d sd + kd dd - pad_begin: spread by the stride, then shifted.
    int spread = g.reshape(part + ".per_depth", y, {n, depth, 1, m, out_shape[3], out_shape[4]});
    if (stride > 1) {
      spread = g.pad(part + ".strided", spread, {0, 0, 0, 0, 0, 0}, {0, 0, stride - 1, 0, 0, 0}, ir::PadMode::kConstant,
                     zero);
    }
    spread = g.reshape(part + ".spread", spread, {n, depth * stride, m, out_shape[3], out_shape[4]});
    const int64_t first = kd * a.dilations[0] - a.pads[0];
    const int64_t reach = depth * stride;  // the spread's length, its last stride - 1 entries zeros
    const int placed = g.pad(part + ".placed", spread, {0, first, 0, 0, 0}, {0, out_depth - first - reach, 0, 0, 0},
                             ir::PadMode::kConstant, zero);
    sum = sum < 0 ? placed : g.add(part + ".sum", sum, placed);
  }
  return g.transpose(name, sum, {0, 2, 1, 3, 4});
}

}  // namespace tpusim::onnx_detail
