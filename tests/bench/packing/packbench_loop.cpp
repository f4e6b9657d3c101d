// switchyard_packbench loop: the utilization loop (queue order, fair share, backfill, preemption, leases, idle
// reclaim) against FIFO on the dynamic mode's arrivals, per class, tenant and request size.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <tuple>

#include "tests/bench/packing/loop_sim.h"
#include "tests/bench/packing/static_sim.h"
#include "tests/bench/packing/packbench_commands.h"

namespace switchyard::bench {

namespace {

double hours(double milliGpuSeconds) { return milliGpuSeconds / 1000.0 / 3600.0; }
double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }
double waitAt(const LoopGroup& g, double q) { return g.waits.empty() ? 0 : percentile(g.waits, q); }
std::string columns(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += "---|";
  return s;
}
// The lowest served / entitled of the tenants that offered anything.
double lowestTenantRatio(const LoopResult& d) {
  double lowest = 1e9;
  for (size_t t = 0; t < d.byTenant.size(); ++t)
    if (d.byTenant[t].offeredGpuTime > 0) lowest = std::min(lowest, d.tenantRatio[t]);
  return lowest;
}
double waitMax(const LoopGroup& g) { return g.waits.empty() ? 0 : *std::max_element(g.waits.begin(), g.waits.end()); }

struct Run {
  std::string pool, policy, mode;
  double load = 0;
  uint64_t seed = 0;
  LoopResult result;
};

void writeRuns(const fs::path& file, const std::vector<Run>& runs) {
  std::ofstream csv(file);
  csv << "pool,policy,mode,load,seed,arrived,accepted,gave_up,served_gpu_time_pct,busy_gpu_hours,idle_gpu_hours,reclaims,"
         "reclaimed_gpu_hours,preemptions,preempted_gpu_hours,jain,min_tenant_ratio,mean_allocation_pct,decide_seconds,moves,moved_gpus,move_looks,move_chances\n";
  for (const auto& r : runs) {
    const auto& d = r.result;
    csv << fmt::format("{},{},{},{:.2f},{},{},{},{},{:.4f},{:.1f},{:.1f},{},{:.1f},{},{:.1f},{:.4f},{:.4f},{:.4f},{:.3f},{},{:.0f},{},{}\n", r.pool, r.policy,
                       r.mode, r.load, r.seed, d.all.arrived, d.all.accepted, d.all.gaveUp, pct(d.all.servedGpuTime, d.all.offeredGpuTime),
                       hours(d.busyGpuTime), hours(d.idleGpuTime), d.reclaims, hours(d.reclaimedGpuTime), d.all.preemptions,
                       hours(d.all.preemptedGpuTime), d.jain, lowestTenantRatio(d), d.meanAllocationPercent, d.seconds, d.moves, d.movedGpus, d.moveLooks, d.moveChances);
  }
}

void writeGroups(const fs::path& file, const std::vector<Run>& runs, const LoopWorkload& w) {
  std::ofstream csv(file);
  csv << "pool,policy,mode,load,seed,group,name,arrived,accepted,gave_up,offered_gpu_hours,served_gpu_time_pct,wait_p50_s,wait_p99_s,"
         "wait_max_s,preemptions,preempted_gpu_hours,weight,entitled_ratio\n";
  for (const auto& r : runs) {
    auto row = [&](const char* group, const std::string& name, const LoopGroup& g, double weight, double ratio) {
      csv << fmt::format("{},{},{},{:.2f},{},{},{},{},{},{},{:.1f},{:.4f},{:.1f},{:.1f},{:.1f},{},{:.1f},{},{:.4f}\n", r.pool, r.policy,
                         r.mode, r.load, r.seed, group, name, g.arrived, g.accepted, g.gaveUp, hours(g.offeredGpuTime),
                         pct(g.servedGpuTime, g.offeredGpuTime), waitAt(g, 0.5), waitAt(g, 0.99), waitMax(g), g.preemptions,
                         hours(g.preemptedGpuTime), weight, ratio);
    };
    const auto& d = r.result;
    for (size_t c = 0; c < kLoopClasses; ++c) row("class", loopClassName(c), d.byClass[c], 0, 0);
    for (size_t t = 0; t < d.byTenant.size(); ++t) row("tenant", fmt::format("t{}", t), d.byTenant[t], w.tenantWeights[t], d.tenantRatio[t]);
    for (size_t s = 0; s < kLoopSizes; ++s) row("size", loopSizeName(s), d.bySize[s], 0, 0);
  }
}

}  // namespace

