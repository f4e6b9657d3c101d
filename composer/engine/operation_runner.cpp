// The operation runner (operation_runner.h): remote steps go to the driver threads, local steps run here, every
// outcome is written before the next step starts, and a failure appends compensating steps.
#include "composer/engine/operation_runner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "composer/model/contain.h"
#include "composer/model/fail_points.h"

namespace switchyard {

namespace {

bool retryable(Code c) { return c == Code::kUnavailable || c == Code::kDeadlineExceeded; }

// What a local step changes, collected into the step's mutation.
class LocalContext final : public LocalStepContext {
 public:
  LocalContext(EmitEvent emit, PoolState& state, System system, std::vector<StoreWrite>& writes)
      : LocalStepContext(std::move(emit)), state_(state), system_(std::move(system)), writes_(writes) {}

  System& system() override { return system_; }
  void setAllocation(const std::vector<DeviceId>& devices, DeviceAllocation allocation, const std::string& owner) override {
    for (const auto& d : devices) {
      DeviceAssignment a{d, allocation, owner};
      // A quarantined device belongs to no host (it left the system's, or its state there is unknown).
      const bool hostless = allocation == DeviceAllocation::kFree || allocation == DeviceAllocation::kQuarantined;
      state_.assign(a, hostless ? HostId{} : system_.hostId);
      writes_.emplace_back(PutAssignment{a});
    }
  }
  DeviceAllocation allocation(const DeviceId& device) const override { return state_.assignment(device).allocation; }

 private:
  PoolState& state_;
  System system_;
  std::vector<StoreWrite>& writes_;
};

}  // namespace

OperationRunner::OperationRunner(Context& context, boost::asio::io_context& control, const StepKindRegistry& steps, StepTargets targets,
                                 Clock& clock, const EngineOptions& options)
    : context_(context),
      steps_(steps),
      targets_(std::move(targets)),
      clock_(clock),
      options_(options),
      retries_(control, options.retryBackoff, options.maxRetryBackoff) {}

void OperationRunner::run(Operation op) {
  const OperationId id = op.id;
  running_.insert_or_assign(id, std::move(op));
  advance(id);
}

void OperationRunner::adopt(Operation op) {
  const OperationId id = op.id;
  running_.insert_or_assign(id, std::move(op));
}

std::vector<OperationId> OperationRunner::resumeAll() {
  std::vector<OperationId> ids;
  for (const auto& [id, op] : running_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) {
    spdlog::info("resuming {} from its step log", id);
    advance(id);
  }
  return ids;
}

const Operation* OperationRunner::find(const OperationId& id) const {
  auto it = running_.find(id);
  return it == running_.end() ? nullptr : &it->second;
}

const StepKind& OperationRunner::kindOf(const Step& step) const {
  // Step logs are checked against the registry when they are loaded or built, so this cannot miss.
  const StepKind* kind = steps_.find(step.kind);
  if (!kind) {
    spdlog::critical("step kind '{}' is not registered", step.kind);
    std::abort();
  }
  return *kind;
}

std::string OperationRunner::progressOf(const OperationId& id) const {
  const Operation* op = id.empty() ? nullptr : find(id);
  if (op == nullptr) return {};
  const std::size_t i = op->cursor();
  if (i == op->steps.size()) return {};
  const std::string_view activity = kindOf(op->steps[i]).activity();
  if (op->state == OperationState::kRollingBack) return activity.empty() ? "rolling back" : fmt::format("rolling back: {}", activity);
  return std::string(activity);
}

const System& OperationRunner::systemOf(const Operation& op) const {
  const System* system = context_.state().system(op.systemId);
  if (!system) {
    spdlog::critical("{} refers to system {} which is not live", op.id, op.systemId);
    std::abort();
  }
  return *system;
}

StepEffects::EmitEvent OperationRunner::emitInto(std::vector<Event>& events, const Operation& op) {
  return [this, &events, actor = op.requestedBy.identity, tenant = op.tenant, system = op.systemId](std::string type, std::string subject,
                                                                                                     std::string message) {
    events.push_back(context_.event(std::move(type), std::move(subject), std::move(message), actor));
    events.back().tenant = tenant;  // the operation's: its device and system events are its tenant's alone
    events.back().systemId = system;
  };
}

Event OperationRunner::operationEvent(std::string type, const Operation& op, std::string message) {
  Event e = context_.event(std::move(type), op.id, std::move(message), op.requestedBy.identity);
  e.tenant = op.tenant;
  e.systemId = op.systemId;
  return e;
}

void OperationRunner::advance(const OperationId& id, Mutation carried) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  Operation& op = it->second;
  // The last step's outcome, the local steps after it and the finish are recorded in one transaction;
  // it always commits before the next remote call starts.
  Mutation m = std::move(carried);
  auto flush = [&] {
    const bool ok = (m.writes.empty() && m.events.empty()) || context_.persist(m);
    m = {};
    return ok;
  };
  while (!context_.halted()) {
    const std::size_t i = op.cursor();
    if (i == op.steps.size()) {
      finish(op, m);
      if (!flush()) return;  // halted: the operation stays running and resumes at the next start
      if (failpoints::armed()) {
        context_.writeNow();
        failpoints::crashPoint("operation.after-finish");
      }
      Operation done = std::move(op);
      running_.erase(it);
      context_.ended(done);
      return;
    }
    const StepKind& kind = kindOf(op.steps[i]);
    if (kind.component() == StepComponent::kLocal) {
      if (failpoints::armed()) failpoints::crashPoint(fmt::format("step.{}.before", op.steps[i].kind));
      runLocalStep(op, i, kind, m);
      continue;
    }
    if (!flush()) return;
    if (failpoints::armed()) {
      context_.writeNow();
      failpoints::crashPoint(fmt::format("step.{}.before", op.steps[i].kind));
    }
    dispatch(id, i);
    return;
  }
  (void)flush();
}

