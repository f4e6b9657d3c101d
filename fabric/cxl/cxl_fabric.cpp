#include "fabric/cxl/cxl_fabric.h"

#include <algorithm>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "fabric/pci_device_ids.h"

namespace switchyard {

namespace {

cxl::Deadline fmDeadlineAfter(Duration d) {
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
}

// CXL's link speed encoding is the PCIe generation (1 = 2.5 GT/s ... 6 = 64 GT/s).
int cxlLinkGeneration(std::uint8_t speed) { return speed >= 1 && speed <= 6 ? speed : 5; }

bool isCxlMemory(std::uint8_t deviceType) {
  return deviceType == static_cast<std::uint8_t>(cxl::ConnectedDevice::kCxlType3) || deviceType == static_cast<std::uint8_t>(cxl::ConnectedDevice::kCxlType3Pooled);
}

}  // namespace

CxlFabric::CxlFabric(CxlOptions options) : options_(std::move(options)), switchId_(options_.prefix + "cxl0") {}

std::string CxlFabric::portName(std::uint8_t port) const { return fmt::format("{}-p{}", switchId_, port); }

std::uint64_t CxlFabric::commandsSent() const { return commands_.load(); }

template <typename Work>
auto CxlFabric::withSwitch(cxl::Deadline deadline, Work&& work) -> decltype(work(std::declval<cxl::FmClient&>())) {
  // A call waits for the one before it no longer than its own deadline.
  std::unique_lock lock(wire_, std::defer_lock);
  if (!lock.try_lock_until(deadline))
    return fail(Code::kDeadlineExceeded, fmt::format("{}: another call held the switch's FM session until the deadline", switchId_));
  SY_ASSIGN(auto session, options_.transport->open(deadline));
  cxl::FmClient client(*session, options_.dialect, fmt::format("CXL switch {} at {}", switchId_, options_.transport->describe()));
  auto result = work(client);
  commands_ += client.commandsSent();
  return result;
}

Result<std::unique_ptr<CxlFabric>> CxlFabric::connect(CxlOptions options) {
  if (!options.transport) {
    SY_ASSIGN(auto endpoint, cxl::mctpTcpEndpoint(options.endpoint));
    options.transport = std::move(endpoint);
  }
  std::unique_ptr<CxlFabric> fabric(new CxlFabric(std::move(options)));
  SY_TRY(fabric->discover());
  return fabric;
}

Result<CxlFabric::Fabric> CxlFabric::readFabric(cxl::FmClient& client, cxl::Deadline deadline) {
  SY_ASSIGN(const auto identity, client.identifySwitch(deadline));
  Fabric f;
  for (unsigned p = 0; p < identity.numPorts; ++p)
    if (identity.portActive(p)) f.ports.push_back(static_cast<std::uint8_t>(p));
  std::vector<std::uint8_t> vcsIds;
  for (unsigned v = 0; v < identity.numVcss; ++v)
    if (identity.vcsActive(v)) vcsIds.push_back(static_cast<std::uint8_t>(v));
  SY_ASSIGN(f.portStates, client.physicalPortState(f.ports, deadline));
  const auto& ports = f.portStates;
  SY_ASSIGN(const auto vcss, client.virtualSwitches(vcsIds, deadline));

  Topology& t = f.topology;
  t.switches.push_back({switchId_, SwitchKind::kCxl, fmt::format("CXL FM-API switch, {} ports", identity.numPorts), std::string(kDefaultDomain)});
  std::set<std::uint8_t> upstream;
  for (const auto& v : vcss) upstream.insert(v.upstreamPort);
  for (const auto& p : ports) {
    Port port;
    port.id = portName(p.port);
    port.switchId = switchId_;
    const bool isUpstream = p.configState == static_cast<std::uint8_t>(cxl::PortConfigState::kUpstream) || upstream.contains(p.port);
    port.kind = isUpstream ? PortKind::kUpstream : PortKind::kDownstream;
    port.linkGeneration = cxlLinkGeneration(p.currentLinkSpeed ? p.currentLinkSpeed : p.maxLinkSpeed);
    port.linkWidth = p.negotiatedLinkWidth ? p.negotiatedLinkWidth : p.maxLinkWidth;
    t.ports.push_back(std::move(port));
    if (isUpstream || p.deviceType == static_cast<std::uint8_t>(cxl::ConnectedDevice::kNone) ||
        p.deviceType == static_cast<std::uint8_t>(cxl::ConnectedDevice::kSwitch))
      continue;
    // What the device is: its ids and class from the configuration space behind the port.
    Device d;
    d.portId = portName(p.port);
    SY_ASSIGN(const std::uint32_t ids, client.readConfig(p.port, 0x00, deadline));
    SY_ASSIGN(const std::uint32_t classRev, client.readConfig(p.port, 0x08, deadline));
    d.kind = isCxlMemory(p.deviceType) ? DeviceKind::kCxlMemory : deviceKindOfClass(classRev >> 8);
    describePciDevice(static_cast<std::uint16_t>(ids), static_cast<std::uint16_t>(ids >> 16), d);
    if (p.deviceType == static_cast<std::uint8_t>(cxl::ConnectedDevice::kCxlType3Pooled) && p.ldCount > 0) {
      SY_ASSIGN(const auto allocations, client.ldAllocations(p.port, deadline));
      for (std::size_t i = 0; i < allocations.lds.size() && i < p.ldCount; ++i) {
        const auto ld = static_cast<std::uint16_t>(allocations.startLd + i);
        Device l = d;
        l.id = fmt::format("{}-ep{}-ld{}", switchId_, p.port, ld);
        const auto bytes = (allocations.lds[i].range1 + allocations.lds[i].range2) * allocations.granularity;
        l.memoryGiB = static_cast<int>(bytes >> 30);
        f.devices[l.id] = {p.port, ld};
        f.deviceAt[{p.port, ld}] = l.id;
        t.devices.push_back(std::move(l));
      }
      continue;
    }
    d.id = fmt::format("{}-ep{}", switchId_, p.port);
    f.devices[d.id] = {p.port, cxl::kNoLd};
    f.deviceAt[{p.port, cxl::kNoLd}] = d.id;
    t.devices.push_back(std::move(d));
  }
  for (const auto& v : vcss) {
    if (v.state != 1) continue;  // a disabled VCS has no host behind it
    Host h;
    const auto key = fmt::format("vcs{}", v.id);
    const auto named = options_.hostNames.find(key);
    h.id = named != options_.hostNames.end() ? named->second : fmt::format("{}-vcs{}", switchId_, v.id);
    h.upstreamPorts.push_back({portName(v.upstreamPort), 0});
    h.maxDevices = static_cast<int>(v.vppbs.size());
    f.vcsOfHostPort[portName(v.upstreamPort)] = v.id;
    f.hostPortOfVcs[v.id] = portName(v.upstreamPort);
    t.hosts.push_back(std::move(h));
  }
  if (auto valid = validateTopology(t); !valid) return fail(valid.error().wrap(fmt::format("CXL switch {}", switchId_)));
  return f;
}

Result<Topology> CxlFabric::discover() {
  const auto deadline = fmDeadlineAfter(options_.discoveryTimeout);
  SY_ASSIGN(auto f, withSwitch(deadline, [&](cxl::FmClient& c) { return readFabric(c, deadline); }));
  std::lock_guard lock(mutex_);
  if (!lastPorts_) lastPorts_ = f.portStates;  // the first poll's baseline; later ones keep their own
  fabric_ = std::move(f);
  return fabric_.topology;
}

Result<void> CxlFabric::checkNames(std::span<const Binding> bindings) const {
  std::set<DeviceId> seen;
  for (const auto& b : bindings) {
    if (!fabric_.devices.contains(b.deviceId)) return fail(Code::kNotFound, fmt::format("no device '{}' on CXL switch {}", b.deviceId, switchId_));
    if (!fabric_.vcsOfHostPort.contains(b.upstreamPortId))
      return fail(Code::kNotFound, fmt::format("'{}' is not a host's upstream port on CXL switch {}", b.upstreamPortId, switchId_));
    if (!seen.insert(b.deviceId).second) return fail(Code::kInvalidArgument, fmt::format("device '{}' named twice in one call", b.deviceId));
  }
  return {};
}

std::vector<std::pair<CxlFabric::Slot, DeviceId>> CxlFabric::boundDevices(const std::vector<cxl::VirtualSwitch>& vcss) const {
  std::vector<std::pair<Slot, DeviceId>> out;
  for (const auto& v : vcss)
    for (std::size_t k = 0; k < v.vppbs.size(); ++k) {
      const auto& b = v.vppbs[k];
      if (!b.bound()) continue;
      const std::uint16_t ld = b.status == static_cast<std::uint8_t>(cxl::VppbBinding::kBoundLd) ? b.ld : cxl::kNoLd;
      const auto device = fabric_.deviceAt.find({b.port, ld});
      if (device != fabric_.deviceAt.end()) out.push_back({{v.id, static_cast<std::uint8_t>(k)}, device->second});
    }
  return out;
}

Result<void> CxlFabric::bindAll(std::span<const Binding> bindings, const CallOptions& options) {
  if (bindings.empty()) return {};
  const auto deadline = fmDeadlineAfter(options.timeout);
  {
    std::lock_guard lock(mutex_);
    SY_TRY(checkNames(bindings));
  }
  return withSwitch(deadline, [&](cxl::FmClient& c) -> Result<void> {
    std::vector<std::uint8_t> allVcs;
    struct Planned {
      std::uint8_t vcs, vppb;
      Target target;
      DeviceId device;
    };
    std::vector<Planned> plan;
    {
      std::unique_lock lock(mutex_);
      for (const auto& [vcs, port] : fabric_.hostPortOfVcs) allVcs.push_back(vcs);
      lock.unlock();
      std::sort(allVcs.begin(), allVcs.end());
      SY_ASSIGN(const auto vcss, c.virtualSwitches(allVcs, deadline));  // another FM may have changed them
      lock.lock();
      std::map<DeviceId, Slot> boundAt;
      for (const auto& [slot, device] : boundDevices(vcss)) boundAt[device] = slot;
      std::map<std::uint8_t, std::vector<bool>> taken;  // vcs -> vPPBs in use (bound, or planned here)
      for (const auto& v : vcss) {
        auto& used = taken[v.id];
        for (const auto& b : v.vppbs) used.push_back(b.status != static_cast<std::uint8_t>(cxl::VppbBinding::kUnbound));
      }
      for (const auto& b : bindings) {
        const std::uint8_t vcs = fabric_.vcsOfHostPort.at(b.upstreamPortId);
        if (const auto at = boundAt.find(b.deviceId); at != boundAt.end()) {
          if (at->second.vcs == vcs) continue;  // already there: binds are idempotent
          return fail(Code::kFailedPrecondition, fmt::format("device '{}' is bound to {} (VCS {}), not '{}'", b.deviceId,
                                                             fabric_.hostPortOfVcs.at(at->second.vcs), at->second.vcs, b.upstreamPortId));
        }
        auto& used = taken[vcs];
        const auto free = std::find(used.begin(), used.end(), false);
        if (free == used.end())
          return fail(Code::kFailedPrecondition, fmt::format("VCS {} of '{}' has no unbound vPPB left for '{}'", vcs, b.upstreamPortId, b.deviceId));
        *free = true;
        plan.push_back({vcs, static_cast<std::uint8_t>(free - used.begin()), fabric_.devices.at(b.deviceId), b.deviceId});
      }
    }
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const auto& p = plan[i];
      if (auto bound = c.bind(p.vcs, p.vppb, p.target.port, p.target.ld, deadline); !bound) {
        auto e = bound.error().wrap(fmt::format("binding '{}' to VCS {} vPPB {}", p.device, p.vcs, p.vppb));
        // Binds before this one were made: the call as a whole changed something.
        if (i > 0 && changedNothing(e.code)) e.code = Code::kUnavailable;
        return fail(std::move(e));
      }
    }
    return {};
  });
}

