#include "tests/bench/queue_admission.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <random>

#include "composer/engine/engine.h"
#include "composer/metrics/engine_metrics.h"
#include "composer/metrics/exposition.h"
#include "fabric/simulated_fabric.h"
#include "fabric/topology_generator.h"
#include "inventory/sqlite_store.h"
#include "tests/bench/latency_summary.h"
#include "tests/support/temp_dir.h"

namespace switchyard::bench {

namespace {

using Stopwatch = std::chrono::steady_clock;


}  // namespace

int benchQueueAdmission(const QueueBenchOptions& o) {
  spdlog::set_level(spdlog::level::warn);
  testing::TempDir dir;
  SystemClock clock;
  TopologyShape shape;
  shape.totalGpus = o.gpus;
  shape.gpusPerSwitch = 16;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = 8;  // 8 GPUs a host: a pool of whole 8-GPU systems
  auto fabric = SimulatedFabric::create(generateTopology(shape), clock, {});
  auto store = SqliteStore::open(dir / "yard.db");
  if (!fabric || !store) {
    fmt::print(stderr, "error: cannot create the switch or the store\n");
    return 1;
  }
  auto metrics = std::make_shared<metrics::EngineMetrics>();
  EngineOptions options{.fabricPollInterval = std::chrono::milliseconds(0), .reconcileInterval = std::chrono::milliseconds(0)};
  options.metrics = metrics;
  options.maxQueuedPerTenant = static_cast<std::size_t>(o.queued) * 2;
  Engine engine(**fabric, **store, clock, options);
  if (auto r = engine.start(); !r) {
    fmt::print(stderr, "error: {}\n", r.error().message);
    return 1;
  }
  const auto fillStarted = Stopwatch::now();
  std::vector<std::string> live;
  for (int i = 0;; ++i) {
    ComposeRequest r{fmt::format("fill-{}", i), {}, {}};
    r.placement.gpuCount = 8;
    auto op = engine.blocking().compose(Caller::local(), r);
    if (!op) break;
    (void)engine.waitOperation(op->id, std::chrono::seconds(60));
    live.push_back(r.name);
  }
  fmt::print("pool: {} GPUs, {} 8-GPU systems composed in {:.1f} s; nothing free\n", o.gpus, live.size(), msSince(fillStarted) / 1000);

  static const char* kClasses[] = {"production", "batch", "batch", "spot"};
  static const int kSizes[] = {1, 2, 4, 8};
  int next = 0;
  std::mt19937_64 rng(42);
  auto enqueue = [&] {
    ComposeRequest r{fmt::format("q-{}", next), {}, {}};
    r.placement.gpuCount = kSizes[next % 4];
    r.priorityClass = kClasses[(next / 4) % 4];
    r.queue = true;
    ++next;
    auto op = engine.blocking().compose(Caller::local(), r);
    if (!op || op->state != OperationState::kQueued) {
      fmt::print(stderr, "error: {} was not queued: {}\n", r.name, op ? op->explanation : op.error().message);
      return false;
    }
    return true;
  };
  const auto queueStarted = Stopwatch::now();
  for (int i = 0; i < o.queued; ++i)
    if (!enqueue()) return 1;
  const double enqueueMs = msSince(queueStarted);
  fmt::print("queue: {} requests (1/2/4/8 GPUs; production, batch, spot) queued in {:.0f} ms ({:.2f} ms each)\n", o.queued, enqueueMs,
             enqueueMs / o.queued);

  auto stream = engine.blocking().subscribe().value();
  std::vector<double> admission, endToEnd;
  int admitted = 0;
  for (int round = 0; round < o.rounds && !live.empty(); ++round) {
    const std::size_t pick = static_cast<std::size_t>(rng() % live.size());
    const std::string victim = live[pick];
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
    const auto t0 = Stopwatch::now();
    auto op = engine.blocking().decompose(Caller::local(), victim);
    if (!op) {
      fmt::print(stderr, "error: decompose {}: {}\n", victim, op.error().message);
      return 1;
    }
    auto done = engine.waitOperation(op->id, std::chrono::seconds(60));
    // The admitted request: the queue.admitted event that followed the decompose.
    OperationId admittedOp;
    while (auto e = stream->next(std::chrono::seconds(5))) {
      if (e->type == "queue.admitted") {
        admittedOp = e->subject;
        break;
      }
    }
    if (admittedOp.empty()) continue;  // what it freed fit nothing queued (the head may need more than one host has)
    auto bound = engine.waitOperation(admittedOp, std::chrono::seconds(60));
    endToEnd.push_back(msSince(t0));
    if (!bound || !done) continue;
    Timestamp bindDone = 0;
    for (const auto& s : bound->steps)
      if (s.kind == "bind") bindDone = s.finishedAt;
    admission.push_back(static_cast<double>(bindDone - done->updatedAt) / 1e6);
    ++admitted;
    live.push_back(engine.reads().getSystem(bound->systemId)->name);
    if (!enqueue()) return 1;
  }
  if (admission.empty()) {
    fmt::print(stderr, "error: nothing was admitted\n");
    return 1;
  }
  const auto a = summarize(admission);
  const auto e = summarize(endToEnd);
  fmt::print("\n{:<58} {:>9} {:>9} {:>9}\n", "", "p50 ms", "p99 ms", "max ms");
  fmt::print("{:<58} {:>9.2f} {:>9.2f} {:>9.2f}\n", "admission: decompose ended -> queued request bound", a.p50, a.p99, a.max);
  fmt::print("{:<58} {:>9.2f} {:>9.2f} {:>9.2f}\n", "decompose called -> queued request bound", e.p50, e.p99, e.max);
  const auto view = engine.reads().view();
  fmt::print("\n{} round(s), {} admitted, {} still queued at the end; peak RSS {} MiB\n", o.rounds, admitted,
             view && view->queue ? view->queue->size() : 0, peakRssKiB() / 1024);
  // The admission passes' own cost (every pass: those that admitted and those that found nothing), from the
  // engine's histogram: its _sum over its _count.
  metrics::ExpositionWriter w;
  metrics->queuePassSeconds.write(w);
  double sum = 0, count = 0;
  for (std::size_t at = 0; at < w.text().size();) {
    const auto end = w.text().find('\n', at);
    const std::string line = w.text().substr(at, end - at);
    if (line.rfind("switchyard_queue_pass_duration_seconds_sum", 0) == 0) sum = std::stod(line.substr(line.rfind(' ') + 1));
    if (line.rfind("switchyard_queue_pass_duration_seconds_count", 0) == 0) count = std::stod(line.substr(line.rfind(' ') + 1));
    at = end == std::string::npos ? w.text().size() : end + 1;
  }
  if (count > 0) fmt::print("admission passes: {:.0f}, {:.3f} ms each on average\n", count, sum / count * 1e3);
  engine.stop(std::chrono::seconds(5));
  return 0;
}

}  // namespace switchyard::bench
