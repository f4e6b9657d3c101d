#include "composer/engine/steps/step_kind.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace switchyard {

std::optional<Step> StepKind::undo(const Step&) const { return std::nullopt; }

std::string StepKind::describe(const Step&) const { return std::string(name()); }

Result<StepReport> StepKind::call(StepTargets&, const Operation& op, const Step&) const {
  return fail(Code::kInternal, fmt::format("{}: step kind '{}' is local and has no remote call", op.id, name()));
}

void StepKind::succeeded(LocalStepContext&, const Operation&, const Step&, const StepReport&) const {}

void StepKind::failed(StepEffects&, const Operation&, const Step&, const Error&) const {}

void StepKind::apply(LocalStepContext&, const Operation&, const Step&) const {}

Result<void> StepKindRegistry::add(std::unique_ptr<StepKind> kind) {
  const std::string name(kind->name());
  if (name.empty()) return fail(Code::kInvalidArgument, "a step kind needs a name");
  if (!kinds_.emplace(name, std::move(kind)).second) return fail(Code::kAlreadyExists, fmt::format("step kind '{}' is registered twice", name));
  return {};
}

const StepKind* StepKindRegistry::find(std::string_view name) const {
  auto it = kinds_.find(name);
  return it == kinds_.end() ? nullptr : it->second.get();
}

std::vector<std::string> StepKindRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, kind] : kinds_) out.push_back(name);
  return out;
}

std::shared_ptr<const StepKindRegistry> StepKindRegistry::builtIn() {
  // Never destroyed, like every process-wide table here: a thread may still run while the process exits.
  static const auto& kBuiltIn = *new std::shared_ptr<const StepKindRegistry>([] {
    auto registry = std::make_shared<StepKindRegistry>();
    auto registered = registerLocalSteps(*registry);
    if (registered) registered = registerFabricSteps(*registry);
    if (registered) registered = registerHostSteps(*registry);
    if (!registered) {  // two built-in kinds share a name: a bug, caught by every test that starts an engine
      std::fprintf(stderr, "built-in step kinds: %s\n", registered.error().message.c_str());
      std::abort();
    }
    return registry;
  }());
  return kBuiltIn;
}

Step makeStep(std::string_view kind, std::vector<Binding> bindings) {
  Step s;
  s.kind = std::string(kind);
  s.bindings = std::move(bindings);
  return s;
}

std::vector<Binding> forwardBindings(const Operation& op, std::string_view kind) {
  std::vector<Binding> out;
  for (const auto& s : op.steps)
    if (s.kind == kind && !s.compensation) out.insert(out.end(), s.bindings.begin(), s.bindings.end());
  return out;
}

}  // namespace switchyard
