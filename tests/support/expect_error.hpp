// Expects `run` to throw tpusim's Error of `kind` whose message contains `text`; or gives the
// whole message, for a test that compares it.
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

// The message of the Error of `kind` that `run` throws ("" and a failure if none).
inline std::string errorMessage(const std::function<void()>& run, ErrorKind kind) {
  try {
    run();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace tpusim::testing
