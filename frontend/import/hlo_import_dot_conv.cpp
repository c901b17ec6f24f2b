// HLO dot and convolution to IR: transposes and reshapes around the IR's
// batched MatMul and 2-D Conv.
#include <algorithm>

#include "frontend/import/hlo_attributes.hpp"
#include "frontend/import/hlo_importer.hpp"

namespace tpusim::hlo_detail {

namespace {

using ir::Shape;

int64_t product(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t result = 1;
  for (int64_t d : dims) result *= shape[static_cast<size_t>(d)];
  return result;
}

}  // namespace

// dot: out = [batch..., lhs free..., rhs free...]. As IR: lhs to [batch..., M, K] and
// rhs to [batch..., K, N] (a transpose flag where the operand is laid out the other way,
// else a Transpose), one batched MatMul, and a reshape to the free dimensions.
int Importer::dot(const HloInstruction& ins, int lhs, int rhs, const std::string& name) {
  const std::vector<int64_t> lb = intList(ins, "lhs_batch_dims", false);
  const std::vector<int64_t> rb = intList(ins, "rhs_batch_dims", false);
  const std::vector<int64_t> lc = intList(ins, "lhs_contracting_dims", false);
  const std::vector<int64_t> rc = intList(ins, "rhs_contracting_dims", false);
  const Shape ls = shapeOf(lhs);
  const Shape rs = shapeOf(rhs);
  auto check = [&](const std::vector<int64_t>& dims, const Shape& shape, const char* what) {
    for (int64_t d : dims) {
      if (d < 0 || d >= static_cast<int64_t>(shape.size()))
        fail(ins, ErrorKind::kInvalidInput, std::string(what) + " dimension " + std::to_string(d) + " is out of range");
    }
  };
  check(lb, ls, "lhs batch");
  check(lc, ls, "lhs contracting");
  check(rb, rs, "rhs batch");
  check(rc, rs, "rhs contracting");
  if (lb.size() != rb.size() || lc.size() != rc.size())
    fail(ins, ErrorKind::kInvalidInput, "lhs and rhs name different numbers of batch or contracting dimensions");
  for (size_t i = 0; i < lb.size(); ++i) {
    if (ls[static_cast<size_t>(lb[i])] != rs[static_cast<size_t>(rb[i])])
      fail(ins, ErrorKind::kInvalidInput, "batch dimensions differ in size");
  }
  for (size_t i = 0; i < lc.size(); ++i) {
    if (ls[static_cast<size_t>(lc[i])] != rs[static_cast<size_t>(rc[i])])
      fail(ins, ErrorKind::kInvalidInput, "contracting dimensions differ in size");
  }
  auto freeDims = [](const Shape& shape, const std::vector<int64_t>& batch, const std::vector<int64_t>& contract) {
    std::vector<int64_t> free;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(contract.begin(), contract.end(), d) == contract.end())
        free.push_back(d);
    }
    return free;
  };
  const std::vector<int64_t> lf = freeDims(ls, lb, lc);
  const std::vector<int64_t> rf = freeDims(rs, rb, rc);
  auto concat = [](std::vector<int64_t> a, const std::vector<int64_t>& b, const std::vector<int64_t>& c) {
    a.insert(a.end(), b.begin(), b.end());
    a.insert(a.end(), c.begin(), c.end());
    return a;
  };
  Shape batch;
  for (int64_t d : lb) batch.push_back(ls[static_cast<size_t>(d)]);
  const int64_t m = product(ls, lf);
  const int64_t k = product(ls, lc);
  const int64_t n = product(rs, rf);
  // Each operand as [batch..., rows, cols], using the transpose flag when its natural order is reversed.
  auto prepare = [&](int x, const Shape& shape, const std::vector<int64_t>& b, const std::vector<int64_t>& first,
                     const std::vector<int64_t>& second, int64_t rows, int64_t cols, const std::string& part,
                     bool& transposed) {
    transposed = false;
    std::vector<int64_t> perm = concat(b, first, second);
    if (!isIdentityPermutation(perm) && isIdentityPermutation(concat(b, second, first))) {
      transposed = true;
      perm = concat(b, second, first);
      std::swap(rows, cols);
    }
    int out = permute(x, perm, name + "." + part + "_t");
    Shape target = batch;
    target.push_back(rows);
    target.push_back(cols);
    (void)shape;
    return reshapeTo(out, target, name + "." + part + "_2d");
  };
  bool ta = false;
  bool tb = false;
  const int a = prepare(lhs, ls, lb, lf, lc, m, k, "lhs", ta);
  const int b = prepare(rhs, rs, rb, rc, rf, k, n, "rhs", tb);
  const int product_tensor = m_graph.matmul(name + ".matmul", a, b, ta, tb);
  Shape out = batch;
  for (int64_t d : lf) out.push_back(ls[static_cast<size_t>(d)]);
  for (int64_t d : rf) out.push_back(rs[static_cast<size_t>(d)]);
  if (shapeOf(product_tensor) == out) return product_tensor;
  return m_graph.reshape(name, product_tensor, out);
}

