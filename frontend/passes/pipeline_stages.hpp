// Pipeline parallelism's cut of a training graph into P contiguous stages
// (docs/strategies.md, "Pipeline parallelism").
//
// A pipeline layer is a layer of frontend/passes/layers (a model module, by its node
// names) holding a forward op that reads a weight: a Linear, a convolution, a layer
// norm, an embedding. A forward op of a layer without weights (an activation, a
// reshape, the loss) joins the weighted layer before it (the first one, before any).
// A backward op joins the layer of the forward op it differentiates (by its name); a
// gradient sum, or an op whose name names no forward layer, goes to the earliest stage
// among its operands' producers (stage 0 if none); an optimizer update joins the layer
// that first reads its weight. A precision policy's cast of an f32 weight, constant or
// graph input (frontend/train/precision_policy) is no layer: an op reading a weight's cast
// reads the weight, the cast, its gradient and the weight's update join the layer of the
// cast's first reader, and every stage that reads a cast value casts for itself (so only
// the compute-dtype activations cross boundaries). Loss scaling's check over every
// gradient (frontend/train/loss_scaling) is split: each stage sums its own gradients, adds
// the other stages' sums (received outside the boundaries: PipelineStages::loss_scaling)
// and gates its own gradients with its flag; 0 and 1/S are made by each stage. The
// stages take equal numbers of consecutive layers; P must divide the layer count.
//
// Each stage becomes its own graph: the tensors it reads from another stage are its
// inputs (received), the tensors another stage reads from it are its outputs (sent).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/ir/graph.hpp"

namespace tpusim {

// One tensor that crosses the boundary between stage `from` and its neighbour `to`
// (|from - to| = 1): forward activations go up, activation gradients go down. A tensor
// that skips stages is relayed, one entry per boundary it crosses.
struct StageTransfer {
  std::string tensor;
  uint64_t bytes = 0;  // per chip, before any tensor-parallel split
  uint32_t from = 0;
  uint32_t to = 0;
  bool gradient = false;  // from a backward op
};

struct PipelineStageGraph {
  std::vector<std::string> layers;  // in order
  ir::Graph graph;
  // What one micro-batch keeps from the stage's forward to its backward: the tensors its
  // backward ops read that its forward ops made, or that came in per micro-batch (the
  // model's inputs and labels, received activations). Whole tensors, views counted once;
  // a weight's cast is the same for every micro-batch and is not counted.
  uint64_t activation_bytes = 0;
};

struct PipelineStages {
  std::vector<PipelineStageGraph> stages;
  std::vector<StageTransfer> transfers;  // by boundary, forward before backward
  // Loss scaling (mixed_float16): each stage checks its own gradients, adding the other
  // stages' partial sums (an all-reduce of one f32 across the stages, not in `transfers`).
  bool loss_scaling = false;
};

// The pipeline layers of `graph`, in order (see above).
std::vector<std::string> pipelineLayers(const ir::Graph& graph);
// Per op, the index of its pipeline layer in pipelineLayers, or -1 for an op placed by its
// operands (a gradient sum, an op whose name names no forward layer).
std::vector<int> pipelineLayerOfOps(const ir::Graph& graph);

// A count that does not divide the layers (or a graph without layers) is a one-line
// error (kInvalidConfig) naming both; `model` names the graph in it.
PipelineStages splitPipelineStages(const ir::Graph& graph, int64_t stages, const std::string& model);

}  // namespace tpusim
