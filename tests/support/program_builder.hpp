// Builds small hand-written Programs for simulator tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "traces/program.pb.h"
#include "traces/program_format.hpp"

namespace tpusim::testing {

class ProgramBuilder {
 public:
  ProgramBuilder() {
    m_program.set_format(kProgramFormat);
    m_program.set_schema_version(kProgramSchemaVersion);
    m_program.set_model("test");
    m_program.set_mode("training");
    m_chip = m_program.add_chips();
  }

  uint32_t matmul(uint64_t m, uint64_t k, uint64_t n, std::initializer_list<uint32_t> deps, uint32_t core = 0,
                  uint32_t mxu = 0) {
    program::Instruction& ins = add("mm", program::MXU, core, mxu, deps);
    ins.mutable_matmul()->set_m(m);
    ins.mutable_matmul()->set_k(k);
    ins.mutable_matmul()->set_n(n);
    ins.mutable_matmul()->set_input_dtype(program::BF16);
    ins.mutable_matmul()->set_accumulate_dtype(program::F32);
    return ins.id();
  }
  uint32_t vector(uint64_t elements, uint32_t ops, std::initializer_list<uint32_t> deps, uint32_t core = 0) {
    program::Instruction& ins = add("vec", program::VPU, core, 0, deps);
    ins.mutable_vector()->set_elements(elements);
    ins.mutable_vector()->set_ops_per_element(ops);
    return ins.id();
  }
  uint32_t dma(uint64_t bytes, bool load, std::initializer_list<uint32_t> deps, uint32_t core = 0,
               uint32_t engine = 0) {
    program::Instruction& ins = add(load ? "load" : "store", program::DMA, core, engine, deps);
    ins.mutable_dma()->set_src(load ? program::HBM : program::VMEM);
    ins.mutable_dma()->set_dst(load ? program::VMEM : program::HBM);
    ins.mutable_dma()->set_bytes(bytes);
    return ins.id();
  }

  // An all-reduce of `bytes` per replica over the Program's slice (set it with slice()).
  uint32_t allReduce(uint64_t bytes, program::CollectiveAlgorithm algorithm, std::initializer_list<uint32_t> deps) {
    program::Instruction& ins = add("all_reduce", program::ICI, 0, 0, deps);
    program::Collective* c = ins.mutable_collective();
    c->set_kind(program::ALL_REDUCE);
    c->set_bytes(bytes);
    c->set_dtype(program::F32);
    c->set_replicas(m_program.replicas());
    c->set_algorithm(algorithm);
    ins.set_bytes(bytes);
    return ins.id();
  }
  // Data parallel over an ICI slice: "3d_torus", "4x4x4", 64 replicas.
  void slice(const std::string& kind, const std::string& shape, uint32_t replicas) {
    m_program.set_replicas(replicas);
    m_program.set_topology_kind(kind);
    m_program.set_topology_shape(shape);
  }
  // An HBM buffer of `bytes` at byte address `offset`.
  uint32_t hbmBuffer(uint64_t offset, uint64_t bytes) {
    program::Buffer* buffer = m_chip->add_buffers();
    buffer->set_id(static_cast<uint32_t>(m_chip->buffers_size() - 1));
    buffer->set_name("hbm" + std::to_string(buffer->id()));
    buffer->set_space(program::HBM);
    buffer->set_bytes(bytes);
    buffer->set_offset(offset);
    return buffer->id();
  }
  // A DMA of `rows` x `row_bytes` at HBM `address`, `row_stride` apart (rows 1: contiguous),
  // in HBM buffer `buffer` (or none, UINT32_MAX).
  uint32_t dmaAt(uint64_t address, uint64_t rows, uint64_t row_bytes, uint64_t row_stride, bool load,
                 std::initializer_list<uint32_t> deps, uint32_t buffer = UINT32_MAX, uint32_t core = 0,
                 uint32_t engine = 0) {
    const uint32_t id = dma(rows * row_bytes, load, deps, core, engine);
    program::Instruction& ins = *m_chip->mutable_instructions(static_cast<int>(id));
    program::DmaTransfer& transfer = *ins.mutable_dma();
    transfer.set_hbm_address(address);
    if (rows > 1) {
      transfer.set_rows(rows);
      transfer.set_row_bytes(row_bytes);
      transfer.set_row_stride(row_stride);
    }
    if (buffer != UINT32_MAX) (load ? ins.add_reads(buffer) : ins.add_writes(buffer));
    return id;
  }

  program::Program& program() { return m_program; }

 private:
  program::Instruction& add(const std::string& kind, program::Unit unit, uint32_t core, uint32_t index,
                            std::initializer_list<uint32_t> deps) {
    program::Instruction* ins = m_chip->add_instructions();
    ins->set_id(static_cast<uint32_t>(m_chip->instructions_size() - 1));
    ins->set_name(kind + std::to_string(ins->id()));
    ins->set_op(ins->name());
    ins->set_op_type(kind);
    ins->set_unit(unit);
    ins->set_core(core);
    ins->set_unit_index(index);
    for (uint32_t dep : deps) ins->add_deps(dep);
    return *ins;
  }

  program::Program m_program;
  program::ChipProgram* m_chip;
};

}  // namespace tpusim::testing
