// The printed forms of compare.json (report/compare.hpp): the text tables of
// `tpusim compare` and its two CSV files. Empty CSV cells and "-" in the text
// stand for values one side does not have.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tpusim {

std::string comparisonText(const nlohmann::ordered_json& comparison);

// compare.csv: op,type,status,sim_cycles,sim_time_s,ref_time_s,ratio,flops,hbm_bytes,ref_kernel
// (ref_kernel: what ran the op, where a CUDA reference says; empty otherwise)
std::string perOpCsv(const nlohmann::ordered_json& comparison);

// numerics.csv: output,op,status,precision,elements,max_abs_error,max_rel_error,normwise_rel_error,
// nonfinite_mismatches; only the header when the simulation has no functional outputs.
std::string numericsCsv(const nlohmann::ordered_json& comparison);

}  // namespace tpusim
