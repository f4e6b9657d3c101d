#include "composer/packing/pool.h"

#include <algorithm>
#include <cassert>

namespace switchyard {

Pool::Pool(const Topology& topology) {
  TopologyIndex index(topology);
  std::unordered_map<std::string_view, int> switchIndex;
  for (const auto& sw : topology.switches) {
    switchIndex.emplace(sw.id, static_cast<int>(switches_.size()));
    switches_.push_back({sw.id, index.fabricOf(sw.id), {}, {}});
  }
  for (const auto& d : topology.devices) {
    const SwitchId* sw = index.switchOfDevice(d.id);
    const int s = sw ? switchIndex.at(*sw) : -1;
    const int i = static_cast<int>(devices_.size());
    devices_.push_back({d.id, s, d.kind, d.model, d.memoryGiB, d.health, true, d.migCapable, -1});
    deviceByid_.emplace(d.id, i);
    if (s >= 0) {
      PoolSwitch& owner = switches_[static_cast<std::size_t>(s)];
      owner.freeDevices.push_back(i);
      if (d.kind == DeviceKind::kGpu) {
        devices_.back().slot = static_cast<int>(owner.gpus.size());
        owner.gpus.push_back(i);
      }
    }
    ++freeCount_;
  }
  for (const auto& h : topology.hosts) {
    PoolHost host{h.id, {}, h.maxDevices, 0, false};
    for (const auto& usp : h.upstreamPorts) {
      const Port* p = index.port(usp.portId);
      host.ports.push_back({usp.portId, p ? switchIndex.at(p->switchId) : -1, usp.numaNode});
    }
    hostById_.emplace(h.id, static_cast<int>(hosts_.size()));
    hosts_.push_back(std::move(host));
  }
}

void Pool::setFree(int deviceIndex, bool free) {
  PoolDevice& d = devices_.at(static_cast<std::size_t>(deviceIndex));
  if (d.free == free) return;
  d.free = free;
  freeCount_ += free ? 1 : -1;
  if (d.switchIndex < 0) return;
  auto& list = switches_[static_cast<std::size_t>(d.switchIndex)].freeDevices;
  auto it = std::lower_bound(list.begin(), list.end(), deviceIndex);
  if (free) {
    list.insert(it, deviceIndex);
  } else {
    assert(it != list.end() && *it == deviceIndex);
    list.erase(it);
  }
}

void Pool::setHealth(int deviceIndex, DeviceHealth health) { devices_.at(static_cast<std::size_t>(deviceIndex)).health = health; }

void Pool::addAttached(int hostIndex, int delta) { hosts_.at(static_cast<std::size_t>(hostIndex)).attachedDevices += delta; }

void Pool::setInSystem(int hostIndex, bool inSystem) { hosts_.at(static_cast<std::size_t>(hostIndex)).inSystem = inSystem; }

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
