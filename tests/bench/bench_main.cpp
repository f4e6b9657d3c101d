// switchyard_bench: prints tables for the performance targets.
//   switchyard_bench packing [--gpus N ...] [--decisions N] [--profiles P ...] [--index-only]   placement decision latency
//   switchyard_bench ablation [--gpus N] [--requests N]      switchyard-v1 without its topology / fit scores, and hived-buddy
//   switchyard_bench latency [--sim-latency-ms MS] [--gpus N] [--concurrent N]   compose time against a slow switch
//   switchyard_bench compose [--seconds S] [--clients N] [--durability normal|full] [--group-commit N]
//                                                            compose+decompose through gRPC, durable store
//   switchyard_bench queue [--gpus N] [--queued N] [--rounds N]   freed capacity to the next queued request bound
//   switchyard_bench idle [--gpus N] [--rounds N] [--seconds S]    what idle reclaim's activity sampling costs
//   switchyard_bench reads [--gpus N] [--seconds S] [--readers N] [--path P ...]
//                                                            compose latency idle and under /metrics + dashboard reads
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "composer/api/switchyard_service.h"
#include "composer/engine/engine.h"
#include "composer/packing/composable_model.h"
#include "composer/packing/demand_mix.h"
#include "composer/packing/packing.h"
#include "fabric/simulated_fabric.h"
#include "agent/simulated_hosts.h"
#include "fabric/topology_generator.h"
#include "inventory/etcd/etcd_store.h"
#include "inventory/sqlite_store.h"
#include "tests/bench/compose_latency.h"
#include "tests/bench/decision_latency.h"
#include "tests/bench/latency_summary.h"
#include "tests/bench/idle_sampling.h"
#include "tests/bench/queue_admission.h"
#include "tests/bench/read_load.h"
#include "tests/bench/nic_stranding.h"
#include "tests/bench/topology_ablation.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/temp_dir.h"

using namespace switchyard;
using Stopwatch = std::chrono::steady_clock;
using bench::peakRssKiB;
using bench::summarize;

