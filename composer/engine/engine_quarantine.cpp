// Releasing a quarantined device (`yardctl devices release`): a device is quarantined when an undo failed
// for good (its state in the switch or on its host is unknown) or when it was found bound in the fabric
// outside any system. Reconcile frees one that the fabric shows unbound by itself; this is the operator's
// way out for the rest: look at the fabric now, and free the device if it is unbound, or (asked to) unbind
// it first. The operator vouches that no host still uses it; nothing else can.
//
// Crash safety: the unbind happens before the store frees the device. A crash between the two leaves it
// quarantined and unbound, which the reconcile at the next start frees.
#include <fmt/format.h>
#include <spdlog/spdlog.h>


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

}  // namespace

void Engine::releaseQuarantined(const Caller& caller, const DeviceId& device, bool unbind, Completion<DeviceView> done) {
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
  postToControl([this, caller, device, unbind, once, refuse](bool running) {
    if (!running) return;
    CommitPoint commit{*this};
    if (auto ok = checkAccepting(); !ok) return once->complete(fail(ok.error()));
    if (auto ok = mayRelease(caller); !ok) return refuse(ok.error());
    if (state_->index().device(device) == nullptr) return refuse(Error{Code::kNotFound, fmt::format("no device '{}' (see `yardctl devices`)", device)});
    const DeviceAssignment held = state_->assignment(device);
    if (held.allocation != DeviceAllocation::kQuarantined)
      return refuse(Error{Code::kFailedPrecondition, fmt::format("{} is not quarantined (it is {}); only a quarantined device is released this way",
                                                                 device, toString(held.allocation))});
    if (auto ok = notInASystem(*state_, device); !ok) return refuse(ok.error());
    ++releaseCalls_.inFlight;
    callOffControl([this, caller, device, unbind, once]() -> std::function<void()> {
      auto bindings = resultContained("the switch's binding read", [&] { return driver_.readBindings({options_.switchCallTimeout}); });
      Result<void> unbound;
      if (bindings && unbind)
        for (const auto& b : *bindings)
          if (b.deviceId == device)
            unbound = resultContained("the unbind call", [&] { return driver_.unbindAll(std::span<const Binding>(&b, 1), {options_.switchCallTimeout}); });
      return [this, caller, device, unbind, once, bindings = std::move(bindings), unbound = std::move(unbound)] {
        --releaseCalls_.inFlight;
        ++releaseCalls_.answered;
        if (lifecycle_.halted()) return;
        Mutation m;
        Result<DeviceView> released = finishRelease(caller, device, unbind, bindings, unbound, m);
        AuditRecord record{0, clock_.now(), caller, "release", "device:" + device, {}, released ? "accepted" : std::string(codeName(released.error().code)),
                           released ? fmt::format("back in the pool{}", unbind ? " (unbound first where it was bound)" : "") : released.error().message};
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

Result<DeviceView> Engine::finishRelease(const Caller& caller, const DeviceId& device, bool unbind, const Result<std::vector<Binding>>& bindings,
                                         const Result<void>& unbound, Mutation& m) {
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
  spdlog::info("{}: released from quarantine by {} ({}){}", device, caller.identity, held.owner, bound ? ", unbound first" : "");
  queue_.markDirty();
  return state_->deviceView(device);
}

}  // namespace switchyard
