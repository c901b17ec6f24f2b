// The 26 embedding tables of traces/dlrm.onnx (tables.0.weight .. tables.25.weight,
// 16 f32 columns, one id per example each), for tests that need no model import.
#pragma once

#include <string>
#include <vector>

#include "sim/ps/sharding.hpp"

namespace tpusim::ps::test {

inline std::vector<EmbeddingTable> dlrmTables() {
  const uint64_t rows[] = {1460, 583,   100000, 100000, 305,  24,   12517, 633,    3,  93145, 5683,   100000, 3194,
                           27,   14992, 100000, 10,     5652, 2173, 4,     100000, 18, 15,    100000, 105,    100000};
  std::vector<EmbeddingTable> tables;
  for (size_t i = 0; i < std::size(rows); ++i) {
    tables.push_back({"tables." + std::to_string(i) + ".weight", rows[i], 16 * 4, 1});
  }
  return tables;
}

}  // namespace tpusim::ps::test
