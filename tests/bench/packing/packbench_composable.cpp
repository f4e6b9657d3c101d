// switchyard_packbench composable: the static protocol on composable pools, against an LP bound.
#include "tests/bench/packing/packbench_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <expected>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <tuple>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/server_bound.h"
#include "tests/bench/packing/static_sim.h"
#include "tests/bench/packing/upper_bound.h"

namespace switchyard::bench {

namespace {

// The requests that arrive up to 100 % of the pool's GPU capacity, in arrival order.
std::vector<sharing::ShareRequest> arrivedAt100(const std::vector<sharing::ShareRequest>& requests, int64_t capacity) {
  std::vector<sharing::ShareRequest> arrived;
  int64_t demand = 0;
  for (const auto& r : requests) {
    if (demand + r.totalGpuMilli() > capacity) break;
    demand += r.totalGpuMilli();
    arrived.push_back(r);
  }
  return arrived;
}

// The offline order: the GPU requests that arrived by 100 %, whole-GPU ones first (most GPUs first), the shares
// after them, each in arrival order. CPU-only requests are left out, as the bounds leave them out.
std::vector<sharing::ShareRequest> offlineOrder(const std::vector<sharing::ShareRequest>& arrived) {
  std::vector<sharing::ShareRequest> order;
  for (const auto& r : arrived)
    if (r.gpuCount > 0) order.push_back(r);
  auto wholeGpus = [](const sharing::ShareRequest& r) { return r.wholeGpus() ? r.gpuCount : 0; };
  std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) { return wholeGpus(a) > wholeGpus(b); });
  return order;
}

}  // namespace

