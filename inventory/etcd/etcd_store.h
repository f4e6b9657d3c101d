// A Store on an etcd cluster, for yardd active/standby (issue 26): every record is one key under a prefix
// (`/switchyard/` by default), JSON-valued; a batch is one etcd transaction, so it is atomic, and it is
// fenced: the transaction compares the writer key with the caller's epoch, so a deposed writer's batch
// changes nothing and fails kFailedPrecondition. Passes the same contract suite as SqliteStore
// (tests/contract/store_contract_test.cpp).
//
// Keys (P = the prefix; numbers zero-padded to 20 digits so key order is numeric order):
//   P writer                 the newest writer epoch
//   P inventory              the topology; when larger than a request may be, a manifest naming its chunks
//   P inventory/GEN/N        the chunks of a large topology, generation GEN
//   P systems/N, P ops/N     systems and operations (with their step logs) by their number (sys-N, op-N)
//   P requests/KEY           the operation a client request id started
//   P assignments/DEVICE     devices that are not free
//   P events/N, P audit/N    the event trail and the audit trail by sequence; P auditops/OP -> its audit N
//   P demand/N               recent request shapes
//
// etcd limits the operations of one transaction (--max-txn-ops, 128 by default): run etcd with
// --max-txn-ops 16384 (docs/operations.md), since a reconcile of a large pool writes one event per drift.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "inventory/etcd/etcd_client.h"
#include "inventory/store.h"

namespace switchyard {

struct EtcdStoreOptions {
  std::vector<std::string> endpoints{"http://127.0.0.1:2379"};
  std::string prefix = "/switchyard/";
  std::chrono::milliseconds timeout{5000};
  etcd::ClientSecurity security;  // TLS files and etcd user for https:// endpoints or authentication
};

class EtcdStore final : public Store {
 public:
  // Connects and checks that the cluster answers.
  [[nodiscard]] static Result<std::unique_ptr<EtcdStore>> open(EtcdStoreOptions options);

  [[nodiscard]] Result<StoreSnapshot> load(LoadScope scope = LoadScope::kEverything) override;
  // The inventory key's modification revision (its manifest's, when chunked): moves with every rewrite.
  [[nodiscard]] Result<std::int64_t> inventoryRevision() override;
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

  // From now on every write also requires that the leader key still exists with this creation revision
  // (leader_election.h): a leader whose lease lapsed cannot write, even before a successor claims the store.
  void fenceOn(std::string leaderKey, std::int64_t createRevision) {
    leaderKey_ = std::move(leaderKey);
    leaderRevision_ = createRevision;
  }
  [[nodiscard]] etcd::Client& client() { return *client_; }
  // The cluster's revision now: a load() after this call reflects at least this revision.
  [[nodiscard]] Result<std::int64_t> revision();
  // Waits up to `wait` for any write under the prefix at `fromRevision` or later (a standby's change feed):
  // true when one came.
  [[nodiscard]] Result<bool> waitForChange(std::int64_t fromRevision, std::chrono::milliseconds wait);
  [[nodiscard]] const std::string& prefix() const { return options_.prefix; }

 private:
  explicit EtcdStore(EtcdStoreOptions options);
  class Batch;
  [[nodiscard]] std::string key(std::string_view kind, std::uint64_t number) const;
  [[nodiscard]] std::string idleKey(Timestamp from, const DeviceId& device) const;  // P + "idle/<from>/<device>"

  [[nodiscard]] Result<std::optional<std::string>> get(const std::string& key);
  // Every key under `kindPrefix` (P + "systems/"), in key order, a page at a time.
  [[nodiscard]] Result<std::vector<etcd::KeyValue>> scan(const std::string& from, const std::string& to, std::size_t limit = 0, bool descending = false);
  // The number in the last key of a kind (0 when none).
  [[nodiscard]] Result<std::uint64_t> lastNumber(std::string_view kind);
  [[nodiscard]] Result<std::uint64_t> firstNumber(std::string_view kind);
  [[nodiscard]] Result<std::optional<Topology>> loadInventory();
  // Runs a fenced transaction; a failed compare is told apart: fenced, or a record that exists already.
  [[nodiscard]] Result<void> commit(WriterEpoch epoch, std::vector<etcd::Compare> compares, std::vector<etcd::Op> ops);

  EtcdStoreOptions options_;
  std::unique_ptr<etcd::Client> client_;
  std::string leaderKey_;
  std::int64_t leaderRevision_ = 0;
  std::uint64_t inventoriesWritten_ = 0;  // names chunk generations apart within one writer epoch
};

}  // namespace switchyard