Result<void> CxlFabric::unbindAll(std::span<const Binding> bindings, const CallOptions& options) {
  if (bindings.empty()) return {};
  const auto deadline = fmDeadlineAfter(options.timeout);
  {
    std::lock_guard lock(mutex_);
    SY_TRY(checkNames(bindings));
  }
  return withSwitch(deadline, [&](cxl::FmClient& c) -> Result<void> {
    std::vector<std::uint8_t> allVcs;
    std::vector<std::pair<Slot, DeviceId>> plan;
    {
      std::unique_lock lock(mutex_);
      for (const auto& [vcs, port] : fabric_.hostPortOfVcs) allVcs.push_back(vcs);
      lock.unlock();
      std::sort(allVcs.begin(), allVcs.end());
      SY_ASSIGN(const auto vcss, c.virtualSwitches(allVcs, deadline));
      lock.lock();
      std::map<DeviceId, Slot> boundAt;
      for (const auto& [slot, device] : boundDevices(vcss)) boundAt[device] = slot;
      for (const auto& b : bindings) {
        const auto at = boundAt.find(b.deviceId);
        if (at == boundAt.end()) continue;  // not bound: unbinds are idempotent
        if (at->second.vcs != fabric_.vcsOfHostPort.at(b.upstreamPortId))
          return fail(Code::kFailedPrecondition, fmt::format("device '{}' is bound to {} (VCS {}), not '{}'", b.deviceId,
                                                             fabric_.hostPortOfVcs.at(at->second.vcs), at->second.vcs, b.upstreamPortId));
        plan.push_back({at->second, b.deviceId});
      }
    }
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const auto& [slot, device] = plan[i];
      if (auto unbound = c.unbind(slot.vcs, slot.vppb, options_.unbindOption, deadline); !unbound) {
        auto e = unbound.error().wrap(fmt::format("unbinding '{}' from VCS {} vPPB {}", device, slot.vcs, slot.vppb));
        if (i > 0 && changedNothing(e.code)) e.code = Code::kUnavailable;
        return fail(std::move(e));
      }
    }
    return {};
  });
}

