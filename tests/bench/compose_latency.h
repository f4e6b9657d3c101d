// Compose time against a slow switch: what users wait for when every switch call takes a round trip.
//   switchyard_bench latency --sim-latency-ms 500 --gpus 16 --concurrent 32
#pragma once

namespace switchyard::bench {

struct ComposeLatencyOptions {
  int latencyMs = 500;      // simulated switch latency per call
  int gpus = 16;            // GPUs in the one large compose
  int concurrent = 32;      // composes started together, each on its own host
  int concurrentGpus = 2;   // GPUs in each of them
  int repetitions = 3;
};

int benchComposeLatency(const ComposeLatencyOptions& options);

}  // namespace switchyard::bench
