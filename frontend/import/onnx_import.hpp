// ONNX import through Debian's libonnx (onnx_proto): a model file becomes an
// IR Graph with static shapes. A symbolic leading (batch) dimension takes the
// requested batch size.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <map>

#include "frontend/import/weight_init.hpp"
#include "frontend/ir/graph.hpp"
#include "frontend/ir/tensor_value.hpp"

namespace onnx {
class ModelProto;
}

namespace tpusim {

inline constexpr int64_t kOldestOnnxOpset = 13;
// The newest default-domain opset tpusim reads: opset 21 (ONNX 1.16), past the 17 of
// Debian's libonnx 1.12, as the importer implements later ops (Gelu, opset 20) itself.
inline constexpr int64_t kNewestOnnxOpset = 21;
inline constexpr int64_t kDefaultBatch = 32;

struct OnnxImportOptions {
  std::optional<int64_t> batch;  // for symbolic batch dimensions; kDefaultBatch if unset
  // Graph inputs whose values are known when compiling (a shape fed as an input, say):
  // they become constants, as XLA needs every shape static.
  std::map<std::string, ir::TensorValue> known_inputs = {};
  // Import for a training step: BatchNormalization normalizes with the batch's statistics
  // (as in PyTorch's train mode) instead of the running ones.
  bool training = false;
};

struct ImportedModel {
  ir::Graph graph;
  int64_t batch = 0;                                    // the batch size the graph was built for
  bool has_loss = false;                                // the model computes its own loss (SoftmaxCrossEntropyLoss)
  std::map<std::string, ir::TensorValue> initializers;  // weight values by tensor name
  bool shape_only_weights = false;                      // some initializers carry shapes but no values
  // Those initializers, by name: how values are made up for them where a run needs values
  // (the reference backends, --functional; frontend/import/weight_init.hpp).
  std::map<std::string, WeightInit> weight_inits;
  // --precision int8 (frontend/train/int8_quantization.hpp) of a weight made up so: its int8
  // values and scales are quantized from the made-up f32 values where a run needs them. By
  // the int8 tensor's name ("<weight>/int8").
  struct MadeUpQuantized {
    std::string weight;  // the f32 weight's name, which keys weight_inits
    ir::Shape shape;     // its shape
    std::string scales;  // the scales' tensor ("<weight>/scale")
    int64_t channels = 0, channel_stride = 1;
    ir::Shape scale_shape;
  };
  std::map<std::string, MadeUpQuantized> made_up_quantized;
};

// The ops the importer understands, for error messages and docs.
const char* supportedOnnxOps();
// Those of them that tpusim evaluates only while compiling, so their inputs must be
// compile-time constants (shapes, Constants, integer initializers): Shape and Size read
// static shapes, the others compute on constants.
const char* compileTimeOnnxOps();

// Reads and imports a file; every problem is an Error naming the file and the node.
ImportedModel importOnnxFile(const std::string& path, const OnnxImportOptions& options);
ImportedModel importOnnxModel(const onnx::ModelProto& model, const OnnxImportOptions& options);

}  // namespace tpusim
