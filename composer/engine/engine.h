// The operation engine: turns compose, decompose, attach and detach requests into durable operations
// and drives them step by step against the fabric. See docs/architecture.md for the flow.
//
// Threading: one control thread owns every piece of mutable state (PoolState, active operations,
// subscribers); public methods are thread-safe and run their body on it. Driver calls, which may take
// seconds on a real switch, run on an elastic pool and post their result back to the control thread.
//
// Who calls what (ADR 0025): adapters (gRPC, Redfish, the operator endpoint, the resource provider) hold
// an EngineClient (engine_client.h) and never this class: their calls run as EngineCore calls (engine_core.h,
// where each is declared once) on the control thread, and complete on the adapter's executor. The core that
// blocking() gives makes the same calls from other threads, and the plain methods here that go to the control
// thread block likewise until it has answered (microseconds to a few milliseconds: they never wait for a
// switch); they are for tests, tools and the daemon's start, reload and stop, and are refused on the control
// thread itself (kInternal) except in a stepped engine (ADR 0026).
// Event subscribers can be pushed to (EventStream::setListener).
//
// Reads of the pool (devices, hosts, systems, the topology, usable capacity) never go to the control
// thread: they answer on the caller's thread from the latest published PoolView (pool_view.h, ADR 0016),
// so a scrape or a dashboard never delays a compose. They are PoolReads's (pool_reads.h): engine.reads() here, and
// every EngineClient is one. Each control-thread task ends at one commit point
// (flush): the view is published first, then the task's events reach subscribers and its finished
// operations their waiters, then the caller's completion runs; whoever learns of a change can read it.
//
// Every mutating call takes a Caller; the operation records it and its events name it as their actor.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "composer/engine/elastic_executor.h"
#include "composer/engine/engine_core.h"
#include "composer/engine/engine_options.h"
#include "composer/engine/engine_requests.h"
#include "composer/model/event_stream.h"
#include "composer/engine/activity_round.h"
#include "composer/engine/complete_once.h"
#include "composer/engine/control_loop.h"
#include "composer/engine/admission/admission_pass.h"
#include "composer/engine/admission/admission_profile.h"
#include "composer/engine/admission/tenant_shares.h"
#include "composer/engine/defragmentation.h"
#include "composer/engine/move_planner.h"
#include "composer/engine/numbering.h"
#include "composer/engine/disruption_budget.h"
#include "composer/engine/engine_lifecycle.h"
#include "composer/engine/drift_watch.h"
#include "composer/engine/event_log.h"
#include "composer/engine/group_commit.h"
#include "composer/engine/idle_reclaim.h"
#include "composer/engine/lease_watch.h"
#include "composer/engine/operation_waiters.h"
#include "composer/engine/outbox.h"
#include "composer/engine/preemption_plan.h"
#include "composer/engine/history_reads.h"
#include "composer/engine/pool_reads.h"
#include "composer/engine/published_view.h"
#include "composer/engine/quota_check.h"
#include "composer/engine/request_queue.h"
#include "composer/engine/standby_replica.h"
#include "composer/engine/operation_runner.h"
#include "composer/engine/recent_ends.h"
#include "composer/engine/recent_use.h"
#include "composer/engine/reservation_book.h"
#include "composer/engine/steps/step_kind.h"
#include "composer/engine/usage.h"
#include "composer/metrics/engine_metrics.h"
#include "composer/engine/pool_state.h"
#include "composer/engine/reservation.h"
#include "composer/model/access.h"
#include "composer/model/clock.h"
#include "composer/model/composition.h"
#include "composer/model/queue.h"
#include "composer/packing/capacity.h"
#include "composer/packing/composable_model.h"
#include "composer/packing/packing.h"
#include "fabric/fabric_driver.h"
#include "inventory/store.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace switchyard {

