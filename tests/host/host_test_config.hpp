// Host configs for the host tests: round numbers so that each regime's
// closed form can be written in a comment.
#pragma once

#include "sim/host/host_config.hpp"

namespace tpusim::test {

// Storage 1 GB/s and 1e6-byte examples: 1 ms per example, 1000 examples/s.
// Map 8 threads x 1000 us: 8000 examples/s. PCIe 10 GB/s, 1e5 bytes per
// example, no latency: 1e5 examples/s. Storage-bound.
inline HostPipelineConfig roundHost() {
  HostPipelineConfig host;
  host.storage_read_gbps = 1;
  host.example_bytes = 1000000;
  host.map_us = 1000;
  host.num_parallel_calls = 8;
  host.prefetch_batches = 4;
  host.cache_in_memory = false;
  host.epoch_examples = 1000000000;
  host.infeed_bytes_per_example = 100000;
  host.pcie_gbps = 10;
  host.pcie_latency_us = 0;
  host.checkpoint_every_steps = 0;
  host.storage_write_gbps = 1;
  return host;
}

}  // namespace tpusim::test
