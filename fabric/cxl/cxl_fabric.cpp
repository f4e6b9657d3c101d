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
  auto isUpstream = [&](const cxl::PortState& p) {
    return p.configState == static_cast<std::uint8_t>(cxl::PortConfigState::kUpstream) || upstream.contains(p.port);
  };
  auto hasDevice = [&](const cxl::PortState& p) {
    return !isUpstream(p) && p.deviceType != static_cast<std::uint8_t>(cxl::ConnectedDevice::kNone) &&
           p.deviceType != static_cast<std::uint8_t>(cxl::ConnectedDevice::kSwitch);
  };
  // What each device is: its ids (dword 0) and class (dword 2) from the configuration space behind its
  // port, all ports' reads pipelined.
  std::vector<cxl::ConfigRead> reads;
  for (const auto& p : ports)
    if (hasDevice(p)) reads.insert(reads.end(), {{p.port, 0x00}, {p.port, 0x08}});
  SY_ASSIGN(const auto config, client.readConfig(reads, deadline));
  std::size_t nextRead = 0;
  for (const auto& p : ports) {
    Port port;
    port.id = portName(p.port);
    port.switchId = switchId_;
    port.kind = isUpstream(p) ? PortKind::kUpstream : PortKind::kDownstream;
    port.linkGeneration = cxlLinkGeneration(p.currentLinkSpeed ? p.currentLinkSpeed : p.maxLinkSpeed);
    port.linkWidth = p.negotiatedLinkWidth ? p.negotiatedLinkWidth : p.maxLinkWidth;
    t.ports.push_back(std::move(port));
    if (!hasDevice(p)) continue;
    Device d;
    d.portId = portName(p.port);
    const std::uint32_t ids = config[nextRead++], classRev = config[nextRead++];
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
  return change(bindings, true, fmDeadlineAfter(options.timeout));
}

Result<void> CxlFabric::unbindAll(std::span<const Binding> bindings, const CallOptions& options) {
  return change(bindings, false, fmDeadlineAfter(options.timeout));
}

Result<std::vector<CxlFabric::Change>> CxlFabric::plan(std::span<const Binding> bindings, bool bind, const std::vector<cxl::VirtualSwitch>& vcss) const {
  std::map<DeviceId, Slot> boundAt;
  for (const auto& [slot, device] : boundDevices(vcss)) boundAt[device] = slot;
  std::map<std::uint8_t, std::vector<bool>> taken;  // vcs -> vPPBs in use (bound, in progress, or planned here)
  for (const auto& v : vcss) {
    auto& used = taken[v.id];
    for (const auto& b : v.vppbs) used.push_back(b.status != static_cast<std::uint8_t>(cxl::VppbBinding::kUnbound));
  }
  std::vector<Change> changes;
  for (const auto& b : bindings) {
    const std::uint8_t vcs = fabric_.vcsOfHostPort.at(b.upstreamPortId);
    const auto at = boundAt.find(b.deviceId);
    if (at != boundAt.end() && at->second.vcs != vcs)
      return fail(Code::kFailedPrecondition, fmt::format("device '{}' is bound to {} (VCS {}), not '{}'", b.deviceId,
                                                         fabric_.hostPortOfVcs.at(at->second.vcs), at->second.vcs, b.upstreamPortId));
    if (!bind) {
      if (at != boundAt.end()) changes.push_back({at->second, fabric_.devices.at(b.deviceId), b.deviceId});
      continue;  // not bound: unbinds are idempotent
    }
    if (at != boundAt.end()) continue;  // already there: binds are idempotent
    auto& used = taken[vcs];
    const auto free = std::find(used.begin(), used.end(), false);
    if (free == used.end())
      return fail(Code::kFailedPrecondition, fmt::format("VCS {} of '{}' has no unbound vPPB left for '{}'", vcs, b.upstreamPortId, b.deviceId));
    *free = true;
    changes.push_back({{vcs, static_cast<std::uint8_t>(free - used.begin())}, fabric_.devices.at(b.deviceId), b.deviceId});
  }
  return changes;
}

