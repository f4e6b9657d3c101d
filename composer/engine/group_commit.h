// Group commit (issue 59, the compose path's performance; ADR 0035): the writes of control-thread tasks that run
// back to back go to the store in one transaction, at the commit point of the last of them.
//
// Why: a SQLite commit writes every page its transaction changed to the WAL (and later checkpoints it), and the
// tasks of a compose change the same few pages (the operations, events and audit tables' newest leaves). With
// eight clients the control thread spent about 70 % of its time in commits, most of it writing those pages again
// for every task. One commit for the tasks that were waiting anyway writes each page once.
//
// What keeps it safe: nothing a task did is seen outside the control thread before its writes are in the store.
// Its answer, its events, the switch and host calls it starts and the published view all wait for the commit
// point (Engine::flush), so a yardd killed with a batch open loses only tasks whose effects nobody saw: as if they
// had not run. A write that fails refuses every answer that waited for it (the engine halts, as for any failed
// write). Reads of the store on the control thread write the batch first, so they see what memory says.
//
// When a batch ends: at the end of a task behind which no other task is queued, after `maxTasks` tasks (a bound
// on how long an answer waits for others' work), or once it holds kMaxWrites writes. A task that writes while no task is queued writes at
// once, as every task did before. A stepped engine (tests that decide the order of everything) never batches.
// Control thread only, but for posted() and started(), which any thread may call.
#pragma once

#include <atomic>
#include <cstddef>
#include <utility>

#include <vector>

#include "inventory/store.h"

namespace switchyard {

class GroupCommit {
 public:
  // A batch also ends once it holds this many writes: one transaction stays well inside etcd's limits
  // (--max-txn-ops 16384 and its request size, docs/operations.md) whatever the tasks write.
  static constexpr std::size_t kMaxWrites = 1024;

  // maxTasks 1 (or 0): every task writes its own, at once.
  explicit GroupCommit(std::size_t maxTasks) : maxTasks_(maxTasks) {}

  // A task was posted to the control thread; a posted task began. Each posted task ends at a commit point.
  void posted() { queued_.fetch_add(1, std::memory_order_relaxed); }
  void started() { queued_.fetch_sub(1, std::memory_order_relaxed); }

  // A task's writes (its events among them, as PutEvent), written with the batch's. True when they should be
  // written now: batching is off or no task waits behind this one.
  bool stage(std::vector<StoreWrite>& writes) {
    for (auto& w : writes) staged_.push_back(std::move(w));
    return maxTasks_ <= 1 || queued_.load(std::memory_order_relaxed) <= 0;
  }
  // At the end of a task: true when its commit point waits for the task queued behind it (a batch is open, a task
  // waits and the batch is not full). The task is then counted into the batch.
  [[nodiscard]] bool deferCommitPoint() {
    if (staged_.empty() || maxTasks_ <= 1 || queued_.load(std::memory_order_relaxed) <= 0 || tasks_ + 1 >= maxTasks_ ||
        staged_.size() >= kMaxWrites)
      return false;
    ++tasks_;
    return true;
  }
  [[nodiscard]] bool empty() const { return staged_.empty(); }
  // The tasks whose writes the batch holds: those whose commit point waited, and the one writing it now.
  [[nodiscard]] std::size_t tasks() const { return tasks_ + 1; }
  // The batch, to write now; the next one starts empty.
  [[nodiscard]] std::vector<StoreWrite> take() {
    tasks_ = 0;
    return std::exchange(staged_, {});
  }

 private:
  std::size_t maxTasks_;
  std::atomic<int> queued_{0};
  std::vector<StoreWrite> staged_;
  std::size_t tasks_ = 0;
};

}  // namespace switchyard
