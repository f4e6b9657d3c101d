#include "composer/packing/endpoint_choice.h"

#include <fmt/format.h>

#include <algorithm>

namespace switchyard {

bool isEligibleEndpoint(const PoolDevice& d, const EndpointDemand& demand) {
  return d.free && d.kind == demand.kind && d.deviceClass == demand.deviceClass && d.health != DeviceHealth::kCritical &&
         (demand.model.empty() || d.model == demand.model) &&
         d.memoryGiB >= demand.minCapacityGiB && d.speedGbps >= demand.minSpeedGbps;
}

namespace {

// The switches a host reaches: its direct ones in port order, then the others of its fabrics.
std::vector<int> reachedSwitches(const Pool& pool, const PoolHost& host, int hostIndex) {
  std::vector<int> out;
  for (const auto& p : host.ports)
    if (p.switchIndex >= 0 && std::find(out.begin(), out.end(), p.switchIndex) == out.end()) out.push_back(p.switchIndex);
  for (const int f : pool.hostFabrics(hostIndex))
    for (const int s : pool.fabricSwitches()[static_cast<std::size_t>(f)])
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  return out;
}

struct SwitchSupply {
  int switchIndex = -1;
  int gpus = 0;               // the request's GPUs under it
  std::vector<int> devices;   // eligible, smallest capacity first
  std::size_t next = 0;       // devices[next] is the next to take
  int taken = 0;
  [[nodiscard]] int left() const { return static_cast<int>(devices.size() - next); }
};

}  // namespace

bool servesUnder(const Pool& pool, int switchIndex, std::span<const EndpointDemand> demands) {
  const auto& free = pool.switches()[static_cast<std::size_t>(switchIndex)].freeEndpointDevices;
  return std::all_of(demands.begin(), demands.end(), [&](const EndpointDemand& d) {
    return std::count_if(free.begin(), free.end(), [&](int i) { return isEligibleEndpoint(pool.devices()[static_cast<std::size_t>(i)], d); }) >= d.count;
  });
}

EndpointSupply endpointSupply(const Pool& pool, int hostIndex, const std::vector<int>& gpuSwitches, const EndpointDemand& demand, int enough) {
  // The switches a host reaches are those of the fabrics it has a port into (its direct ones among them).
  EndpointSupply out;
  const bool farServes = demand.affinity == Affinity::kDomain || gpuSwitches.empty();
  for (const int f : pool.hostFabrics(hostIndex))
    for (const int s : pool.fabricSwitches()[static_cast<std::size_t>(f)]) {
      if (pool.switches()[static_cast<std::size_t>(s)].freeEndpoints == 0) continue;  // nothing there to count
      const bool near = std::find(gpuSwitches.begin(), gpuSwitches.end(), s) != gpuSwitches.end();
      if (enough > 0 && !near && !farServes) continue;
      int& n = near ? out.near : out.far;
      for (const int i : pool.switches()[static_cast<std::size_t>(s)].freeEndpointDevices) {
        if (!isEligibleEndpoint(pool.devices()[static_cast<std::size_t>(i)], demand)) continue;
        ++n;
        if (enough > 0 && out.near + (farServes ? out.far : 0) >= enough) return out;
      }
    }
  return out;
}

int reachableEndpoints(const Pool& pool, int hostIndex, const EndpointDemand& demand) {
  const PoolHost& host = pool.hosts()[static_cast<std::size_t>(hostIndex)];
  int n = 0;
  for (const int s : reachedSwitches(pool, host, hostIndex))
    for (const int i : pool.switches()[static_cast<std::size_t>(s)].freeEndpointDevices)
      if (isEligibleEndpoint(pool.devices()[static_cast<std::size_t>(i)], demand)) ++n;
  return n;
}

std::optional<std::vector<int>> chooseEndpoints(const Pool& pool, int hostIndex, const std::vector<int>& gpuSwitches,
                                                const EndpointDemand& demand, int slots, const std::vector<DeviceId>& taken,
                                                std::string* why) {
  const PoolHost& host = pool.hosts()[static_cast<std::size_t>(hostIndex)];
  // The smallest that meets the demand first: a drive's size, a NIC's speed (the larger ones stay for those who ask for them).
  const auto capacity = [&](int i) {
    const PoolDevice& d = pool.devices()[static_cast<std::size_t>(i)];
    return std::pair(d.memoryGiB, d.speedGbps);
  };
  std::vector<SwitchSupply> near, far;
  for (const int s : reachedSwitches(pool, host, hostIndex)) {
    SwitchSupply supply{s, static_cast<int>(std::count(gpuSwitches.begin(), gpuSwitches.end(), s)), {}, 0, 0};
    for (const int i : pool.switches()[static_cast<std::size_t>(s)].freeEndpointDevices) {
      const PoolDevice& d = pool.devices()[static_cast<std::size_t>(i)];
      if (isEligibleEndpoint(d, demand) && std::find(taken.begin(), taken.end(), d.id) == taken.end()) supply.devices.push_back(i);
    }
    std::stable_sort(supply.devices.begin(), supply.devices.end(), [&](int a, int b) { return capacity(a) < capacity(b); });
    (supply.gpus > 0 ? near : far).push_back(std::move(supply));
  }
  const bool farAllowed = demand.affinity == Affinity::kDomain || gpuSwitches.empty();
  std::vector<int> chosen;
  while (static_cast<int>(chosen.size()) < demand.count) {
    SwitchSupply* from = nullptr;
    // Near the GPUs: the switch whose GPUs have the fewest of these per GPU so far (gpus / (taken + 1) highest).
    for (auto& s : near)
      if (s.left() > 0 && (!from || static_cast<long>(s.gpus) * (from->taken + 1) > static_cast<long>(from->gpus) * (s.taken + 1))) from = &s;
    // Elsewhere: the switch with the most left, so none is emptied of its only one while others have spares.
    if (!from && farAllowed)
      for (auto& s : far)
        if (s.left() > 0 && (!from || s.left() > from->left())) from = &s;
    if (!from) break;
    chosen.push_back(from->devices[from->next++]);
    ++from->taken;
  }
  if (static_cast<int>(chosen.size()) < demand.count || static_cast<int>(chosen.size()) > slots) {
    if (why) {
      int nearFree = 0, farFree = 0;
      for (const auto& s : near) nearFree += static_cast<int>(s.devices.size());
      for (const auto& s : far) farFree += static_cast<int>(s.devices.size());
      if (static_cast<int>(chosen.size()) < demand.count)
        *why = gpuSwitches.empty() ? fmt::format("reaches {} free", nearFree + farFree)
                                   : fmt::format("{} free under its GPUs' switches, {} elsewhere it reaches{}", nearFree, farFree,
                                                 farAllowed ? "" : " (affinity switch)");
      else
        *why = fmt::format("device limit: room for {} more", slots);
    }
    return std::nullopt;
  }
  return chosen;
}

}  // namespace switchyard
