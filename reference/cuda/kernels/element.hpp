// How the CUDA executor holds a tensor in device memory, and how the kernels read
// and write its elements. Floating tensors keep their dtype's width (f32, bf16 and
// f16: a bf16 tensor is 2 bytes an element, as on the device it models); every
// integer and bool tensor is int64, as the CPU executor holds them, and a store
// wraps the value to the dtype's width. Kernels compute in float (double where
// the CPU executor does: optimizer updates, Pow, the MSE loss) and round once, on
// the store, to nearest even: the CPU executor's numerics (reference/cpu/kernels.hpp).
//
// Plain C++17, marked __host__ __device__ under nvcc: the same code runs in the
// CUDA kernels and on the host device (host_device.hpp) that tests them in CI.
#pragma once

#include <cmath>
#include <cstdint>

#include "sim/common/float_bits.hpp"

#define TPUSIM_HD TPUSIM_HOST_DEVICE

namespace tpusim::reference::cuda {

inline constexpr int kMaxRank = 8;

enum class Elem : int32_t { kF32, kBF16, kF16, kI64, kI32, kU32, kI8, kU8, kBool };

TPUSIM_HD inline bool isFloating(Elem e) { return e == Elem::kF32 || e == Elem::kBF16 || e == Elem::kF16; }
TPUSIM_HD inline int elementBytes(Elem e) { return e == Elem::kF32 ? 4 : isFloating(e) ? 2 : 8; }

// One tensor's device buffer.
struct Ref {
  void* data = nullptr;
  Elem elem = Elem::kF32;
};

TPUSIM_HD inline float loadFloat(const Ref& ref, int64_t i) {
  switch (ref.elem) {
    case Elem::kF32: return static_cast<const float*>(ref.data)[i];
    case Elem::kBF16: return numerics::bf16BitsToFloat(static_cast<const uint16_t*>(ref.data)[i]);
    case Elem::kF16: return numerics::f16BitsToFloat(static_cast<const uint16_t*>(ref.data)[i]);
    default: return static_cast<float>(static_cast<const int64_t*>(ref.data)[i]);
  }
}

TPUSIM_HD inline int64_t loadInt(const Ref& ref, int64_t i) { return static_cast<const int64_t*>(ref.data)[i]; }

// Rounds `value` to the tensor's floating dtype. (Integer tensors are written with storeInt;
// the kernels never store a float into one.)
TPUSIM_HD inline void storeFloat(const Ref& ref, int64_t i, float value) {
  switch (ref.elem) {
    case Elem::kF32: static_cast<float*>(ref.data)[i] = value; return;
    case Elem::kBF16: static_cast<uint16_t*>(ref.data)[i] = numerics::floatToBf16Bits(value); return;
    case Elem::kF16: static_cast<uint16_t*>(ref.data)[i] = numerics::floatToF16Bits(value); return;
    default: static_cast<int64_t*>(ref.data)[i] = static_cast<int64_t>(value); return;
  }
}

// Rounds `value` once to the tensor's floating dtype, as numerics::roundTo(double) does.
TPUSIM_HD inline void storeDouble(const Ref& ref, int64_t i, double value) {
  if (ref.elem == Elem::kF32) {
    static_cast<float*>(ref.data)[i] = static_cast<float>(value);
  } else {
    storeFloat(ref, i, numerics::toFloatRoundToOdd(value));
  }
}

// Wraps `value` to the tensor's integer width, as numpy and ONNX runtimes do.
TPUSIM_HD inline int64_t wrapInt(Elem e, int64_t value) {
  switch (e) {
    case Elem::kI32: return static_cast<int32_t>(value);
    case Elem::kU32: return static_cast<uint32_t>(value);
    case Elem::kI8: return static_cast<int8_t>(value);
    case Elem::kU8: return static_cast<uint8_t>(value);
    case Elem::kBool: return value != 0;
    default: return value;
  }
}

TPUSIM_HD inline void storeInt(const Ref& ref, int64_t i, int64_t value) {
  static_cast<int64_t*>(ref.data)[i] = wrapInt(ref.elem, value);
}

// Copies element `from` of `in` to element `to` of `out` as it is (both of one dtype).
TPUSIM_HD inline void copyElement(const Ref& in, int64_t from, const Ref& out, int64_t to) {
  switch (elementBytes(in.elem)) {
    case 2: static_cast<uint16_t*>(out.data)[to] = static_cast<const uint16_t*>(in.data)[from]; return;
    case 4: static_cast<uint32_t*>(out.data)[to] = static_cast<const uint32_t*>(in.data)[from]; return;
    default: static_cast<uint64_t*>(out.data)[to] = static_cast<const uint64_t*>(in.data)[from]; return;
  }
}

// Element `at` of `out` set to zero (all bits clear: 0 in every dtype).
TPUSIM_HD inline void zeroElement(const Ref& out, int64_t at) {
  switch (elementBytes(out.elem)) {
    case 2: static_cast<uint16_t*>(out.data)[at] = 0; return;
    case 4: static_cast<uint32_t*>(out.data)[at] = 0; return;
    default: static_cast<uint64_t*>(out.data)[at] = 0; return;
  }
}

// An index out of range, seen by a kernel that cannot throw: `*fault` keeps the smallest
// position reported (kNoFault until one is), so the op's first bad index is the one named
// whichever thread saw it first. The executor reads the slot after the run.
inline constexpr uint64_t kNoFault = ~uint64_t{0};

TPUSIM_HD inline void reportFault(uint64_t* fault, int64_t position) {
#if defined(__CUDA_ARCH__)
  atomicMin(reinterpret_cast<unsigned long long*>(fault), static_cast<unsigned long long>(position));
#else
  if (static_cast<uint64_t>(position) < *fault) *fault = static_cast<uint64_t>(position);
#endif
}

// Element strides of a tensor read at an output's coordinates: 0 along a broadcast dimension.
struct Strides {
  int64_t at[kMaxRank] = {};
};

// The offset of output element `linear` (row-major over `dims`) in each of `count` operands.
TPUSIM_HD inline void offsetsOf(int64_t linear, int rank, const int64_t* dims, const Strides* strides, int count,
                                int64_t* offsets) {
  for (int k = 0; k < count; ++k) offsets[k] = 0;
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t coordinate = linear % dims[d];
    linear /= dims[d];
    for (int k = 0; k < count; ++k) offsets[k] += coordinate * strides[k].at[d];
  }
}

// NaN-propagating maximum and minimum, as the CPU executor's floatMax and floatMin.
TPUSIM_HD inline float maxPropagatingNan(float x, float y) {
  return numerics::isNan(x) || numerics::isNan(y) ? NAN : (x < y ? y : x);
}
TPUSIM_HD inline float minPropagatingNan(float x, float y) {
  return numerics::isNan(x) || numerics::isNan(y) ? NAN : (y < x ? y : x);
}

}  // namespace tpusim::reference::cuda
