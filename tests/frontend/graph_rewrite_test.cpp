// Graph::rewired, the edit that passes rewrite a graph with: removed ops, replaced ops
// checked by their builders, and redirected reads (op inputs, aliases, graph outputs).
#include <gtest/gtest.h>

#include "frontend/ir/graph.hpp"
#include "sim/common/error.hpp"

namespace tpusim::ir {
namespace {

TEST(GraphRewired, RemovesAnOpAndRedirectsItsReaders) {
  Graph g;
  const int x = g.addInput("x", {2, 3}, DType::kF32, TensorRole::kInput);
  const int same = g.scale("one", x, 1.0);
  const int view = g.reshape("view", same, {3, 2});
  const int y = g.relu("relu", view);
  g.markOutput(y);
  Graph::Rewrite rewrite(g);
  rewrite.remove[0] = true;
  rewrite.redirect[static_cast<size_t>(same)] = x;
  const Graph out = g.rewired(rewrite);
  ASSERT_EQ(out.ops().size(), 2u);
  EXPECT_EQ(out.ops()[0].name, "view");
  EXPECT_EQ(out.ops()[0].inputs, std::vector<int>{x});
  EXPECT_EQ(out.tensor(view).alias_of, x);  // the view's alias moves with its input
  EXPECT_EQ(out.producer(same), nullptr);
  EXPECT_EQ(out.producer(y), &out.ops()[1]);
  // The removed op's output, read by nothing, is not listed as a source.
  EXPECT_EQ(out.toString().find("one:out"), std::string::npos) << out.toString();
}

TEST(GraphRewired, ReplacementsAreCheckedByTheirBuilders) {
  Graph g;
  const int x = g.addInput("x", {4, 3}, DType::kF32, TensorRole::kInput);
  const int w = g.addWeight("w", {5, 3}, DType::kF32);
  const int wt = g.transpose("t", w, {1, 0});
  g.markOutput(g.matmul("mm", x, wt, false, false));
  Graph::Rewrite rewrite(g);
  Op folded = g.ops()[1];
  folded.inputs = {x, w};
  folded.transpose_b = true;
  rewrite.replace[1] = folded;
  rewrite.remove[0] = true;
  const Graph out = g.rewired(rewrite);
  ASSERT_EQ(out.ops().size(), 1u);
  EXPECT_TRUE(out.ops()[0].transpose_b);
  EXPECT_EQ(out.ops()[0].name, "mm");

  // Without the flag the product does not type-check: [4,3] x [5,3].
  folded.transpose_b = false;
  rewrite.replace[1] = folded;
  EXPECT_THROW(g.rewired(rewrite), Error);
}

TEST(GraphRewired, RefusesReadsOfRemovedTensorsAndBadRewrites) {
  Graph g;
  const int x = g.addInput("x", {2}, DType::kF32, TensorRole::kInput);
  const int a = g.scale("a", x, 2.0);
  g.markOutput(g.scale("b", a, 3.0));
  Graph::Rewrite rewrite(g);
  rewrite.remove[0] = true;  // b would read a, which nothing writes now
  EXPECT_THROW(g.rewired(rewrite), Error);
  rewrite.redirect[static_cast<size_t>(a)] = a;  // a cycle
  EXPECT_THROW(g.rewired(rewrite), Error);
  EXPECT_THROW(g.rewired(Graph::Rewrite(Graph())), Error);  // made for another graph
}

TEST(GraphRewired, ARedirectedOutputKeepsItsNameAndRole) {
  Graph g;
  const int x = g.addInput("x", {2}, DType::kF32, TensorRole::kInput);
  const int a = g.scale("a", x, 2.0);
  const int b = g.scale("b", a, 1.0);
  g.rename(b, "logits");
  g.markOutput(b);
  Graph::Rewrite rewrite(g);
  rewrite.remove[1] = true;
  rewrite.redirect[static_cast<size_t>(b)] = a;
  const Graph out = g.rewired(rewrite);
  ASSERT_EQ(out.outputs(), std::vector<int>{a});
  EXPECT_EQ(out.tensor(a).name, "logits");

  // An output cannot become a source tensor.
  Graph::Rewrite to_input(g);
  to_input.remove[0] = true;
  to_input.remove[1] = true;
  to_input.redirect[static_cast<size_t>(b)] = x;
  EXPECT_THROW(g.rewired(to_input), Error);
}

}  // namespace
}  // namespace tpusim::ir
