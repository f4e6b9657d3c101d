// Releasing a quarantined device (`yardctl devices release`): a device is quarantined when an undo failed
// for good (its state in the switch or on its host is unknown) or when it was found bound in the fabric
// outside any system. Reconcile frees one that the fabric shows unbound by itself; this is the operator's
// way out for the rest: look at the fabric now, and free the device if it is unbound, or (asked to) unbind
// it first. Before an unbind, the host behind the port it is bound to is asked whether it still has the device
// enumerated (then the unbind would pull it from under the host's driver: refused), and while its agent does not
// answer (one lost reply must not let a GPU in use go), unless the operator says the host is down for good
// (`hostIsDown`: then its silence is taken as the operator's word, and recorded). A host whose side cannot list its
// devices (trust-fabric, bmc-reset) cannot be asked, and there the operator vouches that it does not use it.
//
// Crash safety: the unbind happens before the store frees the device. A crash between the two leaves it
// quarantined and unbound, which the reconcile at the next start frees.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>

#include "composer/engine/engine.h"
#include "composer/engine/engine_control.h"
#include "composer/engine/pool_state.h"
#include "composer/model/contain.h"

namespace switchyard {

namespace {

Result<void> mayRelease(const Caller& caller) {
  if (caller.role == Role::kOperator || caller.role == Role::kAdmin) return {};
  return fail(Code::kPermissionDenied, fmt::format("'{}' may not release quarantined devices: that needs the operator or admin role", caller.identity));
}

// A quarantined device that a live system still lists (an undo inside that system failed) leaves quarantine with
// the system, not on its own: freed while the system holds it, it could be handed to a second system.
Result<void> notInASystem(const PoolState& state, const DeviceId& device) {
  const DeviceView v = state.deviceView(device);
  if (v.systemId.empty()) return {};
  const System* s = state.findSystem(v.systemId);
  const std::string name = s ? s->name : v.systemId;
  return fail(Code::kFailedPrecondition,
              fmt::format("{} is still in system {} ({}): decompose {} or detach {} from it first (the device leaves it quarantined), "
                          "then release it",
                          device, name, v.systemId, name, device));
}

// Off the control thread, before `device` is unbound from `port`: refused while the host behind the port (one that can
// list its devices: `listable`) still has it enumerated, or cannot say whether it has and is not `down`. Else what the
// release's record adds ("", or that the host was not heard).
Result<std::string> hostLetGo(HostAgents* hosts, const std::map<PortId, HostId>& listable, const PortId& port, const DeviceId& device,
                              bool down, const CallOptions& options) {
  auto host = listable.find(port);
  if (hosts == nullptr || host == listable.end()) return std::string{};
  auto seen = resultContained("the host listing call", [&] { return hosts->listPresent(host->second, options); });
  if (!seen && down) return fmt::format("; {} did not answer ({}) and the operator says it is down", host->second, seen.error().message);
  if (!seen)
    return fail(Code::kUnavailable, fmt::format("cannot ask {} whether it still has {} ({}), so it stays bound and quarantined: release it "
                                                "again once the host's agent answers (or, if that host is down for good, with --host-is-down)",
                                                host->second, device, seen.error().message));
  for (const auto& d : *seen)
    if (d.deviceId == device)
      return fail(Code::kFailedPrecondition,
                  fmt::format("{} still has {} enumerated at {}: unbinding it now would pull it from under the host's driver; remove it on the "
                              "host first (stop what uses it, then yard-agent releases it), and release it again",
                              host->second, device, d.pciAddress.empty() ? "an unknown address" : d.pciAddress));
  return std::string{};
}

}  // namespace

void Engine::releaseQuarantined(const Caller& caller, const DeviceId& device, ReleaseAsked asked, Completion<DeviceView> done) {
  const bool unbind = asked.unbind;
  auto once = std::make_shared<CompleteOnce<DeviceView>>(std::move(done));
  // Refused before the switch is asked: a standby, a tenant or viewer, an unknown or unquarantined device.
  auto refuse = [this, caller, device, once](const Error& error) {
    Mutation m;
    if (!standby_.on() && !lifecycle_.failed()) {
      AuditRecord record{0, clock_.now(), caller, "release", "device:" + device, {}, std::string(codeName(error.code)), error.message};
      record.sequence = numbers_.nextAudit();
      m.writes.emplace_back(PutAudit{std::move(record)});
      (void)persist(m);
    }
    toOutbox([once, error] { once->complete(fail(error)); }, [once](const Error& refused) { once->complete(fail(refused)); });
  };
  postToControl([this, caller, device, unbind, down = asked.hostIsDown, once, refuse](bool running) {
    if (!running) return;
    CommitPoint commit{*this};
    if (auto ok = checkAccepting(); !ok) return once->complete(fail(ok.error()));
    if (auto ok = mayRelease(caller); !ok) return refuse(ok.error());
    if (down && !unbind) return refuse(Error{Code::kInvalidArgument, "host is down: only with unbind (it says whose silence the unbind may pass)"});
    if (state_->index().device(device) == nullptr) return refuse(Error{Code::kNotFound, fmt::format("no device '{}' (see `yardctl devices`)", device)});
    const DeviceAssignment held = state_->assignment(device);
    if (held.allocation != DeviceAllocation::kQuarantined)
      return refuse(Error{Code::kFailedPrecondition, fmt::format("{} is not quarantined (it is {}); only a quarantined device is released this way",
                                                                 device, toString(held.allocation))});
    if (auto ok = notInASystem(*state_, device); !ok) return refuse(ok.error());
    std::map<PortId, HostId> listable;  // the upstream ports of hosts that can say what they have enumerated
    if (unbind && hosts_ != nullptr)
      for (const auto& h : state_->topology().hosts)
        if (hosts_->canList(h.id))
          for (const auto& p : h.upstreamPorts) listable.emplace(p.portId, h.id);
    ++releaseCalls_.inFlight;
    callOffControl([this, caller, device, unbind, down, once, listable = std::move(listable)]() -> std::function<void()> {
      auto bindings = resultContained("the switch's binding read", [&] { return driver_.readBindings({options_.switchCallTimeout}); });
      Result<std::string> letGo = std::string{};
      Result<void> unbound;
      if (bindings && unbind)
        for (const auto& b : *bindings) {
          if (b.deviceId != device) continue;
          letGo = hostLetGo(hosts_, listable, b.upstreamPortId, device, down, {options_.hostCallTimeout});
          if (letGo)
            unbound = resultContained("the unbind call", [&] { return driver_.unbindAll(std::span<const Binding>(&b, 1), {options_.switchCallTimeout}); });
        }
      const Release outcome{std::move(bindings), std::move(letGo), std::move(unbound)};
      return [this, caller, device, unbind, once, outcome] {
        --releaseCalls_.inFlight;
        ++releaseCalls_.answered;
        if (lifecycle_.halted()) return;
        Mutation m;
        Result<DeviceView> released = finishRelease(caller, device, unbind, outcome, m);
        AuditRecord record{0, clock_.now(), caller, "release", "device:" + device, {}, released ? "accepted" : std::string(codeName(released.error().code)),
                           released ? fmt::format("back in the pool{}{}", unbind ? " (unbound first where it was bound)" : "", outcome.letGo.value_or(""))
                                    : released.error().message};
        record.sequence = numbers_.nextAudit();
        m.writes.emplace_back(PutAudit{std::move(record)});
        if (auto persisted = persist(m); !persisted) released = fail(persisted.error());
        if (released) released = state_->deviceView(device);
        toOutbox([once, released = std::move(released)]() mutable { once->complete(std::move(released)); },
                 [once](const Error& refused) { once->complete(fail(refused)); });
      };
    });
  });
}

Result<DeviceView> Engine::finishRelease(const Caller& caller, const DeviceId& device, bool unbind, const Release& outcome, Mutation& m) {
  const auto& [bindings, letGo, unbound] = outcome;
  const DeviceAssignment held = state_->assignment(device);
  if (held.allocation != DeviceAllocation::kQuarantined)
    return fail(Code::kFailedPrecondition, fmt::format("{} is no longer quarantined (it is {})", device, toString(held.allocation)));
  SY_TRY(notInASystem(*state_, device));  // a system may have taken it back meanwhile (a rollback)
  if (!bindings) return fail(bindings.error().wrap(fmt::format("cannot read the fabric's bindings, so {} stays quarantined", device)));
  std::optional<Binding> bound;
  for (const auto& b : *bindings)
    if (b.deviceId == device) bound = b;
  if (bound && !unbind)
    return fail(Code::kFailedPrecondition,
                fmt::format("{} is still bound to {} in the fabric (quarantined: {}); once you know no host uses it, `yardctl devices release "
                            "{} --unbind` unbinds it first",
                            device, bound->upstreamPortId, held.owner, device));
  if (bound && !letGo) return fail(letGo.error());
  if (bound && !unbound)
    return fail(unbound.error().wrap(fmt::format("unbinding {} from {} failed, so it stays quarantined", device, bound->upstreamPortId)));
  const DeviceAssignment free{device, DeviceAllocation::kFree, {}};
  state_->assign(free, {});
  m.writes.emplace_back(PutAssignment{free});
  // A pool event, seen by every tenant: it names no reason (a failed undo's names another tenant's operation);
  // the audit record and yardd's log keep it.
  m.events.push_back(makeEvent("device.released", device,
                               fmt::format("{} left quarantine{}; back in the pool", device,
                                           bound ? fmt::format(" after being unbound from {}", bound->upstreamPortId) : ""),
                               caller.identity));
  if (bound && !letGo->empty()) spdlog::warn("{}: released from quarantine by {} ({}), unbound first{}", device, caller.identity, held.owner, *letGo);
  else spdlog::info("{}: released from quarantine by {} ({}){}", device, caller.identity, held.owner, bound ? ", unbound first" : "");
  queue_.markDirty();
  return state_->deviceView(device);
}

}  // namespace switchyard
