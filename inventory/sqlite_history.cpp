// The SQLite store's history: operations looked up by id, request id or query, the event log, the audit
// trail, and pruning what the retention policy no longer keeps. The current state (inventory, systems,
// assignments, the batch writer) is in sqlite_store.cpp.
#include <fmt/format.h>

#include "inventory/sqlite_columns.h"
#include "inventory/sqlite_store.h"

namespace switchyard {

namespace {

// The history reads below run on any thread: on the reader's connection, one at a time, each in one read
// transaction, so that an operation and its steps come from the same commit.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(SqliteDb& db) : db_(db), open_(db.exec("BEGIN").has_value()) {}
  ~ReadSnapshot() {
    if (!open_) return;
    // A read that failed half-way may leave a statement stepping, and COMMIT would fail behind it: the
    // connection would keep this snapshot for good. Every statement is reset first.
    for (sqlite3_stmt* st = sqlite3_next_stmt(db_.handle(), nullptr); st != nullptr; st = sqlite3_next_stmt(db_.handle(), st)) sqlite3_reset(st);
    (void)db_.exec("COMMIT");
  }
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;

 private:
  SqliteDb& db_;
  bool open_;
};

}  // namespace

Result<std::optional<Operation>> SqliteStore::getOperation(const OperationId& id) {
  std::lock_guard lock(readerMutex_);
  const ReadSnapshot snapshot(*reader_);
  SY_ASSIGN(auto ops, loadOperations(*reader_, "WHERE id = ?1", 1, id));
  if (ops.empty()) return std::optional<Operation>{};
  return std::optional<Operation>(std::move(ops.front()));
}

Result<std::optional<Operation>> SqliteStore::findOperationByRequest(std::string_view requestId) {
  if (requestId.empty()) return std::optional<Operation>{};
  std::lock_guard lock(readerMutex_);
  const ReadSnapshot snapshot(*reader_);
  // The repeated `request_id <> ''` lets SQLite use the partial index (a bound parameter alone cannot).
  SY_ASSIGN(auto ops, loadOperations(*reader_, "WHERE request_id = ?1 AND request_id <> ''", 1, requestId));
  if (ops.empty()) return std::optional<Operation>{};
  return std::optional<Operation>(std::move(ops.front()));
}

Result<std::vector<Operation>> SqliteStore::queryOperations(const OperationQuery& q) {
  std::lock_guard lock(readerMutex_);
  const ReadSnapshot snapshot(*reader_);
  if (!q.filtered()) return loadOperations(*reader_, "WHERE ?1 IS NULL", q.limit, {});
  return loadOperations(*reader_, "WHERE ?1 IS NULL AND (?3 = '' OR system_id = ?3) AND (?4 = '' OR kind = ?4) AND (?5 = '' OR state = ?5) AND "
                        "(?6 = '' OR tenant = ?6)",
                        q.limit, {}, [&](Statement& st) {
                          st.bind(3, q.systemId)
                              .bind(4, q.kind ? toString(*q.kind) : std::string_view(""))  // "", not NULL
                              .bind(5, q.state ? toString(*q.state) : std::string_view(""))
                              .bind(6, q.tenant);
                        });
}

Result<std::vector<Event>> SqliteStore::listEvents(std::uint64_t afterSequence, std::size_t limit) {
  std::vector<Event> out;
  std::lock_guard lock(readerMutex_);
  const ReadSnapshot snapshot(*reader_);
  SY_ASSIGN(auto st, reader_->prepare("SELECT sequence, at, type, subject, message, actor, tenant, system_id FROM events WHERE sequence > ?1 ORDER BY "
                                  "sequence LIMIT ?2"));
  st.bind(1, static_cast<std::int64_t>(afterSequence)).bind(2, static_cast<std::int64_t>(limit));
  while (true) {
    SY_ASSIGN(bool row, st.step());
    if (!row) break;
    out.push_back({static_cast<std::uint64_t>(st.integer(0)), st.integer(1), st.text(2), st.text(3), st.text(4), st.text(5), st.text(6), st.text(7)});
  }
  st.reset();
  return out;
}

