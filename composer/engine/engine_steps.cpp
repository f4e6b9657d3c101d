// Running an operation's step log: driver steps go to the driver pool, local steps (commit, release)
// run here, every outcome is persisted before the next step starts, and a failure appends
// compensating steps so that rollback is itself a resumable part of the log.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <unordered_map>

#include "composer/engine/engine.h"

namespace switchyard {

namespace asio = boost::asio;

namespace {

bool growsSystem(OperationKind k) { return k == OperationKind::kCompose || k == OperationKind::kAttach; }

bool retryable(Code c) { return c == Code::kUnavailable || c == Code::kDeadlineExceeded; }

// The bindings the forward steps of a compose or attach create.
std::vector<Binding> forwardBindings(const Operation& op) {
  std::vector<Binding> out;
  for (const auto& s : op.steps)
    if (s.kind == StepKind::kBind && !s.compensation) out.push_back({s.deviceId, s.upstreamPortId});
  return out;
}

std::vector<DeviceId> forwardUnbinds(const Operation& op) {
  std::vector<DeviceId> out;
  for (const auto& s : op.steps)
    if (s.kind == StepKind::kUnbind && !s.compensation) out.push_back(s.deviceId);
  return out;
}

std::string describe(const Step& s) {
  switch (s.kind) {
    case StepKind::kBind: return fmt::format("bind {} -> {}", s.deviceId, s.upstreamPortId);
    case StepKind::kUnbind: return fmt::format("unbind {} from {}", s.deviceId, s.upstreamPortId);
    default: return std::string(toString(s.kind));
  }
}

}  // namespace

void Engine::advance(const OperationId& id, Mutation carried) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  Operation& op = it->second;
  // The last step's outcome, the local steps after it and the finish are recorded in one transaction;
  // it always commits before the next driver call starts.
  Mutation m = std::move(carried);
  auto flush = [&] {
    if (!m.writes.empty() || !m.events.empty()) persistOrDie(m);
    m = {};
  };
  while (!halted_) {
    const std::size_t i = op.cursor();
    if (i == op.steps.size()) {
      finish(op, m);
      flush();
      Operation done = std::move(op);
      active_.erase(it);
      if (auto w = waiters_.find(id); w != waiters_.end()) {
        for (auto& promise : w->second) promise->set_value(done);
        waiters_.erase(w);
      }
      return;
    }
    const Step& s = op.steps[i];
    switch (s.kind) {
      case StepKind::kBind:
        flush();
        dispatch(id, i, [d = s.deviceId, u = s.upstreamPortId](FabricDriver& f) { return f.bind(d, u); });
        return;
      case StepKind::kUnbind:
        flush();
        dispatch(id, i, [d = s.deviceId, u = s.upstreamPortId](FabricDriver& f) { return f.unbind(d, u); });
        return;
      case StepKind::kVerify:
        flush();
        dispatch(id, i, [this, snapshot = op](FabricDriver& f) { return verifyBindings(f, snapshot); });
        return;
      default:
        runLocalStep(op, i, m);
    }
  }
  flush();
}

void Engine::dispatch(const OperationId& id, std::size_t step, DriverCall call) {
  ++driverCallsInFlight_;
  ++stepCallsInFlight_;
  asio::post(*driverPool_, [this, id, step, call = std::move(call)] {
    Result<void> result = call(driver_);
    asio::post(*control_, [this, id, step, result = std::move(result)] {
      --driverCallsInFlight_;
      --stepCallsInFlight_;
      ++stepResults_;
      onStepResult(id, step, result);
    });
  });
}

Result<void> Engine::verifyBindings(FabricDriver& driver, const Operation& op) const {
  // Read the switch's table back: the only proof that the partition really changed.
  SY_ASSIGN(auto bindings, driver.readBindings());
  std::unordered_map<DeviceId, PortId> actual;
  for (auto& b : bindings) actual.emplace(std::move(b.deviceId), std::move(b.upstreamPortId));
  for (const auto& want : forwardBindings(op)) {
    auto it = actual.find(want.deviceId);
    if (it == actual.end())
      return fail(Code::kInternal, fmt::format("switch reports {} unbound after binding it to {}", want.deviceId, want.upstreamPortId));
    if (it->second != want.upstreamPortId)
      return fail(Code::kInternal, fmt::format("switch reports {} bound to {}, expected {}", want.deviceId, it->second, want.upstreamPortId));
  }
  return {};
}

