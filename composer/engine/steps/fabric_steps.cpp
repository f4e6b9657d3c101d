// The step kinds that call the switch: bind and unbind a set of devices in one call each, and verify by
// reading the binding table back.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <map>
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

class BindStep final : public StepKind {
 public:
  std::string_view name() const override { return step::kBind; }
  StepComponent component() const override { return StepComponent::kFabric; }
  std::optional<Step> undo(const Step& applied) const override { return makeStep(step::kUnbind, applied.bindings); }
  std::string describe(const Step& s) const override { return fmt::format("bind {}", describeBindings(s.bindings, "->")); }
  Result<void> call(StepTargets& t, const Operation&, const Step& s) const override { return t.fabric.bindAll(s.bindings); }
  void succeeded(StepEffects& effects, const Operation& op, const Step& s) const override {
    for (const auto& b : s.bindings)
      effects.event("device.bound", b.deviceId, fmt::format("{} bound to {} ({})", b.deviceId, b.upstreamPortId, op.id));
  }
};

class UnbindStep final : public StepKind {
 public:
  std::string_view name() const override { return step::kUnbind; }
  StepComponent component() const override { return StepComponent::kFabric; }
  // Giving devices back must finish: transient failures are retried before the operation is undone.
  RetryClass retry() const override { return RetryClass::kConverge; }
  std::optional<Step> undo(const Step& applied) const override { return makeStep(step::kBind, applied.bindings); }
  std::string describe(const Step& s) const override { return fmt::format("unbind {}", describeBindings(s.bindings, "from")); }
  Result<void> call(StepTargets& t, const Operation&, const Step& s) const override { return t.fabric.unbindAll(s.bindings); }
  void succeeded(StepEffects& effects, const Operation& op, const Step& s) const override {
    for (const auto& b : s.bindings)
      effects.event("device.unbound", b.deviceId, fmt::format("{} unbound from {} ({})", b.deviceId, b.upstreamPortId, op.id));
  }
};

// Reads the switch's table back: the only proof that the partitions really changed. Checks every binding
// the operation's forward bind steps made.
class VerifyStep final : public StepKind {
 public:
  std::string_view name() const override { return step::kVerify; }
  StepComponent component() const override { return StepComponent::kFabric; }
  Result<void> call(StepTargets& t, const Operation& op, const Step&) const override {
    SY_ASSIGN(auto bindings, t.fabric.readBindings());
    std::unordered_map<DeviceId, PortId> actual;
    for (auto& b : bindings) actual.emplace(std::move(b.deviceId), std::move(b.upstreamPortId));
    for (const auto& want : forwardBindings(op, step::kBind)) {
      auto it = actual.find(want.deviceId);
      if (it == actual.end())
        return fail(Code::kInternal, fmt::format("switch reports {} unbound after binding it to {}", want.deviceId, want.upstreamPortId));
      if (it->second != want.upstreamPortId)
        return fail(Code::kInternal, fmt::format("switch reports {} bound to {}, expected {}", want.deviceId, it->second, want.upstreamPortId));
    }
    return {};
  }
};

}  // namespace

void registerFabricSteps(StepKindRegistry& registry) {
  (void)registry.add(std::make_unique<BindStep>());
  (void)registry.add(std::make_unique<UnbindStep>());
  (void)registry.add(std::make_unique<VerifyStep>());
}

}  // namespace switchyard
