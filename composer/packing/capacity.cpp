#include "composer/packing/capacity.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_set>

#include "composer/packing/composable_model.h"
#include "composer/packing/gpu_instances.h"
#include "composer/packing/placement_index.h"

namespace switchyard {

std::vector<RequestShape> defaultShapes() {
  std::vector<RequestShape> shapes;
  for (int gpus : {1, 2, 4, 8, 16}) shapes.push_back({gpus, PeerToPeer::kRequired, {}});
  return shapes;
}

namespace {

// How many requests of the shape fit one after another, counted per fabric domain (a placement lies in one).
std::vector<int> placeRepeatedly(const ComposableScheduler& scheduler, Pool pool, const RequestShape& shape) {
  PlacementRequest request;
  request.gpuCount = shape.gpus;
  request.peerToPeer = shape.peerToPeer;
  request.model = shape.model;
  std::vector<int> placed(pool.domains().size(), 0);
  PlacementIndex index;  // each round re-ranks only the hosts of the fabrics the last one changed
  // Each round takes at least one GPU, so this ends; the bound only guards against a broken policy.
  for (int round = 0; round <= static_cast<int>(pool.devices().size()); ++round) {
    PlacementDecision d = place(scheduler, pool, request, &index);
    if (!d.placement) break;
    for (const auto& device : d.placement->devices) pool.setFree(pool.deviceIndex(device.deviceId), false);
    const int host = pool.hostIndex(d.placement->hostId);
    pool.addAttached(host, shape.gpus);
    pool.setInSystem(host, true);
    const int sw = pool.devices()[static_cast<std::size_t>(pool.deviceIndex(d.placement->devices.front().deviceId))].switchIndex;
    ++placed[static_cast<std::size_t>(pool.switches()[static_cast<std::size_t>(sw)].domain)];
  }
  return placed;
}

// How many systems of a whole request fit one after another (each takes a host: a bounded loop).
int fitsRepeatedly(const ComposableScheduler& scheduler, Pool pool, PlacementRequest request) {
  request.explain = false;
  int placed = 0;
  for (std::size_t round = 0; round < pool.hosts().size() && placed < kNamedCapacityLimit; ++round) {
    PlacementDecision d = place(scheduler, pool, request);
    if (!d.placement || d.placement->devices.empty()) break;
    for (const auto& device : d.placement->devices) pool.setFree(pool.deviceIndex(device.deviceId), false);
    const int host = pool.hostIndex(d.placement->hostId);
    pool.addAttached(host, static_cast<int>(d.placement->devices.size()));
    pool.setInSystem(host, true);
    ++placed;
  }
  return placed;
}

// Free GPUs (MIG-capable ones only, when asked) that hosts can still attach: one at a time, to any host
// with room (a new system or an attach), until none fits.
int attachableGpus(const ComposableScheduler& scheduler, Pool pool, bool migCapable) {
  PlacementRequest request;
  request.gpuCount = 1;
  request.peerToPeer = PeerToPeer::kNone;
  request.migCapable = migCapable;
  request.hostMayHaveSystem = true;
  int placed = 0;
  PlacementIndex index;
  for (std::size_t round = 0; round < pool.devices().size(); ++round) {
    PlacementDecision d = place(scheduler, pool, request, &index);
    if (!d.placement) break;
    pool.setFree(pool.deviceIndex(d.placement->devices.front().deviceId), false);
    pool.addAttached(pool.hostIndex(d.placement->hostId), 1);
    ++placed;
  }
  return placed;
}

}  // namespace

CapacityReport usableCapacity(const Pool& pool, const std::vector<RequestShape>& shapes) {
  return usableCapacity(defaultComposableScheduler(), pool, shapes);
}

CapacityReport usableCapacity(const ComposableScheduler& scheduler, const Pool& pool, const std::vector<RequestShape>& shapes) {
  return usableCapacity(scheduler, pool, CapacityQuery{shapes, {}, {}});
}

CapacityReport usableCapacity(const ComposableScheduler& scheduler, const Pool& pool, const CapacityQuery& query) {
  const auto& shapes = query.shapes;
  CapacityReport report;
  report.demand = pool.demand();
  // Fabrics that some host able to take a new system is cabled to.
  std::unordered_set<int> reachableFabrics;
  std::unordered_set<int> attachFabrics;  // fabrics a host that serves a system, with room left, is cabled to
  for (const auto& h : pool.hosts()) {
    if (h.silent || h.attachedDevices >= h.maxDevices) continue;
    for (const auto& p : h.ports)
      if (p.switchIndex >= 0) (h.inSystem ? attachFabrics : reachableFabrics).insert(pool.switches()[static_cast<std::size_t>(p.switchIndex)].fabric);
  }
  for (const auto& name : pool.domains()) report.domains.push_back({name, 0, 0, {}});
  for (const auto& d : pool.devices()) {
    if (!isFreeGpu(d)) continue;
    DomainCapacity* domain =
        d.switchIndex < 0 ? nullptr : &report.domains[static_cast<std::size_t>(pool.switches()[static_cast<std::size_t>(d.switchIndex)].domain)];
    ++report.freeGpus;
    if (domain) ++domain->freeGpus;
    if (d.switchIndex < 0 || !reachableFabrics.contains(pool.switches()[static_cast<std::size_t>(d.switchIndex)].fabric)) {
      ++report.strandedGpus;
      if (domain) ++domain->strandedGpus;
      if (d.switchIndex >= 0 && attachFabrics.contains(pool.switches()[static_cast<std::size_t>(d.switchIndex)].fabric)) ++report.strandedAttachableGpus;
    }
  }
  // Pooled memory per switch, and drives and NICs by kind and model, in one pass over the devices (a pool of
  // 100,000 GPUs has thousands of switches).
  std::map<int, PooledMemoryCapacity> memory;  // switch index -> its pooled memory, in switch order
  std::map<std::tuple<DeviceKind, std::string, std::string>, EndpointCapacity> endpoints;
  for (const auto& d : pool.devices()) {
    if (isEndpointKind(d.kind)) {
      EndpointCapacity& e = endpoints[{d.kind, d.deviceClass, d.model}];
      e.kind = d.kind, e.deviceClass = d.deviceClass, e.model = d.model;
      ++e.total;
      if (d.free && d.health != DeviceHealth::kCritical) {
        ++e.free;
        if (d.switchIndex >= 0 && pool.switches()[static_cast<std::size_t>(d.switchIndex)].freeGpus > 0) ++e.besideFreeGpus;
      }
      continue;
    }
    if (d.kind != DeviceKind::kCxlMemory || d.switchIndex < 0) continue;
    auto [at, fresh] = memory.try_emplace(d.switchIndex);
    PooledMemoryCapacity& m = at->second;
    if (fresh) {
      const PoolSwitch& sw = pool.switches()[static_cast<std::size_t>(d.switchIndex)];
      m.switchId = sw.id;
      m.domain = pool.domains()[static_cast<std::size_t>(sw.domain)];
    }
    m.totalGiB += d.memoryGiB;
    ++m.totalDevices;
    if (d.free && d.health == DeviceHealth::kOk) {
      m.freeGiB += d.memoryGiB;
      ++m.freeDevices;
    }
  }
  for (auto& [index, m] : memory) {
    report.freePooledMemoryGiB += m.freeGiB;
    report.pooledMemory.push_back(std::move(m));
  }
  for (auto& [key, e] : endpoints) report.endpoints.push_back(std::move(e));
  for (const auto& shape : shapes) {
    const std::vector<int> perDomain = shape.gpus > 0 ? placeRepeatedly(scheduler, pool, shape) : std::vector<int>(pool.domains().size(), 0);
    int total = 0;
    for (std::size_t i = 0; i < perDomain.size(); ++i) {
      report.domains[i].shapes.push_back({shape, perDomain[i]});
      total += perDomain[i];
    }
    report.shapes.push_back({shape, total});
  }
  for (const auto& [name, request] : query.named) report.named.push_back({name, fitsRepeatedly(scheduler, pool, request)});
  if (!query.shareMilli.empty()) {
    report.attachableGpus = attachableGpus(scheduler, pool, false);
    const auto room = shareRoom(query.gpuShares);
    for (int milli : query.shareMilli) {
      if (milli <= 0 || milli >= kMilliPerGpu) continue;
      ShareCapacity c{milli, 0, report.attachableGpus * (kMilliPerGpu / milli)};
      for (const auto& [device, left] : room) c.onPartlyUsedGpus += left / milli;
      report.shares.push_back(c);
    }
  }
  if (query.migProfiles.empty()) return report;

  report.attachableMigGpus = attachableGpus(scheduler, pool, true);
  std::vector<MigLayout> carved;
  for (const auto& i : query.gpuInstances)
    if (std::none_of(query.gpuInstances.begin(), query.gpuInstances.begin() + (&i - query.gpuInstances.data()),
                     [&](const GpuInstance& j) { return j.deviceId == i.deviceId; }))
      carved.push_back(layoutOf(query.gpuInstances, i.deviceId));
  for (MigProfile p : query.migProfiles) {
    MigCapacity c{p, 0, report.attachableMigGpus * MigLayout{}.capacityFor(p)};
    for (const auto& layout : carved) c.onPartlyUsedGpus += layout.capacityFor(p);
    report.mig.push_back(c);
  }
  return report;
}

}  // namespace switchyard
