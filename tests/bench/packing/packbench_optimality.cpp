// switchyard_packbench optimality: each policy against the exact optimum on small instances.
//
// An instance is a random sample of openb servers (per seed) and pods of the workload in a seeded order up to
// 100 % of that sample's GPU capacity. Every policy places the list online; GLPK solves the offline integer program
// (exact_optimum.h) on the same pool. Fixed servers are the mirror pool; K:U:P:L pools are composable.
#include "tests/bench/packing/packbench_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <tuple>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/exact_optimum.h"
#include "tests/bench/packing/static_sim.h"
#include "tests/bench/packing/upper_bound.h"

namespace switchyard::bench {

namespace {

// `count` servers drawn without replacement, in a random order.
sharing::ShareCluster sampleServers(const sharing::ShareCluster& all, size_t count, uint64_t seed) {
  std::vector<sharing::ShareNode> nodes = all.nodes();
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + 7);
  std::shuffle(nodes.begin(), nodes.end(), rng);
  nodes.resize(std::min(count, nodes.size()));
  return sharing::ShareCluster(std::move(nodes), all.models());
}

// The pod list shuffled by the seed, taken in order up to the first pod that would take the GPU demand past
// the capacity (FGD's inflation stops there, which on a few servers can be after one or two pods); after it,
// only GPU pods that still fit are added, so demand ends at (or just under) 100 % and CPU-only pods keep
// their share of the list.
std::vector<sharing::ShareRequest> fillToCapacity(const std::vector<TracePod>& pods, int64_t capacityMilli, uint64_t seed) {
  std::vector<const TracePod*> order;
  for (const auto& p : pods) order.push_back(&p);
  std::sort(order.begin(), order.end(), [](const TracePod* a, const TracePod* b) { return a->name < b->name; });
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<sharing::ShareRequest> out;
  int64_t demand = 0;
  bool overshot = false;
  for (const TracePod* p : order) {
    if (demand == capacityMilli) break;
    if (demand + p->request.totalGpuMilli() > capacityMilli) {
      overshot = true;
      continue;
    }
    if (overshot && p->request.gpuCount == 0) continue;
    demand += p->request.totalGpuMilli();
    out.push_back(p->request);
  }
  return out;
}

}  // namespace

