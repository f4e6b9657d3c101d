#include "composer/model/topology.h"

#include <fmt/format.h>

#include <unordered_map>
#include <unordered_set>

namespace switchyard {

namespace {

template <typename T>
Result<void> requireUniqueIds(const std::vector<T>& items, std::string_view what) {
  std::unordered_set<std::string_view> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& id = items[i].id;
    if (id.empty()) return fail(Code::kInvalidArgument, fmt::format("{}[{}]: id is empty", what, i));
    if (!seen.insert(id).second)
      return fail(Code::kInvalidArgument, fmt::format("{}[{}]: duplicate id '{}'", what, i, id));
  }
  return {};
}

}  // namespace

Result<void> validateTopology(const Topology& t) {
  if (auto r = requireUniqueIds(t.switches, "switches"); !r) return r;
  if (auto r = requireUniqueIds(t.ports, "ports"); !r) return r;
  if (auto r = requireUniqueIds(t.hosts, "hosts"); !r) return r;
  if (auto r = requireUniqueIds(t.devices, "devices"); !r) return r;
  TopologyIndex index(t);

  for (std::size_t i = 0; i < t.ports.size(); ++i) {
    const Port& p = t.ports[i];
    if (!index.findSwitch(p.switchId))
      return fail(Code::kInvalidArgument,
                  fmt::format("ports[{}] '{}': switch '{}' does not exist", i, p.id, p.switchId));
    if (p.linkWidth <= 0 || p.linkGeneration <= 0)
      return fail(Code::kInvalidArgument, fmt::format("ports[{}] '{}': link generation and width must be positive", i, p.id));
    if (p.kind == PortKind::kInterSwitch) {
      const Port* peer = index.port(p.peerPort);
      if (!peer || peer->kind != PortKind::kInterSwitch || peer->peerPort != p.id)
        return fail(Code::kInvalidArgument,
                    fmt::format("ports[{}] '{}': inter-switch peer '{}' must be an inter-switch port that names it back",
                                i, p.id, p.peerPort));
      if (peer->switchId == p.switchId)
        return fail(Code::kInvalidArgument, fmt::format("ports[{}] '{}': inter-switch link loops back to its own switch", i, p.id));
    }
  }

  for (std::size_t i = 0; i < t.switches.size(); ++i)
    if (t.switches[i].domain.empty())
      return fail(Code::kInvalidArgument, fmt::format("switches[{}] '{}': domain is empty", i, t.switches[i].id));
  for (std::size_t i = 0; i < t.ports.size(); ++i) {
    const Port& p = t.ports[i];
    if (p.kind != PortKind::kInterSwitch) continue;
    const std::string* here = index.domainOfPort(p.id);
    const std::string* there = index.domainOfPort(p.peerPort);
    if (*here != *there)
      return fail(Code::kInvalidArgument, fmt::format("ports[{}] '{}': inter-switch link from domain '{}' to domain '{}'; a link "
                                                      "never leaves its domain (one switch manager runs both ends)",
                                                      i, p.id, *here, *there));
  }

  std::unordered_set<std::string_view> usedUpstream;
  for (std::size_t i = 0; i < t.hosts.size(); ++i) {
    const Host& h = t.hosts[i];
    if (h.maxDevices < 0) return fail(Code::kInvalidArgument, fmt::format("hosts[{}] '{}': maxDevices must be >= 0", i, h.id));
    for (const auto& usp : h.upstreamPorts) {
      const Port* p = index.port(usp.portId);
      if (!p || p->kind != PortKind::kUpstream)
        return fail(Code::kInvalidArgument,
                    fmt::format("hosts[{}] '{}': '{}' is not an upstream port", i, h.id, usp.portId));
      if (!usedUpstream.insert(usp.portId).second)
        return fail(Code::kInvalidArgument,
                    fmt::format("hosts[{}] '{}': upstream port '{}' is cabled to another host", i, h.id, usp.portId));
      const std::string& first = *index.domainOfPort(h.upstreamPorts.front().portId);
      if (const std::string& domain = *index.domainOfPort(usp.portId); domain != first)
        return fail(Code::kInvalidArgument,
                    fmt::format("hosts[{}] '{}': upstream ports in domains '{}' and '{}'; a host is cabled into one domain, so "
                                "that no system spans two switch managers",
                                i, h.id, first, domain));
    }
  }

  // A downstream port holds one device, except that the logical devices of a CXL multi-logical device
  // (an MLD's LDs, each bound to a host on its own) share their port.
  std::unordered_map<std::string_view, DeviceKind> usedDownstream;
  for (std::size_t i = 0; i < t.devices.size(); ++i) {
    const Device& d = t.devices[i];
    const Port* p = index.port(d.portId);
    if (!p || p->kind != PortKind::kDownstream)
      return fail(Code::kInvalidArgument, fmt::format("devices[{}] '{}': '{}' is not a downstream port", i, d.id, d.portId));
    if (auto [at, first] = usedDownstream.emplace(d.portId, d.kind); !first && (at->second != DeviceKind::kCxlMemory || d.kind != DeviceKind::kCxlMemory))
      return fail(Code::kInvalidArgument,
                  fmt::format("devices[{}] '{}': downstream port '{}' already holds another device", i, d.id, d.portId));
    if (d.memoryGiB < 0) return fail(Code::kInvalidArgument, fmt::format("devices[{}] '{}': memoryGiB must be >= 0", i, d.id));
    if (d.kind == DeviceKind::kOther) {
      if (!isClassName(d.deviceClass))
        return fail(Code::kInvalidArgument, fmt::format("devices[{}] '{}': class '{}' is not a class name ({})", i, d.id, d.deviceClass, kKindNameRule));
    } else if (!d.deviceClass.empty()) {
      return fail(Code::kInvalidArgument, fmt::format("devices[{}] '{}': only a device of another kind has a class", i, d.id));
    }
  }
  return {};
}

