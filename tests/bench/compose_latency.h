// Compose time against a slow switch: what users wait for when every switch call takes a round trip.
//   switchyard_bench latency --sim-latency-ms 500 --gpus 16 --concurrent 32
//   switchyard_bench latency --driver switchtec --sim-latency-ms 200 --gpus 8 --concurrent 32 --concurrent-gpus 4
//     (the Switchtec driver against the PAX emulator over loopback TCP, 4 PAX chips with 8 hosts and 32 GPUs
//     each, every MRPC command taking the latency; also times discovery of that fabric)
//   switchyard_bench latency --driver redfish --sim-latency-ms 200 --gpus 8 --concurrent 16 --concurrent-gpus 2
//     (the Redfish driver against the emulator serving a generated CXL fabric, 4 switches with 32 GPUs and
//     their own hosts each, every HTTP request taking the latency; --no-expand: a service without $expand)
//   switchyard_bench latency --driver cxl --sim-latency-ms 50 --gpus 4 --concurrent 16 --concurrent-gpus 2
//     (the CXL FM-API driver against Jackrabbit Labs' cse behind a delaying proxy, one VCS per host, every
//     FM-API command taking the latency; also one compose of 4 GPUs and 1 LD of the MLD, in commands and
//     latencies, and discovery of a 32-port switch)
#pragma once

#include <string>

namespace switchyard::bench {

struct ComposeLatencyOptions {
  int latencyMs = 500;      // simulated switch latency per call
  int gpus = 16;            // GPUs in the one large compose
  int concurrent = 32;      // composes started together, each on its own host
  int concurrentGpus = 2;   // GPUs in each of them
  int repetitions = 3;
  std::string driver = "simulated";  // or "switchtec", "redfish", "cxl"
  bool expand = true;                // redfish: the service offers $expand
  int pollMs = -1;                   // the engine's fabric event poll interval; -1: 1000 against Redfish (as yardd), else off
};

int benchComposeLatency(const ComposeLatencyOptions& options);

}  // namespace switchyard::bench
