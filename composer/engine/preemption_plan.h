// The preemption in progress (ADR 0017): which queued request it makes room for, its victims, when their grace
// ends and where the request goes then; and when a request whose preemption failed may have another. One of the
// engine's parts (issue 59): it owns this state and says what is due when; choosing victims, the events and the
// decomposes stay with the engine (engine_preemption.cpp). One preemption at a time; control thread only.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "composer/model/clock.h"
#include "composer/model/composition.h"
#include "composer/packing/packing.h"

namespace switchyard {

struct Preemption {
  OperationId head;              // the queued request it makes room for
  std::vector<SystemId> victims;
  Timestamp decomposeAt = 0;     // the end of their grace period
  Placement placement;           // where the head goes once they are gone
  bool started = false;          // their decomposes began
};

class PreemptionPlan {
 public:
  // The preemption in progress, if any.
  [[nodiscard]] const Preemption* current() const { return plan_ ? &*plan_ : nullptr; }
  // Whether `head` may be planned for at `now`: not before the retry time a failed preemption of it set.
  [[nodiscard]] bool mayPlanFor(const OperationId& head, Timestamp now) const;
  // Starts `p` (none may be in progress).
  void begin(Preemption p);
  // The victims to decompose now: those of the plan in progress once its grace ended, once (the plan is then
  // started and stays until its head is admitted or leaves the queue).
  [[nodiscard]] std::vector<SystemId> takeDue(Timestamp now);
  // A victim could not be let go: the plan ends, and its head waits `retryAfter` before another. Answers that
  // head (none when no plan was in progress).
  std::optional<OperationId> failed(Timestamp now, Duration retryAfter);
  // Ends the plan in progress when its head is no longer queued (admitted, cancelled, timed out); the victims
  // already going keep going.
  void endIfHeadLeft(const std::function<bool(const OperationId&)>& queued);
  // Forgets retry times of requests no longer queued.
  void pruneRetries(const std::function<bool(const OperationId&)>& queued);
  [[nodiscard]] std::size_t retryEntries() const { return retryAt_.size(); }

 private:
  std::optional<Preemption> plan_;
  std::map<OperationId, Timestamp> retryAt_;
};

}  // namespace switchyard
