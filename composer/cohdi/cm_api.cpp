// The cluster-manager reads CoHDI's DRA driver makes (composable-dra-driver pkg/client/client.go: GetCMNodeGroups,
// GetCMNodeGroupInfo, GetCMNodeDetails), on Switchyard's model (ADR 0030): a node group is a fabric domain (the
// part of the pool one switch manager runs) with the machines in it the tenant is offered; a machine's resource
// specs are the GPU models it can reach, from none to as many as the host can enumerate. The cluster is not a
// Switchyard notion: any cluster UUID is answered, and echoed. The operator's cluster-manager resize is not served.
#include <fmt/format.h>

#include <map>
#include <set>

#include "composer/cohdi/cohdi_ids.h"
#include "composer/cohdi/fm_api_service.h"
#include "composer/cohdi/fm_inventory.h"

namespace switchyard::cohdi {

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

// The domain of each host (its first upstream port's switch's), for the hosts that have one.
std::map<HostId, std::string> domainsOf(const Inventory& inventory) {
  std::map<SwitchId, std::string> ofSwitch;
  for (const auto& s : inventory.view().shape->topology.switches) ofSwitch[s.id] = s.domain;
  std::map<HostId, std::string> out;
  const auto& shape = *inventory.view().shape;
  for (const auto& h : inventory.hosts())
    if (auto at = shape.hostPosition.find(h.id); at != shape.hostPosition.end() && !shape.upstreamSwitches[at->second].empty())
      out[h.id] = ofSwitch[shape.upstreamSwitches[at->second].front()];
  return out;
}

}  // namespace

void FmApiService::nodeGroups(Call call) {
  const Inventory inventory(engine_.view(), shapeFacts_);
  auto tenant = tenantNamed(call.caller, call.params.at(0), inventory.view());
  if (!tenant) return call.fail(tenant.error());
  std::set<std::string> domains;
  for (const auto& [host, domain] : domainsOf(inventory))
    if (offeredTo(inventory, *inventory.machine(host), *tenant)) domains.insert(domain);
  json groups = json::array();
  for (const auto& d : domains) groups.push_back({{"uuid", nodeGroupUuid(d)}, {"name", d}});
  call.answer(http::status::ok, json{{"nodegroups", std::move(groups)}});
}

void FmApiService::nodeGroup(Call call) {
  const Inventory inventory(engine_.view(), shapeFacts_);
  auto tenant = tenantNamed(call.caller, call.params.at(0), inventory.view());
  if (!tenant) return call.fail(tenant.error());
  const std::string& group = call.params.at(2);
  std::optional<std::string> name;
  json machines = json::array();
  for (const auto& [host, domain] : domainsOf(inventory)) {
    if (nodeGroupUuid(domain) != group && domain != group) continue;
    name = domain;
    if (offeredTo(inventory, *inventory.machine(host), *tenant)) machines.push_back(machineUuid(host));
  }
  if (!name) return call.fail(Error{Code::kNotFound, fmt::format("no node group {} (GET .../nodegroups lists them)", group)});
  call.answer(http::status::ok, json{{"uuid", nodeGroupUuid(*name)}, {"name", *name}, {"mach_ids", std::move(machines)}});
}

void FmApiService::nodeDetails(Call call) {
  const Inventory inventory(engine_.view(), shapeFacts_);
  auto tenant = tenantNamed(call.caller, call.params.at(0), inventory.view());
  if (!tenant) return call.fail(tenant.error());
  auto found = offeredMachine(inventory, call.params.at(2), *tenant);
  if (!found) return call.fail(found.error());
  const Host* host = *found;
  // The GPU models the machine can reach (its fabrics'), and how many of each its system holds now.
  std::map<std::string, int> models;
  for (int fabric : inventory.fabricsOf(*host))
    for (const auto& model : inventory.gpuModelsOf(fabric)) models.emplace(model, 0);
  const auto system = inventory.systemOn(host->id);
  if (system)
    for (const auto& b : system->bindings)
      if (const DeviceView* d = inventory.view().device(b.deviceId); d && d->device.kind == DeviceKind::kGpu) ++models[d->device.model];
  json specs = json::array();
  for (const auto& [model, held] : models)
    specs.push_back({{"spec_uuid", specUuid(host->id, model)},
                     {"type", "gpu"},
                     {"selector", {{"version", "v1"}, {"expression", {{"conditions", modelCondition(model)}}}}},
                     {"min_resspec_count", 0},
                     {"max_resspec_count", host->maxDevices},
                     {"device_count", held}});
  json machine{{"uuid", machineUuid(host->id)}, {"name", host->id}, {"status", system ? std::string(toString(system->state)) : "free"},
               {"status_reason", system ? system->stateReason : std::string()}, {"resspecs", std::move(specs)}};
  call.answer(http::status::ok,
              json{{"data", {{"tenant_uuid", tenantUuid(*tenant)}, {"cluster", {{"cluster_uuid", call.params.at(1)}, {"machine", std::move(machine)}}}}}});
}

void FmApiService::resize(Call call) {
  call.refuse(http::status::not_implemented, "NOT_SUPPORTED",
              "the cluster manager's resize is not served by yardd: point CoHDI's composable-resource-operator at its fabric-manager "
              "backend (PATCH/DELETE fabric_manager/api/v1/machines/MACHINE/update), which is (docs/kubernetes.md)");
}

}  // namespace switchyard::cohdi
