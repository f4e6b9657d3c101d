#include "fabric/topology_json.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace switchyard {

using nlohmann::json;

namespace {

// A field-level problem; the path is a JSON pointer such as /switches/0/ports/3/width.
struct FieldError {
  std::string path;
  std::string problem;
};

class Reader {
 public:
  Reader(const json& object, std::string path, std::set<std::string> allowed)
      : object_(object), path_(std::move(path)), allowed_(std::move(allowed)) {}

  // Unknown keys are almost always typos ("memoryGib"): reject them rather than ignore them.
  [[nodiscard]] std::optional<FieldError> checkKeys() const {
    if (!object_.is_object()) return FieldError{path_, "expected an object"};
    for (const auto& [key, value] : object_.items())
      if (!allowed_.contains(key))
        return FieldError{path_ + "/" + key, fmt::format("unknown field '{}'", key)};
    return std::nullopt;
  }

  std::optional<FieldError> string(const char* key, std::string& out, bool required) const {
    auto it = object_.find(key);
    if (it == object_.end()) return required ? missing(key) : std::nullopt;
    if (!it->is_string()) return FieldError{at(key), "expected a string"};
    out = it->get<std::string>();
    return std::nullopt;
  }

  std::optional<FieldError> integer(const char* key, int& out, int min, int max) const {
    auto it = object_.find(key);
    if (it == object_.end()) return std::nullopt;
    if (!it->is_number_integer()) return FieldError{at(key), "expected an integer"};
    const auto v = it->get<long long>();
    if (v < min || v > max) return FieldError{at(key), fmt::format("{} is outside [{}, {}]", v, min, max)};
    out = static_cast<int>(v);
    return std::nullopt;
  }

  std::optional<FieldError> boolean(const char* key, bool& out) const {
    auto it = object_.find(key);
    if (it == object_.end()) return std::nullopt;
    if (!it->is_boolean()) return FieldError{at(key), "expected true or false"};
    out = it->get<bool>();
    return std::nullopt;
  }

  template <typename E, typename Parse>
  std::optional<FieldError> enumeration(const char* key, E& out, Parse parse, std::string_view choices,
                                        bool required) const {
    std::string s;
    if (auto e = string(key, s, required)) return e;
    if (s.empty() && !required) return std::nullopt;
    auto v = parse(s);
    if (!v) return FieldError{at(key), fmt::format("'{}' is not one of {}", s, choices)};
    out = *v;
    return std::nullopt;
  }

