#include "frontend/passes/fusion.hpp"

#include <algorithm>
#include <functional>

#include "frontend/passes/placement.hpp"
#include "frontend/train/graph_transforms.hpp"

namespace tpusim {

using ir::OpType;

bool isFusibleElementwise(OpType type) {
  return ir::isElementwise(type);
}

bool isMxuOp(OpType type) {
  return type == OpType::kMatMul || type == OpType::kConv || type == OpType::kConvGradInput ||
         type == OpType::kConvGradWeight;
}

std::vector<int> operandCastSources(const ir::Graph& graph) {
  std::vector<int> source(graph.tensors().size(), -1);
  // Readers that load their operands tile by tile and can convert them as they land: the
  // MXU's ops and the vector unit's (a gather's gradient scatters rows instead). A tensor
  // something updates in place stays a tensor of its own.
  std::vector<bool> converted_by_readers(graph.tensors().size(), true);
  for (const ir::Op& op : graph.ops()) {
    const ir::Unit unit = placementOf(op);
    const bool converts = (unit == ir::Unit::kMxu || unit == ir::Unit::kVpu) && op.type != OpType::kGatherGrad;
    for (int input : op.inputs) {
      if (!converts) converted_by_readers[static_cast<size_t>(input)] = false;
    }
    for (int output : op.outputs) {
      const int updated = graph.tensor(output).alias_of;
      if (updated >= 0 && op.type != OpType::kReshape) converted_by_readers[static_cast<size_t>(updated)] = false;
    }
  }
  for (int output : graph.outputs()) converted_by_readers[static_cast<size_t>(output)] = false;
  for (const ir::Op& op : graph.ops()) {
    if (op.type != OpType::kCast || op.fusion_group >= 0) continue;
    const ir::Tensor& out = graph.tensor(op.outputs[0]);
    const ir::Tensor& in = graph.tensor(op.inputs[0]);
    const bool floats = isFloatingDType(out.dtype) && isFloatingDType(in.dtype) && out.dtype != DType::kF64;
    if (floats && out.alias_of < 0 && converted_by_readers[static_cast<size_t>(out.id)]) {
      source[static_cast<size_t>(out.id)] = in.id;
    }
  }
  return source;
}

namespace {

// The most elements of an operand a reduction over the leading axis holds whole in VMEM while
// its input streams (1 MiB of f32).
constexpr int64_t kMaxHeldElements = int64_t{1} << 18;

// Per tensor: the ops that read it (each once), graph outputs aside.
std::vector<std::vector<size_t>> readersOf(const ir::Graph& graph) {
  std::vector<std::vector<size_t>> readers(graph.tensors().size());
  for (size_t i = 0; i < graph.ops().size(); ++i) {
    for (int input : graph.ops()[i].inputs) {
      std::vector<size_t>& of = readers[static_cast<size_t>(input)];
      if (of.empty() || of.back() != i) of.push_back(i);
    }
  }
  return readers;
}

bool isGraphOutput(const ir::Graph& graph, int tensor) {
  return std::find(graph.outputs().begin(), graph.outputs().end(), tensor) != graph.outputs().end();
}

// An elementwise op a reduction or another fused op can compute per tile of its output.
bool computableInline(const ir::Graph& graph, const ir::Op& op) {
  return isFusibleElementwise(op.type) && op.type != OpType::kCast && graph.tensor(op.outputs[0]).alias_of < 0 &&
         !isGraphOutput(graph, op.outputs[0]);
}

// The first axis a reduction of its input sums (0 where the leading one is among them: the
// input streams into an accumulator), or -1 for an op that is no such reduction.
int64_t firstReducedAxis(const ir::Graph& graph, const ir::Op& op) {
  if (op.type == OpType::kReduce && !op.perm.empty()) return *std::min_element(op.perm.begin(), op.perm.end());
  if (op.type != OpType::kReduceSumTo) return -1;
  // ReduceSumTo keeps the leading dimensions its output shares with the input.
  const ir::Shape& in = graph.tensor(op.inputs[0]).shape;
  const ir::Shape& out = graph.tensor(op.outputs[0]).shape;
  int64_t kept = 0;
  if (out.size() == in.size()) {
    while (static_cast<size_t>(kept) < out.size() && out[static_cast<size_t>(kept)] == in[static_cast<size_t>(kept)]) {
      ++kept;
    }
  }
  return kept == static_cast<int64_t>(in.size()) ? -1 : kept;
}

// Per tensor: the first reduced axis (firstReducedAxis) of the reduction that its one reader
// is, or that the one reader's output feeds through elementwise ops of its shape; -1 where
// there is none.
std::vector<int64_t> reductionAxes(const ir::Graph& graph, const std::vector<std::vector<size_t>>& readers) {
  std::vector<int64_t> axis(graph.tensors().size(), -1);
  const std::vector<ir::Op>& ops = graph.ops();
  for (size_t i = ops.size(); i-- > 0;) {
    for (int output : ops[i].outputs) {
      const std::vector<size_t>& by = readers[static_cast<size_t>(output)];
      if (by.size() != 1 || isGraphOutput(graph, output)) continue;
      const ir::Op& reader = ops[by.front()];
      const int64_t reduced = firstReducedAxis(graph, reader);
      if (reduced >= 0 && reader.inputs[0] == output) {
        axis[static_cast<size_t>(output)] = reduced;
      } else if (computableInline(graph, reader) &&
                 graph.tensor(reader.outputs[0]).shape == graph.tensor(output).shape) {
        axis[static_cast<size_t>(output)] = axis[static_cast<size_t>(reader.outputs[0])];
      }
    }
  }
  return axis;
}

// Whether `input` moves with the rows of `shape` whose first `axis` dimensions a reduction
// keeps: it has the shape, or it is one value per row (trailing 1s), or a scalar. Where the
// leading axis is reduced, the input streams into an accumulator and a small operand (batch
// norm's per-channel mean) is held whole.
bool movesWithRows(const ir::Shape& input, const ir::Shape& shape, int64_t axis) {
  if (input == shape || ir::elementCount(input) == 1) return true;
  if (axis == 0) return ir::elementCount(input) <= kMaxHeldElements;  // held whole beside the stream
  if (input.size() != shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int64_t>(d) < axis ? input[d] != shape[d] : input[d] != 1) return false;
  }
  return true;
}

}  // namespace

