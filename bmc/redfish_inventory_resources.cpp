// Redfish resources about who and what: AccountService's Accounts (yardd's identities, read-only: they
// come from the --identities file) and Roles, the Manager that is yardd itself, and Chassis (an enclosure per
// switch with its devices as PCIeDevices, a rack-mount chassis per host).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "bmc/redfish_json.h"
#include "composer/model/version.h"

namespace switchyard::bmc {

using namespace redfish_json;

namespace {

std::string accountUri(const std::string& name) { return fmt::format("{}/AccountService/Accounts/{}", kRoot, name); }
std::string roleUri(std::string_view role) { return fmt::format("{}/AccountService/Roles/{}", kRoot, role); }
std::string chassisUri(const std::string& id) { return fmt::format("{}/Chassis/{}", kRoot, id); }

constexpr Role kRoles[] = {Role::kAdmin, Role::kOperator, Role::kViewer, Role::kTenant};

json privileges(Role role) {
  switch (role) {
    case Role::kAdmin: return json::array({"Login", "ConfigureManager", "ConfigureUsers", "ConfigureSelf", "ConfigureComponents"});
    case Role::kOperator:
    case Role::kTenant: return json::array({"Login", "ConfigureSelf", "ConfigureComponents"});
    case Role::kViewer: return json::array({"Login", "ConfigureSelf"});
  }
  return json::array();
}

std::string roleDescription(Role role) {
  switch (role) {
    case Role::kAdmin: return "composes, decomposes, changes the service's settings and sees every tenant";
    case Role::kOperator: return "composes and decomposes for every tenant";
    case Role::kTenant: return "composes and sees only its own tenant's systems (yardd's custom role)";
    case Role::kViewer: return "reads everything, changes nothing";
  }
  return "";
}

std::string pcieDeviceKind(const Device& d) {
  switch (d.kind) {
    case DeviceKind::kGpu: return "GPU";
    case DeviceKind::kNvme: return "NVMe drive";
    case DeviceKind::kNic: return "network adapter";
    case DeviceKind::kCxlMemory: return "CXL memory device";
    case DeviceKind::kOther: return d.deviceClass;
  }
  return "device";
}

}  // namespace

json accountService(const Accounts& accounts) {
  return {{"@odata.id", fmt::format("{}/AccountService", kRoot)},
          {"@odata.type", "#AccountService.v1_18_1.AccountService"},
          {"Id", "AccountService"},
          {"Name", "Account Service"},
          {"ServiceEnabled", true},
          {"Description", fmt::format("{} identities from yardd's --identities file; roles Administrator, Operator, Tenant, ReadOnly",
                                      accounts.identities().identities().size())},
          {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
          {"Accounts", odataRef(fmt::format("{}/AccountService/Accounts", kRoot))},
          {"Roles", odataRef(fmt::format("{}/AccountService/Roles", kRoot))}};
}

json accountsCollection(const Accounts& accounts, const Caller& caller) {
  std::vector<std::string> uris;
  for (const auto& identity : accounts.identities().identities())
    if (caller.role == Role::kAdmin || identity.name == caller.identity) uris.push_back(accountUri(identity.name));
  json c = collection(fmt::format("{}/AccountService/Accounts", kRoot), "ManagerAccountCollection", "Accounts", uris);
  c["Description"] = "an administrator sees every account, anyone else their own; accounts are managed in yardd's --identities file";
  return c;
}

json account(const Accounts& accounts, const Caller& caller, const std::string& name) {
  for (const auto& identity : accounts.identities().identities()) {
    if (identity.name != name || (caller.role != Role::kAdmin && identity.name != caller.identity)) continue;
    const std::string_view role = redfishRoleName(identity.role);
    json types = json::array({"Redfish"});
    std::string description = "an identity of yardd's --identities file";
    if (!identity.tenant.empty()) description += fmt::format(" (tenant {})", identity.tenant);
    return {{"@odata.id", accountUri(name)},
            {"@odata.type", "#ManagerAccount.v1_14_1.ManagerAccount"},
            {"Id", name},
            {"Name", fmt::format("Account {}", name)},
            {"Description", description},
            {"UserName", name},
            {"RoleId", role},
            {"Enabled", true},
            {"Locked", false},
            {"Password", nullptr},
            {"AccountTypes", types},
            {"Links", {{"Role", odataRef(roleUri(role))}}}};
  }
  return nullptr;
}

json rolesCollection() {
  std::vector<std::string> uris;
  for (Role r : kRoles) uris.push_back(roleUri(redfishRoleName(r)));
  return collection(fmt::format("{}/AccountService/Roles", kRoot), "RoleCollection", "Roles", uris);
}

json role(const std::string& id) {
  for (Role r : kRoles) {
    if (redfishRoleName(r) != id) continue;
    return {{"@odata.id", roleUri(id)},
            {"@odata.type", "#Role.v1_3_3.Role"},
            {"Id", id},
            {"Name", fmt::format("{} role", id)},
            {"Description", roleDescription(r)},
            {"RoleId", id},
            {"IsPredefined", r != Role::kTenant},
            {"AssignedPrivileges", privileges(r)},
            {"OemPrivileges", json::array()}};
  }
  return nullptr;
}

json managersCollection() {
  return collection(fmt::format("{}/Managers", kRoot), "ManagerCollection", "Managers", {fmt::format("{}/Managers/{}", kRoot, kManagerId)});
}

json manager(Timestamp now) {
  const std::string commit(gitCommit());
  return {{"@odata.id", fmt::format("{}/Managers/{}", kRoot, kManagerId)},
          {"@odata.type", "#Manager.v1_24_0.Manager"},
          {"Id", kManagerId},
          {"Name", "yardd"},
          {"Description", "Switchyard's fabric manager: it manages the pool's switches and provides this composition service"},
          {"ManagerType", "Service"},
          {"Manufacturer", "Switchyard"},
          {"Model", "yardd"},
          {"FirmwareVersion", commit.empty() ? std::string(projectVersion()) : fmt::format("{} (commit {})", projectVersion(), commit)},
          {"DateTime", formatTimestamp(now)},
          {"DateTimeLocalOffset", "+00:00"},
          {"ServiceEntryPointUUID", std::string(kServiceUuid)},
          {"PowerState", "On"},
          {"Status", {{"State", "Enabled"}, {"Health", "OK"}}}};
}

json chassisCollection(const PoolView& view) {
  std::vector<std::string> uris;
  for (const auto& s : view.topology.switches) uris.push_back(chassisUri(s.id));
  for (const auto& h : view.topology.hosts) uris.push_back(chassisUri(h.id));
  return collection(fmt::format("{}/Chassis", kRoot), "ChassisCollection", "Chassis", uris);
}

json chassisResource(const PoolView& view, const std::vector<std::string>& parts) {
  // parts: redfish v1 Chassis ID [PCIeDevices [DEVICE]]
  if (parts.size() < 4) return nullptr;
  const std::string& id = parts[3];
  TopologyIndex index(view.topology);
  const Switch* sw = index.findSwitch(id);
  if (sw) {
    std::vector<const Device*> devices;
    for (const auto& d : view.topology.devices)
      if (const SwitchId* of = index.switchOfDevice(d.id); of && *of == id) devices.push_back(&d);
    const std::string devicesUri = chassisUri(id) + "/PCIeDevices";
    if (parts.size() == 4) {
      json blocks = json::array();
      for (const Device* d : devices) blocks.push_back(odataRef(blockUri(d->id)));
      return {{"@odata.id", chassisUri(id)},
              {"@odata.type", "#Chassis.v1_28_0.Chassis"},
              {"Id", id},
              {"Name", fmt::format("Enclosure of {} switch {}", sw->kind == SwitchKind::kCxl ? "CXL" : "PCIe", id)},
              {"Description", fmt::format("the devices behind switch {} (domain {})", id, sw->domain)},
              {"ChassisType", "Enclosure"},
              {"Model", sw->model},
              {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
              {"PCIeDevices", odataRef(devicesUri)},
              {"Links", {{"ResourceBlocks", blocks}}}};  // the devices: the PCIeDevices collection (Links.PCIeDevices is deprecated)
    }
    if (parts[4] != "PCIeDevices") return nullptr;
    if (parts.size() == 5) {
      std::vector<std::string> uris;
      for (const Device* d : devices) uris.push_back(devicesUri + "/" + d->id);
      return collection(devicesUri, "PCIeDeviceCollection", fmt::format("Devices behind {}", id), uris);
    }
    if (parts.size() != 6) return nullptr;
    for (const Device* d : devices) {
      if (d->id != parts[5]) continue;
      const char* health = d->health == DeviceHealth::kCritical ? "Critical" : d->health == DeviceHealth::kWarning ? "Warning" : "OK";
      const Port* port = index.port(d->portId);
      json device = {{"@odata.id", devicesUri + "/" + d->id},
                     {"@odata.type", "#PCIeDevice.v1_21_0.PCIeDevice"},
                     {"Id", d->id},
                     {"Name", fmt::format("{} {}", pcieDeviceKind(*d), d->id)},
                     {"Model", d->model},
                     {"DeviceType", "SingleFunction"},
                     {"Status", {{"State", "Enabled"}, {"Health", health}}},
                     {"Links", {{"Chassis", json::array({odataRef(chassisUri(id))})}}}};
      if (!d->serial.empty()) device["SerialNumber"] = d->serial;
      if (port)
        device["PCIeInterface"] = {{"LanesInUse", port->linkWidth},
                                   {"MaxLanes", port->linkWidth},
                                   {"PCIeType", fmt::format("Gen{}", std::clamp(port->linkGeneration, 1, 7))}};
      return device;
    }
    return nullptr;
  }
  if (parts.size() != 4) return nullptr;
  for (const auto& h : view.topology.hosts) {
    if (h.id != id) continue;
    return {{"@odata.id", chassisUri(id)},
            {"@odata.type", "#Chassis.v1_28_0.Chassis"},
            {"Id", id},
            {"Name", fmt::format("Host {}", id)},
            {"Description", fmt::format("{} cores, {} GiB, {} upstream port(s) into the fabric", h.cpuCores, h.memoryGiB, h.upstreamPorts.size())},
            {"ChassisType", "RackMount"},
            {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
            {"Links",
             {{"ComputerSystems", json::array({odataRef(systemUri(id))})},
              {"ResourceBlocks", json::array({odataRef(blockUri(id))})}}}};
  }
  return nullptr;
}

}  // namespace switchyard::bmc
