#include "sim/mxu/mxu.hpp"

#include "sim/common/error.hpp"
#include "sim/mxu/pe_array.hpp"
#include "traces/program_format.hpp"

namespace tpusim {

MxuTimingMode timingModeOf(const config::HardwareConfig& hw) {
  return hw.mxu().timing() == "pe_by_pe" ? MxuTimingMode::kPeByPe : MxuTimingMode::kClosedForm;
}

MatmulShape matmulShapeOf(const program::MatMul& matmul) {
  return MatmulShape{matmul.m(), matmul.k(), matmul.n(), matmul.passes() == 0 ? 1u : matmul.passes(),
                     matmul.feed_interval() == 0 ? 1u : matmul.feed_interval()};
}

Mxu::Mxu(sc_core::sc_module_name name, const std::string& stat_prefix, const UnitContext& context, ArrayConfig array,
         MxuTimingMode mode)
    : ExecUnit(name, stat_prefix, UnitKind::kMxu, context),
      m_array(array),
      m_mode(mode),
      m_macs(context.stats->counter(stat_prefix + ".macs", "MAC",
                                    "useful multiply-accumulate slots of the PEs (x passes); one slot does "
                                    "mxu.int8_macs_per_pe int8 MACs")),
      m_int8_macs(context.stats->counter(stat_prefix + ".int8_macs", "MAC",
                                         "int8 x int8 multiply-accumulates (m x k x n of the int8 instructions)")),
      m_folds(context.stats->counter(stat_prefix + ".folds", "count", "tiles held in the array, one per fold")),
      m_stream(context.stats->counter(stat_prefix + ".stream_cycles", "cycles",
                                      "busy cycles in which a vector entered the array")),
      m_load_stall(context.stats->counter(
          stat_prefix + ".weight_load_stall_cycles", "cycles",
          "busy cycles the array waited, before a fold, for its weights to shift in (or, output stationary, for "
          "results to drain)")),
      m_fill_drain(context.stats->counter(stat_prefix + ".fill_drain_cycles", "cycles",
                                          "busy cycles after an instruction's last vector entered, until its last "
                                          "result left the array")) {
  checkArray(array);
  const Counter* macs = &m_macs;
  const Counter* total = context.total_cycles;
  const double peak_per_cycle = static_cast<double>(array.rows * array.cols);
  context.stats->formula(stat_prefix + ".mac_utilization", "fraction", "useful MACs / (rows x cols x total cycles)",
                         [macs, total, peak_per_cycle] {
                           return total->value() == 0 ? 0.0
                                                      : static_cast<double>(macs->value()) /
                                                            (peak_per_cycle * static_cast<double>(total->value()));
                         });
}

void Mxu::execute(const program::Instruction& instruction) {
  if (!instruction.has_matmul()) {
    throw Error(ErrorKind::kInternal, "MXU received non-matmul instruction " + instructionName(instruction));
  }
  const MatmulShape given = matmulShapeOf(instruction.matmul());
  const bool int8 = instruction.matmul().input_dtype() == program::INT8;
  const MatmulShape shape = sweptShape(m_array, given, int8);
  const ArrayTiming timing =
      m_mode == MxuTimingMode::kPeByPe ? simulatePeArray(m_array, shape, {}).timing : arrayTiming(m_array, shape);
  m_macs.add(timing.macs);
  if (int8) m_int8_macs.add(given.m * given.k * given.n);
  m_folds.add(timing.folds);
  m_stream.add(timing.stream_cycles);
  m_load_stall.add(timing.load_stall_cycles);
  m_fill_drain.add(timing.fill_drain_cycles);
  TimelineEvent& event = currentEvent();
  event.folds = timing.folds;
  event.macs = timing.macs;
  event.stream_cycles = timing.stream_cycles;
  event.stall_cycles = timing.load_stall_cycles;
  event.fill_drain_cycles = timing.fill_drain_cycles;
  wait(clock().cycles(timing.cycles));
}

}  // namespace tpusim