int runComposableCommand(const fs::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& shapeNames,
                         const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds, double ratio, const fs::path& out,
                         unsigned jobs, bool quiet, const ComposableReferences& references) {
  auto pools = parsePools(shapeNames, /*allowStatic=*/false);
  if (!pools) return 2;
  std::map<std::string, ComposableShape> shapes;
  for (const auto& [name, shape] : *pools) shapes[name] = *shape;
  auto inputs = loadInputs(traces, workloads, policies, /*poolPolicies=*/true);
  if (!inputs) return 2;
  const sharing::ShareCluster* cluster = &inputs->cluster;
  auto& pods = inputs->pods;
  auto& mixes = inputs->mixes;

  // The bounds at 100 % arrived demand per workload, seed and pool: the GPU-packing LP that is reported (per
  // server type on the mirror pool; on a composable pool without the requests no enclosure and host can
  // hold), and the pooled LP for reference (the same for every pool).
  std::map<std::tuple<std::string, std::string, uint64_t>, double> bound;  // (workload, shape, seed)
  std::map<std::pair<std::string, uint64_t>, double> pooledBound;
  std::map<std::tuple<std::string, std::string, uint64_t>, double> serverBound;  // the server LP, with --server-lp
  const double capacity = static_cast<double>(cluster->totalGpuMilli());
  for (const auto& w : workloads)
    for (uint64_t seed : seeds) {
      const auto arrived = arrivedAt100(inflateWorkload(pods[w], cluster->totalGpuMilli(), seed, ratio), cluster->totalGpuMilli());
      auto pooled = pooledUpperBound(*cluster, arrived);
      if (!pooled) {
        fmt::print(stderr, "error: pooled LP bound for {} seed {}: {}\n", w, seed, pooled.error());
        return 1;
      }
      pooledBound[{w, seed}] = 100.0 * *pooled / capacity;
      // Each bound is solved once per distinct options (pools with the same options share it), timed and reported.
      auto solveOnce = [&](auto& cache, const auto& key, const std::string& sh, const char* name, const std::string& also,
                           auto&& compute) -> std::optional<double> {
        if (auto it = cache.find(key); it != cache.end()) return it->second;
        const auto started = std::chrono::steady_clock::now();
        const std::expected<PackingBound, std::string> b = compute();
        if (!b) {
          fmt::print(stderr, "error: {} bound for {} seed {} on {}: {}\n", name, w, seed, sh, b.error());
          return std::nullopt;
        }
        const double percent = cache[key] = 100.0 * b->milli / capacity;
        if (!quiet)
          fmt::print(stderr, "bound {:<15} seed {}  {:<12} {} {:6.2f}% ({} rounds, {} configurations{}, {:.1f} s){}\n", w, seed, sh, name,
                     percent, b->rounds, b->columns, b->converged ? "" : ", not converged: Lagrangian",
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), also);
        return percent;
      };
      std::map<std::pair<bool, int32_t>, double> solved;
      std::map<std::tuple<bool, int32_t, int32_t>, double> serverSolved;
      const std::string pooledNote = fmt::format("  pooled LP {:6.2f}%", pooledBound[{w, seed}]);
      for (const auto& sh : shapeNames) {
        const PackingBoundOptions options = boundOptionsFor(shapes[sh]);
        const auto packing = solveOnce(solved, std::pair{options.perServer, options.maxGpusPerRequest}, sh, "GPU-packing LP", pooledNote,
                                       [&] { return packingUpperBound(*cluster, arrived, options); });
        if (!packing) return 1;
        bound[{w, sh, seed}] = *packing;
        if (!references.serverLp) continue;
        const ServerBoundOptions serverOptions = serverBoundOptionsFor(shapes[sh]);
        const auto server = solveOnce(serverSolved, std::tuple{serverOptions.fixedServers, serverOptions.deviceLimit, serverOptions.maxGpusPerRequest},
                                      sh, "server LP", "", [&] { return serverUpperBound(*cluster, arrived, serverOptions); });
        if (!server) return 1;
        serverBound[{w, sh, seed}] = *server;
      }
    }

  struct Run {
    std::string workload, shape, policy;
    uint64_t seed;
    ComposableResult result;
    std::optional<StaticResult> staticResult;  // mirror runs: the same run in static mode
    std::optional<double> offline;             // --offline: allocation placing offlineOrder() with the same policy
  };
  std::vector<Run> runs;
  for (const auto& w : workloads)
    for (const auto& sh : shapeNames)
      for (const auto& p : policies)
        for (uint64_t seed : seeds) runs.push_back({w, sh, p, seed, {}, {}});
  fs::create_directories(out);
  runInParallel(
      runs.size(), jobs,
      [&](size_t i) {
        Run& run = runs[i];
        sharing::ShareCluster c = shuffleNodes(*cluster, run.seed);
        auto requests = inflateWorkload(pods[run.workload], c.totalGpuMilli(), run.seed, ratio);
        const sharing::SharePolicyOptions o = runOptions({}, run.seed, mixes[run.workload]);
        auto make = [&](const ComposablePool& pool) { return makePolicyFor(run.policy, o, &pool); };
        run.result = runComposable(ComposablePool(c, shapes[run.shape]), requests, make);
        if (references.offline)
          run.offline = runComposable(ComposablePool(c, shapes[run.shape]), offlineOrder(arrivedAt100(requests, c.totalGpuMilli())), make)
                            .allocationPercent.back();
        // The mirror pool against the same run in static mode (a policy that reads the pool has no static twin).
        if (shapes[run.shape].mirrorServers && !needsComposablePool(run.policy)) {
          auto again = sharing::makeSharePolicy(run.policy, o);
          run.staticResult = runStatic(c, requests, *again, mixes[run.workload]);
        }
      },
      [&](size_t i, size_t finished) {
        if (quiet) return;
        const Run& run = runs[i];
        fmt::print(stderr, "[{}/{}] {:<14} {:<12} {:<18} seed {}  alloc@100 {:6.2f}%  bound {:6.2f}%\n", finished, runs.size(),
                   run.workload, run.shape, run.policy, run.seed, run.result.allocationPercent[100], bound[{run.workload, run.shape, run.seed}]);
      });

  std::ofstream csv(out / "composable_runs.csv");
  csv << "workload,shape,policy,seed,arrived_pods,placed_pods,failed_pods,alloc_at_100,alloc_at_130,bound_at_100,"
         "first_failure_arrived_pct,attaches,gpu_requests_placed,attached_left_pct_at_end,hosts_with_8_cores_but_no_free_gpu_at_end,"
         "static_alloc_at_100,static_alloc_at_130,pooled_bound_at_100,server_bound_at_100,offline_alloc_at_100\n";
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> at100, at130, churn, attachedLeft, cpuRich;
  std::map<std::pair<std::string, std::string>, std::vector<double>> bounds, serverBounds;  // (workload, shape)
  std::map<std::tuple<std::string, std::string, uint64_t>, double> bestOffline;  // the best policy's offline run per seed
  double mirrorDiff = 0;
  size_t mirrorRuns = 0;
  for (const auto& r : runs) {
    const auto& c = r.result;
    const double ub = bound[{r.workload, r.shape, r.seed}];
    csv << fmt::format("{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.2f},{},{},{:.4f},{},{},{},{:.4f},{},{}\n", r.workload, r.shape, r.policy, r.seed,
                       c.arrived, c.placed, c.failed, c.allocationPercent[100], c.allocationPercent[130], ub,
                       c.firstFailureArrivedPercent, c.attaches, c.gpuRequestsPlaced, c.attachedLeftPercent, c.hostsWithCpuButNoFreeGpu,
                       r.staticResult ? fmt::format("{:.4f}", r.staticResult->allocationPercent[100]) : "",
                       r.staticResult ? fmt::format("{:.4f}", r.staticResult->allocationPercent[130]) : "",
                       pooledBound[{r.workload, r.seed}],
                       serverBound.contains({r.workload, r.shape, r.seed}) ? fmt::format("{:.4f}", serverBound[{r.workload, r.shape, r.seed}]) : "",
                       r.offline ? fmt::format("{:.4f}", *r.offline) : "");
    if (r.offline) {
      double& best = bestOffline[{r.workload, r.shape, r.seed}];
      best = std::max(best, *r.offline);
    }
    const auto key = std::make_tuple(r.workload, r.shape, r.policy);
    at100[key].push_back(c.allocationPercent[100]);
    at130[key].push_back(c.allocationPercent[130]);
    attachedLeft[key].push_back(c.attachedLeftPercent);
    cpuRich[key].push_back(static_cast<double>(c.hostsWithCpuButNoFreeGpu));
    churn[key].push_back(c.gpuRequestsPlaced ? static_cast<double>(c.attaches) / static_cast<double>(c.gpuRequestsPlaced) : 0);
    if (r.staticResult) {
      for (size_t p = 0; p < c.allocationPercent.size(); ++p)
        mirrorDiff = std::max(mirrorDiff, std::abs(c.allocationPercent[p] - r.staticResult->allocationPercent[p]));
      ++mirrorRuns;
    }
  }
  for (const auto& [key, b] : bound) bounds[{std::get<0>(key), std::get<1>(key)}].push_back(b);
  // No placement, online or offline, may beat a bound: if one does, the bound is wrong.
  size_t beaten = 0;
  for (const auto& r : runs) {
    const auto key = std::make_tuple(r.workload, r.shape, r.seed);
    const double tightest = serverBound.contains(key) ? std::min(bound[key], serverBound[key]) : bound[key];
    for (const double placed : {r.result.allocationPercent[100], r.offline.value_or(0.0)})
      if (placed > tightest + 1e-6) {
        fmt::print(stderr, "error: {} on {} seed {} places {:.4f}% at 100 %, above the bound {:.4f}%\n", r.policy, r.shape, r.seed, placed, tightest);
        ++beaten;
      }
  }
  for (const auto& [key, b] : serverBound) serverBounds[{std::get<0>(key), std::get<1>(key)}].push_back(b);

  SummaryTee emit(out / "composable_summary.md");
  // A markdown delimiter row's cells: workload, pool, one per policy, and `extra` more.
  auto dashesFor = [&](size_t extra) {
    std::string d;
    for (size_t i = 0; i < policies.size() + 2 + extra; ++i) d += "---|";
    return d;
  };
  const std::string dashes = dashesFor(2), policyDashes = dashesFor(0);
  emit(fmt::format("GPU allocation % at 100 % arrived demand, mean over {} seeds ({}), against the GPU-packing LP bound (upper_bound.h)\n\n"
                   "| workload | pool | {} | bound | best gap |\n|{}\n",
                   seeds.size(), fmt::join(seeds, ","), fmt::join(policies, " | "), dashes));
  for (const auto& w : workloads)
    for (const auto& sh : shapeNames) {
      std::string row = fmt::format("| {} | {} |", w, shapes[sh].describe());
      double best = 0;
      for (const auto& p : policies) {
        const double m = stats(at100[{w, sh, p}]).mean;
        best = std::max(best, m);
        row += fmt::format(" {:.2f} |", m);
      }
      const double ub = stats(bounds[{w, sh}]).mean;
      emit(row + fmt::format(" {:.2f} | {:.2f} |\n", ub, ub - best));
    }
  emit(fmt::format("\nGPU allocation % at 130 % arrived demand (mean ± sd)\n\n| workload | pool | {} |\n|{}\n", fmt::join(policies, " | "),
                   policyDashes));
  for (const auto& w : workloads)
    for (const auto& sh : shapeNames) {
      std::string row = fmt::format("| {} | {} |", w, shapes[sh].describe());
      for (const auto& p : policies) {
        const Stats s = stats(at130[{w, sh, p}]);
        row += fmt::format(" {:.2f} ± {:.2f} |", s.mean, s.sd);
      }
      emit(row + "\n");
    }
  emit(fmt::format("\nGPU attaches per placed GPU request (hot-plug churn; 0 on the mirror pool, where GPUs never move)\n\n"
                   "| workload | pool | {} |\n|{}\n",
                   fmt::join(policies, " | "), policyDashes));
  for (const auto& w : workloads)
    for (const auto& sh : shapeNames) {
      if (shapes[sh].mirrorServers) continue;
      std::string row = fmt::format("| {} | {} |", w, shapes[sh].describe());
      for (const auto& p : policies) row += fmt::format(" {:.3f} |", stats(churn[{w, sh, p}]).mean);
      emit(row + "\n");
    }
  emit(fmt::format("\nWhere capacity is stranded at the end (130 %), mean over seeds: milli-GPU left on GPUs attached to a host "
                   "(% of capacity) / hosts with >= 8 cores left that reach no free GPU\n\n| workload | pool | {} |\n|{}\n",
                   fmt::join(policies, " | "), policyDashes));
  for (const auto& w : workloads)
    for (const auto& sh : shapeNames) {
      std::string row = fmt::format("| {} | {} |", w, shapes[sh].describe());
      for (const auto& p : policies) row += fmt::format(" {:.2f} / {:.0f} |", stats(attachedLeft[{w, sh, p}]).mean, stats(cpuRich[{w, sh, p}]).mean);
      emit(row + "\n");
    }
  if (references.offline) {
    emit(std::string("\nWhere the gap lies (--offline): the best policy online against the best offline placement of the same arrived "
                     "GPU requests (whole-GPU requests first, most GPUs first, then the shares, each in arrival order; the best "
                     "policy per seed) and the bound. The optimum lies between offline and bound.\n\n"
                     "| workload | pool | best online | best offline | bound | online to offline | offline to bound |\n"
                     "|---|---|---|---|---|---|---|\n"));
    for (const auto& w : workloads)
      for (const auto& sh : shapeNames) {
        double online = 0;
        for (const auto& p : policies) online = std::max(online, stats(at100[{w, sh, p}]).mean);
        std::vector<double> offline;
        for (uint64_t seed : seeds) offline.push_back(bestOffline[{w, sh, seed}]);
        const double off = stats(offline).mean, ub = stats(bounds[{w, sh}]).mean;
        emit(fmt::format("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", w, shapes[sh].describe(), online, off, ub, off - online, ub - off));
      }
  }
  if (references.serverLp) {
    emit("\nThe server LP (--server-lp, server_bound.h: each request on one host with its own CPU and memory) against the "
         "GPU-packing LP, mean over seeds\n\n| workload | pool | GPU-packing LP | server LP | difference |\n|---|---|---|---|---|\n");
    for (const auto& w : workloads)
      for (const auto& sh : shapeNames) {
        const double ub = stats(bounds[{w, sh}]).mean, server = stats(serverBounds[{w, sh}]).mean;
        emit(fmt::format("| {} | {} | {:.2f} | {:.2f} | {:.2f} |\n", w, shapes[sh].describe(), ub, server, ub - server));
      }
  }
  if (mirrorRuns > 0)
    emit(fmt::format("\nMirror pool vs static mode: {} runs, largest difference in allocation at any arrived demand {:.4f} points\n",
                     mirrorRuns, mirrorDiff));
  fmt::print(stderr, "wrote {}/composable_runs.csv, composable_summary.md\n", out.string());
  return beaten > 0 ? 1 : 0;
}

}  // namespace switchyard::bench
