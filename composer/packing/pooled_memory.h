// Pooled memory as a composable resource: a request asks for GiB, and gets whole cxl-memory devices (the
// logical devices, LDs, of a CXL memory pool; a single-logical device counts as one) from under the host's
// own switches: memory is not taken across inter-switch links, where its latency would be a surprise.
// Pure functions over the Pool.
#pragma once

#include <optional>
#include <vector>

#include "composer/packing/pool.h"

namespace switchyard {

// Free, healthy cxl-memory devices under the host's own switches, and their GiB in all.
struct ReachableMemory {
  std::vector<int> devices;  // device indices
  int gib = 0;
};
[[nodiscard]] ReachableMemory reachableMemory(const Pool& pool, int hostIndex, const std::vector<DeviceId>& taken = {});

// The devices to give `gib` GiB at the LD granularity: the fewest devices, then the least left over (a
// request for 3 GiB from 1, 2 and 4 GiB LDs takes the 4; for 5, the 4 and the 1). None when the host's
// switches do not have it, or when it would take more devices than `slots`.
[[nodiscard]] std::optional<std::vector<int>> choosePooledMemory(const Pool& pool, int hostIndex, int gib, int slots,
                                                                 const std::vector<DeviceId>& taken = {});

}  // namespace switchyard
