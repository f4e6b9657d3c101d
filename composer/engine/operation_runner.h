// The operation runner (issue 59: one of the engine's parts): the running operations and their step logs. It runs
// each operation's steps in order: a remote step (a switch or host call) off the control thread, a local step
// (commit, release) here; every outcome is written before the next step starts, a failed step is retried after a
// backoff (step_retries.h) or the operation rolls back by appending the undo of what was applied, so that rollback
// is itself a resumable part of the log. What each step does is its kind's business (composer/engine/steps/).
//
// The runner owns the running operations, the retries' timers and the count of step calls in flight (what
// reconcile asks before it trusts a binding read). What it needs of the engine is the Context below: the pool
// state, writing a transaction, numbering an event, a call off the control thread, and the engine's rules for an
// operation that ends (the queue, preemption, requeue, moves, leases). Control thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "composer/engine/engine_options.h"
#include "composer/engine/mutation.h"
#include "composer/engine/pool_state.h"
#include "composer/engine/step_retries.h"
#include "composer/engine/steps/step_kind.h"
#include "composer/model/clock.h"
#include "composer/model/composition.h"

namespace switchyard {

class OperationRunner {
 public:
  // What the runner asks of the engine that owns it; each on the control thread.
  class Context {
   public:
    virtual ~Context() = default;
    [[nodiscard]] virtual PoolState& state() = 0;
    // The engine stopped or its store failed: no step starts; what ran is recorded and resumes at the next start.
    [[nodiscard]] virtual bool halted() const = 0;
    // Writes `m` in one transaction and publishes its events; an error when the store refused (the engine halts).
    // The engine may write it later, with the writes of the tasks after this one (group commit), but always
    // before anything the task did is seen: the calls it starts, its events, its answers.
    [[nodiscard]] virtual Result<void> persist(Mutation& m) = 0;
    // What persist was given is in the store now (before a fail point that says it is: `operation.after-finish`).
    virtual void writeNow() {}
    // A new event, numbered and timed (not yet published).
    [[nodiscard]] virtual Event event(std::string type, std::string subject, std::string message, std::string actor) = 0;
    // At the end of the current control task, once the view shows what it changed: `call` runs on a driver thread
    // and returns what then runs on the control thread, as a task of its own that ends at a commit point. When the
    // write before it fails the call is not made, and callNotMade() says so.
    virtual void callAtCommitPoint(std::function<std::function<void()>()> call) = 0;
    // Runs `body` on the control thread as a task of its own (it ends at a commit point): a retry's timer fired.
    virtual void asTask(const std::function<void()>& body) = 0;
    // `op` ends (its state says how) in `m`, the transaction that records its end: the engine's rules apply there.
    virtual void ending(const Operation& op, Mutation& m) = 0;
    // `op` ended and its end is written: whoever waits for it hears now.
    virtual void ended(const Operation& op) = 0;
  };

  // `control`: the control thread's loop (the retries' timers); `targets`: what remote steps call.
  OperationRunner(Context& context, boost::asio::io_context& control, const StepKindRegistry& steps, StepTargets targets, Clock& clock,
                  const EngineOptions& options);
  OperationRunner(const OperationRunner&) = delete;
  OperationRunner& operator=(const OperationRunner&) = delete;

  // Takes `op` (accepted or admitted, and written) and runs it from its next step.
  void run(Operation op);
  // Takes `op` as loaded without running it (a standby's picture, or until resumeAll() at start).
  void adopt(Operation op);
  // Runs every taken operation from its step log, in id order; their ids.
  std::vector<OperationId> resumeAll();
  // Forgets every operation (a standby loads the store again).
  void clear() { running_.clear(); }
  // The host side, once the engine has one (before start()).
  void useHostAgents(HostAgents* hosts) { targets_.hosts = hosts; }
  // Stops every retry's timer (the engine stops: those steps run at the next start).
  void cancelRetries() { retries_.cancelAll(); }

  [[nodiscard]] const Operation* find(const OperationId& id) const;
  [[nodiscard]] const std::unordered_map<OperationId, Operation>& running() const { return running_; }
  // Switch calls of steps not yet answered (they may be changing bindings), and how many have been answered:
  // a binding read taken before the last answer may show an operation half-way.
  [[nodiscard]] int stepCallsInFlight() const { return stepCallsInFlight_; }
  // A step's call that callAtCommitPoint was given was dropped: the write before it failed (the engine halted).
  void callNotMade() { --stepCallsInFlight_; }
  [[nodiscard]] std::uint64_t stepResults() const { return stepResults_; }
  // stepResults() as it was after the last answer of a step on `host` (0: none since the engine started): what a
  // host showed before then may show an operation half-way.
  [[nodiscard]] std::uint64_t lastStepResultOn(const HostId& host) const {
    auto it = lastResultOnHost_.find(host);
    return it == lastResultOnHost_.end() ? 0 : it->second;
  }
  // What the operation is doing now, for a system's progress line ("" when it is between steps or not running).
  [[nodiscard]] std::string progressOf(const OperationId& id) const;
  [[nodiscard]] const StepKind& kindOf(const Step& step) const;
  [[nodiscard]] std::string describe(const Step& step) const { return kindOf(step).describe(step); }

 private:
  // Runs the operation's local steps and writes them with `carried`, then dispatches its next remote step, or
  // finishes it.
  void advance(const OperationId& id, Mutation carried = {});
  void dispatch(const OperationId& id, std::size_t step);
  // The step again after a retry's backoff, on a control-thread timer (no thread waits).
  void retryAfter(const OperationId& id, std::size_t step, Duration wait);
  void onStepResult(const OperationId& id, std::size_t step, const Result<StepReport>& result);
  void recordSuccess(const Operation& op, const Step& step, const StepKind& kind, const StepReport& report, Mutation& m);
  // An undo that failed for good: its devices' state is unknown; they are quarantined.
  void quarantineAfter(Operation& op, std::size_t step, const StepKind& kind, const Error& error, Mutation& m);
  void failForward(Operation& op, std::size_t step, const Error& error, Mutation& m);
  void runLocalStep(Operation& op, std::size_t step, const StepKind& kind, Mutation& m);
  void finish(Operation& op, Mutation& m);
  [[nodiscard]] const System& systemOf(const Operation& op) const;
  // A step's events go into `events`, naming the operation's caller and belonging to its tenant and system.
  [[nodiscard]] StepEffects::EmitEvent emitInto(std::vector<Event>& events, const Operation& op);
  [[nodiscard]] Event operationEvent(std::string type, const Operation& op, std::string message);

  Context& context_;
  const StepKindRegistry& steps_;
  StepTargets targets_;
  Clock& clock_;
  const EngineOptions& options_;
  StepRetries retries_;
  std::unordered_map<OperationId, Operation> running_;
  int stepCallsInFlight_ = 0;
  std::uint64_t stepResults_ = 0;
  std::unordered_map<HostId, std::uint64_t> lastResultOnHost_;  // stepResults_ at each host's last step answer
};

}  // namespace switchyard
