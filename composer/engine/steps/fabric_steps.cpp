// The step kinds that call the switch: bind and unbind a set of devices in one call each, and verify by
// reading the binding table back.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_map>

#include "composer/engine/steps/step_kind.h"

namespace switchyard {

namespace {

// "sw0-gpu0, sw0-gpu1 -> sw0-usp0" (grouped by upstream port, in the step's order).
std::string describeBindings(const std::vector<Binding>& bindings, std::string_view arrow) {
  std::vector<std::pair<PortId, std::vector<DeviceId>>> byPort;
  for (const auto& b : bindings) {
    auto it = std::find_if(byPort.begin(), byPort.end(), [&](const auto& p) { return p.first == b.upstreamPortId; });
    if (it == byPort.end()) it = byPort.insert(byPort.end(), {b.upstreamPortId, {}});
    it->second.push_back(b.deviceId);
  }
  std::string out;
  for (const auto& [port, devices] : byPort)
    out += fmt::format("{}{} {} {}", out.empty() ? "" : "; ", fmt::join(devices, ", "), arrow, port);
  return out;
}

// Binds or unbinds the step's set in one switch call. The two directions differ only in the settings below.
struct SetDirection {
  std::string_view name;
  std::string_view undoKind;  // the other direction
  std::string_view arrow;     // for the description
  std::string_view event;     // one per device once the call succeeded
  std::string_view eventVerb;
  std::string_view activity;  // what a system at this step is doing
  RetryClass retry;
  Result<void> (FabricDriver::*call)(std::span<const Binding>, const CallOptions&);
};

class BindingSetStep final : public StepKind {
 public:
  explicit BindingSetStep(SetDirection d) : d_(d) {}
  std::string_view name() const override { return d_.name; }
  StepComponent component() const override { return StepComponent::kFabric; }
  RetryClass retry() const override { return d_.retry; }
  std::string_view activity() const override { return d_.activity; }
  std::optional<Step> undo(const Step& applied) const override { return makeStep(d_.undoKind, applied.bindings); }
  std::string describe(const Step& s) const override { return fmt::format("{} {}", d_.name, describeBindings(s.bindings, d_.arrow)); }
  Result<StepReport> call(StepTargets& t, const Operation&, const Step& s) const override {
    SY_TRY((t.fabric.*d_.call)(s.bindings, t.fabricCall));
    return StepReport{};
  }
  void succeeded(LocalStepContext& effects, const Operation& op, const Step& s, const StepReport&) const override {
    for (const auto& b : s.bindings)
      effects.event(std::string(d_.event), b.deviceId, fmt::format("{} {} {} ({})", b.deviceId, d_.eventVerb, b.upstreamPortId, op.id));
  }

 private:
  SetDirection d_;
};

// Reads the switch's table back: the only proof that the partitions really changed. Checks every binding
// the operation's forward bind steps made.
class VerifyStep final : public StepKind {
 public:
  std::string_view name() const override { return step::kVerify; }
  StepComponent component() const override { return StepComponent::kFabric; }
  std::string_view activity() const override { return "verifying"; }
  Result<StepReport> call(StepTargets& t, const Operation& op, const Step&) const override {
    const auto wanted = forwardBindings(op, step::kBind);
    std::vector<PortId> ports;  // only the host ports this operation bound to: a switch may show just those
    for (const auto& w : wanted)
      if (std::find(ports.begin(), ports.end(), w.upstreamPortId) == ports.end()) ports.push_back(w.upstreamPortId);
    SY_ASSIGN(auto bindings, t.fabric.readBindingsOf(ports, t.fabricCall));
    std::unordered_map<DeviceId, PortId> actual;
    for (auto& b : bindings) actual.emplace(std::move(b.deviceId), std::move(b.upstreamPortId));
    for (const auto& want : wanted) {
      auto it = actual.find(want.deviceId);
      if (it == actual.end())
        return fail(Code::kInternal, fmt::format("switch reports {} unbound after binding it to {}", want.deviceId, want.upstreamPortId));
      if (it->second != want.upstreamPortId)
        return fail(Code::kInternal, fmt::format("switch reports {} bound to {}, expected {}", want.deviceId, it->second, want.upstreamPortId));
    }
    return StepReport{};
  }
};

}  // namespace

Result<void> registerFabricSteps(StepKindRegistry& registry) {
  SY_TRY(registry.add(std::make_unique<BindingSetStep>(SetDirection{step::kBind, step::kUnbind, "->", "device.bound", "bound to", "binding",
                                                                    RetryClass::kRollBack, &FabricDriver::bindAll})));
  // Giving devices back must finish: transient failures are retried before the operation is undone.
  SY_TRY(registry.add(std::make_unique<BindingSetStep>(SetDirection{step::kUnbind, step::kBind, "from", "device.unbound", "unbound from", "unbinding",
                                                                    RetryClass::kConverge, &FabricDriver::unbindAll})));
  return registry.add(std::make_unique<VerifyStep>());
}

}  // namespace switchyard
