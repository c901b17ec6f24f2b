#include "frontend/lower/lower.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "frontend/lower/vector_costs.hpp"
#include "sim/common/error.hpp"
#include "traces/program_format.hpp"

namespace tpusim {

namespace {

using ir::OpType;

program::DType toProgramDType(DType dtype) {
  switch (dtype) {
    case DType::kF32: return program::F32;
    case DType::kBF16: return program::BF16;
    case DType::kF16: return program::F16;
    case DType::kInt8: return program::INT8;
    case DType::kUInt8: return program::UINT8;
    case DType::kInt32: return program::INT32;
    case DType::kInt64: return program::INT64;
    case DType::kUInt32: return program::UINT32;
    case DType::kUInt64: return program::UINT64;
    case DType::kBool: return program::BOOL;
  }
  return program::DTYPE_UNSPECIFIED;
}

program::BufferRole toBufferRole(ir::TensorRole role) {
  switch (role) {
    case ir::TensorRole::kInput:
    case ir::TensorRole::kLabel: return program::INPUT;
    case ir::TensorRole::kWeight:
    case ir::TensorRole::kConstant: return program::WEIGHT;
    case ir::TensorRole::kGradient: return program::GRADIENT;
    case ir::TensorRole::kActivation:
    case ir::TensorRole::kLoss: return program::ACTIVATION;
  }
  return program::ROLE_UNSPECIFIED;
}

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

// Splits `extent` into at most `parts` contiguous chunks of ceil(extent / parts).
std::vector<uint64_t> splitEvenly(uint64_t extent, uint64_t parts) {
  std::vector<uint64_t> chunks;
  const uint64_t chunk = (extent + parts - 1) / parts;
  for (uint64_t start = 0; start < extent; start += chunk) chunks.push_back(std::min(chunk, extent - start));
  return chunks;
}

// One HBM operand of an op on one core: how many of its bytes the core loads.
struct Operand {
  int tensor;
  uint64_t bytes;
};

class Lowerer {
 public:
  Lowerer(const ir::Graph& graph, const config::HardwareConfig& hw, program::ChipProgram& chip)
      : m_graph(graph), m_hw(hw), m_chip(chip) {}

  void run() {
    createHbmBuffers();
    for (const ir::Op& op : m_graph.ops()) {
      try {
        lowerOp(op);
      } catch (const Error& error) {
        throw error.within("op '" + op.name + "'");
      }
    }
  }

 private:
  struct Hazards {
    std::vector<uint32_t> writers;  // instructions whose writes are the buffer's current contents
    std::vector<uint32_t> readers;  // instructions that read it since
  };

  void createHbmBuffers() {
    uint64_t total = 0;
    for (const ir::Tensor& tensor : m_graph.tensors()) {
      if (tensor.alias_of >= 0) {
        m_hbm_buffer.push_back(m_hbm_buffer.at(static_cast<size_t>(tensor.alias_of)));
        continue;
      }
      m_hbm_buffer.push_back(addBuffer(tensor.name, program::HBM, tensor, tensor.bytes(), 0));
      total += tensor.bytes();
    }
    m_hazards.resize(m_chip.buffers_size());
    const double capacity = m_hw.hbm().capacity_gib() * 1024.0 * 1024.0 * 1024.0;
    if (static_cast<double>(total) > capacity) {
      std::vector<const ir::Tensor*> largest;
      for (const ir::Tensor& tensor : m_graph.tensors()) {
        if (tensor.alias_of < 0) largest.push_back(&tensor);
      }
      std::sort(largest.begin(), largest.end(), [](auto* a, auto* b) {
        return a->bytes() > b->bytes() || (a->bytes() == b->bytes() && a->id < b->id);
      });
      std::string names;
      for (size_t i = 0; i < std::min<size_t>(3, largest.size()); ++i) {
        names += (i ? ", " : "") + largest[i]->name + " " + mib(largest[i]->bytes());
      }
      throw Error(ErrorKind::kResource, "the step needs " + mib(total) + " of HBM but " + m_hw.name() + " has " +
                                            mib(static_cast<uint64_t>(capacity)) + " (largest: " + names +
                                            "); use a smaller batch, or a larger preset");
    }
  }