Result<std::vector<Binding>> CxlFabric::readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options) {
  const auto deadline = fmDeadlineAfter(options.timeout);
  std::vector<std::uint8_t> ids;
  {
    std::lock_guard lock(mutex_);
    for (const auto& port : upstreamPorts)
      if (const auto v = fabric_.vcsOfHostPort.find(port); v != fabric_.vcsOfHostPort.end()) ids.push_back(v->second);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.empty()) return std::vector<Binding>{};
  SY_ASSIGN(const auto vcss, withSwitch(deadline, [&](cxl::FmClient& c) { return c.virtualSwitches(ids, deadline); }));
  std::lock_guard lock(mutex_);
  std::vector<Binding> out;
  for (const auto& [slot, device] : boundDevices(vcss)) out.push_back({device, fabric_.hostPortOfVcs.at(slot.vcs)});
  return out;
}

Result<std::vector<Binding>> CxlFabric::readBindings(const CallOptions& options) {
  std::vector<PortId> all;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [port, vcs] : fabric_.vcsOfHostPort) all.push_back(port);
  }
  return readBindingsOf(all, options);
}

Result<std::vector<FabricEvent>> CxlFabric::pollEvents() {
  std::lock_guard poll(pollMutex_);
  const auto deadline = fmDeadlineAfter(std::chrono::seconds(10));
  std::vector<std::uint8_t> ports;
  {
    std::lock_guard lock(mutex_);
    ports = fabric_.ports;
  }
  SY_ASSIGN(auto now, withSwitch(deadline, [&](cxl::FmClient& c) { return c.physicalPortState(ports, deadline); }));
  std::lock_guard lock(mutex_);
  if (lastPorts_ && lastPorts_->size() == now.size()) {
    for (std::size_t i = 0; i < now.size(); ++i) {
      const auto& was = (*lastPorts_)[i];
      const auto& is = now[i];
      if (was.linkUp() == is.linkUp()) continue;
      const auto port = portName(is.port);
      bool hasDevice = false;
      for (const auto& [at, device] : fabric_.deviceAt) {
        if (at.first != is.port) continue;
        hasDevice = true;
        if (is.linkUp())
          pending_.push_back({"device.health", device, fmt::format("device {} is back on the fabric", device), DeviceHealth::kOk});
        else
          pending_.push_back({"device.health", device, fmt::format("device {} left the fabric: link down at {}", device, port), DeviceHealth::kCritical});
      }
      if (!hasDevice)
        pending_.push_back({is.linkUp() ? "link.up" : "link.down", port, fmt::format("link {} at {}", is.linkUp() ? "up" : "down", port)});
    }
  }
  lastPorts_ = std::move(now);
  return std::exchange(pending_, {});
}

}  // namespace switchyard
