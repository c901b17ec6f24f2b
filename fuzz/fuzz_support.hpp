// What every fuzz target shares: the one expected outcome of bad input is a
// tpusim::Error (sim/common/error.hpp); any other exception escapes to libFuzzer,
// which reports it with the input, as it does a crash or a sanitizer report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/common/error.hpp"

namespace tpusim::fuzz {

// Logging off (a warning per input would dominate the run), once per process.
void quietOnce();

// A path in this process's scratch folder (under $TMPDIR or /tmp), whose file holds
// `bytes`: for the readers that take a path, as tpusim's commands do.
std::string scratchFile(const std::string& name, std::string_view bytes);

std::string_view asText(const uint8_t* data, size_t size);

// Runs `body`; a tpusim::Error is the expected answer to bad input.
template <typename Body>
int expectErrors(Body&& body) {
  quietOnce();
  try {
    body();
  } catch (const Error&) {
  }
  return 0;
}

}  // namespace tpusim::fuzz
