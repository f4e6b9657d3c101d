// Forgetting a system (`yardctl systems forget`, issue 63): the way out for a system whose devices no fabric
// knows any more, such as one left behind when a store was taken over by another fabric (--adopt-fabric) or a
// chassis left the pool for good. Decompose cannot end such a system (there is nothing to unbind and no host
// step can reach the devices), so it stayed degraded forever. Only an admin may forget, only a system none of
// whose devices the fabric reports, and only while nothing runs on it; every attempt is audited.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "composer/engine/engine.h"

namespace switchyard {

Result<System> EngineCore::forgetSystem(const Caller& caller, const std::string& idOrName) {
  if (!inTask()) return answerFromTask("forget", [&](EngineCore& core) { return core.forgetSystem(caller, idOrName); });
  SY_TRY(engine_.checkAccepting());
  const System* found = engine_.state_->findSystem(idOrName);
  if (!found || !maySee(caller, found->tenant)) return fail(Code::kNotFound, fmt::format("no system '{}' (see `yardctl systems`)", idOrName));
  const System system = *found;
  Mutation m;
  auto audit = [&](std::string result, std::string message) {
    AuditRecord record{0, engine_.clock_.now(), caller, "forget", system.name, system.tenant, std::move(result), std::move(message)};
    record.sequence = engine_.numbers_.nextAudit();
    m.writes.emplace_back(PutAudit{std::move(record)});
  };
  auto refuse = [&](Code code, std::string why) -> Result<System> {
    audit(std::string(codeName(code)), why);
    if (auto persisted = engine_.persist(m); !persisted) return fail(persisted.error());
    return fail(code, std::move(why));
  };
  if (caller.role != Role::kAdmin)
    return refuse(Code::kPermissionDenied,
                  fmt::format("'{}' may not forget systems: that needs the admin role (forgetting drops yardd's record of devices)", caller.identity));
  if (system.state == SystemState::kQueued)
    return refuse(Code::kFailedPrecondition,
                  fmt::format("system '{}' is queued and holds nothing: `yardctl queue cancel {}` takes it out", system.name, system.name));
  if (!system.activeOperation.empty())
    return refuse(Code::kFailedPrecondition,
                  fmt::format("system '{}' is busy with {}: let it finish first (`yardctl ops wait {}`)", system.name, system.activeOperation,
                              system.activeOperation));
  std::vector<DeviceId> known;
  for (const auto& b : system.bindings)
    if (engine_.state_->index().device(b.deviceId) != nullptr) known.push_back(b.deviceId);
  if (!known.empty())
    return refuse(Code::kFailedPrecondition,
                  fmt::format("the fabric still reports {} of system '{}' ({}): `yardctl decompose {}` releases them safely; forget is only for "
                              "a system whose devices no fabric knows",
                              known.size() == system.bindings.size() ? "every device" : fmt::format("{} device(s)", known.size()),
                              system.name, fmt::join(known, ", "), system.name));

  System forgotten = system;
  forgotten.state = SystemState::kDecomposed;
  forgotten.stateReason = fmt::format("forgotten by {}: the fabric reports none of its {} device(s)", caller.identity, system.bindings.size());
  forgotten.bindings.clear();
  forgotten.hostDevices.clear();
  forgotten.gpuInstances.clear();
  forgotten.gpuShares.clear();
  forgotten.leaseExpiresAt = 0;
  forgotten.updatedAt = engine_.clock_.now();
  std::vector<DeviceId> devices;
  for (const auto& b : system.bindings) devices.push_back(b.deviceId);
  m.writes.emplace_back(PutSystem{forgotten});
  const std::string listed = devices.empty() ? "(none)" : fmt::format("{}", fmt::join(devices, ", "));
  m.events.push_back(engine_.makeEvent(
      "system.forgotten", system.id,
      fmt::format("{} ({}) forgotten by {}: its device(s) {} are not in the fabric; nothing was unbound", system.name, system.id,
                  caller.identity, listed),
      caller.identity));
  audit("accepted", fmt::format("forgot {} device(s) no fabric reports: {}", devices.size(), fmt::join(devices, ", ")));
  SY_TRY(engine_.persist(m));
  engine_.state_->putSystem(forgotten);
  spdlog::warn("{} ({}) forgotten by {}; its devices {} are not in the fabric", system.name, system.id, caller.identity, fmt::join(devices, ", "));
  engine_.queue_.markDirty();  // its host is free for the queue
  return forgotten;
}

}  // namespace switchyard
