// switchyard_packbench compaction: the smallest pool that serves a workload at a target acceptance.
//
// The demand is fixed: Poisson arrivals at `load` x the whole openb cluster's GPU capacity (dynamic mode).
// The pool is a share of the servers, sampled per (GPU model, GPU count) class so the mix stays the same,
// and nested (a larger share holds every server of a smaller one); or, keeping every host, a share of the
// GPUs (--keep-hosts for composable pools, --thin-servers for fixed servers; compaction_pools.h). A bisection
// over the share, in steps of `resolution` percent, finds the smallest pool whose measured acceptance reaches
// the target -- both of the requests and of their GPU time (milli-GPU x duration: an overloaded pool can
// still accept 99 % of the requests by turning away the long, large ones) -- for fixed servers and for
// composable pools built from the same servers.
#include "tests/bench/packing/packbench_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <tuple>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/compaction_pools.h"
#include "tests/bench/packing/pool_aware_policy.h"

namespace switchyard::bench {

namespace {

// How a pool is made smaller: by whole servers, or keeping every host and taking away GPUs only (--keep-hosts: a
// composable pool's enclosures; --thin-servers: the fixed servers' own GPUs).
enum class Shrink { kServers, kPoolGpus, kServerGpus };
Shrink shrinkOf(const std::optional<ComposableShape>& shape, const CompactionOptions& o) {
  if (!shape) return o.thinServers ? Shrink::kServerGpus : Shrink::kServers;
  return o.keepHosts && !shape->mirrorServers ? Shrink::kPoolGpus : Shrink::kServers;
}
std::string_view csvName(Shrink s) { return s == Shrink::kServers ? "servers" : s == Shrink::kPoolGpus ? "gpus" : "server-gpus"; }
std::string_view shareOf(Shrink s) {
  return s == Shrink::kServers ? "servers" : s == Shrink::kPoolGpus ? "GPUs, every host kept" : "GPUs, every server kept";
}

double acceptancePercent(const DynamicResult& r) {
  return 100.0 * static_cast<double>(r.accepted) / static_cast<double>(std::max<size_t>(1, r.arrived));
}
double gpuTimeAcceptancePercent(const DynamicResult& r) {
  return r.arrivedGpuTime > 0 ? 100.0 * r.acceptedGpuTime / r.arrivedGpuTime : 100.0;
}
// What kind `k` got: % of its GPU time accepted, or of its requests for CPU-only ones; 100 when none arrived.
double kindAcceptancePercent(const DynamicResult& r, size_t k) {
  if (static_cast<RequestKind>(k) == RequestKind::kCpuOnly)
    return r.arrivedByKind[k] ? 100.0 * static_cast<double>(r.acceptedByKind[k]) / static_cast<double>(r.arrivedByKind[k]) : 100.0;
  return r.arrivedGpuTimeByKind[k] > 0 ? 100.0 * r.acceptedGpuTimeByKind[k] / r.arrivedGpuTimeByKind[k] : 100.0;
}

}  // namespace

int runCompactionCommand(const fs::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& poolNames,
                         const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds, const CompactionOptions& options,
                         const DynamicOptions& base, const fs::path& out, unsigned jobs, bool quiet) {
  if (options.fromPercent < 1 || options.fromPercent >= 100 || options.resolutionPercent < 1) {
    fmt::print(stderr, "error: --from must be in 1..99 and --resolution at least 1\n");
    return 2;
  }
  auto parsed = parsePools(poolNames, /*allowStatic=*/true);
  if (!parsed) return 2;
  auto& poolShapes = *parsed;
  auto inputs = loadInputs(traces, workloads, policies, /*poolPolicies=*/true, /*needDurations=*/true);
  if (!inputs) return 2;

  struct Probe {
    int percent;
    size_t servers;
    int gpus;
    DynamicResult result;
  };
  struct Search {
    std::string workload, pool, policy;
    uint64_t seed;
    std::vector<Probe> probes;
    int smallest = -1;  // percent of servers; -1: even the whole cluster misses the target
  };
  std::vector<Search> searches;
  size_t skipped = 0;
  for (const auto& w : workloads)
    for (const auto& pl : poolNames)
      for (const auto& p : policies)
        for (uint64_t seed : seeds) {
          if (!poolShapes[pl] && needsComposablePool(p)) {
            ++skipped;
            continue;
          }
          searches.push_back({w, pl, p, seed, {}, -1});
        }
  if (skipped > 0)
    fmt::print(stderr, "note: {} searches skipped: {} runs on composable pools only, not on 'static'\n", skipped, kPoolAwarePolicy);
  fs::create_directories(out);
  std::mutex printing;
  runInParallel(
      searches.size(), jobs,
      [&](size_t i) {
        Search& s = searches[i];
        auto probe = [&](int percent) {
          std::optional<ComposableShape> shape = poolShapes[s.pool];
          const Shrink how = shrinkOf(shape, options);
          sharing::ShareCluster servers = how == Shrink::kServers      ? shareOfServers(inputs->cluster, percent, s.seed)
                                          : how == Shrink::kServerGpus ? thinnedServers(inputs->cluster, percent, s.seed, *options.thinServers)
                                                                       : inputs->cluster;
          if (how == Shrink::kPoolGpus) shape->gpuPercent = percent;
          // Only a pool that keeps its hosts holds fewer GPUs than its servers (rounded per model, as it cables them).
          const int gpus = how == Shrink::kPoolGpus ? static_cast<int>(ComposablePool(servers, *shape).totalGpuMilli() / sharing::kMilliPerGpu)
                                                    : servers.totalGpus();
          const sharing::SharePolicyOptions po = runOptions({}, s.seed, inputs->mixes[s.workload]);
          DynamicOptions o = base;
          o.load = options.load;
          o.seed = s.seed;
          o.referenceCapacityMilli = inputs->cluster.totalGpuMilli();
          s.probes.push_back({percent, servers.size(), gpus,
                              runDynamic(servers, shape ? &*shape : nullptr, inputs->pods[s.workload],
                                         [&](const ComposablePool* pool) { return makePolicyFor(s.policy, po, pool); }, o)});
          const double accepted = acceptancePercent(s.probes.back().result);
          const double gpuTime = gpuTimeAcceptancePercent(s.probes.back().result);
          if (!quiet) {
            std::lock_guard lock(printing);
            fmt::print(stderr, "  {:<10} {:<12} {:<12} seed {}: {:3d}% of {} ({} GPUs) accepts {:6.2f}% of requests, {:6.2f}% of GPU time\n",
                       s.workload, s.pool, s.policy, s.seed, percent, how == Shrink::kServers ? "servers" : "GPUs", gpus, accepted, gpuTime);
          }
          return accepted >= options.targetPercent && gpuTime >= options.targetPercent;
        };
        const auto probeAlso = [&] {
          for (int percent : options.probeAt)
            if (std::none_of(s.probes.begin(), s.probes.end(), [&](const Probe& p) { return p.percent == percent; })) probe(percent);
        };
        if (!probe(100)) {
          probeAlso();
          return;
        }
        int fail = options.fromPercent, pass = 100;  // `from` is taken to miss the target
        while (pass - fail > options.resolutionPercent) {
          const int mid = (fail + pass) / 2;
          (probe(mid) ? pass : fail) = mid;
        }
        s.smallest = pass;
        probeAlso();
      },
      [&](size_t i, size_t finished) {
        if (quiet) return;
        const Search& s = searches[i];
        std::lock_guard lock(printing);
        fmt::print(stderr, "[{}/{}] {} {} {} seed {}: smallest pool {}\n", finished, searches.size(), s.workload, s.pool, s.policy, s.seed,
                   s.smallest < 0 ? std::string("none (the whole cluster misses the target)")
                                  : fmt::format("{}% of {}", s.smallest, shareOf(shrinkOf(poolShapes[s.pool], options))));
      });

  std::ofstream csv(out / "compaction_probes.csv");
  // percent_of_servers is of the GPUs where every host was kept (--keep-hosts, --thin-servers: shrinks says which).
  csv << "workload,pool,policy,seed,shrinks,percent_of_servers,servers,gpus,arrived,accepted,accepted_pct,accepted_gpu_time_pct,mean_wait_s,"
         "mean_allocation_pct,smallest_percent";
  // Per request kind: arrived requests and the % accepted (of GPU time; of requests for CPU-only ones).
  for (size_t k = 0; k < kRequestKinds; ++k)
    csv << fmt::format(",{0}_arrived,{0}_accepted_{1}_pct", csvName(static_cast<RequestKind>(k)),
                       static_cast<RequestKind>(k) == RequestKind::kCpuOnly ? "request" : "gpu_time");
  csv << "\n";
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, std::vector<double>> smallest, gpus, servers;
  std::map<Key, int> missed;
  std::map<std::tuple<std::string, std::string, std::string, int>, std::vector<const DynamicResult*>> atProbe;  // --probe-at's probes
  const auto shrinks = [&](const std::string& pool) { return csvName(shrinkOf(poolShapes[pool], options)); };
  for (const auto& s : searches) {
    for (const auto& p : s.probes) {
      csv << fmt::format("{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.1f},{:.3f},{}", s.workload, s.pool, s.policy, s.seed, shrinks(s.pool), p.percent,
                         p.servers, p.gpus, p.result.arrived, p.result.accepted, acceptancePercent(p.result),
                         gpuTimeAcceptancePercent(p.result), p.result.meanWaitSeconds, p.result.meanAllocationPercent, s.smallest);
      const DynamicResult& r = p.result;
      for (size_t k = 0; k < kRequestKinds; ++k) csv << fmt::format(",{},{:.3f}", r.arrivedByKind[k], kindAcceptancePercent(r, k));
      csv << "\n";
      if (std::find(options.probeAt.begin(), options.probeAt.end(), p.percent) != options.probeAt.end())
        atProbe[{s.workload, s.pool, s.policy, p.percent}].push_back(&r);
    }
    const Key k{s.workload, s.pool, s.policy};
    if (s.smallest < 0) {
      ++missed[k];
      continue;
    }
    smallest[k].push_back(s.smallest);
    for (const auto& p : s.probes)
      if (p.percent == s.smallest) {
        gpus[k].push_back(p.gpus);
        servers[k].push_back(static_cast<double>(p.servers));
      }
  }
  SummaryTee emit(out / "compaction_summary.md");
  emit(fmt::format("Compaction: the smallest share of the openb servers that accepts >= {:.1f} % of the requests, and of their "
                   "GPU time, arriving at load {:.2f} of "
                   "the whole cluster (dynamic mode: {} measured arrivals after {} warm-up, patience {:.0f} s); bisection in steps of "
                   "{} %, from {} %; mean ± sd over {} seeds ({}). The share is taken per (model, GPU count) class and rounded, so the servers "
                   "and GPUs kept are the measure.{}\n\n| workload | pool | policy | shrinks | share % | servers | GPUs | % of GPUs | missed at 100 % "
                   "|\n|---|---|---|---|---|---|---|---|---|\n",
                   options.targetPercent, options.load, base.arrivals, base.warmup, base.patienceSeconds, options.resolutionPercent,
                   options.fromPercent, seeds.size(), fmt::join(seeds, ","),
                   std::string(options.keepHosts ? " Composable pools keep every host and shrink only their GPUs (per model, fewer "
                                                   "enclosures): their share is of the GPUs."
                                                 : "") +
                       (!options.thinServers                          ? ""
                        : *options.thinServers == Thinning::kEven ? " Fixed servers are all kept and lose GPUs (per model, from the "
                                                                       "servers with the most first): their share is of the GPUs."
                                                                     : " Fixed servers are all kept and lose GPUs (per model, from the "
                                                                       "servers with the fewest first): their share is of the GPUs.")));
  for (const auto& w : workloads)
    for (const auto& pl : poolNames)
      for (const auto& p : policies) {
        if (!poolShapes[pl] && needsComposablePool(p)) continue;  // skipped
        const Key k{w, pl, p};
        const Stats sm = stats(smallest[k]), g = stats(gpus[k]), sv = stats(servers[k]);
        const bool found = !smallest[k].empty();
        emit(fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", w, poolShapes[pl] ? poolShapes[pl]->describe() : "static", p, shrinks(pl),
                         found ? fmt::format("{:.1f} ± {:.1f}", sm.mean, sm.sd) : "–", found ? fmt::format("{:.0f}", sv.mean) : "–",
                         found ? fmt::format("{:.0f} ± {:.0f}", g.mean, g.sd) : "–",
                         found ? fmt::format("{:.1f}", 100.0 * g.mean / inputs->cluster.totalGpus()) : "–", missed[k]));
      }
  if (!options.probeAt.empty()) {
    emit(fmt::format("\nWhat each request kind gets at the same size (--probe-at): % of its GPU time accepted (CPU-only: % of its requests), and "
                     "the share of all GPU time that kind asks; mean over seeds\n\n| workload | pool | policy | share % | all GPU time | {} |\n"
                     "|---|---|---|---|---|---|---|---|---|---|\n",
                     "CPU-only | shares of a GPU | 1 GPU | 2-4 GPUs | 5+ GPUs"));
    for (const auto& w : workloads)
      for (const auto& pl : poolNames)
        for (const auto& p : policies)
          for (int percent : options.probeAt) {
            const auto it = atProbe.find({w, pl, p, percent});
            if (it == atProbe.end()) continue;  // skipped (switchyard-pool on fixed servers)
            std::vector<double> all;
            std::array<std::vector<double>, kRequestKinds> byKind;
            std::array<double, kRequestKinds> asked{};
            double askedTotal = 0;
            for (const DynamicResult* r : it->second) {
              all.push_back(gpuTimeAcceptancePercent(*r));
              for (size_t k = 0; k < kRequestKinds; ++k) {
                byKind[k].push_back(kindAcceptancePercent(*r, k));
                asked[k] += r->arrivedGpuTimeByKind[k];
              }
              askedTotal += r->arrivedGpuTime;
            }
            std::string row = fmt::format("| {} | {} | {} | {} | {:.2f} |", w, poolShapes[pl] ? poolShapes[pl]->describe() : "static", p, percent, stats(all).mean);
            static_assert(static_cast<size_t>(RequestKind::kCpuOnly) == 0, "the CPU-only column comes first");
            row += fmt::format(" {:.2f} |", stats(byKind[0]).mean);  // CPU-only: no GPU time to share out
            for (size_t k = 1; k < kRequestKinds; ++k)
              row += fmt::format(" {:.2f} ({:.0f} %) |", stats(byKind[k]).mean, askedTotal > 0 ? 100.0 * asked[k] / askedTotal : 0.0);
            emit(row + "\n");
          }
  }
  fmt::print(stderr, "wrote {}/compaction_probes.csv, compaction_summary.md\n", out.string());
  return 0;
}

}  // namespace switchyard::bench
