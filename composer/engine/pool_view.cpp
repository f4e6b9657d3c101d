#include "composer/engine/pool_view.h"

#include <algorithm>
#include <numeric>

namespace switchyard {

SystemTable::SystemTable() {
  // One empty table for all: its buckets are never changed in place (with() makes new ones). It is never
  // destroyed: a thread still running while the process exits (an engine a daemon never stops) may build a view.
  static const auto& empty = *new std::shared_ptr<const Buckets>([] {
    auto none = std::make_shared<const Bucket>();
    auto group = std::make_shared<Group>();
    group->fill(none);
    auto buckets = std::make_shared<Buckets>();
    buckets->fill(std::shared_ptr<const Group>(std::move(group)));
    return std::shared_ptr<const Buckets>(std::move(buckets));
  }());
  byId_ = empty;
  byName_ = empty;
}

std::shared_ptr<const System> SystemTable::find(std::string_view id) const {
  for (const auto& s : bucket(*byId_, bucketOf(id)))
    if (s->id == id) return s;
  return nullptr;
}

std::shared_ptr<const System> SystemTable::findByIdOrName(std::string_view idOrName) const {
  if (auto s = find(idOrName)) return s;
  for (const auto& s : bucket(*byName_, bucketOf(idOrName)))
    if (s->name == idOrName) return s;
  return nullptr;
}

SystemTable SystemTable::with(const std::vector<std::pair<SystemId, std::shared_ptr<const System>>>& changes) const {
  if (changes.empty()) return *this;
  SystemTable out = *this;
  std::map<std::size_t, Bucket> copies, nameCopies;
  auto copyOf = [](std::map<std::size_t, Bucket>& made, const Buckets& buckets, std::size_t b) -> Bucket& {
    auto it = made.find(b);
    if (it == made.end()) it = made.emplace(b, bucket(buckets, b)).first;
    return it->second;
  };
  for (const auto& [id, system] : changes) {
    Bucket& inBucket = copyOf(copies, *byId_, bucketOf(id));
    auto at = std::find_if(inBucket.begin(), inBucket.end(), [&](const auto& s) { return s->id == id; });
    if (at != inBucket.end()) {
      Bucket& named = copyOf(nameCopies, *byName_, bucketOf((*at)->name));
      std::erase_if(named, [&](const auto& s) { return s->id == id; });
      --out.size_;
      inBucket.erase(at);
    }
    if (system) {
      ++out.size_;
      inBucket.push_back(system);
      copyOf(nameCopies, *byName_, bucketOf(system->name)).push_back(system);
    }
  }
  // New arrays only for the side that changed; each shares the groups it did not change.
  if (!copies.empty()) out.byId_ = rebuilt(*byId_, copies);
  if (!nameCopies.empty()) out.byName_ = rebuilt(*byName_, nameCopies);
  return out;
}

std::shared_ptr<const SystemTable::Buckets> SystemTable::rebuilt(const Buckets& old, std::map<std::size_t, Bucket>& made) {
  auto buckets = std::make_shared<Buckets>(old);
  std::shared_ptr<Group> group;  // the group being changed (`made` is ordered: a group's buckets come together)
  std::size_t groupAt = kGroups;
  for (auto& [b, changed] : made) {
    if (b / kBucketsPerGroup != groupAt) {
      if (group) (*buckets)[groupAt] = std::move(group);
      groupAt = b / kBucketsPerGroup;
      group = std::make_shared<Group>(*old[groupAt]);
    }
    (*group)[b % kBucketsPerGroup] = std::make_shared<const Bucket>(std::move(changed));
  }
  if (group) (*buckets)[groupAt] = std::move(group);
  return buckets;
}

std::vector<std::shared_ptr<const System>> SystemTable::sorted() const {
  std::vector<std::shared_ptr<const System>> out;
  out.reserve(size_);
  for (const auto& group : *byId_)
    for (const auto& b : *group) out.insert(out.end(), b->begin(), b->end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->id < b->id; });
  return out;
}

PoolShape::PoolShape(Topology t) : topology(std::move(t)), emptyPool(topology) {
  std::vector<std::size_t> byId(topology.devices.size());
  std::iota(byId.begin(), byId.end(), 0);
  std::sort(byId.begin(), byId.end(), [&](std::size_t a, std::size_t b) { return topology.devices[a].id < topology.devices[b].id; });
  topologyIndex = byId;
  deviceOrder.resize(byId.size());
  for (std::size_t pos = 0; pos < byId.size(); ++pos) {
    deviceOrder[byId[pos]] = pos;
    devicePosition.emplace(topology.devices[byId[pos]].id, pos);
  }
  std::unordered_map<PortId, SwitchId> switchOfPort;
  for (const auto& p : topology.ports) switchOfPort.emplace(p.id, p.switchId);
  const TopologyIndex index(topology);
  for (std::size_t pos = 0; pos < byId.size(); ++pos)
    if (const SwitchId* sw = index.switchOfDevice(topology.devices[byId[pos]].id)) devicesOfSwitch[*sw].push_back(pos);
  for (auto& [sw, positions] : devicesOfSwitch) std::sort(positions.begin(), positions.end());
  poolDevice.resize(byId.size());
  for (std::size_t pos = 0; pos < byId.size(); ++pos) poolDevice[pos] = emptyPool.deviceIndex(topology.devices[byId[pos]].id);
  for (std::size_t i = 0; i < topology.hosts.size(); ++i) {
    hostPosition.emplace(topology.hosts[i].id, i);
    std::vector<SwitchId> switches;
    for (const auto& u : topology.hosts[i].upstreamPorts) {
      auto it = switchOfPort.find(u.portId);
      switches.push_back(it == switchOfPort.end() ? SwitchId{} : it->second);
    }
    upstreamSwitches.push_back(std::move(switches));
  }
}

