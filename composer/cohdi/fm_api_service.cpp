// The routes, who is calling, the token endpoint, tenants, and how a change is waited for. The machine calls are
// in fm_api_machines.cpp, the cluster-manager reads in cm_api.cpp.
#include "composer/cohdi/fm_api_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <set>

#include "composer/cohdi/cohdi_ids.h"
#include "composer/model/access.h"
#include "composer/model/base64.h"
#include "net/form_encoding.h"
#include "net/http_status.h"

namespace switchyard::cohdi {

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

std::string base64Url(std::string_view bytes) {
  std::string out = encodeBase64(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

// The error body both clients parse: {"status": N, "detail": {"code": ..., "message": ...}} (the operator's
// fti/fm/api/common.go ErrorBody wants status as a number; the DRA driver's client.go reads detail.message).
json errorBody(http::status status, std::string_view code, const std::string& message) {
  return json{{"status", static_cast<int>(status)}, {"detail", {{"code", std::string(code)}, {"message", message}}}};
}

net::HttpResponse jsonResponse(http::status status, const json& body, unsigned version, bool keepAlive) {
  net::HttpResponse res{status, version};
  res.set(http::field::server, "yardd");
  res.set(http::field::content_type, "application/json");
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(keepAlive);
  res.body() = body.dump(-1, ' ', false, json::error_handler_t::replace);
  res.prepare_payload();
  return res;
}

// The login token inside an access token this API issued ("HEADER.PAYLOAD.TOKEN"), or the token as it is
// (an identity's own token, a `yardctl login` token).
std::vector<std::string_view> bearerCandidates(std::string_view token) {
  std::vector<std::string_view> out{token};
  if (std::count(token.begin(), token.end(), '.') == 2) out.push_back(token.substr(token.rfind('.') + 1));
  return out;
}

}  // namespace

void FmApiService::Call::answer(http::status status, const json& body) const { reply(jsonResponse(status, body, version, keepAlive)); }

void FmApiService::Call::fail(const Error& error) const {
  const auto status = net::httpStatusOf(error.code);
  reply(jsonResponse(status, errorBody(status, codeName(error.code), error.message), version, keepAlive));
}

void FmApiService::Call::refuse(http::status status, std::string_view code, const std::string& message) const {
  reply(jsonResponse(status, errorBody(status, code, message), version, keepAlive));
}

net::HttpResponse FmApiService::errorResponse(http::status status, const std::string& message) {
  return jsonResponse(status, errorBody(status, "HTTP", message), 11, false);
}

FmApiService::FmApiService(Engine& engine, const Authenticator& authenticator, const auth::Identities* identities, FmApiOptions options)
    : engine_(engine, [this](std::function<void()> f) { boost::asio::post(replies_, std::move(f)); }),
      authenticator_(authenticator),
      identities_(identities),
      options_(options) {}

FmApiService::~FmApiService() {
  logins_.join();
  replies_.join();
}

FmApiService::Routes FmApiService::routeTable() {
  Routes t;
  using Self = FmApiService;
  t.route("/id_manager/realms/{realm}/protocol/openid-connect/token").on("POST", Route{true, &Self::token});
  t.route("/fabric_manager/api/v1/tenants").on("GET", Route{false, &Self::tenants});
  t.route("/fabric_manager/api/v1/machines").on("GET", Route{false, &Self::machines});
  t.route("/fabric_manager/api/v1/machines/{machine}").on("GET", Route{false, &Self::machine});
  t.route("/fabric_manager/api/v1/machines/{machine}/available-reserved-resources").on("GET", Route{false, &Self::available});
  t.route("/fabric_manager/api/v1/machines/{machine}/update").on("PATCH", Route{false, &Self::attach}).on("DELETE", Route{false, &Self::detach});
  t.route("/cluster_manager/cluster_autoscaler/v2/tenants/{tenant}/clusters/{cluster}/nodegroups").on("GET", Route{false, &Self::nodeGroups});
  t.route("/cluster_manager/cluster_autoscaler/v2/tenants/{tenant}/clusters/{cluster}/nodegroups/{group}").on("GET", Route{false, &Self::nodeGroup});
  t.route("/cluster_manager/cluster_autoscaler/v3/tenants/{tenant}/clusters/{cluster}/machines/{machine}").on("GET", Route{false, &Self::nodeDetails});
  t.route("/cluster_manager/cluster_autoscaler/v3/tenants/{tenant}/clusters/{cluster}/machines/{machine}/actions/resize")
      .on("POST", Route{false, &Self::resize});
  return t;
}

void FmApiService::handle(const net::HttpRequest& request, net::Reply reply, const std::string& peer) {
  Call call;
  call.request = &request;
  call.version = request.version();
  call.keepAlive = request.keep_alive();
  call.reply = std::move(reply);
  call.peer = peer;
  const std::string target(request.target());
  const auto q = target.find('?');
  const std::string path = target.substr(0, q);
  if (q != std::string::npos) call.query = net::parseForm(std::string_view(target).substr(q + 1));
  auto found = routes_.find(path, std::string(request.method_string()));
  if (!found) {
    if (!found.error().resourceExists)
      return call.fail(Error{Code::kNotFound, fmt::format("no such resource: {} (docs/kubernetes.md lists what this API serves)", path)});
    const auto status = http::status::method_not_allowed;
    auto res = jsonResponse(status, errorBody(status, "METHOD_NOT_ALLOWED", fmt::format("{} does not take {}", path, std::string(request.method_string()))),
                            call.version, call.keepAlive);
    res.set(http::field::allow, found.error().allow);
    return call.reply(std::move(res));
  }
  call.params = std::move(found->params);
  const Route& route = *found->entry;
  if (!route.anonymous) {
    const std::string header(request[http::field::authorization]);
    if (!header.starts_with("Bearer "))
      return call.fail(Error{Code::kUnauthenticated, "send 'Authorization: Bearer TOKEN' (a token from id_manager/realms/REALM/protocol/openid-connect/token, "
                                                     "a `yardctl login` token, or an identity's own token)"});
    Result<Caller> who = std::unexpected(Error{Code::kUnauthenticated, "no token"});
    for (std::string_view candidate : bearerCandidates(std::string_view(header).substr(7)))
      if ((who = authenticator_.callerOfBearer(candidate))) break;
    if (!who) return call.fail(who.error());
    call.caller = *who;
  }
  (this->*route.handle)(std::move(call));
}

// OpenID Connect's password grant (RFC 6749 4.3) over yardd's identities. CoHDI's clients send client_id and
// client_secret (Keycloak's); yardd has no OAuth clients, so they are not checked, and any realm names yardd.
void FmApiService::token(Call call) {
  const auto form = net::parseForm(call.request->body());
  const std::string grant = net::formValue(form, "grant_type");
  const std::string user = net::formValue(form, "username");
  const std::string password = net::formValue(form, "password");
  auto refuse = [&call](http::status status, std::string_view oauthError, const std::string& message) {
    json body = errorBody(status, oauthError, message);
    body["error"] = std::string(oauthError);
    body["error_description"] = message;
    call.answer(status, body);
  };
  if (grant != "password")
    return refuse(http::status::bad_request, "unsupported_grant_type", fmt::format("grant_type '{}': only 'password' is served", grant));
  if (user.empty() || password.empty()) return refuse(http::status::bad_request, "invalid_request", "username and password are required");
  const std::string realm = call.params.at(0);
  const std::string clientId = net::formValue(form, "client_id");
  auto issue = [this, realm, clientId](const Call& c, const std::string& name, const std::string& loginToken) {
    const auto now = std::chrono::system_clock::now();
    const auto exp = std::chrono::duration_cast<std::chrono::seconds>((now + options_.tokenLifetime).time_since_epoch()).count();
    const auto iat = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    // A JWT's shape (CoHDI's clients read "exp" from the middle part) around yardd's own login token, which is what
    // proves the caller: the first two parts are not signed and nothing reads them back.
    const std::string header = base64Url(R"({"typ":"JWT","alg":"x-yardd-login-token"})");
    const std::string payload =
        base64Url(json{{"iss", "yardd"}, {"sub", name}, {"azp", clientId}, {"realm", realm}, {"iat", iat}, {"exp", exp}}.dump(-1, ' ', false, json::error_handler_t::replace));
    c.answer(http::status::ok, json{{"access_token", header + "." + payload + "." + loginToken},
                                    {"expires_in", options_.tokenLifetime.count()},
                                    {"refresh_expires_in", 0},
                                    {"refresh_token", ""},
                                    {"token_type", "Bearer"},
                                    {"id_token", ""},
                                    {"not-before-policy", 0},
                                    {"session_state", ""},
                                    {"scope", "openid"}});
  };
  if (authenticator_.open()) return issue(call, user, "open");  // no identities: every caller is the local admin
  boost::asio::post(logins_, [this, call = std::move(call), user, password, issue, refuse]() mutable {
    auto login = authenticator_.login(user, password, options_.tokenLifetime, call.peer);
    if (!login) {
      spdlog::info("cohdi: token for '{}' refused: {}", user, login.error().message);
      json body = errorBody(http::status::unauthorized, "invalid_grant", login.error().message);
      body["error"] = "invalid_grant";
      body["error_description"] = login.error().message;
      return call.answer(http::status::unauthorized, body);
    }
    spdlog::info("cohdi: token issued to {} ({})", user, toString(login->session.caller.role));
    issue(call, user, login->token);
  });
}

std::vector<std::string> FmApiService::knownTenants(const PoolView& view) const {
  std::set<std::string> names{std::string(kDefaultTenant)};
  if (identities_) {
    for (const auto& id : identities_->identities())
      if (!id.tenant.empty()) names.insert(id.tenant);
    for (const auto& [name, quota] : identities_->quotas()) names.insert(name);
  }
  for (const auto& s : view.systems.sorted()) names.insert(s->tenant);
  return {names.begin(), names.end()};
}

Result<std::string> FmApiService::tenantOf(const Call& call, const PoolView& view) const {
  const std::string uuid = net::formValue(call.query, "tenant_uuid");
  return tenantNamed(call.caller, uuid, view);
}

Result<std::string> FmApiService::tenantNamed(const Caller& caller, const std::string& uuid, const PoolView& view) const {
  if (caller.role == Role::kTenant) {
    if (!uuid.empty() && uuid != tenantUuid(caller.tenant))
      return fail(Code::kPermissionDenied, fmt::format("tenant_uuid {} is not the tenant of '{}' ({}: {})", uuid, caller.identity, caller.tenant,
                                                       tenantUuid(caller.tenant)));
    return caller.tenant;
  }
  if (uuid.empty()) return caller.tenant.empty() ? std::string(kDefaultTenant) : caller.tenant;
  for (const auto& name : knownTenants(view))
    if (tenantUuid(name) == uuid) return name;
  return fail(Code::kNotFound, fmt::format("no tenant has the UUID {} (GET fabric_manager/api/v1/tenants lists them)", uuid));
}

// Switchyard's own call: which tenant UUIDs the caller may name (CoHDI's configuration wants one).
void FmApiService::tenants(Call call) {
  const auto view = engine_.view();
  json list = json::array();
  for (const auto& name : knownTenants(*view))
    if (maySee(call.caller, name)) list.push_back({{"tenant_uuid", tenantUuid(name)}, {"tenant_name", name}});
  call.answer(http::status::ok, json{{"data", {{"tenants", std::move(list)}}}});
}

Result<void> FmApiService::admitChange(const std::string& identity) {
  std::lock_guard lock(changesMutex_);
  auto& open = changesByCaller_[identity];
  if (open >= options_.maxChangesPerCaller)
    return fail(Code::kResourceExhausted, fmt::format("'{}' already has {} changes waiting, the most one caller may", identity, open));
  ++open;
  return {};
}

void FmApiService::endChange(const std::string& identity) {
  std::lock_guard lock(changesMutex_);
  if (auto it = changesByCaller_.find(identity); it != changesByCaller_.end() && --it->second == 0) changesByCaller_.erase(it);
}

void FmApiService::change(Call call, Start start, Done done) {
  if (auto admitted = admitChange(call.caller.identity); !admitted) return call.fail(admitted.error());
  const std::string requestId(call.request->operator[]("Idempotency-Key"));
  auto shared = std::make_shared<Call>(std::move(call));
  shared->request = nullptr;  // not kept past the handler
  waitForChange(shared, requestId, std::move(start), std::move(done), std::chrono::steady_clock::now() + options_.changeTimeout);
}

void FmApiService::waitForChange(std::shared_ptr<Call> call, const std::string& requestId, Start start, Done done,
                                 std::chrono::steady_clock::time_point deadline) {
  auto first = [start, requestId, caller = call->caller](EngineCore& core) -> Result<Started> {
    if (!requestId.empty()) {
      SY_ASSIGN(auto prior, core.operationForRequest(caller, requestId));
      if (prior) return Started{std::move(*prior), {}, {}};
    }
    return start(core, requestId);
  };
  engine_.run<Started>(first, [this, call, requestId, start, done, deadline](Result<Started> started) {
    auto finish = [this, call] { endChange(call->caller.identity); };
    if (!started) {
      finish();
      return call->fail(started.error());
    }
    if (started->answer) {
      finish();
      return call->answer(http::status::ok, *started->answer);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const OperationId waitFor = started->operation ? started->operation->id : started->busyWith;
    if (left.count() <= 0) {
      finish();
      return call->fail(Error{Code::kDeadlineExceeded, fmt::format("{} is still running on the machine; ask again later", waitFor)});
    }
    const bool own = started->operation.has_value();
    (void)engine_.waitOperation(waitFor, left, [this, call, requestId, start, done, deadline, own, waitFor, finish](Result<Operation> op) {
      if (!op) {
        finish();
        return call->fail(op.error());
      }
      if (!op->finished()) {
        finish();
        return call->fail(Error{Code::kDeadlineExceeded, fmt::format("{} did not end within {} s; it goes on: read the machine to see how it ends",
                                                                     waitFor, options_.changeTimeout.count() / 1000)});
      }
      if (!own) return waitForChange(call, requestId, start, done, deadline);  // the machine is free again: now this request's turn
      finish();
      if (op->state == OperationState::kFailed)
        return call->fail(Error{Code::kFailedPrecondition, fmt::format("{} {} failed and was rolled back: {}", toString(op->kind), op->id, op->error)});
      const Inventory inventory(engine_.view(), shapeFacts_);
      const Host* host = inventory.machine(op->hostId);
      if (!host) return call->fail(Error{Code::kNotFound, fmt::format("the machine of {} is gone from the inventory", op->id)});
      call->answer(http::status::ok, done(inventory, *host, *op));
    });
  });
}

}  // namespace switchyard::cohdi
