// switchyard_packbench latency: decision latency, placements/s and memory.
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

}  // namespace

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
            pool.release(pool.apply(*p, r), r);
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

}  // namespace switchyard::bench
