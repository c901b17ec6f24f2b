// Constant folding and algebraic simplification, the first pass: it removes the
// waste that exporters and autodiff leave in a training graph, rule by rule, until
// no rule applies.
//
//   transpose into matmul  Transpose(x) swapping the last two dims, read only by MatMuls,
//                          becomes their transpose_a / transpose_b flag (PyTorch's
//                          MatMul(x, Transpose(W)) for nn.Linear); a Transpose of a MatMul's
//                          result read by nothing else becomes the swapped product,
//                          (op(a) op(b))^T = op(b)^T op(a)^T (autodiff's weight gradients)
//   identities             Scale by 1, Reshape / BroadcastTo to the same shape, Transpose by
//                          the identity, Cast to the same dtype, a Slice of everything and a
//                          Concat of one input are removed; their readers read the input
//   chains                 Reshape(Reshape(x)) and Transpose(Transpose(x)) become one op (or
//                          none); Scale(Scale(x)) multiplies the factors
//
// Constant subexpressions are not evaluated: the Graph carries no values (a constant's
// value lives in ImportedModel::initializers, outside it), and the importer already
// evaluates every op whose inputs are known (frontend/import/onnx_fold.cpp). On
// constants the value-free rules above apply as on any tensor.
//
// Every rewrite keeps the op names of what stays (reports group by them). No rule moves a
// read past an in-place update of the tensor read, drops a graph output or a loss (an
// identity producing one is kept, unless its input is computed and can take the output's
// name and role), or removes an op whose output something writes over. A fold into
// transpose_a is skipped where it would keep the lowering from stacking a batched lhs over
// an unbatched rhs (lower_gemm.cpp). Scale(Scale(x)) multiplies in double: float results
// may change in the last bit.
#pragma once

#include "frontend/ir/graph.hpp"

namespace tpusim {

ir::Graph constantFold(const ir::Graph& graph);

}  // namespace tpusim
