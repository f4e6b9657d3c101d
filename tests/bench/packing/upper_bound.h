// An upper bound on GPU allocation for any placement, online or offline, static or composable: the LP
// relaxation that pools every host's CPU and memory and every GPU of a model set, solved with GLPK.
//
//   maximise  sum_j g_j x_j               (g_j: milli-GPU of request j; 0 <= x_j <= 1)
//   s.t.      sum_j cpu_j x_j <= total CPU,   sum_j mem_j x_j <= total memory,
//             for each model set S some request allows: sum_{j allows only models in S} g_j x_j <= GPUs of S
//
// Every real placement is a feasible point, so its allocation is at most the optimum.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "composer/packing/sharing/share_cluster.h"

namespace switchyard::bench {

// The bound in milli-GPU for placing all of `requests` on `cluster`'s resources.
[[nodiscard]] std::expected<double, std::string> allocationUpperBound(const sharing::ShareCluster& cluster,
                                                                      const std::vector<sharing::ShareRequest>& requests);

}  // namespace switchyard::bench