// A set's binds (or unbinds) in three round trips whatever its size (up to 8 in flight at once): read the
// VCSs (another FM may have changed them), send every change pipelined, then read the touched VCSs until
// each change shows (a switch runs binds in the background; one that answers "busy" runs one at a time,
// and the busy ones are sent again once the others are done).
Result<void> CxlFabric::change(std::span<const Binding> bindings, bool bind, cxl::Deadline deadline) {
  if (bindings.empty()) return {};
  std::vector<std::uint8_t> allVcs;
  {
    std::lock_guard lock(mutex_);
    SY_TRY(checkNames(bindings));
    for (const auto& [vcs, port] : fabric_.hostPortOfVcs) allVcs.push_back(vcs);
  }
  std::sort(allVcs.begin(), allVcs.end());
  const std::string_view verb = bind ? "binding" : "unbinding";
  return withSwitch(deadline, [&](cxl::FmClient& c) -> Result<void> {
    SY_ASSIGN(const auto vcss, c.virtualSwitches(allVcs, deadline));
    std::vector<Change> changes;
    {
      std::lock_guard lock(mutex_);
      SY_ASSIGN(changes, plan(bindings, bind, vcss));
    }
    std::vector<std::size_t> toSend(changes.size()), awaiting;
    for (std::size_t i = 0; i < changes.size(); ++i) toSend[i] = i;
    bool appliedAny = false;
    // A failure after a change of this call may have been applied must not read as "changed nothing".
    auto failWith = [&](Error e) -> Result<void> {
      if (appliedAny && changedNothing(e.code)) e.code = Code::kUnavailable;
      return fail(std::move(e));
    };
    auto pause = std::chrono::milliseconds(1);
    while (!toSend.empty() || !awaiting.empty()) {
      if (!toSend.empty()) {
        std::vector<cxl::FmRequest> requests;
        for (const auto i : toSend) {
          const auto& ch = changes[i];
          requests.push_back(bind ? cxl::FmRequest{cxl::Opcode::kBindVppb, cxl::bindVppbRequest(ch.slot.vcs, ch.slot.vppb, ch.target.port, ch.target.ld)}
                                  : cxl::FmRequest{cxl::Opcode::kUnbindVppb, cxl::unbindVppbRequest(ch.slot.vcs, ch.slot.vppb, options_.unbindOption)});
        }
        SY_ASSIGN(const auto codes, c.startAll(requests, deadline));
        std::vector<std::size_t> busy;
        for (std::size_t k = 0; k < codes.size(); ++k) {
          const auto& ch = changes[toSend[k]];
          if (codes[k] == cxl::rc::kSuccess || codes[k] == cxl::rc::kBackgroundStarted) {
            awaiting.push_back(toSend[k]);
            appliedAny = true;
          } else if (codes[k] == cxl::rc::kBusy) {
            busy.push_back(toSend[k]);
          } else {
            return failWith(c.refused(requests[k].opcode, codes[k]).wrap(fmt::format("{} '{}' at VCS {} vPPB {}", verb, ch.device, ch.slot.vcs, ch.slot.vppb)));
          }
        }
        toSend = std::move(busy);
      }
      if (!awaiting.empty()) {
        std::vector<std::uint8_t> touched;
        for (const auto i : awaiting) touched.push_back(changes[i].slot.vcs);
        std::sort(touched.begin(), touched.end());
        touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
        SY_ASSIGN(const auto now, c.virtualSwitches(touched, deadline));
        std::map<std::uint8_t, const cxl::VirtualSwitch*> byId;
        for (const auto& v : now) byId[v.id] = &v;
        std::vector<std::size_t> still;
        for (const auto i : awaiting) {
          const auto& ch = changes[i];
          const auto& vppbs = byId.at(ch.slot.vcs)->vppbs;
          if (ch.slot.vppb >= vppbs.size())
            return failWith(Error{Code::kUnavailable, fmt::format("{}: VCS {} no longer has vPPB {}", switchId_, ch.slot.vcs, ch.slot.vppb)});
          const auto& v = vppbs[ch.slot.vppb];
          if (v.status == static_cast<std::uint8_t>(cxl::VppbBinding::kInProgress)) {
            still.push_back(i);
            continue;
          }
          const bool there = v.bound() && v.port == ch.target.port &&
                             (ch.target.ld == cxl::kNoLd ? v.status == static_cast<std::uint8_t>(cxl::VppbBinding::kBoundPort) : v.ld == ch.target.ld);
          if (there == bind) continue;  // done
          // The background operation ended without the change: ask the switch why.
          std::string why = "the switch's background operation ended without it";
          if (auto op = c.backgroundOperation(deadline); op && op->returnCode != cxl::rc::kSuccess)
            why = fmt::format("background operation {:04x}h answered {}", op->opcode, cxl::describeReturnCode(op->returnCode));
          return failWith(Error{Code::kUnavailable, fmt::format("{} '{}' at VCS {} vPPB {}: {}", verb, ch.device, ch.slot.vcs, ch.slot.vppb, why)});
        }
        awaiting = std::move(still);
      }
      if (toSend.empty() && awaiting.empty()) break;
      if (std::chrono::steady_clock::now() + pause >= deadline)
        return failWith(Error{Code::kDeadlineExceeded, fmt::format("{}: {} {} device(s) did not finish before the call's deadline", switchId_, verb,
                                                                  toSend.size() + awaiting.size())});
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(50));
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
