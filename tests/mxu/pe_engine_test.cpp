// The PE-by-PE engine (sim/mxu) against the plain stepper kept in
// tests/mxu/reference: over random arrays, shapes, dataflows, register
// buffering, feed intervals, pass counts and operand kinds, the same cycles,
// the same breakdown and the same output bits; and with folds started early,
// a hazard from one exactly when the other reports one.
#include <bit>
#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "sim/common/error.hpp"
#include "sim/mxu/pe_array.hpp"
#include "tests/mxu/reference/reference_pe_array.hpp"

namespace tpusim {
namespace {

const Dataflow kDataflows[] = {Dataflow::kWeightStationary, Dataflow::kInputStationary, Dataflow::kOutputStationary};

// The kinds of operand the MXU is given: bf16 parts of f32 values (any exponent,
// signed zeros among them), small integers as int8 carries, and zeros (timing only).
enum class Kind { kFloat, kInt8, kZeros };

struct Operands {
  std::vector<std::vector<float>> storage;
  std::vector<PassOperands> passes;
};

Operands randomOperands(const MatmulShape& s, Kind kind, std::mt19937& rng) {
  Operands o;
  if (kind == Kind::kZeros) return o;
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20), int8(-128, 127), zero(0, 15);
  const auto draw = [&] {
    if (zero(rng) == 0) return zero(rng) < 8 ? 0.0f : -0.0f;
    return kind == Kind::kInt8 ? static_cast<float>(int8(rng)) : std::ldexp(value(rng), exponent(rng));
  };
  for (uint64_t p = 0; p < s.passes; ++p) {
    std::vector<float> lhs(s.m * s.k), rhs(s.k * s.n);
    for (float& v : lhs) v = draw();
    for (float& v : rhs) v = draw();
    o.storage.push_back(std::move(lhs));
    o.storage.push_back(std::move(rhs));
  }
  for (uint64_t p = 0; p < s.passes; ++p) o.passes.push_back({o.storage[2 * p], o.storage[2 * p + 1]});
  return o;
}

std::string describe(const ArrayConfig& a, const MatmulShape& s, uint64_t early) {
  return std::string(dataflowName(a.dataflow)) + (a.double_buffered ? " double " : " single ") +
         std::to_string(a.rows) + "x" + std::to_string(a.cols) + " m=" + std::to_string(s.m) +
         " k=" + std::to_string(s.k) + " n=" + std::to_string(s.n) + " passes=" + std::to_string(s.passes) +
         " feed=" + std::to_string(s.feed_interval) + " early=" + std::to_string(early);
}

// Runs both; a hazard (an Error of kind kInternal) from one must come with one
// from the other, and otherwise every figure and output bit must agree.
void expectSameRun(const ArrayConfig& a, const MatmulShape& s, const Operands& o, uint64_t early) {
  SCOPED_TRACE(describe(a, s, early));
  bool reference_hazard = false, engine_hazard = false;
  PeArrayRun reference, engine;
  try {
    reference = referencePeArray(a, s, o.passes, early);
  } catch (const Error& e) {
    ASSERT_EQ(e.kind(), ErrorKind::kInternal) << e.what();
    reference_hazard = true;
  }
  try {
    engine = simulatePeArray(a, s, o.passes, early);
  } catch (const Error& e) {
    ASSERT_EQ(e.kind(), ErrorKind::kInternal) << e.what();
    ASSERT_NE(std::string(e.what()).find("PE array hazard"), std::string::npos) << e.what();
    engine_hazard = true;
  }
  ASSERT_EQ(engine_hazard, reference_hazard);
  if (reference_hazard) return;
  EXPECT_EQ(engine.timing.cycles, reference.timing.cycles);
  EXPECT_EQ(engine.timing.folds, reference.timing.folds);
  EXPECT_EQ(engine.timing.macs, reference.timing.macs);
  EXPECT_EQ(engine.timing.stream_cycles, reference.timing.stream_cycles);
  EXPECT_EQ(engine.timing.load_stall_cycles, reference.timing.load_stall_cycles);
  EXPECT_EQ(engine.timing.fill_drain_cycles, reference.timing.fill_drain_cycles);
  ASSERT_EQ(engine.out.size(), reference.out.size());
  for (size_t j = 0; j < engine.out.size(); ++j)
    ASSERT_EQ(std::bit_cast<uint32_t>(engine.out[j]), std::bit_cast<uint32_t>(reference.out[j])) << "element " << j;
}

// Small arrays, where folds are many and every edge case (narrow last folds,
// short K blocks, streams shorter than the array) comes up often.
TEST(PeEngine, MatchesThePlainStepperOnRandomSmallCases) {
  std::mt19937 rng(20261207);
  std::uniform_int_distribution<uint64_t> edge(1, 12), dim(1, 40), passes(1, 6), feed(1, 4), coin(0, 1);
  std::uniform_int_distribution<int> flow(0, 2), kind(0, 2);
  for (int i = 0; i < 600; ++i) {
    const ArrayConfig a{edge(rng), edge(rng), kDataflows[flow(rng)], coin(rng) == 1};
    const uint64_t interval = coin(rng) == 1 ? 1 : std::min(a.rows, feed(rng));
    const MatmulShape s{dim(rng), dim(rng), dim(rng), coin(rng) == 1 ? 1 : passes(rng), interval};
    const Operands o = randomOperands(s, static_cast<Kind>(kind(rng)), rng);
    expectSameRun(a, s, o, 0);
    if (HasFatalFailure()) return;
  }
}

// Folds started one to three cycles before the controller's rule allows: the
// engine must find a hazard in exactly the runs the plain stepper does.
TEST(PeEngine, FindsAHazardExactlyWhenThePlainStepperDoes) {
  std::mt19937 rng(1207);
  std::uniform_int_distribution<uint64_t> edge(1, 10), dim(1, 30), passes(1, 3), feed(1, 4), early(1, 3), coin(0, 1);
  std::uniform_int_distribution<int> flow(0, 2);
  for (int i = 0; i < 600; ++i) {
    const ArrayConfig a{edge(rng), edge(rng), kDataflows[flow(rng)], coin(rng) == 1};
    const uint64_t interval = coin(rng) == 1 ? 1 : std::min(a.rows, feed(rng));
    const MatmulShape s{dim(rng), dim(rng), dim(rng), coin(rng) == 1 ? 1 : passes(rng), interval};
    const Operands o = randomOperands(s, Kind::kFloat, rng);
    expectSameRun(a, s, o, early(rng));
    if (HasFatalFailure()) return;
  }
}

// Mid-sized arrays, where the engines' blocks of wavefronts, columns and rows
// (32 each in the weight-stationary engine) split runs at every place.
TEST(PeEngine, MatchesThePlainStepperOnRandomMidSizedCases) {
  std::mt19937 rng(2026);
  std::uniform_int_distribution<uint64_t> edge(20, 80), dim(1, 150), feed(1, 3), coin(0, 1);
  std::uniform_int_distribution<int> flow(0, 2), kind(0, 1);
  for (int i = 0; i < 24; ++i) {
    const ArrayConfig a{edge(rng), edge(rng), kDataflows[flow(rng)], coin(rng) == 1};
    const uint64_t interval = coin(rng) == 1 ? 1 : feed(rng);
    const MatmulShape s{dim(rng), dim(rng), dim(rng), 1 + coin(rng), interval};
    expectSameRun(a, s, randomOperands(s, static_cast<Kind>(kind(rng)), rng), 0);
    if (HasFatalFailure()) return;
  }
}

// TPU-sized and odd-sized arrays, a few shapes each.
TEST(PeEngine, MatchesThePlainStepperOnLargerArrays) {
  std::mt19937 rng(32);
  struct Case {
    ArrayConfig array;
    MatmulShape shape;
  };
  const Case cases[] = {
      {{128, 128, Dataflow::kWeightStationary, true}, {300, 260, 200, 1}},
      {{128, 128, Dataflow::kWeightStationary, false}, {70, 300, 140, 1}},
      {{128, 128, Dataflow::kInputStationary, true}, {130, 140, 260, 3}},
      {{128, 128, Dataflow::kOutputStationary, true}, {200, 150, 140, 1}},
      {{128, 128, Dataflow::kOutputStationary, false}, {140, 40, 130, 1}},
      {{96, 40, Dataflow::kWeightStationary, true}, {50, 200, 90, 1, 3}},
      {{40, 96, Dataflow::kOutputStationary, true}, {90, 60, 200, 1, 2}},
      {{33, 65, Dataflow::kInputStationary, false}, {70, 80, 20, 2, 5}},
  };
  for (const Case& c : cases) {
    expectSameRun(c.array, c.shape, randomOperands(c.shape, Kind::kFloat, rng), 0);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace tpusim
