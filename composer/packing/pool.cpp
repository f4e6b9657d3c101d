#include "composer/packing/pool.h"

#include <algorithm>
#include <cassert>

namespace switchyard {

Pool::Pool(const Topology& topology) {
  TopologyIndex index(topology);
  std::unordered_map<std::string_view, int> switchIndex;
  for (const auto& sw : topology.switches) {
    switchIndex.emplace(sw.id, static_cast<int>(switches_.size()));
    PoolSwitch entry;
    entry.id = sw.id;
    entry.fabric = index.fabricOf(sw.id);
    auto domain = std::find(domains_.begin(), domains_.end(), sw.domain);
    if (domain == domains_.end()) domain = domains_.insert(domains_.end(), sw.domain);
    entry.domain = static_cast<int>(domain - domains_.begin());
    if (entry.fabric >= static_cast<int>(fabricSwitches_.size())) fabricSwitches_.resize(static_cast<std::size_t>(entry.fabric) + 1);
    if (entry.fabric >= 0) fabricSwitches_[static_cast<std::size_t>(entry.fabric)].push_back(static_cast<int>(switches_.size()));
    switches_.push_back(std::move(entry));
  }
  for (const auto& d : topology.devices) {
    const SwitchId* sw = index.switchOfDevice(d.id);
    const int s = sw ? switchIndex.at(*sw) : -1;
    const int i = static_cast<int>(devices_.size());
    devices_.push_back({d.id, s, d.kind, d.model, d.memoryGiB, d.health, true, d.migCapable, -1, -1, d.speedGbps, d.deviceClass});
    deviceByid_.emplace(d.id, i);
    if (s >= 0) {
      PoolSwitch& owner = switches_[static_cast<std::size_t>(s)];
      owner.freeDevices.push_back(i);
      if (isEndpointDevice(devices_.back())) owner.freeEndpointDevices.push_back(i);
      if (isFreeEndpoint(devices_.back())) ++owner.freeEndpoints;
      if (d.kind == DeviceKind::kGpu) {
        if (auto at = std::lower_bound(gpuModels_.begin(), gpuModels_.end(), d.model); at == gpuModels_.end() || *at != d.model)
          gpuModels_.insert(at, d.model);
        ++gpuCount_;
        PoolDevice& gpu = devices_.back();
        gpu.slot = static_cast<int>(owner.gpus.size());
        owner.gpus.push_back(i);
        auto& classes = owner.gpuClasses;
        auto it = std::find_if(classes.begin(), classes.end(), [&](const PoolGpuClass& c) {
          return c.model == d.model && c.memoryGiB == d.memoryGiB && c.migCapable == d.migCapable;
        });
        if (it == classes.end()) it = classes.insert(classes.end(), PoolGpuClass{d.model, d.memoryGiB, d.migCapable, 0});
        gpu.gpuClass = static_cast<int>(it - classes.begin());
        if (isFreeGpu(gpu)) {
          ++it->free;
          ++owner.freeGpus;
        }
      }
    }
    ++freeCount_;
  }
  for (const auto& h : topology.hosts) {
    PoolHost host{h.id, {}, h.maxDevices, 0, false};
    const int hostIndex = static_cast<int>(hosts_.size());
    for (const auto& usp : h.upstreamPorts) {
      const Port* p = index.port(usp.portId);
      const int s = p ? switchIndex.at(p->switchId) : -1;
      host.ports.push_back({usp.portId, s, usp.numaNode});
      if (s >= 0) {
        auto& cabled = switches_[static_cast<std::size_t>(s)].hosts;
        if (cabled.empty() || cabled.back() != hostIndex) cabled.push_back(hostIndex);
      }
    }
    hostById_.emplace(h.id, hostIndex);
    hosts_.push_back(std::move(host));
  }
  fabricHosts_.resize(fabricSwitches_.size());
  hostFabrics_.resize(hosts_.size());
  for (std::size_t h = 0; h < hosts_.size(); ++h)
    for (const auto& p : hosts_[h].ports) {
      const int f = p.switchIndex < 0 ? -1 : switches_[static_cast<std::size_t>(p.switchIndex)].fabric;
      auto& fabrics = hostFabrics_[h];
      if (f < 0 || std::find(fabrics.begin(), fabrics.end(), f) != fabrics.end()) continue;
      fabrics.push_back(f);
      fabricHosts_[static_cast<std::size_t>(f)].push_back(static_cast<int>(h));  // hosts ascending: h only grows
    }
}

namespace {
// Enough for a few thousand decisions between two requests of one shape; a cache older than that
// re-evaluates every host once.
constexpr std::size_t kChangeLogLimit = 8192;
}  // namespace

void Pool::logFabric(int fabric) {
  if (fabric < 0) return;
  if (changedFabrics_.size() >= kChangeLogLimit) {  // forget the older half: recent readers keep their place
    const std::size_t drop = kChangeLogLimit / 2;
    changedFabrics_.erase(changedFabrics_.begin(), changedFabrics_.begin() + static_cast<long>(drop));
    logStart_ += drop;
  }
  changedFabrics_.push_back(fabric);
}

void Pool::logHost(int hostIndex) {
  for (int f : hostFabrics(hostIndex)) logFabric(f);
}

std::optional<std::span<const int>> Pool::fabricsChangedSince(std::uint64_t position) const {
  if (position < logStart_ || position > changes()) return std::nullopt;
  return std::span<const int>(changedFabrics_).subspan(static_cast<std::size_t>(position - logStart_));
}

void Pool::setFree(int deviceIndex, bool free) {
  const PoolDevice& d = devices_.at(static_cast<std::size_t>(deviceIndex));
  setDevice(deviceIndex, free, d.health);
}

void Pool::setHealth(int deviceIndex, DeviceHealth health) {
  const PoolDevice& d = devices_.at(static_cast<std::size_t>(deviceIndex));
  setDevice(deviceIndex, d.free, health);
}

void Pool::setDevice(int deviceIndex, bool free, DeviceHealth health) {
  PoolDevice& d = devices_.at(static_cast<std::size_t>(deviceIndex));
  const bool wasFree = d.free, wasUsable = isFreeGpu(d), wasEndpoint = isFreeEndpoint(d);
  if (wasFree == free && d.health == health) return;
  d.free = free;
  d.health = health;
  if (d.switchIndex < 0) {
    if (wasFree != free) freeCount_ += free ? 1 : -1;
    return;
  }
  PoolSwitch& sw = switches_[static_cast<std::size_t>(d.switchIndex)];
  logFabric(sw.fabric);
  if (const bool usable = isFreeGpu(d); usable != wasUsable) {
    sw.gpuClasses[static_cast<std::size_t>(d.gpuClass)].free += usable ? 1 : -1;
    sw.freeGpus += usable ? 1 : -1;
  }
  if (const bool endpoint = isFreeEndpoint(d); endpoint != wasEndpoint) sw.freeEndpoints += endpoint ? 1 : -1;
  if (wasFree == free) return;
  freeCount_ += free ? 1 : -1;
  auto keep = [&](std::vector<int>& list) {
    auto it = std::lower_bound(list.begin(), list.end(), deviceIndex);
    if (free) {
      list.insert(it, deviceIndex);
    } else {
      assert(it != list.end() && *it == deviceIndex);
      list.erase(it);
    }
  };
  keep(sw.freeDevices);
  if (isEndpointDevice(d)) keep(sw.freeEndpointDevices);
}

void Pool::addAttached(int hostIndex, int delta) {
  hosts_.at(static_cast<std::size_t>(hostIndex)).attachedDevices += delta;
  logHost(hostIndex);
}

void Pool::setInSystem(int hostIndex, bool inSystem) {
  PoolHost& h = hosts_.at(static_cast<std::size_t>(hostIndex));
  if (h.inSystem == inSystem) return;
  h.inSystem = inSystem;
  logHost(hostIndex);
}

void Pool::setSilent(int hostIndex, bool silent) {
  PoolHost& h = hosts_.at(static_cast<std::size_t>(hostIndex));
  if (h.silent == silent) return;
  h.silent = silent;
  logHost(hostIndex);
}

int Pool::deviceIndex(std::string_view id) const {
  auto it = deviceByid_.find(std::string(id));
  return it == deviceByid_.end() ? -1 : it->second;
}

int Pool::hostIndex(std::string_view id) const {
  auto it = hostById_.find(std::string(id));
  return it == hostById_.end() ? -1 : it->second;
}

const PoolHostPort* portInto(const PoolHost& host, int switchIndex) {
  for (const auto& p : host.ports)
    if (p.switchIndex == switchIndex) return &p;
  return nullptr;
}

const PoolHostPort* portIntoFabric(const Pool& pool, const PoolHost& host, int fabric) {
  for (const auto& p : host.ports)
    if (p.switchIndex >= 0 && pool.switches()[static_cast<std::size_t>(p.switchIndex)].fabric == fabric) return &p;
  return nullptr;
}

}  // namespace switchyard
