#include "fabric/redfish/redfish_fabric.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>

namespace switchyard {

using nlohmann::json;

namespace {

redfish::Deadline deadlineAfter(Duration timeout) {
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
}

std::string lastSegment(const std::string& uri) {
  const auto slash = uri.find_last_of('/', uri.size() > 1 ? uri.size() - 2 : 0);
  std::string s = slash == std::string::npos ? uri : uri.substr(slash + 1);
  if (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// ".../Switches/CXL1/Ports/U1" -> "CXL1-U1"
PortId portIdOf(const std::string& uri) {
  const auto ports = uri.rfind("/Ports/");
  const auto switches = uri.rfind("/Switches/", ports);
  if (ports == std::string::npos || switches == std::string::npos) return lastSegment(uri);
  const std::string sw = uri.substr(switches + 10, ports - switches - 10);
  return sw + "-" + lastSegment(uri);
}

std::vector<std::string> links(const json& resource, const char* key) {
  std::vector<std::string> out;
  if (!resource.contains("Links") || !resource["Links"].contains(key) || !resource["Links"][key].is_array()) return out;
  for (const auto& l : resource["Links"][key])
    if (l.contains("@odata.id") && l["@odata.id"].is_string()) out.push_back(l["@odata.id"].get<std::string>());
  return out;
}

std::vector<std::string> members(const json& collection) {
  std::vector<std::string> out;
  if (!collection.contains("Members") || !collection["Members"].is_array()) return out;
  for (const auto& m : collection["Members"])
    if (m.contains("@odata.id") && m["@odata.id"].is_string()) out.push_back(m["@odata.id"].get<std::string>());
  return out;
}

std::string text(const json& j, const char* key, std::string fallback = {}) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}

DeviceHealth healthOf(const json& resource) {
  const std::string h = resource.contains("Status") ? text(resource["Status"], "Health", "OK") : "OK";
  return h == "Critical" ? DeviceHealth::kCritical : h == "Warning" ? DeviceHealth::kWarning : DeviceHealth::kOk;
}

// Errors from a call that had already changed part of the table: its outcome is partial, never "nothing".
Error partial(const Error& e, std::size_t applied) {
  if (applied == 0) return e;
  return Error{changedNothing(e.code) ? Code::kUnavailable : e.code,
               fmt::format("{} (after {} zone change(s) of this call were applied)", e.message, applied)};
}

}  // namespace

Result<std::unique_ptr<RedfishFabric>> RedfishFabric::connect(const RedfishFabricOptions& options) {
  SY_ASSIGN(redfish::Endpoint endpoint, redfish::parseUrl(options.url));
  endpoint.user = options.user;
  endpoint.password = options.password;
  endpoint.caFile = options.caFile;
  std::unique_ptr<RedfishFabric> fabric(new RedfishFabric(options, redfish::Client(endpoint)));
  // A session when the service offers one: one credential check, then a token on every request.
  auto login = fabric->client_.post("/redfish/v1/SessionService/Sessions", json{{"UserName", options.user}, {"Password", options.password}},
                                    deadlineAfter(options.discoveryTimeout));
  if (login && !login->authToken.empty()) {
    fabric->client_.useToken(login->authToken);
    fabric->sessionUri_ = login->location;
  } else if (!login && login.error().code != Code::kNotFound && login.error().code != Code::kInternal) {
    return fail(login.error().wrap(fmt::format("Redfish service {}: logging in", options.url)));
  }  // no SessionService (404, 405): Basic credentials on every request
  SY_ASSIGN(fabric->inventory_, fabric->readInventory(deadlineAfter(options.discoveryTimeout)));
  for (const auto& d : fabric->inventory_.topology.devices) fabric->lastHealth_[d.id] = d.health;
  return fabric;
}

RedfishFabric::~RedfishFabric() {
  if (sessionUri_.empty()) return;
  (void)client_.del(sessionUri_, {}, deadlineAfter(std::chrono::seconds(2)));  // best effort: the session expires anyway
}

RedfishFabric::RedfishFabric(RedfishFabricOptions options, redfish::Client client)
    : options_(std::move(options)), client_(std::move(client)), fabricUri_("/redfish/v1/Fabrics/" + options_.fabric) {}

Result<Topology> RedfishFabric::discover() {
  SY_ASSIGN(Inventory inventory, readInventory(deadlineAfter(options_.discoveryTimeout)));
  std::lock_guard lock(mutex_);
  inventory_ = std::move(inventory);
  return inventory_.topology;
}

Result<RedfishFabric::Inventory> RedfishFabric::readInventory(redfish::Deadline deadline) const {
  auto wrap = [&](const Error& e) { return e.wrap(fmt::format("Redfish fabric {}", fabricUri_)); };
  auto get = [&](const std::string& uri) -> Result<json> {
    auto r = client_.get(uri, deadline);
    if (!r) return fail(wrap(r.error()));
    return std::move(r->body);
  };
  Inventory inv;
  SY_ASSIGN(json fabric, get(fabricUri_));
  const SwitchKind kind = text(fabric, "FabricType") == "CXL" ? SwitchKind::kCxl : SwitchKind::kPcie;
  SY_ASSIGN(json switches, get(fabricUri_ + "/Switches"));
  std::map<std::string, std::vector<PortId>> upstreamOfInitiator;   // initiator uri -> its upstream ports
  std::map<std::string, PortId> downstreamOfTarget;                  // target uri -> its downstream port
  std::map<std::string, PortId> downstreamOfDevicePort;              // a device's own port -> the switch port cabled to it
  for (const auto& switchUri : members(switches)) {
    SY_ASSIGN(json sw, get(switchUri));
    const SwitchId switchId = lastSegment(switchUri);  // a switch's Id property may repeat another's; its URI does not
    inv.topology.switches.push_back({switchId, kind, text(sw, "Model", text(sw, "Name", "Redfish switch"))});
    // Switch.CXL.VirtualCXLSwitches (Switch v1_9): the switch's VCSs.
    if (sw.contains("CXL") && sw["CXL"].is_object() && sw["CXL"].contains("VirtualCXLSwitches") && sw["CXL"]["VirtualCXLSwitches"].is_object())
      inv.vcsCollections.push_back(text(sw["CXL"]["VirtualCXLSwitches"], "@odata.id"));
    SY_ASSIGN(json ports, get(switchUri + "/Ports"));
    for (const auto& portUri : members(ports)) {
      SY_ASSIGN(json p, get(portUri));
      Port port;
      port.id = portIdOf(portUri);
      port.switchId = switchId;
      const std::string type = text(p, "PortType");
      port.kind = type == "UpstreamPort" ? PortKind::kUpstream : type == "InterswitchPort" ? PortKind::kInterSwitch : PortKind::kDownstream;
      if (p.contains("ActiveWidth") && p["ActiveWidth"].is_number_integer()) port.linkWidth = p["ActiveWidth"].get<int>();
      if (port.kind == PortKind::kInterSwitch) {
        auto peers = links(p, "ConnectedPorts");
        if (!peers.empty()) port.peerPort = portIdOf(peers.front());
      }
      for (const auto& e : links(p, "AssociatedEndpoints")) {
        if (port.kind == PortKind::kUpstream) upstreamOfInitiator[e].push_back(port.id);
        if (port.kind == PortKind::kDownstream) downstreamOfTarget.emplace(e, port.id);
      }
      if (port.kind == PortKind::kDownstream)
        for (const auto& devicePort : links(p, "ConnectedPorts")) downstreamOfDevicePort.emplace(devicePort, port.id);
      inv.switchOfPort[port.id] = switchId;
      inv.topology.ports.push_back(std::move(port));
    }
  }
  SY_ASSIGN(json endpoints, get(fabricUri_ + "/Endpoints"));
  // The collection, plus endpoints that ports name but the collection leaves out (DMTF's multi-switch CXL
  // mockup lists no I5, which its CXL2 upstream port is associated with).
  std::vector<std::string> endpointUris = members(endpoints);
  for (const auto& [uri, ports] : upstreamOfInitiator)
    if (std::find(endpointUris.begin(), endpointUris.end(), uri) == endpointUris.end()) endpointUris.push_back(uri);
  for (const auto& [uri, port] : downstreamOfTarget)
    if (std::find(endpointUris.begin(), endpointUris.end(), uri) == endpointUris.end()) endpointUris.push_back(uri);
  for (const auto& endpointUri : endpointUris) {
    SY_ASSIGN(json e, get(endpointUri));
    if (!e.contains("ConnectedEntities") || !e["ConnectedEntities"].is_array() || e["ConnectedEntities"].empty()) continue;
    const json& entities = e["ConnectedEntities"];
    const std::string role = text(entities[0], "EntityRole");
    if (role == "Initiator") {
      auto it = upstreamOfInitiator.find(endpointUri);
      if (it == upstreamOfInitiator.end()) continue;  // a host not cabled to this fabric's switches
      std::string link = entities[0].contains("EntityLink") ? text(entities[0]["EntityLink"], "@odata.id") : "";
      const auto systems = link.find("/Systems/");
      Host host;
      host.id = systems == std::string::npos ? lastSegment(endpointUri) : link.substr(systems + 9, link.find('/', systems + 9) - systems - 9);
      // One port per switch: a zone cannot say which of an initiator's ports on one switch it uses.
      std::set<SwitchId> seen;
      for (const auto& port : it->second)
        if (seen.insert(inv.switchOfPort[port]).second) {
          host.upstreamPorts.push_back({port, 0});
          inv.initiatorOfPort[port] = endpointUri;
          inv.portsOfInitiator[endpointUri].push_back(port);
        }
      inv.topology.hosts.push_back(std::move(host));
    } else if (role == "Target") {
      // Behind the switch port that names it, or the switch port cabled to the device port it names. A
      // port holds one device in Switchyard's model: a further logical device of a multi-logical CXL
      // device (DMTF's T4 beside T3) is not offered until pooled memory is modelled.
      std::optional<PortId> behind;
      if (auto it = downstreamOfTarget.find(endpointUri); it != downstreamOfTarget.end()) behind = it->second;
      for (const auto& devicePort : links(e, "Ports"))
        if (auto it = downstreamOfDevicePort.find(devicePort); !behind && it != downstreamOfDevicePort.end()) behind = it->second;
      if (!behind || std::any_of(inv.topology.devices.begin(), inv.topology.devices.end(), [&](const Device& held) { return held.portId == *behind; }))
        continue;
      Device d;
      d.id = lastSegment(endpointUri);
      d.portId = *behind;
      // A target with a processor (GPU, FPGA, other accelerator) is placed as a GPU; one with only
      // memory chunks is CXL memory.
      d.kind = DeviceKind::kCxlMemory;
      d.model = "CXL memory";
      for (const auto& entity : entities) {
        const std::string entityLink = entity.contains("EntityLink") ? text(entity["EntityLink"], "@odata.id") : "";
        if (text(entity, "EntityType") == "Processor") {
          d.kind = DeviceKind::kGpu;
          d.model = entityLink.empty() ? "accelerator" : lastSegment(entityLink);
        }
      }
      d.health = healthOf(e);
      inv.targetUri[d.id] = endpointUri;
      inv.deviceOfTarget[endpointUri] = d.id;
      inv.topology.devices.push_back(std::move(d));
    }
  }
  if (auto v = validateTopology(inv.topology); !v) return fail(wrap(v.error()));
  for (const auto& d : inv.topology.devices) inv.deviceAtPort[d.portId] = d.id;
  std::erase(inv.vcsCollections, std::string{});
  TopologyIndex index(inv.topology);
  for (const auto& s : inv.topology.switches) inv.fabricOfSwitch[s.id] = index.fabricOf(s.id);
  return inv;
}

std::optional<PortId> RedfishFabric::portFor(const std::string& initiator, const DeviceId& device) const {
  auto ports = inventory_.portsOfInitiator.find(initiator);
  if (ports == inventory_.portsOfInitiator.end()) return std::nullopt;
  const Device* d = nullptr;
  for (const auto& candidate : inventory_.topology.devices)
    if (candidate.id == device) d = &candidate;
  if (!d) return std::nullopt;
  const int fabric = inventory_.fabricOfSwitch.at(inventory_.switchOfPort.at(d->portId));
  for (const auto& port : ports->second)
    if (inventory_.fabricOfSwitch.at(inventory_.switchOfPort.at(port)) == fabric) return port;
  return std::nullopt;
}

Result<RedfishFabric::ZoneTable> RedfishFabric::readZones(redfish::Deadline deadline) const {
  ZoneTable table;
  SY_ASSIGN(auto collection, client_.get(fabricUri_ + "/Zones", deadline));
  for (const auto& uri : members(collection.body)) {
    SY_ASSIGN(auto z, client_.get(uri, deadline));
    Zone zone{uri, z.etag, links(z.body, "Endpoints"), {}};
    for (const auto& e : zone.endpoints)
      if (inventory_.portsOfInitiator.contains(e)) zone.initiator = e;
    const std::size_t at = table.zones.size();
    if (!zone.initiator.empty())
      for (const auto& e : zone.endpoints)
        if (auto device = inventory_.deviceOfTarget.find(e); device != inventory_.deviceOfTarget.end())
          if (auto port = portFor(zone.initiator, device->second)) table.boundTo[device->second] = {at, *port};
    table.zones.push_back(std::move(zone));
  }
  return table;
}

Result<std::vector<Binding>> RedfishFabric::readVcsBindings(redfish::Deadline deadline) const {
  static const std::set<std::string> kBound{"BoundPhysicalPort", "BoundLD", "BoundPID"};
  std::map<DeviceId, PortId> bound;
  for (const auto& collectionUri : inventory_.vcsCollections) {
    SY_ASSIGN(auto collection, client_.get(collectionUri, deadline));
    for (const auto& vcsUri : members(collection.body)) {
      SY_ASSIGN(auto vcs, client_.get(vcsUri, deadline));
      const json& l = vcs.body.contains("Links") ? vcs.body["Links"] : json::object();
      const std::string upstream = l.contains("Port") ? text(l["Port"], "@odata.id") : "";
      auto initiator = inventory_.initiatorOfPort.find(portIdOf(upstream));
      if (upstream.empty() || initiator == inventory_.initiatorOfPort.end()) continue;  // no host behind it
      if (!vcs.body.contains("VPPBs")) continue;
      SY_ASSIGN(auto vppbs, client_.get(text(vcs.body["VPPBs"], "@odata.id"), deadline));
      for (const auto& vppbUri : members(vppbs.body)) {
        SY_ASSIGN(auto vppb, client_.get(vppbUri, deadline));
        if (!kBound.contains(text(vppb.body, "BindingStatus"))) continue;
        const json& vl = vppb.body.contains("Links") ? vppb.body["Links"] : json::object();
        const std::string downstream = vl.contains("Port") ? text(vl["Port"], "@odata.id") : "";
        auto device = inventory_.deviceAtPort.find(portIdOf(downstream));
        if (downstream.empty() || device == inventory_.deviceAtPort.end()) continue;  // a port we offer no device behind
        if (auto port = portFor(initiator->second, device->second)) bound.emplace(device->second, *port);
      }
    }
  }
  std::vector<Binding> out;
  for (const auto& [device, port] : bound) out.push_back({device, port});
  return out;
}

Result<std::vector<Binding>> RedfishFabric::readBindings(const CallOptions& options) {
  std::lock_guard lock(mutex_);
  // A CXL switch says what it has bound in its VCSs' vPPBs: that, not the zones (what was asked for), is
  // what reconcile compares with the store.
  if (!inventory_.vcsCollections.empty()) return readVcsBindings(deadlineAfter(options.timeout));
  SY_ASSIGN(ZoneTable table, readZones(deadlineAfter(options.timeout)));
  std::vector<Binding> out;
  for (const auto& [device, where] : table.boundTo) out.push_back({device, where.second});
  std::sort(out.begin(), out.end(), [](const Binding& a, const Binding& b) { return a.deviceId < b.deviceId; });
  return out;
}

Result<void> RedfishFabric::checkSet(std::span<const Binding> set, bool binding) const {
  std::unordered_set<std::string_view> seen;
  for (const auto& [device, port] : set) {
    if (!seen.insert(device).second) return fail(Code::kInvalidArgument, fmt::format("device '{}' appears twice in one call", device));
    if (!inventory_.targetUri.contains(device)) return fail(Code::kNotFound, fmt::format("the fabric has no device '{}'", device));
    auto initiator = inventory_.initiatorOfPort.find(port);
    if (initiator == inventory_.initiatorOfPort.end())
      return fail(Code::kNotFound, fmt::format("the fabric has no host upstream port '{}'", port));
    if (binding && portFor(initiator->second, device) != port)
      return fail(Code::kInvalidArgument, fmt::format("device '{}' and upstream port '{}' are in different fabrics", device, port));
  }
  return {};
}

Result<void> RedfishFabric::bindAll(std::span<const Binding> set, const CallOptions& options) { return changeSet(set, true, options); }

Result<void> RedfishFabric::unbindAll(std::span<const Binding> set, const CallOptions& options) {
  return changeSet(set, false, options);
}

Result<void> RedfishFabric::changeSet(std::span<const Binding> set, bool binding, const CallOptions& options) {
  const auto deadline = deadlineAfter(options.timeout);
  std::lock_guard lock(mutex_);
  SY_TRY(checkSet(set, binding));
  SY_ASSIGN(ZoneTable table, readZones(deadline));
  // The new endpoint list of each host's zone, checked whole before anything is sent.
  std::map<std::string, std::vector<std::string>> wanted;  // initiator -> endpoints after this call
  auto current = [&](const std::string& initiator) -> std::vector<std::string>& {
    if (auto it = wanted.find(initiator); it != wanted.end()) return it->second;
    for (const auto& z : table.zones)
      if (z.initiator == initiator) return wanted[initiator] = z.endpoints;
    return wanted[initiator] = {initiator};
  };
  for (const auto& [device, port] : set) {
    const std::string& target = inventory_.targetUri.at(device);
    auto bound = table.boundTo.find(device);
    if (binding) {
      if (bound != table.boundTo.end()) {
        if (bound->second.second == port) continue;  // idempotent
        return fail(Code::kFailedPrecondition, fmt::format("device '{}' is bound to upstream port '{}'", device, bound->second.second));
      }
      current(inventory_.initiatorOfPort.at(port)).push_back(target);
    } else {
      if (bound == table.boundTo.end()) continue;  // idempotent
      if (bound->second.second != port)
        return fail(Code::kFailedPrecondition, fmt::format("device '{}' is bound to '{}', not '{}'", device, bound->second.second, port));
      std::erase(current(table.zones[bound->second.first].initiator), target);
    }
  }
  std::size_t applied = 0;
  for (const auto& [initiator, endpoints] : wanted) {
    auto zone = std::find_if(table.zones.begin(), table.zones.end(), [&](const Zone& z) { return z.initiator == initiator; });
    Result<redfish::Response> r;
    if (zone == table.zones.end()) {
      r = client_.post(fabricUri_ + "/Zones",
                       json{{"Name", fmt::format("switchyard {}", lastSegment(initiator))},
                            {"ZoneType", "ZoneOfEndpoints"},
                            {"Links", {{"Endpoints", [&] {
                                          json list = json::array();
                                          for (const auto& e : endpoints) list.push_back({{"@odata.id", e}});
                                          return list;
                                        }()}}}},
                       deadline);
    } else if (endpoints.size() <= 1) {
      r = client_.del(zone->uri, zone->etag, deadline);  // the host's last device left: the zone goes
    } else {
      json list = json::array();
      for (const auto& e : endpoints) list.push_back({{"@odata.id", e}});
      r = client_.patch(zone->uri, json{{"Links", {{"Endpoints", list}}}}, zone->etag, deadline);
    }
    if (!r) return fail(partial(r.error().wrap(fmt::format("{} {}", binding ? "bind" : "unbind", lastSegment(initiator))), applied));
    ++applied;
    ++zoneUpdates_;
  }
  return {};
}

Result<std::vector<FabricEvent>> RedfishFabric::pollEvents() {
  const auto deadline = deadlineAfter(std::chrono::seconds(10));
  std::lock_guard lock(mutex_);
  // Health is read from each target endpoint's Status; a change since the last poll is an event. (An SSE
  // subscription to the service's EventService would push these instead; not built yet.)
  std::vector<std::pair<DeviceId, DeviceHealth>> now;
  for (const auto& d : inventory_.topology.devices) {
    auto r = client_.get(inventory_.targetUri.at(d.id), deadline);
    if (!r) return fail(r.error().wrap("cannot read the fabric's endpoint health"));
    now.emplace_back(d.id, healthOf(r->body));
  }
  std::vector<FabricEvent> events;
  for (const auto& [device, health] : now) {
    DeviceHealth& last = lastHealth_[device];
    if (health == last) continue;
    last = health;
    events.push_back({"device.health", device, fmt::format("device {} health is now {}", device, toString(health)), health});
  }
  return events;
}

std::uint64_t RedfishFabric::zoneUpdates() const {
  std::lock_guard lock(mutex_);
  return zoneUpdates_;
}

}  // namespace switchyard
