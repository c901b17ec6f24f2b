// Expects `run` to throw tpusim's Error of `kind` whose message contains `text`.
#pragma once

#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "sim/common/error.hpp"

namespace tpusim::testing {

inline void expectError(const std::function<void()>& run, ErrorKind kind, const std::string& text) {
  try {
    run();
    FAIL() << "no error; expected: " << text;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
  }
}

}  // namespace tpusim::testing
