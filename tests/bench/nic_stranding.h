// How often placing GPUs strands a switch's NICs (issue 62, performance): a synthetic pool in which half the
// switches carry NICs, and a documented mix of requests for GPUs alone and for GPUs with a NIC under their switch
// (no public trace has NICs). The locality-aware profile (its "spare-endpoints" score: GPUs alone go where no NIC
// is free when another place fits) against the same profile blind to NICs (that score weighted 0). Poisson
// arrivals, exponential lifetimes, no queue: a request that does not fit is lost, as in the ablation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::bench {

struct StrandingOptions {
  std::string profile = "switchyard-v2";
  int gpus = 512;
  int gpusPerSwitch = 8;
  int switchesPerFabric = 4;
  int hostsPerFabric = 32;
  int nicsPerSwitch = 2;         // on every other switch; the rest have none
  double load = 0.85;            // offered GPU load
  double withNicShare = 0.3;     // of requests: 2 GPUs and 1 NIC under their switch; the rest GPUs alone (1, 2 or 4)
  int warmup = 2000;
  int requests = 20000;
  std::vector<std::uint64_t> seeds{42, 43, 44};
};

// Prints one row per variant; returns a process exit code.
int benchNicStranding(const StrandingOptions& options);

}  // namespace switchyard::bench
