// The console acts (issue 63, item 1): logging in and out, and the changes an operator or tenant makes from the
// browser. Each change is the engine's own call (EngineCore, or releaseQuarantined) with the caller as proven:
// the engine's role and tenant checks decide, as they do for gRPC, and its audit trail records the refusals.
//
// Who may change (authorizeChange): a bearer token (a script; browsers never send one by themselves), or the
// session cookie with the session's CSRF token in X-CSRF-Token (the console). HTTP Basic alone is refused for
// changes: a browser that once answered the Basic dialog sends it to every request of the origin, a cross-site
// form's included. Without identities every caller is the local admin, and a change needs the process's token.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "composer/model/clock.h"
#include "composer/model/queue.h"
#include "composer/web/api_json.h"
#include "composer/web/web_replies.h"
#include "composer/web/web_service.h"
#include "net/http_status.h"

namespace switchyard::web {

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

constexpr std::string_view kCsrfHeader = "X-CSRF-Token";

std::string headerValue(const net::HttpRequest& request, std::string_view name) {
  const auto it = request.find(boost::beast::string_view(name.data(), name.size()));
  return it == request.end() ? std::string() : std::string(it->value());
}

json callerJson(const Caller& caller) {
  return json{{"identity", caller.identity}, {"role", std::string(toString(caller.role))}, {"tenant", caller.tenant}};
}

// The request's JSON object body; an empty body is an empty object.
Result<json> bodyOf(const net::HttpRequest& request) {
  if (request.body().empty()) return json::object();
  json body = json::parse(request.body(), nullptr, false);
  if (body.is_discarded() || !body.is_object()) return fail(Code::kInvalidArgument, "the body must be a JSON object");
  return body;
}

// A field of the body: absent is `fallback`; present with another type is an error naming the field.
template <typename T>
Result<T> field(const json& body, const char* name, T fallback) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fail(Code::kInvalidArgument, fmt::format("'{}' has the wrong type", name));
  }
}

Result<std::chrono::milliseconds> durationField(const json& body, const char* name) {
  SY_ASSIGN(const std::string text, field<std::string>(body, name, ""));
  if (text.empty()) return std::chrono::milliseconds(0);
  auto d = parseDuration(text);
  if (!d) return fail(Code::kInvalidArgument, fmt::format("'{}': '{}' is not a duration such as 90s, 30m, 8h or 2d", name, text));
  return *d;
}

std::string sessionCookie(std::string_view value, bool secure, bool expire) {
  return fmt::format("{}={}; Path=/; HttpOnly; SameSite=Strict{}{}", WebService::kSessionCookie, value, secure ? "; Secure" : "",
                     expire ? "; Max-Age=0" : fmt::format("; Max-Age={}", std::chrono::seconds(ConsoleSessions::kTtl).count()));
}

// What a change answers: 202 with the operation it started, 200 with what it changed, or the engine's error.
template <typename T>
Completion<T> answerWith(net::Reply reply, unsigned version, bool keepAlive, http::status ok, std::function<json(const T&)> toJson) {
  return [reply = std::move(reply), version, keepAlive, ok, toJson = std::move(toJson)](Result<T> r) {
    if (!r) return reply(problem(net::httpStatusOf(r.error().code), r.error().message, version, keepAlive));
    reply(respond(ok, "application/json", toJson(*r).dump(-1, ' ', false, json::error_handler_t::replace) + "\n", version, keepAlive));
  };
}

json systemChangeJson(const System& s) {
  return json{{"id", s.id}, {"name", s.name}, {"state", toString(s.state)}, {"state_reason", s.stateReason},
              {"lease_expires_at", s.leaseExpiresAt == 0 ? std::string() : formatTimestamp(s.leaseExpiresAt)}};
}

}  // namespace

