// The embedded default Store: one SQLite file in WAL mode. See docs/adr/0003-store.md for the choice
// of synchronous mode. Writes and load() use one connection (the engine's control thread); the history
// reads use a second one, so that any thread may read the history while the writer writes (WAL lets a
// reader see the last commit without waiting for the writer).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "inventory/sqlite_db.h"
#include "inventory/store.h"
#include "inventory/system_rows_written.h"

namespace switchyard {

class SqliteStore final : public Store {
 public:
  // Opens (creating if needed) and migrates the schema to the newest version. A database written by a
  // newer Switchyard is refused rather than guessed at.
  [[nodiscard]] static Result<std::unique_ptr<SqliteStore>> open(const std::filesystem::path& path,
                                                                 Durability durability = Durability::kNormal);

  [[nodiscard]] Result<StoreSnapshot> load(LoadScope scope = LoadScope::kEverything) override;
  [[nodiscard]] Result<WriterEpoch> claimWriter() override;
  [[nodiscard]] Result<void> write(std::span<const StoreWrite> batch, WriterEpoch epoch) override;
  [[nodiscard]] Result<std::optional<Operation>> getOperation(const OperationId& id) override;
  [[nodiscard]] Result<std::optional<Operation>> findOperationByRequest(std::string_view requestId) override;
  [[nodiscard]] Result<std::vector<Operation>> queryOperations(const OperationQuery& query) override;
  [[nodiscard]] Result<std::vector<Event>> listEvents(std::uint64_t afterSequence, std::size_t limit) override;
  [[nodiscard]] Result<std::vector<AuditRecord>> listAudit(const AuditQuery& query) override;
  [[nodiscard]] Result<std::map<SystemId, SystemIdentity>> systemIdentities(const std::set<SystemId>& ids) override;
  [[nodiscard]] Result<std::vector<IdleStretch>> listIdleStretches(Timestamp since, Timestamp until) override;

  [[nodiscard]] Result<PruneReport> prune(const RetentionPolicy& policy, WriterEpoch epoch) override;

  [[nodiscard]] Result<int> schemaVersion();

 private:
  SqliteStore(std::unique_ptr<SqliteDb> db, std::unique_ptr<SqliteDb> reader) : db_(std::move(db)), reader_(std::move(reader)) {}
  [[nodiscard]] Result<void> migrate();
  [[nodiscard]] Result<void> checkIntegrity(const std::filesystem::path& path);
  [[nodiscard]] Result<WriterEpoch> currentWriter();
  // Inside a write transaction: fails unless `epoch` is the newest claimed writer epoch.
  [[nodiscard]] Result<void> checkWriter(WriterEpoch epoch);
  [[nodiscard]] Result<void> apply(const PutInventory& w);
  [[nodiscard]] Result<void> apply(const PutSystem& w);
  [[nodiscard]] Result<void> apply(const PutOperation& w);
  [[nodiscard]] Result<void> apply(const PutAssignment& w);
  [[nodiscard]] Result<void> apply(const PutEvent& w);
  [[nodiscard]] Result<void> apply(const PutDemand& w);
  [[nodiscard]] Result<void> apply(const PutAudit& w);
  [[nodiscard]] Result<void> apply(const PutAuditOutcome& w);
  [[nodiscard]] Result<void> apply(const PutIdleStretch& w);
  [[nodiscard]] Result<std::optional<Topology>> loadInventory();
  [[nodiscard]] Result<std::vector<System>> loadSystems();
  // `bindMore` binds the where clause's parameters from ?3 on (?1 is `param`, ?2 the limit).
  // On `db`: the writer's connection (load) or the reader's (history reads, under readerMutex_).
  [[nodiscard]] static Result<std::vector<Operation>> loadOperations(SqliteDb& db, const std::string& whereClause, std::size_t limit,
                                                                     std::string_view param, const std::function<void(Statement&)>& bindMore = {});
  [[nodiscard]] static Result<void> loadSteps(SqliteDb& db, Operation& op);
  // What the compose of a system asked for (System::asked) as the systems table stores it. A system is written at
  // every step of its operations while what it asked for stays the same: the JSON is made again only when that
  // differs from what was last written for the system (kept until the system ends; the writer's only).
  [[nodiscard]] const std::string& askedTextOf(const System& s);
  struct AskedText {
    QueuedRequest asked;
    std::string text;
  };
  std::unordered_map<SystemId, AskedText> askedText_;
  // Each live system's child rows as the writer last committed them: a table is written when its rows differ.
  SystemRowsWritten systemRows_;

  std::unique_ptr<SqliteDb> db_;
  std::unique_ptr<SqliteDb> reader_;
  std::mutex readerMutex_;  // one history read at a time on reader_ (its statements are cached and reused)
};

}  // namespace switchyard