TopologyIndex::TopologyIndex(const Topology& topology) : topology_(&topology) {
  for (const auto& h : topology.hosts) hosts_.emplace(h.id, &h);
  for (const auto& d : topology.devices) devices_.emplace(d.id, &d);
  for (const auto& p : topology.ports) ports_.emplace(p.id, &p);
  for (const auto& s : topology.switches) switches_.emplace(s.id, &s);

  // Fabrics: connected components of switches over inter-switch links (union-find by flood fill).
  std::unordered_map<std::string_view, std::vector<std::string_view>> links;
  for (const auto& p : topology.ports) {
    if (p.kind != PortKind::kInterSwitch) continue;
    if (const Port* peer = port(p.peerPort)) links[p.switchId].push_back(peer->switchId);
  }
  int next = 0;
  for (const auto& s : topology.switches) {
    if (fabricOfSwitch_.contains(s.id)) continue;
    std::vector<std::string_view> stack{s.id};
    fabricOfSwitch_[s.id] = next;
    while (!stack.empty()) {
      auto cur = stack.back();
      stack.pop_back();
      for (auto nb : links[cur])
        if (fabricOfSwitch_.emplace(nb, next).second) stack.push_back(nb);
    }
    ++next;
  }
}

const Host* TopologyIndex::host(std::string_view id) const {
  auto it = hosts_.find(id);
  return it == hosts_.end() ? nullptr : it->second;
}
const Device* TopologyIndex::device(std::string_view id) const {
  auto it = devices_.find(id);
  return it == devices_.end() ? nullptr : it->second;
}
const Port* TopologyIndex::port(std::string_view id) const {
  auto it = ports_.find(id);
  return it == ports_.end() ? nullptr : it->second;
}
const Switch* TopologyIndex::findSwitch(std::string_view id) const {
  auto it = switches_.find(id);
  return it == switches_.end() ? nullptr : it->second;
}
const SwitchId* TopologyIndex::switchOfDevice(std::string_view deviceId) const {
  const Device* d = device(deviceId);
  if (!d) return nullptr;
  const Port* p = port(d->portId);
  return p ? &p->switchId : nullptr;
}
const std::string* TopologyIndex::domainOfPort(std::string_view portId) const {
  const Port* p = port(portId);
  const Switch* s = p ? findSwitch(p->switchId) : nullptr;
  return s ? &s->domain : nullptr;
}
const std::string* TopologyIndex::domainOfDevice(std::string_view deviceId) const {
  const Device* d = device(deviceId);
  return d ? domainOfPort(d->portId) : nullptr;
}
const std::string* TopologyIndex::domainOfHost(std::string_view hostId) const {
  const Host* h = host(hostId);
  return h && !h->upstreamPorts.empty() ? domainOfPort(h->upstreamPorts.front().portId) : nullptr;
}
int TopologyIndex::fabricOf(std::string_view switchId) const {
  auto it = fabricOfSwitch_.find(switchId);
  return it == fabricOfSwitch_.end() ? -1 : it->second;
}

