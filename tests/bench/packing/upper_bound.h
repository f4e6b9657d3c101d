// Upper bounds on GPU allocation for any placement, online or offline, static or composable. Every real
// placement is a feasible point of both LPs below, so its allocation is at most either optimum.
//
// The pooled LP (loose): pools every host's CPU and memory and every GPU of a model set.
//
//   maximise  sum_j g_j x_j               (g_j: milli-GPU of request j; 0 <= x_j <= 1)
//   s.t.      sum_j cpu_j x_j <= total CPU,   sum_j mem_j x_j <= total memory,
//             for each model set S some request allows: sum_{j allows only models in S} g_j x_j <= GPUs of S
//
// The GPU-packing LP (the one the benchmark reports): CPU and memory are still pooled, but each GPU is a bin. A GPU of
// model m either serves one GPU of a whole-GPU request, or holds a *configuration*: a multiset of milli
// shares summing to at most 1000, or a multiset of MIG instances that fits the A100/H100 slice rules
// (composer/model/mig.h). y[k][m] places requests of class k (identical requests) on model m, x[m][c]
// counts GPUs of model m holding configuration c:
//
//   maximise  sum g_k y[k][m]
//   s.t.      sum cpu_k y[k][m] <= total CPU,  sum mem_k y[k][m] <= total memory
//             sum_m y[k][m] <= requests in class k
//             per model m:  sum_{k whole} gpus_k y[k][m] + sum_c x[m][c] <= GPUs of m
//             per model m and item i (a share size or a MIG profile):
//                           sum_{k asks for i} y[k][m] <= sum_c (copies of i in c) x[m][c]
//
// A configuration never holds more copies of an item than there are requests for it on that model. There
// are too many configurations to list, so columns are generated: after each solve, a bounded knapsack over
// 1000 milli (or a scan of the reachable MIG layouts) prices the best configuration per model against the
// duals, and it joins the LP if it would raise the optimum. At any round, optimum + sum over
// models of GPUs(m) * max(0, best reduced cost of m) is a valid bound (Lagrangian); at convergence it is
// the LP optimum. It catches what the pooled LP cannot: two 600-milli shares never share a GPU.
//
// Written per model, as above, it holds for any pool. For a given pool it can be cut further
// (PackingBoundOptions): on fixed servers "model m" becomes "servers of one type", each type with its own
// CPU and memory, and a class goes only to a type one server of which could hold it; on a composable pool a
// request larger than an enclosure or a host's device limit is left out.
#pragma once

#include <expected>
#include <limits>
#include <string>
#include <vector>

#include "composer/packing/sharing/share_cluster.h"
#include "tests/bench/packing/composable_sim.h"

namespace switchyard::bench {

// The pooled LP's optimum in milli-GPU for placing all of `requests` on `cluster`'s resources.
[[nodiscard]] std::expected<double, std::string> pooledUpperBound(const sharing::ShareCluster& cluster,
                                                                  const std::vector<sharing::ShareRequest>& requests);

struct PackingBound {
  double milli = 0;   // the bound in milli-GPU
  int rounds = 0;     // LP solves
  int columns = 0;    // configurations generated
  bool converged = false;  // no configuration could raise it (else `milli` is the Lagrangian bound)
};

struct PackingBoundOptions {
  // Fixed servers only: each type of server (GPU model and count, CPU, memory) is a group with its own CPU and
  // memory, and a request goes only to a type one server of which could hold it. Else all GPUs of a model
  // share the pool's CPU and memory, which holds for any pool.
  bool perServer = false;
  // Else: the most GPUs one request can get on the pool (a composable pool: min(enclosure slots, device
  // limit)); larger requests are left out.
  int32_t maxGpusPerRequest = std::numeric_limits<int32_t>::max();
  int maxRounds = 2000;  // solves before it stops with the Lagrangian bound
};

// The tightest options that hold for a pool of `shape` built from the servers: per server type on the mirror
// pool, else no request larger than an enclosure or a host's device limit.
[[nodiscard]] PackingBoundOptions boundOptionsFor(const ComposableShape& shape);

// The GPU-packing LP's bound in milli-GPU for placing all of `requests` on `cluster`'s resources.
[[nodiscard]] std::expected<PackingBound, std::string> packingUpperBound(const sharing::ShareCluster& cluster,
                                                                         const std::vector<sharing::ShareRequest>& requests,
                                                                         const PackingBoundOptions& options = {});

}  // namespace switchyard::bench
