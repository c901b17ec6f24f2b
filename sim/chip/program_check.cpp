#include "sim/chip/program_check.hpp"

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "sim/common/error.hpp"
#include "sim/mxu/array_config.hpp"
#include "sim/mxu/array_timing.hpp"
#include "sim/mxu/mxu.hpp"

namespace tpusim {

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw Error(ErrorKind::kInvalidInput, message);
}

// "instruction N (its name)" for an error message, made only when one is thrown: a
// Program has a million instructions and nearly always passes.
struct Where {
  const program::Instruction& ins;
  uint32_t index;
};
std::string operator+(const Where& where, const std::string& rest) {
  return "instruction " + std::to_string(where.index) + " (" + instructionName(where.ins) + ")" + rest;
}

// A descriptor's HBM bytes lie inside the HBM buffer it names (the first HBM buffer the
// instruction reads for a load, writes for a store) and inside HBM.
void checkDescriptor(const program::ChipProgram& chip, const program::Instruction& ins, const Where& where,
                     const config::HardwareConfig& hw) {
  const program::DmaTransfer& dma = ins.dma();
  const bool load = dma.src() == program::HBM;
  if (load == (dma.dst() == program::HBM)) {
    fail(where + " moves " + program::MemorySpace_Name(dma.src()) + " to " + program::MemorySpace_Name(dma.dst()) +
         "; a DMA engine moves between HBM and another memory");
  }
  const bool strided = dma.rows() > 1;
  if (!strided && (dma.row_bytes() != 0 || dma.row_stride() != 0)) {
    fail(where + " sets row_bytes or row_stride with rows " + std::to_string(dma.rows()) +
         "; a strided descriptor has rows >= 2");
  }
  // Extents in 128 bits: a malformed descriptor must not wrap around.
  using Wide = unsigned __int128;
  if (strided && (dma.row_bytes() == 0 || static_cast<Wide>(dma.rows()) * dma.row_bytes() != dma.bytes())) {
    fail(where + " has " + std::to_string(dma.rows()) + " rows of " + std::to_string(dma.row_bytes()) +
         " bytes, which is not its " + std::to_string(dma.bytes()) + " bytes");
  }
  const Wide end = static_cast<Wide>(dma.hbm_address()) +
                   (strided ? static_cast<Wide>(dma.rows() - 1) * dma.row_stride() + dma.row_bytes() : dma.bytes());
  const auto text = [](Wide value) {
    return value > UINT64_MAX ? std::string("more than 2^64") : std::to_string(static_cast<uint64_t>(value));
  };
  const auto capacity = static_cast<Wide>(hw.hbm().capacity_gib() * 1024.0 * 1024.0 * 1024.0);
  if (end > capacity) {
    fail(where + " reaches HBM byte " + text(end) + ", past the " + text(capacity) + " bytes of HBM");
  }
  for (uint32_t id : load ? ins.reads() : ins.writes()) {
    const program::Buffer& buffer = chip.buffers(static_cast<int>(id));
    if (buffer.space() != program::HBM) continue;
    if (dma.hbm_address() < buffer.offset() || end > static_cast<Wide>(buffer.offset()) + buffer.bytes()) {
      fail(where + " covers HBM bytes [" + std::to_string(dma.hbm_address()) + ", " + text(end) + ") but its buffer " +
           buffer.name() + " is [" + std::to_string(buffer.offset()) + ", " +
           text(static_cast<Wide>(buffer.offset()) + buffer.bytes()) + ")");
    }
    return;
  }
}

