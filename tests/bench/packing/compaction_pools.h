// The smaller pools compaction probes (packbench_compaction.cpp), each nested in the share: a larger share holds
// every server, or GPU, of a smaller one.
#pragma once

#include <cstdint>

#include "composer/packing/sharing/share_cluster.h"

namespace switchyard::bench {

// The first round(percent % of each class) servers of a seeded order per (GPU model, GPU count) class, so the mix
// of servers stays the same.
[[nodiscard]] sharing::ShareCluster shareOfServers(const sharing::ShareCluster& all, int percent, uint64_t seed);

// Every server kept, with round(percent %) of each model's GPUs, taken away one at a time (ties: a seeded order):
// kEven from the server of that model that has the most left, so the servers stay as even as they can; kSmallFirst
// from the one that has the fewest, so the biggest servers stay whole. A server may end with none (a CPU-only host).
enum class Thinning { kEven, kSmallFirst };
[[nodiscard]] sharing::ShareCluster thinnedServers(const sharing::ShareCluster& all, int percent, uint64_t seed, Thinning how);

}  // namespace switchyard::bench