  [[nodiscard]] const json* array(const char* key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  [[nodiscard]] std::string at(std::string_view key) const { return fmt::format("{}/{}", path_, key); }

 private:
  [[nodiscard]] std::optional<FieldError> missing(const char* key) const {
    return FieldError{at(key), "required field is missing"};
  }
  const json& object_;
  std::string path_;
  std::set<std::string> allowed_;
};

#define SY_TRY_FIELD(expr) \
  if (auto fieldError_ = (expr)) return *fieldError_

std::optional<FieldError> readPort(const json& j, const std::string& path, const SwitchId& sw, Port& port) {
  Reader r(j, path, {"id", "kind", "gen", "width", "peer"});
  SY_TRY_FIELD(r.checkKeys());
  SY_TRY_FIELD(r.string("id", port.id, true));
  SY_TRY_FIELD(r.enumeration("kind", port.kind, parsePortKind, "upstream, downstream, inter-switch", true));
  SY_TRY_FIELD(r.integer("gen", port.linkGeneration, 1, 7));
  SY_TRY_FIELD(r.integer("width", port.linkWidth, 1, 32));
  SY_TRY_FIELD(r.string("peer", port.peerPort, port.kind == PortKind::kInterSwitch));
  port.switchId = sw;
  return std::nullopt;
}

std::optional<FieldError> readSwitch(const json& j, const std::string& path, Topology& t) {
  Reader r(j, path, {"id", "kind", "model", "domain", "ports"});
  SY_TRY_FIELD(r.checkKeys());
  Switch sw;
  SY_TRY_FIELD(r.string("id", sw.id, true));
  SY_TRY_FIELD(r.enumeration("kind", sw.kind, parseSwitchKind, "pcie, cxl", false));
  SY_TRY_FIELD(r.string("model", sw.model, false));
  SY_TRY_FIELD(r.string("domain", sw.domain, false));
  if (sw.domain.empty()) sw.domain = kDefaultDomain;
  if (const json* ports = r.array("ports")) {
    if (!ports->is_array()) return FieldError{r.at("ports"), "expected an array"};
    for (std::size_t i = 0; i < ports->size(); ++i) {
      Port port;
      SY_TRY_FIELD(readPort((*ports)[i], fmt::format("{}/ports/{}", path, i), sw.id, port));
      t.ports.push_back(std::move(port));
    }
  }
  t.switches.push_back(std::move(sw));
  return std::nullopt;
}

std::optional<FieldError> readHost(const json& j, const std::string& path, Topology& t) {
  Reader r(j, path, {"id", "cpuCores", "memoryGiB", "maxDevices", "upstreamPorts"});
  SY_TRY_FIELD(r.checkKeys());
  Host h;
  SY_TRY_FIELD(r.string("id", h.id, true));
  SY_TRY_FIELD(r.integer("cpuCores", h.cpuCores, 0, 1 << 20));
  SY_TRY_FIELD(r.integer("memoryGiB", h.memoryGiB, 0, 1 << 30));
  SY_TRY_FIELD(r.integer("maxDevices", h.maxDevices, 0, 1024));
  const json* usps = r.array("upstreamPorts");
  if (!usps) return FieldError{r.at("upstreamPorts"), "required field is missing"};
  if (!usps->is_array()) return FieldError{r.at("upstreamPorts"), "expected an array"};
  for (std::size_t i = 0; i < usps->size(); ++i) {
    const std::string upath = fmt::format("{}/upstreamPorts/{}", path, i);
    Reader ur((*usps)[i], upath, {"port", "numaNode"});
    SY_TRY_FIELD(ur.checkKeys());
    HostUpstreamPort usp;
    SY_TRY_FIELD(ur.string("port", usp.portId, true));
    SY_TRY_FIELD(ur.integer("numaNode", usp.numaNode, 0, 1024));
    h.upstreamPorts.push_back(std::move(usp));
  }
  t.hosts.push_back(std::move(h));
  return std::nullopt;
}

std::optional<FieldError> readDevice(const json& j, const std::string& path, Topology& t) {
  Reader r(j, path, {"id", "kind", "port", "model", "memoryGiB", "serial", "health", "migCapable", "speedGbps"});
  SY_TRY_FIELD(r.checkKeys());
  Device d;
  SY_TRY_FIELD(r.string("id", d.id, true));
  KindName kind;  // absent: a GPU
  SY_TRY_FIELD(r.enumeration("kind", kind, parseKindName, kKindNameRule, false));
  d.kind = kind.kind;
  d.deviceClass = kind.deviceClass;
  SY_TRY_FIELD(r.string("port", d.portId, true));
  SY_TRY_FIELD(r.string("model", d.model, false));
  SY_TRY_FIELD(r.integer("memoryGiB", d.memoryGiB, 0, 1 << 20));
  SY_TRY_FIELD(r.string("serial", d.serial, false));
  SY_TRY_FIELD(r.enumeration("health", d.health, parseDeviceHealth, "ok, warning, critical", false));
  SY_TRY_FIELD(r.boolean("migCapable", d.migCapable));
  SY_TRY_FIELD(r.integer("speedGbps", d.speedGbps, 0, 100'000));
  t.devices.push_back(std::move(d));
  return std::nullopt;
}

template <typename ReadItem>
std::optional<FieldError> readList(const json& root, const char* key, Topology& t, ReadItem readItem) {
  auto it = root.find(key);
  if (it == root.end()) return std::nullopt;
  if (!it->is_array()) return FieldError{fmt::format("/{}", key), "expected an array"};
  for (std::size_t i = 0; i < it->size(); ++i)
    if (auto e = readItem((*it)[i], fmt::format("/{}/{}", key, i), t)) return e;
  return std::nullopt;
}

std::optional<FieldError> readTopology(const json& root, Topology& t) {
  Reader r(root, "", {"switches", "hosts", "devices"});
  if (auto e = r.checkKeys()) {
    if (e->path.empty()) e->path = "/";
    return e;
  }
  SY_TRY_FIELD(readList(root, "switches", t, readSwitch));
  SY_TRY_FIELD(readList(root, "hosts", t, readHost));
  SY_TRY_FIELD(readList(root, "devices", t, readDevice));
  return std::nullopt;
}

#undef SY_TRY_FIELD

std::pair<std::size_t, std::size_t> lineAndColumn(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

Result<Topology> parseTopologyJson(std::string_view text, std::string_view sourceName) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    // nlohmann reports the byte just past the problem; point at the last byte it read.
    const auto [line, column] = lineAndColumn(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string what = e.what();
    if (auto pos = what.find("parse error"); pos != std::string::npos) what = what.substr(pos);
    return fail(Code::kInvalidArgument, fmt::format("{}:{}:{}: invalid JSON: {}", sourceName, line, column, what));
  } catch (const json::exception& e) {  // a number too large for any type (found by topology_json_fuzz)
    return fail(Code::kInvalidArgument, fmt::format("{}: invalid JSON: {}", sourceName, e.what()));
  }
  Topology topology;
  if (auto e = readTopology(root, topology))
    return fail(Code::kInvalidArgument, fmt::format("{}: {}: {}", sourceName, e->path, e->problem));
  if (auto v = validateTopology(topology); !v) return fail(v.error().wrap(sourceName));
  return topology;
}

Result<Topology> loadTopologyFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Code::kInvalidArgument, fmt::format("{}: cannot open topology file", path.string()));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parseTopologyJson(buffer.str(), path.string());
}

json topologyToJson(const Topology& t) {
  json switches = json::array();
  for (const auto& sw : t.switches) {
    json ports = json::array();
    for (const auto& p : t.ports) {
      if (p.switchId != sw.id) continue;
      json port{{"id", p.id}, {"kind", toString(p.kind)}, {"gen", p.linkGeneration}, {"width", p.linkWidth}};
      if (!p.peerPort.empty()) port["peer"] = p.peerPort;
      ports.push_back(std::move(port));
    }
    json entry{{"id", sw.id}, {"kind", toString(sw.kind)}, {"model", sw.model}, {"ports", ports}};
    if (sw.domain != kDefaultDomain) entry["domain"] = sw.domain;
    switches.push_back(std::move(entry));
  }
  json hosts = json::array();
  for (const auto& h : t.hosts) {
    json usps = json::array();
    for (const auto& u : h.upstreamPorts) usps.push_back({{"port", u.portId}, {"numaNode", u.numaNode}});
    hosts.push_back({{"id", h.id}, {"cpuCores", h.cpuCores}, {"memoryGiB", h.memoryGiB},
                     {"maxDevices", h.maxDevices}, {"upstreamPorts", usps}});
  }
  json devices = json::array();
  for (const auto& d : t.devices) {
    json device{{"id", d.id}, {"kind", kindName(d)}, {"port", d.portId},   {"model", d.model},
                {"memoryGiB", d.memoryGiB}, {"serial", d.serial}, {"health", toString(d.health)}, {"migCapable", d.migCapable}};
    if (d.speedGbps > 0) device["speedGbps"] = d.speedGbps;
    devices.push_back(std::move(device));
  }
  return json{{"switches", switches}, {"hosts", hosts}, {"devices", devices}};
}

}  // namespace switchyard
