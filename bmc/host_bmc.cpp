#include "bmc/host_bmc.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace switchyard::bmc {

using nlohmann::json;

namespace {

std::vector<std::string> memberUris(const json& collection) {
  std::vector<std::string> out;
  for (const auto& m : collection.value("Members", json::array()))
    if (m.is_object() && m.contains("@odata.id") && m["@odata.id"].is_string()) out.push_back(m["@odata.id"].get<std::string>());
  return out;
}

std::string text(const json& j, const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string(); }

}  // namespace

redfish::Deadline HostBmc::deadline() const {
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(options_.timeout);
}

Result<std::unique_ptr<HostBmc>> HostBmc::connect(const HostBmcOptions& options) {
  SY_ASSIGN(redfish::Endpoint endpoint, redfish::parseUrl(options.url));
  endpoint.caFile = options.caFile;
  std::unique_ptr<HostBmc> bmc(new HostBmc(options, redfish::Client(endpoint)));
  // A session: one credential check, then a token on every request.
  SY_ASSIGN(auto login, bmc->client_.post("/redfish/v1/SessionService/Sessions", json{{"UserName", options.user}, {"Password", options.password}},
                                         bmc->deadline()));
  if (login.authToken.empty()) return fail(Code::kUnavailable, fmt::format("{}: the BMC created a session without an X-Auth-Token", options.url));
  bmc->client_.useToken(login.authToken);
  bmc->sessionUri_ = login.location;
  SY_ASSIGN(auto systems, bmc->client_.get("/redfish/v1/Systems", bmc->deadline()));
  const auto uris = memberUris(systems.body);
  if (options.system.empty()) {
    if (uris.size() != 1)
      return fail(Code::kInvalidArgument, fmt::format("{} manages {} systems: name one", options.url, uris.size()));
    bmc->systemUri_ = uris.front();
  } else {
    auto it = std::find_if(uris.begin(), uris.end(), [&](const std::string& u) { return u.ends_with("/" + options.system); });
    if (it == uris.end()) return fail(Code::kNotFound, fmt::format("{} has no system '{}'", options.url, options.system));
    bmc->systemUri_ = *it;
  }
  return bmc;
}

HostBmc::~HostBmc() {
  if (sessionUri_.empty()) return;
  if (auto r = client_.del(sessionUri_, {}, deadline()); !r) spdlog::warn("BMC {}: logging out failed: {}", options_.url, r.error().message);
}

Result<HostInventory> HostBmc::inventory() {
  SY_ASSIGN(auto system, client_.get(systemUri_, deadline()));
  const json& s = system.body;
  HostInventory inv;
  inv.systemId = text(s, "Id");
  inv.model = text(s, "Model");
  inv.powerState = text(s, "PowerState");
  if (s.contains("ProcessorSummary") && s["ProcessorSummary"].contains("Count") && s["ProcessorSummary"]["Count"].is_number_integer())
    inv.processors = s["ProcessorSummary"]["Count"].get<int>();
  if (s.contains("MemorySummary") && s["MemorySummary"].contains("TotalSystemMemoryGiB") && s["MemorySummary"]["TotalSystemMemoryGiB"].is_number())
    inv.memoryGiB = s["MemorySummary"]["TotalSystemMemoryGiB"].get<double>();
  // PCIe devices: the system's own links, then its chassis' collections.
  std::vector<std::string> devices;
  for (const auto& d : s.value("PCIeDevices", json::array()))
    if (d.is_object() && d.contains("@odata.id") && d["@odata.id"].is_string()) devices.push_back(d["@odata.id"].get<std::string>());
  if (s.contains("Links") && s["Links"].contains("Chassis"))
    for (const auto& c : s["Links"]["Chassis"]) {
      if (!c.is_object() || !c.contains("@odata.id") || !c["@odata.id"].is_string()) continue;
      SY_ASSIGN(auto chassis, client_.get(c["@odata.id"].get<std::string>(), deadline()));
      if (!chassis.body.contains("PCIeDevices") || !chassis.body["PCIeDevices"].contains("@odata.id") ||
          !chassis.body["PCIeDevices"]["@odata.id"].is_string())
        continue;
      SY_ASSIGN(auto collection, client_.get(chassis.body["PCIeDevices"]["@odata.id"].get<std::string>(), deadline()));
      for (const auto& uri : memberUris(collection.body))
        if (std::find(devices.begin(), devices.end(), uri) == devices.end()) devices.push_back(uri);
    }
  for (const auto& uri : devices) {
    SY_ASSIGN(auto d, client_.get(uri, deadline()));
    inv.pcieDevices.push_back({text(d.body, "Id"), text(d.body, "Name"), text(d.body, "Manufacturer"), text(d.body, "DeviceType")});
  }
  return inv;
}

Result<std::string> HostBmc::powerState() {
  SY_ASSIGN(auto system, client_.get(systemUri_, deadline()));
  return text(system.body, "PowerState");
}

Result<void> HostBmc::reset(const std::string& resetType) {
  SY_ASSIGN(auto system, client_.get(systemUri_, deadline()));
  const json& s = system.body;
  if (!s.contains("Actions") || !s["Actions"].contains("#ComputerSystem.Reset"))
    return fail(Code::kFailedPrecondition, fmt::format("{} offers no ComputerSystem.Reset", systemUri_));
  const json& action = s["Actions"]["#ComputerSystem.Reset"];
  const std::string target = text(action, "target");
  if (action.contains("ResetType@Redfish.AllowableValues")) {
    const auto& allowed = action["ResetType@Redfish.AllowableValues"];
    if (std::find(allowed.begin(), allowed.end(), resetType) == allowed.end())
      return fail(Code::kInvalidArgument, fmt::format("{} does not allow ResetType {} (allowed: {})", systemUri_, resetType, allowed.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  }
  SY_TRY(client_.post(target.empty() ? systemUri_ + "/Actions/ComputerSystem.Reset" : target, json{{"ResetType", resetType}}, deadline()));
  return {};
}

}  // namespace switchyard::bmc