int runOptimalityCommand(const fs::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& shapeNames,
                         const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds, size_t servers,
                         double timeLimit, const fs::path& out, unsigned jobs, bool quiet) {
  auto pools = parsePools(shapeNames, /*allowStatic=*/false);
  if (!pools) return 2;
  if (servers == 0) {
    fmt::print(stderr, "error: --servers must be at least 1\n");
    return 2;
  }
  for (const auto& w : workloads)
    if (w.find("+mig") != std::string::npos) {
      fmt::print(stderr, "error: workload '{}': the exact model has no MIG slices, so its optimum would only be a bound\n", w);
      return 2;
    }
  auto inputs = loadInputs(traces, workloads, policies, /*poolPolicies=*/true);
  if (!inputs) return 2;

  struct Instance {
    std::string workload, shape;
    uint64_t seed;
    sharing::ShareCluster cluster;
    std::vector<sharing::ShareRequest> requests;
    ExactResult exact;
    double lpBound = 0;
    std::string error;
    std::map<std::string, double> allocated;  // policy -> milli-GPU placed online
    [[nodiscard]] double tightestBound() const { return std::min(exact.boundMilli, lpBound); }
    // Half a milli of slack: the bounds are floating point, placements whole milli.
    [[nodiscard]] bool provedByEither() const { return exact.proved || exact.bestMilli >= tightestBound() - 0.5; }
  };
  std::vector<Instance> instances;
  for (const auto& w : workloads)
    for (const auto& sh : shapeNames)
      for (uint64_t seed : seeds) {
        Instance in{w, sh, seed, sampleServers(inputs->cluster, servers, seed), {}, {}, 0, {}, {}};
        in.requests = fillToCapacity(inputs->pods[w], in.cluster.totalGpuMilli(), seed);
        instances.push_back(std::move(in));
      }
  fs::create_directories(out);
  runInParallel(
      instances.size(), jobs,
      [&](size_t i) {
        Instance& in = instances[i];
        const ComposableShape shape = *(*pools)[in.shape];
        for (const auto& p : policies) {
          const sharing::SharePolicyOptions o = runOptions({}, in.seed, inputs->mixes[in.workload]);
          auto result = runComposable(ComposablePool(in.cluster, shape), in.requests,
                                      [&](const ComposablePool& pool) { return makePolicyFor(p, o, &pool); });
          in.allocated[p] = result.allocationPercent.back() * static_cast<double>(in.cluster.totalGpuMilli()) / 100.0;
        }
        auto lp = packingUpperBound(in.cluster, in.requests, boundOptionsFor(shape));
        if (lp) in.lpBound = lp->milli;
        auto exact = exactOptimum(ComposablePool(in.cluster, shape).wiring(), in.requests, timeLimit);
        if (exact) {
          in.exact = *exact;
          // Each policy's placement is feasible too: when the search stopped early, the best known may be one.
          for (const auto& [p, a] : in.allocated) in.exact.bestMilli = std::max(in.exact.bestMilli, a);
        } else {
          in.error = exact.error();
        }
        if (!lp) in.error = lp.error();
      },
      [&](size_t i, size_t finished) {
        if (quiet) return;
        const Instance& in = instances[i];
        const double cap = static_cast<double>(in.cluster.totalGpuMilli()) / 100.0;
        fmt::print(stderr, "[{}/{}] {:<11} {:<10} seed {}  {} GPUs, {} requests: optimum {:.2f}% ({}, {:.1f}s, {} columns)\n", finished,
                   instances.size(), in.workload, in.shape, in.seed, in.cluster.totalGpus(), in.requests.size(), in.exact.bestMilli / cap,
                   in.exact.proved ? "proved" : fmt::format("bound {:.2f}%", in.exact.boundMilli / cap), in.exact.seconds, in.exact.columns);
      });

  std::ofstream csv(out / "optimality_runs.csv");
  csv << "workload,shape,seed,servers,gpus,requests,policy,allocated_pct,optimum_best_pct,optimum_bound_pct,proved,lp_bound_pct,"
         "solve_seconds,columns,rows,tightest_bound_pct,proved_by_either\n";
  for (const auto& in : instances) {
    if (!in.error.empty()) {
      fmt::print(stderr, "error: {} {} seed {}: {}\n", in.workload, in.shape, in.seed, in.error);
      return 1;
    }
    const double cap = static_cast<double>(in.cluster.totalGpuMilli()) / 100.0;
    if (in.exact.bestMilli > in.lpBound + 0.5) {
      fmt::print(stderr, "error: a placement of {} milli-GPU beats the GPU-packing LP's bound of {} ({} {} seed {})\n", in.exact.bestMilli,
                 in.lpBound, in.workload, in.shape, in.seed);
      return 1;
    }
    for (const auto& [p, a] : in.allocated) {
      if (a > in.exact.boundMilli + 0.5) {
        fmt::print(stderr, "error: {} placed {} milli-GPU online but the optimum is at most {} ({} {} seed {})\n", p, a,
                   in.exact.boundMilli, in.workload, in.shape, in.seed);
        return 1;
      }
      csv << fmt::format("{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{},{:.4f},{:.2f},{},{},{:.4f},{}\n", in.workload, in.shape, in.seed,
                         in.cluster.size(), in.cluster.totalGpus(), in.requests.size(), p, a / cap, in.exact.bestMilli / cap,
                         in.exact.boundMilli / cap, in.exact.proved ? 1 : 0, in.lpBound / cap, in.exact.seconds, in.exact.columns,
                         in.exact.rows, in.tightestBound() / cap, in.provedByEither() ? 1 : 0);
    }
  }

  SummaryTee emit(out / "optimality_summary.md");
  std::string dashes;
  for (size_t i = 0; i < policies.size() + 7; ++i) dashes += "---|";
  emit(fmt::format("GPU allocation % at 100 % arrived demand on {} sampled servers, mean over {} seeds ({}); best known = "
                   "the exact ILP's optimum where GLPK proved it within {} s, else the best placement it (or a policy) found; "
                   "gap = best known − policy, in points\n\n"
                   "| workload | pool | {} | best known | GLPK bound | LP bound | bound | proved |\n|{}\n",
                   servers, seeds.size(), fmt::join(seeds, ","), timeLimit, [&] {
                     std::string h;
                     for (const auto& p : policies) h += p + " (gap) | ";
                     return h.substr(0, h.size() - 3);
                   }(),
                   dashes));
  for (const auto& w : workloads)
    for (const auto& sh : shapeNames) {
      std::map<std::string, std::vector<double>> alloc, gap;
      std::vector<double> best, bound, lp, tightest;
      int proved = 0, count = 0;
      for (const auto& in : instances) {
        if (in.workload != w || in.shape != sh) continue;
        const double cap = static_cast<double>(in.cluster.totalGpuMilli()) / 100.0;
        ++count;
        proved += in.provedByEither() ? 1 : 0;
        best.push_back(in.exact.bestMilli / cap);
        bound.push_back(in.exact.boundMilli / cap);
        lp.push_back(in.lpBound / cap);
        tightest.push_back(in.tightestBound() / cap);
        for (const auto& [p, a] : in.allocated) {
          alloc[p].push_back(a / cap);
          gap[p].push_back((in.exact.bestMilli - a) / cap);
        }
      }
      std::string row = fmt::format("| {} | {} |", w, (*pools)[sh]->describe());
      for (const auto& p : policies) row += fmt::format(" {:.2f} ({:.2f}) |", stats(alloc[p]).mean, stats(gap[p]).mean);
      emit(row + fmt::format(" {:.2f} | {:.2f} | {:.2f} | {:.2f} | {}/{} |\n", stats(best).mean, stats(bound).mean, stats(lp).mean,
                             stats(tightest).mean, proved, count));
    }
  emit("\n`bound` is the lower of GLPK's bound and the GPU-packing LP's (upper_bound.h), per instance; an instance is `proved` "
       "when GLPK proved its optimum in time or the best known reaches that bound. Where it is not, the true optimum lies "
       "between `best known` and `bound`, so a policy's gap lies between the number shown and (bound − policy); "
       "optimality_runs.csv has both for each instance.\n");
  fmt::print(stderr, "wrote {}/optimality_runs.csv, optimality_summary.md\n", out.string());
  return 0;
}

}  // namespace switchyard::bench