  uint32_t addBuffer(const std::string& name, program::MemorySpace space, const ir::Tensor& tensor, uint64_t bytes,
                     uint32_t core) {
    program::Buffer* buffer = m_chip.add_buffers();
    buffer->set_id(static_cast<uint32_t>(m_chip.buffers_size() - 1));
    buffer->set_name(name);
    buffer->set_space(space);
    buffer->set_dtype(toProgramDType(tensor.dtype));
    if (space == program::HBM) {
      for (int64_t dim : tensor.shape) buffer->add_shape(dim);
    }
    buffer->set_bytes(bytes);
    buffer->set_role(space == program::HBM ? toBufferRole(tensor.role) : program::STAGING);
    buffer->set_core(core);
    return buffer->id();
  }

  program::Instruction& newInstruction(const ir::Op& op, const std::string& part, program::Unit unit, uint32_t core,
                                       uint32_t unit_index) {
    program::Instruction* ins = m_chip.add_instructions();
    ins->set_id(static_cast<uint32_t>(m_chip.instructions_size() - 1));
    ins->set_name(op.name + ".c" + std::to_string(core) + "." + part);
    ins->set_op(op.name);
    ins->set_op_type(ir::opTypeName(op.type));
    ins->set_unit(unit);
    ins->set_core(core);
    ins->set_unit_index(unit_index);
    return *ins;
  }

  // DMA of `operand` into a fresh VMEM buffer of `core`; returns the instruction id and the VMEM buffer.
  std::pair<uint32_t, uint32_t> load(const ir::Op& op, uint32_t core, const Operand& operand) {
    const ir::Tensor& tensor = m_graph.tensor(operand.tensor);
    const uint32_t hbm = m_hbm_buffer[static_cast<size_t>(operand.tensor)];
    const uint32_t vmem = addBuffer(op.name + ".c" + std::to_string(core) + "." + tensor.name, program::VMEM, tensor,
                                    operand.bytes, core);
    program::Instruction& ins = newInstruction(op, "load." + tensor.name, program::DMA, core, 0);
    setDma(ins, program::HBM, program::VMEM, operand.bytes);
    ins.add_reads(hbm);
    ins.add_writes(vmem);
    for (uint32_t writer : m_hazards[hbm].writers) ins.add_deps(writer);
    m_hazards[hbm].readers.push_back(ins.id());
    return {ins.id(), vmem};
  }

  uint32_t store(const ir::Op& op, uint32_t core, uint32_t vmem, uint64_t bytes, const std::vector<uint32_t>& compute) {
    const int out = op.outputs[0];
    const uint32_t hbm = m_hbm_buffer[static_cast<size_t>(out)];
    const uint32_t engine = static_cast<uint32_t>(m_hw.dma().engines_per_core() - 1);
    program::Instruction& ins = newInstruction(op, "store", program::DMA, core, engine);
    setDma(ins, program::VMEM, program::HBM, bytes);
    ins.add_reads(vmem);
    ins.add_writes(hbm);
    std::vector<uint32_t> deps = compute;
    deps.insert(deps.end(), m_hazards[hbm].readers.begin(), m_hazards[hbm].readers.end());  // write after read
    deps.insert(deps.end(), m_hazards[hbm].writers.begin(), m_hazards[hbm].writers.end());  // write after write
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    for (uint32_t dep : deps) ins.add_deps(dep);
    return ins.id();
  }

  static void setDma(program::Instruction& ins, program::MemorySpace src, program::MemorySpace dst, uint64_t bytes) {
    if (bytes > std::numeric_limits<uint32_t>::max()) {
      throw Error(ErrorKind::kUnsupported,
                  "a transfer of " + mib(bytes) + " exceeds 4 GiB; tiling large ops is not implemented yet");
    }
    program::DmaTransfer* dma = ins.mutable_dma();
    dma->set_src(src);
    dma->set_dst(dst);
    dma->set_bytes(bytes);
    ins.set_bytes(bytes);
  }

  void checkVmem(uint32_t core, uint64_t bytes) const {
    const double capacity = m_hw.vmem().capacity_mib() * 1024.0 * 1024.0;
    if (static_cast<double>(bytes) > capacity) {
      throw Error(ErrorKind::kResource,
                  "needs " + mib(bytes) + " of VMEM on core " + std::to_string(core) + " but " + m_hw.name() + " has " +
                      mib(static_cast<uint64_t>(capacity)) +
                      " per core; tiling ops larger than VMEM is not implemented yet (use a smaller batch)");
    }
  }

