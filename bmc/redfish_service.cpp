#include "bmc/redfish_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <regex>
#include <variant>

namespace switchyard::bmc {

namespace http = boost::beast::http;

struct RedfishService::Call {
  std::string method;
  std::string path;  // without query or trailing slash
  std::string query;
  const HttpRequest* request = nullptr;  // valid until the reply is sent
  Caller caller;
  Reply reply;
  OpenStream openStream;
};

namespace {

const char* kBase = "Base.1.22.";
const char* kComposition = "Composition.1.1.";

HttpResponse respond(http::status status, const json& body, const std::string& allow = {}) {
  HttpResponse res{status, 11};
  res.set("OData-Version", "4.0");
  res.set(http::field::cache_control, "no-cache");
  if (!allow.empty()) res.set(http::field::allow, allow);
  if (!body.is_null()) {
    res.set(http::field::content_type, "application/json;charset=utf-8");
    res.body() = text(body);
  }
  return res;
}

HttpResponse error(http::status status, const std::string& id, const std::string& message, const std::string& allow = {}) {
  return respond(status, errorBody(id, message), allow);
}

// A weak ETag of a body: equal bodies, equal tags.
std::string etagOf(const json& body) { return fmt::format("W/\"{:016x}\"", std::hash<std::string>{}(text(body))); }

HttpResponse resource(const json& body, const std::string& allow) {
  if (body.is_null()) return error(http::status::not_found, std::string(kBase) + "ResourceNotFound", "no such resource");
  HttpResponse res = respond(http::status::ok, nullptr, allow);
  res.set(http::field::content_type, "application/json;charset=utf-8");
  res.body() = text(body);  // once: the ETag is the hash of these bytes
  res.set(http::field::etag, fmt::format("W/\"{:016x}\"", std::hash<std::string>{}(res.body())));
  return res;
}

// An engine error as a Redfish error; `composing` picks the Composition registry's words.
HttpResponse engineError(const Error& e, bool composing) {
  switch (e.code) {
    case Code::kInvalidArgument: return error(http::status::bad_request, std::string(kBase) + "PropertyValueError", e.message);
    case Code::kNotFound:
      return composing ? error(http::status::bad_request, std::string(kComposition) + "ResourceBlockNotFound", e.message)
                       : error(http::status::not_found, std::string(kBase) + "ResourceNotFound", e.message);
    case Code::kAlreadyExists: return error(http::status::conflict, std::string(kBase) + "ResourceAlreadyExists", e.message);
    case Code::kFailedPrecondition:
      return error(http::status::conflict, std::string(composing ? kComposition : kBase) + (composing ? "ResourceBlockInUse" : "ResourceInUse"),
                   e.message);
    case Code::kResourceExhausted: return error(http::status::bad_request, std::string(kComposition) + "NoResourceMatch", e.message);
    case Code::kUnavailable:
    case Code::kAborted: {
      HttpResponse res = error(http::status::service_unavailable, std::string(kBase) + "ServiceTemporarilyUnavailable", e.message);
      res.set(http::field::retry_after, "5");
      return res;
    }
    default: return error(http::status::internal_server_error, std::string(kBase) + "InternalError", e.message);
  }
}

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 1;
  while (start <= path.size()) {
    const auto slash = path.find('/', start);
    out.push_back(path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

bool isComposed(const std::string& id) { return id.rfind("sys-", 0) == 0; }

std::string allowFor(const std::string& path) {
  const std::string root = kRoot;
  if (path == root + "/Systems" || path == root + "/SessionService/Sessions") return "GET, HEAD, POST";
  if (path.rfind(root + "/Systems/sys-", 0) == 0 || path.rfind(root + "/SessionService/Sessions/", 0) == 0) return "GET, HEAD, DELETE";
  return "GET, HEAD";
}

}  // namespace

void RedfishService::handle(const HttpRequest& request, Reply reply, OpenStream openStream) {
  auto call = std::make_shared<Call>();
  call->method = std::string(request.method_string());
  std::string target(request.target());
  if (auto q = target.find('?'); q != std::string::npos) {
    call->query = target.substr(q + 1);
    target.resize(q);
  }
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  call->path = target;
  call->request = &request;
  call->reply = std::move(reply);
  call->openStream = std::move(openStream);
  route(call);
}

void RedfishService::route(const std::shared_ptr<Call>& call) {
  const HttpRequest& req = *call->request;
  auto answer = [&](HttpResponse res) { call->reply(std::move(res)); };
  if (auto v = req["OData-Version"]; !v.empty() && v != "4.0")
    return answer(error(http::status::precondition_failed, std::string(kBase) + "PreconditionFailed", "OData-Version must be 4.0"));
  // Query options: none are supported yet; say so instead of ignoring them.
  if (!call->query.empty()) {
    for (const auto& part : split("/" + call->query)) {
      const std::string name = part.substr(0, part.find('='));
      if (name.rfind('$', 0) == 0 || name == "only" || name == "excerpt")
        return answer(error(http::status::not_implemented, std::string(kBase) + "QueryNotSupported",
                            fmt::format("the query option {} is not supported by this service", name)));
    }
  }
  const std::string root = kRoot;
  const bool read = call->method == "GET" || call->method == "HEAD";
  // Without authentication: the service root, /redfish, the service document, $metadata, and logging in.
  if (read && call->path == "/redfish") return answer(respond(http::status::ok, {{"v1", "/redfish/v1/"}}, "GET, HEAD"));
  if (read && call->path == root) return answer(resource(serviceRoot(), "GET, HEAD"));
  if (read && call->path == root + "/odata") return answer(respond(http::status::ok, odataServiceDocument(), "GET, HEAD"));
  if (read && call->path == root + "/$metadata") {
    HttpResponse res{http::status::ok, 11};
    res.set("OData-Version", "4.0");
    res.set(http::field::content_type, "application/xml");
    res.set(http::field::allow, "GET, HEAD");
    res.body() = metadataXml();
    return answer(std::move(res));
  }
  if (call->method == "POST" && call->path == root + "/SessionService/Sessions") return login(call);

  std::optional<Caller> caller;
  if (auto token = req["X-Auth-Token"]; !token.empty()) caller = accounts_.token(std::string(token));
  else if (auto auth = req[http::field::authorization]; !auth.empty()) caller = accounts_.basic(std::string(auth));
  if (!caller) {
    HttpResponse res = error(http::status::unauthorized, std::string(kBase) + "NoValidSession",
                             "authenticate with HTTP Basic or an X-Auth-Token from POST /redfish/v1/SessionService/Sessions");
    res.set(http::field::www_authenticate, "Basic realm=\"switchyard\"");
    return answer(std::move(res));
  }
  call->caller = *caller;

  if (read) return get(call);
  const bool mayCompose = caller->role != Role::kViewer;
  if (call->method == "POST" && call->path == root + "/CompositionService/Actions/CompositionService.Compose") {
    if (!mayCompose) return answer(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege", "composing needs the Operator or Administrator role"));
    return composeAction(call);
  }
  if (call->method == "POST" && call->path == root + "/Systems") {
    if (!mayCompose) return answer(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege", "composing needs the Operator or Administrator role"));
    return compose(call);
  }
  const auto parts = split(call->path);
  if (call->method == "POST" && parts.size() == 6 && call->path.rfind(root + "/Systems/", 0) == 0 && parts[4] == "Actions" &&
      (parts[5] == "ComputerSystem.AddResourceBlock" || parts[5] == "ComputerSystem.RemoveResourceBlock")) {
    if (!isComposed(parts[3]))
      return answer(error(http::status::bad_request, std::string(kBase) + "ActionNotSupported",
                          fmt::format("{} is not a composed system: its blocks cannot change", parts[3])));
    if (!mayCompose) return answer(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege", "changing a system needs the Operator or Administrator role"));
    return changeBlocks(call, parts[3], parts[5] == "ComputerSystem.AddResourceBlock");
  }
  if (call->method == "DELETE" && parts.size() == 4 && call->path.rfind(root + "/Systems/", 0) == 0) {
    if (!isComposed(parts[3]))
      return answer(error(http::status::method_not_allowed, std::string(kBase) + "OperationNotAllowed",
                          fmt::format("{} is not a composed system and cannot be deleted", parts[3]), "GET, HEAD"));
    if (!mayCompose) return answer(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege", "decomposing needs the Operator or Administrator role"));
    return decompose(call, parts[3]);
  }
  if (call->method == "DELETE" && parts.size() == 5 && call->path.rfind(root + "/SessionService/Sessions/", 0) == 0) {
    if (!accounts_.logout(parts[4])) return answer(error(http::status::not_found, std::string(kBase) + "ResourceNotFound", "no such session"));
    return answer(respond(http::status::no_content, nullptr));
  }
  return answer(error(http::status::method_not_allowed, std::string(kBase) + "OperationNotAllowed",
                      fmt::format("{} is not allowed on {}", call->method, call->path), allowFor(call->path)));
}

void RedfishService::withView(const std::shared_ptr<Call>& call, unsigned needs, std::function<HttpResponse(const PoolView&)> build) {
  engine_.async<PoolView>(
      [this, needs]() -> Result<PoolView> {
        PoolView v;
        if (needs & kHosts) {
          SY_ASSIGN(v.hosts, engine_.listHosts());
        }
        if (needs & kSystems) {
          SY_ASSIGN(auto systems, engine_.listSystems());
          for (auto& s : systems)
            if (s.state != SystemState::kDecomposed) v.systems.push_back(std::move(s));
        }
        if (needs & kDevices) {
          SY_ASSIGN(v.devices, engine_.listDevices());
        }
        if (needs & kTopology) {
          SY_ASSIGN(v.topology, engine_.topology());
        }
        return v;
      },
      [this, call, build = std::move(build)](Result<PoolView> view) {
        boost::asio::post(work_, [call, build, view = std::move(view)] {
          call->reply(view ? build(*view) : engineError(view.error(), false));
        });
      });
}

void RedfishService::get(const std::shared_ptr<Call>& call) {
  const std::string root = kRoot;
  const std::string& p = call->path;
  const auto parts = split(p);
  const std::string allow = allowFor(p);
  auto head = [call](HttpResponse res) {
    if (call->method == "HEAD") res.body().clear();
    return res;
  };
  auto viewed = [&](unsigned needs, std::function<json(const PoolView&)> body) {
    withView(call, needs, [head, allow, body = std::move(body)](const PoolView& v) { return head(resource(body(v), allow)); });
  };
  auto now = [&](const json& body) { call->reply(head(resource(body, allow))); };

  if (p == root + "/Systems") return viewed(kHosts | kSystems, systemsCollection);
  if (parts.size() == 4 && p.rfind(root + "/Systems/", 0) == 0)
    return viewed(kHosts | kSystems, [id = parts[3]](const PoolView& v) { return computerSystem(v, id); });
  if (p == root + "/CompositionService") return now(compositionService());
  if (p == root + "/CompositionService/ResourceBlocks") return viewed(kHosts | kDevices, resourceBlocksCollection);
  if (parts.size() == 5 && p.rfind(root + "/CompositionService/ResourceBlocks/", 0) == 0) {
    // One block: read just that device (or, when it is a host's block, the hosts).
    return engine_.async<PoolView>(
        [this, id = parts[4]]() -> Result<PoolView> {
          PoolView v;
          if (auto d = engine_.getDevice(id)) {
            v.devices.push_back(std::move(*d));
            return v;
          }
          SY_ASSIGN(v.hosts, engine_.listHosts());
          return v;
        },
        [this, call, head, allow, id = parts[4]](Result<PoolView> view) {
          boost::asio::post(work_, [call, head, allow, id, view = std::move(view)] {
            call->reply(view ? head(resource(resourceBlock(*view, id), allow)) : engineError(view.error(), false));
          });
        });
  }
  if (p == root + "/CompositionService/ResourceZones") return now(resourceZonesCollection());
  if (parts.size() == 5 && p.rfind(root + "/CompositionService/ResourceZones/", 0) == 0)
    return viewed(kHosts | kDevices, [id = parts[4]](const PoolView& v) { return resourceZone(v, id); });
  if (p == root + "/TaskService") return now(taskService());
  if (p == root + "/TaskService/Tasks") {
    return engine_.async<std::vector<Operation>>([this] { return engine_.listOperations(100); },
                                                 [this, call, head, allow](Result<std::vector<Operation>> ops) {
                                                   boost::asio::post(work_, [call, head, allow, ops = std::move(ops)] {
                                                     call->reply(ops ? head(resource(tasksCollection(*ops), allow)) : engineError(ops.error(), false));
                                                   });
                                                 });
  }
  if (parts.size() == 5 && p.rfind(root + "/TaskService/Tasks/", 0) == 0) {
    return engine_.async<Operation>([this, id = parts[4]] { return engine_.getOperation(id); },
                                    [this, call, head, allow](Result<Operation> op) {
                                      boost::asio::post(work_, [call, head, allow, op = std::move(op)] {
                                        call->reply(op ? head(resource(task(*op), allow)) : engineError(op.error(), false));
                                      });
                                    });
  }
  if (parts.size() == 5 && p.rfind(root + "/TaskService/TaskMonitors/", 0) == 0) return taskMonitor(call, parts[4]);
  if (p == root + "/SessionService") return now(sessionService(accounts_.sessionTimeout()));
  if (p == root + "/SessionService/Sessions") {
    std::vector<Session> mine;
    for (auto& s : accounts_.sessions())
      if (s.user == call->caller.identity || call->caller.role == Role::kAdmin) mine.push_back(std::move(s));
    return now(sessionsCollection(mine));
  }
  if (parts.size() == 5 && p.rfind(root + "/SessionService/Sessions/", 0) == 0) {
    for (const auto& s : accounts_.sessions())
      if (s.id == parts[4] && (s.user == call->caller.identity || call->caller.role == Role::kAdmin)) return now(session(s));
    return now(nullptr);
  }
  if (p == root + "/AccountService") return now(accountService(accounts_));
  if (p == root + "/EventService") return now(eventService());
  if (p == root + "/Fabrics") return viewed(kTopology, fabricsCollection);
  if (p.rfind(root + "/Fabrics/", 0) == 0) return viewed(kTopology | kSystems, [parts](const PoolView& v) { return fabricResource(v, parts); });
  if (p == root + "/EventService/SSE" && call->method == "GET") return eventStream(call);
  call->reply(error(http::status::not_found, std::string(kBase) + "ResourceNotFound", fmt::format("no resource at {}", p)));
}

namespace {

// A ComputerSystem create body (POST /Systems, or a ComposeSystem stanza's Request) as a compose request,
// or the Redfish error to answer. `fallbackName` names the system when the body does not (a stanza id).
std::variant<ComposeRequest, HttpResponse> parseSystemRequest(const json& body, const std::string& fallbackName) {
  auto bad = [](const std::string& id, const std::string& message) { return error(http::status::bad_request, std::string(kBase) + id, message); };
  if (!body.is_object()) return bad("MalformedJSON", "the request body is not a JSON object");
  for (const auto& [key, value] : body.items())
    if (key != "Name" && key != "Links" && key != "Processors" && key != "Description" && key.rfind("@Redfish.", 0) != 0)
      return bad("PropertyUnknown", fmt::format("the property {} is unknown or cannot be set on create", key));
  if (!body.contains("Name") && fallbackName.empty()) return bad("PropertyMissing", "the property Name is required to compose a system");
  if (body.contains("Name") && !body["Name"].is_string()) return bad("PropertyValueTypeError", "Name must be a string");
  ComposeRequest request{body.contains("Name") ? body["Name"].get<std::string>() : fallbackName, {}, {}};
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
  if (body.contains("Processors")) {
    const json& processors = body["Processors"];
    if (!processors.is_object() || !processors.contains("Members") || !processors["Members"].is_array() || processors["Members"].size() != 1)
      return bad("PropertyValueTypeError", "Processors.Members must hold one requirement {\"@Redfish.RequestedCount\": N, \"ProcessorType\": \"GPU\"}");
    const json& want = processors["Members"][0];
    if (!want.is_object() || !want.contains("@Redfish.RequestedCount") || !want["@Redfish.RequestedCount"].is_number_integer())
      return bad("PropertyValueTypeError", "@Redfish.RequestedCount must be an integer");
    if (!want.value("ProcessorType", json("GPU")).is_string() || want.value("ProcessorType", json("GPU")) != "GPU")
      return bad("PropertyValueError", "only ProcessorType GPU can be composed");
    request.placement.gpuCount = want["@Redfish.RequestedCount"].get<int>();
    if (want.contains("Model") && want["Model"].is_string()) request.placement.model = want["Model"].get<std::string>();
  }
  if (request.placement.devices.empty() && request.placement.gpuCount == 0)
    return bad("PropertyMissing", "name resource blocks in Links.ResourceBlocks, or ask for Processors with @Redfish.RequestedCount");
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

void RedfishService::startCompose(const std::shared_ptr<Call>& call, ComposeRequest request) {
  engine_.async<Operation>(
      [this, caller = call->caller, request]() -> Result<Operation> {
        SY_ASSIGN(ComposeRequest resolved, resolveHost(request));
        return engine_.compose(caller, resolved);
      },
      [this, call](Result<Operation> op) {
        boost::asio::post(work_, [call, op = std::move(op)] {
          if (!op) return call->reply(engineError(op.error(), true));
          HttpResponse res = respond(http::status::accepted, task(*op));
          res.set(http::field::location, taskMonitorUri(op->id));
          call->reply(std::move(res));
        });
      });
}

void RedfishService::compose(const std::shared_ptr<Call>& call) {
  const json body = json::parse(call->request->body(), nullptr, false);
  if (body.is_discarded()) return call->reply(error(http::status::bad_request, std::string(kBase) + "MalformedJSON", "the request body is not JSON"));
  auto parsed = parseSystemRequest(body, {});
  if (auto* res = std::get_if<HttpResponse>(&parsed)) return call->reply(std::move(*res));
  startCompose(call, std::move(std::get<ComposeRequest>(parsed)));
}

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
  if (type != "Preview" && type != "Apply")
    return bad(std::string(kBase) + "ActionParameterNotSupported",
               fmt::format("RequestType {} is not supported: use Preview or Apply (PreviewReserve needs reservations, not built yet)",
                           type.empty() ? "(missing)" : type));
  if (body.contains("ReservationId")) return bad(std::string(kBase) + "ActionParameterNotSupported", "reservations are not supported yet");
  if (!body.contains("Manifest") || !body["Manifest"].is_object() || !body["Manifest"].contains("Stanzas") || !body["Manifest"]["Stanzas"].is_array() ||
      body["Manifest"]["Stanzas"].empty())
    return bad(std::string(kComposition) + "EmptyManifest", "the manifest has no stanzas");
  const json& stanzas = body["Manifest"]["Stanzas"];
  // A manifest is applied whole or not at all; with one system per stanza that is one stanza per request.
  if (stanzas.size() != 1)
    return bad(std::string(kComposition) + "UnableToProcessStanzaRequest", "one ComposeSystem stanza per manifest is supported");
  const json& stanza = stanzas[0];
  if (!stanza.is_object() || stanza.value("StanzaType", json("")) != "ComposeSystem" || !stanza.contains("Request"))
    return bad(std::string(kComposition) + "UnableToProcessStanzaRequest", "a stanza needs StanzaType ComposeSystem and a Request");
  const std::string stanzaId = stanza.contains("StanzaId") && stanza["StanzaId"].is_string() ? stanza["StanzaId"].get<std::string>() : "";
  auto parsed = parseSystemRequest(stanza["Request"], stanzaId);
  if (auto* res = std::get_if<HttpResponse>(&parsed)) return call->reply(std::move(*res));
  ComposeRequest request = std::move(std::get<ComposeRequest>(parsed));
  if (type == "Apply") return startCompose(call, std::move(request));
  // Preview: what Apply would compose now, changing nothing.
  engine_.async<PlacementDecision>(
      [this, request]() -> Result<PlacementDecision> {
        SY_ASSIGN(ComposeRequest resolved, resolveHost(request));
        return engine_.plan(resolved.placement);
      },
      [this, call, body, name = request.name](Result<PlacementDecision> decision) {
        boost::asio::post(work_, [call, body, name, decision = std::move(decision)] {
          if (!decision) return call->reply(engineError(decision.error(), true));
          if (!decision->placement) return call->reply(engineError(*decision->error, true));
          json blocks = json::array({{{"@odata.id", std::string(kRoot) + "/CompositionService/ResourceBlocks/" + decision->placement->hostId}}});
          for (const auto& d : decision->placement->devices)
            blocks.push_back({{"@odata.id", std::string(kRoot) + "/CompositionService/ResourceBlocks/" + d.deviceId}});
          json answer = body;
          answer["Manifest"]["Stanzas"][0]["Response"] = {{"Name", name},
                                                          {"SystemType", "Composed"},
                                                          {"Description", decision->placement->explanation},
                                                          {"Links", {{"ResourceBlocks", blocks}}}};
          call->reply(respond(http::status::ok, answer));
        });
      });
}

void RedfishService::decompose(const std::shared_ptr<Call>& call, const std::string& id) {
  const std::string ifMatch(call->request->operator[](http::field::if_match));
  engine_.async<Operation>(
      [this, caller = call->caller, id, ifMatch]() -> Result<Operation> {
        if (!ifMatch.empty()) {
          // The ETag guards against deleting a system that changed since the client read it.
          PoolView v;
          SY_ASSIGN(v.hosts, engine_.listHosts());
          SY_ASSIGN(auto system, engine_.getSystem(id));
          v.systems.push_back(system);
          SY_ASSIGN(v.devices, engine_.listDevices());
          if (etagOf(computerSystem(v, id)) != ifMatch)
            return fail(Code::kAborted, fmt::format("{} changed since ETag {}", id, ifMatch));
        }
        return engine_.decompose(caller, id);
      },
      [this, call](Result<Operation> op) {
        boost::asio::post(work_, [call, op = std::move(op)] {
          if (!op && op.error().code == Code::kAborted && op.error().message.find("changed since ETag") != std::string::npos)
            return call->reply(error(http::status::precondition_failed, std::string(kBase) + "PreconditionFailed", op.error().message));
          if (!op) return call->reply(engineError(op.error(), false));
          HttpResponse res = respond(http::status::accepted, task(*op));
          res.set(http::field::location, taskMonitorUri(op->id));
          call->reply(std::move(res));
        });
      });
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
  engine_.async<Operation>(
      [this, caller = call->caller, id, device, add, systemTag]() -> Result<Operation> {
        if (!systemTag.empty()) {
          PoolView v;
          SY_ASSIGN(v.hosts, engine_.listHosts());
          SY_ASSIGN(auto system, engine_.getSystem(id));
          v.systems.push_back(system);
          if (etagOf(computerSystem(v, id)) != systemTag) return fail(Code::kAborted, fmt::format("{} changed since ETag {}", id, systemTag));
        }
        if (add) {
          AttachRequest request{id, {}};
          request.placement.devices = {device};
          return engine_.attach(caller, request);
        }
        return engine_.detach(caller, DetachRequest{id, {device}, {}, {}});
      },
      [this, call](Result<Operation> op) {
        boost::asio::post(work_, [call, op = std::move(op)] {
          if (!op && op.error().code == Code::kAborted && op.error().message.find("changed since ETag") != std::string::npos)
            return call->reply(error(http::status::precondition_failed, std::string(kBase) + "PreconditionFailed", op.error().message));
          if (!op) return call->reply(engineError(op.error(), true));
          HttpResponse res = respond(http::status::accepted, task(*op));
          res.set(http::field::location, taskMonitorUri(op->id));
          call->reply(std::move(res));
        });
      });
}

void RedfishService::taskMonitor(const std::shared_ptr<Call>& call, const std::string& id) {
  engine_.async<Operation>([this, id] { return engine_.getOperation(id); },
                           [this, call](Result<Operation> op) {
                             if (!op) {
                               return boost::asio::post(work_, [call, e = op.error()] { call->reply(engineError(e, false)); });
                             }
                             if (!op->finished()) {
                               return boost::asio::post(work_, [call, op = std::move(*op)] {
                                 HttpResponse res = respond(http::status::accepted, task(op));
                                 res.set(http::field::location, taskMonitorUri(op.id));
                                 res.set(http::field::retry_after, "1");
                                 call->reply(std::move(res));
                               });
                             }
                             if (op->state != OperationState::kSucceeded) {
                               return boost::asio::post(work_, [call, op = std::move(*op)] {
                                 call->reply(error(http::status::internal_server_error, std::string(kBase) + "GeneralError",
                                                   fmt::format("{} failed and was rolled back: {}", op.id, op.error)));
                               });
                             }
                             if (op->kind == OperationKind::kDecompose) {
                               return boost::asio::post(work_, [call] { call->reply(respond(http::status::no_content, nullptr)); });
                             }
                             // A finished compose (or attach) answers as the original request would have: the system.
                             withView(call, kHosts | kSystems, [systemId = op->systemId, created = op->kind == OperationKind::kCompose](const PoolView& v) {
                               const json system = computerSystem(v, systemId);
                               HttpResponse res = respond(created ? http::status::created : http::status::ok, system);
                               res.set(http::field::location, std::string(kRoot) + "/Systems/" + systemId);
                               return res;
                             });
                           });
}

void RedfishService::eventStream(const std::shared_ptr<Call>& call) {
  // Subscribe first, then replay what the client missed (Last-Event-ID), skipping anything seen twice.
  auto events = engine_.subscribe();
  std::uint64_t last = 0;
  std::vector<Event> replay;
  if (auto id = (*call->request)["Last-Event-ID"]; !id.empty()) {
    try {
      last = std::stoull(std::string(id));
    } catch (const std::exception&) {
      return call->reply(error(http::status::bad_request, std::string(kBase) + "PropertyValueError", "Last-Event-ID must be an event sequence number"));
    }
    auto recorded = engine_.listEvents(last, 10'000);
    if (!recorded) return call->reply(engineError(recorded.error(), false));
    replay = std::move(*recorded);
  }
  if (events->closed())
    return call->reply(engineError(Error{Code::kUnavailable, "yardd is starting or stopping; retry shortly"}, false));
  auto writer = call->openStream(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nOData-Version: 4.0\r\nConnection: close\r\n\r\n");
  auto lastSent = std::make_shared<std::atomic<std::uint64_t>>(last);
  for (const auto& e : replay) {
    writer->send(sseFrame(e));
    lastSent->store(e.sequence);
  }
  // Pushed from the engine's control thread: format and hand on, never block.
  events->setListener([weak = std::weak_ptr<EventStream>(events), writer, lastSent] {
    auto stream = weak.lock();
    if (!stream) return;
    while (auto e = stream->tryNext()) {
      if (e->sequence <= lastSent->load()) continue;
      lastSent->store(e->sequence);
      writer->send(sseFrame(*e));
    }
    if (stream->closed()) writer->close();
  });
  writer->onClosed([events] {
    events->setListener(nullptr);
    events->close();
  });
  // Anything queued between subscribing and the listener being set.
  while (auto e = events->tryNext())
    if (e->sequence > lastSent->load()) {
      lastSent->store(e->sequence);
      writer->send(sseFrame(*e));
    }
}

void RedfishService::login(const std::shared_ptr<Call>& call) {
  const json body = json::parse(call->request->body(), nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return call->reply(error(http::status::bad_request, std::string(kBase) + "MalformedJSON", "the request body is not a JSON object"));
  if (!body.contains("UserName") || !body.contains("Password") || !body["UserName"].is_string() || !body["Password"].is_string())
    return call->reply(error(http::status::bad_request, std::string(kBase) + "PropertyMissing", "UserName and Password (strings) are required"));
  auto s = accounts_.login(body["UserName"].get<std::string>(), body["Password"].get<std::string>());
  if (!s) return call->reply(error(http::status::unauthorized, std::string(kBase) + "NoValidSession", "wrong user name or password"));
  HttpResponse res = respond(http::status::created, session(*s));
  res.set("X-Auth-Token", s->token);
  res.set(http::field::location, fmt::format("{}/SessionService/Sessions/{}", kRoot, s->id));
  call->reply(std::move(res));
}

}  // namespace switchyard::bmc
