#include "tests/bench/topology_ablation.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <queue>
#include <random>
#include <string>
#include <utility>

#include "composer/packing/composable_model.h"
#include "composer/packing/demand_mix.h"
#include "composer/packing/packing.h"
#include "composer/packing/placement_index.h"
#include "composer/packing/pool.h"
#include "fabric/topology_generator.h"
#include "tests/bench/latency_summary.h"

namespace switchyard::bench {

namespace {

struct Variant {
  std::string name;
  std::string profile;
  std::vector<std::pair<std::string, double>> weights;  // overrides of the profile's score weights
};

struct Tally {
  long requests = 0, accepted = 0;
  long bigRequests = 0, bigAccepted = 0;  // 8 GPUs or more
  long gpusRequested = 0;
  long multiGpuPlaced = 0, multiGpuOneSwitch = 0;
  long gpusPlaced = 0, gpusOverIsl = 0;
  std::vector<double> decisionUs;  // measured requests
  std::uint64_t hostsEvaluated = 0;  // by the index (0 with the full scan)
};

struct LiveSystem {
  int host;
  std::vector<int> devices;
  double leaves;
  bool operator>(const LiveSystem& o) const { return leaves > o.leaves; }
};

Tally run(const ComposableScheduler& scheduler, const AblationOptions& o, uint64_t seed) {
  TopologyShape shape;
  shape.totalGpus = o.gpus;
  shape.gpusPerSwitch = o.gpusPerSwitch;
  shape.switchesPerFabric = o.switchesPerFabric;
  shape.hostsPerFabric = o.hostsPerFabric;
  const Topology topology = generateTopology(shape);
  Pool pool(topology);
  const double total = static_cast<double>(pool.devices().size());
  std::mt19937_64 rng(seed);
  std::discrete_distribution<int> size(o.sizeWeights.begin(), o.sizeWeights.end());
  double meanSize = 0, weightSum = 0;
  for (std::size_t i = 0; i < o.sizes.size(); ++i) {
    meanSize += o.sizes[i] * o.sizeWeights[i];
    weightSum += o.sizeWeights[i];
  }
  meanSize /= weightSum;
  std::exponential_distribution<double> gap(o.load * total / meanSize), lifetime(1.0);
  std::priority_queue<LiveSystem, std::vector<LiveSystem>, std::greater<>> live;
  double now = 0;
  Tally t;
  DemandTracker demand;  // what the engine does: learn the request mix (read by switchyard-v2 only)
  PlacementIndex index;   // and decide through the placement index
  for (int i = 0; i < o.warmup + o.requests; ++i) {
    now += gap(rng);
    while (!live.empty() && live.top().leaves <= now) {
      const LiveSystem& s = live.top();
      for (int di : s.devices) pool.setFree(di, true);
      pool.addAttached(s.host, -static_cast<int>(s.devices.size()));
      pool.setInSystem(s.host, false);
      live.pop();
    }
    const bool measured = i >= o.warmup;
    PlacementRequest r;
    r.gpuCount = o.sizes[static_cast<std::size_t>(size(rng))];
    r.peerToPeer = PeerToPeer::kPreferred;
    demand.observe(r, pool);
    const std::uint64_t evaluatedBefore = index.stats().evaluated;
    const auto t0 = std::chrono::steady_clock::now();
    const PlacementDecision d = place(scheduler, pool, r, o.index ? &index : nullptr);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    const bool big = r.gpuCount >= 8;
    if (measured) {
      t.decisionUs.push_back(us);
      t.hostsEvaluated += index.stats().evaluated - evaluatedBefore;
      ++t.requests;
      t.bigRequests += big ? 1 : 0;
      t.gpusRequested += r.gpuCount;
    }
    if (!d.placement) continue;
    LiveSystem s{pool.hostIndex(d.placement->hostId), {}, now + lifetime(rng)};
    std::string firstSwitch;
    bool oneSwitch = true;
    for (const auto& dev : d.placement->devices) {
      const int di = pool.deviceIndex(dev.deviceId);
      pool.setFree(di, false);
      s.devices.push_back(di);
      if (firstSwitch.empty()) firstSwitch = dev.switchId;
      oneSwitch = oneSwitch && dev.switchId == firstSwitch;
    }
    // A device is reached over an inter-switch link when no port of the host goes into its switch.
    const auto& host = pool.hosts()[static_cast<size_t>(s.host)];
    int overIsl = 0;
    for (int di : s.devices) overIsl += portInto(host, pool.devices()[static_cast<size_t>(di)].switchIndex) ? 0 : 1;
    pool.addAttached(s.host, static_cast<int>(s.devices.size()));
    pool.setInSystem(s.host, true);
    if (measured) {
      ++t.accepted;
      t.bigAccepted += big ? 1 : 0;
      t.gpusPlaced += static_cast<long>(s.devices.size());
      t.gpusOverIsl += overIsl;
      if (s.devices.size() > 1) {
        ++t.multiGpuPlaced;
        t.multiGpuOneSwitch += oneSwitch ? 1 : 0;
      }
    }
    live.push(std::move(s));
  }
  return t;
}

}  // namespace

int benchTopologyAblation(const AblationOptions& o) {
  if (o.sizes.empty() || o.sizes.size() != o.sizeWeights.size()) {
    fmt::print(stderr, "error: give one weight per request size ({} sizes, {} weights)\n", o.sizes.size(), o.sizeWeights.size());
    return 2;
  }
  for (std::size_t i = 0; i < o.sizes.size(); ++i)
    if (o.sizes[i] < 1 || o.sizeWeights[i] < 0) {
      fmt::print(stderr, "error: request sizes must be >= 1 and weights >= 0\n");
      return 2;
    }
  const std::vector<Variant> variants{
      {"switchyard-v2", "switchyard-v2", {}},
      {"switchyard-v1", "switchyard-v1", {}},
      {"no-topology", "switchyard-v1", {{"fewest-switches", 0}, {"avoid-inter-switch-links", 0}}},
      {"no-fragmentation", "switchyard-v1", {{"best-fit", 0}}},
      {"neither", "switchyard-v1", {{"fewest-switches", 0}, {"avoid-inter-switch-links", 0}, {"best-fit", 0}}},
      {"hived-buddy (baseline)", "hived-buddy", {}},
  };
  fmt::print("switchyard-v2 (learned demand), switchyard-v1 and its ablation, the HiveD buddy baseline: {} GPUs, {} per switch, {} switches and {} hosts per fabric; requests of {} GPUs "
             "(weights {}), P2P preferred, Poisson arrivals at offered load {:.2f}, exponential lifetimes, no queue; {} warm-up + {} "
             "measured requests; sums over seeds {}\n\n",
             o.gpus, o.gpusPerSwitch, o.switchesPerFabric, o.hostsPerFabric, fmt::join(o.sizes, "/"), fmt::join(o.sizeWeights, "/"), o.load, o.warmup, o.requests, fmt::join(o.seeds, ","));
  fmt::print("| profile | accepted % | of GPUs asked % | >= 8-GPU accepted % | multi-GPU placements under one switch % | GPUs over an inter-switch link % |\n"
             "|---|---|---|---|---|---|\n");
  std::vector<std::pair<std::string, Tally>> sums;
  for (const auto& v : variants) {
    auto scheduler = buildComposableScheduler(v.profile, v.weights);
    if (!scheduler) {
      fmt::print(stderr, "error: {}\n", scheduler.error().message);
      return 1;
    }
    Tally sum;
    for (uint64_t seed : o.seeds) {
      const Tally t = run(**scheduler, o, seed);
      sum.requests += t.requests;
      sum.accepted += t.accepted;
      sum.bigRequests += t.bigRequests;
      sum.bigAccepted += t.bigAccepted;
      sum.gpusRequested += t.gpusRequested;
      sum.multiGpuPlaced += t.multiGpuPlaced;
      sum.multiGpuOneSwitch += t.multiGpuOneSwitch;
      sum.gpusPlaced += t.gpusPlaced;
      sum.gpusOverIsl += t.gpusOverIsl;
      sum.decisionUs.insert(sum.decisionUs.end(), t.decisionUs.begin(), t.decisionUs.end());
      sum.hostsEvaluated += t.hostsEvaluated;
    }
    auto pct = [](long a, long b) { return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0; };
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", v.name, pct(sum.accepted, sum.requests),
               pct(sum.gpusPlaced, sum.gpusRequested), pct(sum.bigAccepted, sum.bigRequests),
               pct(sum.multiGpuOneSwitch, sum.multiGpuPlaced), pct(sum.gpusOverIsl, sum.gpusPlaced));
    if (sum.accepted == 0) {
      fmt::print(stderr, "error: nothing was placed; the benchmark pool is wrong\n");
      return 1;
    }
    sums.emplace_back(v.name, std::move(sum));
  }
  // Timings vary from run to run (this table is not part of the comparison above, which is deterministic).
  fmt::print("\nDecision latency on this churn, {} ({} hosts; measured requests, single thread):\n\n"
             "| profile | p50 µs | p99 µs | max µs | hosts evaluated per decision |\n|---|---|---|---|---|\n",
             o.index ? "through the placement index" : "full scan of every host",
             (o.gpus + o.gpusPerSwitch * o.switchesPerFabric - 1) / (o.gpusPerSwitch * o.switchesPerFabric) * o.hostsPerFabric);
  for (auto& [name, sum] : sums) {
    const Percentiles t = summarize(sum.decisionUs);
    const double perDecision = static_cast<double>(sum.hostsEvaluated) / static_cast<double>(sum.decisionUs.size());
    fmt::print("| {} | {:.1f} | {:.1f} | {:.1f} | {} |\n", name, t.p50, t.p99, t.max,
               o.index ? fmt::format("{:.1f}", perDecision) : "all");
  }
  return 0;
}

}  // namespace switchyard::bench
