#include "composer/daemon/template_file.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "composer/model/queue.h"

namespace switchyard {

namespace {

using nlohmann::json;

Result<void> onlyKeys(const json& j, const std::set<std::string>& known, const std::string& where) {
  if (!j.is_object()) return fail(Code::kInvalidArgument, fmt::format("{}: expected an object", where));
  for (const auto& [key, value] : j.items())
    if (!known.contains(key))
      return fail(Code::kInvalidArgument, fmt::format("{}: unknown key '{}' (known: {})", where, key, fmt::join(known, ", ")));
  return {};
}

Result<EndpointDemand> demandOf(const json& j, const KindName& kind, const std::string& where) {
  SY_TRY(onlyKeys(j, {"count", "model", "minCapacityGiB", "minSpeedGbps", "affinity"}, where));
  EndpointDemand d;
  d.kind = kind.kind;
  d.deviceClass = kind.deviceClass;
  d.count = j.at("count").get<int>();
  d.model = j.value("model", "");
  d.minCapacityGiB = j.value("minCapacityGiB", 0);
  d.minSpeedGbps = j.value("minSpeedGbps", 0);
  const auto affinity = parseAffinity(j.value("affinity", "domain"));
  if (!affinity) return fail(Code::kInvalidArgument, fmt::format("{}: affinity must be switch or domain", where));
  d.affinity = *affinity;
  return d;
}

Result<MachineTemplate> templateOf(const json& j, std::size_t index) {
  std::string where = fmt::format("templates[{}]", index);
  if (j.is_object() && j.contains("name") && j["name"].is_string()) where = fmt::format("template '{}'", j["name"].get<std::string>());
  SY_TRY(onlyKeys(j, {"name", "description", "gpus", "model", "minMemoryGiB", "p2p", "memoryGiB", "nic", "nvme", "endpoints", "labels", "priorityClass", "lease"}, where));
  MachineTemplate t;
  t.name = j.at("name").get<std::string>();
  t.description = j.value("description", "");
  t.gpus = j.value("gpus", 0);
  t.model = j.value("model", "");
  t.minMemoryGiB = j.value("minMemoryGiB", 0);
  t.peerToPeer = j.value("p2p", "preferred");
  t.pooledMemoryGiB = j.value("memoryGiB", 0);
  if (j.contains("nic")) {
    SY_ASSIGN(auto d, demandOf(j["nic"], KindName{DeviceKind::kNic, {}}, where + ": nic"));
    t.endpoints.push_back(std::move(d));
  }
  if (j.contains("nvme")) {
    SY_ASSIGN(auto d, demandOf(j["nvme"], KindName{DeviceKind::kNvme, {}}, where + ": nvme"));
    t.endpoints.push_back(std::move(d));
  }
  // Endpoints of other classes by name: {"endpoints": {"fpga": {"count": 1}}}.
  if (j.contains("endpoints")) {
    if (!j["endpoints"].is_object()) return fail(Code::kInvalidArgument, fmt::format("{}: endpoints: expected an object of classes", where));
    for (const auto& [name, demand] : j["endpoints"].items()) {
      if (!isClassName(name))
        return fail(Code::kInvalidArgument, fmt::format("{}: endpoints: '{}' is not another class's name (nic and nvme have keys of their own; {})",
                                                        where, name, kKindNameRule));
      SY_ASSIGN(auto d, demandOf(demand, KindName{DeviceKind::kOther, name}, fmt::format("{}: endpoints: {}", where, name)));
      t.endpoints.push_back(std::move(d));
    }
  }
  t.labels = j.value("labels", std::map<std::string, std::string>{});
  t.priorityClass = j.value("priorityClass", "");
  if (const std::string lease = j.value("lease", ""); !lease.empty()) {
    const auto d = parseDuration(lease);
    if (!d) return fail(Code::kInvalidArgument, fmt::format("{}: lease '{}' is not a duration (90s, 30m, 8h, 2d)", where, lease));
    t.leaseSeconds = std::chrono::duration_cast<std::chrono::seconds>(*d).count();
  }
  if (auto why = invalidTemplate(t); !why.empty()) return fail(Code::kInvalidArgument, why);
  return t;
}

}  // namespace

Result<std::vector<MachineTemplate>> parseTemplates(std::string_view text) {
  try {
    const json j = json::parse(text);
    SY_TRY(onlyKeys(j, {"templates"}, "the file"));
    std::vector<MachineTemplate> out;
    std::set<std::string> names;
    const json& list = j.at("templates");
    if (!list.is_array()) return fail(Code::kInvalidArgument, "templates: expected a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      SY_ASSIGN(auto t, templateOf(list[i], i));
      if (!names.insert(t.name).second) return fail(Code::kInvalidArgument, fmt::format("template '{}' is defined twice", t.name));
      out.push_back(std::move(t));
    }
    return out;
  } catch (const json::exception& e) {
    return fail(Code::kInvalidArgument, fmt::format("not a templates file: {}", e.what()));
  }
}

Result<std::vector<MachineTemplate>> loadTemplates(const std::filesystem::path& path) {
  if (path == "none") return std::vector<MachineTemplate>{};
  std::ifstream in(path);
  if (!in) return fail(Code::kInvalidArgument, fmt::format("--templates {}: cannot be read", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  auto templates = parseTemplates(text.str());
  if (!templates) return fail(templates.error().wrap(fmt::format("--templates {}", path.string())));
  return templates;
}

}  // namespace switchyard
