// Bad host inputs give one-line errors that name the parameter.
#include <gtest/gtest.h>

#include <string>

#include "sim/common/error.hpp"
#include "sim/common/params.hpp"
#include "sim/host/host_model.hpp"
#include "tests/host/host_test_config.hpp"

namespace tpusim {
namespace {

// The message of the Error that `build` throws, checked to be one line of `kind`.
template <typename F>
std::string errorOf(F build, ErrorKind kind) {
  try {
    build();
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    const std::string message = error.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string modelError(const HostPipelineConfig& host, uint64_t batch = 32, uint64_t state_bytes = 0,
                       ErrorKind kind = ErrorKind::kInvalidConfig) {
  return errorOf(
      [&] {
        StatsRegistry stats;
        HostModel model(host, batch, state_bytes, stats, "host0");
      },
      kind);
}

TEST(HostErrors, ZeroThreads) {
  HostPipelineConfig host = test::roundHost();
  host.num_parallel_calls = 0;
  EXPECT_EQ(modelError(host), "parameter host.num_parallel_calls must be > 0 (got 0 threads)");
}

TEST(HostErrors, ZeroBandwidths) {
  HostPipelineConfig host = test::roundHost();
  host.storage_read_gbps = 0;
  EXPECT_EQ(modelError(host), "parameter host.storage_read_gbps must be > 0 (got 0 GB/s)");
  host = test::roundHost();
  host.pcie_gbps = 0;
  EXPECT_EQ(modelError(host), "parameter host.pcie_gbps must be > 0 (got 0 GB/s)");
  host = test::roundHost();
  host.storage_write_gbps = -1;
  EXPECT_EQ(modelError(host), "parameter host.storage_write_gbps must be > 0 (got -1 GB/s)");
}

TEST(HostErrors, ZeroBytesPerExample) {
  HostPipelineConfig host = test::roundHost();
  host.example_bytes = 0;
  EXPECT_EQ(modelError(host), "parameter host.example_bytes must be > 0 (got 0 bytes)");
  host = test::roundHost();
  host.infeed_bytes_per_example = 0;
  EXPECT_EQ(modelError(host), "parameter host.infeed_bytes_per_example must be > 0 (got 0 bytes)");
}

TEST(HostErrors, NegativeTimes) {
  HostPipelineConfig host = test::roundHost();
  host.map_us = -5;
  EXPECT_EQ(modelError(host), "parameter host.map_us must be >= 0 (got -5 us)");
  host = test::roundHost();
  host.pcie_latency_us = -1;
  EXPECT_EQ(modelError(host), "parameter host.pcie_latency_us must be >= 0 (got -1 us)");
}

TEST(HostErrors, RunInputs) {
  EXPECT_EQ(modelError(test::roundHost(), 0, 0, ErrorKind::kInvalidInput),
            "host input pipeline: batch size must be > 0 (got 0)");
  HostPipelineConfig host = test::roundHost();
  host.checkpoint_every_steps = 100;
  EXPECT_EQ(modelError(host, 32, 0, ErrorKind::kInvalidInput),
            "checkpoints every 100 steps need the training state's size (got 0 bytes)");
}

TEST(HostErrors, ParameterSystemRefusesZeroThreadsAndBandwidth) {
  HardwareParams params = HardwareParams::load("tpuv4");
  EXPECT_NE(errorOf([&] { params.set("host.num_parallel_calls", "0"); }, ErrorKind::kInvalidConfig).find("> 0"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { params.set("host.pcie_gbps", "0"); }, ErrorKind::kInvalidConfig).find("> 0"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { params.set("host.cache", "disk"); }, ErrorKind::kInvalidConfig).find("off, memory"),
            std::string::npos);
  // A hand-built message with a negative count reaches the model as zero.
  config::HardwareConfig hw = params.config();
  hw.mutable_host()->set_num_parallel_calls(-3);
  EXPECT_EQ(modelError(hostConfigOf(hw)), "parameter host.num_parallel_calls must be > 0 (got 0 threads)");
}

TEST(HostConfig, PresetsCarryTheHost) {
  const HostPipelineConfig v4 = hostConfigOf(HardwareParams::load("tpuv4").config());
  EXPECT_EQ(v4.pcie_gbps, 15.75);
  EXPECT_EQ(v4.example_bytes, 110000u);
  EXPECT_EQ(v4.num_parallel_calls, 8u);
  EXPECT_FALSE(v4.cache_in_memory);
  HardwareParams params = HardwareParams::load("tpuv5e");
  params.set("host.cache", "memory");
  EXPECT_TRUE(hostConfigOf(params.config()).cache_in_memory);
}

TEST(HostConfig, TimeArithmetic) {
  EXPECT_EQ(transferPicos(1000000, 10), 100000000u);    // 1e6 bytes / 1e10 B/s = 100 us
  EXPECT_EQ(transferPicos(1000000, 15.75), 63492064u);  // 63492063.49 ps, rounded up
  EXPECT_EQ(transferPicos(0, 1), 0u);
  EXPECT_EQ(picosFromMicros(2000), 2000000000u);
  EXPECT_EQ(picosFromCycles(1050, 1050), 1000000u);  // 1050 cycles at 1050 MHz = 1 us
}

}  // namespace
}  // namespace tpusim
