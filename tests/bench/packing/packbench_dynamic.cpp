// switchyard_packbench dynamic: Poisson arrivals and departures at offered loads.
#include "tests/bench/packing/packbench_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <tuple>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/pool_aware_policy.h"
#include "tests/bench/packing/static_sim.h"

namespace switchyard::bench {

int runDynamicCommand(const fs::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& poolNames,
                      const std::vector<double>& loads, const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds,
                      const DynamicOptions& base, const sharing::SharePolicyOptions& ours, const fs::path& out, unsigned jobs,
                      bool quiet) {
  auto parsed = parsePools(poolNames, /*allowStatic=*/true);
  if (!parsed) return 2;
  auto& poolShapes = *parsed;
  auto inputs = loadInputs(traces, workloads, policies, /*poolPolicies=*/true, /*needDurations=*/true);
  if (!inputs) return 2;
  const sharing::ShareCluster* cluster = &inputs->cluster;
  auto& pods = inputs->pods;
  auto& mixes = inputs->mixes;
  struct Run {
    std::string workload, pool, policy;
    double load;
    uint64_t seed;
    DynamicResult result;
  };
  std::vector<Run> runs;
  size_t skipped = 0;
  for (const auto& w : workloads)
    for (const auto& pl : poolNames)
      for (double load : loads)
        for (const auto& p : policies)
          for (uint64_t seed : seeds) {
            if (!poolShapes[pl] && needsComposablePool(p)) {
              ++skipped;
              continue;
            }
            runs.push_back({w, pl, p, load, seed, {}});
          }
  if (skipped > 0)
    fmt::print(stderr, "note: {} runs skipped: {} runs on composable pools only, not on 'static'\n", skipped, kPoolAwarePolicy);
  fs::create_directories(out);
  runInParallel(
      runs.size(), jobs,
      [&](size_t i) {
        Run& run = runs[i];
        sharing::ShareCluster c = shuffleNodes(*cluster, run.seed);
        const sharing::SharePolicyOptions po = runOptions(ours, run.seed, mixes[run.workload]);
        DynamicOptions o = base;
        o.load = run.load;
        o.seed = run.seed;
        const auto& shape = poolShapes[run.pool];
        run.result = runDynamic(c, shape ? &*shape : nullptr, pods[run.workload],
                                [&](const ComposablePool* pool) { return makePolicyFor(run.policy, po, pool); }, o);
      },
      [&](size_t i, size_t finished) {
        if (quiet) return;
        const Run& run = runs[i];
        fmt::print(stderr, "[{}/{}] {:<10} {:<12} load {:.2f} {:<12} seed {}  accepted {:5.1f}%  alloc {:5.1f}%\n", finished, runs.size(),
                   run.workload, run.pool, run.load, run.policy, run.seed,
                   100.0 * static_cast<double>(run.result.accepted) / static_cast<double>(std::max<size_t>(1, run.result.arrived)),
                   run.result.meanAllocationPercent);
      });

  std::ofstream csv(out / "dynamic_runs.csv");
  csv << "workload,pool,load,policy,seed,arrived,accepted_at_once,accepted,gave_up,mean_wait_s,p99_wait_s,attaches,detaches,"
         "mean_allocation_pct,decide_seconds,accepted_gpu_time_pct\n";
  using Key = std::tuple<std::string, std::string, double, std::string>;
  std::map<Key, std::vector<double>> acceptance, gpuTime, atOnce, meanWait, p99Wait, churn, alloc;
  for (const auto& r : runs) {
    const auto& d = r.result;
    const double gpuTimePct = d.arrivedGpuTime > 0 ? 100.0 * d.acceptedGpuTime / d.arrivedGpuTime : 100.0;
    csv << fmt::format("{},{},{:.2f},{},{},{},{},{},{},{:.1f},{:.1f},{},{},{:.4f},{:.3f},{:.4f}\n", r.workload, r.pool, r.load, r.policy,
                       r.seed, d.arrived, d.acceptedAtOnce, d.accepted, d.gaveUp, d.meanWaitSeconds, d.p99WaitSeconds, d.attaches,
                       d.detaches, d.meanAllocationPercent, d.seconds, gpuTimePct);
    const Key k{r.workload, r.pool, r.load, r.policy};
    const double arrived = static_cast<double>(std::max<size_t>(1, d.arrived));
    acceptance[k].push_back(100.0 * static_cast<double>(d.accepted) / arrived);
    gpuTime[k].push_back(gpuTimePct);
    atOnce[k].push_back(100.0 * static_cast<double>(d.acceptedAtOnce) / arrived);
    meanWait[k].push_back(d.meanWaitSeconds);
    p99Wait[k].push_back(d.p99WaitSeconds);
    churn[k].push_back(d.accepted ? static_cast<double>(d.attaches + d.detaches) / static_cast<double>(d.accepted) : 0);
    alloc[k].push_back(d.meanAllocationPercent);
  }
  SummaryTee emit(out / "dynamic_summary.md");
  emit(fmt::format("Dynamic mode: Poisson arrivals, trace durations cut at {:.0f} s, {} measured arrivals after {} warm-up, "
                   "patience {:.0f} s, backfill depth {}; mean over {} seeds ({})\n\n"
                   "| workload | pool | load | policy | accepted % | of GPU time % | at once % | mean wait s | p99 wait s | "
                   "attach+detach per accepted | mean GPU allocation % |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
                   base.maxDurationSeconds, base.arrivals, base.warmup, base.patienceSeconds, base.backfillDepth, seeds.size(),
                   fmt::join(seeds, ",")));
  for (const auto& w : workloads)
    for (const auto& pl : poolNames)
      for (double load : loads)
        for (const auto& p : policies) {
          const Key k{w, pl, load, p};
          if (!acceptance.contains(k)) continue;  // skipped
          emit(fmt::format("| {} | {} | {:.2f} | {} | {:.2f} | {:.2f} | {:.2f} | {:.0f} | {:.0f} | {:.3f} | {:.2f} |\n", w,
                           poolShapes[pl] ? poolShapes[pl]->describe() : "static", load, p, stats(acceptance[k]).mean,
                           stats(gpuTime[k]).mean, stats(atOnce[k]).mean, stats(meanWait[k]).mean, stats(p99Wait[k]).mean,
                           stats(churn[k]).mean, stats(alloc[k]).mean));
        }
  fmt::print(stderr, "wrote {}/dynamic_runs.csv, dynamic_summary.md\n", out.string());
  return 0;
}

}  // namespace switchyard::bench
