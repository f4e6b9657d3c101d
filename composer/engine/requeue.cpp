#include "composer/engine/requeue.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace switchyard {

Result<QueuedRequest> requeueRequestOf(const System& system, const TopologyIndex& devices, const PriorityClass& cls) {
  auto refuse = [&](std::string_view why) {
    return fail(Code::kFailedPrecondition, fmt::format("{} ({}) is not queued again: {}", system.name, system.id, why));
  };
  std::set<DeviceId> carved, shared;
  for (const auto& i : system.gpuInstances) carved.insert(i.deviceId);
  for (const auto& s : system.gpuShares) shared.insert(s.deviceId);

  QueuedRequest q;
  std::set<std::string> models;
  std::set<SwitchId> switches;  // of its whole GPUs
  // Endpoints by kind, class and model, in the order first met.
  std::vector<EndpointDemand> endpoints;
  for (const auto& b : system.bindings) {
    const Device* d = devices.device(b.deviceId);
    if (d == nullptr) return refuse(fmt::format("the fabric no longer reports {}", b.deviceId));
    switch (d->kind) {
      case DeviceKind::kGpu:
        if (carved.contains(d->id) || shared.contains(d->id)) break;
        ++q.gpuCount;
        models.insert(d->model);
        if (const SwitchId* sw = devices.switchOfDevice(d->id)) switches.insert(*sw);
        break;
      case DeviceKind::kCxlMemory: q.pooledMemoryGiB += d->memoryGiB; break;
      case DeviceKind::kNvme:
      case DeviceKind::kNic:
      case DeviceKind::kOther: {
        auto same = std::find_if(endpoints.begin(), endpoints.end(), [&](const EndpointDemand& e) {
          return std::tie(e.kind, e.deviceClass, e.model) == std::tie(d->kind, d->deviceClass, d->model);
        });
        if (same == endpoints.end()) {
          EndpointDemand e;
          e.kind = d->kind;
          e.model = d->model;
          e.deviceClass = d->deviceClass;
          endpoints.push_back(e);
          same = std::prev(endpoints.end());
        }
        ++same->count;
        break;
      }
    }
  }
  const bool whole = q.gpuCount > 0;
  if (!system.gpuInstances.empty() && (whole || !system.gpuShares.empty()))
    return refuse("it holds MIG instances beside other GPUs, which one request cannot ask for");
  if (system.gpuShares.size() > 1) return refuse(fmt::format("it holds {} GPU shares; a request asks for one", system.gpuShares.size()));
  if (!system.gpuShares.empty() && whole) return refuse("it holds a GPU share beside whole GPUs, which one request cannot ask for");
  for (const auto& i : system.gpuInstances) q.gpuInstances.push_back(i.profile);
  if (!system.gpuShares.empty()) q.gpuShareMilli = system.gpuShares.front().milli;
  if (models.size() == 1) q.model = *models.begin();  // several models: any
  // Peer-to-peer as it had it: GPUs that shared a switch get one again.
  q.peerToPeer = q.gpuCount >= 2 && switches.size() == 1 ? "required" : "preferred";
  if (system.asked) {
    // What its compose asked for beside its shape, asked again: the host it was pinned to, a GPU's least memory, MIG-capable
    // GPUs, peer-to-peer as asked, and each kind of endpoint's affinity, speed and size.
    const QueuedRequest& asked = *system.asked;
    q.host = asked.host;
    q.minMemoryGiB = asked.minMemoryGiB;
    q.migCapable = asked.migCapable;
    q.peerToPeer = asked.peerToPeer;
    for (auto& e : endpoints) {
      auto same = std::find_if(asked.endpoints.begin(), asked.endpoints.end(), [&](const EndpointDemand& a) {
        return sameKind(a, e) && (a.model.empty() || a.model == e.model);
      });
      if (same == asked.endpoints.end()) continue;
      e.affinity = same->affinity;
      e.minSpeedGbps = same->minSpeedGbps;
      e.minCapacityGiB = same->minCapacityGiB;
    }
  }
  q.endpoints = std::move(endpoints);
  if (!whole && q.gpuInstances.empty() && q.gpuShareMilli == 0 && q.pooledMemoryGiB == 0 && q.endpoints.empty())
    return refuse("it holds nothing to ask for again");
  q.priorityClass = cls.name;
  q.priority = cls.value;
  if (system.leaseExpiresAt > 0) q.leaseSeconds = std::max<std::int64_t>(1, (system.leaseExpiresAt - system.createdAt) / 1'000'000'000LL);
  q.requeueAs = QueuedRequest::RequeueAs{system.name, system.labels};
  return q;
}

}  // namespace switchyard
