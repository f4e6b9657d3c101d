#include "fabric/switchtec/switchtec_fabric.h"

#include <algorithm>
#include <future>
#include <set>

#include <fmt/format.h>

#include "fabric/pci_device_ids.h"

namespace switchyard {

using namespace switchtec;

namespace {

int generationOf(std::uint8_t rate) { return rate >= 1 && rate <= 6 ? rate : 4; }

bool staleExplains(std::uint32_t status) {
  return status == mrpc_error::kPhysPortAlreadyBound || status == mrpc_error::kLogicalPortAlreadyBound || status == mrpc_error::kBindInProgress;
}

}  // namespace

SwitchtecFabric::SwitchtecFabric(SwitchtecOptions options, ChipIdentity local)
    : options_(std::move(options)), local_(std::move(local)), pool_(*parseEndpoint(options_.endpoint), options_.channels) {}

Result<std::unique_ptr<SwitchtecFabric>> SwitchtecFabric::connect(const SwitchtecOptions& options) {
  SY_ASSIGN(auto endpoint, parseEndpoint(options.endpoint));
  const auto deadline = deadlineAfter(options.discoveryTimeout);
  MrpcPool probe(endpoint, 1);
  ChipIdentity local;
  SY_TRY(probe.withChannel(deadline, [&](MrpcChannel& c) -> Result<void> {
    SY_ASSIGN(local, identify(c, deadline));
    return {};
  }));
  std::unique_ptr<SwitchtecFabric> f(new SwitchtecFabric(options, local));
  SY_ASSIGN(auto fabric, f->readFabric(deadline));
  SY_ASSIGN(auto table, f->readTable(fabric, deadline));
  f->fabric_ = std::move(fabric);
  f->table_ = std::move(table);
  return f;
}

std::string SwitchtecFabric::portName(std::uint8_t pax, std::uint8_t port) const { return fmt::format("{}pax{}-p{}", options_.prefix, pax, port); }

Result<SwitchtecFabric::Fabric> SwitchtecFabric::readFabric(Deadline deadline) {
  Fabric f;
  SY_TRY(pool_.withChannel(deadline, [&](MrpcChannel& c) -> Result<void> {
    SY_ASSIGN(auto general, readFabricGeneral(c, local_.paxId, deadline));
    f.paxIds.push_back(local_.paxId);
    for (std::size_t i = 0; i < general.reach.size(); ++i)
      if (i != local_.paxId && (general.reach[i] == kReachUnicast || general.reach[i] == kReachBroadcast))
        f.paxIds.push_back(static_cast<std::uint8_t>(i));
    return {};
  }));
  // What each chip says about itself, read from every chip at once (each on its own channel).
  struct ChipView {
    TopoInfo topo;
    PaxAll all;
    std::map<std::uint8_t, FabPort> peers;  // fabric port -> its far end
  };
  std::vector<std::future<Result<ChipView>>> reads;
  for (const auto pax : f.paxIds)
    reads.push_back(std::async(std::launch::async, [this, pax, deadline]() -> Result<ChipView> {
      ChipView v;
      SY_TRY(pool_.withChannel(deadline, [&](MrpcChannel& c) -> Result<void> {
        SY_ASSIGN(v.topo, readTopoInfo(c, pax, local_.generation, deadline));
        SY_ASSIGN(v.all, readPaxAll(c, pax, deadline));
        for (const auto& info : v.topo.ports)
          if (info.type == PortType::kFabric) {
            SY_ASSIGN(auto peer, readFabPort(c, pax, info.physPort, deadline));
            v.peers[info.physPort] = peer;
          }
        return {};
      }));
      return v;
    }));
  std::vector<ChipView> views;
  for (auto& r : reads) {
    auto v = r.get();
    if (!v) return fail(v.error());
    views.push_back(std::move(*v));
  }
  {
    std::unordered_map<std::string, std::size_t> hostIndex;
    for (std::size_t chip = 0; chip < f.paxIds.size(); ++chip) {
      const auto pax = f.paxIds[chip];
      const auto& topo = views[chip].topo;
      const auto& all = views[chip].all;
      const SwitchId switchId = fmt::format("{}pax{}", options_.prefix, pax);
      f.topology.switches.push_back({switchId, SwitchKind::kPcie, pax == local_.paxId ? local_.model : fmt::format("Switchtec PAX (Gen{})", local_.generation == Generation::kGen4 ? 4 : 5)});
      std::set<std::uint8_t> added;
      auto addPort = [&](std::uint8_t phys, PortKind kind, std::string peer = {}) {
        if (!added.insert(phys).second) return;
        Port p{portName(pax, phys), switchId, kind, 4, 16, std::move(peer)};
        for (const auto& info : topo.ports)
          if (info.physPort == phys) {
            p.linkGeneration = generationOf(info.negRate ? info.negRate : info.cfgRate);
            p.linkWidth = info.negWidth ? info.negWidth : info.cfgWidth;
          }
        f.topology.ports.push_back(std::move(p));
      };
      for (const auto& [physPort, peer] : views[chip].peers) {
        if (std::find(f.paxIds.begin(), f.paxIds.end(), peer.attachedSwitchIndex) == f.paxIds.end()) continue;  // a PAX GFMS cannot reach
        addPort(physPort, PortKind::kInterSwitch, portName(peer.attachedSwitchIndex, peer.attachedPhysPort));
      }
      for (const auto& hvd : all.hvds) {
        addPort(hvd.physPort, PortKind::kUpstream);
        const auto key = fmt::format("pax{}-p{}", pax, hvd.physPort);
        const auto named = options_.hostNames.find(key);
        const HostId id = named != options_.hostNames.end() ? named->second : fmt::format("{}pax{}-host{}", options_.prefix, pax, hvd.physPort);
        f.hostPorts[portName(pax, hvd.physPort)] = {pax, hvd.physPort, hvd.logicalPorts, hvd.instance};
        if (auto h = hostIndex.find(id); h != hostIndex.end()) {
          f.topology.hosts[h->second].upstreamPorts.push_back({portName(pax, hvd.physPort), 0});
          f.topology.hosts[h->second].maxDevices += hvd.logicalPorts;
        } else {
          hostIndex[id] = f.topology.hosts.size();
          f.topology.hosts.push_back({id, {{portName(pax, hvd.physPort), 0}}, 0, 0, hvd.logicalPorts});
        }
      }
      for (const auto& ep : all.epPorts) {
        if (ep.kind != EpPortKind::kEndpoint || ep.functions.empty()) continue;
        addPort(ep.physPort, PortKind::kDownstream);
        const auto& fn = ep.functions.front();
        Device d;
        d.id = fmt::format("{}pax{}-ep{}", options_.prefix, pax, ep.physPort);
        classifyPciFunction(fn.classCode, d);
        d.portId = portName(pax, ep.physPort);
        describePciDevice(fn.vendorId, fn.deviceId, d);
        DeviceRef ref{pax, ep.physPort, {}};
        for (const auto& function : ep.functions) {
          ref.pdfids.push_back(function.pdfid);
          f.deviceOfPdfid[function.pdfid] = d.id;
        }
        f.deviceAt[static_cast<std::uint16_t>(pax << 8 | ep.physPort)] = d.id;
        f.devices[d.id] = std::move(ref);
        f.topology.devices.push_back(std::move(d));
      }
    }
  }
  // An inter-switch link whose far end is not in the inventory (a PAX that answered no dump) is dropped.
  std::set<PortId> known;
  for (const auto& p : f.topology.ports) known.insert(p.id);
  std::erase_if(f.topology.ports, [&](const Port& p) { return p.kind == PortKind::kInterSwitch && !known.contains(p.peerPort); });
  SY_TRY(validateTopology(f.topology));
  return f;
}

Result<SwitchtecFabric::Table> SwitchtecFabric::readTable(const Fabric& fabric, Deadline deadline) {
  // Every PAX's database at once, each on its own channel: a read costs one dump's round trips (start,
  // gets, finish), not one per chip.
  std::vector<std::future<Result<PaxAll>>> dumps;
  for (const auto pax : fabric.paxIds)
    dumps.push_back(std::async(std::launch::async, [this, pax, deadline]() -> Result<PaxAll> {
      Result<PaxAll> all = fail(Code::kInternal, "not read");
      SY_TRY(pool_.withChannel(deadline, [&](MrpcChannel& c) -> Result<void> {
        all = readPaxAll(c, pax, deadline);
        if (!all) return fail(all.error());
        return {};
      }));
      return all;
    }));
  std::vector<Result<PaxAll>> all;
  for (auto& d : dumps) all.push_back(d.get());
  Table t;
  for (const auto& [port, hp] : fabric.hostPorts) t.slots[port].resize(hp.logicalPorts);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!all[i]) return fail(all[i].error());
    const auto pax = fabric.paxIds[i];
    for (const auto& hvd : all[i]->hvds) {
      const auto port = portName(pax, hvd.physPort);
      auto& slots = t.slots[port];
      slots.resize(hvd.logicalPorts);
      for (std::uint16_t l = 0; l < hvd.logicalPorts; ++l) {
        const auto& s = hvd.slot(0, l);
        if (!s.bound) continue;
        auto d = fabric.deviceOfPdfid.find(s.pdfid);
        const DeviceId device = d != fabric.deviceOfPdfid.end() ? d->second : fmt::format("unknown-pdfid-{:#06x}", s.pdfid);
        slots[l] = device;
        t.boundTo[device] = {port, l};
      }
    }
  }
  t.stale = false;
  return t;
}

