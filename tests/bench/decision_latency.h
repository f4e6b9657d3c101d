// Decision latency of the daemon's placement profiles, with the placement index (as yardd runs them)
// and as a full scan of every host, on one churning pool per lane: each decision's GPUs are taken and
// as many random taken GPUs are released, so the fill stays put and the index has fabrics to re-rank.
// Lanes decide the same requests interleaved, so this VM's speed drift hits them alike; a profile's two
// lanes must choose the same hosts, which the run checks.
#pragma once

#include <string>
#include <vector>

namespace switchyard::bench {

struct LatencyOptions {
  std::vector<int> gpus{1000, 10000};
  std::vector<double> fills{0.5, 0.9};
  int decisions = 20'000;
  std::vector<std::string> profiles{"switchyard-v1", "switchyard-v2"};
  bool scan = true;  // also time each profile without the index
  // Whole machines (issue 62): every switch also holds 3 NICs and 2 NVMe drives (5 of its 21 devices, about a
  // quarter), and every request asks for a NIC under its GPUs' switch and a drive anywhere the host reaches.
  bool mixed = false;
};

// Prints one row per pool size, fill, profile and lane; returns a process exit code.
int benchDecisionLatency(const LatencyOptions& options);

}  // namespace switchyard::bench
