// Fuzz target: what a Redfish fabric manager answers yardd's Redfish driver (issue "No request can stop
// yardd", item 2). A small CXL fabric (one switch, two hosts, a GPU and a memory device, a zone, and in one
// variant a VCS with a bound vPPB) is served from this process on loopback; the input replaces one of its
// resources with any bytes. The driver then connects, discovers, reads the bindings of all hosts and of one,
// and polls health, as yardd does. Whatever the bytes: no crash, hang or leak, and every call answers.
//
// Input: byte 0 picks the resource (its low 7 bits) and the variant (its high bit: VCSs); the rest is the body
// served in its place. One byte alone serves the fabric untouched, which must read as described above (the
// target checks it, so that a driver change that stops reading the tree shows as a failure, not as a fuzzer
// that tests nothing). The committed corpus (tests/fuzz/corpus/redfish_fabric) holds every resource as served,
// written by running the replay binary with REDFISH_FABRIC_FUZZ_SEEDS=DIR.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabric/redfish/redfish_fabric.h"
#include "net/http_server.h"

using namespace switchyard;
using nlohmann::json;
namespace http = boost::beast::http;

namespace {

const std::string kFabric = "/redfish/v1/Fabrics/CXL";
const std::string kSwitch = kFabric + "/Switches/S1";

json link(const std::string& uri) { return {{"@odata.id", uri}}; }
json collection(const std::vector<std::string>& uris) {
  json members = json::array();
  for (const auto& u : uris) members.push_back(link(u));
  return {{"Members", members}, {"Members@odata.count", uris.size()}};
}

// The fabric as served, resource by resource, in a fixed order (byte 0 indexes it).
std::vector<std::pair<std::string, std::string>> fabricTree(bool vcss) {
  const std::string ep = kFabric + "/Endpoints/", port = kSwitch + "/Ports/";
  json sw{{"@odata.id", kSwitch}, {"Id", "S1"}, {"Model", "fuzz switch"}, {"Ports", link(kSwitch + "/Ports")}};
  if (vcss) sw["CXL"] = {{"VirtualCXLSwitches", link(kSwitch + "/VCSs")}};
  auto upstream = [&](const std::string& initiator) {
    return json{{"PortType", "UpstreamPort"}, {"ActiveWidth", 16}, {"Links", {{"AssociatedEndpoints", {link(ep + initiator)}}}}};
  };
  auto downstream = [&](const std::string& target) {
    return json{{"PortType", "DownstreamPort"}, {"ActiveWidth", 16}, {"Links", {{"AssociatedEndpoints", {link(ep + target)}}}}};
  };
  auto initiator = [](const std::string& system) {
    return json{{"ConnectedEntities", {{{"EntityRole", "Initiator"}, {"EntityLink", link("/redfish/v1/Systems/" + system)}}}}};
  };
  const std::vector<std::pair<std::string, json>> tree{
      {"/redfish/v1", {{"@odata.id", "/redfish/v1"}, {"Fabrics", link("/redfish/v1/Fabrics")}}},
      {kFabric, {{"@odata.id", kFabric}, {"FabricType", "CXL"}, {"Switches", link(kFabric + "/Switches")}}},
      {kFabric + "/Switches", collection({kSwitch})},
      {kSwitch, sw},
      {kSwitch + "/Ports", collection({port + "U1", port + "U2", port + "D1", port + "D2"})},
      {port + "U1", upstream("I1")},
      {port + "U2", upstream("I2")},
      {port + "D1", downstream("T1")},
      {port + "D2", downstream("T2")},
      {kFabric + "/Endpoints", collection({ep + "I1", ep + "I2", ep + "T1", ep + "T2"})},
      {ep + "I1", initiator("Host1")},
      {ep + "I2", initiator("Host2")},
      {ep + "T1",
       {{"ConnectedEntities", {{{"EntityRole", "Target"}, {"EntityType", "Processor"}, {"EntityLink", link("/redfish/v1/Chassis/C1/Processors/GPU1")}}}},
        {"Status", {{"Health", "OK"}}}}},
      {ep + "T2", {{"ConnectedEntities", {{{"EntityRole", "Target"}, {"EntityType", "MemoryChunk"}}}}, {"Status", {{"Health", "Warning"}}}}},
      {kFabric + "/Zones", collection({kFabric + "/Zones/Z1"})},
      {kFabric + "/Zones/Z1", {{"Links", {{"Endpoints", {link(ep + "I1"), link(ep + "T1")}}}}}},
      {kSwitch + "/VCSs", collection({kSwitch + "/VCSs/V1"})},
      {kSwitch + "/VCSs/V1", {{"Links", {{"Port", link(port + "U1")}}}, {"VPPBs", link(kSwitch + "/VCSs/V1/VPPBs")}}},
      {kSwitch + "/VCSs/V1/VPPBs", collection({kSwitch + "/VCSs/V1/VPPBs/0"})},
      {kSwitch + "/VCSs/V1/VPPBs/0", {{"BindingStatus", "BoundPhysicalPort"}, {"Links", {{"Port", link(port + "D1")}}}}},
  };
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [uri, body] : tree) out.emplace_back(uri, body.dump());
  return out;
}

