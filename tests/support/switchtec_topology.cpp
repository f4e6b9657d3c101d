#include "tests/support/switchtec_topology.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fabric/switchtec/protocol.h"

namespace switchyard::testing {

using switchtec::kFunctionsPerLogicalPort;
using switchtec::paxModel;

namespace {

Result<std::uint32_t> number(const nlohmann::json& j, std::string_view field, std::uint32_t max, std::string_view where) {
  if (j.is_number_integer() && j.get<std::int64_t>() >= 0 && j.get<std::int64_t>() <= max) return static_cast<std::uint32_t>(j.get<std::int64_t>());
  if (j.is_string()) {
    const auto s = j.get<std::string>();
    try {
      std::size_t used = 0;
      const auto v = std::stoul(s, &used, 0);
      if (used == s.size() && v <= max) return static_cast<std::uint32_t>(v);
    } catch (const std::exception&) {
    }
  }
  return fail(Code::kInvalidArgument, fmt::format("{}: '{}' must be a number up to {:#x} (decimal or 0x hex), got {}", where, field, max, j.dump()));
}

}  // namespace

Result<SwitchtecTopology> parseSwitchtecTopology(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return fail(Code::kInvalidArgument, fmt::format("Switchtec topology: not JSON: {}", e.what()));
  }
  if (!j.is_object() || !j.contains("pax") || !j["pax"].is_array() || j["pax"].empty())
    return fail(Code::kInvalidArgument, "Switchtec topology: needs \"pax\": [ {\"id\": 0, \"hosts\": [...], \"endpoints\": [...]} ]");
  SwitchtecTopology t;
  std::set<std::uint8_t> ids;
  for (std::size_t i = 0; i < j["pax"].size(); ++i) {
    const auto& c = j["pax"][i];
    const auto where = fmt::format("Switchtec topology: pax[{}]", i);
    if (!c.is_object()) return fail(Code::kInvalidArgument, where + " is not an object");
    for (const auto& [key, value] : c.items())
      if (key != "id" && key != "device_id" && key != "hosts" && key != "endpoints" && key != "links")
        return fail(Code::kInvalidArgument, fmt::format("{}: unknown key '{}' (id, device_id, hosts, endpoints, links)", where, key));
    EmulatedPax pax;
    SY_ASSIGN(auto id, number(c.value("id", nlohmann::json(i)), "id", 15, where));
    pax.id = static_cast<std::uint8_t>(id);
    if (!ids.insert(pax.id).second) return fail(Code::kInvalidArgument, fmt::format("{}: PAX id {} twice", where, pax.id));
    if (c.contains("device_id")) {
      SY_ASSIGN(auto dev, number(c["device_id"], "device_id", 0xffff, where));
      pax.deviceId = static_cast<std::uint16_t>(dev);
      if (paxModel(pax.deviceId).empty()) return fail(Code::kInvalidArgument, fmt::format("{}: device_id {:#06x} is not a PAX", where, pax.deviceId));
    }
    std::set<std::uint32_t> ports;
    auto port = [&](const nlohmann::json& o, std::string_view what) -> Result<std::uint8_t> {
      if (!o.is_object() || !o.contains("port")) return fail(Code::kInvalidArgument, fmt::format("{}: each of {} needs a \"port\"", where, what));
      SY_ASSIGN(auto p, number(o["port"], "port", 59, where));
      if (!ports.insert(p).second) return fail(Code::kInvalidArgument, fmt::format("{}: port {} used twice", where, p));
      return static_cast<std::uint8_t>(p);
    };
    for (const auto& h : c.value("hosts", nlohmann::json::array())) {
      EmulatedHost host;
      SY_ASSIGN(host.port, port(h, "hosts"));
      SY_ASSIGN(auto lp, number(h.value("logical_ports", nlohmann::json(8)), "logical_ports", 32, where));
      if (lp == 0) return fail(Code::kInvalidArgument, fmt::format("{}: a host needs at least one logical port", where));
      host.logicalPorts = static_cast<std::uint16_t>(lp);
      pax.hosts.push_back(host);
    }
    for (const auto& e : c.value("endpoints", nlohmann::json::array())) {
      EmulatedEndpoint ep;
      SY_ASSIGN(ep.port, port(e, "endpoints"));
      if (e.contains("functions")) {
        ep.functions.clear();
        for (const auto& f : e["functions"]) {
          EmulatedFunction fn;
          SY_ASSIGN(auto v, number(f.value("vendor", nlohmann::json(fn.vendorId)), "vendor", 0xffff, where));
          SY_ASSIGN(auto d, number(f.value("device", nlohmann::json(fn.deviceId)), "device", 0xffff, where));
          SY_ASSIGN(auto cls, number(f.value("class", nlohmann::json(fn.classCode)), "class", 0xffffff, where));
          fn.vendorId = static_cast<std::uint16_t>(v);
          fn.deviceId = static_cast<std::uint16_t>(d);
          fn.classCode = cls;
          ep.functions.push_back(fn);
        }
        if (ep.functions.empty() || ep.functions.size() > static_cast<std::size_t>(kFunctionsPerLogicalPort))
          return fail(Code::kInvalidArgument, fmt::format("{}: an endpoint has 1 to 8 functions", where));
      }
      pax.endpoints.push_back(ep);
    }
    if (pax.endpoints.size() > 32) return fail(Code::kInvalidArgument, fmt::format("{}: at most 32 endpoints per PAX", where));
    for (const auto& l : c.value("links", nlohmann::json::array())) {
      EmulatedLink link;
      SY_ASSIGN(link.port, port(l, "links"));
      SY_ASSIGN(auto peer, number(l.value("peer_pax", nlohmann::json(-1)), "peer_pax", 15, where));
      SY_ASSIGN(auto peerPort, number(l.value("peer_port", nlohmann::json(-1)), "peer_port", 59, where));
      link.peerPax = static_cast<std::uint8_t>(peer);
      link.peerPort = static_cast<std::uint8_t>(peerPort);
      pax.links.push_back(link);
    }
    t.chips.push_back(std::move(pax));
  }
  for (const auto& c : t.chips)
    for (const auto& l : c.links) {
      auto peer = std::find_if(t.chips.begin(), t.chips.end(), [&](const EmulatedPax& p) { return p.id == l.peerPax; });
      const bool back = peer != t.chips.end() && std::any_of(peer->links.begin(), peer->links.end(), [&](const EmulatedLink& b) {
                          return b.port == l.peerPort && b.peerPax == c.id && b.peerPort == l.port;
                        });
      if (!back)
        return fail(Code::kInvalidArgument,
                    fmt::format("Switchtec topology: PAX {} port {} links to PAX {} port {}, which does not link back", c.id, l.port, l.peerPax, l.peerPort));
    }
  return t;
}

Result<SwitchtecTopology> loadSwitchtecTopology(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return fail(Code::kNotFound, fmt::format("cannot read Switchtec topology {}", file.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  auto t = parseSwitchtecTopology(ss.str());
  if (!t) return fail(t.error().wrap(file.string()));
  return t;
}

SwitchtecTopology generateSwitchtecTopology(int chips, int hosts, int gpus) {
  SwitchtecTopology t;
  for (int c = 0; c < chips; ++c) {
    EmulatedPax pax;
    pax.id = static_cast<std::uint8_t>(c);
    for (int h = 0; h < hosts; ++h) pax.hosts.push_back({static_cast<std::uint8_t>(h), 8});
    for (int g = 0; g < gpus; ++g) pax.endpoints.push_back({static_cast<std::uint8_t>(16 + g), {EmulatedFunction{}}});
    if (c > 0) pax.links.push_back({49, static_cast<std::uint8_t>(c - 1), 48});
    if (c + 1 < chips) pax.links.push_back({48, static_cast<std::uint8_t>(c + 1), 49});
    t.chips.push_back(std::move(pax));
  }
  return t;
}

}  // namespace switchyard::testing
