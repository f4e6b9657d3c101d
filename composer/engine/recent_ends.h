// The operations that ended lately, as they ended (issue 59). A client that composes and then waits usually asks
// after the end: the wait read the operation back from the store on the control thread (8 % of that thread's time
// on the compose benchmark) and wrote the open group commit first. The engine answers such a wait from here, at
// its task's commit point: once the batch that holds the end is written, as if read back. Bounded: the newest
// `capacity` ends are kept, and a wait for an older one reads the store as before. Emptied when the engine halts
// (a failed write may have lost an end recorded here). Control thread only.
#pragma once

#include <cstddef>
#include <deque>
#include <unordered_map>

#include "composer/model/composition.h"

namespace switchyard {

class RecentEnds {
 public:
  explicit RecentEnds(std::size_t capacity = 1024) : capacity_(capacity) {}

  // `op` ended (succeeded or failed); the oldest end kept goes when there are more than `capacity`.
  void ended(const Operation& op) {
    auto [it, fresh] = ends_.insert_or_assign(op.id, op);
    if (!fresh) return;
    order_.push_back(op.id);
    if (order_.size() <= capacity_) return;
    ends_.erase(order_.front());
    order_.pop_front();
  }
  // The operation as it ended, if it ended lately; null otherwise.
  [[nodiscard]] const Operation* find(const OperationId& id) const {
    auto it = ends_.find(id);
    return it == ends_.end() ? nullptr : &it->second;
  }
  void clear() {
    ends_.clear();
    order_.clear();
  }
  [[nodiscard]] std::size_t size() const { return ends_.size(); }

 private:
  std::size_t capacity_;
  std::unordered_map<OperationId, Operation> ends_;
  std::deque<OperationId> order_;  // oldest first
};

}  // namespace switchyard
