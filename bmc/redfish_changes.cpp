// The changes a Redfish client asks for: compose (POST /Systems and the Compose action), decompose
// (DELETE), Add/RemoveResourceBlock, and the task monitors that follow them. Each goes through
// EngineClient::run with the account as Caller and answers 202 with a task monitor.
#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <variant>

#include "bmc/redfish_json.h"
#include "bmc/redfish_protocol.h"
#include "bmc/redfish_requirements.h"
#include "composer/model/access.h"

namespace switchyard::bmc {

using namespace redfish_protocol;

namespace {

// A ComputerSystem create body (POST /Systems, or a ComposeSystem stanza's Request) as a compose request,
// or the Redfish error to answer. `fallbackName` names the system when the body does not (a stanza id).
std::variant<ComposeRequest, HttpResponse> parseSystemRequest(const json& body, const std::string& fallbackName) {
  auto bad = [](const std::string& id, const std::string& message) { return error(http::status::bad_request, std::string(kBase) + id, message); };
  if (!body.is_object()) return bad("MalformedJSON", "the request body is not a JSON object");
  for (const auto& [key, value] : body.items())
    if (key != "Name" && key != "Links" && key != "Processors" && key != "Storage" && key != "NetworkInterfaces" && key != "Memory" &&
        key != "Description" && key != "Oem" && key.rfind("@Redfish.", 0) != 0)
      return bad("PropertyUnknown", fmt::format("the property {} is unknown or cannot be set on create", key));
  if (!body.contains("Name") && fallbackName.empty()) return bad("PropertyMissing", "the property Name is required to compose a system");
  if (body.contains("Name") && !body["Name"].is_string()) return bad("PropertyValueTypeError", "Name must be a string");
  ComposeRequest request{body.contains("Name") ? body["Name"].get<std::string>() : fallbackName, {}, {}};
  request.peerToPeerAsked = false;  // Redfish has no word for it: a template's holds, else the default
  const std::string blocksPrefix = std::string(kRoot) + "/CompositionService/ResourceBlocks/";
  if (body.contains("Links")) {
    const json& links = body["Links"];
    if (!links.is_object() || !links.contains("ResourceBlocks") || !links["ResourceBlocks"].is_array())
      return bad("PropertyValueTypeError", "Links.ResourceBlocks must be an array of {\"@odata.id\": ...}");
    for (const auto& block : links["ResourceBlocks"]) {
      if (!block.is_object() || !block.contains("@odata.id") || !block["@odata.id"].is_string())
        return bad("PropertyValueTypeError", "each of Links.ResourceBlocks must be {\"@odata.id\": \"/redfish/v1/CompositionService/ResourceBlocks/ID\"}");
      const std::string uri = block["@odata.id"].get<std::string>();
      if (uri.rfind(blocksPrefix, 0) != 0)
        return error(http::status::bad_request, std::string(kComposition) + "ResourceBlockInvalid", fmt::format("{} is not a resource block", uri));
      request.placement.devices.push_back(uri.substr(blocksPrefix.size()));
    }
  }
  if (auto refused = readKindRequirements(body, request)) return std::move(*refused);
  // Switchyard's own properties (issue 40): wait in the queue, the priority class, give-up time and lease.
  //   "Oem": {"Switchyard": {"Queue": true, "PriorityClass": "production", "QueueTimeoutSeconds": 3600, "LeaseSeconds": 28800}}
  if (body.contains("Oem")) {
    const json& oem = body["Oem"];
    if (!oem.is_object()) return bad("PropertyValueTypeError", "Oem must be an object");
    for (const auto& [vendor, value] : oem.items())
      if (vendor != "Switchyard") return bad("PropertyUnknown", fmt::format("Oem.{} is unknown (this service reads Oem.Switchyard)", vendor));
    if (oem.contains("Switchyard")) {
      const json& sy = oem["Switchyard"];
      if (!sy.is_object()) return bad("PropertyValueTypeError", "Oem.Switchyard must be an object");
      // Endpoints first: Affinity may name their classes (the object's keys come in name order).
      if (sy.contains("Endpoints"))
        if (auto refused = readEndpoints(sy["Endpoints"], request)) return std::move(*refused);
      for (const auto& [key, value] : sy.items()) {
        if (key == "Endpoints") continue;
        if (key == "Queue") {
          if (!value.is_boolean()) return bad("PropertyValueTypeError", "Oem.Switchyard.Queue must be true or false");
          request.queue = value.get<bool>();
        } else if (key == "PriorityClass") {
          if (!value.is_string()) return bad("PropertyValueTypeError", "Oem.Switchyard.PriorityClass must be a string");
          request.priorityClass = value.get<std::string>();
        } else if (key == "Template") {
          if (!value.is_string()) return bad("PropertyValueTypeError", "Oem.Switchyard.Template must be a template's name (yardctl templates)");
          request.machineTemplate = value.get<std::string>();
        } else if (key == "Affinity") {
          if (auto refused = readAffinity(value, request)) return std::move(*refused);
        } else if (key == "QueueTimeoutSeconds" || key == "LeaseSeconds") {
          if (!value.is_number_integer() || value.get<long long>() < 0 || value.get<long long>() > 10LL * 365 * 24 * 3600)
            return bad("PropertyValueOutOfRange", fmt::format("Oem.Switchyard.{} must be a whole number of seconds (0: none)", key));
          (key == "LeaseSeconds" ? request.lease : request.queueTimeout) = std::chrono::seconds(value.get<long long>());
        } else {
          return bad("PropertyUnknown",
                     fmt::format("Oem.Switchyard.{} is unknown (Queue, PriorityClass, QueueTimeoutSeconds, LeaseSeconds, Template, Endpoints, Affinity)", key));
        }
      }
    }
  }
  if (request.placement.devices.empty() && request.placement.gpuCount == 0 && request.placement.endpoints.empty() &&
      request.placement.pooledMemoryGiB == 0 && request.machineTemplate.empty())
    return bad("PropertyMissing",
               "name resource blocks in Links.ResourceBlocks, or ask for Processors, Storage, NetworkInterfaces or Memory with "
               "@Redfish.RequestedCount, or a template (Oem.Switchyard.Template)");
  return request;
}

}  // namespace

// Specific composition names the host by its ComputerSystem block among the blocks: on the control thread.
Result<ComposeRequest> RedfishService::resolveHost(ComposeRequest request) {
  if (request.placement.devices.empty()) return request;
  SY_ASSIGN(auto hosts, engine_.listHosts());
  std::vector<DeviceId> devices;
  for (const auto& id : request.placement.devices) {
    const bool isHost = std::any_of(hosts.begin(), hosts.end(), [&](const HostView& h) { return h.host.id == id; });
    if (!isHost) {
      devices.push_back(id);
      continue;
    }
    if (request.placement.host) return fail(Code::kInvalidArgument, "name one ComputerSystem resource block (the host), not several");
    request.placement.host = id;
  }
  if (!request.placement.host)
    return fail(Code::kInvalidArgument, "specific composition needs the host's ComputerSystem resource block among Links.ResourceBlocks");
  request.placement.devices = devices;
  return request;
}

void RedfishService::startChange(const std::shared_ptr<Call>& call, std::function<Result<Operation>(EngineCore&)> change, bool composing) {
  engine_.run<Operation>(std::move(change), [call, composing](Result<Operation> op) { call->reply(op ? accepted(*op) : engineError(op.error(), composing)); });
}

void RedfishService::startCompose(const std::shared_ptr<Call>& call, ComposeRequest request) {
  // A tenant's account composes for its tenant (Redfish has no tenant property to ask for another).
  if (!call->caller.tenant.empty()) request.placement.tenant = call->caller.tenant;
  startChange(
      call,
      [this, caller = call->caller, request](EngineCore& core) -> Result<Operation> {
        SY_ASSIGN(ComposeRequest resolved, resolveHost(request));
        return core.compose(caller, resolved);
      },
      true);
}

Result<void> RedfishService::checkSystemTag(const Caller& caller, const std::string& id, const std::string& tag) {
  if (tag.empty()) return {};
  PoolView v;
  SY_ASSIGN(v.hosts, engine_.listHosts());
  SY_ASSIGN(auto system, engine_.getSystem(id));
  // Another tenant's system is answered as one that does not exist (404, the same words), not 412: a tenant
  // must not learn which ids exist by comparing the two.
  if (!maySee(caller, system.tenant)) return fail(Code::kNotFound, fmt::format("no system '{}' (see `yardctl systems`)", id));
  v.systems.push_back(std::move(system));
  v.published = engine_.view();
  if (etagOf(computerSystem(v, id)) != tag) return fail(staleTag(id, tag));
  return {};
}

void RedfishService::compose(const std::shared_ptr<Call>& call) {
  const json body = json::parse(call->request->body(), nullptr, false);
  if (body.is_discarded()) return call->reply(error(http::status::bad_request, std::string(kBase) + "MalformedJSON", "the request body is not JSON"));
  auto parsed = parseSystemRequest(body, {});
  if (auto* res = std::get_if<HttpResponse>(&parsed)) return call->reply(std::move(*res));
  startCompose(call, std::move(std::get<ComposeRequest>(parsed)));
}

namespace {

// A ComputerSystem in a stanza's Response: the system as composed (or composing), with its blocks.
json stanzaResponse(const std::string& name, const Placement& placement, const std::string& systemId) {
  json blocks = json::array({redfish_json::odataRef(redfish_json::blockUri(placement.hostId))});
  for (const auto& d : placement.devices) blocks.push_back(redfish_json::odataRef(redfish_json::blockUri(d.deviceId)));
  json response = {{"Name", name}, {"SystemType", "Composed"}, {"Description", placement.explanation}, {"Links", {{"ResourceBlocks", blocks}}}};
  if (!systemId.empty()) {
    response["@odata.id"] = redfish_json::systemUri(systemId);
    response["Id"] = systemId;
  }
  return response;
}

}  // namespace

void RedfishService::composeAction(const std::shared_ptr<Call>& call) {
  auto bad = [&](const std::string& id, const std::string& message) { call->reply(error(http::status::bad_request, id, message)); };
  const json body = json::parse(call->request->body(), nullptr, false);
  if (body.is_discarded() || !body.is_object()) return bad(std::string(kBase) + "MalformedJSON", "the request body is not a JSON object");
  for (const auto& [key, value] : body.items())
    if (key != "RequestFormat" && key != "RequestType" && key != "Manifest" && key != "ReservationId")
      return bad(std::string(kBase) + "ActionParameterUnknown", fmt::format("CompositionService.Compose has no parameter {}", key));
  if (!body.contains("RequestFormat") || body["RequestFormat"] != "Manifest")
    return bad(std::string(kBase) + "ActionParameterMissing", "RequestFormat must be \"Manifest\"");
  const std::string type = body.contains("RequestType") && body["RequestType"].is_string() ? body["RequestType"].get<std::string>() : "";
  if (type != "Preview" && type != "PreviewReserve" && type != "Apply")
    return bad(std::string(kBase) + "ActionParameterNotSupported",
               fmt::format("RequestType {} is not supported: use Preview, PreviewReserve or Apply", type.empty() ? "(missing)" : type));
  json answer = {{"RequestFormat", "Manifest"}, {"RequestType", type}};

  // Apply a reservation: exactly the blocks PreviewReserve held (a Manifest alongside is not needed).
  if (body.contains("ReservationId")) {
    if (!body["ReservationId"].is_string() || body["ReservationId"].get<std::string>().empty())
      return bad(std::string(kBase) + "ActionParameterValueTypeError", "ReservationId must be a reservation's Id (a string)");
    if (type != "Apply") return bad(std::string(kBase) + "ActionParameterNotSupported", "ReservationId goes with RequestType Apply");
    return applyReservation(call, body["ReservationId"].get<std::string>());
  }
  if (!body.contains("Manifest") || !body["Manifest"].is_object() || !body["Manifest"].contains("Stanzas") || !body["Manifest"]["Stanzas"].is_array() ||
      body["Manifest"]["Stanzas"].empty())
    return bad(std::string(kComposition) + "EmptyManifest", "the manifest has no stanzas");
  const json& stanzas = body["Manifest"]["Stanzas"];
  if (stanzas.size() > 64) return bad(std::string(kComposition) + "UnableToProcessStanzaRequest", "a manifest may hold at most 64 stanzas");
  std::vector<ComposeRequest> requests;
  for (const auto& stanza : stanzas) {
    if (!stanza.is_object() || stanza.value("StanzaType", json("")) != "ComposeSystem" || !stanza.contains("Request"))
      return bad(std::string(kComposition) + "UnableToProcessStanzaRequest", "every stanza needs StanzaType ComposeSystem and a Request");
    const std::string stanzaId = stanza.contains("StanzaId") && stanza["StanzaId"].is_string() ? stanza["StanzaId"].get<std::string>() : "";
    auto parsed = parseSystemRequest(stanza["Request"], stanzaId);
    if (auto* res = std::get_if<HttpResponse>(&parsed)) return call->reply(std::move(*res));
    requests.push_back(std::move(std::get<ComposeRequest>(parsed)));
    // A tenant's account composes for its tenant (Redfish has no tenant property to ask for another).
    if (!call->caller.tenant.empty()) requests.back().placement.tenant = call->caller.tenant;
  }
  // The answer is the manifest with each stanza's Response filled in.
  auto withResponses = [answer, manifest = body["Manifest"]](const std::vector<ComposeRequest>& asked, const std::vector<Placement>& placed,
                                                             const std::vector<std::string>& systemIds) mutable {
    for (std::size_t i = 0; i < placed.size(); ++i)
      manifest["Stanzas"][i]["Response"] = stanzaResponse(asked[i].name, placed[i], i < systemIds.size() ? systemIds[i] : "");
    answer["Manifest"] = manifest;
    return answer;
  };
  auto resolveAll = [this](std::vector<ComposeRequest> asked) -> Result<std::vector<ComposeRequest>> {
    for (auto& r : asked) {
      SY_ASSIGN(r, resolveHost(std::move(r)));
    }
    return asked;
  };

  if (type == "Preview") {
    // What Apply would compose now, changing nothing.
    return engine_.run<std::vector<Placement>>(
        [requests, resolveAll](EngineCore& core) -> Result<std::vector<Placement>> {
          SY_ASSIGN(auto resolved, resolveAll(requests));
          return core.planSystems(resolved);
        },
        [call, requests, withResponses](Result<std::vector<Placement>> placed) mutable {
          if (!placed) return call->reply(engineError(placed.error(), true));
          call->reply(respond(http::status::ok, withResponses(requests, *placed, {})));
        });
  }
  if (type == "PreviewReserve") {
    return engine_.run<Reservation>(
        [this, requests, resolveAll, caller = call->caller](EngineCore& core) -> Result<Reservation> {
          SY_ASSIGN(auto resolved, resolveAll(requests));
          return core.reserve(caller, resolved, reservationDuration());
        },
        [call, requests, withResponses](Result<Reservation> r) mutable {
          if (!r) return call->reply(engineError(r.error(), true));
          std::vector<Placement> placed;
          for (const auto& s : r->systems) placed.push_back(s.placement);
          json reserved = withResponses(requests, placed, {});
          reserved["ReservationId"] = r->id;
          HttpResponse res = respond(http::status::ok, reserved);
          res.set(http::field::location, std::string(kRoot) + "/CompositionService/CompositionReservations/" + r->id);
          call->reply(std::move(res));
        });
  }
  // Apply: one system as POST /Systems composes it; several are placed together, or none is composed.
  if (requests.size() == 1) return startCompose(call, std::move(requests.front()));
  startComposeAll(call, [requests, resolveAll, caller = call->caller](EngineCore& core) -> Result<std::vector<Operation>> {
    SY_ASSIGN(auto resolved, resolveAll(requests));
    return core.composeTogether(caller, resolved);
  });
}

void RedfishService::applyReservation(const std::shared_ptr<Call>& call, const std::string& id) {
  // An unknown (expired, applied, released) reservation is a missing resource, not a missing block.
  startComposeAll(call, [id, caller = call->caller](EngineCore& core) { return core.composeReserved(caller, id); }, /*missingIsBlock=*/false);
}

void RedfishService::startComposeAll(const std::shared_ptr<Call>& call, std::function<Result<std::vector<Operation>>(EngineCore&)> compose,
                                     bool missingIsBlock) {
  // One system answers as POST /Systems does (202 and its task monitor); several answer 200 with the
  // manifest of the systems being composed, each with its own task (TaskService/Tasks/op-...).
  engine_.run<std::vector<Operation>>(std::move(compose), [this, call, missingIsBlock](Result<std::vector<Operation>> ops) {
    if (!ops) return call->reply(engineError(ops.error(), ops.error().code != Code::kNotFound || missingIsBlock));
    if (ops->size() == 1) return call->reply(accepted(ops->front()));
    withView(call, kHosts | kSystems, [ops = *ops](const PoolView& v) {
      json stanzas = json::array();
      for (const auto& op : ops) {
        json system = computerSystem(v, op.systemId);
        stanzas.push_back({{"StanzaType", "ComposeSystem"},
                           {"StanzaId", system.is_object() ? system.value("Name", op.systemId) : op.systemId},
                           {"Response", system.is_null() ? json{{"@odata.id", std::string(kRoot) + "/Systems/" + op.systemId}} : system}});
      }
      return respond(http::status::ok, {{"RequestFormat", "Manifest"}, {"RequestType", "Apply"}, {"Manifest", {{"Stanzas", stanzas}}}});
    });
  });
}

void RedfishService::reservations(const std::shared_ptr<Call>& call, const std::string& id) {
  engine_.run<std::vector<Reservation>>(
      [caller = call->caller](EngineCore& core) -> Result<std::vector<Reservation>> {
        SY_ASSIGN(auto all, core.listReservations());
        std::erase_if(all, [&](const Reservation& r) { return !maySee(caller, r.tenant); });
        return all;
      },
      [call, id](Result<std::vector<Reservation>> found) {
        if (!found) return call->reply(engineError(found.error(), false));
        HttpResponse res = [&] {
          if (id.empty()) return resource(reservationsCollection(*found), "GET, HEAD");
          for (const auto& r : *found)
            if (r.id == id) return resource(compositionReservation(r), "GET, HEAD, DELETE");
          return error(http::status::not_found, std::string(kBase) + "ResourceNotFound",
                       fmt::format("no reservation {} (it may have expired, been applied or released, or yardd restarted)", id));
        }();
        if (call->method == "HEAD") res.body().clear();
        call->reply(std::move(res));
      });
}

void RedfishService::releaseReservation(const std::shared_ptr<Call>& call, const std::string& id) {
  engine_.run<bool>(
      [caller = call->caller, id](EngineCore& core) -> Result<bool> {
        SY_TRY(core.releaseReservation(caller, id));
        return true;
      },
      [call](Result<bool> released) { call->reply(released ? respond(http::status::no_content, nullptr) : engineError(released.error(), false)); });
}

void RedfishService::decompose(const std::shared_ptr<Call>& call, const std::string& id) {
  // If-Match guards against deleting a system that changed since the client read it.
  const std::string ifMatch((*call->request)[http::field::if_match]);
  startChange(
      call,
      [this, caller = call->caller, id, ifMatch](EngineCore& core) -> Result<Operation> {
        SY_TRY(checkSystemTag(caller, id, ifMatch));
        return core.decompose(caller, id);
      },
      false);
}

void RedfishService::changeBlocks(const std::shared_ptr<Call>& call, const std::string& id, bool add) {
  auto bad = [&](const std::string& messageId, const std::string& message) {
    call->reply(error(http::status::bad_request, std::string(kBase) + messageId, message));
  };
  const json body = json::parse(call->request->body(), nullptr, false);
  if (body.is_discarded() || !body.is_object()) return bad("MalformedJSON", "the request body is not a JSON object");
  for (const auto& [key, value] : body.items())
    if (key != "ResourceBlock" && key != "ResourceBlockETag" && key != "ComputerSystemETag")
      return bad("ActionParameterUnknown", fmt::format("the action has no parameter {}", key));
  if (!body.contains("ResourceBlock") || !body["ResourceBlock"].is_object() || !body["ResourceBlock"].contains("@odata.id") ||
      !body["ResourceBlock"]["@odata.id"].is_string())
    return bad("ActionParameterMissing", "ResourceBlock ({\"@odata.id\": \"/redfish/v1/CompositionService/ResourceBlocks/ID\"}) is required");
  const std::string uri = body["ResourceBlock"]["@odata.id"].get<std::string>();
  const std::string prefix = std::string(kRoot) + "/CompositionService/ResourceBlocks/";
  if (uri.rfind(prefix, 0) != 0)
    return call->reply(error(http::status::bad_request, std::string(kComposition) + "ResourceBlockInvalid", fmt::format("{} is not a resource block", uri)));
  const std::string device = uri.substr(prefix.size());
  const std::string systemTag = body.contains("ComputerSystemETag") && body["ComputerSystemETag"].is_string() ? body["ComputerSystemETag"].get<std::string>() : "";
  startChange(
      call,
      [this, caller = call->caller, id, device, add, systemTag](EngineCore& core) -> Result<Operation> {
        SY_TRY(checkSystemTag(caller, id, systemTag));
        if (!add) return core.detach(caller, DetachRequest{id, {device}, {}, {}});
        AttachRequest request{id, {}};
        request.placement.devices = {device};
        return core.attach(caller, request);
      },
      true);
}

Result<Operation> RedfishService::visibleOperation(EngineCore& core, const Caller& caller, const std::string& id) {
  auto op = core.getOperation(id);
  if (op && !maySee(caller, op->tenant)) return fail(Code::kNotFound, fmt::format("no task {}", id));
  return op;
}

void RedfishService::taskMonitor(const std::shared_ptr<Call>& call, const std::string& id) {
  engine_.run<Operation>([id, caller = call->caller](EngineCore& core) { return visibleOperation(core, caller, id); },
                         [this, call](Result<Operation> op) {
                             if (!op) return call->reply(engineError(op.error(), false));
                             if (!op->finished()) {
                               HttpResponse res = accepted(*op);
                               res.set(http::field::retry_after, "1");
                               return call->reply(std::move(res));
                             }
                             if (op->state != OperationState::kSucceeded) {
                               return call->reply(error(http::status::internal_server_error, std::string(kBase) + "GeneralError",
                                                        fmt::format("{} failed and was rolled back: {}", op->id, op->error)));
                             }
                             if (op->kind == OperationKind::kDecompose) return call->reply(respond(http::status::no_content, nullptr));
                             // A finished compose (or attach) answers as the original request would have: the system.
                             withView(call, kHosts | kSystems, [systemId = op->systemId, created = op->kind == OperationKind::kCompose](const PoolView& v) {
                               const json system = computerSystem(v, systemId);
                               HttpResponse res = respond(created ? http::status::created : http::status::ok, system);
                               res.set(http::field::location, std::string(kRoot) + "/Systems/" + systemId);
                               return res;
                             });
                           });
}


}  // namespace switchyard::bmc
