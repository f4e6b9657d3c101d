// Ablation of Switchyard's composable placement profile (switchyard-v1) on a churning pool: the full
// profile against the same profile with its topology scores (fewest-switches, avoid-inter-switch-links)
// and/or its fragmentation score (best-fit) weighted 0, and the HiveD-style buddy profile (hived-buddy) as
// a baseline. Same request stream for each: compose requests
// arrive as a Poisson process, each system lives an exponential time (mean 1), and a request that does
// not fit is lost (no queue). The arrival rate makes the offered GPU load `load` x the pool.
#pragma once

#include <cstdint>
#include <vector>

namespace switchyard::bench {

struct AblationOptions {
  int gpus = 1024;
  int gpusPerSwitch = 16;
  int switchesPerFabric = 4;
  int hostsPerFabric = 32;
  double load = 0.9;        // offered load: arrival rate x mean GPUs per request x mean lifetime / GPUs
  int warmup = 2000;        // requests before measuring
  int requests = 20000;     // measured requests
  std::vector<uint64_t> seeds{42, 43, 44};
  // Request sizes (GPUs) and their relative weights.
  std::vector<int> sizes{1, 2, 4, 8, 16};
  std::vector<double> sizeWeights{40, 25, 20, 10, 5};
  bool index = true;  // decide through the placement index, as yardd does (false: the full scan)
};

// Prints one table row per profile variant, then the decision latency of each on that churn (measured
// requests; whole systems depart, as in the daemon); returns a process exit code.
int benchTopologyAblation(const AblationOptions& options);

}  // namespace switchyard::bench
