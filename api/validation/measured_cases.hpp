// A file of measured op latencies (docs/fidelity.md, "The measurement file"):
// each case names one op, its sizes and dtype, and the time a real chip took.
// tpusim validate builds each case as a one-op model and simulates it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpusim {

struct MeasuredCase {
  size_t index = 0;             // position in the file's "cases", from 0
  std::string op;               // the family: matmul, add, layer_norm, max_pool, ... (measuredOps())
  std::vector<int64_t> shape;   // the input's shape; matmul: {M, K, N}
  std::string dtype;            // the input's dtype: float32, float16 or bfloat16
  std::string out_dtype;        // the output's, where it differs (norms cast to float32); else empty
  std::vector<int64_t> axis;    // norms: the normalized axes (default: the last)
  std::vector<int64_t> window;  // pooling: H, W of the window (default 2, 2)
  std::vector<int64_t> strides; // pooling (default: the window)
  std::string padding = "VALID";  // pooling: VALID or SAME
  double measured_us = 0;       // the chip's time for the op's kernels
};

struct MeasuredCases {
  std::string source;  // the file's "source" text, if any
  std::string chip;    // the file's "tpu" text, if any
  std::vector<MeasuredCase> cases;
};

// The op names a case may have, with what each builds (for errors and docs).
const std::vector<std::pair<std::string, std::string>>& measuredOps();

// Reads and checks a measurement file; a malformed one is a one-line invalid-input Error
// naming the case and the field.
MeasuredCases readMeasuredCases(const std::string& path);
MeasuredCases parseMeasuredCases(const nlohmann::json& file, const std::string& label);

// "matmul 1024x512x256" or "add [8, 128]": one line naming the case.
std::string caseLabel(const MeasuredCase& c);

}  // namespace tpusim