class Engine {
 public:
  Engine(FabricDriver& driver, Store& store, Clock& clock, EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The host side (agent/host_agents.h): whose policy decides which hosts get host steps. Set before
  // start(). Without one every host trusts the fabric (engine tests that are about the switch).
  void useHostAgents(HostAgents& hosts);

  // Loads the store, merges the fabric's inventory, resumes or rolls back unfinished operations,
  // waits for them, then reconciles the store against the fabric's real bindings.
  [[nodiscard]] Result<RecoveryReport> start();
  // Stops accepting work, lets running operations finish for up to `grace`, then halts: what is left
  // stays resumable in the store.
  void stop(Duration grace);

  // A standby's engine (engine_replica.cpp), instead of start(): loads the store as the leader wrote it and
  // answers reads from it; it never writes, never calls the fabric, and refuses every change (kUnavailable,
  // naming the leader). refreshReplica() reads the store again (after it changed) and swaps it in: Watch
  // streams get the new events, WaitOperation callers the operations that ended.
  [[nodiscard]] Result<void> startReplica();
  [[nodiscard]] Result<void> refreshReplica();
  // The leader's address as its key names it (a standby's refusals name it); empty: none known, or not a standby.
  void setStandbyLeader(std::string leader);
  [[nodiscard]] std::string standbyLeader() const;

  // A core (engine_core.h: compose, decompose, attach, detach, plan, cancel a queued request, renew a lease, forget a
  // system, reservations, an operation by id or request id) whose calls block: each runs as a task of its own on
  // the control thread and answers once what it changed is written and published. For tests, tools and the
  // daemon's start, reload and stop; adapters use EngineClient::run, which never blocks. A call is refused
  // (kInternal) on the control thread itself, except by a stepped engine's caller (ADR 0026), and kAborted when
  // the engine is not running. For example: `auto op = engine.blocking().compose(caller, request);`
  [[nodiscard]] EngineCore blocking() { return EngineCore(*this, true); }
  using PlanOutcome = switchyard::PlanOutcome;
  // Idle reclaim (engine_idle.cpp): asks each host with attached GPUs what they are doing, records it, and
  // reclaims the GPUs its system's policy says are idle too long (also on a timer, every
  // EngineOptions::activityInterval); the detaches it started, as operations.
  [[nodiscard]] Result<std::vector<Operation>> sampleActivity();

  // Reads of the pool (pool_reads.h: systems, devices, hosts, the topology, the queue, idle GPUs, usable capacity),
  // from the published view on the caller's thread: they never wait for the control thread.
  [[nodiscard]] const PoolReads& reads() const { return reads_; }
  // Reads of the history (history_reads.h: operations, events, the audit trail, usage), from the store on the calling
  // thread, any thread but the control thread: what the last commit point wrote.
  [[nodiscard]] const HistoryReads& history() const { return history_; }
  // The operation once finished, or its current state when the timeout passes first.
  [[nodiscard]] Result<Operation> waitOperation(const OperationId& id, std::chrono::milliseconds timeout);
  // The returned function cancels the wait (a client that went away): the waiter and its timer are released
  // at once and `done` gets kAborted, unless it was answered already. Safe to call from any thread, any time.
  using CancelWait = std::function<void()>;
  CancelWait waitOperation(const OperationId& id, std::chrono::milliseconds timeout, Completion<Operation> done);
  // Runs `work` on the engine's read pool (EngineOptions::readThreads): long reads that need neither the
  // control thread nor an adapter's threads (EngineClient's history and capacity). Inline in a stepped engine.
  // stop() waits for the reads in flight; one asked for after it is dropped.
  void offControl(std::function<void()> work);

  // Runs `call` on the control thread as a task that ends at a commit point, then `done` with the result. blocking()
  // and the blocking methods above are refused there: adapters go through EngineClient::run, whose EngineCore answers inline.
  template <typename T>
  void async(std::function<Result<T>()> call, Completion<T> done) {
    auto once = std::make_shared<CompleteOnce<T>>(std::move(done));
    postToControl([this, call = std::move(call), once](bool running) {
      if (!running) return;
      // Answered at the commit point, once what the call changed is written and published (group_commit.h).
      auto result = std::make_shared<Result<T>>(call());
      toOutbox([once, result] { once->complete(std::move(*result)); }, [once](const Error& refused) { once->complete(std::unexpected(refused)); });
    });
  }
  // Empty while the engine can write its store; else why it stopped (safe on any thread: health checks).
  [[nodiscard]] std::string storeFailure() const;
  // A stepped engine (EngineOptions::stepped, ADR 0026): its caller, on the thread that started it, steps the loop
  // (control_loop.h: step, runUntilIdle, stepControl, runCall, deliverReply, waitingCalls, lateReplies). Nobody else
  // has business with it.
  [[nodiscard]] ControlLoop& loop() { return loop_; }
  // True once stop() has halted the engine (its grace is over): step results still in flight are recorded,
  // no new step starts. Safe on any thread; tests wait on it instead of sleeping.
  [[nodiscard]] bool halted() const { return lifecycle_.haltedForReaders(); }
  // Now on the engine's clock (a manual one in tests): what idle times and lease ends are measured against.
  [[nodiscard]] Timestamp now() const { return clock_.now(); }
  // The step kinds this engine runs (for describing steps).
  [[nodiscard]] const StepKindRegistry& stepKinds() const { return *steps_; }

  // Pulls health and link events from the driver now (also done on a timer).
  [[nodiscard]] Result<void> pollFabricEvents();
  // Compares the store with the fabric and reports (and records) every disagreement: reconcile(done), waited for
  // (awaitAnswer). Refused with kUnavailable while operation steps are calling the switch.
  [[nodiscard]] Result<std::vector<Drift>> reconcile();
  // The same without blocking: the switch is read on a driver thread (a waiting call in a stepped engine, which the
  // test runs when it chooses), and `done` gets the drifts at the commit point that records them, or kUnavailable
  // when a step called the switch before the read or returned during it (the read may show an operation half-way).
  void reconcile(Completion<std::vector<Drift>> done);
  // A quarantined device back to the pool (engine_quarantine.cpp; operators and admins, audited): once the
  // fabric shows it unbound, or, with `unbind`, after unbinding it. Never blocks: the switch is read (and
  // written) on a driver thread, and `done` runs after the change is published.
  void releaseQuarantined(const Caller& caller, const DeviceId& device, ReleaseAsked asked, Completion<DeviceView> done);
  // Compares what each host's side sees with what its system holds (host-missing-device,
  // host-unexpected-device); hosts with an operation running are skipped, and so are hosts where a step answered
  // while they were listed (what they showed may be half-way). Also done after each periodic reconcile and at start.
  // reconcileHosts(done), waited for.
  [[nodiscard]] Result<std::vector<Drift>> reconcileHosts();
  // The same without blocking: the hosts are listed on a driver thread (a waiting call in a stepped engine), and
  // `done` gets the drifts at the commit point that records them.
  void reconcileHosts(Completion<std::vector<Drift>> done);
  // Entries in the lease and preemption bookkeeping now (tests: it does not grow with systems that came and went).
  [[nodiscard]] Result<std::size_t> bookkeepingEntries();

 private:
  // The adapters' way in (engine_client.h): EngineCore's calls are made on the control thread, with this engine's parts.
  friend class EngineCore;
  friend class EngineClient;
  // A blocking core's call: runs `f` with a core of the control thread as a task of its own, and waits (onControl).
  [[nodiscard]] Result<void> runCore(const std::function<void(EngineCore&)>& f);
  // Runs `task(true)` on the control thread, or `task(false)` when the engine has stopped.
  void postToControl(std::function<void(bool running)> task);
  // The commit point that ends every control-thread task (engine_view.cpp): publishes a new view when the
  // pool changed, then delivers what the task left in the outbox (events, finished operations), in order.
  void flush();
  void publishView();
  // Ends a control-thread task at its commit point, however the task returns.
  struct CommitPoint {
    Engine& engine;
    explicit CommitPoint(Engine& e) : engine(e) {}
    CommitPoint(const CommitPoint&) = delete;  // and so not assignable: its one member is a reference
    ~CommitPoint() { engine.flush(); }
  };
  // Runs `deliver` at the task's commit point, once what it wrote is in the store and the view is published (outbox.h).
  void toOutbox(std::function<void()> deliver, Outbox::Refusal refused = {}) { outbox_.add(std::move(deliver), std::move(refused)); }
  // Writes the staged batch now (group_commit.h; a failure halts and refuses what waited); commitNow also publishes the view.
  Result<void> writeStaged();
  void commitNow();
  void crashPointAfterWrite(const char* point);  // a fail point that says the task's writes are in the store
  // A switch or host call: `call` runs on a driver thread (stop() waits for it) and returns what then runs on the
  // control thread with its result, as a task of its own that ends at a commit point.
  void callOffControl(std::function<std::function<void()>()> call);

  // A change to persist atomically, then apply and publish (mutation.h).
  using Mutation = switchyard::Mutation;

  // Runs f on the control thread and waits for its result: blocking() and the blocking methods above, for threads
  // other than the control thread (tests, tools, the daemon's start, reload and stop). On the control thread it
  // runs f inline only for a stepped engine's caller; anywhere else there it is refused (kInternal): the
  // engine's own code calls a core of its task.
  template <typename F>
  auto onControl(F&& f) -> decltype(f());
  // A blocking form over its Completion form (the blocking reconciles, waitOperation): a stepped engine's caller
  // (its control thread) runs what waits (step()) until `start`'s answer comes, or gets `unanswered()` once nothing
  // is left to run; another thread waits for the answer. Refused on a running engine's own control thread.
  template <typename T>
  [[nodiscard]] Result<T> awaitAnswer(std::string_view what, const std::function<void(Completion<T>)>& start,
                                      const std::function<Result<T>()>& unanswered);

  // Acceptance (engine.cpp). One request being accepted: its audit record (launch() writes it with the
  // operation it starts, or audited() on its own as a refusal) and its client request id, which the
  // operation records. audited() makes one and hands it down the accept path: no request lives in a member.
  struct Acceptance {
    AuditRecord audit;
    std::string requestId;
    [[nodiscard]] const Caller& caller() const { return audit.caller; }
  };
  // Runs `accept` (one of the accept* below) for the request. With a request id that started an operation
  // before, that operation instead (see ComposeRequest).
  [[nodiscard]] Result<Operation> audited(const Caller& caller, std::string action, const std::string& target, std::string tenant,
                                          const std::string& requestId, const std::function<Result<Operation>(const Acceptance&)>& accept);
  [[nodiscard]] Result<std::optional<Operation>> priorOperation(const Caller& caller, std::string_view action, const std::string& requestId);
  [[nodiscard]] static Result<void> validateName(const std::string& name);
  [[nodiscard]] static Result<void> validateRequestStrings(const ComposeRequest& request);
  [[nodiscard]] Result<Operation> acceptCompose(const Acceptance& a, const ComposeRequest& request);
  // `requeue`: a preemption's, of a system whose class requeues: what it is queued again as once decomposed (requeue.h).
  [[nodiscard]] Result<Operation> acceptDecompose(const Acceptance& a, const std::string& system, std::optional<QueuedRequest> requeue = {});
  // `replaces`: a move's (defragmentation): the system's devices the attach replaces (Operation::replaces).
  [[nodiscard]] Result<Operation> acceptAttach(const Acceptance& a, const AttachRequest& request, std::vector<DeviceId> replaces = {});
  [[nodiscard]] Result<Operation> acceptDetach(const Acceptance& a, const DetachRequest& request);
  [[nodiscard]] Result<void> checkAccepting() const;
  // What the tenant holds now, as quotas count it: live systems and the devices reserved or bound to them, and its
  // reservations' systems and devices as if composed, but for the reservation `applying` (being composed: the
  // request counts it).
  [[nodiscard]] TenantHolding usageOf(std::string_view tenant, std::string_view applying = {}) const;
  // kResourceExhausted when `newSystems` more systems, or `more` devices, would exceed the tenant's quota (quota_check.h).
  [[nodiscard]] Result<void> checkQuota(std::string_view tenant, int newSystems, const HeldDevices& more, std::string_view applying = {}) const;
  [[nodiscard]] HeldDevices holdingOf(const std::vector<PlacedDevice>& devices) const;
  [[nodiscard]] Operation newOperation(OperationKind kind, const System& system, const Acceptance& a);
  // The request's audit record, for `operation`, into `m`; nothing when there is no request (null: yardd's own change).
  void auditInto(const Acceptance* a, Mutation& m, const std::string& tenant, const OperationId& operation, const std::string& message);
  // A quarantine release's waiting call, as it answered: the fabric's bindings; with an unbind, whether the host behind
  // the device's port let it go (engine_quarantine.cpp) and the unbind's outcome.
  struct Release {
    Result<std::vector<Binding>> bindings;
    Result<std::string> letGo;  // refused, or what the record adds (a host that is down, not heard)
    Result<void> unbound;
  };
  [[nodiscard]] Result<DeviceView> finishRelease(const Caller& caller, const DeviceId& device, bool unbind, const Release& outcome, Mutation& m);
  // Persists the operation with its mutation and the request's audit record, then applies the in-memory change and starts it.
  [[nodiscard]] Result<Operation> launch(const Acceptance& a, Operation op, const std::string& tenant, Mutation mutation,
                                         const std::function<void()>& applyInMemory);
  // Reservations (engine_reservations.cpp). placeTogether places `requests` in order and holds each
  // placement under `holder` as it goes; on failure it lets go of what it held and names the system.
  [[nodiscard]] Result<std::vector<Placement>> placeTogether(const std::vector<ComposeRequest>& requests, const std::string& holder);
  void hold(const Placement& placement, const std::string& holder);
  void letGo(const Placement& placement, const std::string& holder);
  // Composes systems placed and held under `holder`: checks all of them first, then calls `letGoAll` and
  // accepts each (acceptCompose on exactly its held host and devices).
  [[nodiscard]] Result<std::vector<Operation>> composeHeld(const Caller& caller, const std::vector<HeldSystem>& systems,
                                                           const std::string& holder, const std::function<void()>& letGoAll);
  // Drops reservations whose time is up (each with a reservation.expired event). Cheap when there are none.
  // Called from the deadline tick and from changes that reserve, apply, release or compose; never from a read.
  void expireReservations();
  void announceReservation(const Reservation& r, const std::string& type, const std::string& message, const std::string& actor);
  // Stores a refused request's shape and counts it towards the demand mix.
  void recordDemand(const DemandShape& shape);

  // The queue (engine_queue.cpp). acceptQueued puts a compose that does not fit now (`why`) in the queue;
  // admitQueued, at each commit point after capacity may have freed, admits what now fits, in order.
  [[nodiscard]] Result<QueuedRequest> queuedRequestOf(const ComposeRequest& request) const;
  [[nodiscard]] Result<Operation> acceptQueued(const Acceptance& a, const ComposeRequest& request, const std::string& why);
  // kResourceExhausted when the queue, or the tenant's part of it, is full (`why`: why the request would wait).
  [[nodiscard]] Result<void> queueHasRoom(const std::string& tenant, const std::string& why) const;
  // A queued system named `name` and its queued compose (acceptQueued, a preemption's requeue), with the request's
  // audit record, into `m`; enqueue() takes them into memory once `m` is written.
  struct QueuedCompose {
    System system;
    Operation op;
  };
  [[nodiscard]] QueuedCompose queuedCompose(const Acceptance& a, const std::string& name, const std::string& tenant,
                                            const std::map<std::string, std::string>& labels, QueuedRequest queued, std::string explanation,
                                            Mutation& m);
  void enqueue(const QueuedCompose& queued);
  void admitQueued();
  // Each tenant's fair-share charge in GPUs: held now plus decayed recent use (EngineOptions::fairShareHalfLife).
  // Whole GPUs each tenant holds now.
  [[nodiscard]] RecentUse::Charges heldGpusByTenant() const;
  // The packing pool as it would be once `systems` are decomposed (a copy; the engine's is unchanged).
  [[nodiscard]] Pool poolWithout(std::span<const System* const> systems) const;
  // Placement of a queued request on the pool as it is now (or on `pool` when given).
  [[nodiscard]] PlacementDecision placeQueued(const Operation& op, const Pool* pool = nullptr);
  // Whether `placement` (of a request with `leaseSeconds`) keeps clear of what the queue's head has been
  // promised; else why not (ADR 0017, backfill).
  // Why `placement` would delay the queue's head, said to `tenant`: the head is named only when it is that
  // tenant's own (a refusal, its audit record and event never name another tenant's request). A request of a
  // higher priority than the head's delays nothing: queued, it would be ahead of the head (a spot head does
  // not stop a batch compose that fits now).
  [[nodiscard]] std::optional<std::string> delaysHead(const Placement& placement, std::int64_t leaseSeconds, const std::string& tenant,
                                                      int priority) const;
  // What an admission pass and its plugins ask of the engine (admission::PassEngine, engine_queue.cpp).
  class AdmissionHandle;
  // The tenants' shares for a pass from their use (RecentUse): every tenant that waits, uses, has a share set, and
  // `alsoTenant` (a plan's).
  [[nodiscard]] admission::TenantShares sharesOf(const RecentUse::Charges& used, const std::string& alsoTenant = {}) const;
  // Forgets the lease and preemption bookkeeping of systems and requests that are gone (their maps would
  // otherwise only grow).
  void pruneEndedBookkeeping();

  [[nodiscard]] Result<Operation> admit(Operation& op, const Placement& placement);
  // Ends a queued operation without admitting it (cancelled, timed out): failed, its system dropped.
  [[nodiscard]] Result<Operation> dropQueued(const Acceptance* a, const OperationId& id, const std::string& why, const std::string& eventType,
                                             const std::string& actor);
  [[nodiscard]] const PriorityClass* priorityClass(std::string_view name) const;
  void expireLeases(Mutation& m, std::vector<Operation>& started);
  // Preemption (engine_preemption.cpp): victims for a head that cannot fit, their decompose once the grace
  // period is over, and what a victim that would not let go leaves.
  [[nodiscard]] bool planPreemption(const Operation& head, const admission::Handle::VictimFilter& mayTake = {});
  // The victims that free a placement for `wanted` of class `cls` while losing the least, and that placement.
  struct VictimChoice {
    std::vector<const System*> victims;
    Placement placement;
  };
  [[nodiscard]] std::optional<VictimChoice> chooseVictims(const PlacementRequest& wanted, const PriorityClass& cls,
                                                          const admission::Handle::VictimFilter& mayTake = {});
  // What a queued operation asks of the packing core (a share takes a fresh GPU).
  [[nodiscard]] PlacementRequest wantedOf(const Operation& op) const;
  void startPreemption(Mutation& m, std::vector<Operation>& started);
  void preemptionFailed(const Operation& op, Mutation& m);
  // A preemption's decompose that carried a requeue (QueuedRequest::requeueAs) succeeded: its system is queued again
  // in `m`, the decompose's own transaction.
  void requeuePreempted(const Operation& decompose, Mutation& m);
  // Defragmentation (engine_defrag.cpp, ADR 0033): the moves for `wanted` on the pool and activity as they are
  // (move_planner.h); the head's promise (its plan's attaches started); a move's operation that ended; the
  // detaches due, started at the commit point.
  [[nodiscard]] std::optional<MoveChoice> chooseMoves(const PlacementRequest& wanted) const;
  [[nodiscard]] std::optional<admission::Promise> defragmentFor(const Operation& head, const std::string& why);
  void moveEnded(const Operation& op, bool succeeded, Mutation& m);
  void startDueDetaches();
  // At start: a move whose attach ended but whose detach never started (yardd stopped between them; the plan was in
  // memory) has its detach due again, from what the attach replaces.
  void resumeMoves();
  void scheduleDeadlines();
  // Idle reclaim (engine_idle.cpp), a round in three parts: the control thread says which hosts to ask about
  // which GPUs (with what the round needs of each system, as it is then); the hosts are asked off the control
  // thread and idle_ records their answers there, working out the idle stretches to write, the reclaims due and
  // the list the view shows (idle_reclaim.h); the control thread applies that (writes, events, detaches checked
  // against the state as it is now). The round's types: composer/engine/activity_round.h.
  [[nodiscard]] ActivityRound activityRoundOnControl() const;
  // Off the control thread: asks the hosts and records what they said.
  [[nodiscard]] ActivityOutcome recordActivity(const ActivityRound& round);
  void applyActivity(ActivityOutcome outcome, Mutation& m, std::vector<Operation>& started);
  // At a clean stop: every stretch as it is now, in transactions of the round's size (a crash loses up to a checkpoint).
  void writeIdleStretchesAtStop();
  [[nodiscard]] ReclaimPolicy reclaimPolicyFor(const System& system) const;
  // reclaimPolicyFor as the idle list's builder asks for it.
  [[nodiscard]] IdleReclaim::PolicyOf policyOf() const {
    return [this](const System& s) { return reclaimPolicyFor(s); };
  }
  void scheduleActivity();

  // Running operations (operation_runner.h); the engine's side of it (engine_runner.cpp): what the runner asks of
  // the engine, and the engine's rules where an operation ends (the queue, preemption, requeue, moves, leases).
  class RunnerContext;
  [[nodiscard]] static std::unique_ptr<OperationRunner::Context> runnerContextFor(Engine& engine);
  void operationEnding(const Operation& op, Mutation& m);
  // The host's policy; compose, attach, decompose and detach on a host whose policy is unset are refused.
  [[nodiscard]] Result<HostPolicy> hostPolicy(const HostId& host) const;
  // The system with `progress` filled in from its running operation's current step.
  [[nodiscard]] System withProgress(System s) const;
  // Hands a finished (or, when stopping, unfinished) operation to everyone waiting for it.
  void completeWaiters(const OperationId& id, const Operation& op);

  // Persistence and events.
  [[nodiscard]] Event makeEvent(std::string type, std::string subject, std::string message, std::string actor = "yardd");
  // An event about an operation: its subject, tenant and system are the operation's.
  [[nodiscard]] Event operationEvent(std::string type, const Operation& op, std::string message, std::string actor);
  // The system an event's subject belongs to (a system, an operation of one, a device in or held for one).
  [[nodiscard]] std::string systemOf(const std::string& subject) const;
  // Writes the mutation, then publishes its events. When the store refuses (a failed disk, or a newer
  // yardd fenced this one out), the engine halts (haltOnStoreFailure) and the error is returned.
  [[nodiscard]] Result<void> persist(Mutation& m);
  // The tenant an event about `subject` (an operation, a system or a device id) belongs to: the operation's,
  // the system's, or that of the operation or system holding the device; empty for the pool's own.
  [[nodiscard]] std::string tenantOf(const std::string& subject) const;
  // Refuses new work and starts no more steps; every operation stays resumable from its last durable step.
  void haltOnStoreFailure(const Error& error);
  // A control task threw (contained at the control thread's root): what it changed is unknown, so the engine
  // halts as for a store failure; yardd exits 75 and its next start resumes from the store.
  void haltOnInternalFailure(const std::string& what);
  // Both: stop taking work and starting steps; `why` is what readers and onHalt are told.
  void halt(const std::string& why, const std::string& logLine);
  // Hands events to the subscribers at the task's commit point (flush).
  void publish(const std::vector<Event>& events);
  void deliverEvents(const std::vector<Event>& events);

  // Start-up (engine_recovery.cpp).
  [[nodiscard]] Result<void> loadState();
  // A standby's pool: the snapshot's systems, unfinished operations and assignments (engine_replica.cpp).
  // A standby's picture from a load: the whole pool rebuilt, or (`sameInventory`: the snapshot has no
  // inventory, the pool's is current) the systems and device holders changed in place, in time
  // proportional to what is held, not to the pool.
  void applySnapshot(StoreSnapshot snapshot, bool sameInventory);
  void applyHeldState(StoreSnapshot& snapshot);
  [[nodiscard]] Result<std::vector<Drift>> reconcileOnControl(const std::vector<Binding>& fabricBindings);
  // Reconciles against a binding read taken when `stepResultsBefore` was current, unless a step's switch
  // call returned since (the read may show an operation half-way): then kUnavailable, nothing recorded.
  // Switch calls that may change bindings, of steps and of quarantine releases: in flight now, and answered so far.
  // A binding read taken while one is in flight, or processed after one was answered, may show a change half-way.
  [[nodiscard]] bool switchChangesInFlight() const;
  [[nodiscard]] std::uint64_t switchChangesAnswered() const;
  [[nodiscard]] Result<std::vector<Drift>> reconcileIfFresh(const Result<std::vector<Binding>>& fabricBindings,
                                                            std::uint64_t stepResultsBefore);
  // A reconcile round, on the control thread: refused (kUnavailable, `read` false) while steps call the switch, else
  // the bindings are read off the control thread and compared back on it (reconcileIfFresh); `then` gets the outcome
  // there. The timer's rounds and reconcile(done).
  void reconcileRound(std::function<void(Result<std::vector<Drift>> outcome, bool read)> then);
  void applyFabricEvents(const Result<std::vector<FabricEvent>>& events);
  // Host-side drift (engine_host_reconcile.cpp): which hosts to look at, and what their sides saw.
  struct HostCheck {
    HostId host;
    SystemId system;                           // its system when the look began ("" for none)
    std::vector<HostDeviceIdentity> online;    // what the system says the host sees
    std::set<DeviceId> inSystem;               // every device of that system
  };
  [[nodiscard]] std::vector<HostCheck> hostChecksOnControl() const;
  [[nodiscard]] Result<std::vector<Drift>> compareHostsOnControl(const std::vector<HostCheck>& checks,
                                                                 const std::vector<Result<std::vector<HostDeviceIdentity>>>& seen,
                                                                 std::uint64_t stepResultsBefore);
  // One host reconcile with its listing as a waiting call (the periodic one, reconcileHosts(done)): `then` gets
  // what compareHostsOnControl found, or kUnavailable when the engine halted meanwhile.
  void hostReconcileRound(std::function<void(Result<std::vector<Drift>>)> then);
  // reconcile(done) and reconcileHosts(done): `round` runs as a control task of its own (refused when the engine does
  // not run or has halted), and `done` gets what it found once that is written.
  using DriftsFound = std::function<void(Result<std::vector<Drift>>)>;
  void roundAsTask(std::function<void(DriftsFound)> round, Completion<std::vector<Drift>> done);
  void reconcileHostsInBackground();
  // A drift seen for the first time: a warning and a drift.<kind> event in `m` (drift_watch.h).
  [[nodiscard]] std::function<void(const Drift&)> announceDrift(Mutation& m);
  void scheduleFabricPoll();
  void schedulePrune(bool behind = false);
  void scheduleReconcile();

  FabricDriver& driver_;
  HostAgents* hosts_ = nullptr;
  Store& store_;
  Clock& clock_;
  EngineOptions options_;
  std::shared_ptr<const ComposableScheduler> placement_;

  ControlLoop loop_;  // the control thread and the driver and read pools (a stepped engine's: none, the test steps)
  std::shared_ptr<const StepKindRegistry> steps_;
  [[nodiscard]] bool onControlThread() const { return loop_.onControlThread(); }
  // Makes the calling thread the control thread (stepped) or starts one.
  void startControl();
  struct TimerHolder;
  std::unique_ptr<TimerHolder> pollTimer_;

  // Everything below is touched on the control thread only.
  std::unique_ptr<PoolState> state_;
  std::unique_ptr<OperationRunner::Context> runnerContext_;
  std::unique_ptr<OperationRunner> runner_;  // the running operations, their steps and retries
  OperationWaiters waiters_{loop_.context()};  // who waits for which operation (waitOperation), each answered once
  RecentEnds recentEnds_;  // the operations that ended lately, as they ended: what a wait after the end is answered with
  EventLog events_;  // events' numbers, the newest stored (any thread), live subscribers
  Numbering numbers_;  // the next operation id, system id and audit record number
  ReservationBook reservations_;  // composition reservations (PreviewReserve), memory only
  RequestQueue queue_;  // queued composes (not in runner_: nothing of theirs runs), their order, reasons, the head's shadow
  RecentUse recentUse_;  // fair share's history, per tenant
  std::shared_ptr<const admission::Profile> admission_;  // the admission pass's plugins (ADR 0032)
  // The queue's head as of the last pass: when, by the leases we know of, it fits, and where (backfill).
  [[nodiscard]] RequestQueue::HeadShadow leaseShadowOf(const Operation& head);
  PreemptionPlan preemptions_;  // the preemption in progress (one at a time) and failed ones' retry times
  Defragmentation defrag_;  // the moves in progress for a head (one plan at a time) and failed plans' retry times
  DisruptionBudget disruptionBudget_;  // each tenant's GPUs preempted in the last day
  IdleReclaim idle_;  // what attached GPUs did, the idle stretches, dry-run notices, the view's idle list
  LeaseWatch leaseWatch_;                          // which leases were warned about, when overdue ones are retried
  struct ReleaseCalls {
    int inFlight = 0;
    std::uint64_t answered = 0;
  };
  ReleaseCalls releaseCalls_;  // quarantine releases' switch calls (they may unbind): reconcile's guard counts them
  ShareDemand shareDemand_;  // the share sizes asked for lately: what share placement keeps servable
  DriftWatch drifts_;  // reconcile's memory: the drifts each side's last round reported, whether the event feed fails
  WriterEpoch writerEpoch_ = 0;  // claimed at start: the fencing token of every write
  EngineLifecycle lifecycle_;  // whether it takes work (starting, open, closing, halted) and why it failed, once it did
  StandbyReplica standby_;  // a standby's engine (reads only): the leader, what its pool was built from
  Outbox outbox_;  // what the tasks hand out at their commit point (flush), once written
  GroupCommit commits_{options_.stepped ? 1 : options_.groupCommitTasks};  // the writes of the tasks since the last commit point
  PublishedView view_;  // what readers see (any thread), and the state it was built from
  PoolReads reads_{{view_, loop_, clock_, hosts_, standby_, options_.templates, placement_}};  // the reads of view_ (any thread)
  HistoryReads history_{{store_, events_, idle_, reads_, clock_}};  // the reads of the store's history (any thread)
};

}  // namespace switchyard
