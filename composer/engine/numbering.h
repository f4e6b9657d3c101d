// The numbers the engine gives out (issue 59: one of the engine's parts): operation ids ("op-000042"), system ids
// ("sys-000007") and the audit trail's sequence, each after the last one the store holds (start, a standby's load).
// An operation's number is spent once given, even when the write that carried it fails: ids are never reused. A
// system's is spent only once its system is in the pool (several systems accepted in one task each get the next).
// An audit record's is given back when the write that carried it failed, so the trail has no gaps.
// Control thread only.
#pragma once

#include <fmt/format.h>

#include <cstdint>

#include "composer/model/composition.h"
#include "inventory/store.h"

namespace switchyard {

class Numbering {
 public:
  // After what the store holds.
  void continueAfter(const StoreSnapshot& snapshot) {
    lastAudit_ = snapshot.lastAuditSequence;
    lastSystem_ = snapshot.lastSystemNumber;
    lastOperation_ = snapshot.lastOperationNumber;
  }

  [[nodiscard]] OperationId nextOperation() { return fmt::format("op-{:06}", ++lastOperation_); }

  // The id the next system gets; spent by systemAdded().
  [[nodiscard]] SystemId nextSystem() const { return fmt::format("sys-{:06}", lastSystem_ + 1); }
  void systemAdded() { ++lastSystem_; }

  [[nodiscard]] std::uint64_t nextAudit() { return ++lastAudit_; }
  // `records` audit records numbered since the last write were not written.
  void auditNotWritten(std::uint64_t records) { lastAudit_ -= records; }

 private:
  std::uint64_t lastAudit_ = 0;
  std::uint64_t lastSystem_ = 0;
  std::uint64_t lastOperation_ = 0;
};

}  // namespace switchyard