namespace {

Topology benchTopology(int gpus, int hostsPerFabric, int nicsPerSwitch = 0, int drivesPerSwitch = 0) {
  TopologyShape shape;
  shape.totalGpus = gpus;
  shape.gpusPerSwitch = 16;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = hostsPerFabric;
  shape.nicsPerSwitch = nicsPerSwitch;
  shape.drivesPerSwitch = drivesPerSwitch;
  if (nicsPerSwitch + drivesPerSwitch > 0) shape.maxDevicesPerHost = 32;
  return generateTopology(shape);
}

// Compose + decompose loops through the real gRPC service, engine, SQLite store and simulated switch.
// Whole machines: `nics` NICs (beside the GPUs' switch) and `drives` drives with every compose, from a pool with
// 4 of each per 16-GPU switch.
// The store the compose benchmark writes: SQLite (in `durability`), or etcd (Debian's etcd-server, one member on
// loopback as tests/support/etcd_cluster.h starts it, --max-txn-ops 16384 as docs/operations.md asks).
struct BenchStore {
  std::unique_ptr<testing::EtcdCluster> etcd;
  std::unique_ptr<Store> store;
};
Result<BenchStore> openBenchStore(const std::string& kind, const std::filesystem::path& dir, const std::string& durability) {
  BenchStore out;
  if (kind == "etcd") {
    if (!testing::EtcdCluster::available()) return fail(Code::kUnavailable, "--store etcd needs etcd (Debian package etcd-server)");
    out.etcd = std::make_unique<testing::EtcdCluster>(dir / "etcd", 1);
    if (!out.etcd->start()) return fail(Code::kUnavailable, "etcd did not start");
    SY_ASSIGN(out.store, EtcdStore::open({out.etcd->endpoints()}));
    return out;
  }
  SY_ASSIGN(out.store, SqliteStore::open(dir / "yard.db", durability == "full" ? Durability::kFull : Durability::kNormal));
  return out;
}

int benchCompose(double seconds, int clients, const std::string& durability, int gpusPerCompose, const std::string& hostSide, int nics,
                 int drives, std::size_t groupCommitTasks, const std::string& storeKind) {
  spdlog::set_level(spdlog::level::warn);
  testing::TempDir dir;
  SystemClock clock;
  const bool mixed = nics + drives > 0;
  auto fabric = std::move(*SimulatedFabric::create(benchTopology(std::max(64, clients * 16), clients, mixed ? 4 : 0, mixed ? 4 : 0), clock, {}));
  auto store = openBenchStore(storeKind, dir.path(), durability);
  if (!store) {
    fmt::print(stderr, "error: {}\n", store.error().message);
    return 1;
  }
  Engine engine(*fabric, *store->store, clock, {.groupCommitTasks = groupCommitTasks, .fabricPollInterval = std::chrono::milliseconds(0)});
  // With simulated hosts every compose also runs host-admit and every decompose host-release (zero delay):
  // what the host steps cost the engine.
  std::unique_ptr<SimulatedHosts> hosts;
  if (hostSide == "simulated") {
    hosts = std::make_unique<SimulatedHosts>(*fabric->discover(), fabric->router(), clock);
    engine.useHostAgents(*hosts);
  }
  if (auto r = engine.start(); !r) {
    fmt::print(stderr, "error: {}\n", r.error().message);
    return 1;
  }
  Authenticator open(nullptr);  // the benchmark measures the engine path, not authentication
  SwitchyardService service(engine, open);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();

  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::vector<double>> composeUs(static_cast<std::size_t>(clients)), decomposeUs(static_cast<std::size_t>(clients));
  std::vector<std::thread> threads;
  const auto begin = Stopwatch::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto stub = v1::Switchyard::NewStub(grpc::CreateChannel(fmt::format("127.0.0.1:{}", port), grpc::InsecureChannelCredentials()));
      auto waitDone = [&](const std::string& id) {
        grpc::ClientContext ctx;
        v1::WaitOperationRequest w;
        w.set_id(id);
        w.set_timeout_ms(10'000);
        v1::Operation op;
        return stub->WaitOperation(&ctx, w, &op).ok() && op.state() == v1::OPERATION_STATE_SUCCEEDED;
      };
      for (int i = 0; !stop; ++i) {
        const std::string name = fmt::format("bench-{}-{}", c, i);
        auto t0 = Stopwatch::now();
        v1::ComposeRequest req;
        req.set_name(name);
        req.mutable_gpus()->set_count(gpusPerCompose);
        req.mutable_gpus()->set_host(fmt::format("host{}", c));
        for (const auto& [kind, count] : {std::pair{"nic", nics}, std::pair{"nvme", drives}})
          if (count > 0) {
            auto* e = req.add_endpoints();
            e->set_kind(kind);
            e->set_count(count);
            if (std::string(kind) == "nic") e->set_affinity("switch");
          }
        v1::Operation op;
        grpc::ClientContext ctx;
        if (!stub->Compose(&ctx, req, &op).ok() || !waitDone(op.id())) {
          ++failures;
          continue;
        }
        composeUs[static_cast<std::size_t>(c)].push_back(std::chrono::duration<double, std::micro>(Stopwatch::now() - t0).count());
        t0 = Stopwatch::now();
        v1::DecomposeRequest d;
        d.set_system(name);
        grpc::ClientContext dctx;
        if (!stub->Decompose(&dctx, d, &op).ok() || !waitDone(op.id())) {
          ++failures;
          continue;
        }
        decomposeUs[static_cast<std::size_t>(c)].push_back(std::chrono::duration<double, std::micro>(Stopwatch::now() - t0).count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Stopwatch::now() - begin).count();
  server->Shutdown(std::chrono::system_clock::now());
  engine.stop(std::chrono::seconds(5));

  std::vector<double> all, allDecompose;
  for (auto& v : composeUs) all.insert(all.end(), v.begin(), v.end());
  for (auto& v : decomposeUs) allDecompose.insert(allDecompose.end(), v.begin(), v.end());
  if (all.empty() || failures > 0) {
    fmt::print(stderr, "error: {} composes completed, {} failures\n", all.size(), failures.load());
    return 1;
  }
  const auto c = summarize(all);
  const auto d = summarize(allDecompose);
  fmt::print("{:<12} {:<10} {:>7} {:>5} {:>9} {:>6} {:>9} {:>12} {:>10} {:>10} {:>10} {:>12} {:>10}\n", "store", "host side", "clients", "gpus",
             "nic+nvme", "group", "composes", "composes/s", "p50 ms", "p99 ms", "max ms", "decomp p99", "peak RSS");
  fmt::print("{:<12} {:<10} {:>7} {:>5} {:>9} {:>6} {:>9} {:>12.0f} {:>10.2f} {:>10.2f} {:>10.2f} {:>12.2f} {:>8}MiB\n",
             storeKind == "etcd" ? "etcd" : durability, hostSide, clients,
             gpusPerCompose, fmt::format("{}+{}", nics, drives), groupCommitTasks,
             all.size(), static_cast<double>(all.size()) / elapsed, c.p50 / 1000, c.p99 / 1000, c.max / 1000, d.p99 / 1000,
             peakRssKiB() / 1024);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Switchyard benchmarks (numbers for docs/benchmarks.md)"};
  app.require_subcommand(1);
  auto* packing = app.add_subcommand("packing",
                                     "Decision latency of the daemon's placement profiles, with the placement index (as yardd runs them) "
                                     "and as a scan of every host, on a churning pool");
  bench::LatencyOptions latency;
  packing->add_option("--gpus", latency.gpus, "Pool sizes")->capture_default_str();
  packing->add_option("--fill", latency.fills, "Fractions of GPUs taken")->capture_default_str();
  packing->add_option("--decisions", latency.decisions, "Decisions per lane and row")->capture_default_str()->check(CLI::PositiveNumber);
  packing->add_option("--profiles", latency.profiles, "Placement profiles, timed interleaved")->capture_default_str();
  bool indexOnly = false;
  packing->add_flag("--index-only", indexOnly, "Skip the scan lanes (they take about 1-3 ms a decision at 100k GPUs)");
  packing->add_flag("--mixed", latency.mixed,
                    "Whole machines: 3 NICs and 2 NVMe drives per 16-GPU switch, each request with a NIC beside its GPUs and a drive");
  auto* compose = app.add_subcommand("compose", "Compose + decompose through gRPC on the simulated fabric (zero latency)");
  double seconds = 10;
  int clients = 8, gpus = 2;
  std::string durability = "normal";
  compose->add_option("--seconds", seconds, "How long to run")->capture_default_str();
  compose->add_option("--clients", clients, "Concurrent gRPC clients, each on its own host")->capture_default_str();
  compose->add_option("--gpus", gpus, "GPUs per compose")->capture_default_str();
  compose->add_option("--durability", durability, "normal or full (SQLite synchronous mode)")
      ->check(CLI::IsMember({"normal", "full"}))->capture_default_str();
  std::string hostSide = "none";
  int composeNics = 0, composeDrives = 0;
  compose->add_option("--nic", composeNics, "NICs per compose, under the GPUs' switch (the pool then has 4 NICs and 4 drives per switch)")
      ->check(CLI::Range(0, 4))->capture_default_str();
  compose->add_option("--nvme", composeDrives, "NVMe drives per compose")->check(CLI::Range(0, 4))->capture_default_str();
  std::size_t groupCommitTasks = EngineOptions{}.groupCommitTasks;
  compose->add_option("--group-commit", groupCommitTasks,
                      "The most control-thread tasks whose writes go to the store in one transaction (group commit); 1: each task alone")
      ->check(CLI::PositiveNumber)->capture_default_str();
  std::string composeStore = "sqlite";
  compose->add_option("--store", composeStore, "sqlite (a file, in --durability) or etcd (one etcd-server member on loopback, started for the run)")
      ->check(CLI::IsMember({"sqlite", "etcd"}))->capture_default_str();
  compose->add_option("--host-side", hostSide, "none (every host trusts the fabric) or simulated (host-admit and host-release on simulated hosts)")
      ->check(CLI::IsMember({"none", "simulated"}))->capture_default_str();
  auto* ablation = app.add_subcommand("ablation", "switchyard-v2 (fragmentation score on the learned demand), switchyard-v1 against itself without topology and/or fit scores, and the HiveD buddy baseline, on a churning pool");
  bench::AblationOptions ab;
  ablation->add_option("--gpus", ab.gpus, "GPUs in the pool")->capture_default_str();
  ablation->add_option("--gpus-per-switch", ab.gpusPerSwitch, "GPUs under one switch")->capture_default_str();
  ablation->add_option("--hosts-per-fabric", ab.hostsPerFabric, "hosts per fabric of 4 switches")->capture_default_str();
  ablation->add_option("--load", ab.load, "offered GPU load (arrival rate x mean GPUs x mean lifetime / GPUs)")->capture_default_str();
  ablation->add_option("--warmup", ab.warmup, "requests before measuring")->capture_default_str();
  ablation->add_option("--requests", ab.requests, "measured requests per seed")->capture_default_str();
  ablation->add_option("--seeds", ab.seeds, "seeds")->delimiter(',')->capture_default_str();
  ablation->add_option("--sizes", ab.sizes, "request sizes in GPUs, comma-separated")->delimiter(',')->capture_default_str();
  ablation->add_option("--size-weights", ab.sizeWeights, "relative weight of each request size")->delimiter(',')->capture_default_str();
  bool noIndex = false;
  ablation->add_flag("--no-index", noIndex, "Decide with a full scan of every host instead of the placement index (same decisions, slower)");
  auto* latencyCmd = app.add_subcommand("latency", "Compose time against a simulated switch that takes --sim-latency-ms per call: one large "
                                                  "compose, and many small ones at once (engine, SQLite store, simulated switch)");
  bench::ComposeLatencyOptions cl;
  latencyCmd->add_option("--sim-latency-ms", cl.latencyMs, "Switch latency per call")->check(CLI::Range(0, 60'000))->capture_default_str();
  latencyCmd->add_option("--gpus", cl.gpus, "GPUs in the large compose (at most 16: one host's limit)")->check(CLI::Range(1, 16))->capture_default_str();
  latencyCmd->add_option("--concurrent", cl.concurrent, "Small composes started together, each on its own host")
      ->check(CLI::Range(1, 512))->capture_default_str();
  latencyCmd->add_option("--concurrent-gpus", cl.concurrentGpus, "GPUs in each small compose")->check(CLI::Range(1, 16))->capture_default_str();
  latencyCmd->add_flag("--expand,!--no-expand", cl.expand, "redfish: whether the emulated service offers $expand")->capture_default_str();
  latencyCmd->add_option("--fabric-poll-ms", cl.pollMs, "The engine's switch event poll interval (0: off; default: 1000 against Redfish, as yardd, else off)")
      ->check(CLI::Range(0, 3'600'000));
  latencyCmd->add_option("--driver", cl.driver,
                         "simulated; switchtec: the Switchtec driver against the PAX emulator (latency per MRPC command); redfish: the Redfish "
                         "driver against the Redfish emulator (latency per HTTP request); cxl: the CXL FM-API driver against Jackrabbit Labs' cse "
                         "behind a delaying proxy (latency per FM-API command)")
      ->check(CLI::IsMember({"simulated", "switchtec", "redfish", "cxl"}))->capture_default_str();
  latencyCmd->add_option("--repetitions", cl.repetitions, "Runs of each row (the median is printed)")->check(CLI::Range(1, 100))->capture_default_str();
  auto* reads = app.add_subcommand("reads", "Do reads stall writes? Compose latency on a large pool, idle and while readers fetch "
                                            "/metrics and the dashboard's API in a loop; what each read costs; a full device listing");
  bench::ReadLoadOptions rl;
  reads->add_option("--gpus", rl.gpus, "GPUs in the pool (generated as yardd --generate-gpus does)")->check(CLI::Range(64, 1'000'000))->capture_default_str();
  reads->add_option("--seconds", rl.seconds, "Length of each phase (idle, loaded)")->check(CLI::PositiveNumber)->capture_default_str();
  reads->add_option("--readers", rl.readers, "Reader threads, each fetching every --path in turn")->check(CLI::Range(0, 64))->capture_default_str();
  reads->add_option("--path", rl.paths, "Web endpoint paths the readers fetch")->capture_default_str();
  reads->add_option("--device-series", rl.deviceSeries, "/metrics' per-device family: auto (up to 10,000 devices), all, none")
      ->check(CLI::IsMember({"auto", "all", "none"}))
      ->capture_default_str();
  reads->add_option("--composed", rl.composed, "Systems of 8 GPUs composed before measuring")->check(CLI::Range(0, 100'000))->capture_default_str();
  auto* queueCmd = app.add_subcommand("queue", "How fast freed capacity reaches the queue: a full pool, a queue of waiting requests, "
                                              "then decompose one system at a time and time the queued request bound on what it freed");
  bench::QueueBenchOptions qb;
  queueCmd->add_option("--gpus", qb.gpus, "GPUs in the pool (8 per host)")->check(CLI::Range(64, 1'000'000))->capture_default_str();
  queueCmd->add_option("--queued", qb.queued, "Requests kept waiting")->check(CLI::Range(1, 100'000))->capture_default_str();
  queueCmd->add_option("--rounds", qb.rounds, "Decomposes (each frees one host's 8 GPUs)")->check(CLI::Range(1, 100'000))->capture_default_str();
  auto* idleCmd = app.add_subcommand("idle", "What idle reclaim's activity sampling costs: a full pool on simulated hosts, rounds of "
                                            "sampling, and a compose probe alone and while sampling runs back to back");
  bench::IdleBenchOptions ib;
  idleCmd->add_option("--gpus", ib.gpus, "GPUs in the pool (8 per host)")->check(CLI::Range(64, 1'000'000))->capture_default_str();
  idleCmd->add_option("--rounds", ib.rounds, "Timed sampling rounds")->check(CLI::Range(1, 100'000))->capture_default_str();
  idleCmd->add_option("--seconds", ib.seconds, "Each phase of the compose probe")->check(CLI::PositiveNumber)->capture_default_str();
  auto* strandCmd = app.add_subcommand("nic-stranding", "How often GPUs placed alone strand a switch's NICs: the locality-aware profile against "
                                                       "the same profile blind to NICs, on a synthetic mix (half the switches carry NICs)");
  bench::StrandingOptions sb;
  strandCmd->add_option("--profile", sb.profile, "placement profile")->capture_default_str();
  strandCmd->add_option("--gpus", sb.gpus, "GPUs in the pool")->check(CLI::Range(32, 1'000'000))->capture_default_str();
  strandCmd->add_option("--load", sb.load, "offered GPU load")->check(CLI::Range(0.05, 2.0))->capture_default_str();
  strandCmd->add_option("--with-nic-share", sb.withNicShare, "share of requests that are 2 GPUs + 1 NIC under their switch")
      ->check(CLI::Range(0.01, 0.99))->capture_default_str();
  strandCmd->add_option("--nics-per-switch", sb.nicsPerSwitch, "NICs on each NIC-carrying switch")->check(CLI::Range(1, 16))->capture_default_str();
  strandCmd->add_option("--warmup", sb.warmup, "requests before measuring")->check(CLI::Range(0, 10'000'000))->capture_default_str();
  strandCmd->add_option("--requests", sb.requests, "measured requests per seed")->check(CLI::Range(1, 10'000'000))->capture_default_str();
  strandCmd->add_option("--seeds", sb.seeds, "seeds")->delimiter(',')->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (strandCmd->parsed()) return bench::benchNicStranding(sb);
  if (idleCmd->parsed()) return bench::benchIdleSampling(ib);
  if (queueCmd->parsed()) return bench::benchQueueAdmission(qb);
  if (reads->parsed()) return bench::benchReadLoad(rl);
  if (latencyCmd->parsed()) return bench::benchComposeLatency(cl);
  if (ablation->parsed()) {
    ab.index = !noIndex;
    return bench::benchTopologyAblation(ab);
  }
  if (packing->parsed()) {
    latency.scan = !indexOnly;
    return bench::benchDecisionLatency(latency);
  }
  return benchCompose(seconds, clients, durability, gpus, hostSide, composeNics, composeDrives, groupCommitTasks, composeStore);
}
