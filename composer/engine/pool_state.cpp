#include "composer/engine/pool_state.h"

#include <algorithm>

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
  if (auto it = assignments_.find(a.deviceId); it != assignments_.end()) {
    if (const int hi = pool_.hostIndex(it->second.second); hi >= 0) pool_.addAttached(hi, -1);
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
  for (auto& d : topology_.devices)
    if (d.id == device) d.health = health;
}

void PoolState::holdHost(const HostId& host, bool held) {
  if (const int hi = pool_.hostIndex(host); hi >= 0) pool_.setInSystem(hi, held);
}

System* PoolState::system(const SystemId& id) {
  auto it = systems_.find(id);
  return it == systems_.end() ? nullptr : &it->second;
}

const System* PoolState::findSystem(std::string_view idOrName) const {
  if (auto it = systems_.find(std::string(idOrName)); it != systems_.end()) return &it->second;
  for (const auto& [id, s] : systems_)
    if (s.name == idOrName) return &s;
  return nullptr;
}

void PoolState::putSystem(const System& s) {
  const int hi = pool_.hostIndex(s.hostId);
  if (s.state == SystemState::kDecomposed || s.state == SystemState::kFailed) {
    systems_.erase(s.id);
    if (hi >= 0) pool_.setInSystem(hi, false);
    return;
  }
  systems_[s.id] = s;
  if (hi >= 0) pool_.setInSystem(hi, true);
}

const System* PoolState::systemOfHost(const HostId& host) const {
  for (const auto& [id, s] : systems_)
    if (s.hostId == host) return &s;
  return nullptr;
}

}  // namespace switchyard