std::string_view toString(SwitchKind v) { return v == SwitchKind::kCxl ? "cxl" : "pcie"; }
std::string_view toString(PortKind v) {
  switch (v) {
    case PortKind::kUpstream: return "upstream";
    case PortKind::kDownstream: return "downstream";
    case PortKind::kInterSwitch: return "inter-switch";
  }
  return "?";
}
std::string_view toString(DeviceKind v) {
  switch (v) {
    case DeviceKind::kGpu: return "gpu";
    case DeviceKind::kNvme: return "nvme";
    case DeviceKind::kNic: return "nic";
    case DeviceKind::kCxlMemory: return "cxl-memory";
    case DeviceKind::kOther: return "other";
  }
  return "?";
}
std::string_view toString(DeviceHealth v) {
  switch (v) {
    case DeviceHealth::kOk: return "ok";
    case DeviceHealth::kWarning: return "warning";
    case DeviceHealth::kCritical: return "critical";
  }
  return "?";
}
std::optional<SwitchKind> parseSwitchKind(std::string_view s) {
  if (s == "pcie") return SwitchKind::kPcie;
  if (s == "cxl") return SwitchKind::kCxl;
  return std::nullopt;
}
std::optional<PortKind> parsePortKind(std::string_view s) {
  if (s == "upstream") return PortKind::kUpstream;
  if (s == "downstream") return PortKind::kDownstream;
  if (s == "inter-switch") return PortKind::kInterSwitch;
  return std::nullopt;
}
std::optional<DeviceKind> parseDeviceKind(std::string_view s) {
  if (s == "gpu") return DeviceKind::kGpu;
  if (s == "nvme") return DeviceKind::kNvme;
  if (s == "nic") return DeviceKind::kNic;
  if (s == "cxl-memory") return DeviceKind::kCxlMemory;
  return std::nullopt;
}
std::string kindName(DeviceKind kind, std::string_view deviceClass) {
  return kind == DeviceKind::kOther ? std::string(deviceClass) : std::string(toString(kind));
}

std::optional<KindName> parseKindName(std::string_view s) {
  if (const auto kind = parseDeviceKind(s)) return KindName{*kind, {}};
  if (s.empty() || s.size() > 32 || s.front() < 'a' || s.front() > 'z') return std::nullopt;
  for (const char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return std::nullopt;
  return KindName{DeviceKind::kOther, std::string(s)};
}

bool isClassName(std::string_view s) {
  const auto named = parseKindName(s);
  return named && named->kind == DeviceKind::kOther;
}

std::optional<DeviceHealth> parseDeviceHealth(std::string_view s) {
  if (s == "ok") return DeviceHealth::kOk;
  if (s == "warning") return DeviceHealth::kWarning;
  if (s == "critical") return DeviceHealth::kCritical;
  return std::nullopt;
}

}  // namespace switchyard
