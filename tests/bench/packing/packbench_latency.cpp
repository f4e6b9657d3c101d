// switchyard_packbench latency: decision latency, placements/s and memory.
#include "tests/bench/packing/packbench_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/composable_sim.h"
#include "tests/bench/packing/packbench_common.h"
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

// The pool decisions are timed on: the fixed servers themselves, or a composable pool built from them (its
// views are what the policies see; a placement attaches GPUs and a release detaches them).
class LatencyPool {
 public:
  LatencyPool(sharing::ShareCluster servers, const std::optional<ComposableShape>& shape) : servers_(std::move(servers)) {
    if (shape) composable_.emplace(servers_, *shape);
  }
  [[nodiscard]] const sharing::ShareCluster& cluster() const { return composable_ ? composable_->views() : servers_; }
  [[nodiscard]] const ComposablePool* composable() const { return composable_ ? &*composable_ : nullptr; }
  [[nodiscard]] int totalGpus() const { return servers_.totalGpus(); }
  [[nodiscard]] int64_t totalGpuMilli() const { return composable_ ? composable_->totalGpuMilli() : servers_.totalGpuMilli(); }
  [[nodiscard]] int64_t allocatedGpuMilli() const {
    return composable_ ? composable_->allocatedGpuMilli() : servers_.allocatedGpuMilli();
  }
  void place(const sharing::SharePlacement& p, const sharing::ShareRequest& r) {
    if (composable_) (void)composable_->apply(p, r);
    else servers_.apply(p, r);
  }
  void placeAndRelease(const sharing::SharePlacement& p, const sharing::ShareRequest& r) {
    if (composable_) composable_->release(p.node, composable_->apply(p, r), r);
    else servers_.release(servers_.apply(p, r), r);
  }

 private:
  sharing::ShareCluster servers_;  // untouched once a composable pool is built from it
  std::optional<ComposablePool> composable_;
};

}  // namespace

int runLatencyCommand(const fs::path& traces, const std::vector<int>& sizes, const std::vector<double>& fills,
                      const std::vector<std::string>& policies, size_t decisions, size_t naiveDecisions, size_t warmupDecisions,
                      const std::string& poolName, const fs::path& out) {
  const auto pools = parsePools({poolName}, true);
  if (!pools) return 2;
  const std::optional<ComposableShape> shape = pools->begin()->second;
  for (const auto& name : policies)
    if (!shape && needsComposablePool(name)) {
      fmt::print(stderr, "error: policy '{}' runs on composable pools only (--pool K:U:P:L)\n", name);
      return 2;
    }
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
  // The fixed servers write latency.csv; a composable pool its own file, with the pool in the name.
  std::string fileTag = poolName;
  std::replace(fileTag.begin(), fileTag.end(), ':', '-');
  const fs::path csvPath = out / (shape ? fmt::format("latency_{}.csv", fileTag) : std::string("latency.csv"));
  std::ofstream csv(csvPath);
  csv << "gpus,nodes,fill_target,fill_actual,policy,decisions,p50_us,p99_us,max_us,placements_per_s,policy_memory_mib\n";
  if (shape) fmt::print("Composable pool {} (nodes: host-enclosure links)\n\n", shape->describe());
  fmt::print("| GPUs | fill | policy | decisions | p50 µs | p99 µs | max µs | placements/s | policy memory MiB |\n"
             "|---|---|---|---|---|---|---|---|---|\n");
  for (int gpus : sizes)
    for (double fill : fills) {
      LatencyPool pool(scaledPool(*openb, gpus), shape);
      // Fill the pool with trace requests (placed by our policy; the same state for every policy measured).
      std::mt19937_64 rng(7);
      std::uniform_int_distribution<size_t> pick(0, all.size() - 1);
      {
        auto filler = sharing::makeSharePolicy("switchyard", {});
        size_t misses = 0;
        while (static_cast<double>(pool.allocatedGpuMilli()) < fill * static_cast<double>(pool.totalGpuMilli()) && misses < 10000) {
          const auto& r = all[pick(rng)];
          filler->observe(r);
          if (auto p = filler->choose(pool.cluster(), r)) {
            pool.place(*p, r);
            misses = 0;
          } else {
            ++misses;
          }
        }
      }
      const double actual = static_cast<double>(pool.allocatedGpuMilli()) / static_cast<double>(pool.totalGpuMilli());
      // All policies are timed in one interleaved loop, on the same requests: this VM's speed drifts by up to 2x
      // over seconds, which would skew a comparison of policies timed one after another. Naive FGD decides every
      // `stride`-th request only (it is slow). Each placement is applied and then released, so the pool keeps
      // its fill while every policy sees real node changes (and its caches real invalidations).
      struct Timed {
        std::string name;
        bool naive;
        std::unique_ptr<sharing::SharePolicy> policy;
        std::vector<double> micros;
      };
      std::vector<Timed> timed;
      for (const auto& name : policies)
        timed.push_back({name, name == "fgd", makePolicyFor(name, {.seed = 7, .oracleMix = mix}, pool.composable()), {}});
      const size_t stride = std::max<size_t>(1, decisions / std::max<size_t>(1, naiveDecisions));
      auto decide = [&](Timed& t, const sharing::ShareRequest& r, bool record) {
        auto start = std::chrono::steady_clock::now();
        t.policy->observe(r);
        auto p = t.policy->choose(pool.cluster(), r);
        auto stop = std::chrono::steady_clock::now();
        if (record) t.micros.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
        if (p) pool.placeAndRelease(*p, r);
      };
      std::mt19937_64 sample(11);
      // Warm-up, untimed: our learner's window is 5,000 requests. Naive FGD has no state to warm.
      for (size_t k = 0; k < warmupDecisions; ++k) {
        const auto& r = all[pick(sample)];
        for (auto& t : timed)
          if (!t.naive) decide(t, r, false);
      }
      for (size_t k = 0; k < decisions; ++k) {
        const auto& r = all[pick(sample)];
        for (auto& t : timed)
          if (!t.naive || k % stride == 0) decide(t, r, true);
      }
      for (const auto& t : timed) {
        const auto& micros = t.micros;
        const double mean = std::accumulate(micros.begin(), micros.end(), 0.0) / static_cast<double>(micros.size());
        const double mem = static_cast<double>(t.policy->memoryBytes()) / (1024.0 * 1024.0);
        const double p99 = percentile(micros, 0.99), mx = *std::max_element(micros.begin(), micros.end());
        fmt::print("| {} | {:.0f}% | {}{} | {} | {:.1f} | {:.1f} | {:.1f} | {:.0f} | {:.1f} |\n", pool.totalGpus(), 100 * actual, t.name,
                   t.naive ? " (naive)" : "", micros.size(), percentile(micros, 0.5), p99, mx, 1e6 / mean, mem);
        std::fflush(stdout);
        csv << fmt::format("{},{},{:.2f},{:.4f},{},{},{:.2f},{:.2f},{:.2f},{:.0f},{:.2f}\n", pool.totalGpus(), pool.cluster().size(), fill, actual,
                           t.name, micros.size(), percentile(micros, 0.5), p99, mx, 1e6 / mean, mem);
      }
    }
  fmt::print(stderr, "wrote {}\n", csvPath.string());
  return 0;
}

}  // namespace switchyard::bench
