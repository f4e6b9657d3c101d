#include "cli/idle_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "composer/model/queue.h"

namespace yardctl {

namespace pb = switchyard::v1;

namespace {

// 2h05m, 45m, 30s.
std::string age(double seconds) {
  const auto s = static_cast<std::int64_t>(seconds);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m", s / 60);
  return fmt::format("{}s", s);
}

std::string processes(const pb::IdleGpu& g) {
  if (g.processes_size() == 0) return "-";
  std::string out;
  for (const auto& p : g.processes()) out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", p.pid(), p.name());
  return out;
}

std::string reclaim(const pb::IdleGpu& g) {
  if (!g.reclaim_blocked().empty()) return fmt::format("{}: not taken ({})", g.reclaim(), g.reclaim_blocked());
  if (!g.reclaim_at().empty()) return fmt::format("{}: at {}", g.reclaim(), g.reclaim_at());
  return g.reclaim();
}

}  // namespace

void printIdle(const pb::ListIdleResponse& r, std::ostream& out) {
  Table t({"DEVICE", "MODEL", "SYSTEM", "TENANT", "HOST", "IDLE", "GPU-H", "UTIL", "PROCESSES", "RECLAIM"});
  for (const auto& g : r.gpus()) {
    // In MIG mode the driver reads no utilization; a share's row says what part of the GPU the system holds.
    const std::string util = g.instances_size() > 0 ? "MIG" : fmt::format("{}%", g.utilization_percent());
    const std::string model = g.share() > 0 ? fmt::format("{} (share {:.3g})", g.model(), g.share()) : g.model();
    t.add({g.device_id(), model, g.system_name(), g.tenant(), g.host_id(), g.idle() ? age(g.idle_seconds()) : "busy",
           g.idle() || g.idle_gpu_hours() > 0 ? fmt::format("{:.2f}", g.idle_gpu_hours()) : "-", util, processes(g), reclaim(g)});
    for (const auto& i : g.instances()) {  // one row per MIG instance, under its GPU
      std::string procs = "-";
      for (const auto& p : i.processes()) procs = fmt::format("{}{} ({})", procs == "-" ? "" : procs + ", ", p.pid(), p.name());
      t.add({fmt::format("  {}@{}", g.device_id(), i.start()), "MIG " + i.profile(), "", "", "", i.idle() ? age(i.idle_seconds()) : "busy",
             i.idle() ? fmt::format("{:.2f}", i.idle_gpu_hours()) : "-", "", procs,
             i.reclaim_at().empty() ? "" : fmt::format("{}: at {}", g.reclaim(), i.reclaim_at())});
    }
  }
  t.print(out);
  out << fmt::format("{} GPU(s); {:.2f} GPU-hours idle so far\n", r.gpus_size(), r.idle_gpu_hours());
}

void addIdleCommand(CLI::App& app, ListIdleCall call, std::function<Format()> format, int& rc) {
  struct Flags {
    std::string idleFor = "30m";
    std::string tenant;
    bool all = false;
  };
  auto flags = std::make_shared<Flags>();
  auto* idle = app.add_subcommand("idle",
                                  "Attached GPUs nothing has used for a while (no process, utilization at most yardd's busy threshold, "
                                  "as the hosts' agents report it), longest idle first, with the GPU-hours the idle stretch cost and "
                                  "when the system's reclaim policy takes each back. A GPU in MIG mode lists its instances under it: "
                                  "one with nothing running in it is idle, and goes back on its own while a sibling works");
  idle->add_option("--for", flags->idleFor, "Idle at least this long (90s, 30m, 8h; 0s: every idle GPU)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) {
            return v == "0s" || v == "0" || switchyard::parseDuration(v) ? std::string() : "'" + v + "' is not a duration such as 30m, 8h or 0s";
          },
          "DURATION"));
  idle->add_option("--tenant", flags->tenant, "Only this tenant's GPUs");
  idle->add_flag("--all", flags->all, "Every attached GPU its host reports, busy ones too");
  idle->footer("A system chooses its policy with labels at compose: --label reclaim-idle-after=30m (or never) and "
               "--label reclaim-mode=detach (default dry-run: only a reclaim.would-detach event). Without labels the tenant's "
               "policy in the identities file applies, then yardd's --reclaim-idle-after.");
  idle->callback([flags, call = std::move(call), format = std::move(format), &rc] {
    pb::ListIdleRequest req;
    const auto d = switchyard::parseDuration(flags->idleFor);
    req.set_idle_for_seconds(d ? std::chrono::duration_cast<std::chrono::seconds>(*d).count() : 0);
    req.set_include_busy(flags->all);
    req.set_tenant(flags->tenant);
    pb::ListIdleResponse r;
    if ((rc = call(req, r)) != 0) return;
    if (format() == Format::kJson)
      std::cout << toJson(r) << "\n";
    else
      printIdle(r, std::cout);
  });
}

}  // namespace yardctl
