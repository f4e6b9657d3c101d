#include "composer/cohdi/fm_inventory.h"

#include <fmt/format.h>

#include <algorithm>

#include "composer/cohdi/cohdi_ids.h"

namespace switchyard::cohdi {

using nlohmann::json;

std::shared_ptr<const ShapeFacts> ShapeFactsCache::of(const std::shared_ptr<const PoolShape>& shape) {
  std::lock_guard lock(mutex_);
  if (facts_ && shape_.lock() == shape) return facts_;
  auto facts = std::make_shared<ShapeFacts>();
  if (shape) {
    const TopologyIndex index(shape->topology);
    for (const auto& s : shape->topology.switches) facts->fabricOfSwitch[s.id] = index.fabricOf(s.id) + 1;
    for (std::size_t i = 0; i < shape->topology.hosts.size(); ++i) facts->hostOfUuid.emplace(machineUuid(shape->topology.hosts[i].id), i);
    for (const auto& d : shape->topology.devices)
      if (const SwitchId* sw = index.switchOfDevice(d.id); sw && d.kind == DeviceKind::kGpu)
        facts->gpuModelsOfFabric[facts->fabricOfSwitch[*sw]].insert(d.model);
  }
  shape_ = shape;
  facts_ = std::move(facts);
  return facts_;
}

Inventory::Inventory(std::shared_ptr<const PoolView> view, ShapeFactsCache& facts) : view_(std::move(view)), facts_(facts.of(view_->shape)) {}

const Host* Inventory::machine(std::string_view uuidOrId) const {
  if (auto it = facts_->hostOfUuid.find(std::string(uuidOrId)); it != facts_->hostOfUuid.end()) return &hosts()[it->second];
  auto it = view_->shape->hostPosition.find(std::string(uuidOrId));
  return it == view_->shape->hostPosition.end() ? nullptr : &hosts()[it->second];
}

std::shared_ptr<const System> Inventory::systemOn(const HostId& host) const {
  const HostSlot* slot = view_->host(host);
  if (slot == nullptr || slot->systemId.empty()) return nullptr;
  auto system = view_->systems.find(slot->systemId);
  if (!system || system->state == SystemState::kDecomposed || system->state == SystemState::kQueued) return nullptr;
  return system;
}

std::string Inventory::ownerOf(const HostId& host) const {
  auto system = systemOn(host);
  return system ? system->tenant : std::string();
}

int Inventory::fabricOfSwitch(const SwitchId& id) const {
  auto it = facts_->fabricOfSwitch.find(id);
  return it == facts_->fabricOfSwitch.end() ? 0 : it->second;
}

const std::set<std::string>& Inventory::gpuModelsOf(int fabric) const {
  static const std::set<std::string> kNone;
  auto it = facts_->gpuModelsOfFabric.find(fabric);
  return it == facts_->gpuModelsOfFabric.end() ? kNone : it->second;
}

std::optional<int> Inventory::fabricOf(const Host& host) const {
  const auto at = view_->shape->hostPosition.find(host.id);
  if (at == view_->shape->hostPosition.end()) return std::nullopt;
  const auto& switches = view_->shape->upstreamSwitches[at->second];
  if (switches.empty()) return std::nullopt;
  return fabricOfSwitch(switches.front());
}

std::vector<int> Inventory::fabricsOf(const Host& host) const {
  std::vector<int> out;
  const auto at = view_->shape->hostPosition.find(host.id);
  if (at == view_->shape->hostPosition.end()) return out;
  for (const auto& s : view_->shape->upstreamSwitches[at->second])
    if (const int f = fabricOfSwitch(s); std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  return out;
}

bool offeredTo(const Inventory& inventory, const Host& host, const std::string& tenant) {
  const std::string owner = inventory.ownerOf(host.id);
  return owner.empty() || owner == tenant;
}

Result<const Host*> offeredMachine(const Inventory& inventory, const std::string& uuid, const std::string& tenant) {
  const Host* host = inventory.machine(uuid);
  if (!host || !offeredTo(inventory, *host, tenant))
    return fail(Code::kNotFound, fmt::format("no machine {} for this tenant (GET fabric_manager/api/v1/machines lists them)", uuid));
  return host;
}

std::string resourceType(const Device& device) { return std::string(kindName(device)); }

json modelCondition(const std::string& model) { return json::array({{{"column", "model"}, {"operator", "eq"}, {"value", model}}}); }

json resourceJson(const DeviceView& device, const System* system, bool changing) {
  // res_op_status: "0" normal, "1" warning, "2" critical (the operator reads its first character); a quarantined
  // device (its fabric state unknown) is critical too.
  std::string opStatus = device.device.health == DeviceHealth::kOk ? "0" : device.device.health == DeviceHealth::kWarning ? "1" : "2";
  if (device.assignment.allocation == DeviceAllocation::kQuarantined) opStatus = "2";
  // res_serial_num is what the node side matches: the GPU's UUID as its host verified it, else the device's serial.
  std::string serial = device.device.serial;
  if (system)
    for (const auto& h : system->hostDevices)
      if (h.deviceId == device.device.id && !h.uuid.empty()) serial = h.uuid;
  return json{{"res_uuid", deviceUuid(device.device.id)},
              {"res_name", device.device.id},
              {"res_type", resourceType(device.device)},
              {"res_status", changing ? 1 : 0},  // 0: in place; 1: an operation is changing its machine
              {"res_op_status", opStatus},
              {"res_serial_num", serial},
              {"res_spec", {{"condition", modelCondition(device.device.model)}}}};
}

json machineJson(const Inventory& inventory, const Host& host, const std::string& tenant, const std::vector<DeviceId>* only) {
  const auto system = inventory.systemOn(host.id);
  const auto fabric = inventory.fabricOf(host);
  const std::string uuid = machineUuid(host.id);
  const bool changing = system && !system->activeOperation.empty();
  json resources = json::array();
  if (system)
    for (const auto& b : system->bindings) {
      if (only && std::find(only->begin(), only->end(), b.deviceId) == only->end()) continue;
      if (const DeviceView* d = inventory.view().device(b.deviceId)) resources.push_back(resourceJson(*d, system.get(), changing));
    }
  // mach_status: 0 in service, 1 an operation is changing it, 2 its system is degraded or failed.
  int status = 0;
  std::string detail;
  if (changing) {
    status = 1;
    detail = system->activeOperation + " is running";
  } else if (system && (system->state == SystemState::kDegraded || system->state == SystemState::kFailed)) {
    status = 2;
    detail = system->stateReason.empty() ? std::string(toString(system->state)) : system->stateReason;
  }
  return json{{"fabric_uuid", fabric ? json(fabricUuid(*fabric)) : json(nullptr)},
              {"fabric_id", fabric ? json(*fabric) : json(nullptr)},
              {"mach_uuid", uuid},
              {"mach_id", numberOf(uuid)},
              {"mach_name", host.id},
              {"tenant_uuid", tenantUuid(system ? system->tenant : tenant)},
              {"mach_status", status},
              {"mach_status_detail", detail},
              {"resources", std::move(resources)}};
}

}  // namespace switchyard::cohdi