Result<void> SwitchtecFabric::refreshIfStale(Deadline deadline) {
  Fabric fabric;
  {
    std::lock_guard lock(mutex_);
    if (!table_.stale) return {};
    fabric = fabric_;
  }
  SY_ASSIGN(auto table, readTable(fabric, deadline));
  std::lock_guard lock(mutex_);
  table_ = std::move(table);
  return {};
}

Result<Topology> SwitchtecFabric::discover() {
  const auto deadline = deadlineAfter(options_.discoveryTimeout);
  SY_ASSIGN(auto fabric, readFabric(deadline));
  SY_ASSIGN(auto table, readTable(fabric, deadline));
  std::lock_guard lock(mutex_);
  fabric_ = std::move(fabric);
  table_ = std::move(table);
  return fabric_.topology;
}

Result<void> SwitchtecFabric::checkNames(std::span<const Binding> bindings) const {
  std::set<DeviceId> seen;
  for (const auto& b : bindings) {
    if (!seen.insert(b.deviceId).second) return fail(Code::kInvalidArgument, fmt::format("device {} is named twice in one call", b.deviceId));
    if (!fabric_.devices.contains(b.deviceId)) return fail(Code::kNotFound, fmt::format("no device {} on this Switchtec fabric", b.deviceId));
    if (!fabric_.hostPorts.contains(b.upstreamPortId))
      return fail(Code::kNotFound, fmt::format("{} is not a host port (HVD) on this Switchtec fabric", b.upstreamPortId));
  }
  return {};
}

