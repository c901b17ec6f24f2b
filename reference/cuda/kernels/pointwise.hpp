// The elementwise ops of the CUDA executor, one thread per output element: numpy
// broadcasting of up to three operands (Strides), arithmetic in float as the CPU
// executor's float instantiation (double for Pow and the MSE gradient, as there; an integer
// to an integer power exactly), integers wrapped to the output's width.
#pragma once

#include "reference/cuda/kernels/element.hpp"
#include "sim/common/integer_arith.hpp"

namespace tpusim::reference::cuda {

enum class Pointwise : int32_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMaximum,
  kMinimum,  // float or integer (integer Div is refused: see the executor)
  kScale,    // scalar x in0
  kRelu,
  kReluGrad,  // ReluGrad: in0 = dy, in1 = x
  kUnary,
  kUnaryGrad,  // UnaryGrad: in0 = dy, in1 = x, in2 = f(x)
  kCompare,    // integer 0 / 1 output
  kWhere,      // in0 the condition (integer)
  kPow,
  kPowGradBase,
  kPowGradExponent,  // Pow: in0^in1; its gradients: in0 = dy, in1 = a, in2 = b
  kCast,
  kSgd,          // in0 - scalar x in1
  kCopy,         // BroadcastTo: in0 at the output's shape
  kMseLossGrad,  // scalar x (in0 - in1), scalar = 2 / elements
};

// ir::UnaryKind and ir::CompareDirection, in their order.
enum class Unary : int32_t {
  kAbs,
  kErf,
  kExp,
  kLog,
  kNeg,
  kReciprocal,
  kSigmoid,
  kSqrt,
  kTanh,
  kRound,
  kLeakyRelu,
  kElu,
  kSelu,
  kFloor,
  kCeil,
  kSign,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh
};
enum class Compare : int32_t { kEq, kNe, kLt, kLe, kGt, kGe };

struct PointwiseArgs {
  Pointwise kind = Pointwise::kCopy;
  int32_t detail = 0;  // Unary or Compare
  double scalar = 0;
  double alpha = 0, gamma = 1;  // Unary, UnaryGrad: ir::Op's, for LeakyRelu, Elu and Selu
  int rank = 0;
  int64_t dims[kMaxRank] = {};  // the output's shape
  int64_t count = 0;
  int inputs = 0;
  Ref in[3];
  Strides strides[3];
  Ref out;
  uint64_t* fault = nullptr;  // an integer Div's: the first division by zero's position (reportFault)
};

// The CPU executor's float arithmetic, operation for operation (its bits on the host device).
TPUSIM_HD inline float applyUnary(Unary kind, float x, float alpha, float gamma) {
  switch (kind) {
    case Unary::kAbs: return fabsf(x);
    case Unary::kErf: return erff(x);
    case Unary::kExp: return expf(x);
    case Unary::kLog: return logf(x);
    case Unary::kNeg: return -x;
    case Unary::kReciprocal: return 1.0f / x;
    case Unary::kSigmoid: return 1.0f / (1.0f + expf(-x));
    case Unary::kSqrt: return sqrtf(x);
    case Unary::kTanh: return tanhf(x);
    case Unary::kRound: return rintf(x);  // the default rounding mode: halves to even
    case Unary::kLeakyRelu: return x >= 0.0f ? x : alpha * x;
    case Unary::kElu: return x >= 0.0f ? x : alpha * expm1f(x);
    case Unary::kSelu: return gamma * (x > 0.0f ? x : alpha * expm1f(x));
    case Unary::kFloor: return floorf(x);
    case Unary::kCeil: return ceilf(x);
    case Unary::kSign: return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f);
    case Unary::kSin: return sinf(x);
    case Unary::kCos: return cosf(x);
    case Unary::kTan: return tanf(x);
    case Unary::kAsin: return asinf(x);
    case Unary::kAcos: return acosf(x);
    case Unary::kAtan: return atanf(x);
    case Unary::kSinh: return sinhf(x);
    case Unary::kCosh: return coshf(x);
    case Unary::kAsinh: return asinhf(x);
    case Unary::kAcosh: return acoshf(x);
    case Unary::kAtanh: return atanhf(x);
  }
  return x;
}

