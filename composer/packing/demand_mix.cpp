#include "composer/packing/demand_mix.h"

#include "composer/packing/gpu_instances.h"
#include "composer/packing/packing.h"
#include "composer/packing/pool.h"

namespace switchyard {

std::optional<DemandShape> demandShapeOf(const PlacementRequest& r) {
  if (!r.devices.empty()) return std::nullopt;
  if (!r.gpuInstances.empty()) {
    // MIG instances share GPUs but need no peer-to-peer between them.
    const auto fresh = planGpuInstances({}, r.gpuInstances).onFresh.size();
    return DemandShape{static_cast<int>(fresh), false, r.model};
  }
  if (r.gpuCount <= 0) return std::nullopt;
  return DemandShape{r.gpuCount, r.peerToPeer != PeerToPeer::kNone, r.model};
}

void DemandTracker::observe(const PlacementRequest& request, Pool& pool) {
  if (const auto shape = demandShapeOf(request)) observe(*shape, pool);
}

void DemandTracker::observe(const DemandShape& shape, Pool& pool) {
  if (learner_.observe(shape)) pool.setDemand(std::make_shared<const DemandMix>(learner_.mix()));
}

void DemandTracker::replay(const std::vector<DemandShape>& shapes, Pool& pool) {
  bool changed = false;
  for (const auto& s : shapes) changed = learner_.observe(s) || changed;
  changed = learner_.settle() || changed;
  if (changed) pool.setDemand(std::make_shared<const DemandMix>(learner_.mix()));
}

}  // namespace switchyard
