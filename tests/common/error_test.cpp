#include "sim/common/error.hpp"

#include <gtest/gtest.h>

#include "sim/common/log.hpp"

namespace tpusim {
namespace {

TEST(Error, ContextIsPrependedAndMessageIsOneLine) {
  const Error base(ErrorKind::kInvalidInput, "bad\nthing");
  const Error wrapped = base.within("reading model.onnx");
  EXPECT_STREQ(wrapped.what(), "reading model.onnx: bad thing");
  EXPECT_EQ(wrapped.kind(), ErrorKind::kInvalidInput);
}

TEST(Error, EveryKindHasItsOwnNonZeroExitCode) {
  const std::vector<ErrorKind> kinds = {ErrorKind::kInvalidInput, ErrorKind::kInvalidConfig, ErrorKind::kUnsupported,
                                        ErrorKind::kResource, ErrorKind::kNoDevice,
                                        ErrorKind::kInternal};
  std::set<int> codes;
  for (ErrorKind kind : kinds) {
    EXPECT_NE(exitCodeFor(kind), 0);
    codes.insert(exitCodeFor(kind));
  }
  EXPECT_EQ(codes.size(), kinds.size());
}

TEST(Log, LevelsByName) {
  EXPECT_NO_THROW(setLogLevel("debug"));
  EXPECT_NO_THROW(setLogLevel("warn"));
  EXPECT_THROW(setLogLevel("loud"), Error);
}

}  // namespace
}  // namespace tpusim
