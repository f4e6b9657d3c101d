// yardd's operator HTTP endpoint (--metrics-listen): Prometheus metrics at /metrics, the read-only
// dashboard at / (static files built into the binary; no CDN) and the JSON it draws from at /api/v1/*.
// An adapter over the engine like the gRPC and Redfish ones: pool reads (/metrics, /api/v1/pool, systems,
// capacity) answer on the HTTP thread from the engine's published view; operations and events take one
// hop to the control thread. /api/v1/events/stream pushes each event as it happens (server-sent events),
// so the dashboard redraws on change instead of polling.
//
// With identities configured, every path but /healthz, the console's own files and its login needs credentials
// (HTTP Basic, a bearer token as Prometheus' `authorization` sends it, or the console's session cookie); a tenant
// sees only its own systems, operations and events.
//
// The console acts (issue 63, item 1; console_actions.cpp): compose, decompose, attach, detach, renew a lease,
// cancel a queued request, release a quarantined device, each the engine's own call with the caller's role and
// tenant (the same authorization as gRPC's). A change is accepted with a bearer token, or with the session
// cookie plus the session's CSRF token in X-CSRF-Token; never with HTTP Basic alone, which browsers send by
// themselves.
#pragma once

#include <memory>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <nlohmann/json.hpp>

#include "net/authorize.h"
#include "net/http_server.h"
#include "net/route_table.h"
#include "composer/engine/engine_client.h"
#include "composer/metrics/engine_metrics.h"
#include "composer/web/capacity_history.h"
#include "composer/web/console_sessions.h"
#include "composer/web/pool_metrics.h"

namespace switchyard::web {

// What the console's logins need (console_sessions.h).
struct ConsoleOptions {
  net::Login login;           // checks a name and password; empty: no identities, nobody logs in
  net::CurrentCaller current; // a session's identity as it is now (console_sessions.h)
  bool secureCookie = false;  // the endpoint serves TLS: the session cookie is Secure
  Clock* clock = nullptr;     // when sessions expire; null: the system clock
};

class WebService {
 public:
  // `metrics` and `history` may be null, `authorize` empty: no counters, no capacity history, no authentication.
  // yardd authorizes through the Redfish service's accounts (the identities file: Basic, bearer, sessions).
  // `deviceSeries`: whether /metrics writes one series per device (pool_metrics.h).
  WebService(Engine& engine, const metrics::EngineMetrics* metrics, net::Authorize authorize, const CapacityHistory* history,
             DeviceSeries deviceSeries = DeviceSeries::kAuto, ConsoleOptions console = {});
  ~WebService() { replies_.join(); }
  WebService(const WebService&) = delete;
  WebService& operator=(const WebService&) = delete;

  // `openStream` serves /api/v1/events/stream (server-sent events); without one that path answers 405.
  // `peer`: the client's address (password lockouts count by it too).
  void handle(const net::HttpRequest& request, net::Reply reply, const net::OpenStream& openStream = {}, const std::string& peer = {});
  // The console's session cookie (console_sessions.h).
  static constexpr std::string_view kSessionCookie = "yard_session";
  // What the HTTP server answers itself on this port (net::HttpServerOptions::errorResponse): this endpoint's JSON error.
  [[nodiscard]] static net::HttpResponse errorResponse(boost::beast::http::status status, const std::string& message);

