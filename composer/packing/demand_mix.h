// The demand a pool sees: which shapes of composed system it has been asked for lately, and how often.
// The engine learns it from compose requests (DemandTracker) and hands a snapshot to the Pool, where the
// "fragmentation" score plugin reads it: a placement is good when it leaves the pool able to serve the
// shapes that keep arriving, not only the one in hand.
#pragma once

#include <compare>
#include <memory>
#include <optional>
#include <string>

#include "composer/packing/mix_learner.h"

namespace switchyard {

struct PlacementRequest;
class Pool;

struct DemandShape {
  int gpus = 1;             // whole GPUs taken from the fabric (for MIG instances: the fresh GPUs they need)
  bool sameSwitch = true;   // all of them under one switch (peer-to-peer required or preferred)
  std::string model;        // empty: any
  auto operator<=>(const DemandShape&) const = default;
};

using DemandMix = Mix<DemandShape>;

// The shape a new-system request counts as; none for requests that name their devices (nothing to choose).
[[nodiscard]] std::optional<DemandShape> demandShapeOf(const PlacementRequest& request);

// Learns the mix from recent compose requests and keeps the Pool's snapshot of it current. Soft state:
// after a restart it is learned again (until then the fragmentation score is 0 and the profile's other
// scores decide).
class DemandTracker {
 public:
  explicit DemandTracker(std::size_t window = 5000, std::size_t refreshEvery = 500) : learner_(window, {}, refreshEvery) {}

  // Records one request; when the mix moved, gives the pool the new one.
  void observe(const PlacementRequest& request, Pool& pool);

 private:
  MixLearner<DemandShape> learner_;
};

}  // namespace switchyard