Result<void> SwitchtecFabric::bindOnce(std::span<const Binding> bindings, Deadline deadline, bool& staleRefusal) {
  struct Planned {
    Binding binding;
    std::uint16_t logicalPort = 0;
    BindRequest request;
    std::uint8_t pax = 0;
  };
  std::vector<Planned> plan;
  {
    std::lock_guard lock(mutex_);
    SY_TRY(checkNames(bindings));
    std::unordered_map<PortId, std::vector<std::uint16_t>> free;
    for (const auto& b : bindings) {
      if (auto at = table_.boundTo.find(b.deviceId); at != table_.boundTo.end()) {
        if (at->second.first == b.upstreamPortId) continue;  // already there: idempotent
        return fail(Code::kFailedPrecondition, fmt::format("device {} is bound to {}, not free", b.deviceId, at->second.first));
      }
      auto& ports = free[b.upstreamPortId];
      if (ports.empty() && !free.contains(b.upstreamPortId + "#")) {
        free[b.upstreamPortId + "#"] = {};
        const auto& slots = table_.slots[b.upstreamPortId];
        for (std::uint16_t l = static_cast<std::uint16_t>(slots.size()); l-- > 0;)
          if (!slots[l]) ports.push_back(l);
      }
      if (ports.empty())
        return fail(Code::kFailedPrecondition, fmt::format("host port {} has no free logical port (all {} in use)", b.upstreamPortId,
                                                           table_.slots[b.upstreamPortId].size()));
      Planned p{b, ports.back(), {}, 0};
      ports.pop_back();
      const auto& hp = fabric_.hostPorts.at(b.upstreamPortId);
      p.pax = hp.pax;
      p.request = {hp.pax, hp.physPort, static_cast<std::uint8_t>(p.logicalPort), fabric_.devices.at(b.deviceId).pdfids};
      plan.push_back(std::move(p));
    }
    for (const auto& p : plan) {  // reserve: a concurrent call sees these as taken
      table_.slots[p.binding.upstreamPortId][p.logicalPort] = p.binding.deviceId;
      table_.boundTo[p.binding.deviceId] = {p.binding.upstreamPortId, p.logicalPort};
    }
  }
  std::vector<std::future<Result<std::uint32_t>>> replies;
  for (const auto& p : plan)
    replies.push_back(std::async(std::launch::async, [&, &p = p]() -> Result<std::uint32_t> {
      Result<std::uint32_t> status = 0u;
      auto ran = pool_.withChannel(deadline, [&](MrpcChannel& c) -> Result<void> {
        status = sendBind(c, p.pax, p.request, deadline);
        if (!status) return fail(status.error());
        return {};
      });
      if (!ran) return fail(ran.error());
      return status;
    }));
  std::size_t applied = 0;
  std::optional<Error> transport, refusal;
  {
    std::vector<Result<std::uint32_t>> results;
    for (auto& r : replies) results.push_back(r.get());
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const auto& p = plan[i];
      if (results[i] && *results[i] == 0) {
        ++applied;
        continue;
      }
      table_.slots[p.binding.upstreamPortId][p.logicalPort].reset();  // undo the reservation
      table_.boundTo.erase(p.binding.deviceId);
      if (!results[i]) {
        transport = results[i].error().wrap(fmt::format("bind {} to {}", p.binding.deviceId, p.binding.upstreamPortId));
        table_.stale = true;  // the switch may have applied it: read it again before trusting the table
      } else {
        if (staleExplains(*results[i])) staleRefusal = true;
        refusal = Error{Code::kFailedPrecondition, fmt::format("bind {} to {}: the switch refused: {}", p.binding.deviceId,
                                                                p.binding.upstreamPortId, describeMrpcError(*results[i]))};
      }
    }
    if (staleRefusal) table_.stale = true;
  }
  if (transport) {
    return fail(Error{transport->code, fmt::format("{} ({} of {} binds of this call applied)", transport->message, applied, plan.size())});
  }
  if (refusal) {
    if (applied == 0) return fail(*refusal);
    return fail(Code::kUnavailable, fmt::format("{} ({} of {} binds of this call applied)", refusal->message, applied, plan.size()));
  }
  return {};
}