const DeviceView* PoolView::device(const DeviceId& id) const {
  if (!shape) return nullptr;
  auto it = shape->devicePosition.find(id);
  return it == shape->devicePosition.end() ? nullptr : &devices[it->second];
}

int PoolView::pooledMemoryGiB(const System& system) const {
  int gib = 0;
  for (const auto& b : system.bindings)
    if (const DeviceView* d = device(b.deviceId); d && d->device.kind == DeviceKind::kCxlMemory) gib += d->device.memoryGiB;
  return gib;
}

const HostSlot* PoolView::host(const HostId& id) const {
  if (!shape) return nullptr;
  auto it = shape->hostPosition.find(id);
  return it == shape->hostPosition.end() ? nullptr : &hosts[it->second];
}

Topology PoolView::topology() const {
  if (!shape) return {};
  Topology t = shape->topology;
  for (std::size_t i = 0; i < t.devices.size(); ++i) t.devices[i].health = devices[shape->deviceOrder[i]].device.health;
  return t;
}

Pool poolOf(const PoolView& view) {
  if (!view.shape) return Pool(Topology{});
  Pool pool = view.shape->emptyPool;
  for (std::size_t pos = 0; pos < view.devices.size(); ++pos) {
    const int di = view.shape->poolDevice[pos];
    if (di < 0) continue;
    const DeviceView& d = view.devices[pos];
    pool.setHealth(di, d.device.health);
    if (d.assignment.allocation != DeviceAllocation::kFree) pool.setFree(di, false);
  }
  for (std::size_t i = 0; i < view.hosts.size(); ++i) {
    const HostSlot& h = view.hosts[i];
    const int hi = static_cast<int>(i);  // emptyPool's hosts are in topology order, as the view's
    if (h.attachedDevices != 0) pool.addAttached(hi, h.attachedDevices);
    if (!h.systemId.empty() || !h.reservationId.empty()) pool.setInSystem(hi, true);
  }
  if (view.demand) pool.setDemand(view.demand);
  return pool;
}

namespace {

bool matches(const DeviceView& d, const DeviceFilter& f, const System* system) {
  if (f.freeOnly && (d.assignment.allocation != DeviceAllocation::kFree || d.device.health == DeviceHealth::kCritical)) return false;
  if (!f.model.empty() && d.device.model != f.model) return false;
  if (f.kind && (d.device.kind != f.kind->kind || d.device.deviceClass != f.kind->deviceClass)) return false;
  if (!f.switchId.empty() && d.switchId != f.switchId) return false;
  if (!f.hostId.empty() && d.hostId != f.hostId) return false;
  if (!f.system.empty() && (system == nullptr || d.systemId != system->id)) return false;
  return true;
}

}  // namespace

std::vector<const DeviceView*> pageOfDevices(const PoolView& view, const DeviceFilter& filter, const std::function<bool(const DeviceView&)>& keep,
                                             std::size_t pageSize, const std::string& pageToken, std::string& next) {
  next.clear();
  std::vector<const DeviceView*> page;
  if (!view.shape || pageSize == 0) return page;
  std::shared_ptr<const System> system;
  if (!filter.system.empty()) {
    system = view.systems.findByIdOrName(filter.system);
    if (!system) return page;
  }
  // Candidate positions, ascending: a switch's devices, a system's, a host's (its system's and those
  // reserved for it), or all of them.
  std::optional<std::vector<std::size_t>> candidates;
  auto positionsOf = [&](const std::vector<DeviceId>& ids) {
    std::vector<std::size_t> out;
    for (const auto& id : ids)
      if (auto it = view.shape->devicePosition.find(id); it != view.shape->devicePosition.end()) out.push_back(it->second);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  if (!filter.switchId.empty()) {
    auto it = view.shape->devicesOfSwitch.find(filter.switchId);
    candidates = it == view.shape->devicesOfSwitch.end() ? std::vector<std::size_t>{} : it->second;
  } else if (system) {
    std::vector<DeviceId> ids;
    for (const auto& b : system->bindings) ids.push_back(b.deviceId);
    candidates = positionsOf(ids);
  } else if (!filter.hostId.empty()) {
    const HostSlot* host = view.host(filter.hostId);
    std::vector<DeviceId> ids;
    if (host != nullptr && !host->systemId.empty())
      if (auto s = view.systems.find(host->systemId))
        for (const auto& b : s->bindings) ids.push_back(b.deviceId);
    // Devices held for the host by a running operation or a reservation count against it too.
    if (host != nullptr && host->attachedDevices > static_cast<int>(ids.size()))
      view.devices.forEach([&](const DeviceView& d) {
        if (d.hostId == filter.hostId) ids.push_back(d.device.id);
      });
    candidates = positionsOf(ids);
  }
  // The first position after the token.
  std::size_t from = 0;
  if (!pageToken.empty()) {
    std::size_t lo = 0, hi = view.devices.size();
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (view.devices[mid].device.id <= pageToken)
        lo = mid + 1;
      else
        hi = mid;
    }
    from = lo;
  }
  auto consider = [&](std::size_t pos) {
    const DeviceView& d = view.devices[pos];
    if (!matches(d, filter, system.get()) || !keep(d)) return true;
    if (page.size() == pageSize) {
      next = page.back()->device.id;
      return false;
    }
    page.push_back(&d);
    return true;
  };
  if (candidates) {
    for (auto it = std::lower_bound(candidates->begin(), candidates->end(), from); it != candidates->end(); ++it)
      if (!consider(*it)) break;
  } else {
    for (std::size_t pos = from; pos < view.devices.size(); ++pos)
      if (!consider(pos)) break;
  }
  return page;
}

}  // namespace switchyard
