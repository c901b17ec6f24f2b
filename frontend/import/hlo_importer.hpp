// The HLO importer's internals, shared by hlo_import.cpp (computations,
// parameters, constants, tuples, shape checks), hlo_import_ops.cpp (one
// function per group of opcodes) and hlo_import_dot_conv.cpp. Not part of the
// frontend's interface.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/import/hlo_import.hpp"
#include "frontend/import/hlo_module.hpp"
#include "frontend/ir/graph.hpp"
#include "sim/common/error.hpp"

namespace tpusim::hlo_detail {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloModule;
using hlo::HloShape;

// What an instruction produced: one IR tensor, or a tuple of values.
struct Value {
  int tensor = -1;
  std::vector<Value> elements;
  bool is_tuple = false;
};

inline bool isIdentityPermutation(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// An opcode of HLO, imported or not (for instructions the ROOT does not need).
bool isKnownHloOpcode(const std::string& opcode);

class Importer {
 public:
  explicit Importer(const HloModule& module) : m_module(module) {}
  ImportedModel run();

 private:
  // hlo_import.cpp
  Value importComputation(const HloComputation& computation, const std::vector<Value>* args, const std::string& prefix);
  std::vector<const HloInstruction*> order(const HloComputation& computation) const;
  Value importInstruction(const HloInstruction& ins, const std::vector<Value>& operands, const std::vector<Value>* args,
                          const std::string& prefix);
  Value addParameter(const std::string& name, const HloShape& shape, const HloInstruction& ins);
  Value importConstant(const HloInstruction& ins, const std::string& name);
  int importIota(const HloInstruction& ins, const std::string& name);
  int importConvert(const HloInstruction& ins, int x, const std::string& name);
  void checkShape(const HloInstruction& ins, const Value& value, const HloShape& shape) const;
  [[noreturn]] void fail(const HloInstruction& ins, ErrorKind kind, const std::string& message) const;
  std::string where(const HloInstruction& ins) const;
  DType dtypeOf(const HloInstruction& ins, const HloShape& shape) const;
  const HloComputation& called(const HloInstruction& ins, const std::string& key) const;

  // hlo_import_ops.cpp
  Value importOp(const HloInstruction& ins, const std::vector<int>& x, const std::string& name);
  int elementwise(const HloInstruction& ins, const std::vector<int>& x, const std::string& name);
  int broadcast(const HloInstruction& ins, int x, const std::string& name);
  int slice(const HloInstruction& ins, int x, const std::string& name);
  // x with the given dimensions in reverse order: a Slice with step -1 there.
  int reverse(int x, const std::vector<int64_t>& dims, const std::string& name);
  int reduce(const HloInstruction& ins, const std::vector<int>& x, const std::string& name);
  int dot(const HloInstruction& ins, int lhs, int rhs, const std::string& name);
  int convolution(const HloInstruction& ins, int lhs, int rhs, const std::string& name);
  // hlo_import_pad.cpp: x with factor - 1 copies of the scalar `fill` between neighbours
  // along dimension dim (a convolution's lhs_dilate, a pad's interior padding).
  int dilate(int x, size_t dim, int64_t factor, int fill, const std::string& name);
  // pad(x, value), padding=low_high_interior per dimension (negative low or high cut).
  int pad(const HloInstruction& ins, int x, int value, const std::string& name);
  // A scalar constant 0 of x's dtype, with its value for the reference executor.
  int zeroOf(int x, const std::string& name);
  Value allReduce(const HloInstruction& ins, const std::vector<int>& x, const std::string& name);
  // The reduction a to_apply computation performs: add, maximum or minimum of its two parameters.
  ir::Reduction reductionOf(const HloInstruction& ins, const std::string& key) const;
  // x permuted by perm, or x itself when perm is the identity.
  int permute(int x, const std::vector<int64_t>& perm, const std::string& name);
  int reshapeTo(int x, const ir::Shape& shape, const std::string& name);
  const ir::Shape& shapeOf(int tensor) const { return m_graph.tensor(tensor).shape; }
  std::vector<int64_t> intList(const HloInstruction& ins, const std::string& key, bool required = true) const;

  const HloModule& m_module;
  ImportedModel m_result;
  ir::Graph& m_graph = m_result.graph;
  std::set<std::string> m_active;                 // computations being imported (a call cycle is an error)
  std::map<int, ir::TensorValue> m_constants;     // tensor -> value, for constants with values
  std::vector<const HloShape*> m_operand_shapes;  // the declared shapes of the current instruction's operands
};

}  // namespace tpusim::hlo_detail
