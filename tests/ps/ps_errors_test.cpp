// Bad parameter-server values are one-line errors (docs/strategies.md, "Errors").
#include <gtest/gtest.h>

#include "sim/common/error.hpp"
#include "sim/ps/ps_model.hpp"

namespace tpusim::ps {
namespace {

void expectError(const PsConfig& c, ErrorKind kind, const std::string& message, uint64_t workers = 2,
                 uint64_t batch = 4, uint64_t steps = 2, std::vector<EmbeddingTable> tables = {{"t", 10, 64, 1}}) {
  try {
    runParameterServer(tables, c, workers, batch, steps, 0);
    FAIL() << "no error for " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind);
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

TEST(PsErrors, BadConfigValuesNameTheParameter) {
  PsConfig c;
  c.dcn_gbps = 0;
  expectError(c, ErrorKind::kInvalidConfig, "parameter dcn.host_bandwidth_gbps must be > 0 (got 0 GB/s)");
  c = PsConfig{};
  c.tasks = 0;
  expectError(c, ErrorKind::kInvalidConfig, "parameter ps.tasks must be > 0 (got 0 count)");
  c = PsConfig{};
  c.zipf_exponent = -1;
  expectError(c, ErrorKind::kInvalidConfig, "parameter ps.zipf_exponent must be >= 0 (got -1)");
  c = PsConfig{};
  c.memory_gbps = 0;
  expectError(c, ErrorKind::kInvalidConfig, "parameter ps.memory_gbps must be > 0");
  c = PsConfig{};
  c.reshard_every_steps = 0;
  expectError(c, ErrorKind::kInvalidConfig, "parameter ps.reshard_every_steps must be > 0");
  c = PsConfig{};
  c.dcn_latency_us = -1;
  expectError(c, ErrorKind::kInvalidConfig, "parameter dcn.latency_us must be >= 0");
}

TEST(PsErrors, BadRunsAndTables) {
  expectError(PsConfig{}, ErrorKind::kInvalidConfig, "--workers must be > 0", 0);
  expectError(PsConfig{}, ErrorKind::kInvalidConfig, "needs a batch > 0", 2, 0);
  expectError(PsConfig{}, ErrorKind::kInvalidInput, "no embedding tables", 2, 4, 2, {});
  expectError(PsConfig{}, ErrorKind::kInvalidInput, "embedding table 'e' is empty", 2, 4, 2, {{"e", 0, 64, 1}});
  expectError(PsConfig{}, ErrorKind::kUnsupported, "rows (at most", 2, 4, 2, {{"huge", kMaxTotalRows + 1, 64, 1}});
}

TEST(PsErrors, UnknownNamesListTheKnownOnes) {
  EXPECT_EQ(parseShardingPolicy("round-robin"), ShardingPolicy::kRoundRobin);
  try {
    parseShardingPolicy("hash");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown sharding policy 'hash' (known: round_robin, size_balanced, dynamic)");
  }
  EXPECT_THROW(parseAggregation("eventual"), Error);
}

}  // namespace
}  // namespace tpusim::ps
