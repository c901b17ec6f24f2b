// Fuzz target: a hardware .textproto and `--set` overrides. Lines that start with
// "--set " are overrides (the rest of the line is key=value, as on the command line);
// the other lines are the textproto. Parsed by HardwareParams::parse, then each override
// by parseOverride and set, then every value printed back (`tpusim hw show`).
#include <sstream>

#include "fuzz/fuzz_support.hpp"
#include "sim/common/params.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tpusim;
  return fuzz::expectErrors([&] {
    std::istringstream lines{std::string(fuzz::asText(data, size))};
    std::string text, line;
    std::vector<std::string> overrides;
    while (std::getline(lines, line)) {
      if (line.rfind("--set ", 0) == 0) {
        overrides.push_back(line.substr(6));
      } else {
        text += line + '\n';
      }
    }
    HardwareParams hw = HardwareParams::parse(text, "fuzz.textproto");
    for (const std::string& item : overrides) {
      const auto [key, value] = parseOverride(item);
      hw.set(key, value);
    }
    for (const ParamInfo& param : HardwareParams::declarations()) hw.valueText(param);
  });
}
