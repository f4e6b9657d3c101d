// Running an operation's step log: remote steps (switch calls) go to the driver threads, local steps
// (commit, release) run here, every outcome is persisted before the next step starts, and a failure
// appends compensating steps so that rollback is itself a resumable part of the log. What each step does
// is its kind's business (composer/engine/steps/); this file only sequences them.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "composer/engine/engine.h"
#include "composer/engine/engine_control.h"
#include "composer/model/contain.h"
#include "composer/model/fail_points.h"

namespace switchyard {

namespace asio = boost::asio;

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

const StepKind& Engine::kindOf(const Step& step) const {
  // Step logs are checked against the registry when they are loaded or built, so this cannot miss.
  const StepKind* kind = steps_->find(step.kind);
  if (!kind) {
    spdlog::critical("step kind '{}' is not registered", step.kind);
    std::abort();
  }
  return *kind;
}

std::string Engine::describe(const Step& step) const { return kindOf(step).describe(step); }

StepEffects::EmitEvent Engine::emitInto(std::vector<Event>& events, const Operation& op) {
  return [this, &events, actor = op.requestedBy.identity, tenant = op.tenant, system = op.systemId](std::string type, std::string subject,
                                                                                                     std::string message) {
    events.push_back(makeEvent(std::move(type), std::move(subject), std::move(message), actor));
    events.back().tenant = tenant;  // the operation's: its device and system events are its tenant's alone
    events.back().systemId = system;
  };
}

void Engine::advance(const OperationId& id, Mutation carried) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  Operation& op = it->second;
  // The last step's outcome, the local steps after it and the finish are recorded in one transaction;
  // it always commits before the next remote call starts.
  Mutation m = std::move(carried);
  auto flush = [&] {
    const bool ok = (m.writes.empty() && m.events.empty()) || persist(m);
    m = {};
    return ok;
  };
  while (!halted_) {
    const std::size_t i = op.cursor();
    if (i == op.steps.size()) {
      finish(op, m);
      if (!flush()) return;  // halted: the operation stays active and resumes at the next start
      failpoints::crashPoint("operation.after-finish");
      Operation done = std::move(op);
      active_.erase(it);
      completeWaiters(id, done);
      return;
    }
    const StepKind& kind = kindOf(op.steps[i]);
    if (kind.component() == StepComponent::kLocal) {
      if (failpoints::armed()) failpoints::crashPoint(fmt::format("step.{}.before", op.steps[i].kind));
      runLocalStep(op, i, kind, m);
      continue;
    }
    if (!flush()) return;
    if (failpoints::armed()) failpoints::crashPoint(fmt::format("step.{}.before", op.steps[i].kind));
    dispatch(id, i);
    return;
  }
  (void)flush();
}

void Engine::retryAfter(const OperationId& id, std::size_t step, Duration wait) {
  const Duration real = clock_.timerFor(wait);
  if (real.count() <= 0) {
    dispatch(id, step);
    return;
  }
  retries_.after(real, [this, id, step] {
    if (halted_ || !active_.contains(id)) return;  // halted: the step runs again at the next start
    CommitPoint commit{*this};
    dispatch(id, step);
  });
}