Result<void> SwitchtecFabric::bindAll(std::span<const Binding> bindings, const CallOptions& options) {
  const auto deadline = deadlineAfter(options.timeout);
  {
    std::lock_guard lock(mutex_);
    SY_TRY(checkNames(bindings));
  }
  SY_TRY(refreshIfStale(deadline));
  bool staleRefusal = false;
  auto r = bindOnce(bindings, deadline, staleRefusal);
  if (r || !staleRefusal) return r;
  // The table was stale (another manager, or a reply this driver lost): read the switch and decide again.
  SY_TRY(refreshIfStale(deadline));
  staleRefusal = false;
  return bindOnce(bindings, deadline, staleRefusal);
}

Result<void> SwitchtecFabric::unbindAll(std::span<const Binding> bindings, const CallOptions& options) {
  const auto deadline = deadlineAfter(options.timeout);
  {
    std::lock_guard lock(mutex_);
    SY_TRY(checkNames(bindings));
    // A device the table shows unbound may have been bound behind its back: look before saying "done".
    for (const auto& b : bindings)
      if (!table_.boundTo.contains(b.deviceId)) table_.stale = true;
  }
  SY_TRY(refreshIfStale(deadline));
  struct Planned {
    Binding binding;
    std::uint16_t logicalPort = 0;
    UnbindRequest request;
  };
  std::vector<Planned> plan;
  {
    std::lock_guard lock(mutex_);
    for (const auto& b : bindings) {
      auto at = table_.boundTo.find(b.deviceId);
      if (at == table_.boundTo.end()) continue;  // not bound: idempotent
      if (at->second.first != b.upstreamPortId)
        return fail(Code::kFailedPrecondition, fmt::format("device {} is bound to {}, not {}", b.deviceId, at->second.first, b.upstreamPortId));
      const auto& hp = fabric_.hostPorts.at(b.upstreamPortId);
      plan.push_back({b, at->second.second,
                      {hp.pax, hp.physPort, static_cast<std::uint8_t>(at->second.second), fabric_.devices.at(b.deviceId).pdfids.front(), 0}});
    }
  }
  std::vector<std::future<Result<std::uint32_t>>> replies;
  for (const auto& p : plan)
    replies.push_back(std::async(std::launch::async, [&, &p = p]() -> Result<std::uint32_t> {
      Result<std::uint32_t> status = 0u;
      auto ran = pool_.withChannel(deadline, [&](MrpcChannel& c) -> Result<void> {
        status = sendUnbind(c, p.request.hostSwitchIndex, p.request, deadline);
        if (!status) return fail(status.error());
        return {};
      });
      if (!ran) return fail(ran.error());
      return status;
    }));
  std::optional<Error> failure;
  std::size_t applied = 0;
  std::vector<Result<std::uint32_t>> results;
  for (auto& r : replies) results.push_back(r.get());
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const auto& p = plan[i];
    const bool done = results[i] && (*results[i] == 0 || *results[i] == mrpc_error::kLogicalPortNotBound);
    if (done) {
      ++applied;
      table_.slots[p.binding.upstreamPortId][p.logicalPort].reset();
      table_.boundTo.erase(p.binding.deviceId);
      continue;
    }
    table_.stale = true;
    failure = results[i] ? Error{Code::kUnavailable, fmt::format("unbind {} from {}: the switch refused: {}", p.binding.deviceId,
                                                                   p.binding.upstreamPortId, describeMrpcError(*results[i]))}
                         : results[i].error().wrap(fmt::format("unbind {} from {}", p.binding.deviceId, p.binding.upstreamPortId));
  }
  if (failure) return fail(Error{failure->code, fmt::format("{} ({} of {} unbinds of this call applied)", failure->message, applied, plan.size())});
  return {};
}