// f'(x), given x and y = f(x).
TPUSIM_HD inline float unaryDerivative(Unary kind, float x, float y, float alpha, float gamma) {
  switch (kind) {
    case Unary::kAbs: return x > 0 ? 1.0f : (x < 0 ? -1.0f : 0.0f);
    case Unary::kErf: return 1.1283791670955126f * expf(-x * x);
    case Unary::kExp: return y;
    case Unary::kLog: return 1.0f / x;
    case Unary::kNeg: return -1.0f;
    case Unary::kReciprocal: return -y * y;
    case Unary::kSigmoid: return y * (1.0f - y);
    case Unary::kSqrt: return 0.5f / y;
    case Unary::kTanh: return 1.0f - y * y;
    case Unary::kRound: return 0.0f;
    case Unary::kLeakyRelu: return x > 0.0f ? 1.0f : alpha;
    case Unary::kElu: return x > 0.0f ? 1.0f : alpha * expf(x);
    case Unary::kSelu: return x > 0.0f ? gamma : gamma * alpha * expf(x);
    case Unary::kFloor:
    case Unary::kCeil:
    case Unary::kSign: return 0.0f;
    case Unary::kSin: return cosf(x);
    case Unary::kCos: return -sinf(x);
    case Unary::kTan: return 1.0f + y * y;
    case Unary::kAsin: return 1.0f / sqrtf(1.0f - x * x);
    case Unary::kAcos: return -1.0f / sqrtf(1.0f - x * x);
    case Unary::kAtan: return 1.0f / (1.0f + x * x);
    case Unary::kSinh: return coshf(x);
    case Unary::kCosh: return sinhf(x);
    case Unary::kAsinh: return 1.0f / sqrtf(x * x + 1.0f);
    case Unary::kAcosh: return 1.0f / sqrtf(x * x - 1.0f);
    case Unary::kAtanh: return 1.0f / (1.0f - x * x);
  }
  return 0.0f;
}

template <typename T>
TPUSIM_HD bool compareValues(Compare direction, T x, T y) {
  switch (direction) {
    case Compare::kEq: return x == y;
    case Compare::kNe: return x != y;
    case Compare::kLt: return x < y;
    case Compare::kLe: return x <= y;
    case Compare::kGt: return x > y;
    case Compare::kGe: return x >= y;
  }
  return false;
}

TPUSIM_HD inline double loadDouble(const Ref& ref, int64_t i) {
  return isFloating(ref.elem) ? static_cast<double>(loadFloat(ref, i)) : static_cast<double>(loadInt(ref, i));
}

using ::tpusim::numerics::truncatedInt;

struct PointwiseKernel {
  PointwiseArgs a;

