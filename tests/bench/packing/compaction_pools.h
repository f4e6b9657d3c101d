// The smaller pools compaction probes (packbench_compaction.cpp), each nested in the share: a larger share holds
// every server, or GPU, of a smaller one.
#pragma once

#include <cstdint>

#include "composer/packing/sharing/share_cluster.h"

namespace switchyard::bench {

// The first round(percent % of each class) servers of a seeded order per (GPU model, GPU count) class, so the mix
// of servers stays the same.
[[nodiscard]] sharing::ShareCluster shareOfServers(const sharing::ShareCluster& all, int percent, uint64_t seed);

// Every server kept, with round(percent %) of each model's GPUs: GPUs are taken away one at a time from the server
// of that model that has the most left (ties: a seeded order), so the servers stay as even as they can; a server
// may end with none (a CPU-only host).
[[nodiscard]] sharing::ShareCluster thinnedServers(const sharing::ShareCluster& all, int percent, uint64_t seed);

}  // namespace switchyard::bench
