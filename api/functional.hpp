// The functional mode (`tpusim run --functional`): the step's values, computed
// beside its timing. Timing and function are separate (docs/architecture.md,
// decision 2): the values are not carried through the simulated DMAs; the
// training graph is evaluated op by op with the reference executor, its
// matmuls and convolutions computed as the preset's MXUs compute them
// (dataflow and rows decide the summation order, --matmul-precision the bf16
// passes of f32; reference/cpu/mxu_gemm.hpp). The CPU reference run with the
// same MXU numerics gives the same bits.
#pragma once

#include <nlohmann/json.hpp>

#include "api/session.hpp"

namespace tpusim {

struct FunctionalRun {
  NamedValues inputs;              // generated: floating inputs uniform in [-1, 1), labels uniform over the classes
  NamedValues outputs;             // the graph's outputs, then a training step's updated weights and state
  nlohmann::ordered_json summary;  // report.json's "functional" section
};

// The MXU numerics of a preset and a request.
reference::MxuNumericsOptions mxuNumericsOf(const HardwareParams& hw, const RunRequest& request);

// A saved Program is refused by buildModelGraph. A model whose weights are shapes only
// runs with made-up weights (generatedWeights), said in the summary.
FunctionalRun runFunctional(const RunRequest& request, const HardwareParams& hw);

// Values for the weights a shape-only model left out (ImportedModel::weight_inits), by
// frontend/import/weight_init.hpp's rules, deterministic for `seed`: the same for the
// functional run and the reference backends. Empty for a model with all its weights.
NamedValues generatedWeights(const ModelGraph& built, uint64_t seed);
// report.json's "generated_weights": how many, the seed, the method and the rules used.
nlohmann::ordered_json generatedWeightsSummary(const ModelGraph& built, uint64_t seed);

// The generated inputs and labels of a graph (see FunctionalRun::inputs), for
// `seed`: the same for the functional run and the reference backends.
NamedValues generatedInputs(const ModelGraph& built, uint64_t seed);

// The feeds of a data-parallel step's `replicas` replicas: replica r's generated inputs come
// from seed + r (replica 0's are a one-replica run's), the weights (generatedWeights where the
// model has none) are shared, each completed by completeFeeds.
std::vector<std::map<std::string, ir::TensorValue>> replicaFeeds(const ModelGraph& built, uint64_t seed,
                                                                 int64_t replicas);

// What a step writes: the graph's outputs, then a training step's updated weights
// and optimizer state; tensor ids.
std::vector<int> stepOutputIds(const ir::Graph& graph);

// "<folder>/<name with anything but letters, digits, '.', '-' and '_' as '_'>.npy".
std::string valueFileName(const std::string& folder, const std::string& tensor);

// "functional/<name with anything but letters, digits, '.', '-' and '_' as '_'>.npy".
std::string functionalFileName(const std::string& tensor);

}  // namespace tpusim
