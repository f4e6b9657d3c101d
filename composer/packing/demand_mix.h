// The demand a pool sees: which shapes of composed system it has been asked for lately, and how often.
// The engine learns it from compose requests (DemandTracker) and hands a snapshot to the Pool, where the
// "fragmentation" score plugin reads it: a placement is good when it leaves the pool able to serve the
// shapes that keep arriving, not only the one in hand.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "composer/model/demand.h"
#include "composer/packing/mix_learner.h"

namespace switchyard {

struct PlacementRequest;
class Pool;

using DemandMix = Mix<DemandShape>;

// The shape a new-system request counts as; none for requests that name their devices (nothing to choose).
[[nodiscard]] std::optional<DemandShape> demandShapeOf(const PlacementRequest& request);

// Learns the mix from recent compose requests and keeps the Pool's snapshot of it current. The engine
// stores each shape it observes and replays the stored ones at start-up, so the mix survives a restart.
// Until the first request, the mix is empty: the fragmentation score is 0 and the profile's other scores
// decide.
class DemandTracker {
 public:
  explicit DemandTracker(std::size_t window = kDemandWindow, std::size_t refreshEvery = 500) : learner_(window, {}, refreshEvery) {}

  // Records one request; when the mix moved, gives the pool the new one.
  void observe(const PlacementRequest& request, Pool& pool);
  void observe(const DemandShape& shape, Pool& pool);
  // Learns from stored shapes (oldest first) at start-up; the pool gets the mix of all of them.
  void replay(const std::vector<DemandShape>& shapes, Pool& pool);

 private:
  MixLearner<DemandShape> learner_;
};

}  // namespace switchyard
