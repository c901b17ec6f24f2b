// `tpusim compare`: a simulation report set beside a reference backend's report
// (docs/reference.md). The per-op table joins the two reports' `per_op` rows by
// IR op name; the numerics table holds the error of the simulator's functional
// outputs against the reference's, one row per output tensor. Both go into one
// JSON document (compare.json) that the text and CSV forms are printed from.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

namespace tpusim {

// The value of "kind" in compare.json.
inline constexpr const char* kCompareKind = "compare";

// Throws Error (kInvalidInput) unless `sim` is a simulation report and `ref` a
// reference report of the same model, mode and batch (and, where both carry
// values, the same seed, so the same generated inputs).
void checkComparable(const nlohmann::ordered_json& sim, const nlohmann::ordered_json& ref);

// The error of one output tensor, simulator against reference, element by element.
struct OutputErrors {
  uint64_t elements = 0;
  double max_abs_error = 0;           // max |sim - ref| over the finite pairs
  double max_rel_error = 0;           // max |sim - ref| / |ref| over the finite pairs with ref != 0
  double normwise_rel_error = 0;      // max |sim - ref| / max |ref| (0 when every ref is 0 and the errors are 0)
  uint64_t nonfinite_mismatches = 0;  // pairs where one side is NaN or infinite and the two differ
};
OutputErrors outputErrors(std::span<const double> sim, std::span<const double> ref);

// One row of the numerics table: an output present on both sides.
nlohmann::ordered_json numericsRow(const std::string& output, const std::string& op, const std::string& dtype,
                                   const OutputErrors& errors);
// A row for an output that only one side wrote (`side`: "simulator only" or "reference only").
nlohmann::ordered_json numericsOneSidedRow(const std::string& output, const std::string& op, const std::string& dtype,
                                           const std::string& side);

// compare.json: the header, the per-op table and, when `numerics_rows` is not null (the
// simulation ran with --functional), the numerics table. Deterministic: the same
// reports give the same text.
nlohmann::ordered_json buildComparison(const nlohmann::ordered_json& sim, const nlohmann::ordered_json& ref,
                                       const nlohmann::ordered_json& numerics_rows);

}  // namespace tpusim