std::vector<int> operandPrologues(const ir::Graph& graph) {
  const std::vector<std::vector<size_t>> readers = readersOf(graph);
  const std::vector<int> casts = operandCastSources(graph);
  std::vector<int> source(graph.tensors().size(), -1);
  for (const ir::Op& op : graph.ops()) {
    const ir::Tensor& out = graph.tensor(op.outputs[0]);
    const std::vector<size_t>& by = readers[static_cast<size_t>(out.id)];
    if (!computableInline(graph, op) || op.fusion_group >= 0 || by.empty()) continue;
    const bool mxu_reads = std::all_of(by.begin(), by.end(), [&](size_t r) { return isMxuOp(graph.ops()[r].type); });
    if (!mxu_reads) continue;
    int streamed = -1;
    bool fits = true;
    for (int input : op.inputs) {
      const ir::Tensor& operand = graph.tensor(input);
      if (operand.shape == out.shape && operand.dtype == out.dtype && casts[static_cast<size_t>(input)] < 0 &&
          (streamed < 0 || streamed == input)) {
        streamed = input;
      } else if (ir::elementCount(operand.shape) > kMaxHeldElements || operand.shape == out.shape) {
        fits = false;
      }
    }
    if (streamed >= 0 && fits) source[static_cast<size_t>(out.id)] = streamed;
  }
  return source;
}

