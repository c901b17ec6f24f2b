// Fuzz target: report.json as `tpusim report DIR` and `tpusim compare SIM REF` read it.
// The input is one report, or two separated by a line "---" (the simulation's, then the
// reference's; one report is compared with itself). The first is read by readRunReport
// and its views (CSVs, trace.json, report.html) are made in memory; then both go to
// compareReportFiles.
#include <filesystem>

#include "api/compare_run.hpp"
#include "fuzz/fuzz_support.hpp"
#include "report/run_outputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tpusim;
  const std::string_view input = fuzz::asText(data, size);
  const size_t cut = input.find("\n---\n");
  const std::string_view sim = input.substr(0, cut);
  const std::string_view ref = cut == std::string_view::npos ? sim : input.substr(cut + 5);
  const std::string sim_path = fuzz::scratchFile("report.json", sim);
  const std::string ref_path = fuzz::scratchFile("reference.json", ref);
  fuzz::expectErrors([&] { reportViews(readRunReport(std::filesystem::path(sim_path).parent_path().string())); });
  fuzz::expectErrors([&] { compareReportFiles(sim_path, ref_path); });
  return 0;
}