// The fabric manager: GET answers from the tree now served; anything else is 404 (no SessionService).
struct FabricManager {
  std::mutex mutex;
  std::map<std::string, std::string> served;
  std::unique_ptr<net::HttpServer> server;

  FabricManager() {
    auto started = net::HttpServer::start({}, [this](const net::HttpRequest& req, net::Reply reply, net::OpenStream, const std::string&) {
      std::string target(req.target());
      target = target.substr(0, target.find('?'));
      net::HttpResponse res{http::status::not_found, req.version()};
      {
        std::lock_guard lock(mutex);
        if (auto it = served.find(target); req.method() == http::verb::get && it != served.end()) {
          res.result(http::status::ok);
          res.body() = it->second;
          res.set(http::field::etag, "W/\"1\"");
        }
      }
      res.set(http::field::content_type, "application/json");
      res.prepare_payload();
      reply(std::move(res));
    });
    if (!started) std::abort();
    server = std::move(*started);
  }
  void serve(std::map<std::string, std::string> tree) {
    std::lock_guard lock(mutex);
    served = std::move(tree);
  }
};

struct Seen {
  bool connected = false;
  std::size_t hosts = 0, devices = 0, bindings = 0;
};

Seen readFabric(FabricManager& manager) {
  Seen seen;
  RedfishFabricOptions options;
  options.url = "http://127.0.0.1:" + std::to_string(manager.server->port());
  options.discoveryTimeout = std::chrono::seconds(5);
  auto fabric = RedfishFabric::connect(options);
  if (!fabric) return seen;
  seen.connected = true;
  if (auto topology = (*fabric)->discover(); topology) {
    seen.hosts = topology->hosts.size();
    seen.devices = topology->devices.size();
  }
  if (auto bound = (*fabric)->readBindings({std::chrono::seconds(5)}); bound) seen.bindings = bound->size();
  const std::vector<PortId> one{"S1-U1"};
  (void)(*fabric)->readBindingsOf(one, {std::chrono::seconds(5)});
  (void)(*fabric)->discover();  // a second discovery reads the tree again
  (void)(*fabric)->pollEvents();
  return seen;
}

void writeSeeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  for (int vcss = 0; vcss < 2; ++vcss) {
    const auto tree = fabricTree(vcss != 0);
    for (std::size_t i = 0; i < tree.size(); ++i) {
      std::ofstream out(dir / ("seed-" + std::to_string(vcss) + "-" + std::to_string(i)), std::ios::binary);
      out.put(static_cast<char>((vcss ? 0x80 : 0) | i));
      out << tree[i].second;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static FabricManager manager;
  static const bool checked = [] {
    if (const char* seeds = std::getenv("REDFISH_FABRIC_FUZZ_SEEDS")) writeSeeds(seeds);
    for (bool vcss : {false, true}) {
      const auto tree = fabricTree(vcss);
      manager.serve({tree.begin(), tree.end()});
      const Seen seen = readFabric(manager);
      if (!seen.connected || seen.hosts != 2 || seen.devices != 2 || seen.bindings != 1) std::abort();  // the untouched fabric must read whole
    }
    return true;
  }();
  (void)checked;
  if (size == 0) return 0;
  const bool vcss = (data[0] & 0x80) != 0;
  auto tree = fabricTree(vcss);
  std::map<std::string, std::string> served(tree.begin(), tree.end());
  if (size > 1) served[tree[(data[0] & 0x7F) % tree.size()].first] = std::string(reinterpret_cast<const char*>(data) + 1, size - 1);
  manager.serve(std::move(served));
  (void)readFabric(manager);
  return 0;
}
