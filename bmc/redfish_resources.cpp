#include "bmc/redfish_resources.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "bmc/redfish_json.h"

namespace switchyard::bmc {

using namespace redfish_json;

namespace {

// Whether a system is among the view's, which hold only those the caller may see: another tenant's system is
// never linked (a tenant sees that a block is composed, not into which system).
bool listed(const PoolView& view, const SystemId& id) {
  return !id.empty() && std::any_of(view.systems.begin(), view.systems.end(), [&](const System& s) { return s.id == id; });
}

std::string health(DeviceHealth h) {
  return h == DeviceHealth::kCritical ? "Critical" : h == DeviceHealth::kWarning ? "Warning" : "OK";
}

json systemStatus(SystemState s) {
  switch (s) {
    case SystemState::kComposing: return {{"State", "Starting"}, {"Health", "OK"}};
    case SystemState::kComposed: return {{"State", "Enabled"}, {"Health", "OK"}};
    case SystemState::kDegraded: return {{"State", "Enabled"}, {"Health", "Warning"}};
    case SystemState::kDecomposing: return {{"State", "Disabled"}, {"Health", "OK"}};
    case SystemState::kDecomposed: return {{"State", "Absent"}, {"Health", "OK"}};
    case SystemState::kFailed: return {{"State", "Disabled"}, {"Health", "Critical"}};
    case SystemState::kQueued: return {{"State", "StandbyOffline"}, {"Health", "OK"}};  // waits in the queue for capacity
  }
  return {{"State", "Enabled"}, {"Health", "OK"}};
}

const System* findSystem(const PoolView& view, const std::string& id) {
  for (const auto& s : view.systems)
    if (s.id == id) return &s;
  return nullptr;
}

}  // namespace

json serviceRoot() {
  return {{"@odata.id", std::string(kRoot)},
          {"@odata.type", "#ServiceRoot.v1_20_0.ServiceRoot"},
          {"Id", "RootService"},
          {"Name", "Switchyard Redfish Service"},
          {"RedfishVersion", "1.20.0"},
          {"UUID", std::string(kServiceUuid)},
          {"Product", "Switchyard"},
          {"Vendor", "Switchyard"},
          {"Systems", odataRef(fmt::format("{}/Systems", kRoot))},
          {"CompositionService", odataRef(fmt::format("{}/CompositionService", kRoot))},
          {"Tasks", odataRef(fmt::format("{}/TaskService", kRoot))},
          {"SessionService", odataRef(fmt::format("{}/SessionService", kRoot))},
          {"AccountService", odataRef(fmt::format("{}/AccountService", kRoot))},
          {"EventService", odataRef(fmt::format("{}/EventService", kRoot))},
          {"Fabrics", odataRef(fmt::format("{}/Fabrics", kRoot))},
          {"Chassis", odataRef(fmt::format("{}/Chassis", kRoot))},
          {"Managers", odataRef(fmt::format("{}/Managers", kRoot))},
          {"JsonSchemas", odataRef(fmt::format("{}/JsonSchemas", kRoot))},
          {"Links",
           {{"Sessions", odataRef(fmt::format("{}/SessionService/Sessions", kRoot))},
            {"ManagerProvidingService", odataRef(fmt::format("{}/Managers/{}", kRoot, kManagerId))}}}};
}

json odataServiceDocument() {
  json value = json::array();
  for (const char* name : {"Systems", "CompositionService", "TaskService", "SessionService", "AccountService", "EventService", "Fabrics", "Chassis", "Managers", "JsonSchemas"})
    value.push_back({{"name", name}, {"kind", "Singleton"}, {"url", fmt::format("{}/{}", kRoot, name)}});
  value.push_back({{"name", "Service"}, {"kind", "Singleton"}, {"url", std::string(kRoot)}});
  return {{"@odata.context", fmt::format("{}/$metadata", kRoot)}, {"value", value}};
}

std::string metadataXml() {
  std::string xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">
)";
  // Every schema the service's payloads name, with the version they claim (DMTF publishes each CSDL file,
  // collections included, as NAME_v1.xml).
  struct Used {
    const char* ns;
    const char* version;  // "" for collections: unversioned
  };
  for (const Used& u : std::initializer_list<Used>{
           {"ServiceRoot", "v1_20_0"}, {"ComputerSystemCollection", ""}, {"ComputerSystem", "v1_27_0"},
           {"CompositionService", "v1_2_3"}, {"ResourceBlockCollection", ""}, {"ResourceBlock", "v1_4_3"}, {"Processor", "v1_22_0"},
           {"Drive", "v1_22_0"}, {"Memory", "v1_23_0"}, {"ZoneCollection", ""},
           {"Zone", "v1_6_3"}, {"CompositionReservationCollection", ""}, {"CompositionReservation", "v1_0_2"}, {"CollectionCapabilities", "v1_4_1"},
           {"TaskService", "v1_3_0"}, {"TaskCollection", ""}, {"Task", "v1_7_4"}, {"SessionService", "v1_2_0"}, {"SessionCollection", ""},
           {"Session", "v1_8_0"}, {"AccountService", "v1_18_1"}, {"ManagerAccountCollection", ""}, {"ManagerAccount", "v1_14_1"},
           {"RoleCollection", ""}, {"Role", "v1_3_3"}, {"ChassisCollection", ""}, {"Chassis", "v1_28_0"}, {"PCIeDeviceCollection", ""},
           {"PCIeDevice", "v1_21_0"}, {"EventService", "v1_12_0"}, {"Event", "v1_13_0"}, {"Message", "v1_3_0"}, {"FabricCollection", ""},
           {"Fabric", "v1_4_0"}, {"SwitchCollection", ""}, {"Switch", "v1_11_0"}, {"PortCollection", ""}, {"Port", "v1_18_0"},
           {"EndpointCollection", ""}, {"Endpoint", "v1_8_2"}, {"ManagerCollection", ""}, {"Manager", "v1_24_0"}, {"JsonSchemaFileCollection", ""}, {"JsonSchemaFile", "v1_1_5"}}) {
    xml += fmt::format("  <edmx:Reference Uri=\"http://redfish.dmtf.org/schemas/v1/{}_v1.xml\">\n    <edmx:Include Namespace=\"{}\"/>\n", u.ns, u.ns);
    if (*u.version) xml += fmt::format("    <edmx:Include Namespace=\"{}.{}\"/>\n", u.ns, u.version);
    xml += "  </edmx:Reference>\n";
  }
  xml += fmt::format(R"(  <edmx:Reference Uri="{}/Schemas/SwitchyardEvent_v1.xml">
    <edmx:Include Namespace="SwitchyardEvent"/>
    <edmx:Include Namespace="SwitchyardEvent.v1_0_0"/>
  </edmx:Reference>
)",
                     kRoot);
  xml += R"(  <edmx:DataServices>
    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">
      <EntityContainer Name="Service" Extends="ServiceRoot.v1_20_0.ServiceContainer"/>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>
)";
  return xml;
}