// convolution: dim_labels say where batch (b), features (f; kernel i, o) and the
// spatial dimensions (0, 1) are. As IR: transposes to NCHW and OIHW, a 2-D Conv,
// and a transpose to the output's labels.
int Importer::convolution(const HloInstruction& ins, int lhs, int rhs, const std::string& name) {
  const hlo::HloAttribute* labels_attribute = ins.attribute("dim_labels");
  if (labels_attribute == nullptr) fail(ins, ErrorKind::kInvalidInput, "convolution needs dim_labels=");
  const hlo::DimLabels labels = hlo::readDimLabels(*labels_attribute);
  const size_t rank = shapeOf(lhs).size();
  if (labels.input.size() != rank || labels.kernel.size() != shapeOf(rhs).size() || labels.output.size() != rank)
    fail(ins, ErrorKind::kInvalidInput, "dim_labels do not match the operands' ranks");
  if (rank != 4) {
    fail(ins, ErrorKind::kUnsupported,
         "only 2-D convolutions are supported yet, this one has " + std::to_string(rank - 2) + " spatial dimensions");
  }
  // The position of each label in a label string, in the order `wanted` gives.
  auto positions = [&](const std::string& text, const std::string& wanted) {
    std::vector<int64_t> perm;
    for (char c : wanted) {
      const size_t at = text.find(c);
      if (at == std::string::npos || text.find(c, at + 1) != std::string::npos)
        fail(ins, ErrorKind::kInvalidInput, "dim_labels '" + text + "' need each of '" + wanted + "' once");
      perm.push_back(static_cast<int64_t>(at));
    }
    return perm;
  };
  int x = permute(lhs, positions(labels.input, "bf01"), name + ".to_nchw");
  int w = permute(rhs, positions(labels.kernel, "oi01"), name + ".to_oihw");
  hlo::Window window;
  if (const hlo::HloAttribute* attribute = ins.attribute("window")) {
    window = hlo::readWindow(*attribute, 2);
  } else {
    window = hlo::readWindow(hlo::HloAttribute{"window", {}, {}}, 2);
  }
  if (!ins.attribute("window")) window.size = {shapeOf(w)[2], shapeOf(w)[3]};
  for (size_t d = 0; d < 2; ++d) {
    if (window.size[d] != shapeOf(w)[2 + d])
      fail(ins, ErrorKind::kInvalidInput, "window size does not match the kernel's spatial dimensions");
    if (window.lhs_dilate[d] < 1) fail(ins, ErrorKind::kInvalidInput, "lhs_dilate must be at least 1");
    if (window.pad_low[d] < 0 || window.pad_high[d] < 0)
      fail(ins, ErrorKind::kUnsupported, "negative padding is not supported yet");
  }
  // lhs_dilate (a transposed convolution, as in the input gradient of a strided one):
  // zeros spread into the input, which the Conv then pads and convolves as usual.
  for (size_t d = 0; d < 2; ++d) {
    if (window.lhs_dilate[d] > 1)
      x = dilate(x, 2 + d, window.lhs_dilate[d], zeroOf(x, name + ".zero" + std::to_string(d)),
                 name + ".dilate" + std::to_string(d));
  }
  // rhs_reversal (the kernel flipped, as in a convolution's input gradient): a reversing Slice.
  std::vector<int64_t> flipped;
  for (size_t d = 0; d < 2; ++d) {
    if (window.reversal[d] != 0) flipped.push_back(static_cast<int64_t>(2 + d));
  }
  if (!flipped.empty()) w = reverse(w, flipped, name + ".flip");
  if (const hlo::HloAttribute* groups = ins.attribute("batch_group_count"); groups && hlo::readInt(*groups) != 1)
    fail(ins, ErrorKind::kUnsupported, "batch_group_count other than 1 is not supported yet");
  ir::ConvGeometry geometry;
  geometry.strides = window.stride;
  geometry.pads = {window.pad_low[0], window.pad_low[1], window.pad_high[0], window.pad_high[1]};
  geometry.dilations = window.rhs_dilate;
  if (const hlo::HloAttribute* groups = ins.attribute("feature_group_count")) geometry.group = hlo::readInt(*groups);
  const int y = m_graph.conv(name + ".conv", x, w, geometry);
  // Output dimension j holds label output[j]; in NCHW that is b 0, f 1, spatial d at 2 + d.
  std::vector<int64_t> perm;
  const std::string nchw = "bf01";
  for (char c : labels.output) {
    const size_t at = nchw.find(c);
    if (at == std::string::npos) fail(ins, ErrorKind::kInvalidInput, "output dim_labels '" + labels.output + "'");
    perm.push_back(static_cast<int64_t>(at));
  }
  positions(labels.output, "bf01");  // each label once
  if (isIdentityPermutation(perm)) return y;
  return m_graph.transpose(name, y, perm);
}

}  // namespace tpusim::hlo_detail
