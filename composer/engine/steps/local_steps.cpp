// The step kinds that change only the engine's own records: reserve (done at acceptance), commit (the
// system takes its bound devices) and release (devices back to the pool).
#include <fmt/format.h>

#include <algorithm>

#include "composer/engine/steps/step_kind.h"

namespace switchyard {

namespace {

std::vector<DeviceId> devicesOf(const std::vector<Binding>& bindings) {
  std::vector<DeviceId> out;
  for (const auto& b : bindings) out.push_back(b.deviceId);
  return out;
}

// The devices were reserved in the acceptance transaction; the step marks that point in the log, and its
// undo hands the reservation back.
class ReserveStep final : public StepKind {
 public:
  std::string_view name() const override { return step::kReserve; }
  StepComponent component() const override { return StepComponent::kLocal; }
  std::optional<Step> undo(const Step&) const override { return makeStep(step::kRelease); }
};

class CommitStep final : public StepKind {
 public:
  std::string_view name() const override { return step::kCommit; }
  StepComponent component() const override { return StepComponent::kLocal; }
  void apply(LocalStepContext& ctx, const Operation& op, const Step&) const override {
    System& system = ctx.system();
    const auto bound = forwardBindings(op, step::kBind);
    system.bindings.insert(system.bindings.end(), bound.begin(), bound.end());
    system.gpuInstances.insert(system.gpuInstances.end(), op.gpuInstances.begin(), op.gpuInstances.end());
    system.gpuShares.insert(system.gpuShares.end(), op.gpuShares.begin(), op.gpuShares.end());
    ctx.setAllocation(devicesOf(bound), DeviceAllocation::kAllocated, system.id);
    system.state = SystemState::kComposed;
    system.activeOperation.clear();
    ctx.event(op.kind == OperationKind::kCompose ? "system.composed" : "system.attached", system.id,
              fmt::format("{} ({}) on {} now has {} device(s){}{}", system.name, system.id, system.hostId, system.bindings.size(),
                          system.gpuInstances.empty() ? "" : fmt::format(", {} MIG instance(s)", system.gpuInstances.size()),
                          system.gpuShares.empty() ? "" : fmt::format(", {} GPU share(s)", system.gpuShares.size())));
  }
};

class ReleaseStep final : public StepKind {
 public:
  std::string_view name() const override { return step::kRelease; }
  StepComponent component() const override { return StepComponent::kLocal; }
  void apply(LocalStepContext& ctx, const Operation& op, const Step& s) const override {
    if (s.compensation)
      handBackReservation(ctx, op);
    else
      returnUnbound(ctx, op);
  }

 private:
  // Rollback of a compose or attach: the reserved devices go back, except any quarantined by a failed undo.
  static void handBackReservation(LocalStepContext& ctx, const Operation& op) {
    System& system = ctx.system();
    auto grown = devicesOf(forwardBindings(op, step::kBind));
    std::erase_if(grown, [&](const DeviceId& d) { return ctx.allocation(d) == DeviceAllocation::kQuarantined; });
    ctx.setAllocation(grown, DeviceAllocation::kFree, {});
    if (op.kind == OperationKind::kCompose) system.state = SystemState::kFailed;
    system.activeOperation.clear();
    ctx.event("reservation.released", op.id, fmt::format("{} released {} device(s)", op.id, grown.size()));
  }

  // Decompose or detach: the unbound devices (and MIG instances) leave the system.
  static void returnUnbound(LocalStepContext& ctx, const Operation& op) {
    System& system = ctx.system();
    const auto removed = devicesOf(forwardBindings(op, step::kUnbind));
    auto freed = removed;  // all but those quarantined on the way (a host that could not reset one)
    std::erase_if(freed, [&](const DeviceId& d) { return ctx.allocation(d) == DeviceAllocation::kQuarantined; });
    ctx.setAllocation(freed, DeviceAllocation::kFree, {});
    std::erase_if(system.bindings,
                  [&](const Binding& b) { return std::find(removed.begin(), removed.end(), b.deviceId) != removed.end(); });
    std::erase_if(system.hostDevices,
                  [&](const HostDeviceIdentity& h) { return std::find(removed.begin(), removed.end(), h.deviceId) != removed.end(); });
    std::erase_if(system.gpuInstances, [&](const GpuInstance& i) {
      return op.kind == OperationKind::kDecompose || std::find(op.gpuInstances.begin(), op.gpuInstances.end(), i) != op.gpuInstances.end();
    });
    std::erase_if(system.gpuShares, [&](const GpuShare& share) {
      return op.kind == OperationKind::kDecompose || std::find(op.gpuShares.begin(), op.gpuShares.end(), share) != op.gpuShares.end();
    });
    // A detach that takes the last device ends the system too: an empty system would hold its host for nothing.
    const bool emptied = op.kind == OperationKind::kDetach && system.bindings.empty();
    if (op.kind == OperationKind::kDecompose || emptied) system.state = SystemState::kDecomposed;
    system.activeOperation.clear();
    ctx.event(op.kind == OperationKind::kDecompose || emptied ? "system.decomposed" : "system.detached", system.id,
              fmt::format("{} ({}) released {} device(s) to the pool{}{}{}{}", system.name, system.id, freed.size(),
                          freed.size() == removed.size() ? "" : fmt::format(", {} quarantined (not reset)", removed.size() - freed.size()),
                          op.gpuInstances.empty() ? "" : fmt::format(", removed {} MIG instance(s)", op.gpuInstances.size()),
                          op.gpuShares.empty() ? "" : fmt::format(", removed {} GPU share(s)", op.gpuShares.size()),
                          emptied ? fmt::format("; with no device left it is decomposed, and {} is free", system.hostId) : ""));
  }
};

}  // namespace

Result<void> registerLocalSteps(StepKindRegistry& registry) {
  SY_TRY(registry.add(std::make_unique<ReserveStep>()));
  SY_TRY(registry.add(std::make_unique<CommitStep>()));
  return registry.add(std::make_unique<ReleaseStep>());
}

}  // namespace switchyard
