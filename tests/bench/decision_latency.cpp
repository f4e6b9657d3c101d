#include "tests/bench/decision_latency.h"

#include "tests/bench/latency_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>

#include "composer/packing/composable_model.h"
#include "composer/packing/demand_mix.h"
#include "composer/packing/placement_index.h"
#include "fabric/topology_generator.h"

namespace switchyard::bench {

namespace {

using Stopwatch = std::chrono::steady_clock;

struct Lane {
  Lane(std::string profile, std::shared_ptr<const ComposableScheduler> scheduler, bool indexed, const Pool& start)
      : profile(std::move(profile)), scheduler(std::move(scheduler)), indexed(indexed), pool(start) {}
  std::string profile;
  std::shared_ptr<const ComposableScheduler> scheduler;
  bool indexed = true;
  Pool pool;
  PlacementIndex index;
  DemandTracker demand;
  std::mt19937 rng{7};
  std::vector<int> taken;  // device indices, in no order
  std::vector<double> us;
  std::string lastHost;
  int placed = 0;
};

Topology latencyTopology(int gpus, bool mixed) {
  TopologyShape shape;
  shape.totalGpus = gpus;
  shape.gpusPerSwitch = 16;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = 8;
  if (mixed) {
    shape.nicsPerSwitch = 3;
    shape.drivesPerSwitch = 2;
    shape.maxDevicesPerHost = 32;  // room for the companions beside 8 GPUs
  }
  return generateTopology(shape);
}

// The pool at `fill`, half the hosts serving a system, and the request stream's demand learned.
Pool startingPool(const Topology& t, double fill) {
  Pool pool(t);
  std::mt19937 rng(42);
  std::vector<int> order(pool.devices().size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::shuffle(order.begin(), order.end(), rng);
  for (std::size_t i = 0; i < static_cast<std::size_t>(fill * static_cast<double>(order.size())); ++i) pool.setFree(order[i], false);
  for (std::size_t h = 0; h < pool.hosts().size(); h += 2) pool.setInSystem(static_cast<int>(h), true);
  return pool;
}

void decide(Lane& lane, const PlacementRequest& r) {
  lane.demand.observe(r, lane.pool);
  const auto t0 = Stopwatch::now();
  PlacementDecision d = place(*lane.scheduler, lane.pool, r, lane.indexed ? &lane.index : nullptr);
  lane.us.push_back(std::chrono::duration<double, std::micro>(Stopwatch::now() - t0).count());
  lane.lastHost = d.placement ? d.placement->hostId : "";
  if (!d.placement) return;
  ++lane.placed;
  for (const auto& device : d.placement->devices) {
    const int i = lane.pool.deviceIndex(device.deviceId);
    lane.pool.setFree(i, false);
    lane.taken.push_back(i);
  }
  for (std::size_t k = 0; k < d.placement->devices.size(); ++k) {  // as many GPUs come back
    std::uniform_int_distribution<std::size_t> pick(0, lane.taken.size() - 1);
    const std::size_t j = pick(lane.rng);
    lane.pool.setFree(lane.taken[j], true);
    lane.taken[j] = lane.taken.back();
    lane.taken.pop_back();
  }
}

}  // namespace

int benchDecisionLatency(const LatencyOptions& o) {
  fmt::print(
      "placement decision latency (single thread, {} decisions per lane and row, lanes interleaved; requests of 1/2/4/8 GPUs, P2P "
      "preferred{}; each placement taken and as many devices released)\n",
      o.decisions, o.mixed ? ", each with 1 NIC under its GPUs' switch and 1 NVMe drive (3 NICs and 2 drives per 16-GPU switch)" : "");
  fmt::print("{:>8} {:>6} {:>5} {:>14} {:>6} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>7}\n", "GPUs", "hosts", "fill", "profile", "lane", "p50 us",
             "p99 us", "max us", "mean us", "hosts/dec", "rebuilds", "placed");
  const int shapes[] = {1, 2, 4, 8};
  for (int gpus : o.gpus) {
    const Topology t = latencyTopology(gpus, o.mixed);
    for (double fill : o.fills) {
      const Pool start = startingPool(t, fill);
      std::vector<std::unique_ptr<Lane>> lanes;
      for (const auto& name : o.profiles) {
        auto scheduler = buildComposableScheduler(name);
        if (!scheduler) {
          fmt::print(stderr, "error: {}\n", scheduler.error().message);
          return 2;
        }
        for (bool indexed : {true, false}) {
          if (!indexed && !o.scan) continue;
          auto lane = std::make_unique<Lane>(name, *scheduler, indexed, start);
          for (std::size_t d = 0; d < lane->pool.devices().size(); ++d)
            if (!lane->pool.devices()[d].free) lane->taken.push_back(static_cast<int>(d));
          for (int i = 0; i < 1000; ++i) lane->demand.observe(PlacementRequest{.gpuCount = shapes[i % 4]}, lane->pool);
          lanes.push_back(std::move(lane));
        }
      }
      for (int i = 0; i < o.decisions; ++i) {
        PlacementRequest r;
        r.gpuCount = shapes[i % 4];
        if (o.mixed) r.endpoints = {{DeviceKind::kNic, 1, "", 0, Affinity::kSwitch}, {DeviceKind::kNvme, 1, "", 0, Affinity::kDomain}};
        for (auto& lane : lanes) decide(*lane, r);
        for (std::size_t k = 1; k < lanes.size(); ++k)
          if (lanes[k]->profile == lanes[k - 1]->profile && lanes[k]->lastHost != lanes[k - 1]->lastHost) {
            fmt::print(stderr, "error: {} chose '{}' with the index and '{}' without, at decision {}\n", lanes[k]->profile,
                       lanes[k - 1]->lastHost, lanes[k]->lastHost, i);
            return 1;
          }
      }
      for (auto& lane : lanes) {
        const Percentiles t = summarize(lane->us);
        const auto& s = lane->index.stats();
        // The index's own verdicts (those a refusal explained again among them), plus every host of the full cycles
        // it handed over.
        const double hostsPerDecision = lane->indexed ? (static_cast<double>(s.evaluated) + static_cast<double>(s.fallbacks * start.hosts().size())) / o.decisions
                                                      : static_cast<double>(start.hosts().size());
        fmt::print("{:>8} {:>6} {:>4.0f}% {:>14} {:>6} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>10.1f} {:>9} {:>6.0f}%\n", gpus, start.hosts().size(),
                   fill * 100, lane->profile, lane->indexed ? "index" : "scan", t.p50, t.p99, t.max, t.mean,
                   hostsPerDecision, lane->indexed ? fmt::to_string(s.rebuilds) : "-", 100.0 * lane->placed / o.decisions);
        if (lane->placed == 0) {
          fmt::print(stderr, "error: {} placed nothing; the benchmark pool is wrong\n", lane->profile);
          return 1;
        }
        if (lane->indexed && s.stale > 0) {
          fmt::print(stderr, "error: {}'s index held {} stale verdict(s)\n", lane->profile, s.stale);
          return 1;
        }
      }
    }
  }
  fmt::print("peak RSS {} MiB\n", peakRssKiB() / 1024);
  return 0;
}

}  // namespace switchyard::bench
