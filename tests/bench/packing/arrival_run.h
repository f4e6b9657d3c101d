// The arrival-only protocol that static and composable modes share: requests are offered in order, each is
// placed where the policy chooses or skipped (never retried), and the allocation is sampled at every whole
// percent of arrived GPU demand (0..130 % of capacity). Only how a placement is applied differs: on the
// cluster itself, or through a composable pool that attaches GPUs.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include "composer/packing/sharing/share_policy.h"

namespace switchyard::bench {

inline constexpr int kArrivalPoints = 131;  // 0..130 % of capacity

struct ArrivalRun {
  std::array<double, kArrivalPoints> allocationPercent{};  // at arrived demand 0..130 %
  size_t arrived = 0, placed = 0, failed = 0;
  size_t gpuRequestsPlaced = 0;
  double firstFailureArrivedPercent = -1;  // -1: nothing failed
  double seconds = 0;                      // time spent choosing placements
};

// `view` is what the policy chooses on (it changes as placements are applied); apply(placement, request)
// takes the resources; allocated() is the milli-GPU allocated so far; onArrival(demandAfter) runs before
// each request is offered, with the arrived demand including it.
template <typename Apply, typename Allocated, typename OnArrival>
ArrivalRun runArrivals(const sharing::ShareCluster& view, int64_t capacityMilli, const std::vector<sharing::ShareRequest>& requests,
                       sharing::SharePolicy& policy, Apply apply, Allocated allocated, OnArrival onArrival) {
  ArrivalRun run;
  const auto capacity = static_cast<double>(capacityMilli);
  auto allocation = [&] { return 100.0 * static_cast<double>(allocated()) / capacity; };
  int64_t arrived = 0;
  int nextPoint = 0;
  std::chrono::steady_clock::duration spent{};
  for (const auto& r : requests) {
    const int64_t after = arrived + r.totalGpuMilli();
    while (nextPoint < kArrivalPoints && static_cast<double>(after) > nextPoint * capacity / 100.0)
      run.allocationPercent[static_cast<size_t>(nextPoint++)] = allocation();
    onArrival(after);
    arrived = after;
    ++run.arrived;
    const auto start = std::chrono::steady_clock::now();
    policy.observe(r);
    auto placement = policy.choose(view, r);
    spent += std::chrono::steady_clock::now() - start;
    if (!placement) {
      ++run.failed;
      if (run.firstFailureArrivedPercent < 0 && r.gpuCount > 0) run.firstFailureArrivedPercent = 100.0 * static_cast<double>(arrived) / capacity;
      continue;
    }
    apply(*placement, r);  // validates the placement
    ++run.placed;
    if (r.gpuCount > 0) ++run.gpuRequestsPlaced;
  }
  while (nextPoint < kArrivalPoints) run.allocationPercent[static_cast<size_t>(nextPoint++)] = allocation();
  run.seconds = std::chrono::duration<double>(spent).count();
  return run;
}

}  // namespace switchyard::bench
