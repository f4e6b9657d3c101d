// switchyard_packbench static: FGD's workload-inflation protocol on the fixed openb cluster.
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

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/static_sim.h"

namespace switchyard::bench {

namespace {

// Our names -> the FGD authors' names in their cached results.
const std::map<std::string, std::string> kFgdNames{{"random", "01-Random"},        {"dot-product", "02-DotProd"},
                                                   {"gpu-clustering", "03-GpuClustering"}, {"gpu-packing", "04-GpuPacking"},
                                                   {"best-fit", "05-BestFit"},     {"fgd", "06-FGD"}};

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

}  // namespace

int runStaticCommand(const fs::path& traces, const std::vector<std::string>& workloads,
                     const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds, double ratio,
                     const fs::path& out, unsigned jobs, const sharing::SharePolicyOptions& ours, bool quiet) {
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
  const auto started = std::chrono::steady_clock::now();
  runInParallel(
      queue.size(), jobs,
      [&](size_t i) {
        const Job& j = queue[i];
        sharing::ShareCluster c = shuffleNodes(*cluster, j.seed);
        auto requests = inflateWorkload(pods[j.workload], c.totalGpuMilli(), j.seed, ratio);
        auto policy = sharing::makeSharePolicy(j.policy, runOptions(ours, j.seed, mixes[j.workload]));
        results[i] = {j, runStatic(std::move(c), requests, *policy, mixes[j.workload]), mixes[j.workload].size()};
      },
      [&](size_t i, size_t finished) {
        if (quiet) return;
        const Job& j = queue[i];
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        fmt::print(stderr, "[{}/{}] {:<11} {:<18} seed {}  alloc@130 {:6.2f}%  ({:.1f}s, {:.0f}s elapsed)\n", finished, queue.size(),
                   j.workload, j.policy, j.seed, results[i].result.allocationPercent.back(), results[i].result.seconds, elapsed);
      });

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
  SummaryTee emit(out / "static_summary.md");
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

}  // namespace switchyard::bench
