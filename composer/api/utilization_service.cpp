// The utilization loop's calls of SwitchyardService (issue 40): the queue, leases, usage accounting and
// idle GPUs. Everything here reads the published view or the operation log; changes go through the engine.
#include <fmt/format.h>

#include <boost/asio/post.hpp>

#include <map>
#include <set>
#include <tuple>

#include "composer/api/service_support.h"
#include "composer/engine/usage_groups.h"
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
  auto by = UsageGrouping::parse(req->by());
  if (!by) return finished(ctx, toGrpcStatus(by.error()));
  // The log is read on the engine's read pool; the sums are made on a reply thread.
  auto* reactor = ctx->DefaultReactor();
  engine_.usage(*caller, since, until, [reactor, out, by = *by](Result<UsageReport> report) {
    if (!report) return reactor->Finish(toGrpcStatus(report.error()));
    for (const auto& g : groupUsage(report->rows, by)) {
      auto* row = out->add_rows();
      row->set_tenant(g.tenant);
      row->set_system_id(g.systemId);
      row->set_system_name(g.systemName);
      row->set_model(g.model);
      row->mutable_labels()->insert(g.labels.begin(), g.labels.end());
      row->set_gpu_hours(g.gpuSeconds / 3600.0);
      row->set_idle_gpu_hours(g.idleGpuSeconds / 3600.0);
      row->set_memory_gib_hours(g.memoryGiBSeconds / 3600.0);
      row->set_device_hours(g.deviceSeconds / 3600.0);
      row->set_systems(static_cast<std::int32_t>(g.systems.size()));
    }
    const UsageTotals total = totalUsage(report->rows);
    out->set_since(formatTimestamp(report->since));
    out->set_until(formatTimestamp(report->until));
    if (report->historyFrom > 0) out->set_history_from(formatTimestamp(report->historyFrom));
    out->set_total_gpu_hours(total.gpuSeconds / 3600.0);
    out->set_total_idle_gpu_hours(total.idleGpuSeconds / 3600.0);
    out->set_total_memory_gib_hours(total.memoryGiBSeconds / 3600.0);
    out->set_total_device_hours(total.deviceSeconds / 3600.0);
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
