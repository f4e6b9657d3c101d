#include "composer/packing/companions.h"

#include <fmt/format.h>

#include <algorithm>

#include "composer/packing/composable_model.h"
#include "composer/packing/endpoint_choice.h"
#include "composer/packing/pooled_memory.h"

namespace switchyard {

Result<void> validateEndpoints(const Pool& pool, const std::vector<EndpointDemand>& endpoints) {
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    const EndpointDemand& d = endpoints[i];
    if (auto why = invalidDemand(d); !why.empty()) return fail(Code::kInvalidArgument, why);
    for (std::size_t j = 0; j < i; ++j)
      if (endpoints[j].kind == d.kind && endpoints[j].model == d.model)
        return fail(Code::kInvalidArgument, fmt::format("{}{} is asked for twice: give one count", toString(d.kind), d.model.empty() ? "" : " " + d.model));
    if (d.model.empty()) continue;
    // A model the pool has none of never fits: say what there is.
    std::vector<std::string> models;
    for (const auto& device : pool.devices())
      if (device.kind == d.kind && std::find(models.begin(), models.end(), device.model) == models.end()) models.push_back(device.model);
    if (std::find(models.begin(), models.end(), d.model) == models.end()) {
      std::sort(models.begin(), models.end());
      return fail(Code::kInvalidArgument, fmt::format("no {} in the pool is a '{}'; the pool has: {}", toString(d.kind), d.model,
                                                      models.empty() ? std::string("none") : fmt::format("{}", fmt::join(models, ", "))));
    }
  }
  return {};
}

