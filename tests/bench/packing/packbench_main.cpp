// switchyard_packbench: packing-quality and decision-latency benchmarks on the public Alibaba openb trace.
//
//   switchyard_packbench static  --workloads default,cpu250 --seeds 42-51 --out OUT
//   switchyard_packbench latency --gpus 1000,10000,100000 --fill 0.5,0.9
//
// Traces are read from --traces (default ../shared/traces/alibaba-gpu-2023); nothing is copied.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "tests/bench/packing/openb_trace.h"
#include "tests/bench/packing/composable_sim.h"
#include "tests/bench/packing/dynamic_sim.h"
#include "tests/bench/packing/static_sim.h"
#include "tests/bench/packing/upper_bound.h"

namespace fs = std::filesystem;
using namespace switchyard;
using namespace switchyard::bench;

namespace {

const std::vector<std::string> kAllWorkloads{
    "default",    "cpu050",     "cpu100",     "cpu200",     "cpu250",     "gpushare100", "gpushare40", "gpushare80",
    "gpuspec10",  "gpuspec20",  "gpuspec33",  "multigpu20", "multigpu40", "multigpu50"};
const std::vector<std::string> kDefaultPolicies{"random",      "first-fit",      "best-fit",    "worst-fit", "dot-product",
                                                "gpu-packing", "gpu-clustering", "hived-buddy", "fgd",       "switchyard",
                                                "switchyard-no-frag"};
// Our names -> the FGD authors' names in their cached results.
const std::map<std::string, std::string> kFgdNames{{"random", "01-Random"},        {"dot-product", "02-DotProd"},
                                                   {"gpu-clustering", "03-GpuClustering"}, {"gpu-packing", "04-GpuPacking"},
                                                   {"best-fit", "05-BestFit"},     {"fgd", "06-FGD"}};

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<uint64_t> parseSeeds(const std::string& s) {
  std::vector<uint64_t> out;
  for (const auto& part : splitList(s)) {
    auto dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(std::stoull(part));
    } else {
      for (uint64_t v = std::stoull(part.substr(0, dash)); v <= std::stoull(part.substr(dash + 1)); ++v) out.push_back(v);
    }
  }
  return out;
}

struct Stats {
  double mean = 0, sd = 0;
};
Stats stats(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) : 0;
  return s;
}

// The FGD authors' cached results: workload -> policy -> allocation % at 130 % arrived demand, per seed.
std::map<std::string, std::map<std::string, std::vector<double>>> loadPublished(const fs::path& csv) {
  std::map<std::string, std::map<std::string, std::vector<double>>> out;
  std::ifstream in(csv);
  std::string line;
  if (!std::getline(in, line)) return out;
  auto header = splitList(line);
  auto col = std::find(header.begin(), header.end(), "130") - header.begin();
  while (std::getline(in, line)) {
    auto f = splitList(line);
    if (static_cast<size_t>(col) >= f.size()) continue;
    std::string w = f[0].rfind("openb_pod_list_", 0) == 0 ? f[0].substr(15) : f[0];
    out[w][f[1]].push_back(std::stod(f[static_cast<size_t>(col)]));
  }
  return out;
}

struct Job {
  std::string workload, policy;
  uint64_t seed;
};
struct JobResult {
  Job job;
  StaticResult result;
  size_t typicalShapes = 0;
};

// "default+big": the default pod list with logical servers only a composable pool can serve: of its
// 8-GPU pods (in name order) every fourth asks for 32 GPUs and the next one for 16, CPU and memory scaled.
std::vector<TracePod> withBigServers(std::vector<TracePod> pods) {
  std::sort(pods.begin(), pods.end(), [](const TracePod& a, const TracePod& b) { return a.name < b.name; });
  int eight = 0;
  for (auto& p : pods) {
    if (p.request.gpuCount != 8) continue;
    const int factor = eight % 4 == 0 ? 4 : eight % 4 == 1 ? 2 : 1;
    ++eight;
    p.request.gpuCount *= factor;
    p.request.cpuMilli *= factor;
    p.request.memoryMib *= factor;
  }
  return pods;
}

struct Inputs {
  sharing::ShareCluster cluster;
  std::map<std::string, std::vector<TracePod>> pods;  // by workload name
  std::map<std::string, sharing::ShapeMix> mixes;      // each workload's typical shapes
};

