#include "tests/bench/compose_latency.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "composer/engine/engine.h"
#include "fabric/cxl/cxl_fabric.h"
#include "fabric/redfish/redfish_fabric.h"
#include "fabric/simulated_fabric.h"
#include "fabric/switchtec/switchtec_fabric.h"
#include "fabric/topology_generator.h"
#include "inventory/sqlite_store.h"
#include "tests/bench/latency_summary.h"
#include "tests/support/delay_proxy.h"
#include "tests/support/jackrabbit_cse.h"
#include "tests/support/redfish_cxl_mockup.h"
#include "tests/support/redfish_emulator.h"
#include "tests/support/switchtec_emulator.h"
#include "tests/support/temp_dir.h"

namespace switchyard::bench {

namespace {

using Stopwatch = std::chrono::steady_clock;

double secondsSince(Stopwatch::time_point t0) { return std::chrono::duration<double>(Stopwatch::now() - t0).count(); }

// One engine over a fresh store and a simulated switch with the given latency per call.
struct Rig {
  testing::TempDir dir;
  SystemClock clock;
  std::unique_ptr<testing::SwitchtecEmulator> emulator;
  std::unique_ptr<testing::RedfishEmulator> redfish;
  std::unique_ptr<testing::CseProcess> cse;
  std::unique_ptr<testing::DelayProxy> proxy;
  std::unique_ptr<FabricDriver> fabric;
  std::unique_ptr<SqliteStore> store;
  std::unique_ptr<Engine> engine;

  Result<void> start(int hosts, int latencyMs, const std::string& driver, bool expand, int pollMs) {
    if (driver == "switchtec") {
      // 4 PAX chips in a chain, 8 hosts and 32 GPUs on each; hosts named host0.. as the simulated rig's.
      const int chips = 4, hostsPerChip = std::max(2, (hosts + chips - 1) / chips);
      if (hostsPerChip > 16) return fail(Code::kInvalidArgument, "the Switchtec rig has at most 64 hosts");
      SY_ASSIGN(emulator, testing::SwitchtecEmulator::start({testing::generateSwitchtecTopology(chips, hostsPerChip, 32)}));
      SwitchtecOptions options{.endpoint = emulator->endpoint(), .channels = 64};
      for (int h = 0; h < chips * hostsPerChip; ++h) options.hostNames[fmt::format("pax{}-p{}", h / hostsPerChip, h % hostsPerChip)] = fmt::format("host{}", h);
      emulator->setLatency(std::chrono::milliseconds(latencyMs));
      const auto t0 = Stopwatch::now();
      SY_ASSIGN(auto st, SwitchtecFabric::connect(options));
      fmt::print("discovery of {} PAX chips, {} hosts, {} GPU functions: {:.3f} s, {} MRPC commands\n", chips, chips * hostsPerChip, chips * 32,
                 secondsSince(t0), st->commandsSent());
      fabric = std::move(st);
    } else if (driver == "cxl") {
      // Jackrabbit's cse: one VCS (host) per composer, two GPU ports per host plus 8, an MLD of 4 LDs; every
      // FM-API command delayed by the proxy. Hosts named host0.. as the simulated rig's.
      if (auto why = testing::cseUnavailable(); !why.empty()) return fail(Code::kUnavailable, why);
      const testing::CseConfig config{.hosts = hosts, .vppbsPerVcs = 16, .gpus = 2 * hosts + 8};
      std::string why;
      cse = testing::CseProcess::start(config, &why);
      if (!cse) return fail(Code::kUnavailable, why);
      proxy = testing::DelayProxy::start(cse->port());
      proxy->setLatency(std::chrono::milliseconds(latencyMs));
      CxlOptions options{.endpoint = proxy->endpoint(), .dialect = cxl::Dialect::jackrabbit(), .discoveryTimeout = std::chrono::minutes(5)};
      for (int h = 0; h < hosts; ++h) options.hostNames[fmt::format("vcs{}", h)] = fmt::format("host{}", h);
      const auto t0 = Stopwatch::now();
      SY_ASSIGN(auto cx, CxlFabric::connect(options));
      fmt::print("discovery of a {}-port CXL switch ({} VCSs, {} GPUs, 1 MLD): {:.3f} s, {} FM-API commands\n", config.ports(), hosts, config.gpus,
                 secondsSince(t0), cx->commandsSent());
      fabric = std::move(cx);
    } else if (driver == "redfish") {
      // A generated CXL fabric behind the Redfish emulator: 4 switches with their own hosts and 32 GPUs each,
      // every request taking the latency; hosts named host0.. as the simulated rig's.
      const int switches = 4, hostsPerSwitch = std::max(4, (hosts + switches - 1) / switches);
      SY_TRY(testing::writeCxlMockup(dir / "mockup", {switches, hostsPerSwitch, 32, expand}));
      SY_ASSIGN(redfish, testing::RedfishEmulator::start({dir / "mockup"}));
      redfish->setLatency(std::chrono::milliseconds(latencyMs));
      const auto t0 = Stopwatch::now();
      SY_ASSIGN(auto rf, RedfishFabric::connect({redfish->url(), "CXL", "admin", "switchyard", std::chrono::minutes(5)}));
      fmt::print("discovery of {} CXL switches, {} hosts, {} GPUs: {:.3f} s, {} GETs ($expand {})\n", switches, switches * hostsPerSwitch,
                 switches * 32, secondsSince(t0), redfish->requests("GET"), rf->expands() ? "offered and used" : "not offered");
      fabric = std::move(rf);
    } else {
      TopologyShape shape;
      shape.totalGpus = std::max(64, hosts * 16);
      shape.gpusPerSwitch = 16;
      shape.switchesPerFabric = 4;
      shape.hostsPerFabric = 4;
      SY_ASSIGN(fabric, SimulatedFabric::create(generateTopology(shape), clock, {.latency = std::chrono::milliseconds(latencyMs)}));
    }
    SY_ASSIGN(store, SqliteStore::open(dir / "yard.db"));
    // Against Redfish the health poll runs as in yardd (every second): it must not hold up a compose.
    engine = std::make_unique<Engine>(*fabric, *store, clock,
                                      EngineOptions{.fabricPollInterval = std::chrono::milliseconds(pollMs >= 0 ? pollMs : driver == "redfish" ? 1000 : 0),
                                                    .reconcileInterval = std::chrono::milliseconds(0)});
    SY_TRY(engine->start());
    return {};
  }

