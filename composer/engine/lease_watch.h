// Leases (ADR 0015) as time passes: which systems were told their lease is ending (lease.expiring goes once per
// lease), and when an overdue system whose decompose failed is tried again. One of the engine's parts (issue 59):
// it owns that bookkeeping and decides, per system and moment, what is due; the engine does it (events, the
// decompose). Control thread only.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>

#include "composer/model/clock.h"
#include "composer/model/composition.h"

namespace switchyard {

class LeaseWatch {
 public:
  enum class Due {
    kNothing,     // no lease, not near its end, warned already, or a failed decompose waits for its retry time
    kWarn,        // send lease.expiring now (only once per lease)
    kDecompose,   // the lease ended: decompose it now
  };

  // What `system`'s lease asks for at `now`, warning `warnBefore` ahead of the end (0: never). A system that is
  // queued, or whose operation still runs, is not due yet.
  [[nodiscard]] Due look(const System& system, Timestamp now, Duration warnBefore);
  // Its decompose was started (or refused) at `now`: the next try waits until `now + retryAfter`. Answers
  // whether this was a retry.
  bool tried(const SystemId& id, Timestamp now, Duration retryAfter);
  // The lease changed (renewed): it may be warned about, and is not waiting for a retry.
  void renewed(const SystemId& id);
  // Forgets systems that are gone or have no lease any more.
  void prune(const std::function<bool(const SystemId&)>& gone);
  [[nodiscard]] std::size_t entries() const { return warned_.size() + retryAt_.size(); }

 private:
  std::set<SystemId> warned_;              // lease.expiring sent
  std::map<SystemId, Timestamp> retryAt_;  // overdue: when to try the decompose again
};

}  // namespace switchyard
