#include "composer/packing/packing.h"

#include "composer/packing/composable_model.h"
#include "composer/packing/gpu_instances.h"
#include "composer/packing/placement_index.h"
#include "composer/packing/companions.h"

#include <fmt/format.h>

#include <algorithm>

namespace switchyard {

std::size_t unexplainedHosts(const PlacementDecision& d) {
  std::size_t hosts = 0;
  for (const auto& u : d.unexplained) hosts += u.hosts;
  return hosts;
}

std::string listCandidates(const PlacementDecision& d) {
  std::string out;
  for (const auto& c : d.candidates) out += fmt::format("\n  {}: {}", c.hostId, c.reason);
  if (d.unexplained.empty()) return out;
  std::string by;
  for (const auto& u : d.unexplained)
    by += fmt::format("{}{} {}{}", by.empty() ? "" : ", ", u.hosts, by.empty() ? "rejected by " : "by ", u.rejectedBy);
  return out + fmt::format("\n  ... and {} more host(s): {} (`yardctl plan --explain` lists every host)", unexplainedHosts(d), by);
}

std::string_view toString(PeerToPeer v) {
  switch (v) {
    case PeerToPeer::kRequired: return "required";
    case PeerToPeer::kPreferred: return "preferred";
    case PeerToPeer::kNone: return "none";
  }
  return "?";
}

std::optional<PeerToPeer> parsePeerToPeer(std::string_view s) {
  if (s == "required") return PeerToPeer::kRequired;
  if (s == "preferred" || s.empty()) return PeerToPeer::kPreferred;
  if (s == "none") return PeerToPeer::kNone;
  return std::nullopt;
}

namespace {

std::vector<PlacedDevice> materialize(const Pool& pool, const DevicePlan& plan, EligibleDevices& eligible) {
  std::vector<PlacedDevice> out;
  for (const auto& p : plan.parts) {
    const auto& from = p.devices.empty() ? eligible.devices(p.switchIndex) : p.devices;
    for (std::size_t i = 0; i < p.take; ++i)
      out.push_back({pool.devices()[static_cast<std::size_t>(from[i])].id, pool.switches()[static_cast<std::size_t>(p.switchIndex)].id,
                     p.port->portId});
  }
  return out;
}

PlacementDecision placeExplicit(const Pool& pool, const PlacementRequest& r) {
  PlacementDecision out;
  const int hi = pool.hostIndex(*r.host);
  const PoolHost& host = pool.hosts()[static_cast<std::size_t>(hi)];
  if (host.silent) {
    out.error = Error{Code::kUnavailable, fmt::format("host '{}': its yard-agent is silent, so nothing can be attached to it now (see `yardctl agents`)", host.id)};
    return out;
  }
  if (host.inSystem && !r.hostMayHaveSystem) {
    out.error = Error{Code::kFailedPrecondition, fmt::format("host '{}' already serves a composed system (use attach to grow it)", host.id)};
    return out;
  }
  if (host.maxDevices - host.attachedDevices < static_cast<int>(r.devices.size())) {
    out.error = Error{Code::kResourceExhausted, fmt::format("host '{}' device limit: {} of {} attached, needs room for {}", host.id,
                                                            host.attachedDevices, host.maxDevices, r.devices.size())};
    return out;
  }
  Placement p{host.id, {}, {}};
  for (const auto& id : r.devices) {
    const PoolDevice& d = pool.devices()[static_cast<std::size_t>(pool.deviceIndex(id))];
    if (!d.free) {
      out.error = Error{Code::kFailedPrecondition, fmt::format("device '{}' is busy (in a system or being changed)", id)};
      return out;
    }
    const PoolHostPort* port = portInto(host, d.switchIndex);
    if (!port) port = portIntoFabric(pool, host, pool.switches()[static_cast<std::size_t>(d.switchIndex)].fabric);
    if (!port) {
      out.error = Error{Code::kFailedPrecondition, fmt::format("device '{}' is in a fabric host '{}' is not cabled to", id, host.id)};
      return out;
    }
    p.devices.push_back({d.id, pool.switches()[static_cast<std::size_t>(d.switchIndex)].id, port->portId});
  }
  p.detail = fmt::format("{} device(s) chosen by the caller", p.devices.size());
  p.explanation = fmt::format("{}: {}", host.id, p.detail);
  out.candidates.push_back({host.id, true, p.explanation});
  out.placement = std::move(p);
  return out;
}

}  // namespace

Result<void> validatePlacementRequest(const Pool& pool, const PlacementRequest& r) {
  if (!r.gpuInstances.empty()) {
    if (!r.devices.empty()) return fail(Code::kInvalidArgument, "ask for MIG instances or for explicit devices, not both");
    if (!r.boundInstances.empty() && !r.host) return fail(Code::kInvalidArgument, "partly used GPUs belong to a host: name it");
    if (r.gpuInstances.size() > 64) return fail(Code::kInvalidArgument, fmt::format("at most 64 MIG instances per request (got {})", r.gpuInstances.size()));
  } else if (r.devices.empty()) {
    if (r.gpuCount < 0 || (r.gpuCount == 0 && r.pooledMemoryGiB <= 0 && r.endpoints.empty()))
      return fail(Code::kInvalidArgument,
                  fmt::format("gpu count must be at least 1 (got {}), or ask for pooled memory, drives or NICs", r.gpuCount));
    if (r.gpuCount > pool.gpuCount())
      return fail(Code::kResourceExhausted, fmt::format("asked for {} GPUs but the whole pool has {}", r.gpuCount, pool.gpuCount()));
  } else {
    if (!r.host) return fail(Code::kInvalidArgument, "explicit devices need a host");
    for (std::size_t i = 0; i < r.devices.size(); ++i) {
      if (pool.deviceIndex(r.devices[i]) < 0) return fail(Code::kNotFound, fmt::format("no device '{}'", r.devices[i]));
      for (std::size_t j = 0; j < i; ++j)
        if (r.devices[i] == r.devices[j]) return fail(Code::kInvalidArgument, fmt::format("device '{}' is listed twice", r.devices[i]));
    }
  }
  if (r.minMemoryGiB < 0) return fail(Code::kInvalidArgument, "minimum memory must be >= 0");
  if (r.pooledMemoryGiB < 0) return fail(Code::kInvalidArgument, "pooled memory must be >= 0 GiB");
  if (auto v = validateEndpoints(pool, r.endpoints); !v) return v;
  if (r.host && pool.hostIndex(*r.host) < 0) return fail(Code::kNotFound, fmt::format("no host '{}'", *r.host));
  if (!r.model.empty() && !std::binary_search(pool.gpuModels().begin(), pool.gpuModels().end(), r.model)) {
    // Never fits, whatever frees: say what there is rather than why each host refuses.
    std::string hint;
    const auto lower = [](std::string text) {
      std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return text;
    };
    for (const auto& m : pool.gpuModels())
      if (lower(m) == lower(r.model)) hint = fmt::format(" (models match exactly: did you mean '{}'?)", m);
    return fail(Code::kInvalidArgument,
                fmt::format("no GPU in the pool is a '{}'{}; the pool has: {}", r.model, hint,
                            pool.gpuModels().empty() ? std::string("no GPUs") : fmt::format("{}", fmt::join(pool.gpuModels(), ", "))));
  }
  return {};
}

PlacementDecision place(const Pool& pool, const PlacementRequest& r) { return place(defaultComposableScheduler(), pool, r); }

namespace {

// MIG instances: fill the system's partly used GPUs, then place the fresh GPUs still needed as whole
// MIG-capable GPUs with the scheduler, and carve them.
PlacementDecision placeInstances(const ComposableScheduler& scheduler, const Pool& pool, const PlacementRequest& r, PlacementIndex* index) {
  const InstancePlan plan = planGpuInstances(r.boundInstances, r.gpuInstances);
  std::string what = fmt::format("{} MIG instance(s) ({})", r.gpuInstances.size(), describe(r.gpuInstances));
  std::string filled = plan.onBound.empty() ? "" : fmt::format("{} on partly used GPUs", plan.onBound.size());
  PlacementDecision out;
  Placement placement;
  std::string fresh;
  if (!plan.onFresh.empty()) {
    PlacementRequest whole = r;
    whole.gpuInstances.clear();
    whole.gpuCount = static_cast<int>(plan.onFresh.size());
    whole.migCapable = true;
    out = place(scheduler, pool, whole, index);
    if (!out.placement) {
      if (out.error) out.error->message = fmt::format("{} need {} fresh MIG-capable GPU(s){}; {}", what, plan.onFresh.size(),
                                                      filled.empty() ? "" : " after " + filled, out.error->message);
      return out;
    }
    placement = std::move(*out.placement);
    fresh = placement.detail;
    for (std::size_t g = 0; g < plan.onFresh.size(); ++g)
      for (const auto& i : plan.onFresh[g]) placement.gpuInstances.push_back({placement.devices[g].deviceId, i.profile, i.start});
  } else {
    placement.hostId = *r.host;  // only an attach has partly used GPUs to fill
    out.candidates.push_back({placement.hostId, true, filled});
  }
  for (const auto& i : plan.onBound) placement.gpuInstances.push_back(i);
  placement.detail = fmt::format("{} -> {}{}{}", what, filled.empty() ? "" : filled, !filled.empty() && !plan.onFresh.empty() ? ", " : "",
                                 plan.onFresh.empty() ? "" : fmt::format("{} fresh GPU(s): {}", plan.onFresh.size(), fresh));
  placement.explanation = fmt::format("{}: {}", placement.hostId, placement.detail);
  out.placement = std::move(placement);
  return out;
}

}  // namespace

PlacementDecision place(const ComposableScheduler& scheduler, const Pool& pool, const PlacementRequest& r, PlacementIndex* index) {
  PlacementDecision out;
  if (auto v = validatePlacementRequest(pool, r); !v) {
    out.error = v.error();
    return out;
  }
  if (wantsCompanions(r)) return placeWithCompanions(scheduler, pool, r, index);
  if (!r.gpuInstances.empty()) return placeInstances(scheduler, pool, r, index);
  if (!r.devices.empty()) return placeExplicit(pool, r);

  placement::Decision d = index ? index->schedule(scheduler, pool, r) : scheduler.schedule(pool, r, r.explain);
  const auto n = static_cast<std::size_t>(r.gpuCount);
  const DevicePlans* plans = d.state.find<DevicePlans>();
  for (const auto& diag : d.diagnoses) {
    std::string reason = diag.reason;
    if (diag.feasible && plans) reason = summarizePlan(pool, *plans->find(pool.hostIndex(diag.candidate)), n);
    out.candidates.push_back({diag.candidate, diag.feasible, std::move(reason)});
  }
  out.unexplained = std::move(d.unexplained);
  if (d.status.kind == placement::Status::kError) {
    out.error = Error{Code::kInternal, fmt::format("placement profile '{}' failed: {}", scheduler.profile().name, d.status.reason)};
    return out;
  }
  if (!d.chosen) {
    std::string why = fmt::format("no host can take {}{} GPU(s){}{}{}:", r.gpuCount, r.migCapable ? " MIG-capable" : "",
                                  r.model.empty() ? "" : fmt::format(" of model {}", r.model),
                                  r.minMemoryGiB ? fmt::format(" with >= {} GiB", r.minMemoryGiB) : "",
                                  r.peerToPeer == PeerToPeer::kRequired ? " under one switch" : "");
    why += listCandidates(out);
    if (out.candidates.empty()) why += " " + d.status.reason;
    out.error = Error{Code::kResourceExhausted, std::move(why)};
    return out;
  }
  const DevicePlan& plan = *plans->find(d.chosen->hostIndex);
  const HostId& hostId = pool.hosts()[static_cast<std::size_t>(d.chosen->hostIndex)].id;
  std::string detail = summarizePlan(pool, plan, n);
  std::string explanation = fmt::format("{}: {}", hostId, detail);
  if (r.explain) {
    const auto feasible = std::count_if(out.candidates.begin(), out.candidates.end(), [](auto& c) { return c.feasible; });
    explanation += fmt::format("; best of {} feasible host(s)", feasible);
  }
  out.placement = Placement{hostId, materialize(pool, plan, *d.state.find<EligibleDevices>()), {}, std::move(explanation), std::move(detail)};
  return out;
}

}  // namespace switchyard
