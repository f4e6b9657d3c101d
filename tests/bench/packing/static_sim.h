// The FGD paper's static protocol ("workload inflation", arrival only) on a fixed cluster:
//   1. shuffle the pod list with the seed;
//   2. append pods resampled with replacement until the GPU demand reaches `ratio` x capacity;
//   3. place pods one at a time with no departures; a pod that does not fit is skipped, not retried;
//   4. record allocated milli-GPU / capacity against arrived demand (0..130 % of capacity).
// Node order is also shuffled per seed (as in the authors' simulator), which matters only to tie-breaks.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "composer/packing/sharing/fragmentation.h"
#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/arrival_run.h"
#include "tests/bench/packing/openb_trace.h"

namespace switchyard::bench {

[[nodiscard]] std::vector<sharing::ShareRequest> inflateWorkload(const std::vector<TracePod>& pods, int64_t capacityMilli,
                                                                 uint64_t seed, double ratio);
[[nodiscard]] sharing::ShareCluster shuffleNodes(const sharing::ShareCluster& c, uint64_t seed);

struct StaticResult : ArrivalRun {
  sharing::ClusterFragmentation fragAt100;
  sharing::ClusterFragmentation fragAtEnd;
};

// Checks every placement the policy returns (throws std::logic_error on an invalid one).
[[nodiscard]] StaticResult runStatic(sharing::ShareCluster cluster, const std::vector<sharing::ShareRequest>& requests,
                                     sharing::SharePolicy& policy, const sharing::ShapeMix& fragMix);

}  // namespace switchyard::bench
