// Turns an imported model into the graph one step runs: the forward pass
// alone (inference), or forward, loss, backward (reverse-mode autodiff) and
// an SGD update of every weight (training).
#pragma once

#include "frontend/import/onnx_import.hpp"
#include "frontend/ir/graph.hpp"

namespace tpusim {

struct TrainingOptions {
  double learning_rate = 0.01;
};

// A model without its own loss gets softmax cross-entropy on its single
// [batch, classes] output, against a new int64 input "labels" [batch].
ir::Graph buildTrainingGraph(const ImportedModel& model, const TrainingOptions& options);

// The forward pass; a loss the model computes itself is dropped, and its
// logits become the output.
ir::Graph buildInferenceGraph(const ImportedModel& model);

}  // namespace tpusim
