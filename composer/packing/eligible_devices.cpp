// A request's eligible free GPUs per switch, counted from the pool's GPU classes (composable_model.h).
#include <algorithm>

#include "composer/packing/composable_model.h"

namespace switchyard {

EligibleDevices::EligibleDevices(const Pool& pool, const PlacementRequest& request)
    : pool_(&pool), model_(request.model), minMemoryGiB_(request.minMemoryGiB), migCapable_(request.migCapable) {
  const std::size_t switches = pool.switches().size();
  counts_.resize(switches);
  devices_.resize(switches);
  listed_.assign(switches, 0);
  byCount_.resize(pool.fabricSwitches().size());
  sorted_.assign(pool.fabricSwitches().size(), 0);
  const bool any = model_.empty() && minMemoryGiB_ <= 0 && !migCapable_;
  for (std::size_t s = 0; s < switches; ++s) {
    const PoolSwitch& sw = pool.switches()[s];
    if (any) {
      counts_[s] = static_cast<std::size_t>(sw.freeGpus);
      continue;
    }
    for (const PoolGpuClass& c : sw.gpuClasses)
      if ((model_.empty() || c.model == model_) && c.memoryGiB >= minMemoryGiB_ && (!migCapable_ || c.migCapable))
        counts_[s] += static_cast<std::size_t>(c.free);
  }
}

const std::vector<int>& EligibleDevices::devices(int switchIndex) {
  const auto s = static_cast<std::size_t>(switchIndex);
  auto& list = devices_[s];
  if (listed_[s]) return list;
  listed_[s] = 1;
  list.reserve(counts_[s]);
  for (int d : pool_->switches()[s].freeDevices) {
    const PoolDevice& dev = pool_->devices()[static_cast<std::size_t>(d)];
    if (isFreeGpu(dev) && (model_.empty() || dev.model == model_) && dev.memoryGiB >= minMemoryGiB_ && (!migCapable_ || dev.migCapable))
      list.push_back(d);
  }
  return list;
}

const std::vector<int>& EligibleDevices::byCount(int fabric) {
  const auto f = static_cast<std::size_t>(fabric);
  auto& list = byCount_[f];
  if (sorted_[f]) return list;
  sorted_[f] = 1;
  for (int s : pool_->fabricSwitches()[f])
    if (counts_[static_cast<std::size_t>(s)] > 0) list.push_back(s);
  std::stable_sort(list.begin(), list.end(), [&](int a, int b) { return count(a) > count(b); });
  return list;
}

}  // namespace switchyard
