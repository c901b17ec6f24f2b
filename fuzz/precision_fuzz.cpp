// Fuzz target: the text of --precision-rule ("mixed_bfloat16->float32 when
// grad_norm_ratio>2 for 3") and of --precision-schedule ("float32:100,mixed_bfloat16:900");
// every input goes to both parsers.
#include "api/precision_rule.hpp"
#include "api/precision_schedule.hpp"
#include "fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tpusim;
  const std::string text(fuzz::asText(data, size));
  fuzz::expectErrors([&] {
    const PrecisionRule rule = parsePrecisionRule(text);
    rule.text();
    rule.holds(1.0);
  });
  fuzz::expectErrors([&] { parsePrecisionSchedule(text); });
  return 0;
}
