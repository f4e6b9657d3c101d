// A request's eligible free GPUs per switch, counted from the pool's GPU classes (composable_model.h).
#include <algorithm>

#include "composer/packing/composable_model.h"

namespace switchyard {

EligibleDevices::EligibleDevices(const Pool& pool, const PlacementRequest& request)
    : pool_(&pool),
      model_(request.model),
      minMemoryGiB_(request.minMemoryGiB),
      migCapable_(request.migCapable),
      counts_(pool.switches().size(), kUnknown) {}

std::size_t EligibleDevices::countOn(int switchIndex) const {
  const PoolSwitch& sw = pool_->switches()[static_cast<std::size_t>(switchIndex)];
  if (model_.empty() && minMemoryGiB_ <= 0 && !migCapable_) return static_cast<std::size_t>(sw.freeGpus);
  std::size_t n = 0;
  for (const PoolGpuClass& c : sw.gpuClasses)
    if (asked(c)) n += static_cast<std::size_t>(c.free);
  return n;
}

const std::vector<int>& EligibleDevices::devices(int switchIndex) {
  auto [it, added] = devices_.try_emplace(switchIndex);
  auto& list = it->second;
  if (!added) return list;
  list.reserve(count(switchIndex));
  for (int d : pool_->switches()[static_cast<std::size_t>(switchIndex)].freeDevices) {
    const PoolDevice& dev = pool_->devices()[static_cast<std::size_t>(d)];
    if (isFreeGpu(dev) && asked(dev)) list.push_back(d);
  }
  return list;
}

const std::vector<int>& EligibleDevices::byCount(int fabric) {
  auto [it, added] = byCount_.try_emplace(fabric);
  auto& list = it->second;
  if (!added) return list;
  for (int s : pool_->fabricSwitches()[static_cast<std::size_t>(fabric)])
    if (count(s) > 0) list.push_back(s);
  std::stable_sort(list.begin(), list.end(), [&](int a, int b) { return count(a) > count(b); });
  return list;
}

}  // namespace switchyard
