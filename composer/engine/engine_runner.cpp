// The engine's side of the operation runner (operation_runner.h): the context it gives the runner (the pool state,
// writes, events, calls off the control thread, waiters) and its own rules where an operation ends.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "composer/engine/engine.h"

namespace switchyard {

class Engine::RunnerContext final : public OperationRunner::Context {
 public:
  explicit RunnerContext(Engine& engine) : engine_(engine) {}

  PoolState& state() override { return *engine_.state_; }
  bool halted() const override { return engine_.lifecycle_.halted(); }
  Result<void> persist(Mutation& m) override { return engine_.persist(m); }
  Event event(std::string type, std::string subject, std::string message, std::string actor) override {
    return engine_.makeEvent(std::move(type), std::move(subject), std::move(message), std::move(actor));
  }
  void writeNow() override { (void)engine_.writeStaged(); }
  void callAtCommitPoint(std::function<std::function<void()>()> call) override {
    engine_.toOutbox([&engine = engine_, call = std::move(call)]() mutable { engine.callOffControl(std::move(call)); },
                     [&engine = engine_](const Error&) { engine.runner_->callNotMade(); });
  }
  void asTask(const std::function<void()>& body) override {
    CommitPoint commit{engine_};
    body();
  }
  void ending(const Operation& op, Mutation& m) override { engine_.operationEnding(op, m); }
  void ended(const Operation& op) override { engine_.completeWaiters(op.id, op); }

 private:
  Engine& engine_;
};

std::unique_ptr<OperationRunner::Context> Engine::runnerContextFor(Engine& engine) { return std::make_unique<RunnerContext>(engine); }

void Engine::useHostAgents(HostAgents& hosts) {
  hosts_ = &hosts;
  runner_->useHostAgents(&hosts);
}

void Engine::operationEnding(const Operation& op, Mutation& m) {
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
}

}  // namespace switchyard