// The node list and each workload's pod list ("NAME+big": with 16/32-GPU servers added), after checking
// the policy names. Reports what is wrong on stderr.
std::optional<Inputs> loadInputs(const fs::path& traces, const std::vector<std::string>& workloads,
                                 const std::vector<std::string>& policies) {
  auto cluster = loadOpenbNodes((traces / "openb_node_list_gpu_node.csv").string());
  if (!cluster) {
    fmt::print(stderr, "error: {}\n", cluster.error());
    return std::nullopt;
  }
  for (const auto& p : policies)
    if (!sharing::makeSharePolicy(p, {})) {
      fmt::print(stderr, "error: unknown policy '{}'; known: {}\n", p, fmt::join(sharing::sharePolicyNames(), ", "));
      return std::nullopt;
    }
  Inputs in{std::move(*cluster), {}, {}};
  sharing::ModelTable models = in.cluster.models();
  for (const auto& w : workloads) {
    const bool big = w.ends_with("+big");
    const std::string file = big ? w.substr(0, w.size() - 4) : w;
    auto loaded = loadOpenbPods((traces / fmt::format("openb_pod_list_{}.csv", file)).string(), models);
    if (!loaded) {
      fmt::print(stderr, "error: {}\n", loaded.error());
      return std::nullopt;
    }
    in.pods[w] = big ? withBigServers(std::move(*loaded)) : std::move(*loaded);
    std::vector<sharing::ShareRequest> reqs;
    for (const auto& p : in.pods[w]) reqs.push_back(p.request);
    in.mixes[w] = sharing::typicalShapes(reqs);
  }
  return in;
}