int runLoopCommand(const fs::path& traces, const std::string& workload, const std::vector<std::string>& poolNames,
                   const std::vector<std::string>& modes, const std::vector<double>& loads, const std::vector<std::string>& policies,
                   const std::vector<uint64_t>& seeds, const LoopOptions& base, const sharing::SharePolicyOptions& ours, const fs::path& out,
                   unsigned jobs, bool quiet) {
  for (const auto& m : modes)
    if (m != "fifo" && m != "loop") {
      fmt::print(stderr, "error: unknown mode '{}' (fifo, loop)\n", m);
      return 2;
    }
  auto parsed = parsePools(poolNames, /*allowStatic=*/true);
  if (!parsed) return 2;
  auto& poolShapes = *parsed;
  auto inputs = loadInputs(traces, {workload}, policies, /*poolPolicies=*/true, /*needDurations=*/true);
  if (!inputs) return 2;
  std::vector<Run> runs;
  for (const auto& pl : poolNames)
    for (const auto& p : policies)
      for (const auto& m : modes)
        for (double load : loads)
          for (uint64_t seed : seeds)
            if (poolShapes[pl] || !needsComposablePool(p)) runs.push_back({pl, p, m, load, seed, {}});
  fs::create_directories(out);
  runInParallel(
      runs.size(), jobs,
      [&](size_t i) {
        Run& run = runs[i];
        const sharing::ShareCluster c = shuffleNodes(inputs->cluster, run.seed);
        const sharing::SharePolicyOptions po = runOptions(ours, run.seed, inputs->mixes[workload]);
        LoopOptions o = base;
        o.arrivals.load = run.load;
        o.arrivals.seed = run.seed;
        o.rules.fullLoop = run.mode == "loop";
        const auto& shape = poolShapes[run.pool];
        run.result = runLoop(c, shape ? &*shape : nullptr, inputs->pods[workload],
                             [&](const ComposablePool* pool) { return makePolicyFor(run.policy, po, pool); }, o);
      },
      [&](size_t i, size_t finished) {
        if (quiet) return;
        const Run& r = runs[i];
        fmt::print(stderr, "[{}/{}] {:<12} {:<10} {:<4} load {:.2f} seed {}  served {:5.1f}% of GPU time  decide {:.0f} s\n", finished,
                   runs.size(), r.pool, r.policy, r.mode, r.load, r.seed, pct(r.result.all.servedGpuTime, r.result.all.offeredGpuTime),
                   r.result.seconds);
      });
  writeRuns(out / "loop_runs.csv", runs);
  writeGroups(out / "loop_groups.csv", runs, base.workload);

  // Means over seeds, by (pool, policy, mode, load).
  using Key = std::tuple<std::string, std::string, std::string, double>;
  std::map<Key, std::vector<const Run*>> byKey;
  for (const auto& r : runs) byKey[{r.pool, r.policy, r.mode, r.load}].push_back(&r);
  auto mean = [](const std::vector<const Run*>& rs, auto f) {
    double s = 0;
    for (const Run* r : rs) s += f(r->result);
    return rs.empty() ? 0 : s / static_cast<double>(rs.size());
  };
  const auto& w = base.workload;
  SummaryTee emit(out / "loop_summary.md");
  emit(fmt::format(
      "Utilization loop on workload {}: {} measured arrivals after {} warm-up, patience {:.0f} s, backfill depth {}; tenants' "
      "weights {} and shares of arrivals {}; classes production/batch/spot {}; {:.0f} % of systems idle for the last {:.0f} % of "
      "their life; reclaim after {:.0f} s idle ({}); preemption grace {:.0f} s; batch {} spot; {}{}. Mean over seeds {}.\n\n",
      workload, base.arrivals.arrivals, base.arrivals.warmup, base.arrivals.patienceSeconds, base.arrivals.backfillDepth,
      fmt::join(w.tenantWeights, ":"), fmt::join(w.tenantDemand, ":"), fmt::join(w.classShare, ":"), 100 * w.overprovisionedShare,
      100 * w.idleShare, base.rules.reclaimAfterSeconds, base.rules.reclaimShares ? "whole GPUs and shares" : "whole GPUs only",
      base.rules.preemptionGraceSeconds,
      base.rules.batchPreempts ? "preempts" : "does not preempt",
      base.rules.shareFirst ? fmt::format("fair share first (backfill {} per tenant, preemption hysteresis {})", base.rules.backfillPerTenant,
                                          base.rules.preemptionHysteresis)
                            : std::string("class first, then the tenant's charge"),
      base.rules.defragment ? fmt::format("; idle systems moved to make room for the head (at most {} GPUs)", base.rules.mostMovedGpus) : "",
      fmt::join(seeds, ",")));
  emit("| pool | policy | mode | load | GPU time served % | idle % of allocated | production / batch / spot served % | "
       "production / batch / spot p99 wait s | gave up | min tenant ratio | Jain | spot GPU time lost to preemption % | reclaims | "
       "allocation % | decide s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& [k, rs] : byKey) {
    const auto& [pl, policy, mode, load] = k;
    auto cls = [&](size_t c, auto f) { return mean(rs, [&](const LoopResult& d) { return f(d.byClass[c]); }); };
    auto served = [](const LoopGroup& g) { return pct(g.servedGpuTime, g.offeredGpuTime); };
    auto p99 = [](const LoopGroup& g) { return waitAt(g, 0.99); };
    emit(fmt::format(
        "| {} | {} | {} | {:.2f} | {:.2f} | {:.1f} | {:.1f} / {:.1f} / {:.1f} | {:.0f} / {:.0f} / {:.0f} | {:.0f} | {:.3f} | {:.4f} | {:.2f} | "
        "{:.0f} | {:.1f} | {:.0f} |\n",
        poolShapes[pl] ? poolShapes[pl]->describe() : "static", policy, mode, load,
        mean(rs, [&](const LoopResult& d) { return pct(d.all.servedGpuTime, d.all.offeredGpuTime); }),
        mean(rs, [](const LoopResult& d) { return pct(d.idleGpuTime, d.busyGpuTime + d.idleGpuTime); }), cls(0, served), cls(1, served),
        cls(2, served), cls(0, p99), cls(1, p99), cls(2, p99), mean(rs, [](const LoopResult& d) { return static_cast<double>(d.all.gaveUp); }),
        mean(rs, lowestTenantRatio),
        mean(rs, [](const LoopResult& d) { return d.jain; }),
        mean(rs, [](const LoopResult& d) { return pct(d.byClass[2].preemptedGpuTime, d.byClass[2].servedGpuTime); }),
        mean(rs, [](const LoopResult& d) { return static_cast<double>(d.reclaims); }),
        mean(rs, [](const LoopResult& d) { return d.meanAllocationPercent; }), mean(rs, [](const LoopResult& d) { return d.seconds; })));
  }
  emit("\nWait p50 / p99 / max (s) by request size, first seed:\n\n| pool | policy | mode | load |");
  for (size_t s = 0; s < kLoopSizes; ++s) emit(fmt::format(" {} |", loopSizeName(s)));
  emit("\n|---|---|---|---|" + columns(kLoopSizes) + "\n");
  for (const auto& [k, rs] : byKey) {
    const auto& [pl, policy, mode, load] = k;
    emit(fmt::format("| {} | {} | {} | {:.2f} |", poolShapes[pl] ? poolShapes[pl]->describe() : "static", policy, mode, load));
    for (size_t s = 0; s < kLoopSizes; ++s) {
      const LoopGroup& g = rs.front()->result.bySize[s];
      emit(fmt::format(" {:.0f} / {:.0f} / {:.0f} |", waitAt(g, 0.5), waitAt(g, 0.99), waitMax(g)));
    }
    emit("\n");
  }
  emit("\nTenants (weight: served / entitled, first seed):\n\n| pool | policy | mode | load |");
  for (size_t t = 0; t < w.tenantWeights.size(); ++t) emit(fmt::format(" t{} (weight {}) |", t, w.tenantWeights[t]));
  emit("\n|---|---|---|---|" + columns(w.tenantWeights.size()) + "\n");
  for (const auto& [k, rs] : byKey) {
    const auto& [pl, policy, mode, load] = k;
    emit(fmt::format("| {} | {} | {} | {:.2f} |", poolShapes[pl] ? poolShapes[pl]->describe() : "static", policy, mode, load));
    for (size_t t = 0; t < w.tenantWeights.size(); ++t) emit(fmt::format(" {:.3f} |", rs.front()->result.tenantRatio[t]));
    emit("\n");
  }
  fmt::print(stderr, "wrote {}/loop_runs.csv, loop_groups.csv, loop_summary.md\n", out.string());
  return 0;
}

}  // namespace switchyard::bench
