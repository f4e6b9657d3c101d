#include "composer/engine/standby_replica.h"

#include <algorithm>
#include <set>

namespace switchyard {

void StandbyReplica::setLeader(std::string leader) {
  std::lock_guard lock(leaderMutex_);
  leader_ = std::move(leader);
}

std::string StandbyReplica::leader() const {
  std::lock_guard lock(leaderMutex_);
  return on() ? leader_ : std::string();
}

Result<StandbyReplica::Refresh> StandbyReplica::read(Store& store, std::uint64_t published, std::int64_t builtFrom,
                                                     const std::function<Result<std::vector<OperationId>>()>& waitedFor) {
  Refresh r;
  // The inventory (27 MB at 100,000 GPUs) is read again only when it was rewritten (a leader's start).
  SY_ASSIGN(r.inventoryRevision, store.inventoryRevision());
  r.sameInventory = r.inventoryRevision != 0 && r.inventoryRevision == builtFrom;
  SY_ASSIGN(r.snapshot, store.load(r.sameInventory ? LoadScope::kWithoutInventory : LoadScope::kEverything));
  SY_ASSIGN(r.events, store.listEvents(published, kEventBatch));
  std::set<OperationId> stillRunning;
  for (const auto& op : r.snapshot.unfinishedOperations) stillRunning.insert(op.id);
  SY_ASSIGN(const std::vector<OperationId> waited, waitedFor());
  for (const auto& id : waited) {
    if (stillRunning.contains(id)) continue;
    SY_ASSIGN(auto op, store.getOperation(id));
    if (op) r.ended.push_back(std::move(*op));
  }
  return r;
}

std::vector<OperationId> StandbyReplica::leaderOrder(const std::vector<const Operation*>& queued) {
  std::vector<const Operation*> sorted = queued;
  std::sort(sorted.begin(), sorted.end(), [](const Operation* a, const Operation* b) {
    const auto& qa = *a->queued;
    const auto& qb = *b->queued;
    if (qa.priority != qb.priority) return qa.priority > qb.priority;
    return qa.enqueuedAt != qb.enqueuedAt ? qa.enqueuedAt < qb.enqueuedAt : a->id < b->id;
  });
  std::vector<OperationId> order;
  for (const Operation* op : sorted) order.push_back(op->id);
  return order;
}

}  // namespace switchyard