std::vector<bool> reductionPrologues(const ir::Graph& graph) {
  const std::vector<std::vector<size_t>> readers = readersOf(graph);
  const std::vector<int64_t> axis = reductionAxes(graph, readers);
  std::vector<bool> prologue(graph.tensors().size(), false);
  for (const ir::Op& op : graph.ops()) {
    const ir::Tensor& out = graph.tensor(op.outputs[0]);
    const int64_t reduced = axis[static_cast<size_t>(out.id)];
    if (reduced < 0 || !computableInline(graph, op)) continue;
    const bool with_rows = std::all_of(op.inputs.begin(), op.inputs.end(), [&](int input) {
      return movesWithRows(graph.tensor(input).shape, out.shape, reduced);
    });
    const bool streams = std::any_of(op.inputs.begin(), op.inputs.end(),
                                     [&](int input) { return graph.tensor(input).shape == out.shape; });
    if (with_rows && streams) prologue[static_cast<size_t>(out.id)] = true;
  }
  return prologue;
}

ir::Graph readBroadcastsInPlace(const ir::Graph& graph) {
  const std::vector<std::vector<size_t>> readers = readersOf(graph);
  ir::Graph::Rewrite rewrite(graph);
  bool any = false;
  for (size_t b = 0; b < graph.ops().size(); ++b) {
    const ir::Op& op = graph.ops()[b];
    if (op.type != OpType::kBroadcastTo) continue;
    const int out = op.outputs[0];
    const ir::Tensor& full = graph.tensor(out);
    if (full.alias_of >= 0 || isGraphOutput(graph, out) || readers[static_cast<size_t>(out)].empty()) continue;
    const bool in_place =
        std::all_of(readers[static_cast<size_t>(out)].begin(), readers[static_cast<size_t>(out)].end(), [&](size_t r) {
          const ir::Op& reader = graph.ops()[r];
          const bool broadcasts =
              ir::isElementwiseBinary(reader.type) || reader.type == OpType::kCompare || reader.type == OpType::kWhere;
          // Another operand of the full shape keeps the reader's output shape.
          const bool keeps_shape = std::any_of(reader.inputs.begin(), reader.inputs.end(), [&](int input) {
            return input != out && graph.tensor(input).shape == full.shape;
          });
          return broadcasts && keeps_shape && graph.tensor(reader.outputs[0]).shape == full.shape;
        });
    if (!in_place) continue;
    rewrite.remove[b] = true;
    rewrite.redirect[static_cast<size_t>(out)] = op.inputs[0];
    any = true;
  }
  return any ? graph.rewired(rewrite) : graph;
}

ir::Graph recomputeReductionProducers(const ir::Graph& graph) {
  const std::vector<std::vector<size_t>> readers = readersOf(graph);
  const std::vector<int64_t> axis = reductionAxes(graph, readers);
  const std::vector<ir::Op>& ops = graph.ops();
  ir::Graph result = graph;
  std::vector<std::vector<size_t>> before(ops.size());  // per op: the copies that run just before it
  for (size_t p = 0; p < ops.size(); ++p) {
    const ir::Op& op = ops[p];
    const int out = op.outputs[0];
    const ir::Shape& shape = graph.tensor(out).shape;
    const std::vector<size_t>& by = readers[static_cast<size_t>(out)];
    if (by.size() < 2 || !computableInline(graph, op) || isRecomputation(op.name)) continue;
    // One operand streams (a copy reads it instead of the op's output); the rest are small.
    const auto streamed = std::count_if(op.inputs.begin(), op.inputs.end(),
                                        [&](int input) { return graph.tensor(input).shape == shape; });
    const bool small_rest = std::all_of(op.inputs.begin(), op.inputs.end(), [&](int input) {
      return graph.tensor(input).shape == shape ||
             ir::elementCount(graph.tensor(input).shape) < ir::elementCount(shape);
    });
    if (streamed != 1 || !small_rest) continue;
    // Every reader computes per tile of this shape; one of them feeds a trailing reduction.
    bool feeds_reduction = false, all_inline = true;
    for (size_t r : by) {
      const ir::Op& reader = ops[r];
      const int made = reader.outputs[0];
      if (firstReducedAxis(graph, reader) >= 0) {
        feeds_reduction = feeds_reduction || reader.inputs[0] == out;
      } else if (isFusibleElementwise(reader.type) && reader.type != OpType::kCast && graph.tensor(made).alias_of < 0 &&
                 graph.tensor(made).shape == shape) {
        feeds_reduction = feeds_reduction || axis[static_cast<size_t>(made)] >= 0;
      } else {
        all_inline = false;
      }
    }
    if (!feeds_reduction || !all_inline) continue;
    for (size_t k = 1; k < by.size(); ++k) {
      std::string name = op.name + ".recomputed";
      if (k > 1) name += std::to_string(k);
      const int copy = result.cloneOp(result, op, op.inputs, name);
      for (int& input : result.annotate(by[k]).inputs) {
        if (input == out) input = copy;
      }
      before[by[k]].push_back(result.ops().size() - 1);
    }
  }
  if (result.ops().size() == ops.size()) return result;
  std::vector<size_t> order;
  for (size_t i = 0; i < ops.size(); ++i) {
    order.insert(order.end(), before[i].begin(), before[i].end());
    order.push_back(i);
  }
  return result.reordered(order);
}