  // Completes an op: the output buffer's contents are now the stores' writes.
  void finish(const ir::Op& op, std::vector<uint32_t> stores) {
    Hazards& hazards = m_hazards[m_hbm_buffer[static_cast<size_t>(op.outputs[0])]];
    hazards.writers = std::move(stores);
    hazards.readers.clear();
  }

  void lowerOp(const ir::Op& op) {
    switch (op.type) {
      case OpType::kReshape: return;  // a view: the output shares the input's HBM buffer
      case OpType::kMatMul: return lowerMatMul(op);
      case OpType::kGather: return lowerGather(op);
      case OpType::kConv:
      case OpType::kConvGradInput:
      case OpType::kConvGradWeight: return lowerConv(op);
      default: return lowerVector(op);
    }
  }

  // One core's share of a matmul: `count` independent [m, k] x [k, n] products.
  struct MatMulShare {
    uint64_t count;
    uint64_t m;
    uint64_t lhs_bytes;
    uint64_t rhs_bytes;
  };

  // A matmul whose rhs has no batch dimensions folds its lhs batch into M (one big
  // product, split by rows over the cores); otherwise the batch is split over the cores.
  std::vector<MatMulShare> shareMatMul(const ir::Op& op, uint64_t m, uint64_t k, uint64_t n) const {
    const ir::Tensor& a = m_graph.tensor(op.inputs[0]);
    const ir::Tensor& b = m_graph.tensor(op.inputs[1]);
    const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
    const uint64_t element = dtypeBytes(a.dtype);
    const auto batchOf = [](const ir::Shape& shape) {
      return static_cast<uint64_t>(ir::elementCount(ir::Shape(shape.begin(), shape.end() - 2)));
    };
    const uint64_t batch = batchOf(out.shape);
    const uint64_t cores = static_cast<uint64_t>(m_hw.chip().tensor_cores());
    std::vector<MatMulShare> shares;
    // (A transposed lhs is [..., K, M]: its rows do not stack, so only batch 1 folds.)
    if (batchOf(b.shape) == 1 && (!op.transpose_a || batch == 1)) {
      for (uint64_t rows : splitEvenly(batch * m, cores)) shares.push_back({1, rows, rows * k * element, b.bytes()});
      return shares;
    }
    const bool a_batched = batchOf(a.shape) > 1;
    const bool b_batched = batchOf(b.shape) > 1;
    for (uint64_t count : splitEvenly(batch, cores)) {
      shares.push_back(
          {count, m, (a_batched ? count : 1) * m * k * element, (b_batched ? count : 1) * k * n * element});
    }
    return shares;
  }

  // One product on one MXU: out[m, n] = lhs[m, k] x rhs[k, n], accumulated in f32.
  struct MxuTile {
    uint64_t m, k, n;
    DType input_dtype;
    DType output_dtype;
    bool transpose_lhs, transpose_rhs;
  };

  uint32_t emitMatMul(const ir::Op& op, const std::string& part, uint32_t core, uint32_t mxu, const MxuTile& tile,
                      const std::vector<uint32_t>& reads, uint32_t write, const std::vector<uint32_t>& deps) {
    program::Instruction& ins = newInstruction(op, part, program::MXU, core, mxu);
    program::MatMul* mm = ins.mutable_matmul();
    mm->set_m(tile.m);
    mm->set_k(tile.k);
    mm->set_n(tile.n);
    mm->set_input_dtype(toProgramDType(tile.input_dtype));
    mm->set_accumulate_dtype(program::F32);
    mm->set_transpose_lhs(tile.transpose_lhs);
    mm->set_transpose_rhs(tile.transpose_rhs);
    ins.set_flops(2 * tile.m * tile.k * tile.n);
    ins.set_bytes((tile.m * tile.k + tile.k * tile.n) * dtypeBytes(tile.input_dtype) +
                  tile.m * tile.n * dtypeBytes(tile.output_dtype));
    for (uint32_t buffer : reads) ins.add_reads(buffer);
    ins.add_writes(write);
    for (uint32_t dep : deps) ins.add_deps(dep);
    return ins.id();
  }

