// A standby's replica (issue 26, active/standby on etcd; issue 59: one of the engine's parts): whether this engine is a
// standby's, the leader its refusals name, and what the pool it shows was last built from. A refresh reads the store
// off the control thread (`read`: the inventory again only when the leader rewrote it, the events after the last one
// published, the operations waited for that ended) and the engine swaps what it read in on the control thread.
// `on` and `leader` are safe on any thread; the rest is the control thread's (the read: any thread, it touches only
// the store).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "composer/model/composition.h"
#include "inventory/store.h"

namespace switchyard {

class StandbyReplica {
 public:
  // What one refresh read from the store.
  struct Refresh {
    StoreSnapshot snapshot;               // without its inventory when `sameInventory`
    bool sameInventory = false;           // the pool's inventory is current: only what is held changes
    std::int64_t inventoryRevision = 0;   // the stored inventory's revision when it was read (0: the store has none)
    std::vector<Event> events;            // after the last one published, in order, at most kEventBatch
    std::vector<Operation> ended;         // operations waited for that the store shows finished
  };
  // At most this many new events are read (and published to Watch streams) per refresh; a standby further behind
  // than that catches up over several refreshes.
  static constexpr std::size_t kEventBatch = 10'000;

  // The engine becomes a standby's, before its control thread starts; `inventoryRevision`: its first load's.
  void begin(std::int64_t inventoryRevision) {
    builtFrom_ = inventoryRevision;
    on_ = true;
  }
  [[nodiscard]] bool on() const { return on_.load(); }

  // The leader's address as its key names it; empty: none known, or not a standby.
  void setLeader(std::string leader);
  [[nodiscard]] std::string leader() const;

  // The stored inventory's revision the pool was built from (control thread).
  [[nodiscard]] std::int64_t builtFrom() const { return builtFrom_; }
  // What a refresh reads (any thread): the events after `published`, the operations waited for that ended, and the
  // inventory only when its revision is no longer `builtFrom` (or the store keeps none). The revision is read before
  // the rest, so a rewrite after it is seen by the next refresh; `waitedFor` is asked after the load, so a wait that
  // began during it is answered by this refresh too.
  [[nodiscard]] static Result<Refresh> read(Store& store, std::uint64_t published, std::int64_t builtFrom,
                                            const std::function<Result<std::vector<OperationId>>()>& waitedFor);
  // The refresh is in (control thread): the pool was built from its inventory.
  void applied(const Refresh& refresh) { builtFrom_ = refresh.inventoryRevision; }

  // The leader's queue order, as far as a standby can tell it without placing: higher class first, then the
  // oldest, then the id.
  [[nodiscard]] static std::vector<OperationId> leaderOrder(const std::vector<const Operation*>& queued);

 private:
  std::atomic<bool> on_{false};
  mutable std::mutex leaderMutex_;
  std::string leader_;  // under leaderMutex_
  std::int64_t builtFrom_ = 0;  // the stored inventory's revision the pool was built from
};

}  // namespace switchyard
