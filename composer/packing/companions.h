// What a request takes beside its GPUs, on the same host: pooled memory (pooled_memory.h) and drives and
// NICs (endpoint_choice.h). The GPUs are placed as they would be alone; then the companions on that host;
// when that host cannot have them, the GPUs again on each host that reaches them. A request of companions
// alone goes to the host that takes them with the least memory left over, then the first in host order.
#pragma once

#include "composer/packing/packing.h"

namespace switchyard {

[[nodiscard]] inline bool wantsCompanions(const PlacementRequest& r) { return r.pooledMemoryGiB > 0 || !r.endpoints.empty(); }

[[nodiscard]] PlacementDecision placeWithCompanions(const placement::Scheduler& scheduler, const Pool& pool, const PlacementRequest& r,
                                                    PlacementIndex* index);

// The demands by kind on their own: counts, kinds, and models the pool has.
[[nodiscard]] Result<void> validateEndpoints(const Pool& pool, const std::vector<EndpointDemand>& endpoints);

}  // namespace switchyard
