// Time-sliced GPU shares on a composable host: which of a system's GPUs takes a new share, or whether it
// needs a fresh GPU from the pool. A device is bound whole to one host, so a system's share GPUs serve
// only that system. The rule is the sharing benchmark's fragmentation-aware core (the `switchyard` share
// policy, docs/benchmarks/packing.md) applied to the system's GPUs:
//  - fill before attach: a share goes on one of the system's share GPUs whenever one has room, because a
//    fresh GPU costs a hot-plug on the host and takes a whole device out of the pool;
//  - among those, the GPU where FGD's expected fragmentation (the milli-GPU left that the share sizes the
//    pool is asked for could not use) grows least; changes closer than a tenth of a GPU count as equal;
//  - ties, and a pool that has not been asked for shares yet: the fullest GPU that fits (best fit), then
//    the earlier one.
// Pure; no I/O.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "composer/model/composition.h"
#include "composer/model/error.h"
#include "composer/packing/packing.h"
#include "composer/packing/sharing/shape_mix.h"

namespace switchyard {

// The share sizes a pool has been asked for lately (a window of requests), as a shape mix.
class ShareDemand {
 public:
  explicit ShareDemand(std::size_t window = 5000) : learner_(window, {}, 50) {}
  void observe(int milli);
  [[nodiscard]] const sharing::ShapeMix& mix() const { return learner_.mix(); }

 private:
  sharing::ShapeLearner learner_;
};

struct SharePlan {
  std::optional<DeviceId> onBound;  // the system's GPU that takes it; empty: a fresh GPU is needed
  std::string explanation;
};

// bound: the system's shares (their devices are its share GPUs).
[[nodiscard]] SharePlan planGpuShare(const std::vector<GpuShare>& bound, int milli, const sharing::ShapeMix& mix);

// A share request is 1-999 milli-GPU and asks for nothing else (no count, devices or MIG instances).
[[nodiscard]] Result<void> validateShareRequest(const PlacementRequest& request);
// The whole-GPU request for the fresh GPU a share needs: one GPU of the same model and memory.
[[nodiscard]] PlacementRequest freshGpuForShare(const PlacementRequest& request);

// Milli-GPU left on each share GPU among `shares`, in first-seen order.
[[nodiscard]] std::vector<std::pair<DeviceId, int>> shareRoom(const std::vector<GpuShare>& shares);
// The id for a system's next share: one more than the largest it has.
[[nodiscard]] int nextShareId(const std::vector<GpuShare>& bound);
// "#2 25% of sw0-gpu3"
[[nodiscard]] std::string describe(const GpuShare& share);

}  // namespace switchyard
