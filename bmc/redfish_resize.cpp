// PATCH /redfish/v1/Systems/{id} with Processors: "make this system hold N GPUs (of a model)". The shape CoHDI's
// Sunfish backend sends (composable-resource-operator internal/cdi/sunfish/client.go): the URL's id "System", the
// node in Name, and the count as @Redfish.RequestCount (DMTF spells it @Redfish.RequestedCount; both are read).
// The target is the composed system the URL names or, for "/Systems/System", the live system on the host Name
// names, or a new one there when N > 0. More GPUs are attached, fewer detached (the last bound first), none decomposes. The
// answer waits briefly for the operation: 200 with the system (204 once decomposed), or 202 and its task monitor.
#include <fmt/format.h>

#include "bmc/redfish_json.h"
#include "bmc/redfish_protocol.h"
#include "bmc/redfish_resources.h"
#include "bmc/redfish_service.h"
#include "composer/model/access.h"

namespace switchyard::bmc {

using namespace redfish_protocol;

namespace {

constexpr std::chrono::seconds kAnswerWithin{20};

struct ResizeRequest {
  std::string name;   // Name: the node (host) whose system changes, when the URL names no composed system
  long long count = 0;
  std::string model;  // empty: any GPU
};

std::variant<ResizeRequest, HttpResponse> parseResize(const json& body) {
  auto bad = [](const std::string& id, const std::string& message) { return error(http::status::bad_request, std::string(kBase) + id, message); };
  if (!body.is_object()) return bad("MalformedJSON", "the request body is not a JSON object");
  for (const auto& [key, value] : body.items())
    if (key != "Name" && key != "Processors" && key.rfind("@", 0) != 0)
      return bad("PropertyNotWritable", fmt::format("the property {} cannot be changed here: a PATCH of a ComputerSystem changes its GPUs "
                                                    "(Processors.Members[{{\"@Redfish.RequestedCount\": N, \"ProcessorType\": \"GPU\"}}])",
                                                    key));
  ResizeRequest out;
  if (body.contains("Name")) {
    if (!body["Name"].is_string()) return bad("PropertyValueTypeError", "Name must be a string");
    out.name = body["Name"].get<std::string>();
  }
  if (!body.contains("Processors"))
    return bad("PropertyMissing", "name the GPUs the system should hold: Processors.Members[{\"@Redfish.RequestedCount\": N, \"ProcessorType\": \"GPU\"}]");
  const json& processors = body["Processors"];
  if (!processors.is_object() || !processors.contains("Members") || !processors["Members"].is_array() || processors["Members"].size() != 1)
    return bad("PropertyValueTypeError", "Processors.Members must hold one requirement {\"@Redfish.RequestedCount\": N, \"ProcessorType\": \"GPU\"}");
  const json& want = processors["Members"][0];
  const char* key = want.is_object() && want.contains("@Redfish.RequestedCount") ? "@Redfish.RequestedCount" : "@Redfish.RequestCount";
  if (!want.is_object() || !want.contains(key) || !want[key].is_number_integer())
    return bad("PropertyValueTypeError", "@Redfish.RequestedCount (or Sunfish's @Redfish.RequestCount) must be an integer");
  if (!want.value("ProcessorType", json("GPU")).is_string() || want.value("ProcessorType", json("GPU")) != "GPU")
    return bad("PropertyValueError", "only ProcessorType GPU can be composed");
  const json& count = want[key];
  out.count = redfish_json::wholeNumberUpTo(count, 4096);
  if (out.count < 0 || out.count > 4096) return bad("PropertyValueOutOfRange", fmt::format("{} must be from 0 to 4096", key));
  if (want.contains("Model")) {
    if (!want["Model"].is_string()) return bad("PropertyValueTypeError", "Model must be a string");
    out.model = want["Model"].get<std::string>();
  }
  return out;
}

// What the control thread decided: an operation started, or nothing to do (the system as it is, if any).
struct Resize {
  std::optional<Operation> operation;
  SystemId unchanged;  // nothing to change: this system (empty: no system, and none is wanted)
};

}  // namespace

void RedfishService::resizeSystem(const std::shared_ptr<Call>& call, const std::string& id) {
  const json body = json::parse(call->request->body(), nullptr, false);
  if (body.is_discarded()) return call->reply(error(http::status::bad_request, std::string(kBase) + "MalformedJSON", "the request body is not JSON"));
  auto parsed = parseResize(body);
  if (auto* res = std::get_if<HttpResponse>(&parsed)) return call->reply(std::move(*res));
  const ResizeRequest want = std::get<ResizeRequest>(parsed);
  engine_.run<Resize>(
      [this, caller = call->caller, id, want](EngineCore& core) -> Result<Resize> {
        const auto view = engine_.view();
        std::shared_ptr<const System> system;
        HostId host;
        if (id.rfind("sys-", 0) == 0) {
          system = view->systems.find(id);
          if (!system || !maySee(caller, system->tenant)) return fail(Code::kNotFound, fmt::format("no system {}", id));
          host = system->hostId;
        } else {
          host = want.name;  // /Systems/System: the host is in Name
          const HostSlot* slot = view->host(host);
          if (slot == nullptr)
            return fail(Code::kNotFound, fmt::format("no host '{}': PATCH a composed system's URL, or /Systems/System with the host in Name", host));
          if (!slot->systemId.empty()) system = view->systems.find(slot->systemId);
          if (system && (system->state == SystemState::kDecomposed || system->state == SystemState::kQueued)) system = nullptr;
          if (system && !maySee(caller, system->tenant)) return fail(Code::kNotFound, fmt::format("no host {}", host));
        }
        // The GPUs of the model the system holds now, in binding order.
        std::vector<DeviceId> held;
        if (system)
          for (const auto& b : system->bindings)
            if (const DeviceView* d = view->device(b.deviceId); d && d->device.kind == DeviceKind::kGpu && (want.model.empty() || d->device.model == want.model))
              held.push_back(b.deviceId);
        const long long have = static_cast<long long>(held.size());
        if (have == want.count) return Resize{std::nullopt, system ? system->id : SystemId{}};
        if (system && !system->activeOperation.empty())
          return fail(Code::kFailedPrecondition, fmt::format("{} is running on {}; try again when it ends", system->activeOperation, system->name));
        PlacementRequest placement;
        placement.model = want.model;
        if (!system) {
          placement.gpuCount = static_cast<int>(want.count);
          placement.host = host;
          if (!caller.tenant.empty()) placement.tenant = caller.tenant;
          SY_ASSIGN(auto op, core.compose(caller, ComposeRequest{host, placement, {}}));
          return Resize{std::move(op), {}};
        }
        if (want.count > have) {
          placement.gpuCount = static_cast<int>(want.count - have);
          SY_ASSIGN(auto op, core.attach(caller, AttachRequest{system->id, placement}));
          return Resize{std::move(op), {}};
        }
        const std::vector<DeviceId> going(held.end() - (have - want.count), held.end());
        if (going.size() == system->bindings.size()) {
          SY_ASSIGN(auto op, core.decompose(caller, system->id));
          return Resize{std::move(op), {}};
        }
        SY_ASSIGN(auto op, core.detach(caller, DetachRequest{system->id, going, {}, {}}));
        return Resize{std::move(op), {}};
      },
      [this, call](Result<Resize> resize) {
        if (!resize) return call->reply(engineError(resize.error(), true));
        auto answerWith = [this, call](const SystemId& system) {
          if (system.empty()) return call->reply(respond(http::status::no_content, nullptr));
          withView(call, kHosts | kSystems, [system](const PoolView& v) { return respond(http::status::ok, computerSystem(v, system)); });
        };
        if (!resize->operation) return answerWith(resize->unchanged);
        (void)engine_.waitOperation(resize->operation->id, kAnswerWithin, [call, answerWith](Result<Operation> op) {
          if (!op) return call->reply(engineError(op.error(), true));
          if (!op->finished()) return call->reply(accepted(*op));  // still running: follow its task monitor
          if (op->state != OperationState::kSucceeded)
            return call->reply(error(http::status::internal_server_error, std::string(kBase) + "GeneralError",
                                     fmt::format("{} failed and was rolled back: {}", op->id, op->error)));
          answerWith(op->kind == OperationKind::kDecompose ? SystemId{} : op->systemId);
        });
      });
}

}  // namespace switchyard::bmc
