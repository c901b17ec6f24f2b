// The source tree a test reads shipped files (traces/) from: $TPUSIM_SOURCE_DIR where set,
// for a test binary run away from the tree it was built in (scripts/gpu-check.sh runs the
// GPU bundle's on another machine), else that tree.
#pragma once

#include <cstdlib>
#include <string>

namespace tpusim::testing {

inline std::string sourceDir() {
  const char* dir = std::getenv("TPUSIM_SOURCE_DIR");
  return dir != nullptr && *dir != '\0' ? dir : TPUSIM_SOURCE_DIR;
}

}  // namespace tpusim::testing