void OperationRunner::retryAfter(const OperationId& id, std::size_t step, Duration wait) {
  const Duration real = clock_.timerFor(wait);
  if (real.count() <= 0) {
    dispatch(id, step);
    return;
  }
  retries_.after(real, [this, id, step] {
    if (context_.halted() || !running_.contains(id)) return;  // halted: the step runs again at the next start
    context_.asTask([&] { dispatch(id, step); });
  });
}

void OperationRunner::dispatch(const OperationId& id, std::size_t step) {
  ++stepCallsInFlight_;
  const Operation& op = running_.at(id);
  // The call starts at the task's commit point, once the view shows the step: nobody (a host, a switch, a
  // test's gate) sees a step that readers cannot.
  context_.callAtCommitPoint([this, id, step, snapshot = op, kind = &kindOf(op.steps[step]), targets = targets_]() mutable -> std::function<void()> {
    const auto started = std::chrono::steady_clock::now();
    // A driver that throws fails the call (kInternal: it may have been applied, so the step is undone).
    Result<StepReport> result = resultContained(fmt::format("the {} call", snapshot.steps[step].kind),
                                                [&] { return kind->call(targets, snapshot, snapshot.steps[step]); });
    if (options_.metrics)
      options_.metrics->stepSeconds.observe({snapshot.steps[step].kind, result ? std::string("ok") : std::string(codeName(result.error().code))},
                                            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    if (failpoints::armed()) failpoints::crashPoint(fmt::format("step.{}.after-call", snapshot.steps[step].kind));
    return [this, id, step, host = snapshot.hostId, result = std::move(result)] {
      --stepCallsInFlight_;
      lastResultOnHost_[host] = ++stepResults_;
      onStepResult(id, step, result);
    };
  });
}

void OperationRunner::onStepResult(const OperationId& id, std::size_t index, const Result<StepReport>& result) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  Operation& op = it->second;
  Step& step = op.steps[index];
  const StepKind& kind = kindOf(step);
  ++step.attempts;
  op.updatedAt = clock_.now();
  Mutation m;

  if (result) {
    step.state = StepState::kDone;
    step.finishedAt = op.updatedAt;
    step.message.clear();
    recordSuccess(op, step, kind, *result, m);
  } else {
    const Error& error = result.error();
    const bool again = step.compensation ? retryable(error.code) : kind.retries(error);
    if (again && step.attempts < options_.maxStepAttempts && !context_.halted()) {
      if (!step.compensation && kind.undoWhenFailed(error)) step.outcomeUnknown = true;  // it may have been applied
      const Duration wait = retries_.waitAfter(step.attempts);
      step.message = fmt::format("attempt {} failed: {}; retrying in {} ms", step.attempts, error.message,
                                 std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
      spdlog::warn("{}: {}: {}", op.id, describe(step), step.message);
      m.writes.emplace_back(PutOperation{op, false, {index}});
      if (context_.persist(m)) retryAfter(id, index, wait);  // the same step again, whatever its kind
      return;
    }
    if (step.compensation) {
      quarantineAfter(op, index, kind, error, m);
    } else {
      StepEffects effects(emitInto(m.events, op));
      kind.failed(effects, op, step, error);
      failForward(op, index, error, m);
      m.writes.emplace_back(PutOperation{op});  // skipped and appended undo steps: the whole log
      advance(id, std::move(m));
      return;
    }
  }
  m.writes.emplace_back(PutOperation{op, false, {index}});
  advance(id, std::move(m));
}

void OperationRunner::quarantineAfter(Operation& op, std::size_t index, const StepKind& kind, const Error& error, Mutation& m) {
  // Undo failed for good: the real state of the step's devices is unknown. Keep them out of the pool
  // until an operator or the next reconcile settles it.
  Step& step = op.steps[index];
  step.state = StepState::kFailed;
  step.message = error.message;
  step.finishedAt = op.updatedAt;
  for (const auto& b : step.bindings) {
    DeviceAssignment q{b.deviceId, DeviceAllocation::kQuarantined, fmt::format("{} could not {}: {}", op.id, describe(step), error.message)};
    context_.state().assign(q, {});
    m.writes.emplace_back(PutAssignment{q});
    m.events.push_back(context_.event("device.quarantined", b.deviceId, q.owner, op.requestedBy.identity));
    m.events.back().tenant = op.tenant;
    op.error += fmt::format("; {} quarantined", b.deviceId);
    spdlog::error("{}: {}", op.id, q.owner);
  }
  // A host that did not release its devices may still be using them: unbinding them now would pull
  // them out from under it (a surprise removal). They stay bound, quarantined, for an operator.
  if (kind.component() != StepComponent::kHost) return;
  for (std::size_t j = index + 1; j < op.steps.size(); ++j) {
    Step& later = op.steps[j];
    const bool touches = std::any_of(later.bindings.begin(), later.bindings.end(), [&](const Binding& b) {
      return std::any_of(step.bindings.begin(), step.bindings.end(), [&](const Binding& h) { return h.deviceId == b.deviceId; });
    });
    if (later.state != StepState::kPending || !later.compensation || !touches) continue;
    later.state = StepState::kSkipped;
    later.message = "skipped: the host did not release these devices, so they stay bound (quarantined)";
  }
  m.writes.emplace_back(PutOperation{op});  // the skipped steps: the whole log
}

void OperationRunner::failForward(Operation& op, std::size_t index, const Error& error, Mutation& m) {
  Step& failed = op.steps[index];
  failed.state = StepState::kFailed;
  failed.message = fmt::format("{}: {}", codeName(error.code), error.message);
  failed.finishedAt = op.updatedAt;
  op.state = OperationState::kRollingBack;
  op.error = fmt::format("{} failed: {}", describe(failed), failed.message);
  for (auto& s : op.steps)
    if (s.state == StepState::kPending) s.state = StepState::kSkipped;
  spdlog::warn("{}: {}; rolling back", op.id, op.error);

  // A failed call may have been applied in part unless the switch said it changed nothing (a timed-out
  // call in particular): undo it too. Undo steps are idempotent. Applied steps are undone in reverse.
  // An earlier attempt that may have been applied (a lost reply) counts the same, whatever the last one said.
  const bool outcomeUnknown = failed.outcomeUnknown || kindOf(failed).undoWhenFailed(error);
  std::vector<Step> undo;
  for (std::size_t j = index + 1; j-- > 0;) {
    const Step& s = op.steps[j];
    const bool applied = s.state == StepState::kDone || (j == index && outcomeUnknown);
    if (!applied || s.compensation) continue;
    if (auto u = kindOf(s).undo(s)) {
      u->compensation = true;
      undo.push_back(std::move(*u));
    }
  }
  for (auto& s : undo) op.steps.push_back(std::move(s));
  m.events.push_back(operationEvent("operation.rolling-back", op, op.error));
}

void OperationRunner::recordSuccess(const Operation& op, const Step& step, const StepKind& kind, const StepReport& report, Mutation& m) {
  const System& system = systemOf(op);
  LocalContext context(emitInto(m.events, op), context_.state(), system, m.writes);
  kind.succeeded(context, op, step, report);
  // Only a step that changed the system writes it (host-admit: the identities it saw).
  if (context.system().hostDevices != system.hostDevices) {
    System updated = context.system();
    updated.updatedAt = op.updatedAt;
    context_.state().putSystem(updated);
    m.writes.emplace_back(PutSystem{updated});
  }
}

void OperationRunner::runLocalStep(Operation& op, std::size_t index, const StepKind& kind, Mutation& m) {
  Step& step = op.steps[index];
  const Timestamp now = clock_.now();
  LocalContext context(emitInto(m.events, op), context_.state(), systemOf(op), m.writes);
  kind.apply(context, op, step);
  System updated = context.system();
  updated.updatedAt = now;
  step.state = StepState::kDone;
  step.finishedAt = now;
  op.updatedAt = now;
  context_.state().putSystem(updated);
  m.writes.emplace_back(PutSystem{updated});
  m.writes.emplace_back(PutOperation{op, false, {index}});
}

void OperationRunner::finish(Operation& op, Mutation& m) {
  op.state = op.state == OperationState::kRollingBack ? OperationState::kFailed : OperationState::kSucceeded;
  op.updatedAt = clock_.now();
  const bool grows = op.kind == OperationKind::kCompose || op.kind == OperationKind::kAttach;
  if (op.state == OperationState::kFailed && !grows) {
    // Decompose/detach could not finish and was undone: the system keeps its devices.
    if (const System* system = context_.state().system(op.systemId)) {
      System updated = *system;
      updated.state = SystemState::kComposed;
      updated.activeOperation.clear();
      updated.updatedAt = op.updatedAt;
      context_.state().putSystem(updated);
      m.writes.emplace_back(PutSystem{updated});
    }
  }
  m.writes.emplace_back(PutOperation{op, false, {}});
  context_.ending(op, m);
  const bool ok = op.state == OperationState::kSucceeded;
  if (options_.metrics) {
    const std::string kind(toString(op.kind));
    options_.metrics->operations.add({kind, ok ? "succeeded" : "failed"});
    options_.metrics->operationSeconds.observe({kind}, static_cast<double>(op.updatedAt - op.createdAt) / 1e9);
  }
  m.writes.emplace_back(PutAuditOutcome{op.id, ok ? "succeeded" : "failed", op.updatedAt});
  m.events.push_back(operationEvent(ok ? "operation.succeeded" : "operation.failed", op,
                                    ok ? fmt::format("{} {} succeeded", toString(op.kind), op.id)
                                       : fmt::format("{} {} failed and was rolled back: {}", toString(op.kind), op.id, op.error)));
  if (ok)
    spdlog::info("{} {} succeeded (system {})", op.id, toString(op.kind), op.systemId);
  else
    spdlog::warn("{} {} failed and was rolled back: {}", op.id, toString(op.kind), op.error);
}

}  // namespace switchyard
