#include "composer/engine/engine.h"

#include "composer/engine/machine_templates.h"

#include "composer/engine/engine_control.h"
#include "composer/model/contain.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace switchyard {

namespace asio = boost::asio;


Engine::Engine(FabricDriver& driver, Store& store, Clock& clock, EngineOptions options)
    : driver_(driver),
      store_(store),
      clock_(clock),
      options_(options),
      placement_(options.placement ? options.placement : *buildComposableScheduler("switchyard-v2")),
      loop_(options.stepped, options.driverThreads, options.readThreads),
      steps_(options.steps ? options.steps : StepKindRegistry::builtIn()),
      pollTimer_(std::make_unique<TimerHolder>(loop_.context())),
      recentUse_(options.fairShareHalfLife),
      admission_(options.admission ? options.admission : *admission::buildProfile(admission::kDefaultAdmissionProfile)),
      idle_(options.idleBusyAbovePercent, options.activityHistory) {
  runnerContext_ = runnerContextFor(*this);
  runner_ = std::make_unique<OperationRunner>(*runnerContext_, loop_.context(), *steps_,
                                              StepTargets{driver_, {options_.switchCallTimeout}, nullptr, {options_.hostCallTimeout}}, clock_, options_);
}

void Engine::offControl(std::function<void()> work) {
  auto contained = [work = std::move(work)] {
    runContained(work, [](const std::string& what) { spdlog::error("a read off the control thread failed and was dropped: {}", what); });
  };
  loop_.read(std::move(contained));
}

void Engine::callOffControl(std::function<std::function<void()>()> call) {
  // No call leaves the control thread while writes are staged (group_commit.h): what it acts on is in the store.
  (void)writeStaged();
  loop_.callOff([this, call = std::move(call)]() -> std::function<void()> {
    // The reply: a task of its own (a stepped engine's late reply waits for deliverReply()).
    return [this, back = call()] {
      commits_.posted();
      asio::post(loop_.context(), [this, back] {
        commits_.started();
        CommitPoint commit{*this};
        loop_.answered();
        back();
      });
    };
  });
}

Engine::~Engine() {
  if (loop_.running()) stop(Duration::zero());
  loop_.joinAll();  // before the parts their work reaches are gone
}

void Engine::startControl() {
  // A task that throws halts the engine (its changes may be half made) and the loop goes on, so that stop() and every
  // waiter are still answered.
  loop_.start([this](const std::string& what) { haltOnInternalFailure(what); });
}

void Engine::postToControl(std::function<void(bool running)> task) {
  if (!loop_.running()) {
    task(false);
    return;
  }
  commits_.posted();
  asio::post(loop_.context(), [this, task = std::move(task)] {
    commits_.started();
    task(!loop_.stopped());
    flush();
  });
}

Result<RecoveryReport> Engine::start() {
  SY_TRY(loadState());
  flush();  // the first view, before any reader can ask
  startControl();

  RecoveryReport report;
  SY_ASSIGN(auto resumed, onControl([this]() -> Result<std::vector<OperationId>> { return runner_->resumeAll(); }));
  report.resumedOperations = resumed.size();
  for (const auto& id : resumed) {
    SY_ASSIGN(auto op, waitOperation(id, std::chrono::hours(1)));
    if (!op.finished())  // the store failed meanwhile: the waiters were handed the operation as it stands
      return fail(Code::kUnavailable, fmt::format("recovery stopped: {} could not finish because the store failed", op.id));
    spdlog::info("{} ({}) ended {} after restart{}", op.id, toString(op.kind), toString(op.state),
                 op.error.empty() ? "" : ": " + op.error);
  }
  // A store that failed while they ran halted the engine: what memory says of them may not be durable.
  SY_TRY(onControl([this]() -> Result<void> {
    if (!lifecycle_.failed()) return {};
    return fail(Code::kUnavailable, fmt::format("recovery stopped: resumed operations could not finish because the store failed ({}); "
                                                "yardd does not start on a store it cannot write",
                                                lifecycle_.failure()));
  }));
  SY_ASSIGN(report.drifts, reconcile());
  if (hosts_ != nullptr) {
    SY_ASSIGN(auto hostDrifts, reconcileHosts());
    report.drifts.insert(report.drifts.end(), hostDrifts.begin(), hostDrifts.end());
  }
  SY_TRY(onControl([this]() -> Result<void> {
    lifecycle_.open();
    resumeMoves();       // their detaches start at this task's commit point
    queue_.markDirty();  // what waited in the queue before the restart may fit now
    if (options_.stepped) return {};  // its tests run each round when they choose
    scheduleFabricPoll();
    scheduleDeadlines();
    schedulePrune();
    scheduleReconcile();
    scheduleActivity();
    return {};
  }));
  return report;
}

