// `switchyard-pool`: our policy for composable pools, judging a placement by what it does to the whole pool
// rather than to the view it lands on.
//
// FGD and `switchyard` see one view per (host, enclosure) link and measure the change of fragmentation on
// the chosen view alone. On a composable pool that misses two effects: a placement also takes CPU from the
// host's other links (whose enclosures' GPUs that host may then no longer be able to use), and free GPUs
// of the enclosure from every other host cabled to it. Here the pool's fragmentation for a shape of the
// mix is the sum of
//  - per link, FGD's measure restricted to the GPUs attached to that host there (only that host can use
//    them): all their milli-GPU when the view cannot serve the shape, else the milli on GPUs too full for it;
//  - per enclosure, its free GPUs beyond what the hosts cabled to it could use for the shape: each host
//    can fill as many free GPUs (up to its device limit) as its CPU left allows requests of the shape,
//    its CPU split evenly over its links. So free GPUs behind hosts whose CPU is spent count as lost, and
//    a request that takes CPU from the one host able to use them is charged for it; a CPU-only request
//    goes where no GPU needs the CPU.
// A placement changes this only around its host and its enclosure, so the change costs
// O((ports per host + ports per enclosure) x shapes x GPUs). Each view keeps that change per request shape
// until a view it depends on changes (the views of the enclosures its host is cabled to), so a decision
// recomputes it only around the last placements and releases; it still checks every view (fits, and the
// versions that tell what changed), which is O(views) per decision. The shape mix is learned online, as
// `switchyard` learns it; changes are compared at 0.1 GPU, and ties go to the earlier view, which keeps
// filling the same hosts.
#pragma once

#include <cstddef>
#include <memory>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/composable_sim.h"

namespace switchyard::bench {

inline constexpr const char* kPoolAwarePolicy = "switchyard-pool";

// The policy reads `pool`'s structure (which views share a host or an enclosure), so it must choose on the
// views of that very pool, which must outlive it.
[[nodiscard]] std::unique_ptr<sharing::SharePolicy> makePoolAwarePolicy(const ComposablePool& pool, std::size_t learnWindow = 5000);

}  // namespace switchyard::bench
