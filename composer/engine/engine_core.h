// The engine's core calls: what an adapter may ask of the engine on its control thread, where each call
// answers inline, never blocks and never waits for a switch (issue 36, item 1; ADR 0025).
//
// An EngineCore exists only inside EngineClient::run and Engine::call, on the control thread; no adapter can
// hold one elsewhere, so no adapter can block on the engine or call into it from the wrong thread. A call
// that needs several of these at once (look up the request's earlier operation, then compose) runs them in
// one `run`: nothing else happens on the pool between them.
//
// Each call is declared here once and defined where its concern lives (engine.cpp: compose, decompose,
// attach, detach; engine_queue.cpp, engine_leases.cpp, engine_forget.cpp, engine_reads.cpp,
// engine_reservations.cpp): adding a call is one line here and its body there. Tests, tools and the daemon's
// start make the same calls blocking, through Engine::blocking() (engine.h): such a core's call runs as a task
// of its own on the control thread and answers the calling thread once what it changed is written and
// published.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "composer/engine/engine_requests.h"
#include "composer/engine/pool_view.h"
#include "composer/engine/reservation.h"
#include "composer/model/audit.h"
#include "composer/model/caller.h"
#include "composer/model/access.h"
#include "composer/model/composition.h"
#include "composer/model/event_stream.h"
#include "composer/model/queue.h"
#include "composer/packing/packing.h"
#include "inventory/store.h"

namespace switchyard {

class Engine;
class EngineClient;

class EngineCore {
 public:
  EngineCore(const EngineCore&) = delete;
  EngineCore& operator=(const EngineCore&) = delete;

  // Changes: each is accepted (the operation returned is durable and running; EngineClient::waitOperation
  // follows it), queued (a compose that does not fit now, when its class queues), or refused with nothing
  // changed; every one is audited, refusals too. A request id (ComposeRequest::requestId and the like) that
  // started an operation before returns that operation instead of starting another.
  [[nodiscard]] Result<Operation> compose(const Caller& caller, const ComposeRequest& request);
  [[nodiscard]] Result<Operation> decompose(const Caller& caller, const std::string& system, const std::string& requestId = {});
  [[nodiscard]] Result<Operation> attach(const Caller& caller, const AttachRequest& request);
  [[nodiscard]] Result<Operation> detach(const Caller& caller, const DetachRequest& request);
  // A queued request (by its operation id or its system's name) out of the queue: the operation fails as
  // cancelled and the name is free again. Decomposing a queued system cancels it too.
  [[nodiscard]] Result<Operation> cancelQueued(const Caller& caller, const std::string& idOrName);
  // The system's lease ends `lease` from now (a system without one gets one).
  [[nodiscard]] Result<System> renewLease(const Caller& caller, const std::string& system, std::chrono::milliseconds lease);
  // An admin drops a system whose devices no fabric reports (engine_forget.cpp): decomposed, nothing unbound.
  [[nodiscard]] Result<System> forgetSystem(const Caller& caller, const std::string& system);
  // A dry run of a placement: where it would go now, or what moves or preemption would make room (engine_requests.h).
  [[nodiscard]] Result<PlanOutcome> plan(const PlacementRequest& request, std::string_view priorityClass = {});
  // Several systems at once (engine_reservations.cpp): a manifest's systems are placed together, each on
  // what the ones before it left. planSystems holds nothing; reserve holds the placements for `lifetime`
  // (see reservation.h); composeReserved composes a reservation's systems, accepted all or none, one
  // operation each; composeTogether is reserve + composeReserved in one step. A reservation may be seen by
  // who may see its tenant, and applied or released by who reserved it or an administrator.
  [[nodiscard]] Result<std::vector<Placement>> planSystems(const std::vector<ComposeRequest>& requests);
  [[nodiscard]] Result<Reservation> reserve(const Caller& caller, const std::vector<ComposeRequest>& requests, Duration lifetime);
  [[nodiscard]] Result<std::vector<Reservation>> listReservations();
  [[nodiscard]] Result<void> releaseReservation(const Caller& caller, const std::string& id);
  [[nodiscard]] Result<std::vector<Operation>> composeReserved(const Caller& caller, const std::string& id);
  [[nodiscard]] Result<std::vector<Operation>> composeTogether(const Caller& caller, const std::vector<ComposeRequest>& requests);