void WebService::addConsoleRoutes(Routes& t) {
  using Self = WebService;
  using Params = const net::RouteParams&;
  // A change of the engine: the body parsed, the call made on the control thread, answered from the replies' thread.
  auto operation = [](std::function<Result<std::function<Result<Operation>(EngineCore&)>>(const Caller&, const json&, Params)> make) {
    return Route{false, {}, [make](Self& self, const Caller& caller, const net::HttpRequest& request, Params params, net::Reply reply) {
                   const unsigned version = request.version();
                   const bool keepAlive = request.keep_alive();
                   auto body = bodyOf(request);
                   auto call = body ? make(caller, *body, params) : std::unexpected(body.error());
                   if (!call) return reply(problem(net::httpStatusOf(call.error().code), call.error().message, version, keepAlive));
                   self.engine_.run<Operation>(std::move(*call), answerWith<Operation>(std::move(reply), version, keepAlive, http::status::accepted,
                                                                                       [](const Operation& op) { return operationJson(op); }));
                 }};
  };
  t.route("/api/v1/session").on("GET", {false, [](Self& self, const Caller& caller, const net::HttpRequest& request, Params, const std::string&, net::Reply reply,
                                                  const net::OpenStream&) { self.session(caller, request, std::move(reply)); }});
  t.route("/api/v1/login").on("POST", Route{true, {}, {}, [](Self& self, const net::HttpRequest& request, const std::string& peer, net::Reply reply) {
                                              self.login(request, peer, std::move(reply));
                                            }});
  t.route("/api/v1/logout").on("POST", Route{false, {}, [](Self& self, const Caller&, const net::HttpRequest& request, Params, net::Reply reply) {
                                               self.logout(request, std::move(reply));
                                             }});
  // compose {"name", "gpus", "model", "template", "nics", "nic_speed_gbps", "nvme", "memory_gib", "endpoints" ({"fpga": 1}), "tenant",
  //          "queue", "priority_class", "lease", "labels"}
  t.route("/api/v1/systems").on("POST", operation([](const Caller& caller, const json& body, Params) -> Result<std::function<Result<Operation>(EngineCore&)>> {
    ComposeRequest r;
    SY_ASSIGN(r.name, field<std::string>(body, "name", ""));
    if (r.name.empty()) return fail(Code::kInvalidArgument, "'name': required (letters, digits, . _ -)");
    SY_ASSIGN(r.machineTemplate, field<std::string>(body, "template", ""));
    r.peerToPeerAsked = false;  // the console has no peer-to-peer field: a template's holds, else the default
    SY_ASSIGN(r.placement.gpuCount, field<int>(body, "gpus", 0));
    if (r.placement.gpuCount < 0 || r.placement.gpuCount > 1024) return fail(Code::kInvalidArgument, "'gpus': a count from 1 to 1024");
    for (const auto& [key, kind] : {std::pair{"nics", DeviceKind::kNic}, std::pair{"nvme", DeviceKind::kNvme}}) {
      SY_ASSIGN(const int count, field<int>(body, key, 0));
      if (count < 0 || count > kMaxEndpointsPerDemand) return fail(Code::kInvalidArgument, fmt::format("'{}': a count from 0 to {}", key, kMaxEndpointsPerDemand));
      if (count > 0) r.placement.endpoints.push_back({kind, count, "", 0, Affinity::kDomain});
    }
    // Other classes by name: {"fpga": 1, "dpu": 2}, placed anywhere the host reaches (yardctl --endpoint's default).
    SY_ASSIGN(const auto others, (field<std::map<std::string, json>>(body, "endpoints", {})));
    for (const auto& [deviceClass, value] : others) {
      if (!isClassName(deviceClass))
        return fail(Code::kInvalidArgument, fmt::format("'endpoints': '{}' is not another device class ({}; GPUs, NICs, drives and memory have their own "
                                                        "fields)", deviceClass, kKindNameRule));
      const int count = value.is_number_integer() ? value.get<int>() : 0;
      if (count < 1 || count > kMaxEndpointsPerDemand)
        return fail(Code::kInvalidArgument, fmt::format("'endpoints': {}: a count from 1 to {}", deviceClass, kMaxEndpointsPerDemand));
      r.placement.endpoints.push_back({DeviceKind::kOther, count, "", 0, Affinity::kDomain, 0, deviceClass});
    }
    SY_ASSIGN(const int nicSpeed, field<int>(body, "nic_speed_gbps", 0));
    if (nicSpeed < 0 || nicSpeed > kMaxLinkSpeedGbps)
      return fail(Code::kInvalidArgument, fmt::format("'nic_speed_gbps': a port speed from 0 to {} Gb/s", kMaxLinkSpeedGbps));
    if (nicSpeed > 0) {
      auto nic = std::find_if(r.placement.endpoints.begin(), r.placement.endpoints.end(), [](const EndpointDemand& d) { return d.kind == DeviceKind::kNic; });
      if (nic == r.placement.endpoints.end()) return fail(Code::kInvalidArgument, "'nic_speed_gbps': give the NICs' count too ('nics')");
      nic->minSpeedGbps = nicSpeed;
    }
    SY_ASSIGN(r.placement.pooledMemoryGiB, field<int>(body, "memory_gib", 0));
    if (r.placement.pooledMemoryGiB < 0) return fail(Code::kInvalidArgument, "'memory_gib': GiB of pooled memory, 0 or more");
    if (r.machineTemplate.empty() && r.placement.gpuCount == 0 && r.placement.endpoints.empty() && r.placement.pooledMemoryGiB == 0)
      return fail(Code::kInvalidArgument, "'gpus': a count from 1 to 1024 (or a template, or NICs, drives, memory or other devices alone)");
    SY_ASSIGN(r.placement.model, field<std::string>(body, "model", ""));
    SY_ASSIGN(std::string tenant, field<std::string>(body, "tenant", ""));
    r.placement.tenant = !tenant.empty() ? tenant : !caller.tenant.empty() ? caller.tenant : std::string(kDefaultTenant);
    SY_ASSIGN(r.queue, field<bool>(body, "queue", false));
    SY_ASSIGN(r.priorityClass, field<std::string>(body, "priority_class", ""));
    SY_ASSIGN(r.lease, durationField(body, "lease"));
    SY_ASSIGN(r.labels, (field<std::map<std::string, std::string>>(body, "labels", {})));
    return [caller, r](EngineCore& core) { return core.compose(caller, r); };
  }));
  t.route("/api/v1/systems/{system}").on("DELETE", operation([](const Caller& caller, const json&, Params p) -> Result<std::function<Result<Operation>(EngineCore&)>> {
    return [caller, system = p.at(0)](EngineCore& core) { return core.decompose(caller, system); };
  }));
  t.route("/api/v1/systems/{system}/attach").on("POST", operation([](const Caller& caller, const json& body, Params p) -> Result<std::function<Result<Operation>(EngineCore&)>> {
    AttachRequest r{p.at(0), {}, {}};
    SY_ASSIGN(r.placement.gpuCount, field<int>(body, "gpus", 0));
    if (r.placement.gpuCount < 1 || r.placement.gpuCount > 1024) return fail(Code::kInvalidArgument, "'gpus': a count from 1 to 1024");
    SY_ASSIGN(r.placement.model, field<std::string>(body, "model", ""));
    return [caller, r](EngineCore& core) { return core.attach(caller, r); };
  }));
  t.route("/api/v1/systems/{system}/detach").on("POST", operation([](const Caller& caller, const json& body, Params p) -> Result<std::function<Result<Operation>(EngineCore&)>> {
    DetachRequest r{p.at(0), {}, {}, {}, {}};
    SY_ASSIGN(r.devices, field<std::vector<std::string>>(body, "devices", {}));
    if (r.devices.empty()) return fail(Code::kInvalidArgument, "'devices': the devices to detach (see the system's devices)");
    return [caller, r](EngineCore& core) { return core.detach(caller, r); };
  }));
  t.route("/api/v1/queue/{id}/cancel").on("POST", operation([](const Caller& caller, const json&, Params p) -> Result<std::function<Result<Operation>(EngineCore&)>> {
    return [caller, id = p.at(0)](EngineCore& core) { return core.cancelQueued(caller, id); };
  }));
  t.route("/api/v1/systems/{system}/renew").on("POST", Route{false, {}, [](Self& self, const Caller& caller, const net::HttpRequest& request, Params p, net::Reply reply) {
    const unsigned version = request.version();
    const bool keepAlive = request.keep_alive();
    auto body = bodyOf(request);
    auto lease = body ? durationField(*body, "lease") : std::unexpected(body.error());
    if (lease && lease->count() == 0) lease = fail(Code::kInvalidArgument, "'lease': required, such as 4h");
    if (!lease) return reply(problem(net::httpStatusOf(lease.error().code), lease.error().message, version, keepAlive));
    self.engine_.run<System>([caller, system = p.at(0), l = *lease](EngineCore& core) { return core.renewLease(caller, system, l); },
                             answerWith<System>(std::move(reply), version, keepAlive, http::status::ok, systemChangeJson));
  }});
  t.route("/api/v1/devices/{device}/release").on("POST", Route{false, {}, [](Self& self, const Caller& caller, const net::HttpRequest& request, Params p, net::Reply reply) {
    const unsigned version = request.version();
    const bool keepAlive = request.keep_alive();
    auto body = bodyOf(request);
    auto unbind = body ? field<bool>(*body, "unbind", false) : std::unexpected(body.error());
    if (!unbind) return reply(problem(net::httpStatusOf(unbind.error().code), unbind.error().message, version, keepAlive));
    auto down = field<bool>(*body, "host_is_down", false);
    if (!down) return reply(problem(net::httpStatusOf(down.error().code), down.error().message, version, keepAlive));
    self.engine_.releaseQuarantined(caller, p.at(0), {*unbind, *down},
                                    answerWith<DeviceView>(std::move(reply), version, keepAlive, http::status::ok, [](const DeviceView& d) {
                                      return json{{"id", d.device.id}, {"state", toString(d.assignment.allocation)}};
                                    }));
  }});
}

