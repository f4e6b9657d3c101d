// Redfish resources of the fabric: the Fabrics collection, and each fabric's switches, ports, endpoints and
// zones, from the pool's published view (the topology, with the composed systems' bindings as zones).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "bmc/redfish_json.h"
#include "bmc/redfish_resources.h"

namespace switchyard::bmc {

using namespace redfish_json;

namespace {

struct FabricNames {
  std::map<SwitchId, std::string> fabricOfSwitch;  // switch -> fabric id
  std::map<std::string, SwitchKind> kind;
};

FabricNames fabricNames(const Topology& t) {
  FabricNames n;
  TopologyIndex index(t);
  for (const auto& s : t.switches) {
    const std::string id = fmt::format("{}-{}", s.kind == SwitchKind::kCxl ? "CXL" : "PCIe", index.fabricOf(s.id));
    n.fabricOfSwitch[s.id] = id;
    n.kind[id] = s.kind;
  }
  return n;
}

std::string fabricUri(const std::string& f) { return fmt::format("{}/Fabrics/{}", kRoot, f); }
std::string portUri(const std::string& f, const Port& p) { return fmt::format("{}/Switches/{}/Ports/{}", fabricUri(f), p.switchId, p.id); }

const char* portType(PortKind k) {
  return k == PortKind::kUpstream ? "UpstreamPort" : k == PortKind::kInterSwitch ? "InterswitchPort" : "DownstreamPort";
}

// What a target endpoint connects (Endpoint.ConnectedEntities[].EntityType), so that a fabric manager reading
// this service (the Redfish driver included) tells a GPU from a drive, a NIC or pooled memory.
const char* entityType(const Device* d) {
  switch (d ? d->kind : DeviceKind::kGpu) {
    case DeviceKind::kGpu: return "Processor";
    case DeviceKind::kNvme: return "Drive";
    case DeviceKind::kNic: return "NetworkController";
    case DeviceKind::kCxlMemory: return "MemoryChunk";
    case DeviceKind::kOther: return "AccelerationFunction";
  }
  return "Processor";
}

}  // namespace

json fabricsCollection(const PoolView& view) {
  std::set<std::string> ids;
  for (const auto& [sw, f] : fabricNames(view.topology).fabricOfSwitch) ids.insert(f);
  std::vector<std::string> members;
  for (const auto& f : ids) members.push_back(fabricUri(f));
  return collection(fmt::format("{}/Fabrics", kRoot), "FabricCollection", "Fabrics", members);
}

json fabricResource(const PoolView& view, const std::vector<std::string>& parts) {
  // parts: redfish v1 Fabrics <fabric> [Switches [<sw> [Ports [<port>]]] | Endpoints [<id>] | Zones [<id>]]
  if (parts.size() < 4) return nullptr;
  const Topology& t = view.topology;
  const FabricNames names = fabricNames(t);
  const std::string& f = parts[3];
  if (!names.kind.contains(f)) return nullptr;
  const std::string protocol = names.kind.at(f) == SwitchKind::kCxl ? "CXL" : "PCIe";
  auto inFabric = [&](const SwitchId& sw) { return names.fabricOfSwitch.contains(sw) && names.fabricOfSwitch.at(sw) == f; };
  TopologyIndex index(t);
  // Endpoints: hosts cabled into this fabric (initiators) and its devices (targets).
  std::vector<std::string> initiators, targets;
  for (const auto& h : t.hosts)
    for (const auto& u : h.upstreamPorts)
      if (const Port* p = index.port(u.portId); p && inFabric(p->switchId) && std::find(initiators.begin(), initiators.end(), h.id) == initiators.end())
        initiators.push_back(h.id);
  for (const auto& d : t.devices)
    if (const SwitchId* sw = index.switchOfDevice(d.id); sw && inFabric(*sw)) targets.push_back(d.id);
  auto endpointUri = [&](const std::string& id) { return fmt::format("{}/Endpoints/{}", fabricUri(f), id); };
  // Zones: a composed system's bindings in this fabric.
  std::vector<const System*> zones;
  for (const auto& s : view.systems)
    if (std::any_of(s.bindings.begin(), s.bindings.end(), [&](const Binding& b) {
          return std::find(targets.begin(), targets.end(), b.deviceId) != targets.end();
        }))
      zones.push_back(&s);
  auto zoneUri = [&](const std::string& id) { return fmt::format("{}/Zones/{}", fabricUri(f), id); };
  auto zoneOf = [&](const std::string& endpoint) -> std::vector<json> {
    std::vector<json> out;
    for (const System* s : zones)
      if (s->hostId == endpoint || std::any_of(s->bindings.begin(), s->bindings.end(), [&](const Binding& b) { return b.deviceId == endpoint; }))
        out.push_back(odataRef(zoneUri(s->id)));
    return out;
  };

  if (parts.size() == 4) {
    return {{"@odata.id", fabricUri(f)},
            {"@odata.type", "#Fabric.v1_4_0.Fabric"},
            {"Id", f},
            {"Name", fmt::format("{} fabric {}", protocol, f)},
            {"FabricType", protocol},
            {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
            {"Switches", odataRef(fabricUri(f) + "/Switches")},
            {"Endpoints", odataRef(fabricUri(f) + "/Endpoints")},
            {"Zones", odataRef(fabricUri(f) + "/Zones")}};
  }
  const std::string& kind = parts[4];
  if (kind == "Switches") {
    if (parts.size() == 5) {
      std::vector<std::string> members;
      for (const auto& s : t.switches)
        if (inFabric(s.id)) members.push_back(fabricUri(f) + "/Switches/" + s.id);
      return collection(fabricUri(f) + "/Switches", "SwitchCollection", "Switches", members);
    }
    const Switch* sw = index.findSwitch(parts[5]);
    if (!sw || !inFabric(sw->id)) return nullptr;
    if (parts.size() == 6)
      return {{"@odata.id", fabricUri(f) + "/Switches/" + sw->id},
              {"@odata.type", "#Switch.v1_11_0.Switch"},
              {"Id", sw->id},
              {"Name", fmt::format("switch {}", sw->id)},
              {"Model", sw->model},
              {"SwitchType", protocol},
              {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
              {"Ports", odataRef(fmt::format("{}/Switches/{}/Ports", fabricUri(f), sw->id))}};
    if (parts[6] != "Ports") return nullptr;
    if (parts.size() == 7) {
      std::vector<std::string> members;
      for (const auto& p : t.ports)
        if (p.switchId == sw->id) members.push_back(portUri(f, p));
      return collection(fmt::format("{}/Switches/{}/Ports", fabricUri(f), sw->id), "PortCollection", "Ports", members);
    }
    const Port* p = index.port(parts[7]);
    if (!p || p->switchId != sw->id || parts.size() != 8) return nullptr;
    json links = {{"AssociatedEndpoints", json::array()}};
    for (const auto& h : t.hosts)
      for (const auto& u : h.upstreamPorts)
        if (u.portId == p->id) links["AssociatedEndpoints"].push_back(odataRef(endpointUri(h.id)));
    for (const auto& d : t.devices)
      if (d.portId == p->id) links["AssociatedEndpoints"].push_back(odataRef(endpointUri(d.id)));
    if (p->kind == PortKind::kInterSwitch && !p->peerPort.empty())
      if (const Port* peer = index.port(p->peerPort)) links["ConnectedSwitchPorts"] = json::array({odataRef(portUri(f, *peer))});
    return {{"@odata.id", portUri(f, *p)},
            {"@odata.type", "#Port.v1_18_0.Port"},
            {"Id", p->id},
            {"Name", fmt::format("port {}", p->id)},
            {"PortProtocol", protocol},
            {"PortType", portType(p->kind)},
            {"Width", p->linkWidth},
            {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
            {"Links", links}};
  }
  if (kind == "Endpoints") {
    if (parts.size() == 5) {
      std::vector<std::string> members;
      for (const auto& id : initiators) members.push_back(endpointUri(id));
      for (const auto& id : targets) members.push_back(endpointUri(id));
      return collection(fabricUri(f) + "/Endpoints", "EndpointCollection", "Endpoints", members);
    }
    if (parts.size() != 6) return nullptr;
    const std::string& id = parts[5];
    const bool initiator = std::find(initiators.begin(), initiators.end(), id) != initiators.end();
    const bool target = std::find(targets.begin(), targets.end(), id) != targets.end();
    if (!initiator && !target) return nullptr;
    json ports = json::array();
    if (initiator) {
      for (const auto& h : t.hosts)
        if (h.id == id)
          for (const auto& u : h.upstreamPorts)
            if (const Port* p = index.port(u.portId); p && inFabric(p->switchId)) ports.push_back(odataRef(portUri(f, *p)));
    } else if (const Device* d = index.device(id)) {
      if (const Port* p = index.port(d->portId)) ports.push_back(odataRef(portUri(f, *p)));
    }
    json entity = initiator ? json{{"EntityType", "RootComplex"}, {"EntityRole", "Initiator"}, {"EntityLink", odataRef(systemUri(id))}}
                            : json{{"EntityType", entityType(index.device(id))}, {"EntityRole", "Target"}, {"EntityLink", odataRef(blockUri(id))}};
    return {{"@odata.id", endpointUri(id)},
            {"@odata.type", "#Endpoint.v1_8_2.Endpoint"},
            {"Id", id},
            {"Name", fmt::format("{} {}", initiator ? "host" : "device", id)},
            {"EndpointProtocol", protocol},
            {"ConnectedEntities", json::array({entity})},
            {"Links", {{"ConnectedPorts", ports}, {"Zones", zoneOf(id)}}}};  // the switch ports it is attached to
  }
  if (kind == "Zones") {
    if (parts.size() == 5) {
      std::vector<std::string> members;
      for (const System* s : zones) members.push_back(zoneUri(s->id));
      return collection(fabricUri(f) + "/Zones", "ZoneCollection", "Zones", members);
    }
    if (parts.size() != 6) return nullptr;
    for (const System* s : zones) {
      if (s->id != parts[5]) continue;
      json endpoints = json::array({odataRef(endpointUri(s->hostId))});
      for (const auto& b : s->bindings)
        if (std::find(targets.begin(), targets.end(), b.deviceId) != targets.end()) endpoints.push_back(odataRef(endpointUri(b.deviceId)));
      return {{"@odata.id", zoneUri(s->id)},
              {"@odata.type", "#Zone.v1_6_3.Zone"},
              {"Id", s->id},
              {"Name", fmt::format("bindings of {}", s->name)},
              {"ZoneType", "ZoneOfEndpoints"},
              {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
              {"Links", {{"Endpoints", endpoints}}}};
    }
  }
  return nullptr;
}

}  // namespace switchyard::bmc