Result<std::vector<Binding>> SwitchtecFabric::readBindings(const CallOptions& options) {
  const auto deadline = deadlineAfter(options.timeout);
  Fabric fabric;
  {
    std::lock_guard lock(mutex_);
    fabric = fabric_;
  }
  SY_ASSIGN(auto table, readTable(fabric, deadline));
  std::vector<Binding> out;
  for (const auto& [device, at] : table.boundTo) out.push_back({device, at.first});
  std::sort(out.begin(), out.end(), [](const Binding& a, const Binding& b) { return a.deviceId < b.deviceId; });
  std::lock_guard lock(mutex_);
  table_ = std::move(table);
  return out;
}

Result<std::vector<Binding>> SwitchtecFabric::readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options) {
  const auto deadline = deadlineAfter(options.timeout);
  std::vector<std::pair<PortId, HostPort>> ports;
  Fabric fabric;
  {
    std::lock_guard lock(mutex_);
    for (const auto& p : upstreamPorts) {
      auto it = fabric_.hostPorts.find(p);
      if (it == fabric_.hostPorts.end()) return fail(Code::kNotFound, fmt::format("{} is not a host port (HVD) on this Switchtec fabric", p));
      ports.emplace_back(p, it->second);
    }
    fabric = fabric_;
  }
  std::vector<std::future<Result<Hvd>>> dumps;
  for (const auto& [port, hp] : ports)
    dumps.push_back(std::async(std::launch::async, [this, hp = hp, deadline]() -> Result<Hvd> {
      Result<Hvd> hvd = fail(Code::kInternal, "not read");
      SY_TRY(pool_.withChannel(deadline, [&](MrpcChannel& c) -> Result<void> {
        hvd = readHvd(c, hp.pax, hp.hvdInstance, deadline);
        if (!hvd) return fail(hvd.error());
        return {};
      }));
      return hvd;
    }));
  std::vector<Binding> out;
  std::vector<std::pair<PortId, std::vector<std::optional<DeviceId>>>> rows;
  for (std::size_t i = 0; i < dumps.size(); ++i) {
    auto hvd = dumps[i].get();
    if (!hvd) return fail(hvd.error());
    if (hvd->physPort != ports[i].second.physPort)
      return fail(Code::kUnavailable, fmt::format("HVD {} of PAX {} is on port {}, not {}: the fabric changed; discover it again", ports[i].second.hvdInstance,
                                                  ports[i].second.pax, hvd->physPort, ports[i].second.physPort));
    std::vector<std::optional<DeviceId>> slots(hvd->logicalPorts);
    for (std::uint16_t l = 0; l < hvd->logicalPorts; ++l) {
      const auto& s = hvd->slot(0, l);
      if (!s.bound) continue;
      auto d = fabric.deviceOfPdfid.find(s.pdfid);
      slots[l] = d != fabric.deviceOfPdfid.end() ? d->second : fmt::format("unknown-pdfid-{:#06x}", s.pdfid);
      out.push_back({*slots[l], ports[i].first});
    }
    rows.emplace_back(ports[i].first, std::move(slots));
  }
  std::lock_guard lock(mutex_);  // what was read replaces those hosts' rows of the table
  for (auto& [port, slots] : rows) {
    for (const auto& old : table_.slots[port])
      if (old) table_.boundTo.erase(*old);
    for (std::uint16_t l = 0; l < slots.size(); ++l)
      if (slots[l]) table_.boundTo[*slots[l]] = {port, l};
    table_.slots[port] = std::move(slots);
  }
  return out;
}

