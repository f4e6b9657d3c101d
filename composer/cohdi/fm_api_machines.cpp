// The fabric manager's machines: list, read, what a machine can still get, attach and detach (fm_api_service.h).
// Request and answer shapes: composable-resource-operator internal/cdi/fti/fm (client.go, api/*.go) and
// composable-dra-driver pkg/client (client.go, types.go).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "composer/cohdi/cohdi_ids.h"
#include "composer/cohdi/fm_api_service.h"
#include "composer/cohdi/fm_inventory.h"
#include "net/form_encoding.h"

namespace switchyard::cohdi {

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

constexpr int kMaxPerRequest = 64;

// What one PATCH or DELETE .../update asks: the tenant and machine it names and its res_specs.
struct UpdateBody {
  std::string tenantUuid;
  std::string machineUuid;
  std::vector<json> specs;
};

Result<UpdateBody> parseUpdate(const std::string& text, const std::string& pathMachine) {
  const json body = json::parse(text, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return fail(Code::kInvalidArgument, "the body must be JSON: {\"tenants\": {\"tenant_uuid\": ..., \"machines\": [{\"mach_uuid\": ..., \"resources\": "
                                        "[{\"res_specs\": [...]}]}]}}");
  const json* tenants = body.contains("tenants") && body["tenants"].is_object() ? &body["tenants"] : nullptr;
  if (!tenants || !tenants->contains("machines") || !(*tenants)["machines"].is_array())
    return fail(Code::kInvalidArgument, "tenants.machines: a list of one machine is required");
  UpdateBody out;
  out.tenantUuid = tenants->value("tenant_uuid", std::string());
  const json& machines = (*tenants)["machines"];
  if (machines.size() != 1 || !machines[0].is_object())
    return fail(Code::kInvalidArgument, fmt::format("tenants.machines: exactly one machine (the path's, {}), got {}", pathMachine, machines.size()));
  out.machineUuid = machines[0].value("mach_uuid", std::string());
  if (!out.machineUuid.empty() && out.machineUuid != pathMachine)
    return fail(Code::kInvalidArgument, fmt::format("tenants.machines[0].mach_uuid {} is not the path's machine {}", out.machineUuid, pathMachine));
  const json resources = machines[0].value("resources", json::array());
  if (!resources.is_array()) return fail(Code::kInvalidArgument, "tenants.machines[0].resources must be a list");
  for (const auto& r : resources) {
    const json specs = r.is_object() ? r.value("res_specs", json::array()) : json();
    if (!specs.is_array()) return fail(Code::kInvalidArgument, "resources[].res_specs must be a list");
    for (const auto& s : specs) {
      if (!s.is_object()) return fail(Code::kInvalidArgument, "res_specs[] must be objects");
      out.specs.push_back(s);
    }
  }
  if (out.specs.empty()) return fail(Code::kInvalidArgument, "no res_specs: name what to attach or detach");
  return out;
}

// The model a condition list asks for ({"column": "model", "operator": "eq", "value": ...}); empty: any. Accepts
// one condition object (the DRA driver's query) or a list of them.
Result<std::string> modelOf(const json& conditions) {
  std::string model;
  const json list = conditions.is_array() ? conditions : json::array({conditions});
  for (const auto& c : list) {
    if (!c.is_object() || !c.value("column", json()).is_string() || !c.value("operator", json()).is_string() || !c.value("value", json()).is_string())
      return fail(Code::kInvalidArgument, "a condition is {\"column\": \"model\", \"operator\": \"eq\", \"value\": MODEL}");
    const std::string column = c["column"], op = c["operator"];
    if (column != "model" || op != "eq")
      return fail(Code::kInvalidArgument, fmt::format("condition {} {}: only model eq is served", column, op));
    if (!model.empty() && model != c["value"].get<std::string>())
      return fail(Code::kInvalidArgument, "conditions name two models; a device has one");
    model = c["value"];
  }
  return model;
}

std::optional<DeviceKind> kindOf(const std::string& type) { return parseDeviceKind(type); }

// The devices an operation added (compose, attach): its first forward bind step's.
std::vector<DeviceId> devicesAddedBy(const Operation& op) {
  for (const auto& step : op.steps)
    if (!step.compensation && step.kind == "bind") {
      std::vector<DeviceId> out;
      for (const auto& b : step.bindings) out.push_back(b.deviceId);
      return out;
    }
  return {};
}

json oneMachine(json machine) { return json{{"data", {{"machines", json::array({std::move(machine)})}}}}; }

}  // namespace

void FmApiService::machines(Call call) {
  const Inventory inventory(engine_.view(), shapeFacts_);
  auto tenant = tenantOf(call, inventory.view());
  if (!tenant) return call.fail(tenant.error());
  json list = json::array();
  for (const auto& host : inventory.hosts())
    if (offeredTo(inventory, host, *tenant)) list.push_back(machineJson(inventory, host, *tenant));
  call.answer(http::status::ok, json{{"data", {{"machines", std::move(list)}}}});
}

void FmApiService::machine(Call call) {
  const Inventory inventory(engine_.view(), shapeFacts_);
  auto tenant = tenantOf(call, inventory.view());
  if (!tenant) return call.fail(tenant.error());
  auto host = offeredMachine(inventory, call.params.at(0), *tenant);
  if (!host) return call.fail(host.error());
  call.answer(http::status::ok, oneMachine(machineJson(inventory, **host, *tenant)));
}

struct FmApiService::FreeCounts {
  std::uint64_t version = 0;
  std::map<std::tuple<int, DeviceKind, std::string>, int> free;  // free, not critical: by (fabric, kind, model or "")
  std::map<std::string, int> gpusByTenant;                        // GPUs bound into each tenant's systems
};

std::shared_ptr<const FmApiService::FreeCounts> FmApiService::freeCounts(const Inventory& inventory) {
  const PoolView& view = inventory.view();
  {
    std::lock_guard lock(countsMutex_);
    if (counts_ && counts_->version == view.version) return counts_;
  }
  auto counts = std::make_shared<FreeCounts>();
  counts->version = view.version;
  view.devices.forEach([&](const DeviceView& d) {
    if (d.device.kind == DeviceKind::kGpu && !d.systemId.empty())
      if (auto s = view.systems.find(d.systemId)) ++counts->gpusByTenant[s->tenant];
    if (d.assignment.allocation != DeviceAllocation::kFree || d.device.health == DeviceHealth::kCritical) return;
    const int fabric = inventory.fabricOfSwitch(d.switchId);
    ++counts->free[{fabric, d.device.kind, d.device.model}];
    ++counts->free[{fabric, d.device.kind, std::string()}];
  });
  std::lock_guard lock(countsMutex_);
  if (!counts_ || counts_->version < counts->version) counts_ = counts;
  return counts;
}

// How many free devices of a type and model the machine can still get in its fabric, within the tenant's quota.
void FmApiService::available(Call call) {
  const Inventory inventory(engine_.view(), shapeFacts_);
  auto tenant = tenantOf(call, inventory.view());
  if (!tenant) return call.fail(tenant.error());
  auto host = offeredMachine(inventory, call.params.at(0), *tenant);
  if (!host) return call.fail(host.error());
  const std::string type = net::formValue(call.query, "res_type").empty() ? "gpu" : net::formValue(call.query, "res_type");
  const auto kind = kindOf(type);
  if (!kind) return call.fail(Error{Code::kInvalidArgument, fmt::format("res_type '{}': one of gpu, nvme, nic, cxl-memory", type)});
  std::string model;
  if (const std::string text = net::formValue(call.query, "condition"); !text.empty()) {
    const json condition = json::parse(text, nullptr, false);
    if (condition.is_discarded()) return call.fail(Error{Code::kInvalidArgument, "condition: must be JSON ({\"column\": \"model\", ...})"});
    auto asked = modelOf(condition.is_object() && condition.contains("condition") ? condition["condition"] : condition);
    if (!asked) return call.fail(asked.error());
    model = *asked;
  }
  const auto fabric = inventory.fabricOf(**host);
  const auto counts = freeCounts(inventory);
  int count = 0;
  for (int f : inventory.fabricsOf(**host))
    if (auto it = counts->free.find({f, *kind, model}); it != counts->free.end()) count += it->second;
  const int tenantGpus = counts->gpusByTenant.contains(*tenant) ? counts->gpusByTenant.at(*tenant) : 0;
  if (*kind == DeviceKind::kGpu && identities_)
    if (const auto quotas = identities_->quotas(); quotas.contains(*tenant))
      if (const auto& max = quotas.find(*tenant)->second.maxGpus) count = std::max(0, std::min(count, *max - tenantGpus));
  call.answer(http::status::ok, json{{"fabric_id", fabric ? json(*fabric) : json(nullptr)}, {"reserved_res_num_per_fabric", count}});
}

struct FmApiService::Update {
  std::vector<json> specs;  // its res_specs
  std::string tenant;
};

Result<FmApiService::Update> FmApiService::readUpdate(const Call& call) const {
  SY_ASSIGN(auto body, parseUpdate(call.request->body(), call.params.at(0)));
  SY_ASSIGN(auto tenant, tenantOf(call, *engine_.view()));
  if (!body.tenantUuid.empty() && body.tenantUuid != tenantUuid(tenant))
    return fail(Code::kInvalidArgument, fmt::format("tenants.tenant_uuid {} is not the query's tenant_uuid", body.tenantUuid));
  return Update{std::move(body.specs), std::move(tenant)};
}

// PATCH .../update: attach res_num devices of a type and model. The machine's system gets them (composed as
// cohdi-HOST when the machine has none); the answer, once they are bound and verified, lists the new devices.
void FmApiService::attach(Call call) {
  auto update = readUpdate(call);
  if (!update) return call.fail(update.error());
  if (update->specs.size() != 1)
    return call.fail(Error{Code::kInvalidArgument, fmt::format("{} res_specs: one per request (one type and model)", update->specs.size())});
  const json& spec = update->specs.front();
  const std::string type = spec.value("res_type", std::string());
  if (type != "gpu")
    return call.fail(Error{Code::kInvalidArgument, fmt::format("res_type '{}': this API attaches GPUs (\"gpu\"); drives and NICs: yardctl attach --nvme N or --nic N", type)});
  const json conditions = spec.contains("res_spec") && spec["res_spec"].is_object() ? spec["res_spec"].value("condition", json::array()) : json::array();
  auto model = modelOf(conditions);
  if (!model) return call.fail(model.error());
  const json num = spec.value("res_num", json(1));
  if (!num.is_number_integer() || num.get<int>() < 1 || num.get<int>() > kMaxPerRequest)
    return call.fail(Error{Code::kInvalidArgument, fmt::format("res_num: from 1 to {}", kMaxPerRequest)});
  Start start = [this, caller = call.caller, tenant = update->tenant, machineUuid = call.params.at(0), model = *model,
                 count = num.get<int>()](EngineCore& core, const std::string& requestId) -> Result<Started> {
    const Inventory inventory(engine_.view(), shapeFacts_);
    SY_ASSIGN(const Host* host, offeredMachine(inventory, machineUuid, tenant));
    PlacementRequest placement;
    placement.gpuCount = count;
    placement.model = model;
    placement.peerToPeer = PeerToPeer::kPreferred;
    if (auto system = inventory.systemOn(host->id)) {
      if (!system->activeOperation.empty()) return Started{std::nullopt, system->activeOperation, {}};
      SY_ASSIGN(auto op, core.attach(caller, AttachRequest{system->id, placement, requestId}));
      return Started{std::move(op), {}, {}};
    }
    placement.host = host->id;
    placement.tenant = tenant;
    SY_ASSIGN(auto op, core.compose(caller, ComposeRequest{"cohdi-" + host->id, placement, {{"switchyard.io/provider", "cohdi"}}, requestId}));
    return Started{std::move(op), {}, {}};
  };
  change(std::move(call), std::move(start), [tenant = update->tenant](const Inventory& inventory, const Host& host, const Operation& op) {
    const auto added = devicesAddedBy(op);
    return oneMachine(machineJson(inventory, host, tenant, &added));
  });
}

// DELETE .../update: detach devices by res_uuid; the last one decomposes the machine's system. A device the
// machine does not have is already gone: the answer is the machine as it is (removal is idempotent).
void FmApiService::detach(Call call) {
  auto update = readUpdate(call);
  if (!update) return call.fail(update.error());
  std::vector<std::string> uuids;
  for (const auto& spec : update->specs) {
    const std::string uuid = spec.value("res_uuid", std::string());
    if (uuid.empty()) return call.fail(Error{Code::kInvalidArgument, "res_specs[].res_uuid: required (the device to detach)"});
    uuids.push_back(uuid);
  }
  Start start = [this, caller = call.caller, tenant = update->tenant, machineUuid = call.params.at(0), uuids](EngineCore& core,
                                                                                                            const std::string& requestId) -> Result<Started> {
    const Inventory inventory(engine_.view(), shapeFacts_);
    SY_ASSIGN(const Host* host, offeredMachine(inventory, machineUuid, tenant));
    auto system = inventory.systemOn(host->id);
    std::vector<DeviceId> devices;
    if (system)
      for (const auto& b : system->bindings)
        if (std::find(uuids.begin(), uuids.end(), deviceUuid(b.deviceId)) != uuids.end()) devices.push_back(b.deviceId);
    if (devices.empty()) return Started{std::nullopt, {}, oneMachine(machineJson(inventory, *host, tenant))};
    if (!system->activeOperation.empty()) return Started{std::nullopt, system->activeOperation, {}};
    SY_ASSIGN(auto op, devices.size() == system->bindings.size() ? core.decompose(caller, system->id, requestId)
                                                                  : core.detach(caller, DetachRequest{system->id, devices, {}, {}, requestId}));
    return Started{std::move(op), {}, {}};
  };
  change(std::move(call), std::move(start), [tenant = update->tenant](const Inventory& inventory, const Host& host, const Operation&) {
    return oneMachine(machineJson(inventory, host, tenant));
  });
}

}  // namespace switchyard::cohdi