  // An operation by id or by the client's request id (running ones included). Lists of the history are read
  // off the control thread: EngineClient::read.
  [[nodiscard]] Result<Operation> getOperation(const OperationId& id);
  [[nodiscard]] Result<std::optional<Operation>> operationForRequest(const Caller& caller, const std::string& requestId);
  // Systems, devices and hosts: EngineClient reads them from the published view, on any thread.

  // What the daemon and the engine's own timers ask for (the timers on a core of their task).
  // Leases and deadlines (engine_leases.cpp): gives up queued requests past their timeout, lets reservations past
  // their time go, preempts for a head whose grace is over and decomposes systems past their lease (also every
  // EngineOptions::deadlineInterval); what it started, as operations.
  [[nodiscard]] Result<std::vector<Operation>> expireDeadlines();
  // History past EngineOptions::retention, pruned (engine_rounds.cpp; also every EngineOptions::pruneInterval).
  [[nodiscard]] Result<PruneReport> pruneHistory();
  // The tenants' quotas and shares from now on (yardd reloaded its identities file): they bound what is accepted
  // next (nothing running is undone), and the queue is ordered again by the new shares (engine_queue.cpp).
  [[nodiscard]] Result<void> setQuotas(TenantQuotas quotas);
  // A record no request makes (a password lockout, an agent's removal) in the audit trail, numbered after the
  // last; `at` 0 is now. Refused (kUnavailable) where nothing can be written: a standby, a failed store.
  [[nodiscard]] Result<void> recordAudit(AuditRecord record);
  // Live events from now on. subscribeAfter first replays the recorded events after `lastSeen` (none when
  // nullopt), subscribed before the log is read, so nothing falls between the two (an event in both is the
  // reader's to skip by its sequence: net::EventFeed does); refused (kUnavailable) while the engine starts or
  // stops, or when the log cannot be read. What a reconnecting SSE client (Last-Event-ID) asks for.
  [[nodiscard]] Result<std::shared_ptr<EventStream>> subscribe();
  [[nodiscard]] Result<EventSubscription> subscribeAfter(std::optional<std::uint64_t> lastSeen, std::size_t replayLimit = 10'000);

 private:
  friend class Engine;
  friend class EngineClient;
  // `blocking`: a core for threads other than the control thread (Engine::blocking()).
  explicit EngineCore(Engine& engine, bool blocking = false) : engine_(engine), blocking_(blocking) {}
  // Whether a call runs its body here: on a core made for the control thread, on that thread. Checked by every
  // call in every build, not only with assertions on: a call off the control thread would race with everything the
  // engine owns.
  [[nodiscard]] bool inTask() const;
  // A call that does not run here: a blocking core's runs `call` on a core of the control thread as a task of its
  // own and waits for its answer; any other's is refused (kInternal), logged, and changes nothing.
  template <typename Call>
  auto answerFromTask(std::string_view what, Call&& call) -> std::invoke_result_t<Call, EngineCore&> {
    using R = std::invoke_result_t<Call, EngineCore&>;
    std::optional<R> answer;
    auto done = runInTask(what, [&](EngineCore& core) { answer.emplace(call(core)); });
    if (!done) return R(std::unexpected(done.error()));
    return std::move(*answer);
  }
  [[nodiscard]] Result<void> runInTask(std::string_view what, const std::function<void(EngineCore&)>& call);
  Engine& engine_;
  bool blocking_;
};

}  // namespace switchyard
