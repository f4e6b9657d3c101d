#include "composer/engine/pool_reads.h"

#include <fmt/format.h>

#include <algorithm>

#include "composer/engine/machine_templates.h"
#include "composer/model/access.h"

namespace switchyard {

Result<std::shared_ptr<const PoolView>> PoolReads::readableView() const {
  if (!from_.loop.running()) return fail(Code::kAborted, "the engine is not running");
  auto v = view();
  if (!v) return fail(Code::kAborted, "the engine is not running");
  return v;
}

Result<System> PoolReads::getSystem(const std::string& idOrName) const {
  SY_ASSIGN(const auto v, readableView());
  auto s = v->systems.findByIdOrName(idOrName);
  if (!s) return fail(Code::kNotFound, fmt::format("no system '{}' (see `yardctl systems`)", idOrName));
  return *s;
}

Result<std::vector<System>> PoolReads::listSystems() const {
  SY_ASSIGN(const auto v, readableView());
  std::vector<System> out;
  out.reserve(v->systems.size());
  for (const auto& s : v->systems.sorted()) out.push_back(*s);
  return out;
}

Result<std::vector<DeviceView>> PoolReads::listDevices() const {
  SY_ASSIGN(const auto v, readableView());
  std::vector<DeviceView> out;
  out.reserve(v->devices.size());
  v->devices.forEach([&](const DeviceView& d) { out.push_back(d); });
  return out;
}

Result<DeviceView> PoolReads::getDevice(const DeviceId& id) const {
  SY_ASSIGN(const auto v, readableView());
  const DeviceView* d = v->device(id);
  if (!d) return fail(Code::kNotFound, fmt::format("no device '{}' (see `yardctl devices`)", id));
  return *d;
}

Result<std::vector<HostView>> PoolReads::listHosts() const {
  SY_ASSIGN(const auto v, readableView());
  const auto& hosts = v->shape->topology.hosts;
  std::vector<HostView> out;
  out.reserve(hosts.size());
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const HostSlot& slot = v->hosts[i];
    HostView h{hosts[i], v->shape->upstreamSwitches[i], slot.systemId, slot.attachedDevices, HostPolicy::kTrustFabric, "", slot.reservationId};
    if (from_.hosts != nullptr) {  // HostAgents answers policy and status on any thread
      h.policy = from_.hosts->policy(hosts[i].id);
      h.hostSide = from_.hosts->status(hosts[i].id);
    } else if (from_.standby.on()) {
      h.hostSide = "standby: the leader serves host sides";  // policies live in the leader's flags and agents
    }
    out.push_back(std::move(h));
  }
  return out;
}

Result<Topology> PoolReads::topology() const {
  SY_ASSIGN(const auto v, readableView());
  return v->topology();
}

Result<std::vector<QueueEntry>> PoolReads::listQueue() const {
  SY_ASSIGN(auto v, readableView());
  return v->queue ? *v->queue : std::vector<QueueEntry>{};
}

Result<std::vector<IdleGpu>> PoolReads::idleGpus(const Caller& caller, Duration minIdle, bool includeBusy) const {
  SY_ASSIGN(auto v, readableView());
  const Timestamp now = from_.clock.now();
  std::vector<IdleGpu> out;
  for (const auto& g : *v->activity) {
    if (!maySee(caller, g.tenant)) continue;
    const DeviceView* d = v->device(g.gpu.deviceId);
    if (d == nullptr || d->systemId != g.systemId) continue;  // detached since it was sampled
    const Duration idleFor = g.idleFor(now);  // the GPU's, or its longest idle MIG instance's
    if (!includeBusy && (!g.anyIdle() || idleFor < minIdle)) continue;
    out.push_back(g);
  }
  std::stable_sort(out.begin(), out.end(), [&](const IdleGpu& a, const IdleGpu& b) { return a.idleFor(now) > b.idleFor(now); });
  return out;
}

Result<CapacityReport> PoolReads::capacity(const std::vector<RequestShape>& shapes, const std::vector<MigProfile>& migProfiles,
                                           const std::vector<int>& shareMilli) const {
  SY_ASSIGN(const auto v, readableView());
  CapacityQuery query{shapes, migProfiles, {}, shareMilli, {}, {}};
  for (const auto& t : from_.templates) {
    ComposeRequest asked;
    asked.machineTemplate = t.name;
    asked.peerToPeerAsked = false;
    if (auto made = applyTemplate(from_.templates, asked)) query.named.emplace_back(t.name, std::move(made->placement));
  }
  v->systems.forEach([&](const System& s) {
    query.gpuInstances.insert(query.gpuInstances.end(), s.gpuInstances.begin(), s.gpuInstances.end());
    query.gpuShares.insert(query.gpuShares.end(), s.gpuShares.begin(), s.gpuShares.end());
  });
  return usableCapacity(*from_.placement, poolOf(*v), query);
}

}  // namespace switchyard
