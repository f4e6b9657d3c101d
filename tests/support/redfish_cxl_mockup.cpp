#include "tests/support/redfish_cxl_mockup.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace switchyard::testing {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json link(const std::string& uri) { return {{"@odata.id", uri}}; }

json collection(const std::string& uri, const std::string& type, const std::vector<std::string>& members) {
  json list = json::array();
  for (const auto& m : members) list.push_back(link(m));
  return {{"@odata.id", uri}, {"@odata.type", "#" + type + "Collection." + type + "Collection"}, {"Name", type + " Collection"},
          {"Members", list}, {"Members@odata.count", members.size()}};
}

const json kOk = {{"State", "Enabled"}, {"Health", "OK"}};

// A switch port, its type (UpstreamPort, DownstreamPort) and the endpoint behind it.
json switchPort(const std::string& uri, const std::string& id, const std::string& type, const std::string& endpoint) {
  return {{"@odata.id", uri},   {"@odata.type", "#Port.v1_18_0.Port"}, {"Id", id},  {"PortType", type}, {"PortProtocol", "CXL"},
          {"ActiveWidth", 16}, {"Status", kOk},                      {"Links", {{"AssociatedEndpoints", {link(endpoint)}}}}};
}

// An endpoint whose one connected entity has this type and role and links to `entity`.
json endpointOf(const std::string& uri, const std::string& id, const std::string& type, const std::string& role, const std::string& entity) {
  return {{"@odata.id", uri}, {"@odata.type", "#Endpoint.v1_8_2.Endpoint"}, {"Id", id}, {"EndpointProtocol", "CXL"}, {"Status", kOk},
          {"ConnectedEntities", {{{"EntityType", type}, {"EntityRole", role}, {"EntityLink", link(entity)}}}}};
}

}  // namespace

