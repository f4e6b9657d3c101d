// The queue of composes that wait for capacity (issue 40, ADR 0017): the queued operations, the order the last
// admission pass looked at them in, why each still waits, and the head's shadow (when and where, by the leases
// we know of, the head is predicted to go: what backfill must not take). One of the engine's parts (issue 59):
// it owns this state and keeps it whole (a request that leaves takes its reason and its place in the order with
// it); the admission pass (admission/admission_pass.h) writes what it found here and asks the engine for the
// pool, the placement and the store. Control thread only.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/composition.h"
#include "composer/packing/packing.h"

namespace switchyard {

class RequestQueue {
 public:
  struct HeadShadow {
    OperationId head;
    Timestamp at = 0;  // 0: no lease we know of frees enough for it
    Placement placement;
  };

  // A queued compose joins (accepted, or read back at start); it leaves when admitted, cancelled or timed out.
  void add(Operation op);
  void remove(const OperationId& id);
  void clear();  // a standby reads the whole queue again

  [[nodiscard]] const Operation* find(const OperationId& id) const;
  [[nodiscard]] bool contains(const OperationId& id) const { return waiting_.contains(id); }
  [[nodiscard]] bool empty() const { return waiting_.empty(); }
  [[nodiscard]] std::size_t size() const { return waiting_.size(); }
  [[nodiscard]] std::size_t countOf(std::string_view tenant) const;
  [[nodiscard]] const std::map<OperationId, Operation>& waiting() const { return waiting_; }  // by id

  // An admission pass: it forgets the last pass's reasons and shadow, notes why each request it looked at still
  // waits and the head's shadow, and ends with the order it looked at them in.
  void beginPass();
  void setWhy(const OperationId& id, std::string why) { why_[id] = std::move(why); }
  [[nodiscard]] const std::string* why(const OperationId& id) const;
  [[nodiscard]] const std::optional<HeadShadow>& shadow() const { return shadow_; }
  void setShadow(HeadShadow shadow) { shadow_ = std::move(shadow); }
  void endPass(const std::vector<OperationId>& lookedAt);  // keeps those still queued
  // With no pass to run (an empty queue), what the last one found is dropped.
  void forgetPass();
  // In the order of the last pass, then those no pass has looked at yet (a standby's, a halted engine's), by id.
  [[nodiscard]] std::vector<const Operation*> inOrder() const;
  void setOrder(std::vector<OperationId> order);  // a standby orders what it reads as the leader would

  // Capacity may have freed, or the queue or its rules changed: a pass is due at the next commit point.
  void markDirty() { dirty_ = true; }
  [[nodiscard]] bool dirty() const { return dirty_; }
  void clearDirty() { dirty_ = false; }
  // What the published view shows of the queue is stale.
  [[nodiscard]] bool changed() const { return changed_; }
  void markChanged() { changed_ = true; }
  void clearChanged() { changed_ = false; }

 private:
  std::map<OperationId, Operation> waiting_;
  std::vector<OperationId> order_;
  std::map<OperationId, std::string> why_;
  std::optional<HeadShadow> shadow_;
  bool dirty_ = false;
  bool changed_ = true;
};

}  // namespace switchyard
