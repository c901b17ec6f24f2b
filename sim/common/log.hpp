// Logging through spdlog: one stderr logger, level chosen by --log-level.
#pragma once

#include <string_view>

#include <spdlog/spdlog.h>

namespace tpusim {

// Accepts trace, debug, info, warn, error, critical, off; anything else is an
// ErrorKind::kInvalidConfig error listing the accepted names.
void setLogLevel(std::string_view name);

}  // namespace tpusim
