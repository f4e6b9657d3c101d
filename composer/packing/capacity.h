// Usable capacity: for each request shape, how many more such requests could be composed right now,
// found by letting the packing core place them one after another on a copy of the pool. This is the
// number raw utilisation hides: 16 free GPUs spread over busy hosts and switches may fit no 8-GPU job.
#pragma once

#include <string>
#include <vector>

#include "composer/packing/packing.h"
#include "composer/packing/pool.h"

namespace switchyard {

struct RequestShape {
  int gpus = 1;
  PeerToPeer peerToPeer = PeerToPeer::kRequired;
  std::string model;  // empty: any
};

struct ShapeCapacity {
  RequestShape shape;
  int placeable = 0;
};

struct CapacityReport {
  int freeGpus = 0;      // free and not critical
  int strandedGpus = 0;  // free, yet no host that could take a new system reaches them
  std::vector<ShapeCapacity> shapes;
};

// 1, 2, 4, 8 and 16 GPUs, all under one switch.
[[nodiscard]] std::vector<RequestShape> defaultShapes();

// With the default profile, or with the scheduler the daemon is configured with.
[[nodiscard]] CapacityReport usableCapacity(const Pool& pool, const std::vector<RequestShape>& shapes);
[[nodiscard]] CapacityReport usableCapacity(const placement::Scheduler<ComposableModel>& scheduler, const Pool& pool,
                                            const std::vector<RequestShape>& shapes);

}  // namespace switchyard