Result<void> writeCxlMockup(const fs::path& folder, const CxlMockupShape& shape) {
  std::map<std::string, json> resources;  // URI -> body
  const std::string fabric = "/redfish/v1/Fabrics/CXL";
  json root = {{"@odata.id", "/redfish/v1"},
               {"@odata.type", "#ServiceRoot.v1_20_0.ServiceRoot"},
               {"Id", "RootService"},
               {"Name", "Emulated CXL fabric manager"},
               {"RedfishVersion", "1.20.0"},
               {"Fabrics", link("/redfish/v1/Fabrics")},
               {"Systems", link("/redfish/v1/Systems")},
               {"SessionService", link("/redfish/v1/SessionService")}};
  if (shape.expand)
    root["ProtocolFeaturesSupported"] = {{"ExpandQuery", {{"Links", false}, {"NoLinks", true}, {"ExpandAll", false}, {"Levels", true}, {"MaxLevels", 3}}}};
  resources["/redfish/v1"] = root;
  resources["/redfish/v1/SessionService"] = {{"@odata.id", "/redfish/v1/SessionService"}, {"@odata.type", "#SessionService.v1_1_9.SessionService"},
                                             {"Id", "SessionService"}, {"Sessions", link("/redfish/v1/SessionService/Sessions")}};
  resources["/redfish/v1/SessionService/Sessions"] = collection("/redfish/v1/SessionService/Sessions", "Session", {});
  resources["/redfish/v1/Fabrics"] = collection("/redfish/v1/Fabrics", "Fabric", {fabric});
  resources[fabric] = {{"@odata.id", fabric},       {"@odata.type", "#Fabric.v1_4_0.Fabric"}, {"Id", "CXL"},
                       {"FabricType", "CXL"},       {"Status", kOk},                          {"Switches", link(fabric + "/Switches")},
                       {"Endpoints", link(fabric + "/Endpoints")}, {"Zones", link(fabric + "/Zones")}};
  resources[fabric + "/Zones"] = collection(fabric + "/Zones", "Zone", {});
  std::vector<std::string> switches, endpoints, systems;
  int host = 0;
  for (int s = 1; s <= shape.switches; ++s) {
    const std::string sw = fmt::format("{}/Switches/CXL{}", fabric, s);
    switches.push_back(sw);
    resources[sw] = {{"@odata.id", sw},
                     {"@odata.type", "#Switch.v1_11_0.Switch"},
                     {"Id", fmt::format("CXL{}", s)},
                     {"Name", fmt::format("CXL Switch {}", s)},
                     {"Model", "emulated CXL switch"},
                     {"SwitchType", "CXL"},
                     {"Status", kOk},
                     {"Ports", link(sw + "/Ports")},
                     {"CXL", {{"VirtualCXLSwitches", link(sw + "/VCSs")}}}};
    std::vector<std::string> ports, vcss;
    for (int h = 1; h <= shape.hostsPerSwitch; ++h, ++host) {
      const std::string port = fmt::format("{}/Ports/U{}", sw, h);
      const std::string initiator = fmt::format("{}/Endpoints/I{}-{}", fabric, s, h);
      const std::string system = fmt::format("/redfish/v1/Systems/host{}", host);
      const std::string vcs = fmt::format("{}/VCSs/{}", sw, h);
      ports.push_back(port);
      vcss.push_back(vcs);
      endpoints.push_back(initiator);
      systems.push_back(system);
      resources[port] = switchPort(port, fmt::format("U{}", h), "UpstreamPort", initiator);
      resources[initiator] = endpointOf(initiator, fmt::format("I{}-{}", s, h), "RootComplex", "Initiator", system);
      resources[system] = {{"@odata.id", system}, {"@odata.type", "#ComputerSystem.v1_22_0.ComputerSystem"},
                           {"Id", fmt::format("host{}", host)}, {"PowerState", "On"}, {"Status", kOk}};
      resources[vcs] = {{"@odata.id", vcs},   {"@odata.type", "#VirtualCXLSwitch.v1_0_0.VirtualCXLSwitch"},
                        {"Id", std::to_string(h)}, {"VCSId", std::to_string(h)},
                        {"Status", kOk},      {"VPPBs", link(vcs + "/VPPBs")},
                        {"Links", {{"Port", link(port)}}}};
      resources[vcs + "/VPPBs"] = collection(vcs + "/VPPBs", "VirtualPCI2PCIBridge", {});  // the switch adds them as it binds
    }
    const int targets = shape.gpusPerSwitch + shape.nicsPerSwitch + shape.drivesPerSwitch;
    for (int g = 1; g <= targets; ++g) {
      const std::string port = fmt::format("{}/Ports/D{}", sw, g);
      const std::string target = fmt::format("{}/Endpoints/T{}-{}", fabric, s, g);
      ports.push_back(port);
      endpoints.push_back(target);
      resources[port] = switchPort(port, fmt::format("D{}", g), "DownstreamPort", target);
      const std::string id = fmt::format("T{}-{}", s, g);
      if (g <= shape.gpusPerSwitch)
        resources[target] = endpointOf(target, id, "Processor", "Target", fmt::format("/redfish/v1/Chassis/GpuBox{}/Processors/H100", s));
      else if (g <= shape.gpusPerSwitch + shape.nicsPerSwitch)
        resources[target] = endpointOf(target, id, "NetworkController", "Target", fmt::format("/redfish/v1/Chassis/GpuBox{}/NetworkAdapters/ConnectX-7", s));
      else
        resources[target] = endpointOf(target, id, "Drive", "Target", fmt::format("/redfish/v1/Chassis/GpuBox{}/Drives/PM1743", s));
    }
    resources[sw + "/Ports"] = collection(sw + "/Ports", "Port", ports);
    resources[sw + "/VCSs"] = collection(sw + "/VCSs", "VirtualCXLSwitch", vcss);
  }
  resources[fabric + "/Switches"] = collection(fabric + "/Switches", "Switch", switches);
  resources[fabric + "/Endpoints"] = collection(fabric + "/Endpoints", "Endpoint", endpoints);
  resources["/redfish/v1/Systems"] = collection("/redfish/v1/Systems", "ComputerSystem", systems);

  for (const auto& [uri, body] : resources) {
    const fs::path dir = uri == "/redfish/v1" ? folder : folder / uri.substr(std::string("/redfish/v1/").size());
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::ofstream out(dir / "index.json");
    out << body.dump(2);
    if (ec || !out) return fail(Code::kUnavailable, fmt::format("cannot write the mockup under {}", dir.string()));
  }
  return {};
}

}  // namespace switchyard::testing