void WebService::authorizeChange(const Route& route, const net::HttpRequest& request, const net::RouteParams& params, const std::string& peer,
                                 net::Reply reply) {
  const unsigned version = request.version();
  const bool keepAlive = request.keep_alive();
  const std::string csrf = headerValue(request, kCsrfHeader);
  auto refuse = [&](http::status status, std::string why) { reply(problem(status, std::move(why), version, keepAlive)); };
  if (!authorize_) {  // no identities: the local admin, from a page of this origin
    if (!sameSecret(csrf, sessions_->localCsrf()))
      return refuse(http::status::forbidden, "a change needs the console's CSRF token in X-CSRF-Token (GET /api/v1/session gives it to a page of this origin)");
    return route.change(*this, Caller::local(), request, params, std::move(reply));
  }
  if (const std::string header = headerValue(request, "Authorization"); !header.empty()) {
    if (!header.starts_with("Bearer "))
      return refuse(http::status::forbidden,
                    "HTTP Basic is not accepted for changes (a browser sends it by itself, to any form's request): use a bearer token, or log in "
                    "(POST /api/v1/login) and send the session's CSRF token");
    return authorize_(header, peer, [this, &route, &request, params, reply = std::move(reply), version, keepAlive](std::optional<Caller> who) mutable {
      if (!who) return reply(problem(http::status::unauthorized, "the bearer token matches no identity", version, keepAlive));
      route.change(*this, *who, request, params, std::move(reply));
    });
  }
  auto session = sessions_->find(cookieValue(headerValue(request, "Cookie"), kSessionCookie));
  if (!session) return refuse(http::status::unauthorized, "log in first (POST /api/v1/login), or send a bearer token");
  if (!sameSecret(csrf, session->csrf))
    return refuse(http::status::forbidden, "the session's CSRF token is missing or wrong (X-CSRF-Token): a change must come from the console's own page");
  route.change(*this, session->caller, request, params, std::move(reply));
}

