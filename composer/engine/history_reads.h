// Reads of the history (issue 59: one declaration per call): operations, events, the audit trail and usage, as the
// store holds them (what the last commit point wrote). Any thread (the store's history reads are safe there:
// inventory/store.h), never the control thread: adapters run them on the engine's read pool (EngineClient::read),
// tests and tools on their own thread (Engine::history()). One of the engine's parts; it owns nothing but where it
// reads from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "composer/engine/event_log.h"
#include "composer/engine/idle_reclaim.h"
#include "composer/engine/pool_reads.h"
#include "composer/engine/usage.h"
#include "composer/model/audit.h"
#include "composer/model/caller.h"
#include "composer/model/clock.h"
#include "inventory/store.h"

namespace switchyard {

class HistoryReads {
 public:
  // Where the history comes from: the store, the newest event it holds (EventLog::storedSequence, any thread), what
  // idle reclaim has not written yet (IdleReclaim::unwritten, under its mutex), the pool as published (usage names
  // live systems and devices from it) and the clock.
  struct Sources {
    Store& store;
    const EventLog& events;
    const IdleReclaim& idle;
    const PoolReads& pool;
    const Clock& clock;
  };
  explicit HistoryReads(Sources from) : from_(from) {}

  // Operations, newest first, as the query filters them (`{.limit = n}`: the newest n).
  [[nodiscard]] Result<std::vector<Operation>> listOperations(const OperationQuery& query) const;
  [[nodiscard]] Result<std::optional<Operation>> getOperation(const OperationId& id) const;  // nullopt: none such
  // Systems' names and labels, ended ones too while history keeps them (an operation names its system after it is gone).
  [[nodiscard]] Result<std::map<SystemId, SystemIdentity>> systemIdentities(const std::set<SystemId>& ids) const;
  [[nodiscard]] Result<std::vector<Event>> listEvents(std::uint64_t afterSequence, std::size_t limit) const;
  [[nodiscard]] Result<std::vector<Event>> recentEvents(std::size_t limit) const;  // the last `limit`, oldest first
  // The audit trail, newest first (composer/model/audit.h). Callers filter by what the asker may see.
  [[nodiscard]] Result<std::vector<AuditRecord>> listAudit(const AuditQuery& query) const;
  // Usage accounting (usage.h): GPU-hours between `since` and `until` (0: now) from the operation log, per tenant,
  // system and GPU model, of the tenants the caller may see. Reads up to kUsageHistory operations (see
  // docs/operations.md for its cost) and computes on the calling thread.
  static constexpr std::size_t kUsageHistory = 100'000;
  [[nodiscard]] Result<UsageReport> usage(const Caller& caller, Timestamp since, Timestamp until) const;

 private:
  Sources from_;
};

}  // namespace switchyard