  void lowerMatMul(const ir::Op& op) {
    const ir::Tensor& a = m_graph.tensor(op.inputs[0]);
    const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
    const size_t rank = out.shape.size();
    const uint64_t m = static_cast<uint64_t>(out.shape[rank - 2]);
    const uint64_t n = static_cast<uint64_t>(out.shape[rank - 1]);
    const uint64_t k = static_cast<uint64_t>(op.transpose_a ? a.shape[a.shape.size() - 2] : a.shape.back());
    if (k == 0 && m * n > 0) {
      throw Error(ErrorKind::kUnsupported, "a matmul with an empty contracting dimension (K = 0) is not supported");
    }
    const std::vector<uint64_t> cols = splitEvenly(n, static_cast<uint64_t>(m_hw.mxu().per_core()));
    std::vector<uint32_t> stores;
    const std::vector<MatMulShare> shares = shareMatMul(op, m, k, n);
    for (uint32_t core = 0; core < shares.size(); ++core) {
      const MatMulShare& share = shares[core];
      const uint64_t out_bytes = share.count * share.m * n * dtypeBytes(out.dtype);
      checkVmem(core, share.lhs_bytes + share.rhs_bytes + out_bytes);
      const auto [load_a, vmem_a] = load(op, core, {op.inputs[0], share.lhs_bytes});
      const auto [load_b, vmem_b] = load(op, core, {op.inputs[1], share.rhs_bytes});
      const uint32_t vmem_out =
          addBuffer(op.name + ".c" + std::to_string(core) + ".out", program::VMEM, out, out_bytes, core);
      std::vector<uint32_t> compute;
      for (uint64_t item = 0; item < share.count; ++item) {
        for (uint32_t mxu = 0; mxu < cols.size(); ++mxu) {
          std::string part;
          if (share.count > 1) part.append("b").append(std::to_string(item)).append(".");
          part.append("mxu").append(std::to_string(mxu));
          const MxuTile tile{share.m, k, cols[mxu], a.dtype, out.dtype, op.transpose_a, op.transpose_b};
          compute.push_back(emitMatMul(op, part, core, mxu, tile, {vmem_a, vmem_b}, vmem_out, {load_a, load_b}));
        }
      }
      stores.push_back(store(op, core, vmem_out, out_bytes, compute));
    }
    finish(op, std::move(stores));
  }

  // A convolution runs on the MXUs as an implicit GEMM, one per group:
  //   forward      y[N*OH*OW, M/g]      = im2col(x)[N*OH*OW, C/g*KH*KW] x w^T
  //   input grad   cols[N*OH*OW, C/g*KH*KW] = dy[N*OH*OW, M/g] x w, then col2im adds the
  //                columns into dx (the same MACs as the forward pass; the col2im adds are
  //                not charged to the vector unit yet)
  //   weight grad  dw[M/g, C/g*KH*KW]   = dy^T[M/g, N*OH*OW]             x im2col(x)
  // The GEMM's rows are split over the cores; operands laid out along those rows
  // (the image batch, or dy's channels for the weight gradient) split with them.
  void lowerConv(const ir::Op& op) {
    const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
    const ir::Tensor& first = m_graph.tensor(op.inputs[0]);
    const ir::Tensor& second = m_graph.tensor(op.inputs[1]);
    const ir::Shape& w = op.type == OpType::kConv            ? second.shape
                         : op.type == OpType::kConvGradInput ? second.shape
                                                             : out.shape;
    const ir::Shape& x = op.type == OpType::kConvGradInput ? out.shape : first.shape;
    const ir::Shape& y = op.type == OpType::kConv            ? out.shape
                         : op.type == OpType::kConvGradInput ? first.shape
                                                             : second.shape;
    const auto g = static_cast<uint64_t>(op.conv.group);
    const auto batch = static_cast<uint64_t>(x[0]);
    const auto in_per_group = static_cast<uint64_t>(w[1]);
    const uint64_t out_per_group = static_cast<uint64_t>(w[0]) / g;
    const uint64_t window = static_cast<uint64_t>(w[2] * w[3]);
    const uint64_t out_pixels = static_cast<uint64_t>(y[2] * y[3]);
    uint64_t m = 0, k = 0, n = 0;
    bool split_first = true;  // the first input splits with the rows; the second loads whole
    bool split_second = false;
    switch (op.type) {
      case OpType::kConv: m = batch * out_pixels, k = in_per_group * window, n = out_per_group; break;
      case OpType::kConvGradInput: m = batch * out_pixels, k = out_per_group, n = in_per_group * window; break;
      default:  // weight gradient: rows are output channels, found in dy (the second input)
        m = out_per_group, k = batch * out_pixels, n = in_per_group * window;
        split_first = false;
        split_second = true;
        break;
    }
    const std::vector<uint64_t> rows = splitEvenly(m, static_cast<uint64_t>(m_hw.chip().tensor_cores()));
    const std::vector<uint64_t> cols = splitEvenly(n, static_cast<uint64_t>(m_hw.mxu().per_core()));
    std::vector<uint32_t> stores;
    for (uint32_t core = 0; core < rows.size(); ++core) {
      const auto share = [&](const ir::Tensor& t, bool split) {
        return split ? t.bytes() / m * rows[core] : t.bytes();
      };
      const uint64_t first_bytes = share(first, split_first);
      const uint64_t second_bytes = share(second, split_second);
      const uint64_t out_bytes = out.bytes() / m * rows[core];
      checkVmem(core, first_bytes + second_bytes + out_bytes);
      const auto [load_first, vmem_first] = load(op, core, {op.inputs[0], first_bytes});
      const auto [load_second, vmem_second] = load(op, core, {op.inputs[1], second_bytes});
      const uint32_t vmem_out =
          addBuffer(op.name + ".c" + std::to_string(core) + ".out", program::VMEM, out, out_bytes, core);
      std::vector<uint32_t> compute;
      for (uint64_t group = 0; group < g; ++group) {
        for (uint32_t mxu = 0; mxu < cols.size(); ++mxu) {
          std::string part;
          if (g > 1) part.append("g").append(std::to_string(group)).append(".");
          part.append("mxu").append(std::to_string(mxu));
          const MxuTile tile{rows[core], k, cols[mxu], out.dtype, out.dtype, false, false};
          compute.push_back(
              emitMatMul(op, part, core, mxu, tile, {vmem_first, vmem_second}, vmem_out, {load_first, load_second}));
        }
      }
      stores.push_back(store(op, core, vmem_out, out_bytes, compute));
    }
    finish(op, std::move(stores));
  }

