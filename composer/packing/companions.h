// What a request takes beside its GPUs, on the same host: pooled memory (pooled_memory.h) and drives and
// NICs (endpoint_choice.h). Whole GPUs by count are placed in one scheduling cycle in which the "companions"
// filter keeps only the hosts whose GPU plan leaves room and reach for the companions (and the device-set plugin
// prefers a switch that has the switch-affine ones), so the scores pick the best host that can have everything;
// then the companions are chosen on it. MIG instances and named devices are placed as alone, then the companions
// on that host, and when that host cannot have them, again on each host that reaches them. A request of
// companions alone goes to the host that takes them with the least memory left over, then the first in host order.
#pragma once

#include "composer/packing/packing.h"

namespace switchyard {

[[nodiscard]] inline bool wantsCompanions(const PlacementRequest& r) { return r.pooledMemoryGiB > 0 || !r.endpoints.empty(); }

[[nodiscard]] PlacementDecision placeWithCompanions(const placement::Scheduler& scheduler, const Pool& pool, const PlacementRequest& r,
                                                    PlacementIndex* index);

// The demands by kind on their own: counts, kinds, and models the pool has.
[[nodiscard]] Result<void> validateEndpoints(const Pool& pool, const std::vector<EndpointDemand>& endpoints);

}  // namespace switchyard
