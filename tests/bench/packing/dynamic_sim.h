// Dynamic mode of the packing benchmark: requests drawn from a pod list arrive as a Poisson process and
// leave after a duration drawn with them (deletion - creation time in the trace, cut at `maxDurationSeconds`:
// the trace's tail reaches 145 days, and a run must reach steady state). The arrival rate is set
// so that the offered load -- arrival rate x mean(milli-GPU x duration) / GPU capacity -- is `load`.
//
// A request that does not fit waits in a FIFO queue; after every departure the first `backfillDepth`
// waiting requests are tried in order (later ones may pass one that still does not fit), and a request
// that has waited longer than `patienceSeconds` gives up. Arrivals before `warmup` only fill the pool.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/composable_sim.h"
#include "tests/bench/packing/openb_trace.h"

namespace switchyard::bench {

struct DynamicOptions {
  double load = 0.9;
  size_t arrivals = 50'000;  // measured arrivals, after the warm-up
  size_t warmup = 150'000;   // at load 0.9 on openb about 1 day of arrivals: the longest (cut) duration
  double maxDurationSeconds = 86'400;
  double patienceSeconds = 1800;
  size_t backfillDepth = 64;
  uint64_t seed = 42;
  // The arrival rate is set against this GPU capacity instead of the pool's own (compaction: the same
  // demand on a smaller pool); 0 = the pool's.
  int64_t referenceCapacityMilli = 0;
};

// Requests by what they ask of the GPUs, to tell which kind a pool turns away.
enum class RequestKind { kCpuOnly, kShare, kOneGpu, kTwoToFourGpus, kFiveOrMoreGpus };
inline constexpr size_t kRequestKinds = 5;
[[nodiscard]] RequestKind kindOf(const sharing::ShareRequest& r);
[[nodiscard]] const char* csvName(RequestKind k);  // cpu_only, share, 1_gpu, 2_to_4_gpus, 5_plus_gpus

struct DynamicResult {
  size_t arrived = 0;        // measured arrivals
  size_t acceptedAtOnce = 0; // placed on arrival
  size_t accepted = 0;       // placed on arrival or from the queue
  size_t gaveUp = 0;         // waited longer than the patience
  // GPU time (milli-GPU x duration) of the measured arrivals, and of those accepted: counting requests
  // alone hides an overloaded pool that turns away the long, large ones.
  double arrivedGpuTime = 0, acceptedGpuTime = 0;
  // The same per RequestKind: measured arrivals and accepted ones, and their GPU time.
  std::array<size_t, kRequestKinds> arrivedByKind{}, acceptedByKind{};
  std::array<double, kRequestKinds> arrivedGpuTimeByKind{}, acceptedGpuTimeByKind{};
  double meanWaitSeconds = 0;  // over accepted requests, 0 for those placed at once
  double p99WaitSeconds = 0;
  size_t attaches = 0, detaches = 0;  // composable pools: GPUs hot-plugged / unplugged while measuring
  double meanAllocationPercent = 0;   // time-weighted, while measuring
  double seconds = 0;                 // time spent choosing placements
};

// The Poisson arrival rate (per second) that offers `options.load` of a pool with `poolCapacityMilli` (or of
// options.referenceCapacityMilli when set): load x capacity / mean(milli-GPU x cut duration) over the pod list.
// Every time-driven simulation draws its arrivals at this rate, so they share the same arrivals. Throws
// std::invalid_argument for an empty pod list or one without GPU time.
[[nodiscard]] double arrivalRate(const std::vector<TracePod>& pods, const DynamicOptions& options, int64_t poolCapacityMilli);

// The pool is a static cluster (`shape` null) or a composable pool.
[[nodiscard]] DynamicResult runDynamic(const sharing::ShareCluster& servers, const ComposableShape* shape,
                                       const std::vector<TracePod>& pods, sharing::SharePolicy& policy, const DynamicOptions& options);

// The same with a policy made for the pool once it is built: `makePolicy` gets the composable pool (null
// on a static cluster), which outlives the policy (policies that read the pool's structure, pool_aware_policy.h).
// Throws std::invalid_argument when `makePolicy` makes none.
using PolicyForPool = std::function<std::unique_ptr<sharing::SharePolicy>(const ComposablePool* pool)>;
[[nodiscard]] DynamicResult runDynamic(const sharing::ShareCluster& servers, const ComposableShape* shape,
                                       const std::vector<TracePod>& pods, const PolicyForPool& makePolicy,
                                       const DynamicOptions& options);

}  // namespace switchyard::bench
