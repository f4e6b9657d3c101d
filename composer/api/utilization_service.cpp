// The utilization loop's calls of SwitchyardService (issue 40): the queue, leases, usage accounting and
// idle GPUs. Everything here reads the published view or the operation log; changes go through the engine.
#include <fmt/format.h>

#include <boost/asio/post.hpp>

#include <map>
#include <set>
#include <tuple>

#include "composer/api/service_support.h"
#include "composer/model/access.h"

namespace switchyard {

grpc::ServerUnaryReactor* SwitchyardService::ListQueue(Context* ctx, const v1::ListQueueRequest* req, v1::ListQueueResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  // A tenant sees its own requests; positions stay those of the whole queue (how many wait ahead of it).
  return answerHere<std::vector<QueueEntry>>(
      ctx, [this] { return engine_.listQueue(); },
      [out, c = *caller, tenant = req->tenant()](const std::vector<QueueEntry>& entries) {
        for (const auto& e : entries)
          if (maySee(c, e.tenant) && (tenant.empty() || e.tenant == tenant)) toProto(e, *out->add_entries());
      });
}

grpc::ServerUnaryReactor* SwitchyardService::CancelQueued(Context* ctx, const v1::CancelQueuedRequest* req, v1::Operation* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->id().empty()) return finished(ctx, invalid("id: required (the queued operation's id, or its system's name)"));
  return answer<Operation>(
      ctx, [c = *caller, id = req->id()](EngineCore& core) { return core.cancelQueued(c, id); }, fillOperation(engine_, out));
}

grpc::ServerUnaryReactor* SwitchyardService::RenewLease(Context* ctx, const v1::RenewLeaseRequest* req, v1::System* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->system().empty()) return finished(ctx, invalid("system: required (id or name)"));
  if (req->lease_seconds() <= 0 || req->lease_seconds() > 10LL * 365 * 24 * 3600)
    return finished(ctx, invalid("lease_seconds: a positive number of seconds"));
  return answer<System>(
      ctx, [c = *caller, system = req->system(), s = req->lease_seconds()](EngineCore& core) { return core.renewLease(c, system, std::chrono::seconds(s)); },
      [this, out](const System& s) { toProto(s, *out, engine_.view().get()); });
}

grpc::ServerUnaryReactor* SwitchyardService::GetUsage(Context* ctx, const v1::GetUsageRequest* req, v1::UsageResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  Timestamp since = 0, until = 0;
  for (auto [text, field, name] : {std::tuple{&req->since(), &since, "since"}, std::tuple{&req->until(), &until, "until"}}) {
    if (text->empty()) continue;
    auto t = parseTimestamp(*text);
    if (!t) return finished(ctx, invalid(fmt::format("{}: '{}' is not an RFC 3339 UTC time such as 2026-11-01T00:00:00Z (or a date)", name, *text)));
    *field = *t;
  }
  const std::string by = req->by();
  if (!by.empty() && by != "tenant" && by != "system" && by != "model") return finished(ctx, invalid("by: tenant, system or model"));
  // The log is read on the control thread; the sums are made on a reply thread.
  auto* reactor = ctx->DefaultReactor();
  engine_.usage(*caller, since, until, [reactor, out, by](Result<UsageReport> report) {
    if (!report) return reactor->Finish(toGrpcStatus(report.error()));
    struct Sum {
      double seconds = 0;
      double idleSeconds = 0;
      double memoryGiBSeconds = 0;
      double deviceSeconds = 0;
      std::set<SystemId> systems;
      UsageRow first;
    };
    std::map<std::string, Sum> sums;
    double total = 0, totalIdle = 0, totalMemory = 0, totalDevices = 0;
    for (const auto& r : report->rows) {
      const std::string key = by == "tenant" ? r.tenant : by == "system" ? r.systemId : by == "model" ? r.model : r.tenant + "|" + r.systemId + "|" + r.model;
      Sum& s = sums[key];
      if (s.systems.empty()) s.first = r;
      s.seconds += r.gpuSeconds;
      s.idleSeconds += r.idleGpuSeconds;
      s.memoryGiBSeconds += r.memoryGiBSeconds;
      s.deviceSeconds += r.deviceSeconds;
      s.systems.insert(r.systemId);
      total += r.gpuSeconds;
      totalIdle += r.idleGpuSeconds;
      totalMemory += r.memoryGiBSeconds;
      totalDevices += r.deviceSeconds;
    }
    for (const auto& [key, s] : sums) {
      auto* row = out->add_rows();
      if (by.empty() || by == "tenant" || by == "system") row->set_tenant(s.first.tenant);
      if (by.empty() || by == "system") {
        row->set_system_id(s.first.systemId);
        row->set_system_name(s.first.systemName);
      }
      if (by.empty() || by == "model") row->set_model(s.first.model);
      row->set_gpu_hours(s.seconds / 3600.0);
      row->set_idle_gpu_hours(s.idleSeconds / 3600.0);
      row->set_memory_gib_hours(s.memoryGiBSeconds / 3600.0);
      row->set_device_hours(s.deviceSeconds / 3600.0);
      row->set_systems(static_cast<std::int32_t>(s.systems.size()));
    }
    out->set_since(formatTimestamp(report->since));
    out->set_until(formatTimestamp(report->until));
    if (report->historyFrom > 0) out->set_history_from(formatTimestamp(report->historyFrom));
    out->set_total_gpu_hours(total / 3600.0);
    out->set_total_idle_gpu_hours(totalIdle / 3600.0);
    out->set_total_memory_gib_hours(totalMemory / 3600.0);
    out->set_total_device_hours(totalDevices / 3600.0);
    reactor->Finish(grpc::Status::OK);
  });
  return reactor;
}

grpc::ServerUnaryReactor* SwitchyardService::ListIdle(Context* ctx, const v1::ListIdleRequest* req, v1::ListIdleResponse* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->idle_for_seconds() < 0 || req->idle_for_seconds() > 10LL * 365 * 24 * 3600)
    return finished(ctx, invalid("idle_for_seconds: 0 (every idle GPU) or a number of seconds"));
  const Duration minIdle = std::chrono::duration_cast<Duration>(std::chrono::seconds(req->idle_for_seconds()));
  const Timestamp now = engine_.now();
  return answerHere<std::vector<IdleGpu>>(
      ctx, [this, c = *caller, minIdle, busy = req->include_busy()] { return engine_.idleGpus(c, minIdle, busy); },
      [out, now, tenant = req->tenant()](const std::vector<IdleGpu>& gpus) {
        double total = 0;
        for (const auto& g : gpus) {
          if (!tenant.empty() && g.tenant != tenant) continue;
          toProto(g, now, *out->add_gpus());
          total += g.idleGpuHours(now);
        }
        out->set_idle_gpu_hours(total);
      });
}

}  // namespace switchyard
