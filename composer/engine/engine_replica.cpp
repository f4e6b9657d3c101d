// A standby's engine (issue 26, active/standby on etcd): the pool as the leader last wrote it, read from the
// store and swapped in whenever the store changes, so that a standby answers reads (systems, devices,
// hosts, topology, capacity, plans, operations, the audit, WaitOperation and Watch) without the switch. It
// never writes and never calls the fabric: every change is refused with kUnavailable naming the leader. What the
// standby itself holds, and the store read of a refresh, are StandbyReplica's (standby_replica.h); this file swaps
// what was read into the engine's parts.
#include <spdlog/spdlog.h>

#include <set>
#include <unordered_map>

#include "composer/engine/engine.h"
#include "composer/engine/engine_control.h"

namespace switchyard {

void Engine::applySnapshot(StoreSnapshot snapshot, bool sameInventory) {
  if (!sameInventory || !state_) {
    state_ = std::make_unique<PoolState>(snapshot.inventory ? std::move(*snapshot.inventory) : Topology{});
  }
  applyHeldState(snapshot);
}

void Engine::applyHeldState(StoreSnapshot& snapshot) {
  state_->replayDemand(snapshot.recentDemand);
  // Each holder's host: a system's own, a running operation's (it reserved the devices).
  std::unordered_map<std::string, HostId> hostOfOwner;
  for (const auto& s : snapshot.systems) hostOfOwner[s.id] = s.hostId;
  for (const auto& op : snapshot.unfinishedOperations) hostOfOwner[op.id] = op.hostId;
  state_->replaceHeld(snapshot.systems, snapshot.assignments, hostOfOwner);
  runner_->clear();
  queue_.clear();
  for (auto& op : snapshot.unfinishedOperations) {
    if (op.state == OperationState::kQueued) queue_.add(std::move(op));
    else runner_->adopt(std::move(op));
  }
  std::vector<const Operation*> queued;
  for (const auto& [id, op] : queue_.waiting()) queued.push_back(&op);
  queue_.setOrder(StandbyReplica::leaderOrder(queued));
  numbers_.continueAfter(snapshot);
}

Result<void> Engine::startReplica() {
  if (loop_.running()) return fail(Code::kFailedPrecondition, "the engine is running already");
  SY_ASSIGN(const std::int64_t inventoryRevision, store_.inventoryRevision());
  SY_ASSIGN(StoreSnapshot snapshot, store_.load());
  standby_.begin(inventoryRevision);
  events_.continueAfter(snapshot.lastEventSequence);  // Watch streams get what comes after this
  applySnapshot(std::move(snapshot), false);
  flush();  // the first view, before any reader can ask
  startControl();
  spdlog::info("standby: serving reads of {} system(s), {} device(s) as the store has them", state_->systems().size(),
               state_->topology().devices.size());
  return {};
}

Result<void> Engine::refreshReplica() {
  if (!standby_.on()) return fail(Code::kFailedPrecondition, "only a standby's engine refreshes from the store");
  // The store is read here, off the control thread (a large pool takes a while), and swapped in on it.
  SY_ASSIGN(const auto seen, onControl([this]() -> Result<std::pair<std::uint64_t, std::int64_t>> {
              return std::pair{events_.last(), standby_.builtFrom()};
            }));
  const auto [published, builtFrom] = seen;
  auto waitedFor = [this] { return onControl([this]() -> Result<std::vector<OperationId>> { return waiters_.waitedFor(); }); };
  SY_ASSIGN(StandbyReplica::Refresh refresh, StandbyReplica::read(store_, published, builtFrom, waitedFor));
  return onControl([&]() -> Result<void> {
    applySnapshot(std::move(refresh.snapshot), refresh.sameInventory);
    standby_.applied(refresh);
    std::vector<Event> news;
    for (auto& e : refresh.events)
      if (e.sequence > events_.last()) news.push_back(std::move(e));
    if (!news.empty()) events_.continueAfter(news.back().sequence);
    publish(news);
    for (const auto& op : refresh.ended) completeWaiters(op.id, op);
    return {};
  });
}

void Engine::setStandbyLeader(std::string leader) { standby_.setLeader(std::move(leader)); }

std::string Engine::standbyLeader() const { return standby_.leader(); }

}  // namespace switchyard
