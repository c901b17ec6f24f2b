// Turns an imported model into the graph one step runs: the forward pass
// alone (inference), or forward, loss, backward (reverse-mode autodiff) and
// an optimizer update of every weight (training). docs/frontend.md gives the
// losses and the optimizers' formulas.
#pragma once

#include <cstdint>
#include <string>

#include "frontend/import/onnx_import.hpp"
#include "frontend/ir/graph.hpp"

namespace tpusim {

enum class LossKind {
  kAuto,                 // the model's own loss, else softmax cross-entropy on a single [batch, classes] output,
                         // else mean squared error on the single output
  kSoftmaxCrossEntropy,  // on the single [batch, classes] output, against int64 "labels" [batch]
  kMse,                  // mean squared error of the single output against a float "targets" of its shape
};

enum class Remat {
  kNone,  // backward ops read the forward activations
  kAll,   // every forward activation a backward op reads is recomputed from the step's inputs and weights
};

struct TrainingOptions {
  double learning_rate = 0.01;
  LossKind loss = LossKind::kAuto;
  // kind, warmup and hyperparameters; its learning_rate is replaced by the one above.
  ir::OptimizerConfig optimizer = {};
  // k > 1: the model is imported at the micro-batch size; the step's inputs are k times
  // its batch, and forward + backward run once per slice, gradients summed, one update.
  int64_t micro_batches = 1;
  Remat rematerialize = Remat::kNone;
  // Dynamic loss scaling (frontend/train/loss_scaling.hpp): mixed_float16 turns it on.
  bool loss_scaling = false;
};

// Option values by name, for the CLI and the Python module; unknown names are
// kInvalidConfig errors listing the known ones.
LossKind parseLoss(const std::string& name);
ir::OptimizerKind parseOptimizer(const std::string& name);
Remat parseRemat(const std::string& name);
// Throws kInvalidConfig for a rate <= 0, a negative warmup, a beta outside [0, 1), ...
void validateTrainingOptions(const TrainingOptions& options);

ir::Graph buildTrainingGraph(const ImportedModel& model, const TrainingOptions& options);

// The loss training adds (or the model's own) for `requested`, and a line that says which and,
// for kAuto, why: "mean squared error (--loss auto: output 'y' is [2, 3, 8, 8], not [batch,
// classes])". kSoftmaxCrossEntropy on another output is a kInvalidConfig error naming the flag.
struct LossChoice {
  LossKind kind = LossKind::kAuto;  // kAuto: the model's own
  std::string description;
};
LossChoice chooseLoss(const ImportedModel& model, LossKind requested);

// The forward pass; a loss the model computes itself is dropped, and its
// logits become the output.
ir::Graph buildInferenceGraph(const ImportedModel& model);

}  // namespace tpusim