Result<std::vector<AuditRecord>> SqliteStore::listAudit(const AuditQuery& q) {
  std::vector<AuditRecord> out;
  std::lock_guard lock(readerMutex_);
  const ReadSnapshot snapshot(*reader_);
  SY_ASSIGN(auto st, reader_->prepare("SELECT sequence, at, identity, role, caller_tenant, action, target, tenant, result, message, operation_id, "
                                  "outcome, finished_at FROM audit WHERE (?1 = '' OR tenant = ?1 OR caller_tenant = ?1) AND (?2 = '' OR identity = ?2) AND at >= ?3 "
                                  "AND (?4 = 0 OR at < ?4) AND (?5 = 0 OR sequence < ?5) ORDER BY sequence DESC LIMIT ?6"));
  st.bind(1, q.tenant).bind(2, q.identity).bind(3, q.since).bind(4, q.until).bind(5, static_cast<std::int64_t>(q.beforeSequence))
      .bind(6, static_cast<std::int64_t>(q.limit));
  while (true) {
    SY_ASSIGN(bool row, st.step());
    if (!row) break;
    AuditRecord a;
    a.sequence = static_cast<std::uint64_t>(st.integer(0));
    a.at = st.integer(1);
    SY_ASSIGN(a.caller.role, parseColumn<Role>(st.text(3), parseRole, "role"));
    a.caller.identity = st.text(2);
    a.caller.tenant = st.text(4);
    a.action = st.text(5);
    a.target = st.text(6);
    a.tenant = st.text(7);
    a.result = st.text(8);
    a.message = st.text(9);
    a.operationId = st.text(10);
    a.outcome = st.text(11);
    a.finishedAt = st.integer(12);
    out.push_back(std::move(a));
  }
  st.reset();
  return out;
}

Result<std::map<SystemId, SystemIdentity>> SqliteStore::systemIdentities(const std::set<SystemId>& ids) {
  std::map<SystemId, SystemIdentity> out;
  std::lock_guard lock(readerMutex_);
  const ReadSnapshot snapshot(*reader_);
  SY_ASSIGN(auto st, reader_->prepare("SELECT name, labels FROM systems WHERE id = ?1"));
  for (const auto& id : ids) {
    st.bind(1, id);
    SY_ASSIGN(bool row, st.step());
    if (row) {
      SY_ASSIGN(auto labels, parseSystemLabels(id, st.text(1)));
      out[id] = SystemIdentity{st.text(0), std::move(labels)};
    }
    st.reset();
  }
  return out;
}

Result<std::vector<IdleStretch>> SqliteStore::listIdleStretches(Timestamp since, Timestamp until) {
  std::vector<IdleStretch> out;
  std::lock_guard lock(readerMutex_);
  const ReadSnapshot snapshot(*reader_);
  SY_ASSIGN(auto st, reader_->prepare("SELECT device_id, system_id, tenant, from_at, to_at FROM idle_stretches WHERE from_at < ?2 AND to_at > ?1 "
                                  "ORDER BY from_at, device_id"));
  st.bind(1, since).bind(2, until);
  while (true) {
    SY_ASSIGN(bool row, st.step());
    if (!row) break;
    out.push_back({st.text(0), st.text(1), st.text(2), st.integer(3), st.integer(4)});
  }
  st.reset();
  return out;
}

