#include "composer/packing/companions.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "composer/packing/composable_model.h"
#include "composer/packing/endpoint_choice.h"
#include "composer/packing/pooled_memory.h"

namespace switchyard {

Result<void> validateEndpoints(const Pool& pool, const std::vector<EndpointDemand>& endpoints) {
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    const EndpointDemand& d = endpoints[i];
    if (auto why = invalidDemand(d); !why.empty()) return fail(Code::kInvalidArgument, why);
    for (std::size_t j = 0; j < i; ++j)
      if (sameKind(endpoints[j], d) && endpoints[j].model == d.model)
        return fail(Code::kInvalidArgument, fmt::format("{}{} is asked for twice: give one count", kindName(d), d.model.empty() ? "" : " " + d.model));
    if (d.model.empty()) continue;
    // A model the pool has none of never fits: say what there is.
    std::vector<std::string> models;
    for (const auto& device : pool.devices())
      if (device.kind == d.kind && device.deviceClass == d.deviceClass && std::find(models.begin(), models.end(), device.model) == models.end())
        models.push_back(device.model);
    if (std::find(models.begin(), models.end(), d.model) == models.end()) {
      std::sort(models.begin(), models.end());
      return fail(Code::kInvalidArgument, fmt::format("no {} in the pool is a '{}'; the pool has: {}", kindName(d), d.model,
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

// What the companions take on host `hostIndex` beside GPUs under `gpuSwitches` (one entry per GPU), within `slots`
// free device slots: pooled memory first, then each endpoint demand in order (device indices); none when the host
// cannot have them, then `why` (when asked) says what it has.
struct CompanionChoice {
  std::vector<int> memory;
  std::vector<std::vector<int>> endpoints;  // one per demand
};

std::optional<CompanionChoice> chooseCompanions(const Pool& pool, int hostIndex, const std::vector<int>& gpuSwitches, int slots, int memoryGiB,
                                                const std::vector<EndpointDemand>& endpoints, std::string* why) {
  CompanionChoice out;
  std::vector<DeviceId> taken;
  if (memoryGiB > 0) {
    auto chosen = choosePooledMemory(pool, hostIndex, memoryGiB, slots, taken);
    if (!chosen) {
      if (why) *why = fmt::format("{} GiB free there", reachableMemory(pool, hostIndex, taken).gib);
      return std::nullopt;
    }
    for (const int i : *chosen) taken.push_back(pool.devices()[static_cast<std::size_t>(i)].id);
    slots -= static_cast<int>(chosen->size());
    out.memory = std::move(*chosen);
  }
  for (const auto& demand : endpoints) {
    std::string reached;
    auto chosen = chooseEndpoints(pool, hostIndex, gpuSwitches, demand, slots, taken, why ? &reached : nullptr);
    if (!chosen) {
      if (why) *why = fmt::format("{}: {}", describe(demand), reached);
      return std::nullopt;
    }
    for (const int i : *chosen) taken.push_back(pool.devices()[static_cast<std::size_t>(i)].id);
    slots -= static_cast<int>(chosen->size());
    out.endpoints.push_back(std::move(*chosen));
  }
  return out;
}

// Adds the request's companions to a placement on its host; false (with `why`) when the host cannot have them.
bool addCompanions(const Pool& pool, Placement& p, const PlacementRequest& r, std::string& why) {
  const int hi = pool.hostIndex(p.hostId);
  const PoolHost& host = pool.hosts()[static_cast<std::size_t>(hi)];
  std::vector<int> gpuSwitches;
  for (const auto& d : p.devices) {
    const PoolDevice& device = pool.devices()[static_cast<std::size_t>(pool.deviceIndex(d.deviceId))];
    if (device.kind == DeviceKind::kGpu) gpuSwitches.push_back(device.switchIndex);
  }
  const int slots = host.maxDevices - host.attachedDevices - static_cast<int>(p.devices.size());
  const auto choice = chooseCompanions(pool, hi, gpuSwitches, slots, r.pooledMemoryGiB, r.endpoints, &why);
  if (!choice) return false;
  std::vector<std::string> details;
  auto take = [&](const std::vector<int>& chosen) {
    for (const int i : chosen) {
      const PoolDevice& d = pool.devices()[static_cast<std::size_t>(i)];
      const PoolHostPort* port = portInto(host, d.switchIndex);
      if (!port) port = portIntoFabric(pool, host, pool.switches()[static_cast<std::size_t>(d.switchIndex)].fabric);
      p.devices.push_back({d.id, pool.switches()[static_cast<std::size_t>(d.switchIndex)].id, port->portId});
    }
  };
  if (!choice->memory.empty()) {
    details.push_back(fmt::format("{} GiB pooled memory in {} device(s) ({})", r.pooledMemoryGiB, choice->memory.size(), sizeOf(pool, choice->memory)));
    take(choice->memory);
  }
  for (std::size_t k = 0; k < r.endpoints.size(); ++k) {
    const auto& chosen = choice->endpoints[k];
    std::vector<std::string> ids;
    int near = 0;
    for (const int i : chosen) {
      ids.push_back(pool.devices()[static_cast<std::size_t>(i)].id);
      near += std::count(gpuSwitches.begin(), gpuSwitches.end(), pool.devices()[static_cast<std::size_t>(i)].switchIndex) > 0 ? 1 : 0;
    }
    details.push_back(fmt::format("{} {} ({}){}", chosen.size(), kindName(r.endpoints[k]), fmt::join(ids, ", "),
                                  gpuSwitches.empty() ? "" : fmt::format(", {} under the GPUs' switches", near)));
    take(chosen);
  }
  const std::string more = fmt::format("{}", fmt::join(details, "; "));
  p.detail = p.detail.empty() ? more : p.detail + "; " + more;
  p.explanation = fmt::format("{}: {}", p.hostId, p.detail);
  return true;
}

// Whether the companions fit on the host beside GPUs under `gpuSwitches`, as chooseCompanions would find, without
// choosing: pooled memory is chosen (rare, and its count of devices depends on their sizes), endpoint demands are
// counted (endpointSupply), unless two ask for the same kind (then one may take what the other counted).
bool companionsFit(const Pool& pool, int hostIndex, const std::vector<int>& gpuSwitches, int slots, int memoryGiB,
                   const std::vector<EndpointDemand>& endpoints, std::string* why) {
  for (std::size_t i = 0; i < endpoints.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (sameKind(endpoints[i], endpoints[j])) return chooseCompanions(pool, hostIndex, gpuSwitches, slots, memoryGiB, endpoints, why).has_value();
  if (memoryGiB > 0) {
    const auto chosen = choosePooledMemory(pool, hostIndex, memoryGiB, slots, {});
    if (!chosen) {
      if (why) *why = fmt::format("{} GiB free there", reachableMemory(pool, hostIndex).gib);
      return false;
    }
    slots -= static_cast<int>(chosen->size());
  }
  for (const auto& demand : endpoints) {
    const EndpointSupply supply = endpointSupply(pool, hostIndex, gpuSwitches, demand, why ? 0 : demand.count);  // a reason shows the whole count
    const bool farAllowed = demand.affinity == Affinity::kDomain || gpuSwitches.empty();
    if ((farAllowed ? supply.near + supply.far : supply.near) < demand.count) {
      if (why)
        *why = fmt::format("{}: {}", describe(demand),
                           gpuSwitches.empty() ? fmt::format("reaches {} free", supply.near + supply.far)
                                               : fmt::format("{} free under its GPUs' switches, {} elsewhere it reaches{}", supply.near, supply.far,
                                                             farAllowed ? "" : " (affinity switch)"));
      return false;
    }
    if (demand.count > slots) {
      if (why) *why = fmt::format("{}: device limit: room for {} more", describe(demand), slots);
      return false;
    }
    slots -= demand.count;
  }
  return true;
}

// The "companions" filter: the host's GPU plan (device-set or buddy-cells) must leave room and reach for them.
class CompanionsPlugin final : public placement::FilterPlugin {
 public:
  std::string_view name() const override { return "companions"; }
  unsigned reads() const override { return placement::kHostSurroundings; }
  placement::Status filter(placement::CycleState& state, const Pool& pool, const PlacementRequest& r, const placement::Candidate& c) override {
    if (r.companionMemoryGiB == 0 && r.companionEndpoints.empty()) return placement::Status::fits();
    const DevicePlans* plans = state.find<DevicePlans>();
    const DevicePlan* plan = plans ? plans->find(c.hostIndex) : nullptr;
    if (!plan) return placement::Status::error("the companions filter needs a device plan: run it after device-set or buddy-cells");
    std::vector<int> gpuSwitches;
    for (const auto& part : plan->parts) gpuSwitches.insert(gpuSwitches.end(), part.take, part.switchIndex);
    const PoolHost& host = pool.hosts()[static_cast<std::size_t>(c.hostIndex)];
    const int slots = host.maxDevices - host.attachedDevices - static_cast<int>(gpuSwitches.size());
    std::string why;
    if (!companionsFit(pool, c.hostIndex, gpuSwitches, slots, r.companionMemoryGiB, r.companionEndpoints,
                       placement::explaining(state) ? &why : nullptr))
      return placement::Status::rejected(std::move(why));
    return placement::Status::fits();
  }
};

// Why a host does not reach enough of the companions (affinity set aside); empty when it may.
std::string shortOfReach(const Pool& pool, int hostIndex, const PlacementRequest& r) {
  std::vector<std::string> parts;
  if (r.pooledMemoryGiB > 0) {
    if (const int gib = reachableMemory(pool, hostIndex).gib; gib < r.pooledMemoryGiB) parts.push_back(fmt::format("{} GiB free there", gib));
  }
  for (const auto& d : r.endpoints)
    if (const int n = reachableEndpoints(pool, hostIndex, d); n < d.count) parts.push_back(fmt::format("{} {} free there", n, kindName(d)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string companionsAsked(const PlacementRequest& r) {
  std::vector<std::string> parts;
  if (r.pooledMemoryGiB > 0) parts.push_back(fmt::format("{} GiB of pooled memory", r.pooledMemoryGiB));
  if (!r.endpoints.empty()) parts.push_back(describe(r.endpoints));
  return fmt::format("{}", fmt::join(parts, " and "));
}

}  // namespace

void registerCompanionsPlugin(ComposableRegistry& registry) {
  registry.add("companions", [] { return std::make_unique<CompanionsPlugin>(); });
}

PlacementDecision placeWithCompanions(const placement::Scheduler& scheduler, const Pool& pool, const PlacementRequest& r, PlacementIndex* index) {
  PlacementRequest rest = r;
  rest.pooledMemoryGiB = 0;
  rest.endpoints.clear();
  const bool companionsOnly = r.gpuInstances.empty() && r.devices.empty() && r.gpuCount == 0 && r.gpuShareMilli == 0;
  PlacementDecision out;
  if (!companionsOnly && r.gpuInstances.empty() && r.devices.empty()) {
    // Whole GPUs by count: one scheduling cycle, in which the companions filter keeps the hosts that can have them
    // beside the GPUs and the scores pick the best of those.
    rest.companionMemoryGiB = r.pooledMemoryGiB;
    rest.companionEndpoints = r.endpoints;
    out = place(scheduler, pool, rest, index);
    std::string why;
    if (out.placement && addCompanions(pool, *out.placement, r, why)) return out;
    if (out.placement) {  // the filter let a host through that cannot have them: a broken plugin contract
      out.placement.reset();
      out.error = Error{Code::kInternal, fmt::format("placement chose {} for {}, which cannot have them: {}", rest.host ? *rest.host : "a host",
                                                     companionsAsked(r), why)};
      return out;
    }
    if (out.error && out.error->code == Code::kResourceExhausted) {
      out.error->message = fmt::format("no host can take {} with the GPUs:{}", companionsAsked(r), listCandidates(out));
    }
    return out;
  }
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
  // Unless asked to explain every host (Plan), a refusal names the first few hosts of each reason and counts the
  // rest, as the scheduler's refusals do (placement_framework.h).
  std::map<std::string, std::size_t, std::less<>> explained;  // per reason: hosts named so far
  auto rejected = [&](std::string_view by, const HostId& id, std::string reason) {
    if (!r.explain) {
      auto& named = explained[std::string(by)];
      if (named == placement::kExplainedPerFilter) {
        auto group = std::find_if(out.unexplained.begin(), out.unexplained.end(), [&](const UnexplainedHosts& u) { return u.rejectedBy == by; });
        if (group == out.unexplained.end()) group = out.unexplained.insert(out.unexplained.end(), {std::string(by), 0});
        ++group->hosts;
        return;
      }
      ++named;
    }
    out.candidates.push_back({id, false, std::move(reason)});
  };
  for (std::size_t h = 0; h < pool.hosts().size(); ++h) {
    const PoolHost& host = pool.hosts()[h];
    if (r.host && host.id != *r.host) continue;
    if (host.silent || (host.inSystem && !r.hostMayHaveSystem)) {
      rejected("host-free", host.id, host.silent ? "its yard-agent is silent" : "serves a composed system");
      continue;
    }
    std::string reason;
    Placement p{host.id, {}, {}};
    addCompanions(pool, p, r, reason);
    if (!reason.empty()) {
      rejected("companions", host.id, std::move(reason));
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
    out.error = Error{Code::kResourceExhausted, fmt::format("no host can take {}:{}", companionsAsked(r), listCandidates(out))};
    return out;
  }
  out.unexplained.clear();  // it fits: what the others lacked is no answer's business
  out.placement = std::move(best);
  return out;
}

}  // namespace switchyard
