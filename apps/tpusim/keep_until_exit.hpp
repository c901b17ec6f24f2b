// A Program the command has finished with, left for the process's exit to take back.
//
// Freeing a Program of a million instructions one object at a time took a tenth of
// `tpusim run traces/resnet50.onnx --batch 128` (about 0.3 s of ~3 s, 2-vCPU VM), and the
// command returns right after; the system takes the memory back whole. A compiler does the
// same with its ASTs (clang's -disable-free). Held by a static pointer, it stays reachable, so
// LeakSanitizer does not count it as a leak. Only the CLI does this: the library and the
// Python module free what they make.
#pragma once

#include <utility>
#include <vector>

#include "traces/program.pb.h"

namespace tpusim::cli {

inline void keepUntilExit(program::Program program) {
  static auto* kept = new std::vector<program::Program>();
  kept->push_back(std::move(program));  // a message without an arena moves by swapping pointers
}

}  // namespace tpusim::cli
