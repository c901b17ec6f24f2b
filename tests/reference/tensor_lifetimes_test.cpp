// When the reference executor lets go of each value (tensor_lifetimes.hpp): the release
// points and the peak of a small graph worked out by hand, and every tensor's bytes when
// every tensor is kept.
#include "reference/tensor_lifetimes.hpp"

#include <gtest/gtest.h>

#include "sim/common/error.hpp"

namespace tpusim::reference {
namespace {

using ir::TensorRole;

// x [4,8] (128 B), w [8,2] (64 B) and u [100] (400 B, never read) fed, all f32; then
//   op0 m = x w [4,2], op1 r = relu(m), op2 s = r + m, op3 d = relu(x) (never read), op4 t = 2 s.
struct SmallStep {
  ir::Graph graph;
  int x, w, u, m, r, s, d, t;
  SmallStep() {
    x = graph.addInput("x", {4, 8}, DType::kF32, TensorRole::kInput);
    w = graph.addWeight("w", {8, 2}, DType::kF32);
    u = graph.addInput("u", {100}, DType::kF32, TensorRole::kInput);
    m = graph.matmul("m", x, w, false, false);
    r = graph.relu("r", m);
    s = graph.add("s", r, m);
    d = graph.relu("d", x);
    t = graph.scale("t", s, 2.0);
  }
};

TEST(TensorLifetimes, ReleasesEachValueAfterItsLastReaderAndPeaksWhereTheHandCountSays) {
  const SmallStep step;
  const TensorLifetimes lifetimes = tensorLifetimes(step.graph, {step.t});
  EXPECT_EQ(lifetimes.unread_feeds, std::vector<int>{step.u});
  ASSERT_EQ(lifetimes.released_after.size(), 5u);
  EXPECT_EQ(lifetimes.released_after[0], std::vector<int>{step.w});
  EXPECT_TRUE(lifetimes.released_after[1].empty());  // m is read again by op2
  EXPECT_EQ(lifetimes.released_after[2], (std::vector<int>{step.m, step.r}));
  EXPECT_EQ(lifetimes.released_after[3], (std::vector<int>{step.x, step.d}));  // d: made, never read
  EXPECT_EQ(lifetimes.released_after[4], std::vector<int>{step.s});
  // Held: x + w = 192 at the start; op0 224, then 160; op1 192; op2 224, then x + s = 160;
  // op3 makes d: 288, the peak; then s 32; op4 s + t 64.
  EXPECT_EQ(lifetimes.peak_bytes, 288u);
}

TEST(TensorLifetimes, KeptTensorsAreNeverReleased) {
  const SmallStep step;
  const TensorLifetimes lifetimes = tensorLifetimes(step.graph, {step.t, step.u, step.d, step.m});
  EXPECT_TRUE(lifetimes.unread_feeds.empty());
  EXPECT_EQ(lifetimes.released_after[2], std::vector<int>{step.r});
  EXPECT_EQ(lifetimes.released_after[3], std::vector<int>{step.x});
  // u (400) held throughout, m and d to the end: op3 holds x, u, m, s, d = 128 + 400 + 32 + 32 + 128.
  EXPECT_EQ(lifetimes.peak_bytes, 720u);
}

TEST(TensorLifetimes, KeepingEveryTensorHoldsEveryTensorsBytes) {
  const SmallStep step;
  std::vector<int> every;
  uint64_t bytes = 0;
  for (const ir::Tensor& tensor : step.graph.tensors()) {
    every.push_back(tensor.id);
    bytes += tensor.bytes();
  }
  const TensorLifetimes lifetimes = tensorLifetimes(step.graph, every);
  EXPECT_EQ(lifetimes.peak_bytes, bytes);
  EXPECT_EQ(bytes, 848u);
  EXPECT_TRUE(lifetimes.unread_feeds.empty());
  for (const std::vector<int>& released : lifetimes.released_after) EXPECT_TRUE(released.empty());
}

TEST(TensorLifetimes, AnIdTheGraphLacksIsAnInternalError) {
  const SmallStep step;
  try {
    tensorLifetimes(step.graph, {99});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInternal);
    EXPECT_NE(std::string(error.what()).find("kept tensor id 99"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace tpusim::reference
