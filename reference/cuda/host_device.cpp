#include "reference/cuda/host_device.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "reference/cpu/conv.hpp"

namespace tpusim::reference::cuda {

HostDevice::~HostDevice() {
  for (void* buffer : m_buffers) std::free(buffer);
}

void* HostDevice::allocate(size_t bytes) {
  void* buffer = std::calloc(bytes > 0 ? bytes : 1, 1);
  if (buffer == nullptr) throw std::bad_alloc();
  m_buffers.push_back(buffer);
  m_allocated += bytes;
  return buffer;
}

// No bytes, no call: an empty tensor's pointer may be null, which memcpy and memset never take.
void HostDevice::upload(void* device, const void* host, size_t bytes) {
  if (bytes > 0) std::memcpy(device, host, bytes);
}
void HostDevice::download(void* host, const void* device, size_t bytes) {
  if (bytes > 0) std::memcpy(host, device, bytes);
}
void HostDevice::zero(void* device, size_t bytes) {
  if (bytes > 0) std::memset(device, 0, bytes);
}

void HostDevice::startTimer() { m_start = std::chrono::steady_clock::now(); }

double HostDevice::stopTimer() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
}

void HostDevice::gemm(const GemmArgs& g) {
  if (multipliesInt8(g.a)) {
    int8Gemm(g);
    return;
  }
  // The CPU executor's order (reference/cpu/kernels.hpp): each element sums k terms in float, in order.
  const GemmLayout l(g);
  for (int64_t e = 0; e < g.batch; ++e) {
    for (int64_t row = 0; row < g.m; ++row) {
      for (int64_t col = 0; col < g.n; ++col) {
        float sum = 0;
        for (int64_t i = 0; i < g.k; ++i) {
          sum += loadFloat(g.a, e * g.a_stride + row * l.a_row + i * l.a_inner) *
                 loadFloat(g.b, e * g.b_stride + i * l.b_inner + col * l.b_col);
        }
        storeFloat(g.c, (e * g.m + row) * g.n + col, sum);
      }
    }
  }
}

std::string HostDevice::gemmKernel(const GemmArgs& g) const {
  return multipliesInt8(g.a) ? kInt8GemmKernel : "host: the CPU executor's GEMM loop (in place of cuBLAS)";
}

std::string HostDevice::convKernel(const ConvArgs& c) const {
  return multipliesInt8(c.x) ? kInt8ConvKernel : "host: the CPU executor's convolution loops (in place of cuDNN)";
}

namespace {

size_t countOf(const int64_t* dims) { return static_cast<size_t>(dims[0] * dims[1] * dims[2] * dims[3]); }

std::vector<double> valuesOf(const Ref& ref, const int64_t* dims) {
  std::vector<double> values(countOf(dims));
  for (size_t i = 0; i < values.size(); ++i) values[i] = loadFloat(ref, static_cast<int64_t>(i));
  return values;
}

void store(const std::vector<double>& values, const Ref& ref) {
  for (size_t i = 0; i < values.size(); ++i) storeFloat(ref, static_cast<int64_t>(i), static_cast<float>(values[i]));
}

}  // namespace

void HostDevice::conv(const ConvArgs& c) {
  if (multipliesInt8(c.x)) {
    int8Conv(c);
    return;
  }
  // The CPU executor's convolution loops, standing in for cuDNN.
  const ConvShapes shapes{ir::Shape(c.x_dims, c.x_dims + 4), ir::Shape(c.w_dims, c.w_dims + 4),
                          ir::Shape(c.y_dims, c.y_dims + 4)};
  ir::ConvGeometry geometry;
  geometry.strides = {c.strides[0], c.strides[1]};
  geometry.pads = {c.pads[0], c.pads[1], c.pads[2], c.pads[3]};
  geometry.dilations = {c.dilations[0], c.dilations[1]};
  geometry.group = c.group;
  switch (c.pass) {
    case ConvPass::kForward: {
      std::vector<double> y(countOf(c.y_dims));
      convForward<float>(valuesOf(c.x, c.x_dims), valuesOf(c.w, c.w_dims), y, shapes, geometry, 1);
      store(y, c.y);
      return;
    }
    case ConvPass::kGradInput: {
      std::vector<double> dx(countOf(c.x_dims));
      convGradInput<float>(valuesOf(c.y, c.y_dims), valuesOf(c.w, c.w_dims), dx, shapes, geometry, 1);
      store(dx, c.x);
      return;
    }
    case ConvPass::kGradWeight: {
      std::vector<double> dw(countOf(c.w_dims));
      convGradWeight<float>(valuesOf(c.x, c.x_dims), valuesOf(c.y, c.y_dims), dw, shapes, geometry, 1);
      store(dw, c.w);
      return;
    }
  }
}

void HostCollective::allReduceSum(const std::vector<Ref>& inputs, const std::vector<Ref>& outputs, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    float sum = 0;
    for (const Ref& in : inputs) sum += loadFloat(in, i);
    for (const Ref& out : outputs) storeFloat(out, i, sum);
  }
}

}  // namespace tpusim::reference::cuda
