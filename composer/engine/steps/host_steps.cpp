// The step kinds that call the host's side (agent/host_agents.h): host-admit after the switch bound a
// set (the host rescans and verifies each device; only then is it online), host-release before the switch
// unbinds one (refused, with the processes named, while a device is in use). Each is the other's undo.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "composer/engine/steps/step_kind.h"

namespace switchyard {

namespace {

std::vector<DeviceId> devicesOf(const Step& s) {
  std::vector<DeviceId> out;
  for (const auto& b : s.bindings) out.push_back(b.deviceId);
  return out;
}

// "sw0-gpu0, sw0-gpu1", or "MIG instances" for a step that only changes instances on GPUs already there.
std::string whatOf(const Step& s) { return s.bindings.empty() ? std::string("MIG instances") : fmt::format("{}", fmt::join(devicesOf(s), ", ")); }

Result<HostAgents*> hostsOf(StepTargets& t, const Operation& op) {
  if (t.hosts == nullptr)
    return fail(Code::kFailedPrecondition, fmt::format("{}: host {} needs host steps but this yardd has no host side configured", op.id, op.hostId));
  return t.hosts;
}

class HostAdmitStep final : public StepKind {
 public:
  std::string_view name() const override { return step::kHostAdmit; }
  StepComponent component() const override { return StepComponent::kHost; }
  std::string_view activity() const override { return "verifying on the host"; }
  std::optional<Step> undo(const Step& applied) const override { return makeStep(step::kHostRelease, applied.bindings); }
  // An agent that does not answer (restarting) is asked again; a device that did not appear in time, or
  // the wrong one, rolls the operation back at once.
  bool retries(const Error& error) const override { return error.code == Code::kUnavailable; }
  // Whatever the host answered, it may have enumerated something (a device that appeared too late, or the
  // wrong one): release it before the switch takes it away. An agent that was never reached did nothing;
  // asking it to release would fail the same way and quarantine devices the switch can simply unbind.
  bool undoWhenFailed(const Error& error) const override { return error.code != Code::kUnavailable; }
  std::string describe(const Step& s) const override { return fmt::format("host-admit {} (rescan, verify on the host)", whatOf(s)); }

  Result<StepReport> call(StepTargets& t, const Operation& op, const Step& s) const override {
    SY_ASSIGN(HostAgents * hosts, hostsOf(t, op));
    SY_ASSIGN(auto identities, hosts->admit(op.hostId, {s.bindings, op.gpuInstances}, t.hostCall));
    for (const auto& b : s.bindings)
      if (std::none_of(identities.begin(), identities.end(), [&](const HostDeviceIdentity& i) { return i.deviceId == b.deviceId; }))
        return fail(Code::kInternal, fmt::format("host {} admitted the set but did not report {}", op.hostId, b.deviceId));
    return StepReport{std::move(identities)};
  }

  void succeeded(LocalStepContext& ctx, const Operation& op, const Step&, const StepReport& report) const override {
    auto& known = ctx.system().hostDevices;
    for (const auto& identity : report.identities) {
      std::erase_if(known, [&](const HostDeviceIdentity& k) { return k.deviceId == identity.deviceId; });
      known.push_back(identity);
      ctx.event("device.online", identity.deviceId,
                fmt::format("{} is online on {} at {}{} ({})", identity.deviceId, op.hostId, identity.pciAddress,
                            identity.uuid.empty() ? "" : fmt::format(" as {}", identity.uuid), op.id));
    }
  }

  void failed(StepEffects& effects, const Operation& op, const Step& s, const Error& error) const override {
    effects.event("host.admit-failed", op.hostId,
                  fmt::format("host {} did not take {}: {} ({})", op.hostId, whatOf(s), error.message, op.id));
  }
};

class HostReleaseStep final : public StepKind {
 public:
  std::string_view name() const override { return step::kHostRelease; }
  StepComponent component() const override { return StepComponent::kHost; }
  std::string_view activity() const override { return "releasing on the host"; }
  // An agent that could not be reached is asked again; a device in use is a refusal, not retried.
  RetryClass retry() const override { return RetryClass::kConverge; }
  // A refusal (in use) and an agent never reached both left the host as it was: nothing to undo.
  bool undoWhenFailed(const Error& error) const override { return !changedNothing(error.code) && error.code != Code::kUnavailable; }
  std::optional<Step> undo(const Step& applied) const override { return makeStep(step::kHostAdmit, applied.bindings); }
  std::string describe(const Step& s) const override { return fmt::format("host-release {} (check unused, remove from the host)", whatOf(s)); }

  Result<StepReport> call(StepTargets& t, const Operation& op, const Step& s) const override {
    SY_ASSIGN(HostAgents * hosts, hostsOf(t, op));
    SY_ASSIGN(auto released, hosts->release(op.hostId, {s.bindings, op.gpuInstances, std::string(detachReason(op.requestedBy.identity))},
                                            t.hostCall));
    StepReport report;
    for (auto& n : released.notReset)  // only the step's own devices count
      if (std::any_of(s.bindings.begin(), s.bindings.end(), [&](const Binding& b) { return b.deviceId == n.deviceId; }))
        report.notReset.push_back(std::move(n));
    return report;
  }

  // A device the host removed without its reset goes on through unbind, but not back to the pool: it is
  // quarantined (secure release, issue 39) until an operator has reset it and releases it.
  void succeeded(LocalStepContext& ctx, const Operation& op, const Step& s, const StepReport& report) const override {
    auto& known = ctx.system().hostDevices;
    for (const auto& b : s.bindings) {
      std::erase_if(known, [&](const HostDeviceIdentity& k) { return k.deviceId == b.deviceId; });
      ctx.event("device.released", b.deviceId, fmt::format("{} was removed from {} ({})", b.deviceId, op.hostId, op.id));
    }
    for (const auto& n : report.notReset) {
      ctx.setAllocation({n.deviceId}, DeviceAllocation::kQuarantined, fmt::format("{}{} ({})", kNotResetQuarantine, n.reason, op.id));
      ctx.event("device.quarantined", n.deviceId,
                fmt::format("{} left {} without its reset ({}): quarantined, so that no other tenant gets it; once it is reset, "
                            "`yardctl devices release {}` returns it to the pool",
                            n.deviceId, op.hostId, n.reason, n.deviceId));
    }
  }
};

}  // namespace

Result<void> registerHostSteps(StepKindRegistry& registry) {
  SY_TRY(registry.add(std::make_unique<HostAdmitStep>()));
  return registry.add(std::make_unique<HostReleaseStep>());
}

}  // namespace switchyard
