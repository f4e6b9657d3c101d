// The store: the durable record of inventory, device assignments, systems, operations with their step
// logs, and the event/audit trail. An interface because an etcd backend (active/standby daemons) comes
// later; the engine depends on this and nothing else of inventory/.
//
// Contract (tests/contract/store_contract_test.cpp holds every backend to it):
//  - claimWriter() makes the caller the one writer: it returns a writer epoch larger than any before it,
//    kept durably, so a restarted or newly elected yardd always fences out the one before it.
//  - write(batch, epoch) applies the batch atomically (all or nothing) if `epoch` is still the newest
//    claimed one, and, once it returns, the batch survives a crash of the daemon process. A write with an
//    older epoch (a deposed leader) fails with kFailedPrecondition and changes nothing.
//  - id counters (sys-N, op-N, event sequence) come from what is stored, so they survive a change of writer
//    and pruning (the newest row of each kind is always kept).
//  - Used from one thread (the engine's control executor).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <variant>
#include <vector>

#include "composer/model/audit.h"
#include "composer/model/composition.h"
#include "composer/model/demand.h"
#include "composer/model/error.h"
#include "composer/model/topology.h"

namespace switchyard {

struct PutInventory {
  Topology topology;
};
struct PutSystem {
  System system;
};
struct PutOperation {
  Operation operation;
  bool allSteps = true;                  // write the whole step log
  std::vector<std::size_t> changedSteps;  // or only these steps (when allSteps is false)
};
struct PutAssignment {
  DeviceAssignment assignment;
};
struct PutEvent {
  Event event;
};
// One request's shape, appended to the recent demand (composer/model/demand.h).
struct PutDemand {
  DemandShape shape;
};
// A request to change something, accepted or refused (composer/model/audit.h).
struct PutAudit {
  AuditRecord record;
};
// An idle stretch of a GPU (composer/model/composition.h), new or longer: keyed by device and start.
struct PutIdleStretch {
  IdleStretch stretch;
};
// How the operation of an accepted request ended: fills in the outcome of its audit record.
struct PutAuditOutcome {
  std::string operationId;
  std::string outcome;
  Timestamp finishedAt = 0;
};
using StoreWrite =
    std::variant<PutInventory, PutSystem, PutOperation, PutAssignment, PutEvent, PutDemand, PutAudit, PutAuditOutcome, PutIdleStretch>;

struct StoreSnapshot {
  std::optional<Topology> inventory;          // absent on a new store
  std::vector<System> systems;                // every system not yet decomposed
  std::vector<Operation> unfinishedOperations;
  std::vector<DeviceAssignment> assignments;  // every device that is not free
  std::vector<DemandShape> recentDemand;      // the newest kDemandWindow request shapes, oldest first
  std::uint64_t lastEventSequence = 0;
  std::uint64_t lastAuditSequence = 0;
  std::uint64_t lastSystemNumber = 0;     // ids are sys-<n>
  std::uint64_t lastOperationNumber = 0;  // ids are op-<n>
};

// How much history to keep; the newest rows are always kept, live systems and unfinished operations
// are never touched.
struct RetentionPolicy {
  std::size_t events = 1'000'000;
  std::size_t audit = 1'000'000;            // audit records (a security trail: keep it long)
  std::size_t finishedOperations = 100'000;  // also bounds the history of decomposed/failed systems
  std::size_t demand = kDemandWindow;        // request shapes, as many as the packing core learns from
  std::size_t maxRowsPerRun = 20'000;        // bounds how long one prune holds the writer
};

struct PruneReport {
  std::size_t events = 0;
  std::size_t audit = 0;
  std::size_t operations = 0;
  std::size_t systems = 0;
  std::size_t demand = 0;
  std::size_t idleStretches = 0;
};

using WriterEpoch = std::uint64_t;

// Which operations a listing wants; empty filters match everything.
// What names a system after it has ended: what a bill or an operation's page shows for it.
struct SystemIdentity {
  std::string name;
  std::map<std::string, std::string> labels;
  bool operator==(const SystemIdentity&) const = default;
};

struct OperationQuery {
  std::size_t limit = 50;
  std::string systemId;                 // operations on this system
  std::optional<OperationKind> kind;    // compose, decompose, attach, detach
  std::optional<OperationState> state;  // queued, running, rolling-back, succeeded, failed
  std::string tenant;                   // operations of this tenant
  [[nodiscard]] bool filtered() const { return !systemId.empty() || kind || state || !tenant.empty(); }
  [[nodiscard]] bool matches(const Operation& op) const {
    return (systemId.empty() || op.systemId == systemId) && (!kind || op.kind == *kind) && (!state || op.state == *state) &&
           (tenant.empty() || op.tenant == tenant);
  }
};

// What load() reads: everything, or everything but the inventory (a standby refreshing a pool whose
// inventory it has already, issue 36: the inventory of 100,000 GPUs is 27 MB; the state beside it is small).
enum class LoadScope { kEverything, kWithoutInventory };

class Store {
 public:
  virtual ~Store() = default;
  [[nodiscard]] virtual Result<StoreSnapshot> load(LoadScope scope = LoadScope::kEverything) = 0;
  // A number that changes whenever the stored inventory is rewritten; 0 when the store cannot tell (then a
  // reader must load the inventory every time).
  [[nodiscard]] virtual Result<std::int64_t> inventoryRevision() { return std::int64_t{0}; }
  // Takes over as the writer; returns the new writer epoch (the fencing token every write carries).
  [[nodiscard]] virtual Result<WriterEpoch> claimWriter() = 0;
  [[nodiscard]] virtual Result<void> write(std::span<const StoreWrite> batch, WriterEpoch epoch) = 0;
  // The history reads below (operations, events, audit, idle stretches) may be called from any thread,
  // concurrently with write() and with each other: each sees whole commits only (issue 59, item 5: the
  // engine serves them off its control thread). load(), claimWriter(), write() and prune() are the writer's.
  [[nodiscard]] virtual Result<std::optional<Operation>> getOperation(const OperationId& id) = 0;
  // The operation a client's request id started (Operation::requestId), while history keeps it.
  [[nodiscard]] virtual Result<std::optional<Operation>> findOperationByRequest(std::string_view requestId) = 0;
  // Newest first: the newest `query.limit` operations that match every filter the query gives.
  [[nodiscard]] virtual Result<std::vector<Operation>> queryOperations(const OperationQuery& query) = 0;
  [[nodiscard]] Result<std::vector<Operation>> listOperations(std::size_t limit) { return queryOperations(OperationQuery{.limit = limit}); }
  [[nodiscard]] virtual Result<std::vector<Event>> listEvents(std::uint64_t afterSequence, std::size_t limit) = 0;
  // Newest first, filtered by the query.
  [[nodiscard]] virtual Result<std::vector<AuditRecord>> listAudit(const AuditQuery& query) = 0;
  // The names and labels of these systems, live or ended while history keeps them (usage names a decomposed
  // system and groups it by its labels); an id the store does not hold is left out.
  [[nodiscard]] virtual Result<std::map<SystemId, SystemIdentity>> systemIdentities(const std::set<SystemId>& ids) = 0;
  // The idle stretches that overlap [since, until), by start.
  [[nodiscard]] virtual Result<std::vector<IdleStretch>> listIdleStretches(Timestamp since, Timestamp until) = 0;
  // Deletes the oldest history beyond the policy, at most maxRowsPerRun rows of each kind per call; fenced
  // like write(). Idle stretches go once they ended before the oldest operation kept (usage reads no further).
  [[nodiscard]] virtual Result<PruneReport> prune(const RetentionPolicy& policy, WriterEpoch epoch) = 0;
};

}  // namespace switchyard
