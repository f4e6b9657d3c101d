// The utilization loop on the packing benchmark's dynamic arrivals (issue 40's "proof on the traces").
//
// The arrivals are exactly dynamic_sim.h's (same seed, same Poisson gaps, same pods, same durations). Each
// arrival also gets, from a second random stream of the same seed, a tenant, a priority class, and whether
// its system is over-provisioned: kept for its whole trace duration although its work ends earlier (the
// last `idleShare` of its life is idle). Two ways to run the same arrivals:
// - FIFO: dynamic_sim.h's protocol (first come first served, the first `backfillDepth` waiting requests
//   tried after each departure, give-up after `patienceSeconds`). With no over-provisioning it reproduces
//   runDynamic exactly (a unit test holds it).
// - The full loop, with the daemon's rules (ADR 0017, ADR 0019):
//   - order by class value, then by the tenant's weighted fair-share charge (GPUs held now plus GPU-time held
//     recently, decayed with a half-life, divided by the tenant's weight), then by age;
//   - backfill that cannot delay the head: the first request in that order that does not fit gets a shadow,
//     the time and place it will fit when leased systems end in lease order (or the place preemption frees);
//     a later request may start only if it keeps off that place or its own lease ends before that time;
//   - leases: each system's lease is the smallest of 30m, 1h, 2h, 4h, 8h, 12h, 24h that covers its trace
//     duration (a user asking for a round lease that will not cut the run); leases only inform backfill;
//   - preemption: a head whose class preempts (production and batch, as yardd's defaults) takes back
//     systems of a lower preemptible class (spot), fewest GPUs then youngest first, until it fits; the ones
//     its place does not need are kept; the victims leave after a grace period and queue again, losing
//     the work they did (their GPU time so far is the preemption's cost);
//   - idle reclaim: a system idle for `reclaimAfterSeconds` is detached (its work is done; it counts as
//     served), whole GPUs and time-sliced shares alike, as in yardd since the fifteenth session
//     (`reclaimShares` false: whole GPUs only, the earlier rule).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/dynamic_sim.h"

namespace switchyard::bench {

inline constexpr size_t kLoopClasses = 3;  // production, batch, spot
[[nodiscard]] const char* loopClassName(size_t cls);

struct LoopWorkload {
  std::vector<double> tenantWeights{1, 2, 3, 4};        // fair-share weights (the identities file's `share`)
  std::vector<double> tenantDemand{0.4, 0.3, 0.2, 0.1};  // each tenant's share of the arrivals
  std::array<double, kLoopClasses> classShare{0.1, 0.7, 0.2};
  double overprovisionedShare = 0.3;  // of the systems, idle at the end of their life
  double idleShare = 0.4;             // of such a system's life
};

struct LoopRules {
  bool fullLoop = false;  // false: FIFO
  double reclaimAfterSeconds = 1800;
  double preemptionGraceSeconds = 30;
  double fairShareHalfLifeSeconds = 86'400;
  bool batchPreempts = true;  // yardd's default: batch=100:preempting
  bool reclaimShares = true;  // a share's idle system is reclaimed too (yardd since the fifteenth session)
  // Experiment (not yardd's rule): a tenant below the fair line (its charge under what an even split by weight
  // would charge) has its spot requests ordered with batch, by charge, instead of behind every batch request.
  bool fairShareLiftsSpot = false;
  // Experiment (not yardd's rule): while a head waits, a tenant above the fair line does not backfill behind it
  // (backfill is tenant-blind in yardd).
  bool fairShareGatesBackfill = false;
  // Fair share first (issue 59): across tenants, a request of a tenant below the fair line goes before one of a
  // tenant above it, then the lower charge once the request is admitted goes first; class and age order only
  // inside a tenant. While a head waits, each tenant may try at most backfillPerTenant requests beside it; a
  // preemption takes a victim of another tenant only when the preemptor's charge with the request stays under
  // the victim tenant's charge after the eviction by preemptionHysteresis (a share of it).
  bool shareFirst = false;
  std::size_t backfillPerTenant = 16;
  // While a head waits, a tenant above the fair line may start at most this many GPUs beside it (counted from
  // when the head became the head); 0: no cap.
  double backfillGpusAboveShare = 0;
  double preemptionHysteresis = 0.1;
  // Defragmentation (issue 59, ADR 0033): when the head does not fit, systems in their idle end (over-provisioned,
  // whole GPUs; every owner taken to allow moves) on one enclosure move to another enclosure their host reaches,
  // the fewest GPUs first, at most mostMovedGpus, when that lets the head in there. Moves are instant here (yardd's
  // attach and detach take seconds against the trace's hours).
  bool defragment = false;
  int mostMovedGpus = 8;
};

struct LoopOptions {
  DynamicOptions arrivals;
  LoopWorkload workload;
  LoopRules rules;
};

// Wait buckets by request size.
inline constexpr size_t kLoopSizes = 6;
[[nodiscard]] const char* loopSizeName(size_t size);  // cpu, share, 1, 2, 3-4, 5-8
[[nodiscard]] size_t loopSizeOf(const sharing::ShareRequest& r);

// What one group of measured arrivals (a class, a tenant, a size) got. GPU time is milli-GPU x seconds.
struct LoopGroup {
  size_t arrived = 0, accepted = 0, gaveUp = 0, preemptions = 0;
  double offeredGpuTime = 0, servedGpuTime = 0, preemptedGpuTime = 0;
  std::vector<double> waits;  // seconds from arrival to the first start, of the accepted
};

struct LoopResult {
  LoopGroup all;
  std::array<LoopGroup, kLoopClasses> byClass;
  std::vector<LoopGroup> byTenant;
  std::array<LoopGroup, kLoopSizes> bySize;
  // Of the GPU time allocated while measuring: doing work, and held idle.
  double busyGpuTime = 0, idleGpuTime = 0;
  size_t moves = 0;               // systems moved to make room (LoopRules::defragment), while measuring
  double movedGpus = 0;           // their GPUs
  // Passes in which a waiting head of whole GPUs was looked at for moves, and those in which some enclosure had a
  // host able to take it (CPU, memory, model, room) and enough movable GPUs to cover what it lacked.
  size_t moveLooks = 0, moveChances = 0;
  size_t reclaims = 0;            // systems whose idle end was cut by a reclaim
  double reclaimedGpuTime = 0;    // the idle GPU time those reclaims gave back
  // Each tenant's max-min fair entitlement (weighted water-filling of what was served over what each
  // offered) and served / entitlement; Jain's index over those ratios.
  std::vector<double> tenantEntitlement, tenantRatio;
  double jain = 0;
  double meanAllocationPercent = 0;
  double seconds = 0;  // time spent choosing placements, shadows and victims
};

[[nodiscard]] LoopResult runLoop(const sharing::ShareCluster& servers, const ComposableShape* shape, const std::vector<TracePod>& pods,
                                 const PolicyForPool& makePolicy, const LoopOptions& options);

}  // namespace switchyard::bench
