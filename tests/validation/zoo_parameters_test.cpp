// The model zoo (traces/*.onnx, from scripts/export_models.py): each model's parameter
// count, summed over the float weights of the imported graph (BatchNormalization's running
// statistics are constants, not parameters), against the figure its authors publish and
// against the exact count of the PyTorch definition it was exported from.
#include <gtest/gtest.h>

#include "frontend/import/onnx_import.hpp"

namespace tpusim {
namespace {

int64_t parameters(const std::string& trace) {
  const ImportedModel model = importOnnxFile(TPUSIM_SOURCE_DIR "/traces/" + trace, OnnxImportOptions{1});
  int64_t count = 0;
  for (const ir::Tensor& tensor : model.graph.tensors()) {
    if (tensor.role == ir::TensorRole::kWeight && ir::TensorValue::isFloating(tensor.dtype)) {
      count += ir::elementCount(tensor.shape);
    }
  }
  return count;
}

// Published figures, within 1%.
struct Published {
  const char* trace;
  double parameters;  // as published
  int64_t exact;      // sum(p.numel() for p in model.parameters()) of the exported definition
};

TEST(Zoo, ParameterCountsMatchThePublishedFigures) {
  const Published zoo[] = {
      {"resnet50.onnx", 25.6e6, 25557032},    // He et al. 2016; torchvision's model card: 25,557,032
      {"vit_b16.onnx", 86e6, 86567656},       // Dosovitskiy et al. 2021, Table 1; torchvision: 86,567,656
      {"bert_base.onnx", 110e6, 109483778},   // Devlin et al. 2019; with the pooler and a 2-class head
      {"gpt2_small.onnx", 124e6, 124439808},  // Radford et al. 2019 / OpenAI's 124M release, tied LM head
      {"mlp.onnx", 669706, 669706},           // 784*512+512 + 512*512+512 + 512*10+10
  };
  for (const Published& model : zoo) {
    const int64_t count = parameters(model.trace);
    EXPECT_EQ(count, model.exact) << model.trace;
    EXPECT_NEAR(static_cast<double>(count), model.parameters, 0.01 * model.parameters) << model.trace;
  }
}

TEST(Zoo, DlrmParametersFollowItsConfiguration) {
  // Criteo Kaggle's 26 table sizes capped at 100,000 rows, dimension 16.
  const int64_t rows[] = {1460, 583,   100000, 100000, 305,  24,   12517, 633,    3,  93145, 5683,   100000, 3194,
                          27,   14992, 100000, 10,     5652, 2173, 4,     100000, 18, 15,    100000, 105,    100000};
  int64_t tables = 0;
  for (int64_t r : rows) tables += r * 16;  // 13,448,688
  // Bottom MLP 13-512-256-64-16 and top MLP 367-512-256-2 (367 = 16 + 27 * 26 / 2), weights and biases.
  const int64_t bottom = (13 * 512 + 512) + (512 * 256 + 256) + (256 * 64 + 64) + (64 * 16 + 16);  // 155,984
  const int64_t top = (367 * 512 + 512) + (512 * 256 + 256) + (256 * 2 + 2);                       // 320,258
  EXPECT_EQ(parameters("dlrm.onnx"), tables + bottom + top);
  EXPECT_EQ(tables + bottom + top, 13924930);
}

}  // namespace
}  // namespace tpusim
