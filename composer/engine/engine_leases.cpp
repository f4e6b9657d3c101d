// Deadlines (issue 40): queued requests past their timeout leave the queue, and systems past their lease
// are decomposed through the normal safe path (host-release first: a GPU still in use is never unbound).
// A lease decompose that fails (the host refused to let go) leaves the system whole and overdue: a
// lease.overdue event names why, and yardd tries again every EngineOptions::leaseRetry.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/steady_timer.hpp>

#include "composer/engine/engine.h"
#include "composer/engine/engine_control.h"

namespace switchyard {

namespace {

Caller leaseCaller() { return {std::string(kLeaseActor), Role::kAdmin, {}}; }

}  // namespace

Result<System> EngineCore::renewLease(const Caller& caller, const std::string& idOrName, std::chrono::milliseconds lease) {
  if (!inTask()) return answerFromTask("renew a lease", [&](EngineCore& core) { return core.renewLease(caller, idOrName, lease); });
  SY_TRY(engine_.checkAccepting());
  const System* found = engine_.state_->findSystem(idOrName);
  if (!found || !maySee(caller, found->tenant)) return fail(Code::kNotFound, fmt::format("no system '{}' (see `yardctl systems`)", idOrName));
  std::chrono::milliseconds maxLease = engine_.options_.maxLease;
  if (auto quota = engine_.options_.quotas.find(found->tenant); quota != engine_.options_.quotas.end() && quota->second.maxLease)
    maxLease = std::min(maxLease, *quota->second.maxLease);
  if (lease < std::chrono::seconds(1) || lease > maxLease)
    return fail(Code::kInvalidArgument, fmt::format("lease: between 1s and {}", formatDuration(maxLease)));
  SY_TRY(mayChange(caller, found->tenant, "renew"));
  if (found->state == SystemState::kQueued)
    return fail(Code::kFailedPrecondition, fmt::format("system '{}' is queued: its lease starts when it is admitted", found->name));
  if (found->state == SystemState::kDecomposing)
    return fail(Code::kFailedPrecondition, fmt::format("system '{}' is being decomposed", found->name));
  System system = *found;
  system.leaseExpiresAt = engine_.clock_.now() + std::chrono::duration_cast<Duration>(lease).count();
  system.updatedAt = engine_.clock_.now();
  Mutation m;
  m.writes.emplace_back(PutSystem{system});
  m.events.push_back(engine_.makeEvent("lease.renewed", system.id,
                                       fmt::format("{} ({}): lease renewed by {} for {}, until {}", system.name, system.id, caller.identity,
                                                   formatDuration(lease), formatTimestamp(system.leaseExpiresAt)),
                                       caller.identity));
  SY_TRY(engine_.persist(m));
  engine_.state_->putSystem(system);
  engine_.leaseWatch_.renewed(system.id);
  // A later end may let the queue's head in later: its promise is worked out again.
  engine_.queue_.markDirty();
  return engine_.withProgress(system);
}

void Engine::pruneEndedBookkeeping() {
  auto gone = [this](const SystemId& id) {
    const System* s = state_->system(id);
    return s == nullptr || s->leaseExpiresAt == 0;
  };
  leaseWatch_.prune(gone);
  preemptions_.pruneRetries([this](const OperationId& id) { return queue_.contains(id); });
  defrag_.pruneRetries([this](const OperationId& id) { return queue_.contains(id); });
}

Result<std::size_t> Engine::bookkeepingEntries() {
  return onControl([this]() -> Result<std::size_t> { return leaseWatch_.entries() + preemptions_.retryEntries(); });
}

void Engine::expireLeases(Mutation& m, std::vector<Operation>& started) {
  pruneEndedBookkeeping();
  const Timestamp now = clock_.now();
  const Duration warnBefore = std::chrono::duration_cast<Duration>(options_.leaseWarning);
  std::vector<SystemId> due;
  for (const auto& [id, s] : state_->systems()) {
    switch (leaseWatch_.look(s, now, warnBefore)) {
      case LeaseWatch::Due::kNothing: break;
      case LeaseWatch::Due::kDecompose: due.push_back(id); break;
      case LeaseWatch::Due::kWarn:
        m.events.push_back(makeEvent("lease.expiring", id,
                                     fmt::format("{} ({}): lease ends at {}; `yardctl renew {} --lease DURATION` keeps it", s.name, id,
                                                 formatTimestamp(s.leaseExpiresAt), s.name)));
        break;
    }
  }
  for (const auto& id : due) {
    const System* s = state_->system(id);
    if (s == nullptr) continue;
    const std::string name = s->name;
    const bool retrying = leaseWatch_.tried(id, now, std::chrono::duration_cast<Duration>(options_.leaseRetry));
    auto op = audited(leaseCaller(), "decompose", id, {}, {}, [&](const Acceptance& a) { return acceptDecompose(a, id); });
    if (!op) {
      spdlog::warn("lease of {} ({}) ended but its decompose was refused: {}; trying again in {}", name, id, op.error().message,
                   formatDuration(options_.leaseRetry));
      continue;
    }
    if (options_.metrics) options_.metrics->leaseExpiries.add({"started"});
    m.events.push_back(makeEvent("lease.expired", id,
                                 fmt::format("{} ({}): lease ended; {} decomposes it{}", name, id, op->id,
                                             retrying ? " (again: the last try failed)" : "")));
    started.push_back(*op);
  }
}

Result<std::vector<Operation>> EngineCore::expireDeadlines() {
  if (!inTask()) return answerFromTask("deadlines", [&](EngineCore& core) { return core.expireDeadlines(); });
  std::vector<Operation> started;
  if (engine_.standby_.on() || !engine_.lifecycle_.accepting()) return started;
  engine_.expireReservations();
  Mutation m;
  // Agents past their heartbeat deadline: placement passes their hosts by (no bind that must roll back);
  // one heard again takes work again, and the queue is looked at.
  if (engine_.hosts_ != nullptr) {
    const auto [fell, back] = engine_.state_->setSilentHosts(engine_.hosts_->silentHosts());
    for (const auto& h : fell) {
      spdlog::warn("host {}: {}; placement passes it by until it is heard again", h, engine_.hosts_->status(h));
      m.events.push_back(engine_.makeEvent("host.silent", h, fmt::format("{}: {}; no new work goes to it", h, engine_.hosts_->status(h))));
    }
    for (const auto& h : back) {
      spdlog::info("host {}: heard again ({}); it takes work again", h, engine_.hosts_->status(h));
      m.events.push_back(engine_.makeEvent("host.heard", h, fmt::format("{}: heard again; it takes work again", h)));
      engine_.queue_.markDirty();
    }
  }
  const Timestamp now = engine_.clock_.now();
  std::vector<OperationId> late;
  for (const auto& [id, op] : engine_.queue_.waiting())
    if (op.queued->deadline > 0 && now >= op.queued->deadline) late.push_back(id);
  for (const auto& id : late) {
    const Operation& op = *engine_.queue_.find(id);
    const std::string why = fmt::format("gave up after {} in the queue (--queue-timeout): {}",
                                        formatDuration(std::chrono::milliseconds((now - op.queued->enqueuedAt) / 1'000'000)),
                                        engine_.queue_.why(id) ? *engine_.queue_.why(id) : "it did not fit");
    SY_ASSIGN(auto dropped, engine_.dropQueued(nullptr, id, why, "queue.timed-out", "yardd"));
    (void)dropped;
  }
  // Preemptions more than a day old leave their tenants' disruption budgets: a request that waited on a
  // spent budget may preempt now, so the queue is looked at again.
  if (engine_.disruptionBudget_.expire(now) && !engine_.queue_.empty()) engine_.queue_.markDirty();
  engine_.startPreemption(m, started);
  engine_.expireLeases(m, started);
  if (!m.events.empty()) SY_TRY(engine_.persist(m));
  return started;
}

void Engine::scheduleDeadlines() {
  if (lifecycle_.halted() || options_.deadlineInterval.count() <= 0) return;
  pollTimer_->deadlineTimer.expires_after(options_.deadlineInterval);
  pollTimer_->deadlineTimer.async_wait([this](const boost::system::error_code& ec) {
    CommitPoint commit{*this};
    if (ec || lifecycle_.halted()) return;
    if (auto r = EngineCore(*this).expireDeadlines(); !r) spdlog::warn("leases and queue timeouts: {}", r.error().message);
    scheduleDeadlines();
  });
}

}  // namespace switchyard
