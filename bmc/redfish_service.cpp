// Routing, authentication, reads, the event stream and login. The changes (compose, decompose, blocks,
// the Compose action, task monitors) are in redfish_changes.cpp; protocol helpers in redfish_protocol.*.
#include "bmc/redfish_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "net/event_feed.h"
#include "bmc/redfish_protocol.h"
#include "composer/model/access.h"

namespace switchyard::bmc {

using namespace redfish_protocol;

namespace {

bool isComposed(const std::string& id) { return id.rfind("sys-", 0) == 0; }

std::string allowFor(const std::string& path) {
  const std::string root = kRoot;
  if (path == root + "/Systems" || path == root + "/SessionService/Sessions") return "GET, HEAD, POST";
  if (path.rfind(root + "/Systems/sys-", 0) == 0 || path.rfind(root + "/SessionService/Sessions/", 0) == 0 ||
      path.rfind(root + "/CompositionService/CompositionReservations/", 0) == 0)
    return "GET, HEAD, DELETE";
  if (path == root + "/CompositionService" || path == root + "/SessionService") return "GET, HEAD, PATCH";
  return "GET, HEAD";
}

}  // namespace

void RedfishService::handle(const HttpRequest& request, Reply reply, OpenStream openStream, const std::string& peer) {
  auto call = std::make_shared<Call>();
  call->method = std::string(request.method_string());
  std::string target(request.target());
  if (auto q = target.find('?'); q != std::string::npos) {
    call->query = target.substr(q + 1);
    target.resize(q);
  }
  while (target.size() > 1 && target.back() == '/') target.pop_back();
  // A collection's Members may be POSTed to as the collection itself (DSP0266 "POST (create)").
  if (call->method == "POST" && target.ends_with("/Members")) target.resize(target.size() - std::string_view("/Members").size());
  call->path = target;
  call->request = &request;
  call->reply = std::move(reply);
  call->openStream = std::move(openStream);
  call->peer = peer;
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
  if (read && call->path == root) {
    HttpResponse res = resource(serviceRoot(), "GET, HEAD");
    if (!notModified(res, std::string(req[http::field::if_none_match])) && call->method == "HEAD") res.body().clear();
    return answer(std::move(res));
  }
  if (read && call->path == root + "/odata") return answer(respond(http::status::ok, odataServiceDocument(), "GET, HEAD"));
  if (read && call->path == root + "/$metadata") {
    HttpResponse res{http::status::ok, 11};
    res.set("OData-Version", "4.0");
    res.set(http::field::content_type, "application/xml");
    res.set(http::field::allow, "GET, HEAD");
    res.body() = metadataXml();
    return answer(std::move(res));
  }
  if (read && call->path.rfind(root + "/Schemas/", 0) == 0) {
    const SchemaFile* file = oemSchema(call->path.substr(std::string(root + "/Schemas").size()));
    if (!file) return answer(error(http::status::not_found, std::string(kBase) + "ResourceNotFound", fmt::format("no schema at {}", call->path)));
    HttpResponse res{http::status::ok, 11};
    res.set("OData-Version", "4.0");
    res.set(http::field::content_type, std::string(file->contentType));
    res.set(http::field::allow, "GET, HEAD");
    if (call->method == "GET") res.body() = std::string(file->body);
    return answer(std::move(res));
  }
  if (call->method == "POST" && call->path == root + "/SessionService/Sessions") return login(call);

  // A password check (Basic auth) may run on the accounts' own threads: authenticated() goes on from there.
  if (auto token = req["X-Auth-Token"]; !token.empty()) return authenticated(call, accounts_.token(std::string(token)));
  if (auto auth = req[http::field::authorization]; !auth.empty())
    return accounts_.authorize(std::string(auth), call->peer, [this, call](std::optional<Caller> caller) { authenticated(call, caller); });
  authenticated(call, std::nullopt);
}

void RedfishService::authenticated(const std::shared_ptr<Call>& call, const std::optional<Caller>& caller) {
  auto answer = [&](HttpResponse res) { call->reply(std::move(res)); };
  if (!caller) {
    HttpResponse res = error(http::status::unauthorized, std::string(kBase) + "NoValidSession",
                             "authenticate with HTTP Basic, a bearer token, or an X-Auth-Token from POST /redfish/v1/SessionService/Sessions");
    res.set(http::field::www_authenticate, "Basic realm=\"switchyard\"");
    return answer(std::move(res));
  }
  call->caller = *caller;
  const std::string root = kRoot;
  const bool read = call->method == "GET" || call->method == "HEAD";

  if (read) return get(call);
  const bool mayCompose = caller->role != Role::kViewer;
  if (call->method == "POST" && call->path == root + "/CompositionService/Actions/CompositionService.Compose") {
    if (!mayCompose) return answer(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege", "composing needs the Tenant, Operator or Administrator role"));
    return composeAction(call);
  }
  if (call->method == "POST" && call->path == root + "/Systems") {
    if (!mayCompose) return answer(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege", "composing needs the Tenant, Operator or Administrator role"));
    return compose(call);
  }
  const auto parts = split(call->path);
  if (call->method == "POST" && parts.size() == 6 && call->path.rfind(root + "/Systems/", 0) == 0 && parts[4] == "Actions" &&
      (parts[5] == "ComputerSystem.AddResourceBlock" || parts[5] == "ComputerSystem.RemoveResourceBlock")) {
    if (!isComposed(parts[3]))
      return answer(error(http::status::bad_request, std::string(kBase) + "ActionNotSupported",
                          fmt::format("{} is not a composed system: its blocks cannot change", parts[3])));
    if (!mayCompose) return answer(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege", "changing a system needs the Tenant, Operator or Administrator role"));
    return changeBlocks(call, parts[3], parts[5] == "ComputerSystem.AddResourceBlock");
  }
  if (call->method == "DELETE" && parts.size() == 4 && call->path.rfind(root + "/Systems/", 0) == 0) {
    if (!isComposed(parts[3]))
      return answer(error(http::status::method_not_allowed, std::string(kBase) + "OperationNotAllowed",
                          fmt::format("{} is not a composed system and cannot be deleted", parts[3]), "GET, HEAD"));
    if (!mayCompose) return answer(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege", "decomposing needs the Tenant, Operator or Administrator role"));
    return decompose(call, parts[3]);
  }
  if (call->method == "PATCH" && (call->path == root + "/CompositionService" || call->path == root + "/SessionService")) {
    if (caller->role != Role::kAdmin)
      return answer(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege", "changing the service's settings needs the Administrator role"));
    return patchSettings(call);
  }
  if (call->method == "DELETE" && parts.size() == 5 && call->path.rfind(root + "/CompositionService/CompositionReservations/", 0) == 0) {
    if (!mayCompose) return answer(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege", "releasing a reservation needs the Tenant, Operator or Administrator role"));
    return releaseReservation(call, parts[4]);
  }
  if (call->method == "DELETE" && parts.size() == 5 && call->path.rfind(root + "/SessionService/Sessions/", 0) == 0) {
    // One's own session, or any as an administrator; another's is "no such session".
    bool mine = false;
    for (const auto& s : accounts_.sessions())
      if (s.id == parts[4]) mine = s.caller.identity == caller->identity || caller->role == Role::kAdmin;
    if (!mine || !accounts_.logout(parts[4]))
      return answer(error(http::status::not_found, std::string(kBase) + "ResourceNotFound", "no such session"));
    return answer(respond(http::status::no_content, nullptr));
  }
  return answer(error(http::status::method_not_allowed, std::string(kBase) + "OperationNotAllowed",
                      fmt::format("{} is not allowed on {}", call->method, call->path), allowFor(call->path)));
}

void RedfishService::withView(const std::shared_ptr<Call>& call, unsigned needs, std::function<HttpResponse(const PoolView&)> build) {
  engine_.async<PoolView>(
      [this, needs, caller = call->caller]() -> Result<PoolView> {
        PoolView v;
        if (needs & kHosts) {
          SY_ASSIGN(v.hosts, engine_.listHosts());
        }
        if (needs & kSystems) {
          SY_ASSIGN(auto systems, engine_.listSystems());
          for (auto& s : systems)
            if (s.state != SystemState::kDecomposed && maySee(caller, s.tenant)) v.systems.push_back(std::move(s));
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
    if (notModified(res, std::string((*call->request)[http::field::if_none_match]))) return res;
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
  if (p == root + "/CompositionService") return now(compositionService(reservationDuration()));
  if (p == root + "/CompositionService/ActivePool" || p == root + "/CompositionService/FreePool")
    return viewed(kHosts | kDevices, [active = p.ends_with("ActivePool")](const PoolView& v) { return poolCollection(v, active); });
  if (p == root + "/CompositionService/CompositionReservations") return reservations(call, {});
  if (parts.size() == 5 && p.rfind(root + "/CompositionService/CompositionReservations/", 0) == 0) return reservations(call, parts[4]);
  if (p == root + "/CompositionService/ResourceBlocks") return viewed(kHosts | kDevices, resourceBlocksCollection);
  if (parts.size() == 5 && p.rfind(root + "/CompositionService/ResourceBlocks/", 0) == 0) {
    // One block: read just that device (or, when it is a host's block, the hosts).
    return engine_.async<PoolView>(
        [this, id = parts[4], caller = call->caller]() -> Result<PoolView> {
          PoolView v;
          SY_ASSIGN(auto systems, engine_.listSystems());  // the ones it may link to
          for (auto& s : systems)
            if (s.state != SystemState::kDecomposed && maySee(caller, s.tenant)) v.systems.push_back(std::move(s));
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
    return engine_.async<std::vector<Operation>>(
        [this, caller = call->caller]() -> Result<std::vector<Operation>> {
          SY_ASSIGN(auto ops, engine_.listOperations(100));
          std::erase_if(ops, [&](const Operation& op) { return !maySee(caller, op.tenant); });
          return ops;
        },
                                                 [this, call, head, allow](Result<std::vector<Operation>> ops) {
                                                   boost::asio::post(work_, [call, head, allow, ops = std::move(ops)] {
                                                     call->reply(ops ? head(resource(tasksCollection(*ops), allow)) : engineError(ops.error(), false));
                                                   });
                                                 });
  }
  if (parts.size() == 5 && p.rfind(root + "/TaskService/Tasks/", 0) == 0) {
    return engine_.async<Operation>([this, id = parts[4], caller = call->caller] { return visibleOperation(caller, id); },
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
      if (s.caller.identity == call->caller.identity || call->caller.role == Role::kAdmin) mine.push_back(std::move(s));
    return now(sessionsCollection(mine));
  }
  if (parts.size() == 5 && p.rfind(root + "/SessionService/Sessions/", 0) == 0) {
    for (const auto& s : accounts_.sessions())
      if (s.id == parts[4] && (s.caller.identity == call->caller.identity || call->caller.role == Role::kAdmin)) return now(session(s));
    return now(nullptr);
  }
  if (p == root + "/AccountService") return now(accountService(accounts_));
  if (p == root + "/AccountService/Accounts") return now(accountsCollection(accounts_, call->caller));
  if (parts.size() == 5 && p.rfind(root + "/AccountService/Accounts/", 0) == 0) return now(account(accounts_, call->caller, parts[4]));
  if (p == root + "/AccountService/Roles") return now(rolesCollection());
  if (parts.size() == 5 && p.rfind(root + "/AccountService/Roles/", 0) == 0) return now(role(parts[4]));
  if (p == root + "/Chassis") return viewed(kTopology, chassisCollection);
  if (p.rfind(root + "/Chassis/", 0) == 0) return viewed(kTopology, [parts](const PoolView& v) { return chassisResource(v, parts); });
  if (p == root + "/EventService") return now(eventService());
  if (p == root + "/JsonSchemas") return now(jsonSchemasCollection());
  if (parts.size() == 4 && p.rfind(root + "/JsonSchemas/", 0) == 0) return now(jsonSchemaFile(parts[3]));
  if (p == root + "/Fabrics") return viewed(kTopology, fabricsCollection);
  if (p.rfind(root + "/Fabrics/", 0) == 0) return viewed(kTopology | kSystems, [parts](const PoolView& v) { return fabricResource(v, parts); });
  if (p == root + "/EventService/SSE" && call->method == "GET") return eventStream(call);
  call->reply(error(http::status::not_found, std::string(kBase) + "ResourceNotFound", fmt::format("no resource at {}", p)));
}

void RedfishService::eventStream(const std::shared_ptr<Call>& call) {
  auto last = net::lastEventId(std::string_view((*call->request)["Last-Event-ID"]));
  if (!last) return call->reply(error(http::status::bad_request, std::string(kBase) + "PropertyValueError", last.error().message));
  auto subscription = engine_.subscribeAfter(*last);
  if (!subscription) return call->reply(engineError(subscription.error(), false));
  auto writer = call->openStream(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nOData-Version: 4.0\r\nConnection: close\r\n\r\n");
  // A tenant's account hears its own tenant's events and the pool's (as over gRPC).
  net::EventFeed(std::move(subscription->live), std::move(subscription->replay), subscription->lastSeen)
      .pipeTo(writer, call->caller, redfishEventText);
}

void RedfishService::login(const std::shared_ptr<Call>& call) {
  const json body = json::parse(call->request->body(), nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return call->reply(error(http::status::bad_request, std::string(kBase) + "MalformedJSON", "the request body is not a JSON object"));
  if (!body.contains("UserName") || !body.contains("Password") || !body["UserName"].is_string() || !body["Password"].is_string())
    return call->reply(error(http::status::bad_request, std::string(kBase) + "PropertyMissing", "UserName and Password (strings) are required"));
  // The password check may run on the accounts' own threads (PBKDF2 is slow on purpose).
  accounts_.startLogin(body["UserName"].get<std::string>(), body["Password"].get<std::string>(), call->peer, [this, call](std::optional<Session> s) {
    if (!s) return call->reply(error(http::status::unauthorized, std::string(kBase) + "NoValidSession", "wrong user name or password"));
    HttpResponse res = respond(http::status::created, session(*s));
    res.set("X-Auth-Token", s->token);
    res.set(http::field::location, fmt::format("{}/SessionService/Sessions/{}", kRoot, s->id));
    call->reply(std::move(res));
  });
}

}  // namespace switchyard::bmc