Result<std::vector<FabricEvent>> SwitchtecFabric::pollEvents() {
  std::lock_guard pollLock(pollMutex_);
  const auto deadline = deadlineAfter(std::chrono::seconds(10));
  std::vector<std::uint8_t> paxIds;
  {
    std::lock_guard lock(mutex_);
    paxIds = fabric_.paxIds;
  }
  for (const auto pax : paxIds) {
    for (int rounds = 0; rounds < 16; ++rounds) {
      Result<EventBatch> batch = fail(Code::kInternal, "not read");
      SY_TRY(pool_.withChannel(deadline, [&](MrpcChannel& c) -> Result<void> {
        batch = readEvents(c, pax, 64, deadline);
        if (!batch) return fail(batch.error().wrap("cannot read the Switchtec fabric's events"));
        return {};
      }));
      std::lock_guard lock(mutex_);
      for (const auto& e : batch->events) {
        const auto port = physPortOf(e);
        const auto device = port ? fabric_.deviceAt.find(static_cast<std::uint16_t>(e.sourceSwitch << 8 | *port)) : fabric_.deviceAt.end();
        const bool isDevice = device != fabric_.deviceAt.end();
        switch (e.code) {
          case GfmsEventCode::kDeviceDelete:
          case GfmsEventCode::kEpPortRemove:
            if (isDevice)
              pendingEvents_.push_back({"device.health", device->second,
                                        fmt::format("device {} left the fabric (link down at PAX {} port {})", device->second, e.sourceSwitch, *port),
                                        DeviceHealth::kCritical});
            break;
          case GfmsEventCode::kDeviceAdd:
          case GfmsEventCode::kEpPortAdd:
            if (isDevice)
              pendingEvents_.push_back({"device.health", device->second, fmt::format("device {} is back on the fabric", device->second), DeviceHealth::kOk});
            break;
          case GfmsEventCode::kAer:
            if (isDevice) {
              const bool dpc = aerTriggeredDpc(e);
              pendingEvents_.push_back({"device.health", device->second,
                                        fmt::format("device {}: PCIe AER report{}", device->second, dpc ? ", link contained by DPC" : ""),
                                        dpc ? DeviceHealth::kCritical : DeviceHealth::kWarning});
            }
            break;
          case GfmsEventCode::kHostLinkDown:
          case GfmsEventCode::kFabricLinkDown:
            if (port) pendingEvents_.push_back({"link.down", portName(e.sourceSwitch, *port), fmt::format("link down at {}", portName(e.sourceSwitch, *port))});
            break;
          case GfmsEventCode::kHostLinkUp:
          case GfmsEventCode::kFabricLinkUp:
            if (port) pendingEvents_.push_back({"link.up", portName(e.sourceSwitch, *port), fmt::format("link up at {}", portName(e.sourceSwitch, *port))});
            break;
          default: break;  // binds, unbinds, database changes: readBindings reads their result
        }
      }
      if (batch->overflow)
        pendingEvents_.push_back({"events.lost", fmt::format("{}pax{}", options_.prefix, pax), "the switch's event queue overflowed; reconcile reads the truth"});
      if (batch->remaining == 0) break;
    }
  }
  std::lock_guard lock(mutex_);
  return std::exchange(pendingEvents_, {});
}

}  // namespace switchyard
