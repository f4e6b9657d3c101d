// Routing through the route table (redfish_routes.cpp), authentication, the pool reads, the event stream and
// login. The changes (compose, decompose, blocks, the Compose action, task monitors) are in
// redfish_changes.cpp; protocol helpers in redfish_protocol.*.
#include "bmc/redfish_service.h"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "net/event_feed.h"
#include "bmc/redfish_protocol.h"
#include "composer/model/access.h"

namespace switchyard::bmc {

using namespace redfish_protocol;

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
  // A body is read as JSON only when it says it is (DSP0266: 415 otherwise), before anything else is done.
  if (!req.body().empty() && (call->method == "POST" || call->method == "PATCH" || call->method == "PUT")) {
    const std::string_view type(req[http::field::content_type].data(), req[http::field::content_type].size());
    std::string media(type.substr(0, type.find(';')));
    while (!media.empty() && media.back() == ' ') media.pop_back();
    std::transform(media.begin(), media.end(), media.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (media != "application/json")
      return answer(error(http::status::unsupported_media_type, std::string(kBase) + "HeaderInvalid",
                          fmt::format("Header 'Content-Type: {}' is invalid: a request body must be application/json",
                                      type.empty() ? std::string("(none)") : std::string(type))));
  }
  // Query options: none are supported yet; say so instead of ignoring them.
  if (!call->query.empty()) {
    for (const auto& part : split("/" + call->query)) {
      const std::string name = part.substr(0, part.find('='));
      if (name.rfind('$', 0) == 0 || name == "only" || name == "excerpt")
        return answer(error(http::status::not_implemented, std::string(kBase) + "QueryNotSupported",
                            fmt::format("the query option {} is not supported by this service", name)));
    }
  }
  auto found = routes_.find(call->path, call->method);
  // Without authentication: what the table marks for anyone (the service root, the service document,
  // $metadata, the schemas, logging in). Everything else, and every path the table does not know, after it.
  if (found && found->entry->need == RouteEntry::Need::kAnyone) {
    call->allow = found->allow;
    return found->entry->handle(*this, call, found->params);
  }
  // A password check (Basic auth) may run on the accounts' own threads: authenticated() goes on from there.
  if (auto token = req["X-Auth-Token"]; !token.empty()) return authenticated(call, accounts_.token(std::string(token)), found);
  if (auto auth = req[http::field::authorization]; !auth.empty())
    return accounts_.authorize(std::string(auth), call->peer,
                               [this, call, found](std::optional<Caller> caller) { authenticated(call, caller, found); });
  authenticated(call, std::nullopt, found);
}

void RedfishService::authenticated(const std::shared_ptr<Call>& call, const std::optional<Caller>& caller,
                                   const std::expected<Routes::Found, Routes::Miss>& found) {
  auto answer = [&](HttpResponse res) { call->reply(std::move(res)); };
  if (!caller) {
    HttpResponse res = error(http::status::unauthorized, std::string(kBase) + "NoValidSession",
                             "authenticate with HTTP Basic, a bearer token, or an X-Auth-Token from POST /redfish/v1/SessionService/Sessions");
    res.set(http::field::www_authenticate, "Basic realm=\"switchyard\"");
    return answer(std::move(res));
  }
  call->caller = *caller;
  if (!found) {
    if (!found.error().resourceExists)
      return answer(error(http::status::not_found, std::string(kBase) + "ResourceNotFound", fmt::format("no resource at {}", call->path)));
    return answer(error(http::status::method_not_allowed, std::string(kBase) + "OperationNotAllowed",
                        fmt::format("{} is not allowed on {}", call->method, call->path), found.error().allow));
  }
  const RouteEntry& entry = *found->entry;
  const bool allowed = entry.need == RouteEntry::Need::kAccount || (entry.need == RouteEntry::Need::kCompose && caller->role != Role::kViewer) ||
                       (entry.need == RouteEntry::Need::kAdmin && caller->role == Role::kAdmin);
  if (!allowed) return answer(error(http::status::forbidden, std::string(kBase) + "InsufficientPrivilege", std::string(entry.forbidden)));
  call->allow = found->allow;
  entry.handle(*this, call, found->params);
}

void RedfishService::withView(const std::shared_ptr<Call>& call, unsigned needs, std::function<HttpResponse(const PoolView&)> build) {
  // From the view, on the service's pool: nothing here needs the control thread.
  boost::asio::post(work_, [this, call, needs, build = std::move(build)] {
    auto view = [&]() -> Result<PoolView> {
        const Caller& caller = call->caller;
        PoolView v;
        if (needs & kHosts) {
          SY_ASSIGN(v.hosts, engine_.listHosts());
        }
        if (needs & kSystems) {
          SY_ASSIGN(auto systems, engine_.listSystems());
          for (auto& s : systems)
            if (s.state != SystemState::kDecomposed && maySee(caller, s.tenant)) v.systems.push_back(std::move(s));
          v.published = engine_.view();
        }
        if (needs & kDevices) {
          SY_ASSIGN(v.devices, engine_.listDevices());
        }
        if (needs & kTopology) {
          SY_ASSIGN(v.topology, engine_.topology());
        }
        return v;
    }();
    call->reply(view ? build(*view) : engineError(view.error(), false));
  });
}

void RedfishService::eventStream(const std::shared_ptr<Call>& call) {
  if (call->method == "HEAD") {  // what a GET would start, without starting it
    HttpResponse res = respond(http::status::ok, nullptr, call->allow);
    res.set(http::field::content_type, "text/event-stream");
    return call->reply(std::move(res));
  }
  auto last = net::lastEventId(std::string_view((*call->request)["Last-Event-ID"]));
  if (!last) return call->reply(error(http::status::bad_request, std::string(kBase) + "PropertyValueError", last.error().message));
  engine_.subscribeAfter(*last, [call](Result<EventSubscription> subscription) {
    if (!subscription) return call->reply(engineError(subscription.error(), false));
    auto writer = call->openStream(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nOData-Version: 4.0\r\nConnection: close\r\n\r\n");
    // A tenant's account hears its own tenant's events and the pool's (as over gRPC).
    net::EventFeed(std::move(subscription->live), std::move(subscription->replay), subscription->lastSeen)
        .pipeTo(writer, call->caller, redfishEventText);
  });
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