namespace {

std::string sizeOf(const Pool& pool, const std::vector<int>& devices) {
  int gib = 0;
  for (const int i : devices) gib += pool.devices()[static_cast<std::size_t>(i)].memoryGiB;
  return fmt::format("{} GiB", gib);
}

// Adds the request's companions to a placement on its host; false (with `why`) when the host cannot have them.
bool addCompanions(const Pool& pool, Placement& p, const PlacementRequest& r, std::string& why) {
  const int hi = pool.hostIndex(p.hostId);
  const PoolHost& host = pool.hosts()[static_cast<std::size_t>(hi)];
  std::vector<DeviceId> taken;
  std::vector<int> gpuSwitches;
  for (const auto& d : p.devices) {
    taken.push_back(d.deviceId);
    const PoolDevice& device = pool.devices()[static_cast<std::size_t>(pool.deviceIndex(d.deviceId))];
    if (device.kind == DeviceKind::kGpu) gpuSwitches.push_back(device.switchIndex);
  }
  int slots = host.maxDevices - host.attachedDevices - static_cast<int>(p.devices.size());
  std::vector<PlacedDevice> added;
  std::vector<std::string> details;
  auto take = [&](const std::vector<int>& chosen) {
    for (const int i : chosen) {
      const PoolDevice& d = pool.devices()[static_cast<std::size_t>(i)];
      const PoolHostPort* port = portInto(host, d.switchIndex);
      if (!port) port = portIntoFabric(pool, host, pool.switches()[static_cast<std::size_t>(d.switchIndex)].fabric);
      added.push_back({d.id, pool.switches()[static_cast<std::size_t>(d.switchIndex)].id, port->portId});
      taken.push_back(d.id);
    }
    slots -= static_cast<int>(chosen.size());
  };
  if (r.pooledMemoryGiB > 0) {
    const auto chosen = choosePooledMemory(pool, hi, r.pooledMemoryGiB, slots, taken);
    if (!chosen) {
      why = fmt::format("{} GiB free there", reachableMemory(pool, hi, taken).gib);
      return false;
    }
    details.push_back(fmt::format("{} GiB pooled memory in {} device(s) ({})", r.pooledMemoryGiB, chosen->size(), sizeOf(pool, *chosen)));
    take(*chosen);
  }
  for (const auto& demand : r.endpoints) {
    std::string reached;
    const auto chosen = chooseEndpoints(pool, hi, gpuSwitches, demand, slots, taken, &reached);
    if (!chosen) {
      why = fmt::format("{}: {}", describe(demand), reached);
      return false;
    }
    std::vector<std::string> ids;
    int near = 0;
    for (const int i : *chosen) {
      ids.push_back(pool.devices()[static_cast<std::size_t>(i)].id);
      near += std::count(gpuSwitches.begin(), gpuSwitches.end(), pool.devices()[static_cast<std::size_t>(i)].switchIndex) > 0 ? 1 : 0;
    }
    details.push_back(fmt::format("{} {} ({}){}", chosen->size(), toString(demand.kind), fmt::join(ids, ", "),
                                  gpuSwitches.empty() ? "" : fmt::format(", {} under the GPUs' switches", near)));
    take(*chosen);
  }
  p.devices.insert(p.devices.end(), added.begin(), added.end());
  const std::string more = fmt::format("{}", fmt::join(details, "; "));
  p.detail = p.detail.empty() ? more : p.detail + "; " + more;
  p.explanation = fmt::format("{}: {}", p.hostId, p.detail);
  return true;
}

// Why a host does not reach enough of the companions (affinity set aside); empty when it may.
std::string shortOfReach(const Pool& pool, int hostIndex, const PlacementRequest& r) {
  std::vector<std::string> parts;
  if (r.pooledMemoryGiB > 0) {
    if (const int gib = reachableMemory(pool, hostIndex).gib; gib < r.pooledMemoryGiB) parts.push_back(fmt::format("{} GiB free there", gib));
  }
  for (const auto& d : r.endpoints)
    if (const int n = reachableEndpoints(pool, hostIndex, d); n < d.count) parts.push_back(fmt::format("{} {} free there", n, toString(d.kind)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string companionsAsked(const PlacementRequest& r) {
  std::vector<std::string> parts;
  if (r.pooledMemoryGiB > 0) parts.push_back(fmt::format("{} GiB of pooled memory", r.pooledMemoryGiB));
  if (!r.endpoints.empty()) parts.push_back(describe(r.endpoints));
  return fmt::format("{}", fmt::join(parts, " and "));
}

}  // namespace

PlacementDecision placeWithCompanions(const placement::Scheduler& scheduler, const Pool& pool, const PlacementRequest& r, PlacementIndex* index) {
  PlacementRequest rest = r;
  rest.pooledMemoryGiB = 0;
  rest.endpoints.clear();
  for (const auto& d : r.endpoints)
    if (d.affinity == Affinity::kSwitch) rest.besideGpus.push_back(d);
  const bool companionsOnly = r.gpuInstances.empty() && r.devices.empty() && r.gpuCount == 0 && r.gpuShareMilli == 0;
  PlacementDecision out;
  if (!companionsOnly) {
    out = place(scheduler, pool, rest, index);
    if (!out.placement) return out;
    std::string why;
    if (addCompanions(pool, *out.placement, r, why)) return out;
    const HostId first = out.placement->hostId;
    std::vector<std::string> reasons{fmt::format("{}: {}", first, why)};
    if (!r.host)
      for (std::size_t h = 0; h < pool.hosts().size(); ++h) {
        const PoolHost& host = pool.hosts()[h];
        if (host.id == first) continue;
        if (auto short_ = shortOfReach(pool, static_cast<int>(h), r); !short_.empty()) {
          reasons.push_back(fmt::format("{}: {}", host.id, short_));
          continue;
        }
        PlacementRequest pinned = rest;
        pinned.host = host.id;
        auto again = place(scheduler, pool, pinned, index);
        if (!again.placement) {
          reasons.push_back(fmt::format("{}: reaches them but cannot take the GPUs", host.id));
          continue;
        }
        if (addCompanions(pool, *again.placement, r, why)) return again;
        reasons.push_back(fmt::format("{}: {}", host.id, why));
      }
    out.placement.reset();
    std::string message = fmt::format("no host can take {} with the GPUs:", companionsAsked(r));
    for (const auto& reason : reasons) message += "\n  " + reason;
    out.error = Error{Code::kResourceExhausted, std::move(message)};
    return out;
  }
  std::optional<Placement> best;
  int bestLeft = 0;
  for (std::size_t h = 0; h < pool.hosts().size(); ++h) {
    const PoolHost& host = pool.hosts()[h];
    if (r.host && host.id != *r.host) continue;
    std::string reason;
    if (host.silent) reason = "its yard-agent is silent";
    else if (host.inSystem && !r.hostMayHaveSystem) reason = "serves a composed system";
    Placement p{host.id, {}, {}};
    if (reason.empty()) addCompanions(pool, p, r, reason);
    if (!reason.empty()) {
      out.candidates.push_back({host.id, false, std::move(reason)});
      continue;
    }
    int memory = 0;
    for (const auto& d : p.devices) {
      const PoolDevice& device = pool.devices()[static_cast<std::size_t>(pool.deviceIndex(d.deviceId))];
      if (device.kind == DeviceKind::kCxlMemory) memory += device.memoryGiB;
    }
    out.candidates.push_back({host.id, true, p.detail});
    if (!best || memory - r.pooledMemoryGiB < bestLeft) {
      bestLeft = memory - r.pooledMemoryGiB;
      best = std::move(p);
    }
  }
  if (!best) {
    std::string why = fmt::format("no host can take {}:", companionsAsked(r));
    for (const auto& c : out.candidates) why += fmt::format("\n  {}: {}", c.hostId, c.reason);
    out.error = Error{Code::kResourceExhausted, std::move(why)};
    return out;
  }
  out.placement = std::move(best);
  return out;
}

}  // namespace switchyard
