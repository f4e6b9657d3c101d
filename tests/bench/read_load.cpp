#include "tests/bench/read_load.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <thread>

#include "composer/api/authenticator.h"
#include "composer/api/switchyard_service.h"
#include "composer/engine/engine.h"
#include "composer/web/pool_metrics.h"
#include "composer/web/web_service.h"
#include "fabric/simulated_fabric.h"
#include "fabric/topology_generator.h"
#include "inventory/sqlite_store.h"
#include "tests/bench/latency_summary.h"
#include "tests/support/temp_dir.h"

namespace switchyard::bench {
namespace {

using Stopwatch = std::chrono::steady_clock;


// One GET through the web endpoint's handler (no socket: what the handler and the engine cost).
struct Fetched {
  int status = 0;
  std::size_t bytes = 0;
};
Fetched get(web::WebService& web, const std::string& target) {
  net::HttpRequest request{boost::beast::http::verb::get, target, 11};
  std::promise<Fetched> done;
  auto answer = done.get_future();
  web.handle(request, [&done](net::HttpResponse res) { done.set_value({static_cast<int>(res.result_int()), res.body().size()}); });
  return answer.get();
}

struct PathLane {
  std::vector<double> ms;
  std::size_t bytes = 0;
  int failures = 0;
};

// Compose + wait, then decompose + wait, round the hosts from `firstHost`, until `stop`; compose latencies in ms.
PathLane composeLoop(Engine& engine, int firstHost, int hosts, const std::atomic<bool>& stop, const std::string& prefix) {
  PathLane lane;
  for (int i = 0; !stop; ++i) {
    const std::string name = fmt::format("{}-{}", prefix, i);
    ComposeRequest request;
    request.name = name;
    request.placement.gpuCount = 4;
    request.placement.host = fmt::format("host{}", firstHost + i % hosts);
    const auto t0 = Stopwatch::now();
    auto op = engine.blocking().compose(Caller::local(), request);
    auto done = op ? engine.waitOperation(op->id, std::chrono::seconds(30)) : Result<Operation>(std::unexpected(op.error()));
    if (!done || done->state != OperationState::kSucceeded) {
      ++lane.failures;
      if (lane.failures == 1) fmt::print(stderr, "compose failed: {}\n", done ? done->error : done.error().message);
      continue;
    }
    lane.ms.push_back(msSince(t0));
    auto d = engine.blocking().decompose(Caller::local(), name);
    if (!d || !engine.waitOperation(d->id, std::chrono::seconds(30))) ++lane.failures;
  }
  return lane;
}

void printRow(const std::string& phase, const std::string& what, const PathLane& lane, double seconds) {
  if (lane.ms.empty()) {
    fmt::print("{:<8} {:<36} {:>7} (none completed; {} failed)\n", phase, what, 0, lane.failures);
    return;
  }
  const auto p = summarize(lane.ms);
  fmt::print("{:<8} {:<36} {:>7} {:>8.1f} {:>9.2f} {:>9.2f} {:>9.2f} {:>11} {:>6}\n", phase, what, lane.ms.size(),
             static_cast<double>(lane.ms.size()) / seconds, p.p50, p.p99, p.max,
             lane.bytes == 0 ? std::string("-") : fmt::format("{:.1f} KB", static_cast<double>(lane.bytes) / static_cast<double>(lane.ms.size()) / 1000.0),
             lane.failures);
}

}  // namespace

int benchReadLoad(const ReadLoadOptions& o) {
  spdlog::set_level(spdlog::level::warn);
  testing::TempDir dir;
  SystemClock clock;
  TopologyShape shape;  // as yardd --generate-gpus builds it
  shape.totalGpus = o.gpus;
  shape.gpusPerSwitch = 16;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = 8;
  const Topology topology = generateTopology(shape);
  const int hosts = static_cast<int>(topology.hosts.size());
  auto fabric = std::move(*SimulatedFabric::create(topology, clock, {}));
  auto store = SqliteStore::open(dir / "yard.db", Durability::kNormal);
  if (!store) {
    fmt::print(stderr, "error: {}\n", store.error().message);
    return 1;
  }
  auto metrics = std::make_shared<metrics::EngineMetrics>();
  Engine engine(*fabric, **store, clock, {.fabricPollInterval = std::chrono::milliseconds(0), .metrics = metrics});
  const auto startedAt = Stopwatch::now();
  if (auto r = engine.start(); !r) {
    fmt::print(stderr, "error: {}\n", r.error().message);
    return 1;
  }
  fmt::print("pool: {} GPUs, {} hosts, {} switches; engine started in {:.0f} ms\n", topology.devices.size(), hosts, topology.switches.size(),
             msSince(startedAt));
  // Background systems on the upper hosts; the measured composes cycle over the first 64.
  const int measuredHosts = std::min(64, hosts / 2);
  const auto fillAt = Stopwatch::now();
  for (int i = 0; i < std::min(o.composed, hosts - measuredHosts); ++i) {
    ComposeRequest r;
    r.name = fmt::format("background-{}", i);
    r.placement.gpuCount = 8;
    r.placement.host = fmt::format("host{}", hosts - 1 - i);
    auto op = engine.blocking().compose(Caller::local(), r);
    if (op) (void)engine.waitOperation(op->id, std::chrono::seconds(30));
  }
  fmt::print("composed {} background systems in {:.0f} ms\n\n", std::min(o.composed, hosts - measuredHosts), msSince(fillAt));

  const auto series = web::parseDeviceSeries(o.deviceSeries);
  if (!series) {
    fmt::print(stderr, "error: --device-series: auto, all or none\n");
    return 1;
  }
  web::WebService web(engine, metrics.get(), {}, nullptr, *series);
  fmt::print("{:<8} {:<36} {:>7} {:>8} {:>9} {:>9} {:>9} {:>11} {:>6}\n", "phase", "what", "count", "per s", "p50 ms", "p99 ms", "max ms", "size",
             "failed");
  // What one read costs with nothing else running: each path, and the capacity query /metrics makes.
  for (const auto& path : o.paths) {
    PathLane lane;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Stopwatch::now();
      const Fetched f = get(web, path);
      lane.ms.push_back(msSince(t0));
      lane.bytes += f.bytes;
      if (f.status != 200) ++lane.failures;
    }
    printRow("idle", "GET " + path, lane, 1);
  }
  {
    PathLane lane;
    std::vector<MigProfile> profiles(kMigProfiles.begin(), kMigProfiles.end());
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Stopwatch::now();
      if (!engine.reads().capacity(defaultShapes(), profiles, web::kReportedShares)) ++lane.failures;
      lane.ms.push_back(msSince(t0));
    }
    printRow("idle", "capacity (as /metrics)", lane, 1);
  }
  // Idle: composes alone.
  {
    std::atomic<bool> stop{false};
    auto composer = std::async(std::launch::async, [&] { return composeLoop(engine, 0, measuredHosts, stop, "idle"); });
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    stop = true;
    printRow("idle", "compose (4 GPUs)", composer.get(), o.seconds);
  }
  // Loaded: the same composes while readers fetch every path in turn.
  {
    std::atomic<bool> stop{false};
    auto composer = std::async(std::launch::async, [&] { return composeLoop(engine, 0, measuredHosts, stop, "loaded"); });
    std::vector<std::future<std::map<std::string, PathLane>>> readers;
    for (int r = 0; r < o.readers; ++r)
      readers.push_back(std::async(std::launch::async, [&] {
        std::map<std::string, PathLane> lanes;
        for (std::size_t i = 0; !stop; ++i) {
          const std::string& path = o.paths[i % o.paths.size()];
          const auto t0 = Stopwatch::now();
          const Fetched f = get(web, path);
          PathLane& lane = lanes[path];
          if (f.status != 200) {
            ++lane.failures;
            continue;
          }
          lane.ms.push_back(msSince(t0));
          lane.bytes += f.bytes;
        }
        return lanes;
      }));
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    stop = true;
    printRow("loaded", "compose (4 GPUs)", composer.get(), o.seconds);
    std::map<std::string, PathLane> all;
    for (auto& f : readers)
      for (auto& [path, lane] : f.get()) {
        PathLane& into = all[path];
        into.ms.insert(into.ms.end(), lane.ms.begin(), lane.ms.end());
        into.bytes += lane.bytes;
        into.failures += lane.failures;
      }
    for (const auto& [path, lane] : all) printRow("loaded", "GET " + path, lane, o.seconds);
  }
  // A full device listing through gRPC, page by page as yardctl asks for it.
  {
    Authenticator open(nullptr);
    SwitchyardService service(engine, open);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    builder.SetMaxSendMessageSize(-1);
    auto server = builder.BuildAndStart();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    auto stub = v1::Switchyard::NewStub(grpc::CreateCustomChannel(fmt::format("127.0.0.1:{}", port), grpc::InsecureChannelCredentials(), args));
    PathLane lane;
    for (int run = 0; run < 3; ++run) {
      const auto t0 = Stopwatch::now();
      std::size_t listed = 0;
      v1::ListDevicesRequest request;
      for (;;) {
        grpc::ClientContext ctx;
        v1::ListDevicesResponse page;
        if (!stub->ListDevices(&ctx, request, &page).ok()) {
          ++lane.failures;
          break;
        }
        listed += static_cast<std::size_t>(page.devices_size());
        lane.bytes += page.ByteSizeLong();
        if (page.next_page_token().empty()) break;
        request.set_page_token(page.next_page_token());
      }
      lane.ms.push_back(msSince(t0));
      if (listed != topology.devices.size()) ++lane.failures;
    }
    printRow("idle", "list every device", lane, 1);
    server->Shutdown(std::chrono::system_clock::now());
  }
  engine.stop(std::chrono::seconds(5));
  fmt::print("\npeak RSS {} MiB\n", peakRssKiB() / 1024);
  return 0;
}

}  // namespace switchyard::bench
