#include "composer/engine/pool_state.h"

#include <algorithm>
#include <utility>

namespace switchyard {

PoolState::PoolState(Topology topology)
    : topology_(std::move(topology)), index_(std::make_unique<TopologyIndex>(topology_)), pool_(topology_) {}

DeviceAssignment PoolState::assignment(const DeviceId& device) const {
  auto it = assignments_.find(device);
  return it == assignments_.end() ? DeviceAssignment{device, DeviceAllocation::kFree, {}} : it->second.first;
}

void PoolState::assign(const DeviceAssignment& a, const HostId& hostId) {
  const int di = pool_.deviceIndex(a.deviceId);
  if (di < 0) return;
  changes_.devices.insert(a.deviceId);
  if (!hostId.empty()) changes_.hosts.insert(hostId);
  if (auto it = assignments_.find(a.deviceId); it != assignments_.end()) {
    if (const int hi = pool_.hostIndex(it->second.second); hi >= 0) pool_.addAttached(hi, -1);
    if (!it->second.second.empty()) changes_.hosts.insert(it->second.second);
    assignments_.erase(it);
  }
  if (a.allocation == DeviceAllocation::kFree) {
    pool_.setFree(di, true);
    return;
  }
  pool_.setFree(di, false);
  assignments_.emplace(a.deviceId, std::pair{a, hostId});
  if (const int hi = pool_.hostIndex(hostId); hi >= 0) pool_.addAttached(hi, 1);
}

void PoolState::setHealth(const DeviceId& device, DeviceHealth health) {
  const int di = pool_.deviceIndex(device);
  if (di < 0) return;
  pool_.setHealth(di, health);
  changes_.devices.insert(device);
  for (auto& d : topology_.devices)
    if (d.id == device) d.health = health;
}

std::pair<std::vector<HostId>, std::vector<HostId>> PoolState::setSilentHosts(const std::vector<HostId>& silent) {
  // O(silent hosts), not O(hosts): the engine asks every second, and at 100,000 GPUs there are ~6,000 hosts.
  std::vector<HostId> fell, back;
  std::set<int> now;
  for (const auto& h : silent)
    if (const int hi = pool_.hostIndex(h); hi >= 0) now.insert(hi);
  for (const int hi : now)
    if (!silent_.contains(hi)) {
      pool_.setSilent(hi, true);
      fell.push_back(pool_.hosts()[static_cast<std::size_t>(hi)].id);
    }
  for (const int hi : silent_)
    if (!now.contains(hi)) {
      pool_.setSilent(hi, false);
      back.push_back(pool_.hosts()[static_cast<std::size_t>(hi)].id);
    }
  silent_ = std::move(now);
  return {fell, back};
}

void PoolState::holdHost(const HostId& host, bool held) {
  changes_.hosts.insert(host);
  if (const int hi = pool_.hostIndex(host); hi >= 0) pool_.setInSystem(hi, held);
}

System* PoolState::system(const SystemId& id) {
  auto it = systems_.find(id);
  return it == systems_.end() ? nullptr : &it->second;
}

const System* PoolState::findSystem(std::string_view idOrName) const {
  if (auto it = systems_.find(std::string(idOrName)); it != systems_.end()) return &it->second;
  auto named = systemOfName_.find(std::string(idOrName));
  if (named == systemOfName_.end()) return nullptr;
  auto it = systems_.find(named->second);
  return it == systems_.end() ? nullptr : &it->second;
}

void PoolState::replaceHeld(const std::vector<System>& systems, const std::vector<DeviceAssignment>& held,
                            const std::unordered_map<std::string, HostId>& hostOfOwner) {
  std::set<SystemId> live;
  for (const auto& s : systems) live.insert(s.id);
  std::vector<System> gone;
  for (const auto& [id, s] : systems_)
    if (!live.contains(id)) gone.push_back(s);
  for (auto& s : gone) {
    s.state = SystemState::kDecomposed;
    putSystem(s);
  }
  for (const auto& s : systems) putSystem(s);
  std::set<DeviceId> stillHeld;
  for (const auto& a : held) stillHeld.insert(a.deviceId);
  std::vector<DeviceId> released;
  for (const auto& [device, holder] : assignments_)
    if (!stillHeld.contains(device)) released.push_back(device);
  for (const auto& device : released) assign({device, DeviceAllocation::kFree, {}}, {});
  for (const auto& a : held) {
    auto host = hostOfOwner.find(a.owner);
    assign(a, host == hostOfOwner.end() ? HostId{} : host->second);
  }
}

void PoolState::putSystem(const System& s) {
  const int hi = pool_.hostIndex(s.hostId);
  changes_.systems.insert(s.id);
  if (!s.hostId.empty()) changes_.hosts.insert(s.hostId);  // a queued system has no host yet
  if (auto old = systems_.find(s.id); old != systems_.end()) {
    for (const auto& b : old->second.bindings) {
      changes_.devices.insert(b.deviceId);
      if (auto it = systemOfDevice_.find(b.deviceId); it != systemOfDevice_.end() && it->second == s.id) systemOfDevice_.erase(it);
    }
    if (auto it = systemOfHost_.find(old->second.hostId); it != systemOfHost_.end() && it->second == s.id) systemOfHost_.erase(it);
    if (auto it = systemOfName_.find(old->second.name); it != systemOfName_.end() && it->second == s.id) systemOfName_.erase(it);
  }
  if (s.state == SystemState::kDecomposed || s.state == SystemState::kFailed) {
    systems_.erase(s.id);
    if (hi >= 0) pool_.setInSystem(hi, false);
    return;
  }
  systems_[s.id] = s;
  for (const auto& b : s.bindings) {
    changes_.devices.insert(b.deviceId);
    systemOfDevice_[b.deviceId] = s.id;
  }
  if (!s.hostId.empty()) systemOfHost_[s.hostId] = s.id;
  systemOfName_[s.name] = s.id;
  if (hi >= 0) pool_.setInSystem(hi, true);
}

const System* PoolState::systemOfHost(const HostId& host) const {
  auto it = systemOfHost_.find(host);
  if (it == systemOfHost_.end()) return nullptr;
  auto s = systems_.find(it->second);
  return s == systems_.end() ? nullptr : &s->second;
}

DeviceView PoolState::deviceView(const DeviceId& id) const {
  DeviceView v;
  if (const Device* d = index_->device(id)) v.device = *d;
  v.device.id = id;
  if (const SwitchId* sw = index_->switchOfDevice(id)) v.switchId = *sw;
  v.assignment = assignment(id);
  if (auto it = assignments_.find(id); it != assignments_.end()) v.hostId = it->second.second;
  if (auto it = systemOfDevice_.find(id); it != systemOfDevice_.end())
    if (auto s = systems_.find(it->second); s != systems_.end()) {
      v.systemId = s->second.id;
      v.hostId = s->second.hostId;
      for (const auto& b : s->second.bindings)
        if (b.deviceId == id) v.upstreamPortId = b.upstreamPortId;
    }
  return v;
}

HostSlot PoolState::hostSlot(const HostId& host) const {
  HostSlot slot;
  if (const System* s = systemOfHost(host)) slot.systemId = s->id;
  if (const int hi = pool_.hostIndex(host); hi >= 0) slot.attachedDevices = pool_.hosts()[static_cast<std::size_t>(hi)].attachedDevices;
  return slot;
}

}  // namespace switchyard
