// The embedding tables of a compiled model's graph, and the report's "ps"
// section (api/ps_run.hpp), on traces/dlrm.onnx.
#include <gtest/gtest.h>

#include "api/ps_run.hpp"
#include "api/session.hpp"
#include "sim/common/error.hpp"

namespace tpusim {
namespace {

TEST(PsRun, DlrmHasTwentySixEmbeddingTables) {
  RunRequest request;
  request.model_path = TPUSIM_SOURCE_DIR "/traces/dlrm.onnx";
  const ModelGraph built = buildModelGraph(request);
  const std::vector<ps::EmbeddingTable> tables = embeddingTablesOf(built.graph, 32);
  ASSERT_EQ(tables.size(), 26u);
  uint64_t rows = 0;
  for (const ps::EmbeddingTable& t : tables) {
    rows += t.rows;
    EXPECT_EQ(t.row_bytes, 16u * 4);  // 16 f32 columns
    EXPECT_EQ(t.lookups_per_example, 1u);
  }
  EXPECT_EQ(tables[2].name, "tables.2.weight");
  EXPECT_EQ(tables[2].rows, 100000u);
  EXPECT_EQ(rows, 840543u);
}

TEST(PsRun, AModelWithoutEmbeddingsIsRefused) {
  RunRequest request;
  request.model_path = TPUSIM_SOURCE_DIR "/traces/mlp.onnx";
  request.strategy = "ps";
  request.steps = 2;
  try {
    runRequest(request);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("no embedding tables"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tpusim
