#include "composer/packing/pooled_memory.h"

#include <algorithm>
#include <numeric>

namespace switchyard {

ReachableMemory reachableMemory(const Pool& pool, int hostIndex, const std::vector<DeviceId>& taken) {
  ReachableMemory out;
  const PoolHost& host = pool.hosts()[static_cast<std::size_t>(hostIndex)];
  std::vector<int> switches;
  for (const auto& p : host.ports)
    if (p.switchIndex >= 0 && std::find(switches.begin(), switches.end(), p.switchIndex) == switches.end()) switches.push_back(p.switchIndex);
  for (const int s : switches)
    for (const int i : pool.switches()[static_cast<std::size_t>(s)].freeDevices) {
      const PoolDevice& d = pool.devices()[static_cast<std::size_t>(i)];
      if (d.kind != DeviceKind::kCxlMemory || !d.free || d.health != DeviceHealth::kOk || d.memoryGiB <= 0) continue;
      if (std::find(taken.begin(), taken.end(), d.id) != taken.end()) continue;
      out.devices.push_back(i);
      out.gib += d.memoryGiB;
    }
  return out;
}

std::optional<std::vector<int>> choosePooledMemory(const Pool& pool, int hostIndex, int gib, int slots, const std::vector<DeviceId>& taken) {
  if (gib <= 0) return std::vector<int>{};
  auto candidates = reachableMemory(pool, hostIndex, taken).devices;
  auto size = [&](int i) { return pool.devices()[static_cast<std::size_t>(i)].memoryGiB; };
  std::stable_sort(candidates.begin(), candidates.end(), [&](int a, int b) { return size(a) > size(b); });
  // The fewest devices: the largest first, until they cover the request.
  std::vector<int> chosen;
  int sum = 0;
  for (const int i : candidates) {
    if (sum >= gib) break;
    chosen.push_back(i);
    sum += size(i);
  }
  if (sum < gib || static_cast<int>(chosen.size()) > slots) return std::nullopt;
  // Then less left over: swap a chosen device for a smaller unchosen one while the request stays covered.
  std::vector<int> rest(candidates.begin() + static_cast<std::ptrdiff_t>(chosen.size()), candidates.end());
  std::reverse(rest.begin(), rest.end());  // ascending: the smallest that still covers comes first
  for (bool improved = true; improved;) {
    improved = false;
    for (auto& c : chosen)
      for (auto& r : rest)
        if (size(r) < size(c) && sum - size(c) + size(r) >= gib) {
          sum += size(r) - size(c);
          std::swap(c, r);
          std::sort(rest.begin(), rest.end(), [&](int a, int b) { return size(a) < size(b); });
          improved = true;
          break;
        }
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

}  // namespace switchyard