  TPUSIM_HD void operator()(int64_t i) const {
    int64_t at[3];
    offsetsOf(i, a.rank, a.dims, a.strides, a.inputs, at);
    const auto f = [&](int k) { return loadFloat(a.in[k], at[k]); };
    const auto n = [&](int k) { return loadInt(a.in[k], at[k]); };
    const bool floating = isFloating(a.out.elem);
    switch (a.kind) {
      case Pointwise::kDiv:
        if (!floating && n(1) == 0) {  // reported (the executor names the op after the run); 0 stored
          reportFault(a.fault, i);
          storeInt(a.out, i, 0);
          return;
        }
        [[fallthrough]];
      case Pointwise::kAdd:
      case Pointwise::kSub:
      case Pointwise::kMul:
      case Pointwise::kMaximum:
      case Pointwise::kMinimum:
        if (floating) {
          storeFloat(a.out, i, binaryFloat(f(0), f(1)));
        } else {
          storeInt(a.out, i, binaryInt(n(0), n(1)));
        }
        return;
      case Pointwise::kScale: storeFloat(a.out, i, static_cast<float>(a.scalar) * f(0)); return;
      case Pointwise::kRelu: {
        const float x = f(0);
        storeFloat(a.out, i, numerics::isNan(x) ? x : (x > 0.0f ? x : 0.0f));
        return;
      }
      case Pointwise::kReluGrad: storeFloat(a.out, i, f(1) > 0.0f ? f(0) : 0.0f); return;
      case Pointwise::kUnary:
        storeFloat(
            a.out, i,
            applyUnary(static_cast<Unary>(a.detail), f(0), static_cast<float>(a.alpha), static_cast<float>(a.gamma)));
        return;
      case Pointwise::kUnaryGrad:
        storeFloat(a.out, i,
                   f(0) * unaryDerivative(static_cast<Unary>(a.detail), f(1), f(2), static_cast<float>(a.alpha),
                                          static_cast<float>(a.gamma)));
        return;
      case Pointwise::kCompare: {
        const auto direction = static_cast<Compare>(a.detail);
        const bool result =
            isFloating(a.in[0].elem) ? compareValues(direction, f(0), f(1)) : compareValues(direction, n(0), n(1));
        storeInt(a.out, i, result ? 1 : 0);
        return;
      }
      case Pointwise::kWhere: {
        const int k = n(0) != 0 ? 1 : 2;
        if (floating) {
          storeFloat(a.out, i, f(k));
        } else {
          storeInt(a.out, i, n(k));
        }
        return;
      }
      case Pointwise::kPow: {
        if (!isFloating(a.in[0].elem) && !isFloating(a.in[1].elem)) {
          storeInt(a.out, i, ::tpusim::numerics::integerPow(loadInt(a.in[0], at[0]), loadInt(a.in[1], at[1])));
          return;
        }
        const double result = pow(loadDouble(a.in[0], at[0]), loadDouble(a.in[1], at[1]));
        if (floating) {
          storeDouble(a.out, i, result);
        } else {
          storeInt(a.out, i, truncatedInt(result));
        }
        return;
      }
      case Pointwise::kPowGradBase:
      case Pointwise::kPowGradExponent: {
        const double x = loadDouble(a.in[1], at[1]), e = loadDouble(a.in[2], at[2]);
        const double local = a.kind == Pointwise::kPowGradBase ? e * pow(x, e - 1.0) : pow(x, e) * log(x);
        storeDouble(a.out, i, static_cast<double>(f(0)) * local);
        return;
      }
      case Pointwise::kCast:
        if (floating) {
          storeFloat(a.out, i, f(0));  // an integer converts to float first, as the CPU executor's T
        } else if (!isFloating(a.in[0].elem)) {
          storeInt(a.out, i, n(0));
        } else if (a.out.elem == Elem::kBool) {
          storeInt(a.out, i, f(0) != 0.0f ? 1 : 0);
        } else {
          storeInt(a.out, i, truncatedInt(f(0)));
        }
        return;
      case Pointwise::kSgd: storeFloat(a.out, i, f(0) - static_cast<float>(a.scalar) * f(1)); return;
      case Pointwise::kCopy:
        if (floating) {
          storeFloat(a.out, i, f(0));
        } else {
          storeInt(a.out, i, n(0));
        }
        return;
      case Pointwise::kMseLossGrad:
        storeDouble(a.out, i, a.scalar * (loadDouble(a.in[0], at[0]) - loadDouble(a.in[1], at[1])));
        return;
    }
  }

  TPUSIM_HD float binaryFloat(float x, float y) const {
    switch (a.kind) {
      case Pointwise::kAdd: return x + y;
      case Pointwise::kSub: return x - y;
      case Pointwise::kMul: return x * y;
      case Pointwise::kMaximum: return maxPropagatingNan(x, y);
      case Pointwise::kMinimum: return minPropagatingNan(x, y);
      default: return x / y;
    }
  }

  TPUSIM_HD int64_t binaryInt(int64_t x, int64_t y) const {
    // In uint64, where overflow wraps (signed overflow would be undefined), then to the width.
    const auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (a.kind) {
      case Pointwise::kAdd: return static_cast<int64_t>(ux + uy);
      case Pointwise::kSub: return static_cast<int64_t>(ux - uy);
      case Pointwise::kMul: return static_cast<int64_t>(ux * uy);
      case Pointwise::kMaximum: return x < y ? y : x;
      case Pointwise::kMinimum: return y < x ? y : x;
      default: return numerics::integerQuotient(x, y);  // y is not 0 here
    }
  }
};

}  // namespace tpusim::reference::cuda
