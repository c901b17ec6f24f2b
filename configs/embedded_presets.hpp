// The hardware presets of configs/*.textproto, compiled into the binary.
#pragma once

#include <string_view>
#include <vector>

namespace tpusim {

struct EmbeddedPreset {
  std::string_view name;
  std::string_view text;  // protobuf text format of tpusim.config.HardwareConfig
};

// In the order of TPUSIM_PRESETS in configs/CMakeLists.txt.
const std::vector<EmbeddedPreset>& embeddedPresets();

}  // namespace tpusim