void checkInstruction(const program::Program& program, const program::ChipProgram& chip,
                      const program::Instruction& ins, uint32_t index, const config::HardwareConfig& hw) {
  const Where where{ins, index};
  if (ins.id() != index) fail(where + " has id " + std::to_string(ins.id()) + "; ids must equal positions");
  for (uint32_t dep : ins.deps()) {
    if (dep >= index) {
      fail(where + " depends on instruction " + std::to_string(dep) +
           ", which is not earlier: the program is cyclic or out of dependency order");
    }
  }
  for (uint32_t buffer : ins.reads()) {
    if (buffer >= static_cast<uint32_t>(chip.buffers_size()))
      fail(where + " reads unknown buffer " + std::to_string(buffer));
  }
  for (uint32_t buffer : ins.writes()) {
    if (buffer >= static_cast<uint32_t>(chip.buffers_size()))
      fail(where + " writes unknown buffer " + std::to_string(buffer));
  }
  if (ins.core() >= static_cast<uint64_t>(hw.chip().tensor_cores())) {
    fail(where + " runs on core " + std::to_string(ins.core()) + " but " + hw.name() + " has " +
         std::to_string(hw.chip().tensor_cores()) + " TensorCore(s)");
  }
  const auto checkMxuDTypes = [&](const program::MatMul& mm, const Where& at) {
    // What the MXU multiplies (docs/mxu.md): bf16, f16 and int8 in one pass, f32 in 1, 3 or 6 bf16 passes.
    const program::DType in = mm.input_dtype(), acc = mm.accumulate_dtype();
    const bool pair_ok = ((in == program::BF16 || in == program::F16 || in == program::F32) && acc == program::F32) ||
                         (in == program::INT8 && acc == program::INT32);
    if (!pair_ok) {
      fail(at + " multiplies " + program::DType_Name(in) + " into " + program::DType_Name(acc) +
           ", which the MXU does not support (bf16, f16 or f32 into f32; int8 into int32)");
    }
    const uint32_t passes = mm.passes() == 0 ? 1 : mm.passes();
    if (passes != 1 && !(in == program::F32 && (passes == 3 || passes == 6))) {
      fail(at + " asks for " + std::to_string(passes) + " passes; an f32 matmul takes 1, 3 or 6, others 1");
    }
  };
  switch (ins.unit()) {
    case program::MXU:
      if (!ins.has_matmul()) fail(where + " is on an MXU but is not a matmul");
      if (ins.unit_index() >= static_cast<uint64_t>(hw.mxu().per_core())) {
        fail(where + " uses MXU " + std::to_string(ins.unit_index()) + " but a core has " +
             std::to_string(hw.mxu().per_core()));
      }
      if (ins.matmul().m() == 0 || ins.matmul().k() == 0 || ins.matmul().n() == 0) fail(where + " is an empty matmul");
      checkMxuDTypes(ins.matmul(), where);
      break;
    case program::VPU:
      if (!ins.has_vector()) fail(where + " is on the vector unit but is not a vector op");
      if (ins.unit_index() != 0)
        fail(where + " uses vector unit " + std::to_string(ins.unit_index()) + "; a core has one");
      break;
    case program::DMA:
      if (!ins.has_dma()) fail(where + " is on a DMA engine but is not a transfer");
      if (ins.unit_index() >= static_cast<uint64_t>(hw.dma().engines_per_core())) {
        fail(where + " uses DMA engine " + std::to_string(ins.unit_index()) + " but a core has " +
             std::to_string(hw.dma().engines_per_core()));
      }
      if (ins.dma().bytes() > std::numeric_limits<uint32_t>::max()) {
        fail(where + " moves " + std::to_string(ins.dma().bytes()) + " bytes; one transfer is at most 4 GiB");
      }
      checkDescriptor(chip, ins, where, hw);
      break;
    case program::ICI: {
      if (!ins.has_collective()) fail(where + " is on the interconnect but is not a collective");
      if (ins.core() != 0 || ins.unit_index() != 0) fail(where + " must be issued by core 0 to ICI port 0");
      const program::Collective& c = ins.collective();
      if (c.kind() != program::ALL_REDUCE) fail(where + " is a collective of unknown kind");
      if (c.algorithm() == program::COLLECTIVE_ALGORITHM_UNSPECIFIED) fail(where + " has no collective algorithm");
      if (c.bytes() == 0) fail(where + " is a collective over zero bytes");
      if (programDTypeBytes(c.dtype()) == 0) fail(where + " is a collective of no element type");
      const uint32_t replicas = program.replicas() < 1 ? 1 : program.replicas();
      if (c.replicas() == 0) fail(where + " is a collective over an empty group (0 replicas)");
      if (replicas == 1) fail(where + " is a collective but the Program runs on one chip (no ICI slice)");
      const uint32_t stride = c.group_stride() < 1 ? 1 : c.group_stride();
      if (replicas % (static_cast<uint64_t>(c.replicas()) * stride) != 0) {
        fail(where + " spans " + std::to_string(c.replicas()) + " replicas " + std::to_string(stride) +
             " apart, which do not tile the Program's " + std::to_string(replicas));
      }
      break;
    }
    default: fail(where + " has no execution unit");
  }
}

}  // namespace

