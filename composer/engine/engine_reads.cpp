// The engine's reads: plans and capacity, systems, devices, hosts, the topology, operations, events and
// the audit trail. Each runs on the control thread (onControl) and answers from memory or the store;
// none waits for a switch.
#include <fmt/format.h>

#include <unordered_map>

#include "composer/engine/engine.h"
#include "composer/engine/engine_control.h"
#include "composer/packing/gpu_shares.h"

namespace switchyard {

Result<std::vector<AuditRecord>> Engine::listAudit(const AuditQuery& query) {
  return onControl([&]() -> Result<std::vector<AuditRecord>> { return store_.listAudit(query); });
}

Result<PlacementDecision> Engine::plan(const PlacementRequest& request) {
  return onControl([&]() -> Result<PlacementDecision> {
    if (request.gpuShareMilli == 0) return place(*placement_, state_->pool(), request, &state_->placementIndex());
    // A new system's share always takes a fresh GPU.
    SY_TRY(validateShareRequest(request));
    return place(*placement_, state_->pool(), freshGpuForShare(request), &state_->placementIndex());
  });
}

Result<CapacityReport> Engine::capacity(const std::vector<RequestShape>& shapes, const std::vector<MigProfile>& migProfiles,
                                        const std::vector<int>& shareMilli) {
  return onControl([&]() -> Result<CapacityReport> {
    CapacityQuery query{shapes, migProfiles, {}, shareMilli, {}};
    for (const auto& [id, system] : state_->systems()) {
      query.gpuInstances.insert(query.gpuInstances.end(), system.gpuInstances.begin(), system.gpuInstances.end());
      query.gpuShares.insert(query.gpuShares.end(), system.gpuShares.begin(), system.gpuShares.end());
    }
    return usableCapacity(*placement_, state_->pool(), query);
  });
}

Result<System> Engine::getSystem(const std::string& idOrName) {
  return onControl([&]() -> Result<System> {
    const System* s = state_->findSystem(idOrName);
    if (!s) return fail(Code::kNotFound, fmt::format("no system '{}' (see `yardctl systems`)", idOrName));
    return withProgress(*s);
  });
}

System Engine::withProgress(System s) const {
  s.progress.clear();
  auto it = s.activeOperation.empty() ? active_.end() : active_.find(s.activeOperation);
  if (it == active_.end()) return s;
  const Operation& op = it->second;
  const std::size_t i = op.cursor();
  if (i == op.steps.size()) return s;
  const std::string_view activity = kindOf(op.steps[i]).activity();
  if (op.state == OperationState::kRollingBack)
    s.progress = activity.empty() ? "rolling back" : fmt::format("rolling back: {}", activity);
  else
    s.progress = std::string(activity);
  return s;
}

Result<std::vector<System>> Engine::listSystems() {
  return onControl([&]() -> Result<std::vector<System>> {
    std::vector<System> out;
    for (const auto& [id, s] : state_->systems()) out.push_back(withProgress(s));
    return out;
  });
}

Result<std::vector<DeviceView>> Engine::listDevices() {
  return onControl([&]() -> Result<std::vector<DeviceView>> {
    std::unordered_map<DeviceId, std::pair<const System*, PortId>> inSystem;
    for (const auto& [id, s] : state_->systems())
      for (const auto& b : s.bindings) inSystem[b.deviceId] = {&s, b.upstreamPortId};
    std::vector<DeviceView> out;
    for (const auto& d : state_->topology().devices) {
      DeviceView v{d, {}, state_->assignment(d.id), {}, {}, {}};
      if (const SwitchId* sw = state_->index().switchOfDevice(d.id)) v.switchId = *sw;
      if (auto it = state_->assignments().find(d.id); it != state_->assignments().end()) v.hostId = it->second.second;
      if (auto it = inSystem.find(d.id); it != inSystem.end()) {
        v.systemId = it->second.first->id;
        v.hostId = it->second.first->hostId;
        v.upstreamPortId = it->second.second;
      }
      out.push_back(std::move(v));
    }
    return out;
  });
}

Result<DeviceView> Engine::getDevice(const DeviceId& id) {
  return onControl([&]() -> Result<DeviceView> {
    const Device* d = state_->index().device(id);
    if (!d) return fail(Code::kNotFound, fmt::format("no device '{}' (see `yardctl devices`)", id));
    DeviceView v{*d, {}, state_->assignment(id), {}, {}, {}};
    if (const SwitchId* sw = state_->index().switchOfDevice(id)) v.switchId = *sw;
    if (auto it = state_->assignments().find(id); it != state_->assignments().end()) v.hostId = it->second.second;
    if (v.assignment.allocation == DeviceAllocation::kAllocated) {
      if (const System* s = state_->findSystem(v.assignment.owner)) {
        v.systemId = s->id;
        v.hostId = s->hostId;
        for (const auto& b : s->bindings)
          if (b.deviceId == id) v.upstreamPortId = b.upstreamPortId;
      }
    }
    return v;
  });
}

Result<std::vector<HostView>> Engine::listHosts() {
  return onControl([&]() -> Result<std::vector<HostView>> {
    std::vector<HostView> out;
    for (const auto& h : state_->topology().hosts) {
      HostView v{h, {}, {}, 0, HostPolicy::kTrustFabric, ""};
      if (hosts_ != nullptr) {
        v.policy = hosts_->policy(h.id);
        v.hostSide = hosts_->status(h.id);
      } else if (replica_) {
        v.hostSide = "standby: the leader serves host sides";  // policies live in the leader's flags and agents
      }
      for (const auto& u : h.upstreamPorts) {
        const Port* port = state_->index().port(u.portId);
        v.upstreamSwitches.push_back(port ? port->switchId : SwitchId{});
      }
      if (const System* s = state_->systemOfHost(h.id)) v.systemId = s->id;
      for (const auto& [id, r] : reservations_)
        for (const auto& held : r.systems)
          if (held.placement.hostId == h.id) v.reservationId = id;
      v.attachedDevices = state_->pool().hosts()[static_cast<std::size_t>(state_->pool().hostIndex(h.id))].attachedDevices;
      out.push_back(std::move(v));
    }
    return out;
  });
}

Result<Topology> Engine::topology() {
  return onControl([&]() -> Result<Topology> { return state_->topology(); });
}

Result<Operation> Engine::getOperation(const OperationId& id) {
  return onControl([&]() -> Result<Operation> {
    if (auto it = active_.find(id); it != active_.end()) return it->second;
    SY_ASSIGN(auto stored, store_.getOperation(id));
    if (!stored) return fail(Code::kNotFound, fmt::format("no operation '{}' (see `yardctl ops`)", id));
    return *stored;
  });
}

Result<std::vector<Operation>> Engine::listOperations(std::size_t limit) {
  return onControl([&]() -> Result<std::vector<Operation>> {
    SY_ASSIGN(auto ops, store_.listOperations(limit));
    for (auto& op : ops)
      if (auto it = active_.find(op.id); it != active_.end()) op = it->second;
    return ops;
  });
}

Result<std::optional<Operation>> Engine::operationForRequest(const Caller& caller, const std::string& requestId) {
  return onControl([&]() -> Result<std::optional<Operation>> {
    if (requestId.empty()) return std::optional<Operation>{};
    std::optional<Operation> found;
    for (const auto& [id, op] : active_)
      if (op.requestId == requestId) found = op;
    if (!found) {
      SY_ASSIGN(found, store_.findOperationByRequest(requestId));
    }
    if (found && !maySee(caller, found->tenant)) found.reset();
    return found;
  });
}

Result<std::vector<Event>> Engine::recentEvents(std::size_t limit) {
  return onControl([&]() -> Result<std::vector<Event>> {
    return store_.listEvents(lastEventSequence_ > limit ? lastEventSequence_ - limit : 0, limit);
  });
}

Result<std::vector<Event>> Engine::listEvents(std::uint64_t afterSequence, std::size_t limit) {
  return onControl([&]() -> Result<std::vector<Event>> { return store_.listEvents(afterSequence, limit); });
}

}  // namespace switchyard
