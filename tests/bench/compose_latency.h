// Compose time against a slow switch: what users wait for when every switch call takes a round trip.
//   switchyard_bench latency --sim-latency-ms 500 --gpus 16 --concurrent 32
//   switchyard_bench latency --driver switchtec --sim-latency-ms 200 --gpus 8 --concurrent 32 --concurrent-gpus 4
//     (the Switchtec driver against the PAX emulator over loopback TCP, 4 PAX chips with 8 hosts and 32 GPUs
//     each, every MRPC command taking the latency; also times discovery of that fabric)
#pragma once

#include <string>

namespace switchyard::bench {

struct ComposeLatencyOptions {
  int latencyMs = 500;      // simulated switch latency per call
  int gpus = 16;            // GPUs in the one large compose
  int concurrent = 32;      // composes started together, each on its own host
  int concurrentGpus = 2;   // GPUs in each of them
  int repetitions = 3;
  std::string driver = "simulated";  // or "switchtec"
};

int benchComposeLatency(const ComposeLatencyOptions& options);

}  // namespace switchyard::bench