  // A gather is data movement: each core DMAs its share of the gathered rows from the
  // table in HBM (after its indices, which give the addresses) into VMEM, and stores them;
  // the vector unit is not used.
  void lowerGather(const ir::Op& op) {
    const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
    const ir::Tensor& indices = m_graph.tensor(op.inputs[1]);
    const uint64_t extent = out.shape.empty() ? 1 : static_cast<uint64_t>(out.shape[0]);
    std::vector<uint32_t> stores;
    const std::vector<uint64_t> shares = splitEvenly(extent, static_cast<uint64_t>(m_hw.chip().tensor_cores()));
    for (uint32_t core = 0; core < shares.size(); ++core) {
      const uint64_t out_bytes = out.bytes() / extent * shares[core];
      checkVmem(core, out_bytes + indices.bytes());
      const uint32_t load_indices = load(op, core, {op.inputs[1], indices.bytes()}).first;
      const auto [load_rows, vmem_rows] = load(op, core, {op.inputs[0], out_bytes});
      m_chip.mutable_instructions(static_cast<int>(load_rows))->add_deps(load_indices);
      stores.push_back(store(op, core, vmem_rows, out_bytes, {load_rows}));
    }
    finish(op, std::move(stores));
  }

  void lowerVector(const ir::Op& op) {
    const ir::Tensor& out = m_graph.tensor(op.outputs[0]);
    const ir::Tensor& first = m_graph.tensor(op.inputs[0]);
    // The output dimension 0 is split across cores; `elements` is what the op processes.
    uint64_t extent = out.shape.empty() ? 1 : static_cast<uint64_t>(out.shape[0]);
    uint64_t elements = static_cast<uint64_t>(ir::elementCount(out.shape));
    program::VectorKind kind = program::ELEMENTWISE;
    switch (op.type) {
      case OpType::kSoftmaxCrossEntropy:  // to a scalar: one core does it all
        extent = 1;
        elements = static_cast<uint64_t>(ir::elementCount(first.shape));
        kind = program::REDUCTION;
        break;
      case OpType::kNllLoss:  // a gather and a reduction: one core does it all
        extent = 1;
        elements = static_cast<uint64_t>(ir::elementCount(first.shape));
        kind = program::REDUCTION;
        break;
      case OpType::kPool:
      case OpType::kPoolArgmax:  // each output element reads its window
        elements = static_cast<uint64_t>(ir::elementCount(out.shape) * ir::elementCount(op.pool.kernel));
        break;
      case OpType::kPoolGrad:  // each dy element is spread over its window
        elements = static_cast<uint64_t>(ir::elementCount(first.shape) * ir::elementCount(op.pool.kernel));
        break;
      case OpType::kReduce:  // split along dim 0 when it is kept
        elements = static_cast<uint64_t>(ir::elementCount(first.shape));
        kind = program::REDUCTION;
        if (!op.perm.empty() && op.perm[0] == 0) extent = 1;
        break;
      case OpType::kSoftmax:
      case OpType::kLogSoftmax:  // rows along the axis are independent: split dim 0 unless it is the axis
        if (op.axis == 0) extent = 1;
        break;
      case OpType::kReduceSumTo:  // kept dimensions are independent: split along out's first one
        elements = static_cast<uint64_t>(ir::elementCount(first.shape));
        kind = program::REDUCTION;
        break;
      default: break;
    }
    const std::vector<uint64_t> shares = splitEvenly(extent, static_cast<uint64_t>(m_hw.chip().tensor_cores()));
    std::vector<uint32_t> stores;
    for (uint32_t core = 0; core < shares.size(); ++core) {
      const uint64_t share = shares[core];
      std::vector<Operand> operands;
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        const ir::Tensor& tensor = m_graph.tensor(op.inputs[i]);
        // Operands laid out like the output (or the reduced input, or the labels of the
        // loss gradient) split with it; broadcast operands load whole.
        const bool split = extent > 1 && (tensor.shape == out.shape || op.type == OpType::kReduceSumTo ||
                                          op.type == OpType::kReduce || op.type == OpType::kSoftmaxCrossEntropyGrad);
        operands.push_back({op.inputs[i], split ? tensor.bytes() / extent * share : tensor.bytes()});
      }
      const uint64_t out_bytes = out.bytes() / extent * share;
      uint64_t vmem_bytes = out_bytes;
      for (const Operand& operand : operands) vmem_bytes += operand.bytes;
      checkVmem(core, vmem_bytes);
      std::vector<uint32_t> loads;
      std::vector<uint32_t> vmem_inputs;
      for (const Operand& operand : operands) {
        const auto [ins, vmem] = load(op, core, operand);
        loads.push_back(ins);
        vmem_inputs.push_back(vmem);
      }
      const uint32_t vmem_out =
          addBuffer(op.name + ".c" + std::to_string(core) + ".out", program::VMEM, out, out_bytes, core);
      program::Instruction& ins = newInstruction(op, "vpu", program::VPU, core, 0);
      program::VectorOp* vector = ins.mutable_vector();
      const uint64_t core_elements = elements / extent * share;
      vector->set_kind(kind);
      vector->set_elements(core_elements);
      vector->set_ops_per_element(vectorOpsPerElement(op.type));
      vector->set_dtype(toProgramDType(out.dtype));
      ins.set_flops(core_elements * vectorOpsPerElement(op.type));
      ins.set_bytes(vmem_bytes);
      for (uint32_t vmem : vmem_inputs) ins.add_reads(vmem);
      ins.add_writes(vmem_out);
      for (uint32_t dep : loads) ins.add_deps(dep);
      stores.push_back(store(op, core, vmem_out, out_bytes, {ins.id()}));
    }
    finish(op, std::move(stores));
  }

  const ir::Graph& m_graph;
  const config::HardwareConfig& m_hw;
  program::ChipProgram& m_chip;
  std::vector<uint32_t> m_hbm_buffer;  // per tensor
  std::vector<Hazards> m_hazards;      // per buffer (HBM ones used)
};

}  // namespace

program::Program lowerToProgram(const ir::Graph& graph, const HardwareParams& hw, const LowerOptions& options) {
  program::Program result;
  result.set_format(kProgramFormat);
  result.set_schema_version(kProgramSchemaVersion);
  result.set_model(options.model);
  result.set_mode(options.mode);
  result.set_target_hw(hw.name());
  result.set_batch(options.batch);
  program::ChipProgram* chip = result.add_chips();
  chip->set_chip(0);
  Lowerer(graph, hw.config(), *chip).run();
  return result;
}

}  // namespace tpusim
