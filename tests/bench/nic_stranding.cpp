#include "tests/bench/nic_stranding.h"

#include <fmt/format.h>

#include <queue>
#include <random>

#include "composer/packing/composable_model.h"
#include "composer/packing/packing.h"
#include "composer/packing/placement_index.h"
#include "composer/packing/pool.h"
#include "fabric/topology_generator.h"

namespace switchyard::bench {

namespace {

struct StrandingTally {
  long gpuOnly = 0, gpuOnlyPlaced = 0;
  long withNic = 0, withNicPlaced = 0;
  long withNicLostWhileNicFree = 0;  // refused although a NIC was free somewhere: its switch's GPUs were taken
  double strandedNicSamples = 0;     // summed at each arrival: free NICs whose switch has fewer than 2 free GPUs
  double freeNicSamples = 0;
  long samples = 0;
};

struct HeldRequest {
  int host;
  std::vector<int> devices;
  double leaves;
  bool operator>(const HeldRequest& o) const { return leaves > o.leaves; }
};

// Every other switch keeps its NICs (sw1, sw3, ... lose theirs), so GPUs alone have somewhere else to go.
Topology strandingTopology(const StrandingOptions& o) {
  TopologyShape shape;
  shape.totalGpus = o.gpus;
  shape.gpusPerSwitch = o.gpusPerSwitch;
  shape.switchesPerFabric = o.switchesPerFabric;
  shape.hostsPerFabric = o.hostsPerFabric;
  shape.nicsPerSwitch = o.nicsPerSwitch;
  Topology t = generateTopology(shape);
  std::erase_if(t.devices, [](const Device& d) {
    if (d.kind != DeviceKind::kNic) return false;
    const int sw = std::stoi(d.id.substr(2, d.id.find('-') - 2));  // "sw7-nic1"
    return sw % 2 == 1;
  });
  return t;
}

StrandingTally runStranding(const ComposableScheduler& scheduler, const Topology& topology, const StrandingOptions& o, std::uint64_t seed) {
  Pool pool(topology);
  double gpus = 0;
  for (const auto& d : pool.devices()) gpus += d.kind == DeviceKind::kGpu ? 1 : 0;
  std::mt19937_64 rng(seed);
  const int alone[] = {1, 2, 4};
  std::discrete_distribution<int> aloneSize{4, 3, 2};
  const double meanAlone = (1 * 4 + 2 * 3 + 4 * 2) / 9.0;
  const double meanGpus = o.withNicShare * 2 + (1 - o.withNicShare) * meanAlone;
  std::exponential_distribution<double> gap(o.load * gpus / meanGpus), lifetime(1.0);
  std::bernoulli_distribution wantsNic(o.withNicShare);
  std::priority_queue<HeldRequest, std::vector<HeldRequest>, std::greater<>> live;
  PlacementIndex index;
  StrandingTally t;
  double now = 0;
  for (int i = 0; i < o.warmup + o.requests; ++i) {
    now += gap(rng);
    while (!live.empty() && live.top().leaves <= now) {
      const HeldRequest& s = live.top();
      for (int di : s.devices) pool.setFree(di, true);
      pool.addAttached(s.host, -static_cast<int>(s.devices.size()));
      pool.setInSystem(s.host, false);
      live.pop();
    }
    const bool measured = i >= o.warmup;
    // Free NICs, and those stranded: under a switch with fewer free GPUs than a request with a NIC needs.
    int freeNics = 0, stranded = 0;
    for (const auto& d : pool.devices())
      if (d.kind == DeviceKind::kNic && d.free) {
        ++freeNics;
        stranded += pool.switches()[static_cast<std::size_t>(d.switchIndex)].freeGpus < 2 ? 1 : 0;
      }
    PlacementRequest r;
    r.peerToPeer = PeerToPeer::kPreferred;
    const bool nic = wantsNic(rng);
    if (nic) {
      r.gpuCount = 2;
      r.endpoints = {{DeviceKind::kNic, 1, "", 0, Affinity::kSwitch}};
    } else {
      r.gpuCount = alone[aloneSize(rng)];
    }
    const PlacementDecision d = place(scheduler, pool, r, &index);
    if (measured) {
      ++t.samples;
      t.freeNicSamples += freeNics;
      t.strandedNicSamples += stranded;
      (nic ? t.withNic : t.gpuOnly) += 1;
      if (d.placement) (nic ? t.withNicPlaced : t.gpuOnlyPlaced) += 1;
      if (nic && !d.placement && freeNics > 0) ++t.withNicLostWhileNicFree;
    }
    if (!d.placement) continue;
    HeldRequest s{pool.hostIndex(d.placement->hostId), {}, now + lifetime(rng)};
    for (const auto& dev : d.placement->devices) {
      const int di = pool.deviceIndex(dev.deviceId);
      pool.setFree(di, false);
      s.devices.push_back(di);
    }
    pool.addAttached(s.host, static_cast<int>(s.devices.size()));
    pool.setInSystem(s.host, true);
    live.push(std::move(s));
  }
  return t;
}

}  // namespace

int benchNicStranding(const StrandingOptions& o) {
  if (o.gpus < o.gpusPerSwitch * o.switchesPerFabric || o.nicsPerSwitch < 1 || o.withNicShare <= 0 || o.withNicShare >= 1 || o.load <= 0) {
    fmt::print(stderr, "error: need at least one fabric of GPUs, 1 or more NICs per NIC switch, a share of requests with a NIC in (0, 1) and a load > 0\n");
    return 2;
  }
  const Topology topology = strandingTopology(o);
  fmt::print("NIC stranding: {} GPUs, {} per switch, {} switches and {} hosts per fabric, {} NICs on every other switch; {:.0f}% of requests are "
             "2 GPUs + 1 NIC under their switch, the rest GPUs alone (1/2/4 GPUs, weights 4/3/2); offered GPU load {:.2f}, Poisson arrivals, "
             "exponential lifetimes, no queue; {} warm-up + {} measured requests; sums over seeds {}; profile {}\n\n",
             o.gpus, o.gpusPerSwitch, o.switchesPerFabric, o.hostsPerFabric, o.nicsPerSwitch, 100 * o.withNicShare, o.load, o.warmup, o.requests,
             fmt::join(o.seeds, ","), o.profile);
  fmt::print("| placement | GPU+NIC placed % | GPU+NIC lost while a NIC was free % | free NICs stranded (mean) | free NICs (mean) | GPUs-alone placed % |\n"
             "|---|---|---|---|---|---|\n");
  struct Variant {
    std::string name;
    std::vector<std::pair<std::string, double>> weights;
  };
  for (const Variant& v : {Variant{"locality-aware (spare-endpoints)", {}}, Variant{"GPU-only (spare-endpoints weighted 0)", {{"spare-endpoints", 0}}}}) {
    auto scheduler = buildComposableScheduler(o.profile, v.weights);
    if (!scheduler) {
      fmt::print(stderr, "error: {}\n", scheduler.error().message);
      return 2;
    }
    StrandingTally sum;
    for (std::uint64_t seed : o.seeds) {
      const StrandingTally t = runStranding(**scheduler, topology, o, seed);
      sum.gpuOnly += t.gpuOnly, sum.gpuOnlyPlaced += t.gpuOnlyPlaced, sum.withNic += t.withNic, sum.withNicPlaced += t.withNicPlaced;
      sum.withNicLostWhileNicFree += t.withNicLostWhileNicFree;
      sum.strandedNicSamples += t.strandedNicSamples, sum.freeNicSamples += t.freeNicSamples, sum.samples += t.samples;
    }
    auto pct = [](long a, long b) { return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0; };
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", v.name, pct(sum.withNicPlaced, sum.withNic), pct(sum.withNicLostWhileNicFree, sum.withNic),
               sum.strandedNicSamples / static_cast<double>(sum.samples), sum.freeNicSamples / static_cast<double>(sum.samples),
               pct(sum.gpuOnlyPlaced, sum.gpuOnly));
    if (sum.withNicPlaced == 0 || sum.gpuOnlyPlaced == 0) {
      fmt::print(stderr, "error: nothing of one kind was placed; the benchmark pool is wrong\n");
      return 1;
    }
  }
  return 0;
}

}  // namespace switchyard::bench
