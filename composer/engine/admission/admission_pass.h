// One admission pass (issue 59, ADR 0032): the framework's driver. It walks the queue in the profile's queue-sort
// order and asks each extension point in turn (admission_profile.h's picture): the pre-filters, the placement, the
// permits, and, for the first request that does not fit (the head), the post-filters' promise. What it learns it
// writes to the queue (why each request still waits, the head's shadow); what it decides it asks the engine to do
// (PassEngine::admit). It holds no state between passes. Control thread only.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "composer/engine/admission/admission_profile.h"
#include "composer/engine/request_queue.h"
#include "composer/model/composition.h"
#include "composer/packing/packing.h"

namespace switchyard::admission {

// A waiting request as the queue sort sees it.
struct Admittable {
  OperationId id;
  Waiting waiting;
};

// The queue's requests in `sort`'s order, the id last. A sort that weighs each request's size orders each tenant's
// requests apart and takes, each time, the tenant's next that goes first (queue_sort.h).
[[nodiscard]] std::vector<Admittable> admissionOrder(const QueueSort& sort, const RequestQueue& queue, const TenantShares& shares);

// What a pass asks of the engine beyond what its plugins may (Handle): where a request goes on the pool as it is
// now, and its admission (durable, its attaches started).
class PassEngine : public Handle {
 public:
  [[nodiscard]] virtual PlacementDecision place(const Operation& op) = 0;
  // kUnavailable: the store failed and the engine halted (the pass stops there); any other error: the request
  // stays queued with that reason.
  [[nodiscard]] virtual Result<Operation> admit(const Operation& op, const Placement& placement) = 0;
};

struct PassOutcome {
  std::size_t admitted = 0;
  bool halted = false;  // an admission found the engine halted: the pass stopped there, the queue's reasons half-written
};

// Tries each request of `order` still queued. Requests of the same shape and tenant get the placement's answer once
// (the packing core answers the same on the same pool). Leaves why each request not admitted waits in `queue`, and
// the head's shadow there when a post-filter promised one and none was set. Call between queue.beginPass() and
// queue.endPass().
[[nodiscard]] PassOutcome runPass(const Profile& profile, std::span<const Admittable> order, RequestQueue& queue, Pass& pass,
                                  PassEngine& engine);

}  // namespace switchyard::admission