void WebService::session(const Caller& caller, const net::HttpRequest& request, net::Reply reply) {
  json out = callerJson(caller);
  out["login"] = static_cast<bool>(authorize_);
  std::string csrf;
  if (!authorize_)
    csrf = sessions_->localCsrf();
  else if (auto s = sessions_->find(cookieValue(headerValue(request, "Cookie"), kSessionCookie)); s && s->caller.identity == caller.identity)
    csrf = s->csrf;
  out["csrf"] = csrf;
  reply(respond(http::status::ok, "application/json", out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", request.version(), request.keep_alive()));
}

void WebService::login(const net::HttpRequest& request, const std::string& peer, net::Reply reply) {
  const unsigned version = request.version();
  const bool keepAlive = request.keep_alive();
  if (!console_.login)
    return reply(problem(http::status::bad_request, "this yardd has no identities (--identities): nobody logs in, every caller is the local admin",
                         version, keepAlive));
  auto body = bodyOf(request);
  auto name = body ? field<std::string>(*body, "name", "") : std::unexpected(body.error());
  auto password = body ? field<std::string>(*body, "password", "") : std::unexpected(body.error());
  if (!name || !password || name->empty() || password->empty())
    return reply(problem(http::status::bad_request, "log in with a JSON body {\"name\": ..., \"password\": ...}", version, keepAlive));
  console_.login(*name, *password, peer, [this, reply = std::move(reply), version, keepAlive, name = *name](std::optional<Caller> who, std::uint64_t generation) {
    if (!who) {
      spdlog::info("console: login of '{}' refused", name);
      return reply(problem(http::status::unauthorized, "wrong name or password (or too many tries: wait a minute)", version, keepAlive));
    }
    auto [cookie, session] = sessions_->open(*who, generation);
    json out = callerJson(*who);
    out["csrf"] = session.csrf;
    out["login"] = true;
    auto res = respond(http::status::ok, "application/json", out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", version, keepAlive);
    res.set(http::field::set_cookie, sessionCookie(cookie, console_.secureCookie, false));
    spdlog::info("console: {} logged in ({})", who->identity, toString(who->role));
    reply(std::move(res));
  });
}

void WebService::logout(const net::HttpRequest& request, net::Reply reply) {
  sessions_->close(cookieValue(headerValue(request, "Cookie"), kSessionCookie));
  auto res = respond(http::status::ok, "application/json", "{\"logged_out\": true}\n", request.version(), request.keep_alive());
  res.set(http::field::set_cookie, sessionCookie("", console_.secureCookie, true));
  reply(std::move(res));
}

}  // namespace switchyard::web