void Engine::stop(Duration grace) {
  if (!loop_.running()) return;
  (void)onControl([this]() -> Result<void> {
    lifecycle_.close();
    return {};
  });
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    auto busy = onControl([this]() -> Result<bool> { return !runner_->running().empty(); });
    if (!busy || !*busy) break;
    if (options_.stepped) {
      if (loop_.runUntilIdle() == 0) break;  // nothing left that could finish them
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  (void)onControl([this]() -> Result<void> {
    lifecycle_.halt();
    pollTimer_->timer.cancel();
    pollTimer_->pruneTimer.cancel();
    pollTimer_->reconcileTimer.cancel();
    pollTimer_->deadlineTimer.cancel();
    pollTimer_->activityTimer.cancel();
    runner_->cancelRetries();  // not a call yet: the step runs at the next start
    if (const auto& running = runner_->running(); !running.empty())
      spdlog::warn("stopping with {} operation(s) unfinished; they resume at next start", running.size());
    writeIdleStretchesAtStop();
    return {};
  });
  // Driver calls cannot be interrupted; wait for their results so that each is recorded.
  while (true) {
    auto inFlight = onControl([this]() -> Result<int> { return loop_.callsInFlight(); });
    if (!inFlight || *inFlight == 0) break;
    if (options_.stepped) {
      if (loop_.runUntilIdle() == 0) break;
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  (void)onControl([this]() -> Result<void> {
    events_.closeAll();
    // Waiters get the operation as it stands (unfinished, resumable) rather than waiting on a halted engine.
    for (const auto& id : waiters_.waitedFor()) {
      if (const Operation* op = runner_->find(id)) completeWaiters(id, *op);
      else if (const Operation* queued = queue_.find(id)) completeWaiters(id, *queued);
      else waiters_.drop(id);  // a standby's wait for an operation it only read in the store: answered kAborted
    }
    pollTimer_->guard.reset();
    loop_.context().stop();
    return {};
  });
  // From here on, calls are answered kAborted at once; what was posted before is drained below.
  // Whatever was posted meanwhile is answered kAborted, here, while the engine is whole.
  loop_.close();
  // The reads in flight answer before stop() returns, so that no adapter hears from the engine after it (yardd
  // closes its servers next). A read asked for later is dropped.
  loop_.joinReads();
}

Result<std::optional<Operation>> Engine::priorOperation(const Caller& caller, std::string_view action, const std::string& requestId) {
  if (requestId.size() > 256) return fail(Code::kInvalidArgument, fmt::format("request id of {} characters: at most 256", requestId.size()));
  std::optional<Operation> prior;
  for (const auto& [id, op] : runner_->running())
    if (op.requestId == requestId) prior = op;
  for (const auto& [id, op] : queue_.waiting())
    if (op.requestId == requestId) prior = op;
  if (!prior) {
    SY_TRY(writeStaged());  // the store answers for what memory no longer holds: it must have what memory had
    SY_ASSIGN(prior, store_.findOperationByRequest(requestId));
  }
  if (!prior) return prior;
  if (!maySee(caller, prior->tenant) || toString(prior->kind) != action)
    return fail(Code::kAlreadyExists, fmt::format("request id '{}' was used for another request{}", requestId,
                                                  maySee(caller, prior->tenant) ? fmt::format(" ({} {})", toString(prior->kind), prior->id) : ""));
  return prior;
}

Result<Operation> Engine::audited(const Caller& caller, std::string action, const std::string& target, std::string tenant,
                                  const std::string& requestId, const std::function<Result<Operation>(const Acceptance&)>& accept) {
  if (!requestId.empty()) {
    SY_TRY(checkAccepting());
    SY_ASSIGN(auto prior, priorOperation(caller, action, requestId));
    if (prior) {
      spdlog::info("{} {} again (request id '{}'): answering with {}", caller.identity, action, requestId, prior->id);
      return *prior;
    }
  }
  if (tenant.empty())  // a change to an existing system: that system's tenant, when the caller may see it
    if (const System* s = state_ ? state_->findSystem(target) : nullptr; s && maySee(caller, s->tenant)) tenant = s->tenant;
  const Acceptance acceptance{AuditRecord{0, clock_.now(), caller, std::move(action), target, std::move(tenant), "accepted", {}, {}, {}, 0},
                              requestId};
  Result<Operation> result = accept(acceptance);
  AuditRecord record = acceptance.audit;
  // A refusal is recorded on its own, unless yardd is not taking work at all (starting, stopping, or its
  // store failed: then there is nothing to write to).
  if (!result && result.error().code != Code::kUnavailable && result.error().code != Code::kAborted) {
    record.sequence = numbers_.nextAudit();
    record.result = std::string(codeName(result.error().code));
    if (options_.metrics) options_.metrics->refusals.add({record.action, record.result});
    record.message = result.error().message;
    Mutation m;
    m.writes.emplace_back(PutAudit{std::move(record)});
    if (auto r = persist(m); !r) spdlog::warn("cannot record a refused request in the audit trail: {}", r.error().message);
  }
  return result;
}

Result<void> EngineCore::recordAudit(AuditRecord record) {
  if (!inTask()) return answerFromTask("record an audit", [&](EngineCore& core) { return core.recordAudit(std::move(record)); });
  if (engine_.standby_.on() || engine_.lifecycle_.failed()) return engine_.checkAccepting();
  if (record.at == 0) record.at = engine_.clock_.now();
  record.sequence = engine_.numbers_.nextAudit();
  Mutation m;
  m.writes.emplace_back(PutAudit{std::move(record)});
  return engine_.persist(m);
}

Result<void> Engine::runCore(const std::function<void(EngineCore&)>& f) {
  return onControl([&]() -> Result<void> {
    EngineCore core(*this);
    f(core);
    return {};
  });
}

Result<Operation> EngineCore::compose(const Caller& caller, const ComposeRequest& request) {
  if (!inTask()) return answerFromTask("compose", [&](EngineCore& core) { return core.compose(caller, request); });
  // A template is laid under the request first: what is checked, queued and stored is the request it makes.
  std::optional<Result<ComposeRequest>> expanded;
  if (!request.machineTemplate.empty()) expanded = applyTemplate(engine_.options_.templates, request);
  const std::string& tenant = request.placement.tenant;
  return engine_.audited(caller, "compose", request.name, tenant, request.requestId, [&](const Engine::Acceptance& a) -> Result<Operation> {
    if (!expanded) return engine_.acceptCompose(a, request);
    if (!*expanded) return fail(expanded->error());
    return engine_.acceptCompose(a, **expanded);
  });
}

Result<Operation> EngineCore::decompose(const Caller& caller, const std::string& system, const std::string& requestId) {
  if (!inTask()) return answerFromTask("decompose", [&](EngineCore& core) { return core.decompose(caller, system, requestId); });
  return engine_.audited(caller, "decompose", system, {}, requestId,
                         [&](const Engine::Acceptance& a) { return engine_.acceptDecompose(a, system); });
}

Result<Operation> EngineCore::attach(const Caller& caller, const AttachRequest& request) {
  if (!inTask()) return answerFromTask("attach", [&](EngineCore& core) { return core.attach(caller, request); });
  return engine_.audited(caller, "attach", request.system, {}, request.requestId,
                         [&](const Engine::Acceptance& a) { return engine_.acceptAttach(a, request); });
}

Result<Operation> EngineCore::detach(const Caller& caller, const DetachRequest& request) {
  if (!inTask()) return answerFromTask("detach", [&](EngineCore& core) { return core.detach(caller, request); });
  return engine_.audited(caller, "detach", request.system, {}, request.requestId,
                         [&](const Engine::Acceptance& a) { return engine_.acceptDetach(a, request); });
}

Engine::CancelWait Engine::waitOperation(const OperationId& id, std::chrono::milliseconds timeout, Completion<Operation> done) {
  auto wait = waiters_.make(std::move(done));
  // Cancelling releases the wait on the control thread: it leaves, its timer stopped, answered kAborted.
  CancelWait cancel = [this, id, weak = std::weak_ptr<OperationWaiters::Wait>(wait)] {
    if (weak.expired()) return;
    postToControl([this, id, weak](bool running) {
      auto w = weak.lock();
      if (!w || !running) return;
      waiters_.cancel(id, w);
    });
  };
  postToControl([this, id, timeout, wait](bool running) {
    if (!running) return;  // the wait is dropped: kAborted
    // An answer here comes before this task's commit point: the store and the view first show what the batch's
    // tasks before it did (the operation may have ended in one of them, group_commit.h).
    if (runner_->find(id) == nullptr && !queue_.contains(id)) {
      // Ended lately: answered at this task's commit point, once the batch that holds the end is written (recent_ends.h).
      if (const Operation* ended = recentEnds_.find(id)) {
        toOutbox([wait, op = *ended] { OperationWaiters::answer(*wait, op); },
                 [wait](const Error& refused) { OperationWaiters::answer(*wait, std::unexpected(refused)); });
        return;
      }
      commitNow();
      auto stored = store_.getOperation(id);
      if (!stored) return OperationWaiters::answer(*wait, fail(stored.error()));
      if (!*stored) return OperationWaiters::answer(*wait, fail(Code::kNotFound, fmt::format("no operation '{}' (see `yardctl ops`)", id)));
      // A standby may read an operation the leader started after the standby's last refresh: wait for it.
      if (!standby_.on() || (*stored)->finished()) return OperationWaiters::answer(*wait, std::move(**stored));
    }
    // A halted engine (its store failed, or stop's grace ran out) finishes nothing: say how it stands now,
    // rather than wait for an end that cannot come (a start whose resume hit a failed store hung here).
    if (lifecycle_.halted() && !standby_.on())
      if (const Operation* op = runner_->find(id)) {
        commitNow();
        return OperationWaiters::answer(*wait, *op);
      }
    waiters_.add(id, wait, timeout, [this, id](OperationWaiters::Wait& w) {  // its time is up: as it stands
      CommitPoint commit{*this};
      commitNow();  // as it stands in the store and the view too: a batch still open holds the tasks before this one
      if (const Operation* op = runner_->find(id)) return OperationWaiters::answer(w, *op);
      if (const Operation* op = queue_.find(id)) return OperationWaiters::answer(w, *op);
      if (standby_.on()) {  // still running on the leader as far as the store said
        auto stored = store_.getOperation(id);
        if (!stored || !*stored)
          return OperationWaiters::answer(w, stored ? fail(Code::kNotFound, fmt::format("no operation '{}' (see `yardctl ops`)", id))
                                                    : fail(stored.error()));
        OperationWaiters::answer(w, std::move(**stored));
      }
    });
  });
  return cancel;
}

Result<Operation> Engine::waitOperation(const OperationId& id, std::chrono::milliseconds timeout) {
  // A stepped engine's caller runs what waits until the operation ends; when nothing is left to run, the operation
  // is answered as it stands (what a timeout would have said).
  return awaitAnswer<Operation>("waitOperation", [&](Completion<Operation> done) { (void)waitOperation(id, timeout, std::move(done)); },
                                [&] { return EngineCore(*this).getOperation(id); });
}

void Engine::completeWaiters(const OperationId& id, const Operation& op) {
  if (op.finished()) recentEnds_.ended(op);
  if (auto answer = waiters_.takeAll(id, op)) toOutbox([answer] { answer(nullptr); }, [answer](const Error& refused) { answer(&refused); });
}

Result<std::shared_ptr<EventStream>> EngineCore::subscribe() {
  if (!inTask()) return answerFromTask("subscribe", [&](EngineCore& core) { return core.subscribe(); });
  return engine_.events_.subscribe();
}

Result<EventSubscription> EngineCore::subscribeAfter(std::optional<std::uint64_t> lastSeen, std::size_t replayLimit) {
  if (!inTask()) {
    auto subscribed = answerFromTask("subscribe", [&](EngineCore& core) { return core.subscribeAfter(lastSeen, replayLimit); });
    if (!subscribed && subscribed.error().code == Code::kAborted) return fail(Code::kUnavailable, "yardd is starting or stopping; retry shortly");
    return subscribed;
  }
  if (engine_.loop_.stopped()) return fail(Code::kUnavailable, "yardd is starting or stopping; retry shortly");
  auto live = engine_.events_.subscribe();
  std::vector<Event> replay;
  if (lastSeen) {
    (void)engine_.writeStaged();  // the batch's events: in the replay, not only live
    auto recorded = engine_.store_.listEvents(*lastSeen, replayLimit);
    if (!recorded) {
      live->close();
      return std::unexpected(recorded.error());
    }
    replay = std::move(*recorded);
  }
  return EventSubscription{std::move(live), std::move(replay), lastSeen.value_or(0)};
}

Event Engine::makeEvent(std::string type, std::string subject, std::string message, std::string actor) {
  return events_.make(clock_.now(), std::move(type), std::move(subject), std::move(message), std::move(actor));
}

Event Engine::operationEvent(std::string type, const Operation& op, std::string message, std::string actor) {
  Event e = makeEvent(std::move(type), op.id, std::move(message), std::move(actor));
  e.tenant = op.tenant;
  e.systemId = op.systemId;
  return e;
}

std::string Engine::systemOf(const std::string& subject) const {
  if (const Operation* op = runner_->find(subject)) return op->systemId;
  if (const Operation* op = queue_.find(subject)) return op->systemId;
  if (!state_) return {};
  if (state_->systems().contains(subject)) return subject;
  if (state_->index().device(subject) == nullptr) return {};
  const DeviceView d = state_->deviceView(subject);
  if (!d.systemId.empty()) return d.systemId;
  if (d.assignment.allocation == DeviceAllocation::kReserved) {
    if (const Operation* op = runner_->find(d.assignment.owner)) return op->systemId;
    if (state_->systems().contains(d.assignment.owner)) return d.assignment.owner;
  }
  return {};
}

std::string Engine::tenantOf(const std::string& subject) const {
  if (const Operation* op = runner_->find(subject)) return op->tenant;
  if (const Operation* op = queue_.find(subject)) return op->tenant;
  // By id only: most subjects are devices, and a lookup by name would scan every system for each of them.
  if (!state_) return {};
  if (auto s = state_->systems().find(subject); s != state_->systems().end()) return s->second.tenant;
  // A device: whoever holds it (a system it is in, or the operation reserving it).
  if (state_->index().device(subject) == nullptr) return {};
  const DeviceView d = state_->deviceView(subject);
  if (!d.systemId.empty())
    if (auto s = state_->systems().find(d.systemId); s != state_->systems().end()) return s->second.tenant;
  if (d.assignment.allocation == DeviceAllocation::kReserved) {
    if (const Operation* op = runner_->find(d.assignment.owner)) return op->tenant;
    if (auto s = state_->systems().find(d.assignment.owner); s != state_->systems().end()) return s->second.tenant;
  }
  return {};
}

Result<void> Engine::persist(Mutation& m) {
  if (standby_.on()) return fail(Code::kUnavailable, "a standby's engine never writes the store");  // a safety net: nothing reaches here
  for (auto& e : m.events) {
    if (e.tenant.empty()) e.tenant = tenantOf(e.subject);
    if (e.systemId.empty()) e.systemId = systemOf(e.subject);
    m.writes.emplace_back(PutEvent{e});
  }
  publish(m.events);  // delivered at the commit point, in order with the task's other deliveries, once written
  if (commits_.stage(m.writes)) return writeStaged();
  return {};
}

void Engine::commitNow() {
  (void)writeStaged();
  publishView();
}

Result<void> Engine::writeStaged() {
  if (commits_.empty()) {
    outbox_.written();
    return {};
  }
  const std::size_t tasks = commits_.tasks();
  const std::vector<StoreWrite> batch = commits_.take();
  const auto started = std::chrono::steady_clock::now();
  auto written = store_.write(batch, writerEpoch_);
  if (options_.metrics) {
    options_.metrics->storeWriteSeconds.observe({}, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    options_.metrics->storeWriteTasks.add({}, static_cast<double>(tasks));
    if (!written) options_.metrics->storeWriteErrors.add({});
  }
  if (auto& r = written; !r) {
    // The engine has stopped taking work: callers get what checkAccepting() tells the ones after them. What waited
    // for these writes is refused; what halting adds after them (the waits, answered as they stand) is not.
    const Error refused{Code::kUnavailable, fmt::format("yardd stopped taking work because its store failed ({}); restart it", r.error().message)};
    outbox_.failed(refused);
    auto count = [&batch]<typename Kind>(Kind*) {
      return static_cast<std::size_t>(std::count_if(batch.begin(), batch.end(), [](const StoreWrite& w) { return std::holds_alternative<Kind>(w); }));
    };
    events_.unmake(count(static_cast<PutEvent*>(nullptr)));  // their numbers are given again
    numbers_.auditNotWritten(count(static_cast<PutAudit*>(nullptr)));
    haltOnStoreFailure(r.error());
    return std::unexpected(refused);
  }
  events_.stored();
  outbox_.written();
  return {};
}

void Engine::haltOnStoreFailure(const Error& error) {
  // Whatever the write was (a step's outcome, an acceptance, an event), the store either fails or has fenced
  // this yardd out: running on would let memory and disk disagree. Stop working, not the process: the next
  // start resumes every operation from its last durable step, and callers are told why until then.
  halt(error.message, fmt::format("cannot write to the store ({}); refusing new work and starting no more steps: restart yardd to resume "
                                  "from the last recorded step",
                                  error.message));
}

void Engine::haltOnInternalFailure(const std::string& what) {
  halt("a failure inside the engine: " + what,
       fmt::format("the engine's control thread caught a failure ({}); what it was changing is unknown, so yardd refuses new work and "
                   "starts no more steps: restart it to resume from the last recorded step",
                   what));
}

void Engine::halt(const std::string& why, const std::string& logLine) {
  if (lifecycle_.haltForGood(why)) {
    spdlog::critical("{}", logLine);
    if (options_.onHalt) options_.onHalt(why);
  }
  recentEnds_.clear();  // an end recorded there may be one the failed write lost
  // No operation will finish now: whoever waits for one gets it as it stands (resumable at the next start).
  for (const auto& id : waiters_.waitedFor())
    if (const Operation* op = runner_->find(id)) completeWaiters(id, *op);
}

std::string Engine::storeFailure() const {
  return lifecycle_.failureForReaders();
}

void Engine::publish(const std::vector<Event>& events) {
  if (events.empty()) return;
  toOutbox([this, events] { deliverEvents(events); });
}

void Engine::deliverEvents(const std::vector<Event>& events) {
  for (const auto& e : events) spdlog::debug("event {} {} {}: {}", e.sequence, e.type, e.subject, e.message);
  events_.deliver(events);
}

}  // namespace switchyard
