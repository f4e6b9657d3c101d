// switchyard_soak: the real yardd under a steady mixed load for a given time (issue 24, item 5).
// N client threads compose (1-4 GPUs), attach, detach and decompose through gRPC, each waiting for its
// operation; every --interval seconds a row shows ops/s, latency percentiles of the interval, yardd's
// resident memory (VmRSS from /proc) and its database size. At the end it judges memory: the RSS of the
// last quarter may not exceed the first sample after the warm-up by more than --max-growth percent.
//   switchyard_soak --seconds 3600 --clients 16 --gpus 512      a long soak (docs/reliability.md)
//   switchyard_soak --seconds 60                                  the CI smoke
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "switchyard/v1/switchyard.grpc.pb.h"
#include "tests/bench/latency_summary.h"
#include "tests/support/daemon_process.h"
#include "tests/support/temp_dir.h"

namespace pb = switchyard::v1;
using namespace std::chrono_literals;
using switchyard::bench::summarize;

namespace {

long rssKiB(pid_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

struct Totals {
  std::mutex mutex;
  std::vector<double> latenciesUs;  // this interval
  long ops = 0, refused = 0, failed = 0, errors = 0;
  std::string lastError;
};

// One client: a loop of mixed changes on systems of its own, each waited for.
void client(int id, const std::string& address, std::atomic<bool>& stop, Totals& totals) {
  auto stub = pb::Switchyard::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  std::mt19937_64 rng(static_cast<std::uint64_t>(id) * 7919 + 1);
  std::vector<std::string> mine;
  int counter = 0;
  while (!stop) {
    const int roll = static_cast<int>(rng() % 100);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 30s);
    pb::Operation op;
    grpc::Status s;
    std::string composed;
    const auto started = std::chrono::steady_clock::now();
    if (mine.empty() || (roll < 35 && mine.size() < 3)) {
      pb::ComposeRequest r;
      composed = fmt::format("soak-{}-{}", id, counter++);
      r.set_name(composed);
      r.mutable_gpus()->set_count(1 + static_cast<int>(rng() % 4));
      s = stub->Compose(&ctx, r, &op);
    } else {
      const std::string system = mine[rng() % mine.size()];
      if (roll < 55) {
        pb::AttachRequest r;
        r.set_system(system);
        r.mutable_gpus()->set_count(1);
        s = stub->Attach(&ctx, r, &op);
      } else if (roll < 75) {
        pb::GetSystemRequest g;
        g.set_system(system);
        pb::System sys;
        grpc::ClientContext getCtx;
        if (!stub->GetSystem(&getCtx, g, &sys).ok() || sys.bindings_size() < 2) continue;
        pb::DetachRequest r;
        r.set_system(system);
        r.add_device_ids(sys.bindings(static_cast<int>(rng() % static_cast<std::uint64_t>(sys.bindings_size()))).device_id());
        s = stub->Detach(&ctx, r, &op);
      } else {
        pb::DecomposeRequest r;
        r.set_system(system);
        s = stub->Decompose(&ctx, r, &op);
        if (s.ok()) std::erase(mine, system);
      }
    }
    bool ok = s.ok();
    if (ok) {
      pb::WaitOperationRequest w;
      w.set_id(op.id());
      w.set_timeout_ms(30'000);
      grpc::ClientContext waitCtx;
      waitCtx.set_deadline(std::chrono::system_clock::now() + 40s);
      pb::Operation done;
      s = stub->WaitOperation(&waitCtx, w, &done);
      ok = s.ok() && done.done();
      if (ok && !composed.empty() && done.state() == pb::OPERATION_STATE_SUCCEEDED) mine.push_back(composed);
      if (ok && done.state() == pb::OPERATION_STATE_FAILED) {
        std::lock_guard lock(totals.mutex);
        ++totals.failed;
      }
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count();
    std::lock_guard lock(totals.mutex);
    if (ok) {
      ++totals.ops;
      totals.latenciesUs.push_back(us);
    } else if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED || s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      ++totals.refused;  // the pool is full or the system busy: expected under load
    } else {
      ++totals.errors;
      totals.lastError = fmt::format("{}: {}", static_cast<int>(s.error_code()), s.error_message());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Soak: yardd under a steady mixed load, with ops/s, latency and memory over time (issue 24)"};
  std::string yardd = YARDD_PATH;
  int seconds = 60, clients = 8, gpus = 256, interval = 5, warmup = 10;
  double maxGrowth = 20;
  app.add_option("--yardd", yardd, "The yardd binary")->capture_default_str();
  app.add_option("--seconds", seconds, "How long to run")->check(CLI::Range(5, 7 * 86'400))->capture_default_str();
  app.add_option("--clients", clients, "Concurrent clients")->check(CLI::Range(1, 512))->capture_default_str();
  app.add_option("--gpus", gpus, "GPUs in the generated pool (16 per switch)")->check(CLI::Range(16, 100'000))->capture_default_str();
  app.add_option("--interval", interval, "Seconds per row")->check(CLI::Range(1, 3600))->capture_default_str();
  app.add_option("--warmup", warmup, "Seconds before the memory baseline is taken")->check(CLI::Range(0, 3600))->capture_default_str();
  app.add_option("--max-growth", maxGrowth, "Percent the RSS may grow after the warm-up")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  switchyard::testing::TempDir dir;
  switchyard::testing::DaemonProcess daemon(yardd, dir.path());
  daemon.setLogLevel("warn");
  if (!daemon.start({"--generate-gpus", std::to_string(gpus), "--sim-state", "none"})) {
    fmt::print(stderr, "yardd did not start:\n{}\n", daemon.log());
    return 1;
  }
  Totals totals;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) threads.emplace_back(client, i, daemon.address(), std::ref(stop), std::ref(totals));

  fmt::print("{:>6} {:>9} {:>9} {:>9} {:>9} {:>8} {:>7} {:>9} {:>9}\n", "t(s)", "ops/s", "p50(ms)", "p99(ms)", "refused", "failed", "errors",
             "RSS(MiB)", "db(MiB)");
  const auto begin = std::chrono::steady_clock::now();
  long baseline = 0, lateMax = 0, totalOps = 0, totalErrors = 0;
  for (int t = interval; t <= seconds; t += interval) {
    std::this_thread::sleep_until(begin + std::chrono::seconds(t));
    std::vector<double> lat;
    long ops, refused, failed, errors;
    {
      std::lock_guard lock(totals.mutex);
      lat.swap(totals.latenciesUs);
      ops = totals.ops, refused = totals.refused, failed = totals.failed, errors = totals.errors;
      totals.ops = totals.refused = totals.failed = totals.errors = 0;
    }
    totalOps += ops;
    totalErrors += errors;
    const long rss = rssKiB(daemon.pid());
    if (baseline == 0 && t >= warmup) baseline = rss;
    if (t > seconds * 3 / 4) lateMax = std::max(lateMax, rss);
    std::error_code ec;
    const auto db = std::filesystem::file_size(dir / "yard.db", ec) + std::filesystem::file_size(dir / "yard.db-wal", ec);
    const auto p = lat.empty() ? switchyard::bench::Percentiles{} : summarize(lat);
    fmt::print("{:>6} {:>9.0f} {:>9.2f} {:>9.2f} {:>9} {:>8} {:>7} {:>9.1f} {:>9.1f}\n", t, static_cast<double>(ops) / interval, p.p50 / 1000,
               p.p99 / 1000, refused, failed, errors, rss / 1024.0, static_cast<double>(db) / (1 << 20));
    std::fflush(stdout);
  }
  stop = true;
  for (auto& t : threads) t.join();
  const double growth = baseline > 0 ? 100.0 * static_cast<double>(lateMax - baseline) / static_cast<double>(baseline) : 0;
  fmt::print("soak: {} s, {} clients, {} operations, {} unexpected error(s){}; RSS {:.1f} MiB after warm-up, at most {:.1f} MiB in the "
             "last quarter ({:+.1f}%, limit {:+.0f}%)\n",
             seconds, clients, totalOps, totalErrors, totals.lastError.empty() ? "" : " (last: " + totals.lastError + ")", baseline / 1024.0,
             lateMax / 1024.0, growth, maxGrowth);
  daemon.kill(SIGTERM);
  return totalErrors == 0 && growth <= maxGrowth && totalOps > 0 ? 0 : 1;
}
