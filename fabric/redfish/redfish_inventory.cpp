// Discovery: the Redfish fabric read as a Topology, and the URIs the driver needs later. Each level of the
// tree is read at once (switches, port collections, ports, endpoints, VCSs), so that discovery costs a
// handful of round trips whatever the fabric's size.
#include <fmt/format.h>

#include <iterator>
#include <map>
#include <set>
#include <string_view>

#include "fabric/redfish/redfish_fabric.h"
#include "fabric/redfish/redfish_json.h"

namespace switchyard {

using nlohmann::json;
using namespace redfish;  // the resource readers of redfish_json.h

namespace {

// A target's kind from the entities its endpoint connects (Endpoint.ConnectedEntities[].EntityType), the
// strongest first: a processor (a GPU, or another accelerator a Redfish service calls a processor) is placed as
// a GPU; a network controller is a NIC; a drive, volume or storage subsystem an NVMe drive; an acceleration
// function (an FPGA's) an endpoint of class "accelerator"; anything else (memory chunks, a CXL device, nothing
// said) CXL memory, as DMTF's CXL mockups have it. The model is the last segment of the entity's link.
void classifyTarget(const json& entities, Device& d) {
  struct Kind {
    std::string_view entityType;
    DeviceKind kind;
    std::string_view deviceClass;
  };
  static constexpr Kind kByStrength[] = {{"Processor", DeviceKind::kGpu, ""},         {"NetworkController", DeviceKind::kNic, ""},
                                         {"Drive", DeviceKind::kNvme, ""},            {"Volume", DeviceKind::kNvme, ""},
                                         {"StorageSubsystem", DeviceKind::kNvme, ""}, {"AccelerationFunction", DeviceKind::kOther, "accelerator"}};
  d.kind = DeviceKind::kCxlMemory;
  d.model = "CXL memory";
  std::size_t best = std::size(kByStrength);
  for (const auto& entity : entities) {
    const std::string type = text(entity, "EntityType");
    for (std::size_t k = 0; k < best; ++k)
      if (kByStrength[k].entityType == type) {
        best = k;
        const std::string link = entity.contains("EntityLink") ? text(entity["EntityLink"], "@odata.id") : "";
        d.kind = kByStrength[k].kind;
        d.deviceClass = std::string(kByStrength[k].deviceClass);
        d.model = !link.empty() ? lastSegment(link) : d.kind == DeviceKind::kGpu ? "accelerator" : type;
        break;
      }
  }
}

}  // namespace

Result<RedfishFabric::Inventory> RedfishFabric::readInventory(redfish::Deadline deadline) const {
  auto wrap = [&](const Error& e) { return e.wrap(fmt::format("Redfish fabric {}", fabricUri_)); };
  auto get = [&](const std::string& uri) -> Result<json> {
    auto r = client_.get(uri, deadline);
    if (!r) return fail(wrap(r.error()));
    return std::move(r->body);
  };
  auto getAll = [&](const std::vector<std::string>& uris) -> Result<std::vector<json>> {
    auto r = client_.getAll(uris, deadline);
    if (!r) return fail(wrap(r.error()));
    std::vector<json> out;
    for (auto& response : *r) out.push_back(std::move(response.body));
    return out;
  };
  Inventory inv;
  SY_ASSIGN(json fabric, get(fabricUri_));
  const SwitchKind kind = text(fabric, "FabricType") == "CXL" ? SwitchKind::kCxl : SwitchKind::kPcie;
  // Each level of the tree is read at once: the switches, their ports, the endpoints, the VCSs.
  auto switchList = readCollections(client_, {fabricUri_ + "/Switches"}, deadline);
  if (!switchList) return fail(wrap(switchList.error()));
  std::vector<json> switchBodies = std::move(switchList->front());
  std::vector<std::string> switchUris;
  for (const auto& body : switchBodies) switchUris.push_back(text(body, "@odata.id"));
  std::vector<std::string> portCollections;
  for (const auto& uri : switchUris) portCollections.push_back(uri + "/Ports");
  auto portLists = readCollections(client_, portCollections, deadline);
  if (!portLists) return fail(wrap(portLists.error()));
  std::vector<std::string> portUris;
  std::vector<json> portBodies;
  std::vector<std::size_t> switchOfPortUri;
  for (std::size_t s = 0; s < portLists->size(); ++s)
    for (auto& body : (*portLists)[s]) {
      portUris.push_back(text(body, "@odata.id"));
      portBodies.push_back(std::move(body));
      switchOfPortUri.push_back(s);
    }
  std::vector<std::string> vcsCollections;
  for (std::size_t s = 0; s < switchUris.size(); ++s) {
    const json& sw = switchBodies[s];
    const SwitchId switchId = lastSegment(switchUris[s]);  // a switch's Id property may repeat another's; its URI does not
    inv.topology.switches.push_back({switchId, kind, text(sw, "Model", text(sw, "Name", "Redfish switch"))});
    // Switch.CXL.VirtualCXLSwitches (Switch v1_9): the switch's VCSs.
    if (sw.contains("CXL") && sw["CXL"].is_object() && sw["CXL"].contains("VirtualCXLSwitches") && sw["CXL"]["VirtualCXLSwitches"].is_object())
      if (auto uri = text(sw["CXL"]["VirtualCXLSwitches"], "@odata.id"); !uri.empty()) vcsCollections.push_back(uri);
  }
  std::map<std::string, std::vector<PortId>> upstreamOfInitiator;   // initiator uri -> its upstream ports
  std::map<std::string, PortId> downstreamOfTarget;                  // target uri -> its downstream port
  std::map<std::string, PortId> downstreamOfDevicePort;              // a device's own port -> the switch port cabled to it
  for (std::size_t i = 0; i < portUris.size(); ++i) {
    const json& p = portBodies[i];
    const SwitchId switchId = lastSegment(switchUris[switchOfPortUri[i]]);
    Port port;
    port.id = portIdOf(portUris[i]);
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
  auto listed = readCollections(client_, {fabricUri_ + "/Endpoints"}, deadline);
  if (!listed) return fail(wrap(listed.error()));
  std::vector<std::string> endpointUris;
  std::vector<json> endpointBodies;
  for (auto& body : listed->front()) {
    endpointUris.push_back(text(body, "@odata.id"));
    endpointBodies.push_back(std::move(body));
  }
  // The collection, plus endpoints that ports name but the collection leaves out (DMTF's multi-switch CXL
  // mockup lists no I5, which its CXL2 upstream port is associated with).
  std::vector<std::string> unlisted;
  auto listedOrAdd = [&](const std::string& uri) {
    if (std::find(endpointUris.begin(), endpointUris.end(), uri) == endpointUris.end() &&
        std::find(unlisted.begin(), unlisted.end(), uri) == unlisted.end())
      unlisted.push_back(uri);
  };
  for (const auto& [uri, ports] : upstreamOfInitiator) listedOrAdd(uri);
  for (const auto& [uri, port] : downstreamOfTarget) listedOrAdd(uri);
  SY_ASSIGN(std::vector<json> unlistedBodies, getAll(unlisted));
  endpointUris.insert(endpointUris.end(), unlisted.begin(), unlisted.end());
  for (auto& body : unlistedBodies) endpointBodies.push_back(std::move(body));
  for (std::size_t i = 0; i < endpointUris.size(); ++i) {
    const std::string& endpointUri = endpointUris[i];
    const json& e = endpointBodies[i];
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
      if (!behind || inv.deviceAtPort.contains(*behind)) continue;
      Device d;
      d.id = lastSegment(endpointUri);
      d.portId = *behind;
      classifyTarget(entities, d);
      d.health = healthOf(e);
      inv.targetUri[d.id] = endpointUri;
      inv.deviceOfTarget[endpointUri] = d.id;
      inv.deviceAtPort[d.portId] = d.id;
      inv.topology.devices.push_back(std::move(d));
    }
  }
  if (auto v = validateTopology(inv.topology); !v) return fail(wrap(v.error()));
  for (std::size_t i = 0; i < inv.topology.devices.size(); ++i) inv.deviceIndex[inv.topology.devices[i].id] = i;
  TopologyIndex index(inv.topology);
  for (const auto& s : inv.topology.switches) inv.fabricOfSwitch[s.id] = index.fabricOf(s.id);
  // Each VCS with a host behind its upstream port, and where its vPPBs are.
  if (!vcsCollections.empty()) {
    auto vcss = readCollections(client_, vcsCollections, deadline);
    if (!vcss) return fail(wrap(vcss.error()));
    for (const auto& list : *vcss)
      for (const auto& vcs : list) {
        const json& l = vcs.contains("Links") && vcs["Links"].is_object() ? vcs["Links"] : json::object();
        const std::string upstream = l.contains("Port") && l["Port"].is_object() ? text(l["Port"], "@odata.id") : "";
        auto initiator = inv.initiatorOfPort.find(portIdOf(upstream));
        if (upstream.empty() || initiator == inv.initiatorOfPort.end()) continue;  // no host behind it
        if (!vcs.contains("VPPBs") || !vcs["VPPBs"].is_object()) continue;
        inv.vcss.push_back({initiator->second, text(vcs["VPPBs"], "@odata.id")});
      }
  }
  return inv;
}

}  // namespace switchyard
