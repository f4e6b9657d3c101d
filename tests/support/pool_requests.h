// Short forms for packing tests: a request for n GPUs, and taking a device out of a Pool by name.
#pragma once

#include <string>

#include "composer/packing/packing.h"
#include "composer/packing/pool.h"

namespace switchyard::testing {

inline PlacementRequest gpus(int n, PeerToPeer p2p = PeerToPeer::kPreferred) {
  PlacementRequest r;
  r.gpuCount = n;
  r.peerToPeer = p2p;
  return r;
}

inline void take(Pool& pool, const std::string& device) { pool.setFree(pool.deviceIndex(device), false); }

}  // namespace switchyard::testing
