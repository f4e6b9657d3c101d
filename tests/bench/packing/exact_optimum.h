// The optimality reference on small instances: the exact integer program for placing a request list on a
// pool, offline (the whole list is known, any subset may be placed, order does not matter), solved with
// GLPK's branch and cut. Every online policy's result on the same list is a feasible point, so its
// allocation is at most the optimum; the difference is the policy's gap.
//
// One model covers fixed servers and composable pools (ComposablePool::Wiring; the mirror pool is the
// fixed servers):
//
// Identical requests are grouped into shapes s with a count n_s (the trace has few distinct shapes), so
// the search does not permute them:
//
//   x[s,l]   copies of shape s placed on link l = (host h, enclosure e)   (GPU requests only: CPU-only
//   z[l,g]   GPU g of e attached to h (a constant 1 when bound)            ones add nothing to the
//   w[l,g]   GPU g taken whole by a request on l                           objective, so an optimum
//   y[s,l,g] copies of shared shape s on GPU g                             never needs them)
//
//   maximise  sum g_s x[s,l]
//   at most n_s copies of each shape; each copy of a shared shape on one GPU of its link; a whole-GPU shape
//   on gpuCount GPUs of its link; per GPU and link: shares + 1000 w <= 1000 z; each GPU attached to at most
//   one host; per host: CPU, memory, device limit; GPUs of an enclosure ordered by load, attached ones
//   first (symmetry breaking).
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "composer/packing/sharing/share_cluster.h"
#include "tests/bench/packing/composable_sim.h"

namespace switchyard::bench {

struct ExactResult {
  double bestMilli = 0;   // the best placement found (an allocation some placement achieves)
  double boundMilli = 0;  // no placement allocates more (equals bestMilli when proved optimal)
  bool proved = false;    // the search finished within the time limit
  double seconds = 0;
  int columns = 0, rows = 0;
};

[[nodiscard]] std::expected<ExactResult, std::string> exactOptimum(const ComposablePool::Wiring& pool,
                                                                   const std::vector<sharing::ShareRequest>& requests,
                                                                   double timeLimitSeconds);

}  // namespace switchyard::bench