void Engine::dispatch(const OperationId& id, std::size_t step) {
  ++driverCallsInFlight_;
  ++stepCallsInFlight_;
  const Operation& op = active_.at(id);
  // The call starts at the task's commit point, once the view shows the step: nobody (a host, a switch, a
  // test's gate) sees a step that readers cannot.
  toOutbox([this, id, step, snapshot = op, kind = &kindOf(op.steps[step])]() mutable {
    driverPool_->post([this, id, step, snapshot = std::move(snapshot), kind] {
      StepTargets targets{driver_, {options_.switchCallTimeout}, hosts_, {options_.hostCallTimeout}};
      const auto started = std::chrono::steady_clock::now();
      // A driver that throws fails the call (kInternal: it may have been applied, so the step is undone).
      Result<StepReport> result = resultContained(fmt::format("the {} call", snapshot.steps[step].kind),
                                                  [&] { return kind->call(targets, snapshot, snapshot.steps[step]); });
      if (options_.metrics)
        options_.metrics->stepSeconds.observe({snapshot.steps[step].kind, result ? std::string("ok") : std::string(codeName(result.error().code))},
                                              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      if (failpoints::armed()) failpoints::crashPoint(fmt::format("step.{}.after-call", snapshot.steps[step].kind));
      asio::post(*control_, [this, id, step, result = std::move(result)] {
        CommitPoint commit{*this};
        --driverCallsInFlight_;
        --stepCallsInFlight_;
        ++stepResults_;
        onStepResult(id, step, result);
      });
    });
  });
}

void Engine::onStepResult(const OperationId& id, std::size_t index, Result<StepReport> result) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
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
    if (again && step.attempts < options_.maxStepAttempts && !halted_) {
      if (!step.compensation && kind.undoWhenFailed(error)) step.outcomeUnknown = true;  // it may have been applied
      const Duration wait = retries_.waitAfter(step.attempts);
      step.message = fmt::format("attempt {} failed: {}; retrying in {} ms", step.attempts, error.message,
                                 std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
      spdlog::warn("{}: {}: {}", op.id, describe(step), step.message);
      m.writes.emplace_back(PutOperation{op, false, {index}});
      if (persist(m)) retryAfter(id, index, wait);  // the same step again, whatever its kind
      return;
    }
    if (step.compensation) {
      // Undo failed for good: the real state of the step's devices is unknown. Keep them out of the pool
      // until an operator or the next reconcile settles it.
      step.state = StepState::kFailed;
      step.message = error.message;
      step.finishedAt = op.updatedAt;
      for (const auto& b : step.bindings) {
        DeviceAssignment q{b.deviceId, DeviceAllocation::kQuarantined, fmt::format("{} could not {}: {}", op.id, describe(step), error.message)};
        state_->assign(q, {});
        m.writes.emplace_back(PutAssignment{q});
        m.events.push_back(makeEvent("device.quarantined", b.deviceId, q.owner, op.requestedBy.identity));
        m.events.back().tenant = op.tenant;
        op.error += fmt::format("; {} quarantined", b.deviceId);
        spdlog::error("{}: {}", op.id, q.owner);
      }
      // A host that did not release its devices may still be using them: unbinding them now would pull
      // them out from under it (a surprise removal). They stay bound, quarantined, for an operator.
      if (kind.component() == StepComponent::kHost) {
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

void Engine::failForward(Operation& op, std::size_t index, const Error& error, Mutation& m) {
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
  m.events.push_back(operationEvent("operation.rolling-back", op, op.error, op.requestedBy.identity));
}

void Engine::recordSuccess(const Operation& op, const Step& step, const StepKind& kind, const StepReport& report, Mutation& m) {
  const System* system = state_->system(op.systemId);
  if (!system) {
    spdlog::critical("{} refers to system {} which is not live", op.id, op.systemId);
    std::abort();
  }
  LocalContext context(emitInto(m.events, op), *state_, *system, m.writes);
  kind.succeeded(context, op, step, report);
  // Only a step that changed the system writes it (host-admit: the identities it saw).
  if (context.system().hostDevices != system->hostDevices) {
    System updated = context.system();
    updated.updatedAt = op.updatedAt;
    state_->putSystem(updated);
    m.writes.emplace_back(PutSystem{updated});
  }
}

void Engine::runLocalStep(Operation& op, std::size_t index, const StepKind& kind, Mutation& m) {
  Step& step = op.steps[index];
  const System* system = state_->system(op.systemId);
  if (!system) {
    spdlog::critical("{} refers to system {} which is not live", op.id, op.systemId);
    std::abort();
  }
  const Timestamp now = clock_.now();
  LocalContext context(emitInto(m.events, op), *state_, *system, m.writes);
  kind.apply(context, op, step);
  System updated = context.system();
  updated.updatedAt = now;
  step.state = StepState::kDone;
  step.finishedAt = now;
  op.updatedAt = now;
  state_->putSystem(updated);
  m.writes.emplace_back(PutSystem{updated});
  m.writes.emplace_back(PutOperation{op, false, {index}});
}

void Engine::finish(Operation& op, Mutation& m) {
  op.state = op.state == OperationState::kRollingBack ? OperationState::kFailed : OperationState::kSucceeded;
  op.updatedAt = clock_.now();
  const bool grows = op.kind == OperationKind::kCompose || op.kind == OperationKind::kAttach;
  if (op.state == OperationState::kFailed && !grows) {
    // Decompose/detach could not finish and was undone: the system keeps its devices.
    if (System* system = state_->system(op.systemId)) {
      System updated = *system;
      updated.state = SystemState::kComposed;
      updated.activeOperation.clear();
      updated.updatedAt = op.updatedAt;
      state_->putSystem(updated);
      m.writes.emplace_back(PutSystem{updated});
    }
  }
  m.writes.emplace_back(PutOperation{op, false, {}});
  const bool ok = op.state == OperationState::kSucceeded;
  queue_.markDirty();  // a decompose, a detach or a failed compose freed devices; the queue looks at once
  if (!ok && op.kind == OperationKind::kDecompose && op.requestedBy.identity == kPreemptionActor) preemptionFailed(op, m);
  if (ok && op.kind == OperationKind::kDecompose && op.queued && op.queued->requeueAs) requeuePreempted(op, m);
  if (op.requestedBy.identity == kDefragActor) moveEnded(op, ok, m);
  if (!ok && op.kind == OperationKind::kDecompose && op.requestedBy.identity == kLeaseActor) {
    // The system stays whole (the host kept its GPUs: a process holds one); yardd tries again later.
    if (options_.metrics) options_.metrics->leaseExpiries.add({"overdue"});
    m.events.push_back(makeEvent("lease.overdue", op.systemId,
                                 fmt::format("{}: lease ended but it could not be decomposed ({}); yardd tries again in {}", op.systemId,
                                             op.error, formatDuration(options_.leaseRetry))));
  }
  if (options_.metrics) {
    const std::string kind(toString(op.kind));
    options_.metrics->operations.add({kind, ok ? "succeeded" : "failed"});
    options_.metrics->operationSeconds.observe({kind}, static_cast<double>(op.updatedAt - op.createdAt) / 1e9);
  }
  m.writes.emplace_back(PutAuditOutcome{op.id, ok ? "succeeded" : "failed", op.updatedAt});
  m.events.push_back(operationEvent(ok ? "operation.succeeded" : "operation.failed", op,
                               ok ? fmt::format("{} {} succeeded", toString(op.kind), op.id)
                                  : fmt::format("{} {} failed and was rolled back: {}", toString(op.kind), op.id, op.error),
                               op.requestedBy.identity));
  if (ok)
    spdlog::info("{} {} succeeded (system {})", op.id, toString(op.kind), op.systemId);
  else
    spdlog::warn("{} {} failed and was rolled back: {}", op.id, toString(op.kind), op.error);
}

}  // namespace switchyard
