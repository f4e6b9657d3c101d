// The server LP: an upper bound on GPU allocation that keeps each request on one host, with that host's own
// CPU and memory, and each GPU a bin (upper_bound.h's GPU-packing LP pools CPU and memory over all hosts).
//
// Hosts with the same GPU model, CPU and memory (and, on fixed servers, GPU count) form a type t of n_t hosts.
// A *server configuration* of type t is what one such host holds: a count of requests of each class (identical
// requests), within its CPU and memory, and W + S <= G_t GPUs: W for its whole-GPU requests, S for its shares.
// The shares only have to fit S GPUs in total (milli summed <= 1000 S, at most S shares over half a GPU); which
// shares sit together on one GPU is left, as in the GPU-packing LP, to GPU configurations of the type:
//
//   maximise  sum over server configurations q of  value(q) y_q           (value: milli-GPU of its requests)
//   s.t.      per type t:           sum_{q of t} y_q <= n_t
//             per class k:          sum_q (copies of k in q) y_q <= requests in k
//             per type t, item i:   sum_{q of t} (copies of i in q) y_q <= sum_c (copies of i in c) x_{t,c}
//             per type t:           sum_c x_{t,c} <= sum_{q of t} S_q y_q
//             composable, model m:  sum_{q of a type of m} (W_q + S_q) y_q <= GPUs of m
//
// Fixed servers: G_t is the server's GPU count, and its GPUs are its own. A composable pool: G_t is the
// host's device limit, its GPUs come from the model's pool (the last row), and no request is larger than an
// enclosure or the device limit. Enclosure boundaries and port counts are left out, so every placement on
// the pool is a feasible point.
//
// Columns are generated. A server configuration is priced by a small integer program per type (GLPK's
// branch and cut: a knapsack in CPU, memory and GPUs), a GPU configuration as in the GPU-packing LP. At any
// round, optimum + sum_t n_t max(0, best server reduced cost of t) + sum_t n_t G_t max(0, best GPU reduced
// cost of t) is a valid bound (Lagrangian); at convergence it is the LP optimum.
#pragma once

#include <expected>
#include <limits>
#include <string>
#include <vector>

#include "composer/packing/sharing/share_cluster.h"
#include "tests/bench/packing/composable_sim.h"
#include "tests/bench/packing/upper_bound.h"

namespace switchyard::bench {

struct ServerBoundOptions {
  // Fixed servers: each host has its own GPUs. Else a host attaches up to `deviceLimit` GPUs of its model.
  bool fixedServers = true;
  int32_t deviceLimit = 0;
  int32_t maxGpusPerRequest = std::numeric_limits<int32_t>::max();  // larger requests are left out
  int maxRounds = 400;  // solves before it stops with the Lagrangian bound
};

// The server LP's options for a pool of `shape`.
[[nodiscard]] ServerBoundOptions serverBoundOptionsFor(const ComposableShape& shape);

// The server LP's bound in milli-GPU for placing all of `requests` on `cluster`'s hosts.
[[nodiscard]] std::expected<PackingBound, std::string> serverUpperBound(const sharing::ShareCluster& cluster,
                                                                        const std::vector<sharing::ShareRequest>& requests,
                                                                        const ServerBoundOptions& options = {});

}  // namespace switchyard::bench
