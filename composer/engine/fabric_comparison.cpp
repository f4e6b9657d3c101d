#include "composer/engine/fabric_comparison.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <unordered_map>

#include "composer/engine/reservation.h"

namespace switchyard {

FabricComparison compareWithFabric(const PoolState& state, const std::vector<Binding>& fabricBindings, Timestamp now) {
  FabricComparison out;
  std::unordered_map<DeviceId, PortId> fabric;
  for (const auto& b : fabricBindings) fabric.emplace(b.deviceId, b.upstreamPortId);
  auto report = [&](std::string kind, const DeviceId& device, std::string message) { out.drifts.push_back({std::move(kind), device, std::move(message)}); };

  // Devices an operation is changing right now are not drift; leave them to the operation.
  std::set<DeviceId> expected;
  std::set<DeviceId> busy;
  // (A device a composition reservation holds is not being changed: a binding of it is drift.)
  for (const auto& [device, held] : state.assignments())
    if (held.first.allocation == DeviceAllocation::kReserved && !isReservationId(held.first.owner)) busy.insert(device);

  for (const auto& [id, system] : state.systems()) {
    for (const auto& b : system.bindings) {
      expected.insert(b.deviceId);
      if (!system.activeOperation.empty()) busy.insert(b.deviceId);
    }
    if (!system.activeOperation.empty()) continue;
    bool degraded = false;
    std::vector<std::string> why;  // for the system's reason: what the fabric says of its devices
    for (const auto& b : system.bindings) {
      auto it = fabric.find(b.deviceId);
      if (it == fabric.end()) {
        degraded = true;
        why.push_back(fmt::format("{} is {} the fabric", b.deviceId, state.index().device(b.deviceId) ? "unbound in" : "not in"));
        report("missing-binding", b.deviceId,
               fmt::format("{} is in system {} ({}) bound to {}, but the fabric reports it unbound", b.deviceId, system.name, id, b.upstreamPortId));
      } else if (it->second != b.upstreamPortId) {
        degraded = true;
        why.push_back(fmt::format("{} is on {} in the fabric, not {}", b.deviceId, it->second, b.upstreamPortId));
        report("wrong-port", b.deviceId,
               fmt::format("{} is in system {} ({}) bound to {}, but the fabric has it on {}", b.deviceId, system.name, id, b.upstreamPortId, it->second));
      }
    }
    const SystemState next = degraded ? SystemState::kDegraded : (system.state == SystemState::kDegraded ? SystemState::kComposed : system.state);
    const std::string reason = degraded ? fmt::format("{}", fmt::join(why, "; ")) : std::string();
    if (next == system.state && reason == system.stateReason) continue;
    System updated = system;
    updated.state = next;
    updated.stateReason = reason;  // said on the system too, not only in the event
    updated.updatedAt = now;
    out.systems.push_back({std::move(updated), next != system.state});
  }

  for (const auto& [device, port] : fabric) {
    if (expected.contains(device) || busy.contains(device)) continue;
    report("unexpected-binding", device, fmt::format("{} is bound to {} in the fabric but to no system; quarantined until it is unbound", device, port));
    DeviceAssignment q{device, DeviceAllocation::kQuarantined, fmt::format("bound to {} outside Switchyard", port)};
    if (state.assignment(device).owner != q.owner) out.quarantine.push_back(std::move(q));
  }
  for (const auto& [device, held] : state.assignments())
    if (held.first.allocation == DeviceAllocation::kQuarantined && !awaitsOperator(held.first) && !fabric.contains(device) && !expected.contains(device))
      out.freed.push_back(device);
  return out;
}

}  // namespace switchyard