  // Composes `gpus` GPUs (or the named devices) on `host` and waits; returns the seconds it took, or an error.
  Result<double> compose(const std::string& name, const std::string& host, int gpus, std::vector<DeviceId> devices = {}) {
    ComposeRequest r{name, {}, {}};
    r.placement.gpuCount = gpus;
    r.placement.host = host;
    r.placement.devices = std::move(devices);
    const auto t0 = Stopwatch::now();
    SY_ASSIGN(Operation op, engine->blocking().compose(Caller::local(), r));
    SY_ASSIGN(op, engine->waitOperation(op.id, std::chrono::minutes(10)));
    if (op.state != OperationState::kSucceeded) return fail(Code::kInternal, fmt::format("{} did not succeed: {}", op.id, op.error));
    return secondsSince(t0);
  }

  Result<double> decompose(const std::string& name) {
    const auto t0 = Stopwatch::now();
    SY_ASSIGN(Operation op, engine->blocking().decompose(Caller::local(), name));
    SY_ASSIGN(op, engine->waitOperation(op.id, std::chrono::minutes(10)));
    if (op.state != OperationState::kSucceeded) return fail(Code::kInternal, fmt::format("{} did not succeed: {}", op.id, op.error));
    return secondsSince(t0);
  }
};

}  // namespace

namespace {

double median(std::vector<double> v) { return summarize(std::move(v)).p50; }

void printRow(const std::string& scenario, double measured, double target, std::string_view targetName) {
  if (target > 0)
    fmt::print("{:<34} {:>10.3f} {:>12.3f} {:>14} {:>8.2f}\n", scenario, measured, target, targetName, measured / target);
  else
    fmt::print("{:<34} {:>10.3f} {:>12} {:>14} {:>8}\n", scenario, measured, "-", "-", "-");
}

Result<void> measure(const ComposeLatencyOptions& o) {
  const double rtt = o.latencyMs / 1000.0;
  Rig rig;
  SY_TRY(rig.start(std::max(o.concurrent, 4), o.latencyMs, o.driver, o.expand, o.pollMs));
  // Redfish (issue 36): one compose within 2 round trips + 100 ms, N at once within 1.5x of one.
  const bool redfish = o.driver == "redfish";
  const std::uint64_t requestsBefore = redfish ? rig.redfish->requests("GET") + rig.redfish->requests("PATCH") + rig.redfish->requests("POST") +
                                                     rig.redfish->requests("DELETE")
                                               : 0;

  // 0. CXL: one compose of 4 GPUs and 1 LD, in FM-API commands and latencies; and discovery of a 32-port switch.
  if (auto* cx = dynamic_cast<CxlFabric*>(rig.fabric.get())) {
    const auto config = testing::CseConfig{.hosts = std::max(o.concurrent, 4), .vppbsPerVcs = 16, .gpus = 2 * std::max(o.concurrent, 4) + 8};
    std::vector<double> mixed;
    std::uint64_t commands = 0;
    for (int i = 0; i < o.repetitions; ++i) {
      std::vector<DeviceId> devices;
      for (int g = 0; g < 4; ++g) devices.push_back(fmt::format("cxl0-ep{}", config.hosts + g));
      devices.push_back(fmt::format("cxl0-ep{}-ld{}", config.mldPort(), i % 4));
      const auto before = cx->commandsSent();
      SY_ASSIGN(double composed, rig.compose(fmt::format("mixed-{}", i), "host0", 0, devices));
      commands = cx->commandsSent() - before;
      SY_TRY(rig.decompose(fmt::format("mixed-{}", i)));
      mixed.push_back(composed);
    }
    printRow("1 compose of 4 GPUs + 1 LD", median(mixed), 0, {});
    fmt::print("  = {:.1f} latencies; {} FM-API commands (the bind call and the engine's verify)\n", rtt > 0 ? median(mixed) / rtt : 0.0, commands);
    testing::CseConfig wide{.hosts = 4, .vppbsPerVcs = 8, .gpus = 26};  // 4 + 26 + MLD + 1 empty = 32 ports
    std::string why;
    auto cse32 = testing::CseProcess::start(wide, &why);
    if (!cse32) return fail(Code::kUnavailable, why);
    auto proxy32 = testing::DelayProxy::start(cse32->port());
    proxy32->setLatency(std::chrono::milliseconds(o.latencyMs));
    const auto t0 = Stopwatch::now();
    SY_ASSIGN(auto f32, CxlFabric::connect({.endpoint = proxy32->endpoint(), .dialect = cxl::Dialect::jackrabbit(), .discoveryTimeout = std::chrono::minutes(5)}));
    printRow(fmt::format("discovery of a {}-port switch", wide.ports()), secondsSince(t0), 0, {});
    fmt::print("  = {:.1f} latencies; {} FM-API commands\n", rtt > 0 ? secondsSince(t0) / rtt : 0.0, f32->commandsSent());
  }

  // 1. One compose of many GPUs: the target is (one bind round trip + one verify round trip) x 1.5.
  std::vector<double> big, bigDecompose, small, together;
  for (int i = 0; i < o.repetitions; ++i) {
    SY_ASSIGN(double composed, rig.compose(fmt::format("big-{}", i), "host0", o.gpus));
    SY_ASSIGN(double decomposed, rig.decompose(fmt::format("big-{}", i)));
    big.push_back(composed);
    bigDecompose.push_back(decomposed);
  }
  if (redfish)
    printRow(fmt::format("1 compose of {} GPUs", o.gpus), median(big), 2 * rtt + 0.1, "2 RTT + 100 ms");
  else
    printRow(fmt::format("1 compose of {} GPUs", o.gpus), median(big), 1.5 * 2 * rtt, "1.5 x 2 RTT");
  printRow(fmt::format("1 decompose of {} GPUs", o.gpus), median(bigDecompose), 0, {});

  // 2. Many small composes at once on distinct hosts: the target is 2x one small compose alone.
  for (int i = 0; i < o.repetitions; ++i) {
    SY_ASSIGN(double composed, rig.compose(fmt::format("small-{}", i), "host0", o.concurrentGpus));
    SY_TRY(rig.decompose(fmt::format("small-{}", i)));
    small.push_back(composed);
  }
  auto* cxlFabric = dynamic_cast<CxlFabric*>(rig.fabric.get());
  const std::uint64_t commandsBefore = cxlFabric ? cxlFabric->commandsSent() : 0, sessionsBefore = cxlFabric ? cxlFabric->sessions() : 0;
  for (int rep = 0; rep < o.repetitions; ++rep) {
    std::vector<std::thread> clients;
    std::vector<Result<double>> results(static_cast<std::size_t>(o.concurrent), fail(Code::kInternal, "not run"));
    const auto t0 = Stopwatch::now();
    for (int c = 0; c < o.concurrent; ++c)
      clients.emplace_back([&, c] {
        results[static_cast<std::size_t>(c)] = rig.compose(fmt::format("par-{}-{}", rep, c), fmt::format("host{}", c), o.concurrentGpus);
      });
    for (auto& t : clients) t.join();
    together.push_back(secondsSince(t0));
    for (const auto& r : results) SY_TRY(r);
    for (int c = 0; c < o.concurrent; ++c) SY_TRY(rig.decompose(fmt::format("par-{}-{}", rep, c)));
  }
  if (cxlFabric)
    fmt::print("  (the concurrent rows: {} FM-API commands in {} sessions per repetition, decomposes included)\n",
               (cxlFabric->commandsSent() - commandsBefore) / static_cast<std::uint64_t>(o.repetitions),
               (cxlFabric->sessions() - sessionsBefore) / static_cast<std::uint64_t>(o.repetitions));
  printRow(fmt::format("1 compose of {} GPUs", o.concurrentGpus), median(small), 0, {});
  if (redfish)
    printRow(fmt::format("{} concurrent composes of {} GPUs", o.concurrent, o.concurrentGpus), median(together), 1.5 * median(small),
             "1.5 x one alone");
  else
    printRow(fmt::format("{} concurrent composes of {} GPUs", o.concurrent, o.concurrentGpus), median(together), 2 * median(small),
             "2 x one alone");
  if (redfish) {
    auto* rf = dynamic_cast<RedfishFabric*>(rig.fabric.get());
    const std::uint64_t requests = rig.redfish->requests("GET") + rig.redfish->requests("PATCH") + rig.redfish->requests("POST") +
                                   rig.redfish->requests("DELETE") - requestsBefore;
    fmt::print("Redfish requests after discovery: {} (GET {}, PATCH {}, POST {}, DELETE {}; health polls included), {} TCP connections opened in all\n",
               requests, rig.redfish->requests("GET"), rig.redfish->requests("PATCH"), rig.redfish->requests("POST"), rig.redfish->requests("DELETE"),
               rf->connectionsOpened());
  }
  if (auto* cx = dynamic_cast<CxlFabric*>(rig.fabric.get()))
    fmt::print("FM-API commands sent in all: {} (after discovery and the rows above)\n", cx->commandsSent());
  if (auto* st = dynamic_cast<SwitchtecFabric*>(rig.fabric.get()))
    fmt::print("MRPC commands sent in all: {} ({} composes and as many decomposes)\n", st->commandsSent(),
               2 * o.repetitions + o.repetitions * o.concurrent);
  rig.engine->stop(std::chrono::seconds(5));
  return {};
}

}  // namespace

int benchComposeLatency(const ComposeLatencyOptions& o) {
  spdlog::set_level(spdlog::level::warn);
  fmt::print("{} switch, latency {} ms per {}; {} repetition(s) per row; times are the median\n", o.driver, o.latencyMs,
             o.driver == "switchtec" ? "MRPC command (emulator over loopback TCP)"
             : o.driver == "cxl"       ? "FM-API command (Jackrabbit's cse behind a delaying proxy, loopback TCP)"
             : o.driver == "redfish"   ? "HTTP request (emulator over loopback TCP)"
                                       : "call", o.repetitions);
  fmt::print("{:<34} {:>10} {:>12} {:>14} {:>8}\n", "scenario", "measured s", "target s", "target", "ratio");
  if (auto r = measure(o); !r) {
    fmt::print(stderr, "error: {}\n", r.error().message);
    return 1;
  }
  return 0;
}

}  // namespace switchyard::bench