void Engine::onStepResult(const OperationId& id, std::size_t index, Result<void> result) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  Operation& op = it->second;
  Step& step = op.steps[index];
  ++step.attempts;
  op.updatedAt = clock_.now();
  Mutation m;

  if (result) {
    step.state = StepState::kDone;
    step.finishedAt = op.updatedAt;
    step.message.clear();
    if (step.kind == StepKind::kBind)
      m.events.push_back(makeEvent("device.bound", step.deviceId, fmt::format("{} bound to {} ({})", step.deviceId, step.upstreamPortId, op.id)));
    if (step.kind == StepKind::kUnbind)
      m.events.push_back(makeEvent("device.unbound", step.deviceId, fmt::format("{} unbound from {} ({})", step.deviceId, step.upstreamPortId, op.id)));
  } else {
    const Error& error = result.error();
    const bool mustConverge = step.compensation || !growsSystem(op.kind);
    if (mustConverge && retryable(error.code) && step.attempts < options_.maxStepAttempts && !halted_) {
      step.message = fmt::format("attempt {} failed: {}; retrying", step.attempts, error.message);
      spdlog::warn("{}: {}: {}", op.id, describe(step), step.message);
      m.writes.emplace_back(PutOperation{op, false, {index}});
      persistOrDie(m);
      const Step& s = step;
      if (s.kind == StepKind::kBind)
        dispatch(id, index, [d = s.deviceId, u = s.upstreamPortId](FabricDriver& f) { return f.bind(d, u); });
      else
        dispatch(id, index, [d = s.deviceId, u = s.upstreamPortId](FabricDriver& f) { return f.unbind(d, u); });
      return;
    }
    if (step.compensation) {
      // Undo failed for good: the device's real state is unknown. Keep it out of the pool until an
      // operator or the next reconcile settles it.
      step.state = StepState::kFailed;
      step.message = error.message;
      step.finishedAt = op.updatedAt;
      DeviceAssignment q{step.deviceId, DeviceAllocation::kQuarantined, fmt::format("{} could not {}: {}", op.id, describe(step), error.message)};
      state_->assign(q, {});
      m.writes.emplace_back(PutAssignment{q});
      m.events.push_back(makeEvent("device.quarantined", step.deviceId, q.owner));
      op.error += fmt::format("; {} quarantined", step.deviceId);
      spdlog::error("{}: {}", op.id, q.owner);
    } else {
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

  // A timed-out call may have been applied by the switch: undo it too (undo steps are idempotent).
  const bool outcomeUnknown = error.code == Code::kDeadlineExceeded;
  std::vector<Step> undo;
  for (std::size_t j = index + 1; j-- > 0;) {
    const Step& s = op.steps[j];
    const bool applied = s.state == StepState::kDone || (j == index && outcomeUnknown);
    if (!applied || s.compensation) continue;
    if (s.kind == StepKind::kBind) undo.push_back({StepKind::kUnbind, s.deviceId, s.upstreamPortId, StepState::kPending, true});
    if (s.kind == StepKind::kUnbind) undo.push_back({StepKind::kBind, s.deviceId, s.upstreamPortId, StepState::kPending, true});
  }
  if (growsSystem(op.kind)) undo.push_back({StepKind::kRelease, {}, {}, StepState::kPending, true});
  for (auto& s : undo) op.steps.push_back(std::move(s));
  m.events.push_back(makeEvent("operation.rolling-back", op.id, op.error));
}

void Engine::runLocalStep(Operation& op, std::size_t index, Mutation& m) {
  Step& step = op.steps[index];
  System* system = state_->system(op.systemId);
  if (!system) {
    spdlog::critical("{} refers to system {} which is not live", op.id, op.systemId);
    std::abort();
  }
  System updated = *system;
  updated.updatedAt = clock_.now();
  auto setDevices = [&](const std::vector<DeviceId>& devices, DeviceAllocation allocation, const std::string& owner) {
    for (const auto& d : devices) {
      DeviceAssignment a{d, allocation, owner};
      state_->assign(a, allocation == DeviceAllocation::kFree ? HostId{} : updated.hostId);
      m.writes.emplace_back(PutAssignment{a});
    }
  };
  std::vector<DeviceId> grown;
  for (const auto& b : forwardBindings(op)) grown.push_back(b.deviceId);

  switch (step.kind) {
    case StepKind::kReserve:
      break;  // recorded at acceptance
    case StepKind::kCommit:
      for (const auto& b : forwardBindings(op)) updated.bindings.push_back(b);
      for (const auto& i : op.gpuInstances) updated.gpuInstances.push_back(i);
      setDevices(grown, DeviceAllocation::kAllocated, updated.id);
      updated.state = SystemState::kComposed;
      updated.activeOperation.clear();
      m.events.push_back(makeEvent(op.kind == OperationKind::kCompose ? "system.composed" : "system.attached", updated.id,
                                   fmt::format("{} ({}) on {} now has {} device(s){}", updated.name, updated.id, updated.hostId,
                                               updated.bindings.size(),
                                               updated.gpuInstances.empty() ? ""
                                                   : fmt::format(" and {} MIG instance(s)", updated.gpuInstances.size()))));
      break;
    case StepKind::kRelease:
      if (step.compensation) {  // rollback of compose/attach: hand the reservation back
        std::erase_if(grown, [&](const DeviceId& d) { return state_->assignment(d).allocation == DeviceAllocation::kQuarantined; });
        setDevices(grown, DeviceAllocation::kFree, {});
        if (op.kind == OperationKind::kCompose) updated.state = SystemState::kFailed;
        updated.activeOperation.clear();
        m.events.push_back(makeEvent("reservation.released", op.id, fmt::format("{} released {} device(s)", op.id, grown.size())));
      } else {  // decompose/detach: the unbound devices return to the pool
        const auto removed = forwardUnbinds(op);
        setDevices(removed, DeviceAllocation::kFree, {});
        std::erase_if(updated.bindings, [&](const Binding& b) { return std::find(removed.begin(), removed.end(), b.deviceId) != removed.end(); });
        std::erase_if(updated.gpuInstances, [&](const GpuInstance& i) {
          return op.kind == OperationKind::kDecompose || std::find(op.gpuInstances.begin(), op.gpuInstances.end(), i) != op.gpuInstances.end();
        });
        if (op.kind == OperationKind::kDecompose) updated.state = SystemState::kDecomposed;
        updated.activeOperation.clear();
        m.events.push_back(makeEvent(op.kind == OperationKind::kDecompose ? "system.decomposed" : "system.detached", updated.id,
                                     fmt::format("{} ({}) released {} device(s) to the pool{}", updated.name, updated.id, removed.size(),
                                                 op.gpuInstances.empty() ? ""
                                                     : fmt::format(" and removed {} MIG instance(s)", op.gpuInstances.size()))));
      }
      break;
    default:
      spdlog::critical("{}: step {} is not a local step", op.id, toString(step.kind));
      std::abort();
  }
  step.state = StepState::kDone;
  step.finishedAt = updated.updatedAt;
  op.updatedAt = updated.updatedAt;
  state_->putSystem(updated);
  m.writes.emplace_back(PutSystem{updated});
  m.writes.emplace_back(PutOperation{op, false, {index}});
}

void Engine::finish(Operation& op, Mutation& m) {
  op.state = op.state == OperationState::kRollingBack ? OperationState::kFailed : OperationState::kSucceeded;
  op.updatedAt = clock_.now();
  if (op.state == OperationState::kFailed && !growsSystem(op.kind)) {
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
  m.events.push_back(makeEvent(ok ? "operation.succeeded" : "operation.failed", op.id,
                               ok ? fmt::format("{} {} succeeded", toString(op.kind), op.id)
                                  : fmt::format("{} {} failed and was rolled back: {}", toString(op.kind), op.id, op.error)));
  if (ok)
    spdlog::info("{} {} succeeded (system {})", op.id, toString(op.kind), op.systemId);
  else
    spdlog::warn("{} {} failed and was rolled back: {}", op.id, toString(op.kind), op.error);
}

}  // namespace switchyard
