#include "fabric/cxl/cxl_fabric.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "fabric/pci_device_ids.h"

namespace switchyard {

namespace {

// CXL's link speed encoding is the PCIe generation (1 = 2.5 GT/s ... 6 = 64 GT/s).
int cxlLinkGeneration(std::uint8_t speed) { return speed >= 1 && speed <= 6 ? speed : 5; }

bool isCxlMemory(std::uint8_t deviceType) {
  return deviceType == static_cast<std::uint8_t>(cxl::ConnectedDevice::kCxlType3) || deviceType == static_cast<std::uint8_t>(cxl::ConnectedDevice::kCxlType3Pooled);
}

}  // namespace

CxlFabric::CxlFabric(CxlOptions options) : options_(std::move(options)), switchId_(options_.prefix + "cxl0") {
  worker_ = std::make_unique<cxl::FmWorker>(options_.transport, options_.dialect,
                                            fmt::format("CXL switch {} at {}", switchId_, options_.transport->describe()),
                                            [this](cxl::FmClient& c, std::span<const std::shared_ptr<cxl::FmWorker::Job>> jobs, cxl::Deadline deadline) {
                                              runBatch(c, jobs, deadline);
                                            },
                                            options_.replyTimeout);
}

std::string CxlFabric::portName(std::uint8_t port) const { return fmt::format("{}-p{}", switchId_, port); }

std::uint64_t CxlFabric::commandsSent() const { return worker_->commandsSent(); }

std::uint64_t CxlFabric::sessions() const { return worker_->batches(); }

std::uint64_t CxlFabric::batchReruns() const { return worker_->reruns(); }

Result<void> CxlFabric::exclusive(cxl::Deadline deadline, std::function<Result<void>(cxl::FmClient&, cxl::Deadline)> work) {
  auto job = std::make_shared<ExclusiveJob>();
  job->deadline = deadline;
  job->exclusive = true;
  job->work = std::move(work);
  return worker_->run(job);
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
  std::vector<std::uint8_t> active;
  for (unsigned p = 0; p < identity.numPorts; ++p)
    if (identity.portActive(p)) active.push_back(static_cast<std::uint8_t>(p));
  std::vector<std::uint8_t> vcsIds;
  for (unsigned v = 0; v < identity.numVcss; ++v)
    if (identity.vcsActive(v)) vcsIds.push_back(static_cast<std::uint8_t>(v));
  SY_ASSIGN(f.portStates, client.physicalPortState(active, deadline));
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
    if (isCxlMemory(p.deviceType)) d.kind = DeviceKind::kCxlMemory;
    else classifyPciFunction(classRev >> 8, d);
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
  // What the worker reads lives in `read` (shared): a call that gave up at its deadline leaves it behind.
  auto read = std::make_shared<std::optional<Fabric>>();
  SY_TRY(exclusive(deadlineAfter(options_.discoveryTimeout), [this, read](cxl::FmClient& c, cxl::Deadline deadline) -> Result<void> {
    SY_ASSIGN(*read, readFabric(c, deadline));
    return {};
  }));
  auto f = std::move(**read);
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

Result<void> CxlFabric::bindAll(std::span<const Binding> bindings, const CallOptions& options) {
  return change(bindings, true, deadlineAfter(options.timeout));
}

Result<void> CxlFabric::unbindAll(std::span<const Binding> bindings, const CallOptions& options) {
  return change(bindings, false, deadlineAfter(options.timeout));
}

Result<void> CxlFabric::change(std::span<const Binding> bindings, bool bind, cxl::Deadline deadline) {
  if (bindings.empty()) return {};
  {
    std::lock_guard lock(mutex_);
    SY_TRY(checkNames(bindings));  // names are checked at once; the batch checks them again with the rest
  }
  auto job = std::make_shared<ChangeJob>();
  job->deadline = deadline;
  job->bind = bind;
  job->bindings.assign(bindings.begin(), bindings.end());
  return worker_->run(job);
}

Result<std::vector<Binding>> CxlFabric::readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options) {
  const auto deadline = deadlineAfter(options.timeout);
  std::vector<std::uint8_t> ids;
  {
    std::lock_guard lock(mutex_);
    for (const auto& port : upstreamPorts)
      if (const auto v = fabric_.vcsOfHostPort.find(port); v != fabric_.vcsOfHostPort.end()) ids.push_back(v->second);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.empty()) return std::vector<Binding>{};
  auto job = std::make_shared<ReadJob>();
  job->deadline = deadline;
  job->vcss = std::move(ids);
  SY_TRY(worker_->run(job));
  return std::move(job->bindings);
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
  const auto deadline = deadlineAfter(std::chrono::seconds(10));
  std::vector<std::uint8_t> ports;
  {
    std::lock_guard lock(mutex_);
    for (const auto& p : fabric_.portStates) ports.push_back(p.port);
  }
  auto read = std::make_shared<std::vector<cxl::PortState>>();
  SY_TRY(exclusive(deadline, [read, ports](cxl::FmClient& c, cxl::Deadline d) -> Result<void> {
    SY_ASSIGN(*read, c.physicalPortState(ports, d));
    return {};
  }));
  auto now = std::move(*read);
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
