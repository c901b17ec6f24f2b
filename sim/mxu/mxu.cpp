#include "sim/mxu/mxu.hpp"

#include "sim/common/error.hpp"

namespace tpusim {

Mxu::Mxu(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context, MxuShape shape)
    : ExecUnit(name, stat_prefix, context),
      m_shape(shape),
      m_macs(context.stats->counter(stat_prefix + ".macs", "MAC", "useful multiply-accumulates")),
      m_folds(context.stats->counter(stat_prefix + ".folds", "count", "weight tiles loaded into the array")) {
  const Counter* macs = &m_macs;
  const Counter* total = context.total_cycles;
  const double peak_per_cycle = static_cast<double>(shape.rows * shape.cols);
  context.stats->formula(stat_prefix + ".mac_utilization", "fraction", "useful MACs / (rows x cols x total cycles)",
                         [macs, total, peak_per_cycle] {
                           return total->value() == 0 ? 0.0
                                                      : static_cast<double>(macs->value()) /
                                                            (peak_per_cycle * static_cast<double>(total->value()));
                         });
}

void Mxu::execute(const program::Instruction& instruction) {
  if (!instruction.has_matmul()) {
    throw Error(ErrorKind::kInternal, "MXU received non-matmul instruction " + instruction.name());
  }
  const program::MatMul& mm = instruction.matmul();
  const WsTiming timing = weightStationaryTiming(mm.m(), mm.k(), mm.n(), m_shape);
  m_macs.add(timing.macs);
  m_folds.add(timing.folds);
  wait(clock().cycles(timing.cycles));
}

}  // namespace tpusim