int runStaticCommand(const fs::path& traces, const std::vector<std::string>& workloads,
                     const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds, double ratio,
                     const fs::path& out, unsigned jobs, bool oracleForOurs, double resolution, bool quiet) {
  auto inputs = loadInputs(traces, workloads, policies);
  if (!inputs) return 2;
  const sharing::ShareCluster* cluster = &inputs->cluster;
  auto& pods = inputs->pods;
  auto& mixes = inputs->mixes;
  std::vector<Job> queue;
  for (const auto& w : workloads)
    for (const auto& p : policies)
      for (uint64_t s : seeds) queue.push_back({w, p, s});

  fs::create_directories(out);
  std::vector<JobResult> results(queue.size());
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::mutex printMutex;
  auto started = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (size_t i; (i = next++) < queue.size();) {
      const Job& j = queue[i];
      sharing::ShareCluster c = shuffleNodes(*cluster, j.seed);
      auto requests = inflateWorkload(pods[j.workload], c.totalGpuMilli(), j.seed, ratio);
      sharing::SharePolicyOptions o{.seed = j.seed, .oracleMix = mixes[j.workload], .learnMix = !oracleForOurs, .cacheFgd = true,
                                    .deltaResolution = resolution};
      auto policy = sharing::makeSharePolicy(j.policy, o);
      results[i] = {j, runStatic(std::move(c), requests, *policy, mixes[j.workload]), mixes[j.workload].size()};
      size_t n = ++done;
      if (!quiet) {
        std::lock_guard lock(printMutex);
        double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        fmt::print(stderr, "[{}/{}] {:<11} {:<18} seed {}  alloc@130 {:6.2f}%  ({:.1f}s, {:.0f}s elapsed)\n", n, queue.size(),
                   j.workload, j.policy, j.seed, results[i].result.allocationPercent.back(), results[i].result.seconds, elapsed);
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, jobs); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  // Per-seed rows and curves.
  std::ofstream runs(out / "static_runs.csv");
  runs << "workload,policy,seed,arrived_pods,placed_pods,failed_pods,alloc_at_100,alloc_at_130,first_failure_arrived_pct,"
          "frag_at_100_pct,frag_at_100_gpu_shapes_pct,frag_at_end_pct,frag_at_end_gpu_shapes_pct,typical_shapes,decide_seconds\n";
  std::ofstream curves(out / "static_curves.csv");
  curves << "workload,policy,seed";
  for (int p = 0; p < kArrivalPoints; ++p) curves << ',' << p;
  curves << '\n';
  std::map<std::string, std::map<std::string, std::vector<double>>> at130, at100;
  for (const auto& [j, r, shapes] : results) {
    runs << fmt::format("{},{},{},{},{},{},{:.4f},{:.4f},{:.2f},{:.4f},{:.4f},{:.4f},{:.4f},{},{:.3f}\n", j.workload, j.policy, j.seed,
                        r.arrived, r.placed, r.failed, r.allocationPercent[100], r.allocationPercent[130],
                        r.firstFailureArrivedPercent, r.fragAt100.percentOfCapacity, r.fragAt100.percentOfCapacityGpuShapesOnly,
                        r.fragAtEnd.percentOfCapacity, r.fragAtEnd.percentOfCapacityGpuShapesOnly, shapes, r.seconds);
    curves << j.workload << ',' << j.policy << ',' << j.seed;
    for (double a : r.allocationPercent) curves << fmt::format(",{:.3f}", a);
    curves << '\n';
    at130[j.workload][j.policy].push_back(r.allocationPercent[130]);
    at100[j.workload][j.policy].push_back(r.allocationPercent[100]);
  }

  // Summary: ours next to the published numbers.
  auto published = loadPublished(traces / "fgd-expected-results" / "analysis_allo_discrete.csv");
  std::ofstream summary(out / "static_summary.md");
  auto emit = [&](const std::string& s) {
    summary << s;
    fmt::print("{}", s);
  };
  emit(fmt::format("GPU allocation % at 130 % arrived demand, mean ± sd over {} seeds ({}); [published FGD-simulator mean, "
                   "difference]\n\n",
                   seeds.size(), fmt::join(seeds, ",")));
  emit(fmt::format("| workload | {} |\n|---|{}\n", fmt::join(policies, " | "), [&] {
         std::string s;
         for (size_t i = 0; i < policies.size(); ++i) s += "---|";
         return s;
       }()));
  for (const auto& w : workloads) {
    std::string row = "| " + w + " |";
    for (const auto& p : policies) {
      Stats s = stats(at130[w][p]);
      row += fmt::format(" {:.2f} ± {:.2f}", s.mean, s.sd);
      auto name = kFgdNames.find(p);
      if (name != kFgdNames.end() && published.contains(w) && published[w].contains(name->second)) {
        Stats ref = stats(published[w][name->second]);
        row += fmt::format(" [{:.2f}, {:+.2f}]", ref.mean, s.mean - ref.mean);
      }
      row += " |";
    }
    emit(row + "\n");
  }
  emit(fmt::format("\nGPU allocation % at 100 % arrived demand, mean over seeds\n\n| workload | {} |\n|---|{}\n",
                   fmt::join(policies, " | "), [&] {
                     std::string s;
                     for (size_t i = 0; i < policies.size(); ++i) s += "---|";
                     return s;
                   }()));
  for (const auto& w : workloads) {
    std::string row = "| " + w + " |";
    for (const auto& p : policies) row += fmt::format(" {:.2f} |", stats(at100[w][p]).mean);
    emit(row + "\n");
  }
  fmt::print(stderr, "wrote {}/static_runs.csv, static_curves.csv, static_summary.md\n", out.string());
  return 0;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// A pool of about `gpus` GPUs made of openb nodes (the list repeated as often as needed).
sharing::ShareCluster scaledPool(const sharing::ShareCluster& openb, int gpus) {
  std::vector<sharing::ShareNode> nodes;
  int have = 0;
  for (size_t copy = 0; have < gpus; ++copy)
    for (const auto& n : openb.nodes()) {
      if (have >= gpus) break;
      if (n.gpuCount() == 0) continue;
      nodes.push_back(n);
      nodes.back().name = fmt::format("{}-{}", n.name, copy);
      have += n.gpuCount();
    }
  return sharing::ShareCluster(std::move(nodes), openb.models());
}

int runLatencyCommand(const fs::path& traces, const std::vector<int>& sizes, const std::vector<double>& fills,
                      const std::vector<std::string>& policies, size_t decisions, size_t naiveDecisions, size_t warmupDecisions,
                      const fs::path& out) {
  auto openb = loadOpenbNodes((traces / "openb_node_list_gpu_node.csv").string());
  if (!openb) {
    fmt::print(stderr, "error: {}\n", openb.error());
    return 2;
  }
  sharing::ModelTable models = openb->models();
  auto pods = loadOpenbPods((traces / "openb_pod_list_default.csv").string(), models);
  if (!pods) {
    fmt::print(stderr, "error: {}\n", pods.error());
    return 2;
  }
  std::vector<sharing::ShareRequest> all;
  for (const auto& p : *pods) all.push_back(p.request);
  const sharing::ShapeMix mix = sharing::typicalShapes(all);
  fs::create_directories(out);
  std::ofstream csv(out / "latency.csv");
  csv << "gpus,nodes,fill_target,fill_actual,policy,decisions,p50_us,p99_us,max_us,placements_per_s,policy_memory_mib\n";
  fmt::print("| GPUs | fill | policy | decisions | p50 µs | p99 µs | max µs | placements/s | policy memory MiB |\n"
             "|---|---|---|---|---|---|---|---|---|\n");
  for (int gpus : sizes)
    for (double fill : fills) {
      // Fill the pool with trace requests (placed by our policy; the same state for every policy measured).
      sharing::ShareCluster pool = scaledPool(*openb, gpus);
      std::mt19937_64 rng(7);
      std::uniform_int_distribution<size_t> pick(0, all.size() - 1);
      {
        auto filler = sharing::makeSharePolicy("switchyard", {});
        size_t misses = 0;
        while (static_cast<double>(pool.allocatedGpuMilli()) < fill * static_cast<double>(pool.totalGpuMilli()) && misses < 10000) {
          const auto& r = all[pick(rng)];
          filler->observe(r);
          if (auto p = filler->choose(pool, r)) {
            pool.apply(*p, r);
            misses = 0;
          } else {
            ++misses;
          }
        }
      }
      const double actual = static_cast<double>(pool.allocatedGpuMilli()) / static_cast<double>(pool.totalGpuMilli());
      for (const auto& name : policies) {
        const bool naive = name == "fgd";
        const size_t n = naive ? std::min(decisions, naiveDecisions) : decisions;
        auto policy = sharing::makeSharePolicy(name, {.seed = 7, .oracleMix = mix});
        std::vector<double> micros;
        std::mt19937_64 sample(11);
        // Warm-up (untimed) then timed decisions; each placement is applied and then released so the pool
        // stays at its fill level while the policy sees real changes (and its caches real invalidations).
        const size_t warmup = naive ? 0 : warmupDecisions;
        for (size_t k = 0; k < warmup + n; ++k) {
          const auto& r = all[pick(sample)];
          auto start = std::chrono::steady_clock::now();
          policy->observe(r);
          auto p = policy->choose(pool, r);
          auto stop = std::chrono::steady_clock::now();
          if (k >= warmup) micros.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
          if (p) {
            pool.apply(*p, r);
            pool.release(*p, r);
          }
        }
        const double mean = std::accumulate(micros.begin(), micros.end(), 0.0) / static_cast<double>(micros.size());
        const double mem = static_cast<double>(policy->memoryBytes()) / (1024.0 * 1024.0);
        std::string row = fmt::format("| {} | {:.0f}% | {}{} | {} | {:.1f} | {:.1f} | {:.1f} | {:.0f} | {:.1f} |", pool.totalGpus(),
                                      100 * actual, name, naive ? " (naive)" : "", n, percentile(micros, 0.5),
                                      percentile(micros, 0.99), *std::max_element(micros.begin(), micros.end()), 1e6 / mean, mem);
        fmt::print("{}\n", row);
        std::fflush(stdout);
        csv << fmt::format("{},{},{:.2f},{:.4f},{},{},{:.2f},{:.2f},{:.2f},{:.0f},{:.2f}\n", pool.totalGpus(), pool.size(), fill, actual,
                           name, n, percentile(micros, 0.5), percentile(micros, 0.99),
                           *std::max_element(micros.begin(), micros.end()), 1e6 / mean, mem);
      }
    }
  fmt::print(stderr, "wrote {}/latency.csv\n", out.string());
  return 0;
}


std::optional<ComposableShape> parseShape(const std::string& s) {
  if (s == "mirror") return ComposableShape{.slots = 8, .enclosurePorts = 1, .hostPorts = 1, .deviceLimit = 8, .mirrorServers = true};
  ComposableShape shape;
  if (std::sscanf(s.c_str(), "%d:%d:%d:%d", &shape.slots, &shape.enclosurePorts, &shape.hostPorts, &shape.deviceLimit) != 4 ||
      shape.slots < 1 || shape.enclosurePorts < 1 || shape.hostPorts < 1 || shape.deviceLimit < 1 ||
      shape.deviceLimit > sharing::kMaxGpusPerNode)
    return std::nullopt;
  return shape;
}

int runComposableCommand(const fs::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& shapeNames,
                         const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds, double ratio, const fs::path& out,
                         unsigned jobs, bool quiet) {
  std::map<std::string, ComposableShape> shapes;
  for (const auto& name : shapeNames) {
    auto shape = parseShape(name);
    if (!shape) {
      fmt::print(stderr, "error: shape '{}' is neither 'mirror' nor K:U:P:L with L <= {}\n", name, sharing::kMaxGpusPerNode);
      return 2;
    }
    shapes[name] = *shape;
  }
  auto inputs = loadInputs(traces, workloads, policies);
  if (!inputs) return 2;
  const sharing::ShareCluster* cluster = &inputs->cluster;
  auto& pods = inputs->pods;
  auto& mixes = inputs->mixes;

  // The LP bound at 100 % arrived demand, once per workload and seed (the pool's resources do not depend
  // on the shape).
  std::map<std::pair<std::string, uint64_t>, double> bound;
  for (const auto& w : workloads)
    for (uint64_t seed : seeds) {
      const auto requests = inflateWorkload(pods[w], cluster->totalGpuMilli(), seed, ratio);
      std::vector<sharing::ShareRequest> arrived;
      int64_t demand = 0;
      for (const auto& r : requests) {
        if (demand + r.totalGpuMilli() > cluster->totalGpuMilli()) break;
        demand += r.totalGpuMilli();
        arrived.push_back(r);
      }
      auto ub = allocationUpperBound(*cluster, arrived);
      if (!ub) {
        fmt::print(stderr, "error: upper bound for {} seed {}: {}\n", w, seed, ub.error());
        return 1;
      }
      bound[{w, seed}] = 100.0 * *ub / static_cast<double>(cluster->totalGpuMilli());
    }

  struct Run {
    std::string workload, shape, policy;
    uint64_t seed;
    ComposableResult result;
    std::optional<StaticResult> staticResult;  // mirror runs: the same run in static mode
  };
  std::vector<Run> runs;
  for (const auto& w : workloads)
    for (const auto& sh : shapeNames)
      for (const auto& p : policies)
        for (uint64_t seed : seeds) runs.push_back({w, sh, p, seed, {}, {}});
  fs::create_directories(out);
  std::atomic<size_t> next{0}, done{0};
  std::mutex printMutex;
  auto worker = [&] {
    for (size_t i; (i = next++) < runs.size();) {
      Run& run = runs[i];
      sharing::ShareCluster c = shuffleNodes(*cluster, run.seed);
      auto requests = inflateWorkload(pods[run.workload], c.totalGpuMilli(), run.seed, ratio);
      sharing::SharePolicyOptions o{.seed = run.seed, .oracleMix = mixes[run.workload], .learnMix = true, .cacheFgd = true};
      auto policy = sharing::makeSharePolicy(run.policy, o);
      run.result = runComposable(ComposablePool(c, shapes[run.shape]), requests, *policy);
      if (shapes[run.shape].mirrorServers) {
        auto again = sharing::makeSharePolicy(run.policy, o);
        run.staticResult = runStatic(c, requests, *again, mixes[run.workload]);
      }
      const size_t n = ++done;
      if (!quiet) {
        std::lock_guard lock(printMutex);
        fmt::print(stderr, "[{}/{}] {:<14} {:<12} {:<18} seed {}  alloc@100 {:6.2f}%  bound {:6.2f}%\n", n, runs.size(), run.workload,
                   run.shape, run.policy, run.seed, run.result.allocationPercent[100], bound[{run.workload, run.seed}]);
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, jobs); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  std::ofstream csv(out / "composable_runs.csv");
  csv << "workload,shape,policy,seed,arrived_pods,placed_pods,failed_pods,alloc_at_100,alloc_at_130,bound_at_100,"
         "first_failure_arrived_pct,attaches,gpu_requests_placed,attached_left_pct_at_end,hosts_with_8_cores_but_no_free_gpu_at_end,"
         "static_alloc_at_100,static_alloc_at_130\n";
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> at100, at130, churn, attachedLeft, cpuRich;
  std::map<std::string, std::vector<double>> bounds;
  double mirrorDiff = 0;
  size_t mirrorRuns = 0;
  for (const auto& r : runs) {
    const auto& c = r.result;
    const double ub = bound[{r.workload, r.seed}];
    csv << fmt::format("{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.2f},{},{},{:.4f},{},{},{}\n", r.workload, r.shape, r.policy, r.seed,
                       c.arrived, c.placed, c.failed, c.allocationPercent[100], c.allocationPercent[130], ub,
                       c.firstFailureArrivedPercent, c.attaches, c.gpuRequestsPlaced, c.attachedLeftPercent, c.hostsWithCpuButNoFreeGpu,
                       r.staticResult ? fmt::format("{:.4f}", r.staticResult->allocationPercent[100]) : "",
                       r.staticResult ? fmt::format("{:.4f}", r.staticResult->allocationPercent[130]) : "");
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
  for (const auto& w : workloads)
    for (uint64_t seed : seeds) bounds[w].push_back(bound[{w, seed}]);

  std::ofstream summary(out / "composable_summary.md");
  auto emit = [&](const std::string& s) {
    summary << s;
    fmt::print("{}", s);
  };
  const std::string dashes = [&] {
    std::string d;
    for (size_t i = 0; i < policies.size() + 3; ++i) d += "---|";
    return d;
  }();
  emit(fmt::format("GPU allocation % at 100 % arrived demand, mean over {} seeds ({}), against the LP upper bound\n\n"
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
      const double ub = stats(bounds[w]).mean;
      emit(row + fmt::format(" {:.2f} | {:.2f} |\n", ub, ub - best));
    }
  emit(fmt::format("\nGPU allocation % at 130 % arrived demand (mean ± sd)\n\n| workload | pool | {} |\n|{}\n", fmt::join(policies, " | "),
                   dashes.substr(8)));
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
                   fmt::join(policies, " | "), dashes.substr(8)));
  for (const auto& w : workloads)
    for (const auto& sh : shapeNames) {
      if (shapes[sh].mirrorServers) continue;
      std::string row = fmt::format("| {} | {} |", w, shapes[sh].describe());
      for (const auto& p : policies) row += fmt::format(" {:.3f} |", stats(churn[{w, sh, p}]).mean);
      emit(row + "\n");
    }
  emit(fmt::format("\nWhere capacity is stranded at the end (130 %), mean over seeds: milli-GPU left on GPUs attached to a host "
                   "(% of capacity) / hosts with >= 8 cores left that reach no free GPU\n\n| workload | pool | {} |\n|{}\n",
                   fmt::join(policies, " | "), dashes.substr(8)));
  for (const auto& w : workloads)
    for (const auto& sh : shapeNames) {
      std::string row = fmt::format("| {} | {} |", w, shapes[sh].describe());
      for (const auto& p : policies) row += fmt::format(" {:.2f} / {:.0f} |", stats(attachedLeft[{w, sh, p}]).mean, stats(cpuRich[{w, sh, p}]).mean);
      emit(row + "\n");
    }
  if (mirrorRuns > 0)
    emit(fmt::format("\nMirror pool vs static mode: {} runs, largest difference in allocation at any arrived demand {:.4f} points\n",
                     mirrorRuns, mirrorDiff));
  fmt::print(stderr, "wrote {}/composable_runs.csv, composable_summary.md\n", out.string());
  return 0;
}

int runDynamicCommand(const fs::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& poolNames,
                      const std::vector<double>& loads, const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds,
                      const DynamicOptions& base, const fs::path& out, unsigned jobs, bool quiet) {
  std::map<std::string, std::optional<ComposableShape>> poolShapes;
  for (const auto& name : poolNames) {
    if (name == "static") {
      poolShapes[name] = std::nullopt;
      continue;
    }
    auto shape = parseShape(name);
    if (!shape) {
      fmt::print(stderr, "error: pool '{}' is neither 'static', 'mirror' nor K:U:P:L\n", name);
      return 2;
    }
    poolShapes[name] = *shape;
  }
  auto inputs = loadInputs(traces, workloads, policies);
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
  for (const auto& w : workloads)
    for (const auto& pl : poolNames)
      for (double load : loads)
        for (const auto& p : policies)
          for (uint64_t seed : seeds) runs.push_back({w, pl, p, load, seed, {}});
  fs::create_directories(out);
  std::atomic<size_t> next{0}, done{0};
  std::mutex printMutex;
  auto worker = [&] {
    for (size_t i; (i = next++) < runs.size();) {
      Run& run = runs[i];
      sharing::ShareCluster c = shuffleNodes(*cluster, run.seed);
      auto policy = sharing::makeSharePolicy(run.policy, {.seed = run.seed, .oracleMix = mixes[run.workload], .cacheFgd = true});
      DynamicOptions o = base;
      o.load = run.load;
      o.seed = run.seed;
      const auto& shape = poolShapes[run.pool];
      run.result = runDynamic(c, shape ? &*shape : nullptr, pods[run.workload], *policy, o);
      const size_t n = ++done;
      if (!quiet) {
        std::lock_guard lock(printMutex);
        fmt::print(stderr, "[{}/{}] {:<10} {:<12} load {:.2f} {:<12} seed {}  accepted {:5.1f}%  alloc {:5.1f}%\n", n, runs.size(),
                   run.workload, run.pool, run.load, run.policy, run.seed,
                   100.0 * static_cast<double>(run.result.accepted) / static_cast<double>(std::max<size_t>(1, run.result.arrived)),
                   run.result.meanAllocationPercent);
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, jobs); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  std::ofstream csv(out / "dynamic_runs.csv");
  csv << "workload,pool,load,policy,seed,arrived,accepted_at_once,accepted,gave_up,mean_wait_s,p99_wait_s,attaches,detaches,"
         "mean_allocation_pct,decide_seconds\n";
  using Key = std::tuple<std::string, std::string, double, std::string>;
  std::map<Key, std::vector<double>> acceptance, atOnce, meanWait, p99Wait, churn, alloc;
  for (const auto& r : runs) {
    const auto& d = r.result;
    csv << fmt::format("{},{},{:.2f},{},{},{},{},{},{},{:.1f},{:.1f},{},{},{:.4f},{:.3f}\n", r.workload, r.pool, r.load, r.policy, r.seed,
                       d.arrived, d.acceptedAtOnce, d.accepted, d.gaveUp, d.meanWaitSeconds, d.p99WaitSeconds, d.attaches, d.detaches,
                       d.meanAllocationPercent, d.seconds);
    const Key k{r.workload, r.pool, r.load, r.policy};
    const double arrived = static_cast<double>(std::max<size_t>(1, d.arrived));
    acceptance[k].push_back(100.0 * static_cast<double>(d.accepted) / arrived);
    atOnce[k].push_back(100.0 * static_cast<double>(d.acceptedAtOnce) / arrived);
    meanWait[k].push_back(d.meanWaitSeconds);
    p99Wait[k].push_back(d.p99WaitSeconds);
    churn[k].push_back(d.accepted ? static_cast<double>(d.attaches + d.detaches) / static_cast<double>(d.accepted) : 0);
    alloc[k].push_back(d.meanAllocationPercent);
  }
  std::ofstream summary(out / "dynamic_summary.md");
  auto emit = [&](const std::string& s) {
    summary << s;
    fmt::print("{}", s);
  };
  emit(fmt::format("Dynamic mode: Poisson arrivals, trace durations cut at {:.0f} s, {} measured arrivals after {} warm-up, "
                   "patience {:.0f} s, backfill depth {}; mean over {} seeds ({})\n\n"
                   "| workload | pool | load | policy | accepted % | at once % | mean wait s | p99 wait s | attach+detach per accepted | "
                   "mean GPU allocation % |\n|---|---|---|---|---|---|---|---|---|---|\n",
                   base.maxDurationSeconds, base.arrivals, base.warmup, base.patienceSeconds, base.backfillDepth, seeds.size(),
                   fmt::join(seeds, ",")));
  for (const auto& w : workloads)
    for (const auto& pl : poolNames)
      for (double load : loads)
        for (const auto& p : policies) {
          const Key k{w, pl, load, p};
          emit(fmt::format("| {} | {} | {:.2f} | {} | {:.2f} | {:.2f} | {:.0f} | {:.0f} | {:.3f} | {:.2f} |\n", w,
                           poolShapes[pl] ? poolShapes[pl]->describe() : "static", load, p, stats(acceptance[k]).mean,
                           stats(atOnce[k]).mean, stats(meanWait[k]).mean, stats(p99Wait[k]).mean, stats(churn[k]).mean,
                           stats(alloc[k]).mean));
        }
  fmt::print(stderr, "wrote {}/dynamic_runs.csv, dynamic_summary.md\n", out.string());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Switchyard packing benchmarks on the Alibaba openb GPU trace (see docs/benchmarks/packing.md)."};
  app.require_subcommand(1);
  std::string traces = "../shared/traces/alibaba-gpu-2023";
  app.add_option("--traces", traces, "folder with openb_*.csv and fgd-expected-results/")->capture_default_str();

  auto* st = app.add_subcommand("static", "FGD's workload-inflation protocol on the fixed openb cluster");
  std::string workloads = "default", policies = fmt::format("{}", fmt::join(kDefaultPolicies, ",")), seeds = "42-51";
  std::string out = "packbench-out";
  double ratio = 1.3;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  bool oracle = false, quiet = false;
  double resolution = 100;
  st->add_option("--workloads", workloads, "comma-separated pod lists, or 'all'")->capture_default_str();
  st->add_option("--policies", policies, "comma-separated policies")->capture_default_str();
  st->add_option("--seeds", seeds, "seeds: '42-51' or '42,43'")->capture_default_str();
  st->add_option("--ratio", ratio, "inflate the workload to this multiple of GPU capacity")->capture_default_str();
  st->add_option("--out", out, "folder for CSVs and the summary")->capture_default_str();
  st->add_option("--jobs", jobs, "runs in parallel")->capture_default_str();
  st->add_flag("--oracle-mix", oracle, "give switchyard the whole workload's shape mix (as FGD has) instead of learning it");
  st->add_option("--delta-resolution", resolution, "switchyard: fragmentation changes closer than this (milli-GPU) tie")
      ->capture_default_str();
  st->add_flag("--quiet", quiet, "no per-run progress lines");

  auto* lat = app.add_subcommand("latency", "decision latency, placements/s and memory at 1k, 10k, 100k GPUs");
  std::vector<int> sizes{1000, 10000, 100000};
  std::vector<double> fills{0.5, 0.9};
  std::string latPolicies = "switchyard,fgd,best-fit";
  size_t decisions = 2000, naiveDecisions = 200, warmup = 5000;
  std::string latOut = "packbench-out";
  lat->add_option("--gpus", sizes, "pool sizes in GPUs (openb nodes repeated)")->delimiter(',')->capture_default_str();
  lat->add_option("--fill", fills, "fractions of GPU capacity allocated before measuring")->delimiter(',')->capture_default_str();
  lat->add_option("--policies", latPolicies, "policies to time; 'fgd' is the naive re-implementation")->capture_default_str();
  lat->add_option("--decisions", decisions, "timed decisions per policy and pool")->capture_default_str();
  lat->add_option("--naive-decisions", naiveDecisions, "at most this many for naive fgd (it is slow)")->capture_default_str();
  lat->add_option("--warmup", warmup, "untimed decisions first (our learner's window is 5000 requests)")->capture_default_str();
  lat->add_option("--out", latOut, "folder for latency.csv")->capture_default_str();

  auto* comp = app.add_subcommand("composable", "the static protocol on composable pools of switch enclosures, against an LP bound");
  std::string compWorkloads = "default", compShapes = "mirror,16:8:2:16", compPolicies = "first-fit,best-fit,fgd,switchyard";
  std::string compSeeds = "42-51", compOut = "packbench-out";
  comp->add_option("--workloads", compWorkloads, "comma-separated pod lists, or 'all'; NAME+big adds 16/32-GPU servers")
      ->capture_default_str();
  comp->add_option("--shapes", compShapes,
                   "pools: 'mirror' (one enclosure per server, K=8 U=1: must equal static mode) or K:U:P:L "
                   "(slots per enclosure, host ports per enclosure, ports per host, device limit per host)")
      ->capture_default_str();
  comp->add_option("--policies", compPolicies, "comma-separated policies")->capture_default_str();
  comp->add_option("--seeds", compSeeds, "seeds: '42-51' or '42,43'")->capture_default_str();
  comp->add_option("--ratio", ratio, "inflate the workload to this multiple of GPU capacity")->capture_default_str();
  comp->add_option("--out", compOut, "folder for CSVs and the summary")->capture_default_str();
  comp->add_option("--jobs", jobs, "runs in parallel")->capture_default_str();
  comp->add_flag("--quiet", quiet, "no per-run progress lines");

  auto* dyn = app.add_subcommand("dynamic", "Poisson arrivals and trace durations at offered loads; acceptance, waiting, churn");
  std::string dynWorkloads = "default", dynPools = "static,16:8:2:16", dynPolicies = "first-fit,best-fit,fgd,switchyard";
  std::string dynSeeds = "42-44", dynOut = "packbench-out";
  std::vector<double> loads{0.7, 0.8, 0.9, 1.0, 1.1};
  DynamicOptions dynOptions;
  dyn->add_option("--workloads", dynWorkloads, "comma-separated pod lists (they need creation/deletion times)")->capture_default_str();
  dyn->add_option("--pools", dynPools, "'static', 'mirror' or K:U:P:L composable pools")->capture_default_str();
  dyn->add_option("--loads", loads, "offered loads (GPU-time demand / capacity)")->delimiter(',')->capture_default_str();
  dyn->add_option("--policies", dynPolicies, "comma-separated policies")->capture_default_str();
  dyn->add_option("--seeds", dynSeeds, "seeds: '42-44' or '42,43'")->capture_default_str();
  dyn->add_option("--arrivals", dynOptions.arrivals, "measured arrivals per run")->capture_default_str();
  dyn->add_option("--warmup", dynOptions.warmup, "arrivals before measuring")->capture_default_str();
  dyn->add_option("--max-duration", dynOptions.maxDurationSeconds, "durations are cut at this many seconds")->capture_default_str();
  dyn->add_option("--patience", dynOptions.patienceSeconds, "seconds a request waits before giving up")->capture_default_str();
  dyn->add_option("--backfill-depth", dynOptions.backfillDepth, "waiting requests tried after each departure")->capture_default_str();
  dyn->add_option("--out", dynOut, "folder for CSVs and the summary")->capture_default_str();
  dyn->add_option("--jobs", jobs, "runs in parallel")->capture_default_str();
  dyn->add_flag("--quiet", quiet, "no per-run progress lines");

  CLI11_PARSE(app, argc, argv);
  if (dyn->parsed())
    return runDynamicCommand(traces, splitList(dynWorkloads), splitList(dynPools), loads, splitList(dynPolicies), parseSeeds(dynSeeds),
                             dynOptions, dynOut, jobs, quiet);
  if (comp->parsed()) {
    auto w = compWorkloads == "all" ? kAllWorkloads : splitList(compWorkloads);
    return runComposableCommand(traces, w, splitList(compShapes), splitList(compPolicies), parseSeeds(compSeeds), ratio, compOut, jobs, quiet);
  }
  if (lat->parsed()) return runLatencyCommand(traces, sizes, fills, splitList(latPolicies), decisions, naiveDecisions, warmup, latOut);
  if (st->parsed()) {
    auto w = workloads == "all" ? kAllWorkloads : splitList(workloads);
    return runStaticCommand(traces, w, splitList(policies), parseSeeds(seeds), ratio, out, jobs, oracle, resolution, quiet);
  }
  return 0;
}
