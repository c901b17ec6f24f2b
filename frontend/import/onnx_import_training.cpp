// The ONNX training ops (domain ai.onnx.preview.training, version 1): Adam,
// Adagrad and Momentum, each over n tensors, as OptimizerUpdate ops. Inputs are
// R (the rate, a float scalar), T (the update count, an int64 scalar), then the
// n tensors, their n gradients and their states; outputs are the n new tensors,
// then the new states. The formulas are the ONNX operator docs'.
#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

bool isTrainingOp(const onnx::NodeProto& node) {
  return node.domain() == kOnnxTrainingDomain &&
         (node.op_type() == "Adam" || node.op_type() == "Adagrad" || node.op_type() == "Momentum");
}

void Importer::importTrainingOp(const onnx::NodeProto& node, const std::string& label) {
  const std::string& type = node.op_type();
  ir::Graph& g = m_result.graph;
  const int states = type == "Adam" ? 2 : 1;
  const int per_tensor = 2 + states;  // tensor, gradient, states
  if (node.input_size() < 2 + per_tensor || (node.input_size() - 2) % per_tensor != 0) {
    invalid(label + " has " + std::to_string(node.input_size()) + " inputs; expected R, T, then " +
            std::to_string(per_tensor) + " per tensor");
  }
  const int n = (node.input_size() - 2) / per_tensor;
  if (node.output_size() > n * (1 + states)) invalid(label + " has too many outputs");
  ir::OptimizerConfig c;
  c.learning_rate = 1.0;  // times R
  c.warmup_steps = 0;
  c.weight_decay = floatAttribute(node, "norm_coefficient", 0.0f);
  if (type == "Adam") {
    rejectAttributesExcept(node, {"alpha", "beta", "epsilon", "norm_coefficient", "norm_coefficient_post"});
    c.kind = ir::OptimizerKind::kAdam;
    c.beta1 = floatAttribute(node, "alpha", 0.9f);
    c.beta2 = floatAttribute(node, "beta", 0.999f);
    c.epsilon = floatAttribute(node, "epsilon", 1e-6f);
    c.post_decay = floatAttribute(node, "norm_coefficient_post", 0.0f);
    c.bias_correction_offset = 0;  // ONNX's T is the power, and 0 means no correction
  } else if (type == "Adagrad") {
    rejectAttributesExcept(node, {"decay_factor", "epsilon", "norm_coefficient"});
    c.kind = ir::OptimizerKind::kAdagrad;
    c.decay_factor = floatAttribute(node, "decay_factor", 0.0f);
    c.epsilon = floatAttribute(node, "epsilon", 1e-6f);
  } else {
    rejectAttributesExcept(node, {"alpha", "beta", "mode", "norm_coefficient"});
    for (const char* required : {"alpha", "beta", "mode", "norm_coefficient"}) {
      if (!attribute(node, required)) invalid(label + ": Momentum needs the attribute '" + required + "'");
    }
    c.kind = ir::OptimizerKind::kMomentum;
    c.beta1 = floatAttribute(node, "alpha", 0.0f);
    c.gradient_scale = floatAttribute(node, "beta", 1.0f);
    const std::string mode = attribute(node, "mode")->s();
    if (mode != "standard" && mode != "nesterov")
      invalid(label + ": mode '" + mode + "' is neither 'standard' nor 'nesterov'");
    c.nesterov = mode == "nesterov";
  }
  const int rate = value(node.input(0), label);
  const int step = value(node.input(1), label);
  const std::string name = opName(node);
  for (int i = 0; i < n; ++i) {
    const std::string base = name + "." + std::to_string(i);
    const int x = value(node.input(2 + i), label);
    const int grad = value(node.input(2 + n + i), label);
    std::vector<int> updated;
    for (int s = 0; s < states; ++s) {
      const int old = value(node.input(2 + (2 + s) * n + i), label);
      const ir::UpdateTarget target = s == 0 ? ir::UpdateTarget::kFirstState : ir::UpdateTarget::kSecondState;
      updated.push_back(g.optimizerUpdate(base + ".state" + std::to_string(s), c, target, x, grad, step, rate, {old}));
    }
    const int x_new = g.optimizerUpdate(base, c, ir::UpdateTarget::kParameter, x, grad, step, rate, updated);
    if (i < node.output_size()) defineOutput(node, i, x_new);
    for (int s = 0; s < states; ++s) {
      const int index = (1 + s) * n + i;
      if (index < node.output_size()) defineOutput(node, index, updated[static_cast<size_t>(s)]);
    }
  }
}

}  // namespace tpusim::onnx_detail
