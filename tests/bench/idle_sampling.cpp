#include "tests/bench/idle_sampling.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "composer/engine/engine.h"
#include "fabric/simulated_fabric.h"
#include "agent/simulated_hosts.h"
#include "fabric/topology_generator.h"
#include "inventory/sqlite_store.h"
#include "tests/bench/latency_summary.h"
#include "tests/support/temp_dir.h"

namespace switchyard::bench {

namespace {

using Stopwatch = std::chrono::steady_clock;


void printRow(const char* what, const std::vector<double>& ms) {
  if (ms.empty()) return;
  const auto p = summarize(ms);
  fmt::print("{:<52} {:>7} {:>9.2f} {:>9.2f} {:>9.2f}\n", what, ms.size(), p.p50, p.p99, p.max);
}

}  // namespace

int benchIdleSampling(const IdleBenchOptions& o) {
  spdlog::set_level(spdlog::level::warn);
  testing::TempDir dir;
  SystemClock clock;
  TopologyShape shape;
  shape.totalGpus = o.gpus;
  shape.gpusPerSwitch = 16;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = 8;  // 8 GPUs a host
  const Topology topology = generateTopology(shape);
  auto fabric = SimulatedFabric::create(topology, clock, {});
  auto store = SqliteStore::open(dir / "yard.db");
  if (!fabric || !store) {
    fmt::print(stderr, "error: cannot create the switch or the store\n");
    return 1;
  }
  SimulatedHosts hosts(topology, (*fabric)->router(), clock);
  EngineOptions options{.fabricPollInterval = std::chrono::milliseconds(0), .reconcileInterval = std::chrono::milliseconds(0)};
  options.activityInterval = std::chrono::milliseconds(0);  // sampled by hand below
  Engine engine(**fabric, **store, clock, options);
  engine.useHostAgents(hosts);
  if (auto r = engine.start(); !r) {
    fmt::print(stderr, "error: {}\n", r.error().message);
    return 1;
  }
  // Every host but the first gets one 8-GPU system; the first stays free for the compose probe.
  const auto fillStarted = Stopwatch::now();
  const std::string probeHost = topology.hosts.front().id;
  std::size_t composed = 0, busy = 0;
  for (const auto& h : topology.hosts) {
    if (h.id == probeHost) continue;
    ComposeRequest r{fmt::format("s-{}", composed), {}, {}};
    r.placement.gpuCount = 8;
    r.placement.host = h.id;
    auto op = engine.blocking().compose(Caller::local(), r);
    if (!op) continue;
    auto done = engine.waitOperation(op->id, std::chrono::seconds(60));
    if (!done || done->state != OperationState::kSucceeded) continue;
    ++composed;
    int i = 0;
    const auto system = engine.reads().getSystem(r.name);  // held: a range-for over a temporary's member would dangle
    if (!system) continue;
    for (const auto& b : system->bindings)
      if (i++ % 2 == 0) {  // every other GPU runs a process
        hosts.setActivity(b.deviceId, 97, {{4242, "python3", 30'000}});
        ++busy;
      }
  }
  fmt::print("pool: {} GPUs, {} 8-GPU systems on simulated hosts composed in {:.1f} s; {} GPUs busy, the rest idle\n", o.gpus, composed,
             msSince(fillStarted) / 1000, busy);

  std::vector<double> sampling;
  for (int i = 0; i < o.rounds; ++i) {
    const auto t0 = Stopwatch::now();
    if (auto r = engine.sampleActivity(); !r) {
      fmt::print(stderr, "error: sampling: {}\n", r.error().message);
      return 1;
    }
    sampling.push_back(msSince(t0));
  }
  std::vector<double> listing;
  std::size_t idle = 0;
  for (int i = 0; i < o.rounds; ++i) {
    const auto t0 = Stopwatch::now();
    auto list = engine.reads().idleGpus(Caller::local(), Duration{0});
    listing.push_back(msSince(t0));
    if (list) idle = list->size();
  }

  auto probe = [&](double seconds, std::vector<double>& out) {
    const auto until = Stopwatch::now() + std::chrono::duration<double>(seconds);
    for (int i = 0; Stopwatch::now() < until; ++i) {
      ComposeRequest r{fmt::format("probe-{}", i), {}, {}};
      r.placement.gpuCount = 8;
      r.placement.host = probeHost;
      const auto t0 = Stopwatch::now();
      auto op = engine.blocking().compose(Caller::local(), r);
      if (!op) return false;
      if (auto done = engine.waitOperation(op->id, std::chrono::seconds(60)); !done || done->state != OperationState::kSucceeded) return false;
      out.push_back(msSince(t0));
      auto gone = engine.blocking().decompose(Caller::local(), r.name);
      if (!gone || !engine.waitOperation(gone->id, std::chrono::seconds(60))) return false;
    }
    return true;
  };
  std::vector<double> alone, whileSampling, samplingUnderLoad;
  if (!probe(o.seconds, alone)) {
    fmt::print(stderr, "error: the compose probe failed\n");
    return 1;
  }
  std::atomic<bool> stop{false};
  std::thread sampler([&] {
    while (!stop.load()) {
      const auto t0 = Stopwatch::now();
      if (!engine.sampleActivity()) break;
      samplingUnderLoad.push_back(msSince(t0));
    }
  });
  const bool ok = probe(o.seconds, whileSampling);
  stop = true;
  sampler.join();
  if (!ok) {
    fmt::print(stderr, "error: the compose probe failed while sampling\n");
    return 1;
  }
  fmt::print("\n{:<52} {:>7} {:>9} {:>9} {:>9}\n", "", "count", "p50 ms", "p99 ms", "max ms");
  printRow("sampleActivity(): every composed host, whole round", sampling);
  printRow("idleGpus() from the view (yardctl idle --all)", listing);
  printRow("compose of 8 GPUs on the free host, alone", alone);
  printRow("the same compose while sampling back to back", whileSampling);
  printRow("sampleActivity() rounds during that", samplingUnderLoad);
  fmt::print("\n{} GPUs listed idle (busy ones excluded); peak RSS {} MiB\n", idle, peakRssKiB() / 1024);
  engine.stop(std::chrono::seconds(5));
  return 0;
}

}  // namespace switchyard::bench
