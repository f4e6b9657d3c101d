// The Redfish service's route table: every path it serves, the methods of each and what each needs of the
// caller. route() answers 404 (no route), 405 with Allow (a route without the method) and 403 (a role that
// falls short) from it, and every answer's Allow header is its route's. Reads answer here; changes are in
// redfish_changes.cpp, reservations in redfish_reservations.cpp, settings in redfish_settings.cpp.
#include <fmt/format.h>

#include <boost/asio/post.hpp>

#include "bmc/redfish_protocol.h"
#include "bmc/redfish_service.h"
#include "composer/model/access.h"

namespace switchyard::bmc {

using namespace redfish_protocol;

namespace {

bool isComposed(const std::string& id) { return id.rfind("sys-", 0) == 0; }

// A read's answer as its method and If-None-Match want it: 304 when the ETag matches, no body for HEAD.
HttpResponse forRead(const HttpRequest& request, const std::string& method, HttpResponse res) {
  if (notModified(res, std::string(request[http::field::if_none_match]))) return res;
  if (method == "HEAD") res.body().clear();
  return res;
}

}  // namespace

void RedfishService::replyRead(const std::shared_ptr<Call>& call, const json& body) {
  call->reply(forRead(*call->request, call->method, resource(body, call->allow)));
}

void RedfishService::replyViewed(const std::shared_ptr<Call>& call, unsigned needs, std::function<json(const PoolView&)> body) {
  withView(call, needs, [call, body = std::move(body)](const PoolView& v) {
    return forRead(*call->request, call->method, resource(body(v), call->allow));
  });
}

void RedfishService::resourceBlockPart(const std::shared_ptr<Call>& call, const std::string& id, const std::string& collection,
                                       const std::string& part) {
  boost::asio::post(work_, [this, call, id, collection, part] {
    auto device = engine_.getDevice(id);
    const json body = device ? bmc::resourceBlockPart(*device, collection, part) : json(nullptr);
    call->reply(device || device.error().code == Code::kNotFound ? forRead(*call->request, call->method, resource(body, call->allow))
                                                                 : engineError(device.error(), false));
  });
}

void RedfishService::resourceBlock(const std::shared_ptr<Call>& call, const std::string& id) {
  // One block: read just that device (or, when it is a host's block, the hosts).
  // From the view, on the service's pool: nothing here needs the control thread.
  boost::asio::post(work_, [this, call, id] {
    auto view = [&]() -> Result<PoolView> {
        const Caller& caller = call->caller;
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
    }();
    call->reply(view ? forRead(*call->request, call->method, resource(bmc::resourceBlock(*view, id), call->allow)) : engineError(view.error(), false));
  });
}

void RedfishService::tasks(const std::shared_ptr<Call>& call) {
  engine_.read<std::vector<Operation>>(
      [caller = call->caller](const HistoryReads& history) -> Result<std::vector<Operation>> {
        SY_ASSIGN(auto ops, history.listOperations(OperationQuery{.limit = 100}));
        std::erase_if(ops, [&](const Operation& op) { return !maySee(caller, op.tenant); });
        return ops;
      },
      [call](Result<std::vector<Operation>> ops) {
        call->reply(ops ? forRead(*call->request, call->method, resource(tasksCollection(*ops), call->allow)) : engineError(ops.error(), false));
      });
}

void RedfishService::oneTask(const std::shared_ptr<Call>& call, const std::string& id) {
  engine_.run<Operation>([id, caller = call->caller](EngineCore& core) { return visibleOperation(core, caller, id); },
                         [call](Result<Operation> op) {
                           call->reply(op ? forRead(*call->request, call->method, resource(task(*op), call->allow)) : engineError(op.error(), false));
                         });
}

// The sessions the caller may see (its own; all for an administrator), or one of them (empty `id`: the collection).
void RedfishService::sessions(const std::shared_ptr<Call>& call, const std::string& id) {
  std::vector<Session> mine;
  for (auto& s : accounts_.sessions())
    if (s.caller.identity == call->caller.identity || call->caller.role == Role::kAdmin) mine.push_back(std::move(s));
  if (id.empty()) return replyRead(call, sessionsCollection(mine));
  for (const auto& s : mine)
    if (s.id == id) return replyRead(call, session(s));
  call->reply(error(http::status::not_found, std::string(kBase) + "ResourceNotFound", "no such session"));
}

void RedfishService::logout(const std::shared_ptr<Call>& call, const std::string& id) {
  // One's own session, or any as an administrator; another's is "no such session".
  bool mine = false;
  for (const auto& s : accounts_.sessions())
    if (s.id == id) mine = s.caller.identity == call->caller.identity || call->caller.role == Role::kAdmin;
  if (!mine || !accounts_.logout(id))
    return call->reply(error(http::status::not_found, std::string(kBase) + "ResourceNotFound", "no such session"));
  call->reply(respond(http::status::no_content, nullptr));
}

RedfishService::Routes RedfishService::routeTable() {
  using Need = RouteEntry::Need;
  using Self = RedfishService;
  using CallPtr = const std::shared_ptr<Call>&;
  using Params = const net::RouteParams&;
  constexpr std::string_view kComposing = "composing needs the Tenant, Operator or Administrator role";
  constexpr std::string_view kSettings = "changing the service's settings needs the Administrator role";
  // A read any account may make.
  auto read = [](std::function<void(Self&, CallPtr, Params)> handle) { return RouteEntry{Need::kAccount, {}, std::move(handle)}; };
  auto now = [read](std::function<json(Self&, CallPtr, Params)> body) {
    return read([body = std::move(body)](Self& self, CallPtr call, Params p) { self.replyRead(call, body(self, call, p)); });
  };
  auto viewed = [read](unsigned needs, std::function<json(const PoolView&, Params)> body) {
    return read([needs, body = std::move(body)](Self& self, CallPtr call, Params p) {
      self.replyViewed(call, needs, [body, p](const PoolView& v) { return body(v, p); });
    });
  };
  // The segments of the whole path (chassis and fabric resources are addressed by all of them).
  auto parts = [](CallPtr call) { return split(call->path); };

  Routes t;
  const std::string root = kRoot;
  // Without authentication.
  t.route("/redfish").on("GET", {Need::kAnyone, {}, [](Self&, CallPtr call, Params) {
    call->reply(respond(http::status::ok, {{"v1", "/redfish/v1/"}}, call->allow));
  }});
  t.route(root).on("GET", {Need::kAnyone, {}, [](Self&, CallPtr call, Params) {
    call->reply(forRead(*call->request, call->method, resource(serviceRoot(), call->allow)));
  }});
  t.route(root + "/odata").on("GET", {Need::kAnyone, {}, [](Self&, CallPtr call, Params) {
    call->reply(respond(http::status::ok, odataServiceDocument(), call->allow));
  }});
  t.route(root + "/$metadata").on("GET", {Need::kAnyone, {}, [](Self&, CallPtr call, Params) {
    HttpResponse res{http::status::ok, 11};
    res.set("OData-Version", "4.0");
    res.set(http::field::content_type, "application/xml");
    res.set(http::field::allow, call->allow);
    res.body() = metadataXml();
    call->reply(std::move(res));
  }});
  t.route(root + "/Schemas/{file*}").on("GET", {Need::kAnyone, {}, [](Self&, CallPtr call, Params p) {
    const SchemaFile* file = oemSchema("/" + p[0]);
    if (!file) return call->reply(error(http::status::not_found, std::string(kBase) + "ResourceNotFound", fmt::format("no schema at {}", call->path)));
    HttpResponse res{http::status::ok, 11};
    res.set("OData-Version", "4.0");
    res.set(http::field::content_type, std::string(file->contentType));
    res.set(http::field::allow, call->allow);
    if (call->method == "GET") res.body() = std::string(file->body);
    call->reply(std::move(res));
  }});

  // Systems: the hosts and the composed systems; composing is POST, decomposing DELETE of a composed one.
  t.route(root + "/Systems")
      .on("GET", viewed(kHosts | kSystems, [](const PoolView& v, Params) { return systemsCollection(v); }))
      .on("POST", {Need::kCompose, kComposing, [](Self& self, CallPtr call, Params) { self.compose(call); }});
  t.route(root + "/Systems/{id}", [](Params p) { return isComposed(p[0]); })
      .on("GET", viewed(kHosts | kSystems, [](const PoolView& v, Params p) { return computerSystem(v, p[0]); }))
      .on("DELETE", {Need::kCompose, "decomposing needs the Tenant, Operator or Administrator role",
                     [](Self& self, CallPtr call, Params p) { self.decompose(call, p[0]); }})
      .on("PATCH", {Need::kCompose, kComposing, [](Self& self, CallPtr call, Params p) { self.resizeSystem(call, p[0]); }});
  // CoHDI's Sunfish backend PATCHes "/Systems/System" with the node in Name: the system on that host changes.
  t.route(root + "/Systems/{id}", [](Params p) { return p[0] == "System"; })
      .on("GET", viewed(kHosts | kSystems, [](const PoolView& v, Params p) { return computerSystem(v, p[0]); }))
      .on("PATCH", {Need::kCompose, kComposing, [](Self& self, CallPtr call, Params p) { self.resizeSystem(call, p[0]); }});
  // The composition capabilities name the machine templates a composition may start from.
  t.route(root + "/Systems/{id}", [](Params p) { return p[0] == "Capabilities"; }).on("GET", now([](Self& self, CallPtr, Params) {
    std::vector<std::string> names;
    for (const auto& mt : self.engine_.templates()) names.push_back(mt.name);
    return compositionCapabilities(names);
  }));
  t.route(root + "/Systems/{id}").on("GET", viewed(kHosts | kSystems, [](const PoolView& v, Params p) { return computerSystem(v, p[0]); }));
  t.route(root + "/Systems/{id}/Actions/{action}")
      .on("POST", {Need::kCompose, "changing a system needs the Tenant, Operator or Administrator role", [](Self& self, CallPtr call, Params p) {
        if (p[1] == "ComputerSystem.Reset") return self.resetSystem(call, p[0]);
        const bool add = p[1] == "ComputerSystem.AddResourceBlock";
        if (!add && p[1] != "ComputerSystem.RemoveResourceBlock")
          return call->reply(error(http::status::not_found, std::string(kBase) + "ResourceNotFound", fmt::format("no action {} on {}", p[1], p[0])));
        if (!isComposed(p[0]))
          return call->reply(error(http::status::bad_request, std::string(kBase) + "ActionNotSupported",
                                   fmt::format("{} is not a composed system: its blocks cannot change", p[0])));
        self.changeBlocks(call, p[0], add);
      }});

  // The composition service.
  t.route(root + "/CompositionService")
      .on("GET", now([](Self& self, CallPtr, Params) { return compositionService(self.reservationDuration()); }))
      .on("PATCH", {Need::kAdmin, kSettings, [](Self& self, CallPtr call, Params) { self.patchSettings(call); }});
  t.route(root + "/CompositionService/Actions/CompositionService.Compose")
      .on("POST", {Need::kCompose, kComposing, [](Self& self, CallPtr call, Params) { self.composeAction(call); }});
  for (const bool active : {true, false})
    t.route(root + (active ? "/CompositionService/ActivePool" : "/CompositionService/FreePool"))
        .on("GET", viewed(kHosts | kDevices, [active](const PoolView& v, Params) { return poolCollection(v, active); }));
  t.route(root + "/CompositionService/CompositionReservations").on("GET", read([](Self& self, CallPtr call, Params) { self.reservations(call, {}); }));
  t.route(root + "/CompositionService/CompositionReservations/{id}")
      .on("GET", read([](Self& self, CallPtr call, Params p) { self.reservations(call, p[0]); }))
      .on("DELETE", {Need::kCompose, "releasing a reservation needs the Tenant, Operator or Administrator role",
                     [](Self& self, CallPtr call, Params p) { self.releaseReservation(call, p[0]); }});
  t.route(root + "/CompositionService/ResourceBlocks").on("GET", viewed(kHosts | kDevices, [](const PoolView& v, Params) { return resourceBlocksCollection(v); }));
  t.route(root + "/CompositionService/ResourceBlocks/{id}").on("GET", read([](Self& self, CallPtr call, Params p) { self.resourceBlock(call, p[0]); }));
  t.route(root + "/CompositionService/ResourceBlocks/{id}/{collection}/{part}")
      .on("GET", read([](Self& self, CallPtr call, Params p) { self.resourceBlockPart(call, p[0], p[1], p[2]); }));
  t.route(root + "/CompositionService/ResourceZones").on("GET", now([](Self&, CallPtr, Params) { return resourceZonesCollection(); }));
  t.route(root + "/CompositionService/ResourceZones/{id}")
      .on("GET", viewed(kHosts | kDevices, [](const PoolView& v, Params p) { return resourceZone(v, p[0]); }));

  // Tasks: yardd's operations, and the monitors compose and decompose answer with.
  t.route(root + "/TaskService").on("GET", now([](Self&, CallPtr, Params) { return taskService(SystemClock().now()); }));
  t.route(root + "/TaskService/Tasks").on("GET", read([](Self& self, CallPtr call, Params) { self.tasks(call); }));
  t.route(root + "/TaskService/Tasks/{id}").on("GET", read([](Self& self, CallPtr call, Params p) { self.oneTask(call, p[0]); }));
  t.route(root + "/TaskService/TaskMonitors/{id}").on("GET", read([](Self& self, CallPtr call, Params p) { self.taskMonitor(call, p[0]); }));

  // Sessions and accounts. Logging in (POST Sessions) is the one change anyone may make.
  t.route(root + "/SessionService")
      .on("GET", now([](Self& self, CallPtr, Params) { return sessionService(self.accounts_.sessionTimeout()); }))
      .on("PATCH", {Need::kAdmin, kSettings, [](Self& self, CallPtr call, Params) { self.patchSettings(call); }});
  t.route(root + "/SessionService/Sessions")
      .on("GET", read([](Self& self, CallPtr call, Params) { self.sessions(call, {}); }))
      .on("POST", {Need::kAnyone, {}, [](Self& self, CallPtr call, Params) { self.login(call); }});
  t.route(root + "/SessionService/Sessions/{id}")
      .on("GET", read([](Self& self, CallPtr call, Params p) { self.sessions(call, p[0]); }))
      .on("DELETE", read([](Self& self, CallPtr call, Params p) { self.logout(call, p[0]); }));
  t.route(root + "/AccountService").on("GET", now([](Self& self, CallPtr, Params) { return accountService(self.accounts_); }));
  t.route(root + "/AccountService/Accounts").on("GET", now([](Self& self, CallPtr call, Params) { return accountsCollection(self.accounts_, call->caller); }));
  t.route(root + "/AccountService/Accounts/{id}").on("GET", now([](Self& self, CallPtr call, Params p) { return account(self.accounts_, call->caller, p[0]); }));
  t.route(root + "/AccountService/Roles").on("GET", now([](Self&, CallPtr, Params) { return rolesCollection(); }));
  t.route(root + "/AccountService/Roles/{id}").on("GET", now([](Self&, CallPtr, Params p) { return role(p[0]); }));

  // The hardware: chassis and fabrics (addressed by the whole path), events, schemas.
  t.route(root + "/Chassis").on("GET", viewed(kTopology, [](const PoolView& v, Params) { return chassisCollection(v); }));
  t.route(root + "/Chassis/{rest*}").on("GET", read([parts](Self& self, CallPtr call, Params) {
    self.replyViewed(call, kTopology, [segments = parts(call)](const PoolView& v) { return chassisResource(v, segments); });
  }));
  t.route(root + "/Fabrics").on("GET", viewed(kTopology, [](const PoolView& v, Params) { return fabricsCollection(v); }));
  t.route(root + "/Fabrics/{rest*}").on("GET", read([parts](Self& self, CallPtr call, Params) {
    self.replyViewed(call, kTopology | kSystems, [segments = parts(call)](const PoolView& v) { return fabricResource(v, segments); });
  }));
  t.route(root + "/Managers").on("GET", now([](Self&, CallPtr, Params) { return managersCollection(); }));
  t.route(root + "/Managers/{id}").on("GET", now([](Self&, CallPtr, Params p) {
    return p[0] == kManagerId ? manager(SystemClock().now()) : json(nullptr);
  }));
  t.route(root + "/EventService").on("GET", now([](Self&, CallPtr, Params) { return eventService(); }));
  t.route(root + "/EventService/SSE").on("GET", read([](Self& self, CallPtr call, Params) { self.eventStream(call); }));
  t.route(root + "/JsonSchemas").on("GET", now([](Self&, CallPtr, Params) { return jsonSchemasCollection(); }));
  t.route(root + "/JsonSchemas/{id}").on("GET", now([](Self&, CallPtr, Params p) { return jsonSchemaFile(p[0]); }));
  return t;
}

}  // namespace switchyard::bmc