 private:
  // What a route serves: whether it needs credentials, and what handles it once the caller is known.
  struct Route {
    bool open = false;  // answered without credentials (/healthz)
    // A read: the caller, once proven; the path's captured segments and the query.
    std::function<void(WebService&, const Caller&, const net::HttpRequest&, const net::RouteParams&, const std::string& query, net::Reply,
                       const net::OpenStream&)>
        handle;
    // A change (console_actions.cpp): the path's captured segments and the caller, once proven with a bearer token
    // or a session cookie and its CSRF token. Set instead of `handle`.
    std::function<void(WebService&, const Caller&, const net::HttpRequest&, const net::RouteParams&, net::Reply)> change;
    // Answered before any credentials, with the client's address (the console's login). Set instead of `handle`.
    std::function<void(WebService&, const net::HttpRequest&, const std::string& peer, net::Reply)> anonymous;
  };
  using Routes = net::RouteTable<Route>;
  // Every path the endpoint serves, its reads and the console's changes (console_actions.cpp): 405 and Allow follow from it.
  [[nodiscard]] static Routes routeTable();
  // A JSON read of /api/v1/*: the query checked (kInvalidArgument: 400) and what builds the answer: on this
  // thread from the published view, or (operations, events) on the control thread, answered on replies_.
  struct ApiRead {
    std::function<Result<nlohmann::json>()> fromView;
    std::function<Result<nlohmann::json>(const HistoryReads&)> fromHistory;  // on the engine's read pool
  };
  using Api = Result<ApiRead> (WebService::*)(const Caller& caller, const std::string& query);
  using ObjectApi = Result<ApiRead> (WebService::*)(const Caller& caller, const std::string& name, const std::string& query);
  void answerRead(Result<ApiRead> prepared, net::Reply reply, unsigned version, bool keepAlive);
  [[nodiscard]] Result<ApiRead> poolApi(const Caller& caller, const std::string& query);
  [[nodiscard]] Result<ApiRead> summaryApi(const Caller& caller, const std::string& query);
  [[nodiscard]] Result<ApiRead> systemsApi(const Caller& caller, const std::string& query);
  [[nodiscard]] Result<ApiRead> queueApi(const Caller& caller, const std::string& query);
  [[nodiscard]] Result<ApiRead> idleApi(const Caller& caller, const std::string& query);
  [[nodiscard]] Result<ApiRead> operationsApi(const Caller& caller, const std::string& query);
  [[nodiscard]] Result<ApiRead> eventsApi(const Caller& caller, const std::string& query);
  [[nodiscard]] Result<ApiRead> capacityApi(const Caller& caller, const std::string& query);
  // The machine templates a compose may start from, what each asks for, and how many fit now.
  [[nodiscard]] Result<ApiRead> templatesApi(const Caller& caller, const std::string& query);
  // The console's pages per object (object_pages.cpp): a system with its devices, operations and events; a device
  // with its system and history; an operation with its steps; usage (a tenant's page) grouped as `yardctl usage --by`.
  [[nodiscard]] Result<ApiRead> systemPageApi(const Caller& caller, const std::string& system, const std::string& query);
  [[nodiscard]] Result<ApiRead> devicePageApi(const Caller& caller, const std::string& device, const std::string& query);
  [[nodiscard]] Result<ApiRead> operationPageApi(const Caller& caller, const std::string& operation, const std::string& query);
  [[nodiscard]] Result<ApiRead> usageApi(const Caller& caller, const std::string& query);
  void healthz(const net::HttpRequest& request, net::Reply reply);
  // The console (console_actions.cpp): who is logged in, logging in and out, and the changes.
  void session(const Caller& caller, const net::HttpRequest& request, net::Reply reply);
  void login(const net::HttpRequest& request, const std::string& peer, net::Reply reply);
  void logout(const net::HttpRequest& request, net::Reply reply);
  void authorizeChange(const Route& route, const net::HttpRequest& request, const net::RouteParams& params, const std::string& peer, net::Reply reply);
  static void addConsoleRoutes(Routes& t);
  void eventStream(const Caller& caller, const net::HttpRequest& request, net::Reply reply, const net::OpenStream& openStream);
  void metricsPage(const Caller& caller, net::Reply reply, unsigned version, bool keepAlive);

  const Routes routes_ = routeTable();
  boost::asio::thread_pool replies_{1};  // where the engine's answers are turned into JSON text and sent
  EngineClient engine_;
  const metrics::EngineMetrics* metrics_;
  net::Authorize authorize_;
  ConsoleOptions console_;
  std::unique_ptr<Clock> ownClock_;  // console_.clock when none was given
  std::unique_ptr<ConsoleSessions> sessions_;
  const CapacityHistory* history_;
  DeviceSeries deviceSeries_;
  std::unique_ptr<DeviceSeriesCache> deviceSeriesCache_ = std::make_unique<DeviceSeriesCache>();  // per-device lines, by view chunk
  std::unique_ptr<CapacityCache> capacity_;           // what /metrics reports
  std::unique_ptr<CapacityCache> dashboardCapacity_;  // what /api/v1/capacity reports
};

// A static file of the dashboard, by request path ("/" is index.html); null when there is none.
struct Asset {
  std::string_view contentType;
  std::string_view body;
};
[[nodiscard]] const Asset* dashboardAsset(std::string_view path);

}  // namespace switchyard::web
