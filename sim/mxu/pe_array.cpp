#include "sim/mxu/pe_array.hpp"

#include "sim/common/error.hpp"
#include "sim/mxu/pe_common.hpp"

namespace tpusim {

namespace pe {

PeArrayRun runOn(const Engines& engines, const ArrayConfig& array, const MatmulShape& shape,
                 const std::vector<PassOperands>& passes, uint64_t early_start) {
  checkArray(array);
  checkShape(shape);
  checkFeed(array, shape);
  if (!passes.empty()) {
    if (passes.size() != shape.passes) throw Error(ErrorKind::kInternal, "PE array: one operand pair per pass");
    for (const PassOperands& p : passes) {
      if (p.lhs.size() != shape.m * shape.k || p.rhs.size() != shape.k * shape.n) {
        throw Error(ErrorKind::kInternal, "PE array: operand sizes do not match the shape");
      }
    }
  }
  switch (array.dataflow) {
    case Dataflow::kWeightStationary: return engines.weight_stationary(array, shape, passes, early_start);
    case Dataflow::kOutputStationary: return engines.output_stationary(array, shape, passes, early_start);
    case Dataflow::kInputStationary: break;
  }
  // Input stationary is the weight-stationary array fed with the roles swapped:
  // out^T [n, m] = rhs^T [n, k] x lhs^T [k, m], lhs^T stationary.
  const MatmulShape swapped{shape.n, shape.k, shape.m, shape.passes, shape.feed_interval};
  std::vector<std::vector<float>> storage;
  std::vector<PassOperands> transposed;
  for (const PassOperands& p : passes) {
    std::vector<float> rhs_t(shape.n * shape.k), lhs_t(shape.k * shape.m);
    for (uint64_t k = 0; k < shape.k; ++k) {
      for (uint64_t n = 0; n < shape.n; ++n) rhs_t[n * shape.k + k] = p.rhs[k * shape.n + n];
      for (uint64_t m = 0; m < shape.m; ++m) lhs_t[k * shape.m + m] = p.lhs[m * shape.k + k];
    }
    storage.push_back(std::move(rhs_t));
    storage.push_back(std::move(lhs_t));
  }
  for (size_t i = 0; i < passes.size(); ++i) transposed.push_back({storage[2 * i], storage[2 * i + 1]});
  ArrayConfig ws = array;
  ws.dataflow = Dataflow::kWeightStationary;
  PeArrayRun run = engines.weight_stationary(ws, swapped, transposed, early_start);
  std::vector<float> out(shape.m * shape.n);
  for (uint64_t n = 0; n < shape.n; ++n) {
    for (uint64_t m = 0; m < shape.m; ++m) out[m * shape.n + n] = run.out[n * shape.m + m];
  }
  run.out = std::move(out);
  return run;
}

}  // namespace pe

PeArrayRun simulatePeArray(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                           uint64_t early_start) {
  return pe::runOn({pe::weightStationary, pe::outputStationary}, array, shape, passes, early_start);
}

}  // namespace tpusim