uint32_t programDTypeBytes(program::DType dtype) {
  switch (dtype) {
    case program::F64:
    case program::INT64:
    case program::UINT64: return 8;
    case program::F32:
    case program::INT32:
    case program::UINT32: return 4;
    case program::BF16:
    case program::F16: return 2;
    case program::INT8:
    case program::UINT8:
    case program::BOOL: return 1;
    default: return 0;
  }
}

void validateProgram(const program::Program& program, const config::HardwareConfig& hw) {
  if (program.format() != kProgramFormat) fail("not a tpusim Program (format field is '" + program.format() + "')");
  if (!readableProgramSchema(program.schema_version())) {
    fail("Program schema version " + std::to_string(program.schema_version()) +
         " is not supported (this tpusim reads " + std::to_string(kOldestProgramSchemaVersion) + " to " +
         std::to_string(kProgramSchemaVersion) + ")");
  }
  if (program.chips_size() == 0) fail("the Program has no chips");
  for (const program::ChipProgram& chip : program.chips()) {
    for (int i = 0; i < chip.buffers_size(); ++i) {
      if (chip.buffers(i).id() != static_cast<uint32_t>(i)) fail("buffer " + std::to_string(i) + " has a wrong id");
    }
    for (int i = 0; i < chip.instructions_size(); ++i) {
      checkInstruction(program, chip, chip.instructions(i), static_cast<uint32_t>(i), hw);
    }
  }
}

void checkPeByPeWork(const program::Program& program, const config::HardwareConfig& hw) {
  if (timingModeOf(hw) != MxuTimingMode::kPeByPe) return;
  const ArrayConfig array = arrayConfigOf(hw);
  const double pes = static_cast<double>(array.rows * array.cols);
  const auto limit = static_cast<double>(hw.mxu().pe_by_pe_max_pe_cycles());
  double work = 0;
  for (const program::ChipProgram& chip : program.chips()) {
    for (const program::Instruction& instruction : chip.instructions()) {
      if (!instruction.has_matmul()) continue;
      const bool int8 = instruction.matmul().input_dtype() == program::INT8;
      work +=
          static_cast<double>(arrayTiming(array, sweptShape(array, matmulShapeOf(instruction.matmul()), int8)).cycles) *
          pes;
    }
  }
  if (work > limit) {
    char amounts[128];
    std::snprintf(amounts, sizeof amounts, "%.3g PE-cycles, above mxu.pe_by_pe_max_pe_cycles = %.3g", work, limit);
    throw Error(ErrorKind::kResource, std::string("mxu.timing=pe_by_pe would step ") + amounts + " (about " +
                                          std::to_string(static_cast<uint64_t>(work / 4e8 / 60) + 1) +
                                          " minutes); simulate a smaller step, use the closed form, or raise the "
                                          "limit with --set mxu.pe_by_pe_max_pe_cycles=N");
  }
}

}  // namespace tpusim