ir::Graph fuseElementwise(const ir::Graph& input) {
  const ir::Graph graph = recomputeReductionProducers(readBroadcastsInPlace(input));
  const std::vector<ir::Op>& ops = graph.ops();
  const std::vector<int> operand_casts = operandCastSources(graph);
  const std::vector<bool> prologues = reductionPrologues(graph);
  const size_t count = ops.size();
  std::vector<int> producer(graph.tensors().size(), -1);
  for (size_t i = 0; i < count; ++i) {
    for (int output : ops[i].outputs) producer[static_cast<size_t>(output)] = static_cast<int>(i);
  }
  const auto root = [&](int tensor) {
    while (graph.tensor(tensor).alias_of >= 0) tensor = graph.tensor(tensor).alias_of;
    return tensor;
  };
  std::vector<int> group(count, -1);   // leader of each op's group
  std::vector<size_t> size(count, 0);  // per leader: ops in the group
  // Per leader: where its group runs, the position of its latest member (every member's
  // inputs exist by then, and nothing outside the group reads its outputs before).
  std::vector<size_t> anchor(count);
  for (size_t i = 0; i < count; ++i) anchor[i] = i;
  // Per leader: the position of its earliest member, which may come before the leader (a
  // producer group it absorbed).
  std::vector<size_t> first(count);
  for (size_t i = 0; i < count; ++i) first[i] = i;
  const auto inGroup = [&](size_t j, size_t leader) { return j == leader || group[j] == static_cast<int>(leader); };
  std::vector<int> updated_at;  // per tensor storage: op indices that write it in place
  std::vector<std::vector<size_t>> in_place(graph.tensors().size());
  for (size_t i = 0; i < count; ++i) {
    for (int output : ops[i].outputs) {
      if (graph.tensor(output).alias_of >= 0 && ops[i].type != OpType::kReshape) {
        in_place[static_cast<size_t>(root(output))].push_back(i);
      }
    }
  }
  const auto updatedBetween = [&](int tensor, size_t after, size_t before) {
    for (size_t at : in_place[static_cast<size_t>(root(tensor))]) {
      if (at > after && at < before) return true;
    }
    return false;
  };
  // Whether op i may join the group led by `leader` (which may still be alone).
  const auto mayJoin = [&](size_t leader, size_t i) {
    const ir::Op& op = ops[i];
    const ir::Op& lead = ops[leader];
    if (!isMxuOp(lead.type) && !isFusibleElementwise(lead.type)) return false;
    // A recomputation moved next to a forward leader would run in the forward pass.
    if (isRecomputation(op.name) && !isRecomputation(lead.name)) return false;
    if (graph.tensor(lead.outputs[0]).alias_of >= 0) return false;
    if (graph.tensor(lead.outputs[0]).shape != graph.tensor(op.outputs[0]).shape) return false;
    if (std::max<size_t>(size[leader], 1) >= kMaxFusedOps) return false;
    // The group moves to i's position, so what its members read must not be updated in
    // place before then (op i itself reads there already).
    for (size_t j = first[leader]; j < i; ++j) {
      if (!inGroup(j, leader)) continue;
      for (int input : ops[j].inputs) {
        if (updatedBetween(input, j, i)) return false;
      }
    }
    // The group moves to i's position: no op in between outside it may read its outputs.
    for (size_t j = anchor[leader] + 1; j < i; ++j) {
      if (inGroup(j, leader)) continue;
      for (int input : ops[j].inputs) {
        const int made = producer[static_cast<size_t>(input)];
        if (made >= 0 && inGroup(static_cast<size_t>(made), leader)) return false;
      }
    }
    return true;
  };
  const auto join = [&](size_t leader, size_t i) {
    if (size[leader] == 0) {
      group[leader] = static_cast<int>(leader);
      size[leader] = 1;
    }
    group[i] = static_cast<int>(leader);
    ++size[leader];
    anchor[leader] = i;
  };
  // An op that joined a group takes along the elementwise groups (or lone ops) that make its
  // other inputs and whose outputs only it reads (a gradient's products feeding a sum): they
  // move to the group's anchor, where their inputs exist, and their outputs never go to HBM.
  const std::vector<std::vector<size_t>> readers = readersOf(graph);
  const auto absorbProducerGroups = [&](size_t leader, size_t i, std::vector<int>& last_reader) {
    for (int input : ops[i].inputs) {
      const int from = producer[static_cast<size_t>(input)];
      if (from < 0) continue;
      const size_t other = group[static_cast<size_t>(from)] >= 0 ? static_cast<size_t>(group[static_cast<size_t>(from)])
                                                                 : static_cast<size_t>(from);
      if (other == leader || graph.tensor(input).shape != graph.tensor(ops[i].outputs[0]).shape) continue;
      std::vector<size_t> taken;
      for (size_t j = first[other]; j < i; ++j) {
        if (j == other || group[j] == static_cast<int>(other)) taken.push_back(j);
      }
      if (size[leader] + taken.size() > kMaxFusedOps) continue;
      const bool movable = std::all_of(taken.begin(), taken.end(), [&](size_t j) {
        const ir::Op& member = ops[j];
        const int made = member.outputs[0];
        const bool read_here =
            std::all_of(readers[static_cast<size_t>(made)].begin(), readers[static_cast<size_t>(made)].end(),
                        [&](size_t r) { return r == i || std::find(taken.begin(), taken.end(), r) != taken.end(); });
        return isFusibleElementwise(member.type) && graph.tensor(made).alias_of < 0 && read_here &&
               operand_casts[static_cast<size_t>(made)] < 0 && !prologues[static_cast<size_t>(made)] &&
               !isGraphOutput(graph, made) && isRecomputation(member.name) == isRecomputation(ops[leader].name) &&
               std::none_of(member.inputs.begin(), member.inputs.end(),
                            [&](int read) { return updatedBetween(read, j, i); });
      });
      if (!movable) continue;
      for (size_t j : taken) {
        group[j] = static_cast<int>(leader);
        for (int read : ops[j].inputs) last_reader[static_cast<size_t>(read)] = static_cast<int>(leader);
      }
      size[leader] += taken.size();
      size[other] = 0;
      first[leader] = std::min(first[leader], first[other]);
    }
  };
  // Per tensor: the group leader of the latest elementwise op that read it.
  std::vector<int> last_reader(graph.tensors().size(), -1);
  for (size_t i = 0; i < count; ++i) {
    const ir::Op& op = ops[i];
    if (!isFusibleElementwise(op.type)) continue;
    const ir::Tensor& out = graph.tensor(op.outputs[0]);
    if (out.alias_of >= 0 || operand_casts[static_cast<size_t>(out.id)] >= 0 ||
        prologues[static_cast<size_t>(out.id)]) {
      continue;
    }
    // Behind the producer of an input (as its epilogue or the next op of its chain).
    for (int input : op.inputs) {
      const int from = producer[static_cast<size_t>(input)];
      if (from < 0 || graph.tensor(input).shape != out.shape || operand_casts[static_cast<size_t>(input)] >= 0 ||
          prologues[static_cast<size_t>(input)]) {
        continue;
      }
      const ir::Op& source = ops[static_cast<size_t>(from)];
      if (group[static_cast<size_t>(from)] < 0 && !isMxuOp(source.type) && !isFusibleElementwise(source.type)) continue;
      const size_t leader = group[static_cast<size_t>(from)] >= 0
                                ? static_cast<size_t>(group[static_cast<size_t>(from)])
                                : static_cast<size_t>(from);
      if (mayJoin(leader, i)) {
        join(leader, i);
        break;
      }
    }
    // Else beside an op that reads the same tensor (a sibling: both read it in one pass).
    for (size_t k = 0; group[i] < 0 && k < op.inputs.size(); ++k) {
      const int input = op.inputs[k];
      const int leader = last_reader[static_cast<size_t>(input)];
      if (leader >= 0 && graph.tensor(input).shape == out.shape && mayJoin(static_cast<size_t>(leader), i)) {
        join(static_cast<size_t>(leader), i);
      }
    }
    const int leader = group[i] >= 0 ? group[i] : static_cast<int>(i);
    if (group[i] >= 0) absorbProducerGroups(static_cast<size_t>(leader), i, last_reader);
    for (int input : op.inputs) last_reader[static_cast<size_t>(input)] = leader;
  }
  // Multi-output fusion: a reduction over the leading axis (batch norm's statistics and its
  // gradient's sums) whose input, or whose prologue chain's input, a group computes runs in
  // that group: each tile the group computes is added into the reduction's accumulator. It
  // and its chain move to the group's anchor, so what else they read must exist by then and
  // stay unchanged until they ran (nothing the group itself makes, as it is complete only
  // after the last tile).
  for (size_t r = 0; r < count; ++r) {
    const ir::Op& reduction = ops[r];
    if (group[r] >= 0 || firstReducedAxis(graph, reduction) != 0 || graph.tensor(reduction.outputs[0]).alias_of >= 0) {
      continue;
    }
    std::vector<size_t> chain;  // the prologue ops, inputs first
    std::vector<int> leaves;
    const std::function<void(int)> collect = [&](int tensor) {
      const int from = producer[static_cast<size_t>(tensor)];
      if (from >= 0 && prologues[static_cast<size_t>(tensor)]) {
        if (std::find(chain.begin(), chain.end(), static_cast<size_t>(from)) != chain.end()) return;
        for (int input : ops[static_cast<size_t>(from)].inputs) collect(input);
        chain.push_back(static_cast<size_t>(from));
      } else if (std::find(leaves.begin(), leaves.end(), tensor) == leaves.end()) {
        leaves.push_back(tensor);
      }
    };
    collect(reduction.inputs[0]);
    const ir::Shape& shape = graph.tensor(reduction.inputs[0]).shape;
    // The group that makes a streamed leaf (an MXU op or elementwise op alone leads a new one).
    int leader = -1;
    for (int leaf : leaves) {
      const int from = producer[static_cast<size_t>(leaf)];
      if (from < 0 || graph.tensor(leaf).shape != shape || operand_casts[static_cast<size_t>(leaf)] >= 0) continue;
      const auto made = static_cast<size_t>(from);
      const size_t lead = group[made] >= 0 ? static_cast<size_t>(group[made]) : made;
      if (!isMxuOp(ops[lead].type) && !isFusibleElementwise(ops[lead].type)) continue;
      if (graph.tensor(ops[lead].outputs[0]).shape != shape || graph.tensor(ops[lead].outputs[0]).alias_of >= 0)
        continue;
      if (isRecomputation(ops[lead].name) != isRecomputation(reduction.name)) continue;
      leader = std::max(leader, static_cast<int>(lead));
    }
    if (leader < 0) continue;
    const auto lead = static_cast<size_t>(leader);
    if (std::max<size_t>(size[lead], 1) + chain.size() + 1 > kMaxFusedOps) continue;
    const size_t at = anchor[lead];
    // Run at the anchor, the reduction must still come before what reads its result.
    const std::vector<size_t>& result_readers = readers[static_cast<size_t>(reduction.outputs[0])];
    if (std::any_of(result_readers.begin(), result_readers.end(), [&](size_t reader) { return reader <= at; })) {
      continue;
    }
    const bool ready = std::all_of(leaves.begin(), leaves.end(), [&](int leaf) {
      const int from = producer[static_cast<size_t>(leaf)];
      const bool from_group = from >= 0 && inGroup(static_cast<size_t>(from), lead);
      if (from_group) return graph.tensor(leaf).shape == shape;  // a tile of the group's own
      return (from < 0 || static_cast<size_t>(from) < at) && !updatedBetween(leaf, std::min(at, r), std::max(at, r));
    });
    if (!ready) continue;
    if (size[lead] == 0) {
      group[lead] = static_cast<int>(lead);
      size[lead] = 1;
    }
    for (size_t c : chain) {
      group[c] = static_cast<int>(lead);
      first[lead] = std::min(first[lead], c);
    }
    group[r] = static_cast<int>(lead);
    size[lead] += chain.size() + 1;
  }
  // Each group's ops run together at its anchor, the leader first.
  std::vector<size_t> order;
  std::vector<std::vector<size_t>> members(count);
  std::vector<int> anchored(count, -1);  // per position: the leader of the group that runs there
  for (size_t i = 0; i < count; ++i) {
    if (group[i] >= 0 && static_cast<size_t>(group[i]) != i) members[static_cast<size_t>(group[i])].push_back(i);
    if (group[i] == static_cast<int>(i)) anchored[anchor[i]] = static_cast<int>(i);
  }
  for (size_t i = 0; i < count; ++i) {
    if (group[i] < 0) order.push_back(i);
    if (anchored[i] < 0) continue;
    const auto leader = static_cast<size_t>(anchored[i]);
    order.push_back(leader);
    order.insert(order.end(), members[leader].begin(), members[leader].end());
  }
  ir::Graph result = graph.reordered(order);
  std::vector<size_t> position(count);
  for (size_t at = 0; at < order.size(); ++at) position[order[at]] = at;
  for (size_t at = 0; at < order.size(); ++at) {
    const int leader = group[order[at]];
    result.annotate(at).fusion_group = leader >= 0 ? static_cast<int>(position[static_cast<size_t>(leader)]) : -1;
  }
  return result;
}

std::vector<bool> onChipOnly(const ir::Graph& graph) {
  const std::vector<ir::Op>& ops = graph.ops();
  std::vector<int> group_of(graph.tensors().size(), -2);  // -2: not written by a fused op
  for (const ir::Op& op : ops) {
    if (op.fusion_group < 0) continue;
    for (int output : op.outputs) group_of[static_cast<size_t>(output)] = op.fusion_group;
  }
  std::vector<bool> on_chip(graph.tensors().size(), false);
  for (const ir::Tensor& tensor : graph.tensors()) {
    const size_t id = static_cast<size_t>(tensor.id);
    on_chip[id] = group_of[id] >= 0 && tensor.role != ir::TensorRole::kLoss;
  }
  for (int output : graph.outputs()) on_chip[static_cast<size_t>(output)] = false;
  for (const ir::Op& op : ops) {
    for (int input : op.inputs) {
      const size_t id = static_cast<size_t>(input);
      if (on_chip[id] && op.fusion_group != group_of[id]) on_chip[id] = false;
      // A view of the tensor is read elsewhere.
      if (op.type == ir::OpType::kReshape) on_chip[id] = false;
    }
  }
  return on_chip;
}

}  // namespace tpusim
