// A sweep spec (configs/sweep.proto, docs/sweep.md) and the cases it names: the product of
// its models x presets x variations x strategies, the last varying fastest, numbered from
// 0 in that order. The order is the contract every spread of the cases keeps
// (api/case_runner.hpp): row i of sweep.csv is case i however many processes ran it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "api/session.hpp"
#include "configs/sweep.pb.h"

namespace tpusim {

// Parses protobuf text; `origin` (the file's path) names the source in errors, which are
// one line: "spec.textproto:3:1: Message type ... has no field named \"modle\"".
config::SweepSpec parseSweepSpec(std::string_view text, const std::string& origin);
config::SweepSpec readSweepSpec(const std::string& path);
// The same spec as JSON (the Python module's dict), field names as in the .proto.
config::SweepSpec sweepSpecFromJson(const std::string& json);

// "one chip", or the strategy's fields as run options: "topology=2x2x1 tp=2".
std::string strategyLabel(const config::SweepStrategy& strategy);

struct SweepCase {
  size_t index = 0;
  std::string model;              // as the spec names it
  std::string preset;             // as the spec names it
  std::vector<std::string> sets;  // the variation's "key=value", in order
  std::string strategy;           // strategyLabel
  RunRequest request;             // the run: the model's path resolved, the overrides parsed
  std::string label() const;      // "mlp.onnx tpuv4 mxu.rows=64 one chip"
};

// The cases of `spec`, relative model and preset-file paths taken from `base_dir` (the
// spec file's folder; empty: the working directory). Checked before any case runs, each a
// one-line Error: no model, a model file that does not exist, an unknown preset, a
// malformed or unknown `set` (with the closest name), a mode, batch or degree out of
// range, a value listed twice. What only a run can tell (a topology the preset's ICI
// cannot form, a step that does not fit HBM) is that case's error, in its row.
std::vector<SweepCase> sweepCases(const config::SweepSpec& spec, const std::string& base_dir);

}  // namespace tpusim