json systemsCollection(const PoolView& view) {
  std::vector<std::string> members;
  for (const auto& h : view.hosts) members.push_back(systemUri(h.host.id));
  for (const auto& s : view.systems) members.push_back(systemUri(s.id));
  json c = collection(fmt::format("{}/Systems", kRoot), "ComputerSystemCollection", "Computer Systems", members);
  c["@Redfish.CollectionCapabilities"] = {
      {"@odata.type", "#CollectionCapabilities.v1_4_1.CollectionCapabilities"},
      {"Capabilities", json::array({{{"UseCase", "ComputerSystemComposition"},
                                      {"CapabilitiesObject", odataRef(fmt::format("{}/Systems/Capabilities", kRoot))},
                                      {"Links", {{"TargetCollection", odataRef(fmt::format("{}/Systems", kRoot))}}}}})}};
  return c;
}

namespace {

bool hasBmc(const PoolView& view, const HostId& host) {
  for (const auto& h : view.hosts)
    if (h.host.id == host) return h.policy == HostPolicy::kBmcReset;
  return false;
}

// What every ComputerSystem carries for clients such as sushy (OpenStack Ironic's library), which open none
// without Boot and Actions: yardd sets no boot override, and ComputerSystem.Reset is offered where the host has a
// BMC yardd reaches (the bmc-reset policy), passed to that BMC (redfish_power.cpp).
void addPowerAndBoot(json& system, const PoolView& view, const std::string& id, const HostId& host) {
  system["Boot"] = {{"BootSourceOverrideEnabled", "Disabled"},
                    {"BootSourceOverrideTarget", "None"},
                    {"BootSourceOverrideTarget@Redfish.AllowableValues", json::array({"None"})}};
  if (!system.contains("Actions")) system["Actions"] = json::object();
  if (hasBmc(view, host))
    system["Actions"]["#ComputerSystem.Reset"] = {{"target", systemUri(id) + "/Actions/ComputerSystem.Reset"},
                                                 {"ResetType@Redfish.AllowableValues", kResetTypes}};
}

}  // namespace