Result<PruneReport> SqliteStore::prune(const RetentionPolicy& policy, WriterEpoch epoch) {
  PruneReport report;
  Transaction tx(*db_);
  SY_TRY(tx.begin());
  SY_TRY(checkWriter(epoch));
  auto run = [&](const std::string& sql, std::size_t keep) -> Result<std::size_t> {
    SY_ASSIGN(auto st, db_->prepare(sql));
    SY_TRY(st.bind(1, static_cast<std::int64_t>(keep)).bind(2, static_cast<std::int64_t>(policy.maxRowsPerRun)).run());
    return static_cast<std::size_t>(sqlite3_changes(db_->handle()));
  };
  SY_ASSIGN(report.events, run("DELETE FROM events WHERE sequence IN (SELECT sequence FROM events WHERE sequence <= "
                               "(SELECT MAX(sequence) FROM events) - ?1 ORDER BY sequence LIMIT ?2)",
                               std::max<std::size_t>(1, policy.events)));
  SY_ASSIGN(report.audit, run("DELETE FROM audit WHERE sequence IN (SELECT sequence FROM audit WHERE sequence <= "
                              "(SELECT MAX(sequence) FROM audit) - ?1 ORDER BY sequence LIMIT ?2)",
                              std::max<std::size_t>(1, policy.audit)));
  // Steps first (they reference their operation), then the operations themselves.
  const std::string oldOps = "SELECT id FROM operations WHERE state IN ('succeeded', 'failed') AND number <= "
                             "(SELECT MAX(number) FROM operations) - ?1 ORDER BY number LIMIT ?2";
  // Keep at least the newest row of each kind: ids are numbered from the largest one left.
  const std::size_t keepOperations = std::max<std::size_t>(1, policy.finishedOperations);
  SY_TRY(run("DELETE FROM operation_step_bindings WHERE operation_id IN (" + oldOps + ")", keepOperations));
  SY_TRY(run("DELETE FROM operation_steps WHERE operation_id IN (" + oldOps + ")", keepOperations));
  SY_TRY(run("DELETE FROM operation_gpu_instances WHERE operation_id IN (" + oldOps + ")", keepOperations));
  SY_TRY(run("DELETE FROM operation_gpu_shares WHERE operation_id IN (" + oldOps + ")", keepOperations));
  SY_ASSIGN(report.operations, run("DELETE FROM operations WHERE id IN (" + oldOps + ")", keepOperations));
  const std::string oldSystems = "SELECT id FROM systems WHERE state IN ('decomposed', 'failed') AND number <= "
                                 "(SELECT MAX(number) FROM systems) - ?1 ORDER BY number LIMIT ?2";
  SY_TRY(run("DELETE FROM system_devices WHERE system_id IN (" + oldSystems + ")", keepOperations));
  SY_TRY(run("DELETE FROM system_host_devices WHERE system_id IN (" + oldSystems + ")", keepOperations));
  SY_TRY(run("DELETE FROM system_gpu_instances WHERE system_id IN (" + oldSystems + ")", keepOperations));
  SY_TRY(run("DELETE FROM system_gpu_shares WHERE system_id IN (" + oldSystems + ")", keepOperations));
  SY_ASSIGN(report.systems, run("DELETE FROM systems WHERE id IN (" + oldSystems + ")", keepOperations));
  SY_ASSIGN(report.demand, run("DELETE FROM demand WHERE sequence IN (SELECT sequence FROM demand WHERE sequence <= "
                               "(SELECT MAX(sequence) FROM demand) - ?1 ORDER BY sequence LIMIT ?2)",
                               policy.demand));
  {  // idle stretches that ended before the oldest operation left: usage, which reads that log, reads no further
    SY_ASSIGN(auto st, db_->prepare("DELETE FROM idle_stretches WHERE rowid IN (SELECT rowid FROM idle_stretches WHERE to_at < "
                                    "(SELECT MIN(created_at) FROM operations) ORDER BY from_at LIMIT ?1)"));
    SY_TRY(st.bind(1, static_cast<std::int64_t>(policy.maxRowsPerRun)).run());
    report.idleStretches = static_cast<std::size_t>(sqlite3_changes(db_->handle()));
  }
  SY_TRY(tx.commit());
  return report;
}

}  // namespace switchyard