const std::vector<std::string> kResetTypes{"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "PowerCycle"};

json computerSystem(const PoolView& view, const std::string& id) {
  json system = computerSystemWithoutPower(view, id);
  if (system.is_null() || id == "Capabilities") return system;
  const System* s = findSystem(view, id);
  addPowerAndBoot(system, view, id, s ? s->hostId : HostId(id));
  return system;
}

namespace {

int hostMemoryGiB(const PoolView& view, const HostId& host) {
  for (const auto& h : view.hosts)
    if (h.host.id == host) return h.host.memoryGiB;
  return 0;
}

int pooledGiB(const PoolView& view, const System& system) { return view.published ? view.published->pooledMemoryGiB(system) : 0; }

// The collection of a block that holds a device of this kind ("" for NICs: a NetworkInterface says nothing a
// client composing by block needs).
std::string partCollection(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kGpu: return "Processors";
    case DeviceKind::kNvme: return "Drives";
    case DeviceKind::kCxlMemory: return "Memory";
    case DeviceKind::kNic: return "";
    case DeviceKind::kOther: return "";  // an endpoint of another class: its block says its class
  }
  return "";
}

}  // namespace

json computerSystemWithoutPower(const PoolView& view, const std::string& id) {
  if (const System* s = findSystem(view, id)) {
    json blocks = json::array({odataRef(blockUri(s->hostId))});
    for (const auto& b : s->bindings) blocks.push_back(odataRef(blockUri(b.deviceId)));
    return {{"@odata.id", systemUri(s->id)},
            {"@odata.type", "#ComputerSystem.v1_27_0.ComputerSystem"},
            {"Id", s->id},
            {"Name", s->name},
            {"Description", fmt::format("composed on host {} (tenant {})", s->hostId, s->tenant)},
            {"SystemType", "Composed"},
            {"Status", systemStatus(s->state)},
            {"Composition", {{"UseCases", json::array({"ResourceBlockCapable", "ExpandableSystem"})}}},
            {"MemorySummary", {{"TotalSystemMemoryGiB", hostMemoryGiB(view, s->hostId) + pooledGiB(view, *s)}}},
            {"Actions",
             {{"#ComputerSystem.AddResourceBlock", {{"target", systemUri(s->id) + "/Actions/ComputerSystem.AddResourceBlock"}}},
              {"#ComputerSystem.RemoveResourceBlock", {{"target", systemUri(s->id) + "/Actions/ComputerSystem.RemoveResourceBlock"}}}}},
            {"Links", {{"ResourceBlocks", blocks}}}};
  }
  for (const auto& h : view.hosts)
    if (h.host.id == id)
      return {{"@odata.id", systemUri(id)},
              {"@odata.type", "#ComputerSystem.v1_27_0.ComputerSystem"},
              {"Id", id},
              {"Name", id},
              {"SystemType", "Physical"},
              {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
              {"ProcessorSummary", {{"CoreCount", h.host.cpuCores}}},
              {"MemorySummary", {{"TotalSystemMemoryGiB", h.host.memoryGiB}}},
              {"Links", {{"ResourceBlocks", json::array({odataRef(blockUri(id))})}}}};
  if (id == "Capabilities") return compositionCapabilities({});
  return nullptr;
}

json compositionCapabilities(const std::vector<std::string>& templates) {
  json capabilities = {{"@odata.id", systemUri("Capabilities")},
                       {"@odata.type", "#ComputerSystem.v1_27_0.ComputerSystem"},
                       {"Id", "Capabilities"},
                       {"Name", "Capabilities for composing a system"},
                       {"Name@Redfish.RequiredOnCreate", true},
                       {"Links@Redfish.RequiredOnCreate", false},
                       {"Processors@Redfish.OptionalOnCreate", true},
                       {"Storage@Redfish.OptionalOnCreate", true},
                       {"NetworkInterfaces@Redfish.OptionalOnCreate", true},
                       {"Memory@Redfish.OptionalOnCreate", true},
                       {"Links", {{"ResourceBlocks@Redfish.OptionalOnCreate", true}}}};
  // The OEM part of a composition (redfish_changes.cpp reads it): the queue, and a machine template by name, whose
  // names are the hints a client may offer (yardctl templates says what each asks for).
  json oem = {{"Queue@Redfish.OptionalOnCreate", true},        {"PriorityClass@Redfish.OptionalOnCreate", true},
              {"QueueTimeoutSeconds@Redfish.OptionalOnCreate", true}, {"LeaseSeconds@Redfish.OptionalOnCreate", true},
              {"Affinity@Redfish.OptionalOnCreate", true}};
  if (!templates.empty()) {
    oem["Template@Redfish.OptionalOnCreate"] = true;
    oem["Template@Redfish.AllowableValues"] = templates;
  }
  capabilities["Oem"] = {{"Switchyard", std::move(oem)}};
  return capabilities;
}

json compositionService(std::chrono::seconds reservationDuration) {
  return {{"@odata.id", fmt::format("{}/CompositionService", kRoot)},
          {"@odata.type", "#CompositionService.v1_2_3.CompositionService"},
          {"Id", "CompositionService"},
          {"Name", "Composition Service"},
          {"ServiceEnabled", true},
          {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
          {"AllowOverprovisioning", false},
          {"ResourceBlocks", odataRef(fmt::format("{}/CompositionService/ResourceBlocks", kRoot))},
          {"ResourceZones", odataRef(fmt::format("{}/CompositionService/ResourceZones", kRoot))},
          {"ActivePool", odataRef(fmt::format("{}/CompositionService/ActivePool", kRoot))},
          {"FreePool", odataRef(fmt::format("{}/CompositionService/FreePool", kRoot))},
          {"CompositionReservations", odataRef(fmt::format("{}/CompositionService/CompositionReservations", kRoot))},
          {"ReservationDuration", isoDuration(reservationDuration)},
          {"Actions",
           {{"#CompositionService.Compose",
             {{"target", fmt::format("{}/CompositionService/Actions/CompositionService.Compose", kRoot)},
              {"RequestFormat@Redfish.AllowableValues", json::array({"Manifest"})},
              {"RequestType@Redfish.AllowableValues", json::array({"Preview", "PreviewReserve", "Apply"})}}}}}};
}

json resourceBlocksCollection(const PoolView& view) {
  std::vector<std::string> members;
  for (const auto& h : view.hosts) members.push_back(blockUri(h.host.id));
  for (const auto& d : view.devices) members.push_back(blockUri(d.device.id));
  return collection(fmt::format("{}/CompositionService/ResourceBlocks", kRoot), "ResourceBlockCollection", "Resource Blocks", members);
}

json resourceBlock(const PoolView& view, const std::string& id) {
  for (const auto& d : view.devices) {
    if (d.device.id != id) continue;
    std::string state = "Unused", pool = "Free";
    bool reserved = false;
    switch (d.assignment.allocation) {
      case DeviceAllocation::kFree: break;
      case DeviceAllocation::kReserved:
        // Held by a composition reservation (not yet in a system), or by an operation composing it.
        if (isReservationId(d.assignment.owner)) reserved = true;
        else state = "Composing", pool = "Active", reserved = true;
        break;
      case DeviceAllocation::kAllocated: state = "Composed", pool = "Active"; break;
      case DeviceAllocation::kQuarantined: state = "Unavailable", pool = "Unassigned"; break;
    }
    const char* type = d.device.kind == DeviceKind::kGpu         ? "Processor"
                       : d.device.kind == DeviceKind::kNvme      ? "Storage"
                       : d.device.kind == DeviceKind::kNic       ? "Network"
                       : d.device.kind == DeviceKind::kCxlMemory ? "Memory"
                                                                 : "Expansion";  // another class: an FPGA, a DPU
    json links = {{"ComputerSystems", json::array()}, {"Zones", json::array({odataRef(fmt::format("{}/CompositionService/ResourceZones/1", kRoot))})}};
    if (listed(view, d.systemId)) links["ComputerSystems"].push_back(odataRef(systemUri(d.systemId)));
    json block = {{"@odata.id", blockUri(id)},
                  {"@odata.type", "#ResourceBlock.v1_4_3.ResourceBlock"},
                  {"Id", id},
                  {"Name", fmt::format("{} {}", d.device.model, id)},
                  {"Description", d.device.speedGbps > 0 ? fmt::format("{} behind switch {}, {} Gb/s", kindName(d.device), d.switchId, d.device.speedGbps)
                                                         : fmt::format("{} behind switch {}", kindName(d.device), d.switchId)},
                  {"ResourceBlockType", json::array({type})},
                  {"Status", {{"State", "Enabled"}, {"Health", health(d.device.health)}}},
                  {"CompositionStatus", {{"CompositionState", state}, {"Reserved", reserved}, {"SharingCapable", false}}},
                  {"Pool", pool},
                  {"Links", links}};
    if (const std::string parts = partCollection(d.device.kind); !parts.empty())
      block[parts] = json::array({odataRef(fmt::format("{}/{}/{}", blockUri(id), parts, id))});
    return block;
  }
  for (const auto& h : view.hosts) {
    if (h.host.id != id) continue;
    json links = {{"ComputerSystems", json::array({odataRef(systemUri(id))})}};
    if (listed(view, h.systemId)) links["ComputerSystems"].push_back(odataRef(systemUri(h.systemId)));
    return {{"@odata.id", blockUri(id)},
            {"@odata.type", "#ResourceBlock.v1_4_3.ResourceBlock"},
            {"Id", id},
            {"Name", fmt::format("host {}", id)},
            {"ResourceBlockType", json::array({"ComputerSystem"})},
            {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
            {"CompositionStatus",
             {{"CompositionState", h.systemId.empty() ? "Unused" : "Composed"}, {"Reserved", !h.reservationId.empty()}, {"SharingCapable", false}}},
            {"Pool", h.systemId.empty() ? "Free" : "Active"},
            {"Links", links}};
  }
  return nullptr;
}

json resourceBlockPart(const DeviceView& d, const std::string& collection, const std::string& part) {
  if (part != d.device.id || collection != partCollection(d.device.kind)) return nullptr;
  json common = {{"@odata.id", fmt::format("{}/{}/{}", blockUri(d.device.id), collection, part)},
                 {"Id", part},
                 {"Model", d.device.model},
                 {"SerialNumber", d.device.serial},
                 {"Status", {{"State", "Enabled"}, {"Health", health(d.device.health)}}}};
  const long long mib = static_cast<long long>(d.device.memoryGiB) * 1024;
  switch (d.device.kind) {
    case DeviceKind::kGpu:
      common["@odata.type"] = "#Processor.v1_22_0.Processor";
      common["Name"] = fmt::format("GPU {}", part);
      common["ProcessorType"] = "GPU";
      if (mib > 0) common["ProcessorMemory"] = json::array({{{"CapacityMiB", mib}, {"IntegratedMemory", true}}});
      break;
    case DeviceKind::kNvme:
      common["@odata.type"] = "#Drive.v1_22_0.Drive";
      common["Name"] = fmt::format("NVMe drive {}", part);
      common["Protocol"] = "NVMe";
      common["MediaType"] = "SSD";
      common["CapacityBytes"] = mib * 1024 * 1024;
      break;
    case DeviceKind::kCxlMemory:
      // A logical device (LD) of a pooled CXL memory device: volatile memory a host sees once it is bound.
      common["@odata.type"] = "#Memory.v1_23_0.Memory";
      common["Name"] = fmt::format("pooled memory {}", part);
      common["Description"] = fmt::format("a logical device of a CXL memory device behind switch {}", d.switchId);
      common["MemoryType"] = "DRAM";
      common["MemoryMedia"] = json::array({"DRAM"});
      common["CapacityMiB"] = mib;
      common["VolatileSizeMiB"] = mib;
      break;
    case DeviceKind::kNic:
    case DeviceKind::kOther: return nullptr;
  }
  return common;
}

json resourceZonesCollection() {
  return collection(fmt::format("{}/CompositionService/ResourceZones", kRoot), "ZoneCollection", "Resource Zones",
                    {fmt::format("{}/CompositionService/ResourceZones/1", kRoot)});
}

json resourceZone(const PoolView& view, const std::string& id) {
  if (id != "1") return nullptr;
  json blocks = json::array();
  for (const auto& h : view.hosts) blocks.push_back(odataRef(blockUri(h.host.id)));
  for (const auto& d : view.devices) blocks.push_back(odataRef(blockUri(d.device.id)));
  return {{"@odata.id", fmt::format("{}/CompositionService/ResourceZones/1", kRoot)},
          {"@odata.type", "#Zone.v1_6_3.Zone"},
          {"Id", "1"},
          {"Name", "All resource blocks"},
          {"ZoneType", "ZoneOfResourceBlocks"},
          {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
          {"@Redfish.CollectionCapabilities",
           {{"@odata.type", "#CollectionCapabilities.v1_4_1.CollectionCapabilities"},
            {"Capabilities", json::array({{{"UseCase", "ComputerSystemComposition"},
                                            {"CapabilitiesObject", odataRef(fmt::format("{}/Systems/Capabilities", kRoot))},
                                            {"Links", {{"TargetCollection", odataRef(fmt::format("{}/Systems", kRoot))}}}}})}}},
          {"Links", {{"ResourceBlocks", blocks}}}};
}

json taskService(Timestamp now) {
  return {{"@odata.id", fmt::format("{}/TaskService", kRoot)},
          {"@odata.type", "#TaskService.v1_3_0.TaskService"},
          {"Id", "TaskService"},
          {"Name", "Tasks (yardd operations)"},
          {"ServiceEnabled", true},
          {"DateTime", formatTimestamp(now)},
          {"CompletedTaskOverWritePolicy", "Oldest"},
          {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
          {"Tasks", odataRef(fmt::format("{}/TaskService/Tasks", kRoot))}};
}

json tasksCollection(const std::vector<Operation>& operations) {
  std::vector<std::string> members;
  for (const auto& op : operations) members.push_back(fmt::format("{}/TaskService/Tasks/{}", kRoot, op.id));
  return collection(fmt::format("{}/TaskService/Tasks", kRoot), "TaskCollection", "Tasks", members);
}

std::string taskMonitorUri(const std::string& operationId) { return fmt::format("{}/TaskService/TaskMonitors/{}", kRoot, operationId); }

json task(const Operation& op) {
  const auto done = std::count_if(op.steps.begin(), op.steps.end(), [](const Step& s) { return s.state == StepState::kDone; });
  const bool ok = op.state == OperationState::kSucceeded;
  // A compose waiting in the queue has not started: Pending, until it is admitted.
  std::string state = op.finished() ? (ok ? "Completed" : "Exception") : op.state == OperationState::kQueued ? "Pending" : "Running";
  json messages = json::array();
  if (op.finished())
    messages.push_back({{"MessageId", ok ? "TaskEvent.1.0.TaskCompletedOK" : "TaskEvent.1.0.TaskAborted"},
                        {"Message", ok ? fmt::format("{} {} succeeded", toString(op.kind), op.id) : op.error},
                        {"MessageSeverity", ok ? "OK" : "Critical"}});
  json t = {{"@odata.id", fmt::format("{}/TaskService/Tasks/{}", kRoot, op.id)},
            {"@odata.type", "#Task.v1_7_4.Task"},
            {"Id", op.id},
            {"Name", fmt::format("{} {}", toString(op.kind), op.systemId)},
            {"TaskState", state},
            {"TaskStatus", op.finished() && !ok ? "Critical" : "OK"},
            {"PercentComplete", op.state == OperationState::kQueued ? 0
                                : op.steps.empty()                   ? 100
                                                                     : static_cast<int>(done * 100 / static_cast<long>(op.steps.size()))},
            {"StartTime", formatTimestamp(op.createdAt)},
            {"TaskMonitor", taskMonitorUri(op.id)},
            {"Messages", messages}};
  if (op.finished()) t["EndTime"] = formatTimestamp(op.updatedAt);
  return t;
}

json sessionService(std::chrono::seconds timeout) {
  return {{"@odata.id", fmt::format("{}/SessionService", kRoot)},
          {"@odata.type", "#SessionService.v1_2_0.SessionService"},
          {"Id", "SessionService"},
          {"Name", "Session Service"},
          {"ServiceEnabled", true},
          {"SessionTimeout", timeout.count()},
          {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
          {"Sessions", odataRef(fmt::format("{}/SessionService/Sessions", kRoot))}};
}

json sessionsCollection(const std::vector<Session>& sessions) {
  std::vector<std::string> members;
  for (const auto& s : sessions) members.push_back(fmt::format("{}/SessionService/Sessions/{}", kRoot, s.id));
  return collection(fmt::format("{}/SessionService/Sessions", kRoot), "SessionCollection", "Sessions", members);
}

json session(const Session& s) {
  return {{"@odata.id", fmt::format("{}/SessionService/Sessions/{}", kRoot, s.id)},
          {"@odata.type", "#Session.v1_8_0.Session"},
          {"Id", s.id},
          {"Name", "User Session"},
          {"UserName", s.caller.identity},
          {"Password", nullptr}};
}


json jsonSchemasCollection() {
  return collection(fmt::format("{}/JsonSchemas", kRoot), "JsonSchemaFileCollection", "JSON Schemas of Switchyard's OEM extensions",
                    {fmt::format("{}/JsonSchemas/SwitchyardEvent.v1_0_0", kRoot)});
}

json jsonSchemaFile(const std::string& id) {
  if (id != "SwitchyardEvent.v1_0_0") return nullptr;
  return {{"@odata.id", fmt::format("{}/JsonSchemas/{}", kRoot, id)},
          {"@odata.type", "#JsonSchemaFile.v1_1_5.JsonSchemaFile"},
          {"Id", id},
          {"Name", "SwitchyardEvent schema file"},
          {"Description", "Event.Events[].Oem.Switchyard: the yardd event type, subject and actor"},
          {"Languages", json::array({"en"})},
          {"Schema", "#SwitchyardEvent.v1_0_0.EventOem"},
          {"Location", json::array({{{"Language", "en"}, {"Uri", fmt::format("{}/Schemas/{}.json", kRoot, id)}}})}};
}

json eventService() {
  return {{"@odata.id", fmt::format("{}/EventService", kRoot)},
          {"@odata.type", "#EventService.v1_12_0.EventService"},
          {"Id", "EventService"},
          {"Name", "Event Service"},
          {"ServiceEnabled", true},
          {"Status", {{"State", "Enabled"}, {"Health", "OK"}}},
          {"ServerSentEventUri", fmt::format("{}/EventService/SSE", kRoot)},
          {"Actions", json::object()},  // no SubmitTestEvent: every event is the engine's own
          {"Description", "every yardd event (operations, binds, drift, health) as a server-sent event; subscriptions that push to "
                          "a destination are not supported yet"}};
}

json redfishEvent(const Event& e) {
  // Where the event happened, as a Redfish resource when there is one.
  std::string origin = std::string(kRoot);
  if (e.subject.rfind("op-", 0) == 0) origin = fmt::format("{}/TaskService/Tasks/{}", kRoot, e.subject);
  else if (e.subject.rfind("sys-", 0) == 0) origin = systemUri(e.subject);
  else if (e.type.rfind("device.", 0) == 0 || e.type.rfind("drift.", 0) == 0 || e.type.rfind("fabric.device", 0) == 0)
    origin = blockUri(e.subject);
  const std::string messageId = e.type == "system.composed"     ? "ResourceEvent.1.4.ResourceCreated"
                                : e.type == "system.decomposed" ? "ResourceEvent.1.4.ResourceRemoved"
                                : e.type.rfind("operation.", 0) == 0 ? (e.type == "operation.succeeded" ? "TaskEvent.1.0.TaskCompletedOK"
                                                                        : e.type == "operation.failed"  ? "TaskEvent.1.0.TaskAborted"
                                                                                                        : "TaskEvent.1.0.TaskStarted")
                                                                     : "ResourceEvent.1.4.ResourceChanged";
  const bool bad = e.type == "operation.failed" || e.type.rfind("drift.", 0) == 0 || e.type == "device.quarantined";
  const std::string eventType = e.type == "system.composed"     ? "ResourceAdded"
                                : e.type == "system.decomposed" ? "ResourceRemoved"
                                : bad                           ? "Alert"
                                                                : "ResourceUpdated";
  // EventType is deprecated since Event v1.3 but the published schema (2025.4) still lists it as required in every
  // EventRecord: without it no event validates, so it stays.
  return {{"@odata.type", "#Event.v1_13_0.Event"},
          {"Id", std::to_string(e.sequence)},
          {"Name", "Switchyard event"},
          {"Events", json::array({{{"MemberId", "0"},
                                   {"EventType", eventType},
                                   {"EventId", std::to_string(e.sequence)},
                                   {"EventTimestamp", formatTimestamp(e.at)},
                                   {"MessageId", messageId},
                                   {"Message", fmt::format("{}: {}", e.type, e.message)},
                                   {"MessageSeverity", bad ? "Warning" : "OK"},
                                   {"OriginOfCondition", odataRef(origin)},
                                   {"Oem", {{"Switchyard", {{"@odata.type", "#SwitchyardEvent.v1_0_0.EventOem"}, {"Type", e.type}, {"Subject", e.subject}, {"Actor", e.actor}}}}}}})}};
}

std::string text(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string redfishEventText(const Event& e) { return text(redfishEvent(e)); }

json errorBody(const std::string& messageId, const std::string& message) {
  return {{"error",
           {{"code", messageId},
            {"message", message},
            {"@Message.ExtendedInfo",
             json::array({{{"@odata.type", "#Message.v1_3_0.Message"}, {"MessageId", messageId}, {"Message", message}, {"MessageSeverity", "Warning"}}})}}}};
}

}  // namespace switchyard::bmc
