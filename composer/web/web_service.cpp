#include "composer/web/web_service.h"

#include "net/form_encoding.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "net/event_feed.h"
#include "net/http_status.h"
#include "composer/metrics/exposition.h"
#include "composer/model/access.h"
#include "composer/model/contain.h"
#include "composer/model/queue.h"
#include "composer/web/pool_metrics.h"
#include "composer/web/api_json.h"
#include "composer/web/web_replies.h"

namespace switchyard::web {

namespace http = boost::beast::http;
using nlohmann::json;

namespace {

// A query parameter, decoded (net/form_encoding.h); empty when absent.
std::string queryValue(std::string_view query, std::string_view key) { return net::formValue(net::parseForm(query), std::string(key)); }

// A positive count named `key` in the query, or `fallback` when absent.
Result<std::size_t> countOf(std::string_view query, std::string_view key, std::size_t fallback) {
  const std::string text = queryValue(query, key);
  if (text.empty()) return fallback;
  std::size_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end != text.data() + text.size() || n == 0)
    return fail(Code::kInvalidArgument, fmt::format("{} '{}': expected a positive whole number", key, text));
  return n;
}

// The query's positive "limit", or `fallback`, at most `most`.
Result<std::size_t> limitOf(std::string_view query, std::size_t fallback, std::size_t most) {
  SY_ASSIGN(const std::size_t n, countOf(query, "limit", fallback));
  return std::min(n, most);
}

std::string isoTime(Timestamp at) { return formatTimestamp(at); }

// A MIG GPU's instances as the idle panel shows them: what runs in each and since when it idles.
json migInstancesJson(const IdleGpu& g, Timestamp now) {
  json out = json::array();
  for (const auto& i : g.instances) {
    const InstanceIdleState* s = g.instanceState(i.start);
    out.push_back(json{{"start", i.start},
                       {"profile", std::string(toString(i.profile))},
                       {"idle", s != nullptr && s->idle()},
                       {"idle_since", s != nullptr && s->idle() ? formatTimestamp(s->idleSince) : std::string()},
                       {"processes", s == nullptr ? 0 : s->processes.size()},
                       {"idle_gpu_hours", g.instanceIdleGpuHours(i, now)}});
  }
  return out;
}

}  // namespace

WebService::WebService(Engine& engine, const metrics::EngineMetrics* metrics, net::Authorize authorize, const CapacityHistory* history,
                       DeviceSeries deviceSeries, ConsoleOptions console)
    : engine_(engine, [this](std::function<void()> f) { boost::asio::post(replies_, std::move(f)); }),
      metrics_(metrics),
      authorize_(std::move(authorize)),
      console_(std::move(console)),
      ownClock_(console_.clock ? nullptr : std::make_unique<SystemClock>()),
      sessions_(std::make_unique<ConsoleSessions>(console_.clock ? *console_.clock : *ownClock_, console_.current)),
      history_(history),
      deviceSeries_(deviceSeries),
      capacity_(std::make_unique<CapacityCache>(engine, defaultShapes(), std::vector<MigProfile>(kMigProfiles.begin(), kMigProfiles.end()),
                                                kReportedShares)),
      dashboardCapacity_(std::make_unique<CapacityCache>(engine, defaultShapes(), std::vector<MigProfile>{}, std::vector<int>{})) {}

net::HttpResponse WebService::errorResponse(http::status status, const std::string& message) {
  return problem(status, message, 11, false);
}

WebService::Routes WebService::routeTable() {
  using Self = WebService;
  using Query = const std::string&;
  using Params = const net::RouteParams&;
  // A JSON read of the API: the query checked, then answered from the view or after one control-thread hop.
  auto api = [](Api which) {
    return Route{false, [which](Self& self, const Caller& caller, const net::HttpRequest& request, Params, Query query, net::Reply reply, const net::OpenStream&) {
      self.answerRead((self.*which)(caller, query), std::move(reply), request.version(), request.keep_alive());
    }};
  };
  // A read of one object (a system, a device, an operation), named by the path.
  auto objectApi = [](ObjectApi which) {
    return Route{false, [which](Self& self, const Caller& caller, const net::HttpRequest& request, Params params, Query query, net::Reply reply,
                                const net::OpenStream&) {
      self.answerRead((self.*which)(caller, params.at(0), query), std::move(reply), request.version(), request.keep_alive());
    }};
  };
  Routes t;
  t.route("/healthz").on("GET", {true, [](Self& self, const Caller&, const net::HttpRequest& request, Params, Query, net::Reply reply, const net::OpenStream&) {
    self.healthz(request, std::move(reply));
  }});
  t.route("/metrics").on("GET", {false, [](Self& self, const Caller& caller, const net::HttpRequest& request, Params, Query, net::Reply reply, const net::OpenStream&) {
    self.metricsPage(caller, std::move(reply), request.version(), request.keep_alive());
  }});
  t.route("/api/v1/events/stream").on("GET", {false, [](Self& self, const Caller& caller, const net::HttpRequest& request, Params, Query, net::Reply reply,
                                                        const net::OpenStream& openStream) { self.eventStream(caller, request, std::move(reply), openStream); }});
  t.route("/api/v1/pool").on("GET", api(&Self::poolApi));
  t.route("/api/v1/summary").on("GET", api(&Self::summaryApi));
  t.route("/api/v1/systems").on("GET", api(&Self::systemsApi));
  t.route("/api/v1/queue").on("GET", api(&Self::queueApi));
  t.route("/api/v1/idle").on("GET", api(&Self::idleApi));
  t.route("/api/v1/operations").on("GET", api(&Self::operationsApi));
  t.route("/api/v1/events").on("GET", api(&Self::eventsApi));
  t.route("/api/v1/capacity").on("GET", api(&Self::capacityApi));
  t.route("/api/v1/templates").on("GET", api(&Self::templatesApi));
  t.route("/api/v1/usage").on("GET", api(&Self::usageApi));
  t.route("/api/v1/systems/{system}").on("GET", objectApi(&Self::systemPageApi));
  t.route("/api/v1/devices/{device}").on("GET", objectApi(&Self::devicePageApi));
  t.route("/api/v1/operations/{operation}").on("GET", objectApi(&Self::operationPageApi));
  addConsoleRoutes(t);
  t.route("/api/{rest*}").on("GET", {false, [](Self&, const Caller&, const net::HttpRequest& request, Params, Query, net::Reply reply, const net::OpenStream&) {
    const std::string target(request.target());
    reply(problem(http::status::not_found,
                  fmt::format("no API {}; there are /api/v1/summary, /api/v1/pool, /api/v1/systems, /api/v1/queue, /api/v1/idle, /api/v1/operations, "
                              "/api/v1/events, /api/v1/events/stream, /api/v1/capacity, /api/v1/templates, /api/v1/usage, /api/v1/session, and one "
                              "system, device or operation at /api/v1/systems/NAME, /api/v1/devices/ID, /api/v1/operations/ID",
                              target.substr(0, target.find('?'))),
                  request.version(), request.keep_alive()));
  }});
  // The console: "/" is index.html; its other files by name. Open: they hold no data (the page asks for its data,
  // and shows its login form when it may not have it).
  auto page = Route{true, [](Self&, const Caller&, const net::HttpRequest& request, Params, Query, net::Reply reply, const net::OpenStream&) {
    const std::string target(request.target());
    const std::string path = target.substr(0, target.find('?'));
    if (const Asset* asset = dashboardAsset(path))
      return reply(respond(http::status::ok, asset->contentType, std::string(asset->body), request.version(), request.keep_alive()));
    reply(problem(http::status::not_found, fmt::format("no page {}; try / (the dashboard), /metrics or /api/v1/pool", path), request.version(),
                  request.keep_alive()));
  }};
  t.route("/").on("GET", page);
  t.route("/{file*}").on("GET", page);
  return t;
}

void WebService::handle(const net::HttpRequest& request, net::Reply reply, const net::OpenStream& openStream, const std::string& peer) {
  const unsigned version = request.version();
  const bool keepAlive = request.keep_alive();
  const std::string target(request.target());
  const auto q = target.find('?');
  const std::string path = target.substr(0, q);
  const std::string query = q == std::string::npos ? std::string{} : target.substr(q + 1);

  auto found = routes_.find(path, std::string(request.method_string()));
  if (!found) {
    if (!found.error().resourceExists) return reply(problem(http::status::not_found, fmt::format("no page {}", path), version, keepAlive));
    auto res = problem(http::status::method_not_allowed,
                       fmt::format("{} is not allowed on {} (it allows {})", std::string(request.method_string()), path, found.error().allow),
                       version, keepAlive);
    res.set(http::field::allow, found.error().allow);
    return reply(std::move(res));
  }
  const Route& route = *found->entry;
  if (route.change) return authorizeChange(route, request, found->params, peer, std::move(reply));
  if (route.anonymous) return route.anonymous(*this, request, peer, std::move(reply));
  if (route.open || !authorize_) return route.handle(*this, Caller::local(), request, found->params, query, std::move(reply), openStream);
  // A password check (Basic auth) may run on another thread (the accounts' own); the request stays valid until answered.
  auto then = [this, &route, &request, params = found->params, query, reply = std::move(reply), openStream](std::optional<Caller> who) mutable {
    if (!who) {
      auto res = problem(http::status::unauthorized,
                         "authenticate with HTTP Basic (an identity's password), a bearer token from the identities file, or the console's "
                         "login (POST /api/v1/login)",
                         request.version(), request.keep_alive());
      // The console's own requests get no Basic challenge: a browser would answer it with its password dialog.
      if (request.find("X-Switchyard-Console") == request.end()) res.set(http::field::www_authenticate, "Basic realm=\"switchyard\", charset=\"UTF-8\"");
      return reply(std::move(res));
    }
    route.handle(*this, *who, request, params, query, std::move(reply), openStream);
  };
  const auto header = request.find(http::field::authorization);
  if (header != request.end()) return authorize_(std::string(header->value()), peer, std::move(then));
  // The console's session cookie, for reads (a change needs its CSRF token too: authorizeChange).
  if (const auto cookie = request.find(http::field::cookie); cookie != request.end())
    if (auto session = sessions_->find(cookieValue(std::string(cookie->value()), kSessionCookie))) return then(session->caller);
  then(std::nullopt);
}

void WebService::healthz(const net::HttpRequest& request, net::Reply reply) {
  if (const std::string failure = engine_.storeFailure(); !failure.empty())
    return reply(respond(http::status::service_unavailable, "text/plain; charset=utf-8",
                         fmt::format("not serving: yardd has halted: {}\n", failure), request.version(), request.keep_alive()));
  reply(respond(http::status::ok, "text/plain; charset=utf-8", "ok\n", request.version(), request.keep_alive()));
}

void WebService::answerRead(Result<ApiRead> prepared, net::Reply reply, unsigned version, bool keepAlive) {
  if (!prepared) return reply(problem(net::httpStatusOf(prepared.error().code), prepared.error().message, version, keepAlive));
  auto answer = [reply = std::move(reply), version, keepAlive](Result<json> body) {
    if (!body) return reply(problem(net::httpStatusOf(body.error().code), body.error().message, version, keepAlive));
    reply(respond(http::status::ok, "application/json", body->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", version, keepAlive));
  };
  // A read that throws answers 500 (the HTTP server would too; this covers the engine's reply thread as well).
  auto contained = [answer](const std::function<Result<json>()>& read) {
    std::optional<Result<json>> body;
    runContained([&] { body.emplace(read()); }, [&](const std::string& what) {
      spdlog::error("an operator API read failed: {}", what);
      body.emplace(fail(Code::kInternal, "yardd failed to answer this request; the failure is in its log"));
    });
    answer(std::move(*body));
  };
  if (prepared->fromView) return contained(prepared->fromView);
  engine_.read<json>(std::move(prepared->fromHistory), [contained](Result<json> body) {
    contained([&] { return std::move(body); });
  });
}

void WebService::eventStream(const Caller& caller, const net::HttpRequest& request, net::Reply reply, const net::OpenStream& openStream) {
  const unsigned version = request.version();
  if (request.method() == http::verb::head) {  // what a GET would start, without starting it (as Redfish's SSE)
    auto res = respond(http::status::ok, "text/event-stream", "", version, request.keep_alive());
    return reply(std::move(res));
  }
  if (request.method() != http::verb::get || !openStream) {
    auto res = problem(http::status::method_not_allowed, "/api/v1/events/stream is a stream of server-sent events: GET it", version, false);
    res.set(http::field::allow, "GET, HEAD");
    return reply(std::move(res));
  }
  const auto header = request.find("Last-Event-ID");
  auto last = net::lastEventId(header == request.end() ? std::string_view{} : std::string_view(header->value()));
  if (!last) return reply(problem(http::status::bad_request, last.error().message, version, false));
  engine_.subscribeAfter(*last, [caller, version, reply = std::move(reply), openStream](Result<EventSubscription> subscription) {
    if (!subscription) return reply(problem(net::httpStatusOf(subscription.error().code), subscription.error().message, version, false));
    // The dashboard redraws when something happens instead of polling; a tenant hears its own events and the pool's.
    auto writer = openStream("HTTP/1.1 200 OK\r\nServer: yardd\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n");
    // Each event's data is the JSON /api/v1/events lists (invalid UTF-8 replaced, never thrown).
    net::EventFeed(std::move(subscription->live), std::move(subscription->replay), subscription->lastSeen)
        .pipeTo(writer, caller, [](const Event& e) { return eventJson(e).dump(-1, ' ', false, json::error_handler_t::replace); });
  });
}

void WebService::metricsPage(const Caller& caller, net::Reply reply, unsigned version, bool keepAlive) {
  // The pool's gauges show every device and system; a tenant's view is the API's, not this one.
  if (caller.role == Role::kTenant) {
    reply(problem(http::status::forbidden, fmt::format("'{}' is a tenant: /metrics shows the whole pool and needs viewer, operator or admin", caller.identity),
                  version, keepAlive));
    return;
  }
  // On this HTTP thread, from the engine's published view: a scrape never holds the control thread.
  metrics::ExpositionWriter out;
  if (auto r = writePoolMetrics(engine_, out, deviceSeriesCache_.get(), capacity_.get(), deviceSeries_); !r) return reply(problem(net::httpStatusOf(r.error().code), r.error().message, version, keepAlive));
  if (metrics_) metrics_->registry.write(out);
  reply(respond(http::status::ok, metrics::kContentType, out.take(), version, keepAlive));
}

Result<WebService::ApiRead> WebService::poolApi(const Caller& caller, const std::string& query) {
  // ?switches=N&hosts=N list only the first N of each (a dashboard at scale); the counts say how many there are.
  auto switchLimit = countOf(query, "switches", std::numeric_limits<std::size_t>::max());
  auto hostLimit = countOf(query, "hosts", std::numeric_limits<std::size_t>::max());
  if (!switchLimit || !hostLimit)
    return fail(Code::kInvalidArgument, (switchLimit ? hostLimit.error() : switchLimit.error()).message);
  return ApiRead{[this, caller, switchLimit = *switchLimit, hostLimit = *hostLimit]() -> Result<json> {
    const auto view = engine_.view();
    if (!view) return fail(Code::kUnavailable, "yardd is starting: the pool is not loaded yet");
    const auto& topology = view->shape->topology;
    auto systemJsonOf = [&](const SystemId& id) -> std::pair<std::shared_ptr<const System>, bool> {
      if (id.empty()) return {nullptr, false};
      auto s = view->systems.find(id);
      return {s, s && maySee(caller, s->tenant)};
    };
    json switches = json::array();
    for (std::size_t i = 0; i < topology.switches.size() && i < switchLimit; ++i) {
      const auto& sw = topology.switches[i];
      json members = json::array();
      std::vector<std::size_t> positions;
      if (auto it = view->shape->devicesOfSwitch.find(sw.id); it != view->shape->devicesOfSwitch.end()) positions = it->second;
      // As the switch lists them (gpu0, gpu1, ..., gpu10), not in id order (gpu0, gpu1, gpu10, ...).
      std::sort(positions.begin(), positions.end(),
                [&](std::size_t a, std::size_t b) { return view->shape->topologyIndex[a] < view->shape->topologyIndex[b]; });
      for (std::size_t pos : positions) {
        const DeviceView& d = view->devices[pos];
        auto [s, visible] = systemJsonOf(d.systemId);
        members.push_back(deviceJson(d, s.get(), visible));
      }
      switches.push_back(json{{"id", sw.id}, {"kind", toString(sw.kind)}, {"model", sw.model}, {"domain", sw.domain}, {"devices", std::move(members)}});
    }
    SY_ASSIGN(const auto hosts, engine_.listHosts());
    json hostList = json::array();
    for (std::size_t i = 0; i < hosts.size() && i < hostLimit; ++i) {
      const auto& h = hosts[i];
      auto [s, visible] = systemJsonOf(h.systemId);
      hostList.push_back(json{{"id", h.host.id},
                              {"upstream_switches", h.upstreamSwitches},
                              {"system", !s ? "" : visible ? s->name : "(another tenant)"},
                              {"attached_devices", h.attachedDevices},
                              {"max_devices", h.host.maxDevices},
                              {"policy", toString(h.policy)},
                              {"host_side", h.hostSide}});
    }
    return json{{"switches", std::move(switches)}, {"hosts", std::move(hostList)}, {"switch_count", topology.switches.size()},
                {"host_count", hosts.size()}, {"version", view->version}};
  }, nullptr};
}

Result<WebService::ApiRead> WebService::summaryApi(const Caller&, const std::string&) {
  // The pool in a few hundred bytes whatever its size: what the dashboard's cards show.
  return ApiRead{[this]() -> Result<json> {
    const auto view = engine_.view();
    if (!view) return fail(Code::kUnavailable, "yardd is starting: the pool is not loaded yet");
    std::map<std::string, std::map<std::string, int>> byModel;  // model -> state -> GPUs
    std::map<std::string, int> gpus;
    std::map<std::string, std::map<std::string, int>> others;  // kind -> state -> drives, NICs, memory devices
    int critical = 0;
    view->devices.forEach([&](const DeviceView& d) {
      if (d.device.kind != DeviceKind::kGpu) {
        auto& counts = others[std::string(kindName(d.device))];
        ++counts["total"], ++counts[std::string(toString(d.assignment.allocation))];
        return;
      }
      const std::string state(toString(d.assignment.allocation));
      ++gpus["total"], ++gpus[state];
      ++byModel[d.device.model]["total"], ++byModel[d.device.model][state];
      if (d.device.health == DeviceHealth::kCritical) ++critical;
    });
    gpus["critical"] = critical;
    json models = json::array();
    for (auto& [model, counts] : byModel) {
      json m{{"model", model}};
      for (const auto& [state, n] : counts) m[state] = n;
      models.push_back(std::move(m));
    }
    int hostsWithSystem = 0;
    view->hosts.forEach([&](const HostSlot& h) { hostsWithSystem += h.systemId.empty() ? 0 : 1; });
    return json{{"version", view->version},
                {"devices", view->devices.size()},
                {"gpus", gpus},
                {"models", std::move(models)},
                {"other_devices", others},
                {"switches", view->shape->topology.switches.size()},
                {"hosts", {{"total", view->hosts.size()}, {"with_system", hostsWithSystem}}},
                {"systems", view->systems.size()},
                {"running_operations", view->runningOperations}};
  }, nullptr};
}

Result<WebService::ApiRead> WebService::systemsApi(const Caller& caller, const std::string& query) {
  auto limit = countOf(query, "limit", std::numeric_limits<std::size_t>::max());
  if (!limit) return fail(Code::kInvalidArgument, limit.error().message);
  return ApiRead{[this, caller, limit = *limit]() -> Result<json> {
    SY_ASSIGN(const auto systems, engine_.listSystems());
    json out = json::array();
    for (const auto& s : systems)
      if (maySee(caller, s.tenant) && out.size() < limit) out.push_back(systemJson(s));
    return out;
  }, nullptr};
}

Result<WebService::ApiRead> WebService::queueApi(const Caller& caller, const std::string& query) {
  // The queue in admission order (a tenant sees its own requests, with their positions in the whole queue).
  auto limit = countOf(query, "limit", std::numeric_limits<std::size_t>::max());
  if (!limit) return fail(Code::kInvalidArgument, limit.error().message);
  return ApiRead{[this, caller, limit = *limit]() -> Result<json> {
    SY_ASSIGN(const auto queue, engine_.listQueue());
    json entries = json::array();
    for (const auto& e : queue)
      if (maySee(caller, e.tenant) && entries.size() < limit)
        entries.push_back(json{{"position", e.position},
                               {"operation", e.operationId},
                               {"system", e.systemId},
                               {"name", e.name},
                               {"tenant", e.tenant},
                               {"requested_by", e.requestedBy},
                               {"class", e.request.priorityClass},
                               {"priority", e.request.priority},
                               {"asks", describeShape(e.request)},
                               {"enqueued_at", formatTimestamp(e.request.enqueuedAt)},
                               {"deadline", e.request.deadline > 0 ? formatTimestamp(e.request.deadline) : ""},
                               {"lease_seconds", e.request.leaseSeconds},
                               {"waiting_for", e.waitingFor}});
    return json{{"length", queue.size()}, {"entries", std::move(entries)}};
  }, nullptr};
}

Result<WebService::ApiRead> WebService::idleApi(const Caller& caller, const std::string& query) {
  // Attached GPUs idle at least ?for=DURATION (default 0s: every idle one), longest first (`yardctl idle`).
  auto limit = countOf(query, "limit", std::numeric_limits<std::size_t>::max());
  if (!limit) return fail(Code::kInvalidArgument, limit.error().message);
  std::chrono::milliseconds minIdle{0};
  if (const std::string text = queryValue(query, "for"); !text.empty() && text != "0") {
    const auto d = parseDuration(text);
    if (!d) return fail(Code::kInvalidArgument, fmt::format("for '{}': expected a duration such as 30m", text));
    minIdle = *d;
  }
  return ApiRead{[this, caller, limit = *limit, minIdle]() -> Result<json> {
    SY_ASSIGN(const auto gpus, engine_.idleGpus(caller, std::chrono::duration_cast<Duration>(minIdle)));
    const Timestamp now = engine_.now();
    json out = json::array();
    double hours = 0;
    for (const auto& g : gpus) {
      const double idleHours = g.idleGpuHours(now);
      hours += idleHours;
      if (out.size() >= limit) continue;
      out.push_back(json{{"device", g.gpu.deviceId},
                         {"model", g.model},
                         {"system", g.systemId},
                         {"name", g.systemName},
                         {"tenant", g.tenant},
                         {"host", g.hostId},
                         {"idle_since", formatTimestamp(now - g.idleFor(now).count())},  // a MIG GPU's: its longest idle instance's
                         {"idle_gpu_hours", idleHours},
                         {"utilization_percent", g.gpu.utilizationPercent},
                         {"reclaim", describe(g.reclaim)},
                         {"reclaim_blocked", g.reclaimBlocked},
                         {"share", g.shareMilli / 1000.0},
                         {"mig_instances", migInstancesJson(g, now)}});
    }
    return json{{"count", gpus.size()}, {"idle_gpu_hours", hours}, {"gpus", std::move(out)}};
  }, nullptr};
}

Result<WebService::ApiRead> WebService::operationsApi(const Caller& caller, const std::string& query) {
  auto limit = limitOf(query, 20, 500);
  if (!limit) return fail(Code::kInvalidArgument, limit.error().message);
  return ApiRead{nullptr, [this, caller, limit = *limit](const HistoryReads& history) -> Result<json> {
    // The store reads only what is shown (a tenant's own, as gRPC's ListOperations).
    SY_ASSIGN(const auto operations,
              history.listOperations(OperationQuery{.limit = limit, .tenant = caller.role == Role::kTenant ? caller.tenant : std::string()}));
    // Each names its system: a live one from the view, one that ended (decomposed) from the store's history.
    const auto view = engine_.view();
    std::map<SystemId, std::string> names;
    std::set<SystemId> ended;
    for (const auto& op : operations) {
      if (const auto live = view ? view->systems.find(op.systemId) : nullptr) names[op.systemId] = live->name;
      else ended.insert(op.systemId);
    }
    if (!ended.empty()) {
      SY_ASSIGN(auto stored, history.systemIdentities(ended));
      for (auto& [id, identity] : stored) names.emplace(id, std::move(identity.name));
    }
    json out = json::array();
    for (const auto& op : operations)
      if (maySee(caller, op.tenant) && out.size() < limit) {
        json j = operationJson(op);
        if (auto it = names.find(op.systemId); it != names.end()) j["system_name"] = it->second;
        out.push_back(std::move(j));
      }
    return out;
  }};
}

Result<WebService::ApiRead> WebService::eventsApi(const Caller& caller, const std::string& query) {
  auto limit = limitOf(query, 50, 1000);
  if (!limit) return fail(Code::kInvalidArgument, limit.error().message);
  return ApiRead{nullptr, [this, caller, limit = *limit](const HistoryReads& history) -> Result<json> {
    // The newest events; a tenant's may be sparse among them, so for a tenant the last 2,000 are read and
    // the last `limit` it may see kept.
    SY_ASSIGN(auto events, history.recentEvents(caller.role == Role::kTenant ? std::max<std::size_t>(limit, 2000) : limit));
    json out = json::array();
    for (auto it = events.rbegin(); it != events.rend() && out.size() < limit; ++it)
      if (maySee(caller, it->tenant))
        out.push_back(eventJson(*it));
    return out;
  }};
}

Result<WebService::ApiRead> WebService::capacityApi(const Caller&, const std::string&) {
  return ApiRead{[this]() -> Result<json> {
    SY_ASSIGN(const auto cached, dashboardCapacity_->get());
    const CapacityReport& now = cached->report;
    json shapes = json::array();
    for (const auto& c : now.shapes) shapes.push_back(json{{"gpus", c.shape.gpus}, {"placeable", c.placeable}});
    json history = json::array();
    if (history_)
      for (const auto& s : history_->samples()) {
        json placeable = json::object();
        for (const auto& [gpus, n] : s.placeable) placeable[std::to_string(gpus)] = n;
        history.push_back(json{{"at", isoTime(s.at)}, {"free_gpus", s.freeGpus}, {"stranded_gpus", s.strandedGpus}, {"placeable", std::move(placeable)}});
      }
    json domains = json::array();
    for (const auto& d : now.domains) {
      json placeable = json::array();
      for (const auto& c : d.shapes) placeable.push_back(json{{"gpus", c.shape.gpus}, {"placeable", c.placeable}});
      domains.push_back(json{{"domain", d.domain}, {"free_gpus", d.freeGpus}, {"stranded_gpus", d.strandedGpus}, {"shapes", std::move(placeable)}});
    }
    json memory = json::array();  // pooled memory under each switch that has some
    for (const auto& m : now.pooledMemory)
      memory.push_back(json{{"switch", m.switchId}, {"domain", m.domain}, {"free_gib", m.freeGiB}, {"free_devices", m.freeDevices},
                            {"total_gib", m.totalGiB}, {"total_devices", m.totalDevices}});
    return json{{"free_gpus", now.freeGpus}, {"stranded_gpus", now.strandedGpus}, {"shapes", std::move(shapes)}, {"domains", std::move(domains)},
                {"pooled_memory", std::move(memory)}, {"free_pooled_memory_gib", now.freePooledMemoryGiB},
                {"history", std::move(history)},
                {"sample_seconds", history_ ? static_cast<double>(history_->interval().count()) / 1000.0 : 0.0}};
  }, nullptr};
}

Result<WebService::ApiRead> WebService::templatesApi(const Caller&, const std::string&) {
  return ApiRead{[this]() -> Result<json> {
    SY_ASSIGN(const auto cached, dashboardCapacity_->get());
    std::map<std::string, int> fits;
    for (const auto& n : cached->report.named) fits[n.name] = n.fits;
    json out = json::array();
    for (const auto& t : engine_.templates())
      out.push_back(json{{"name", t.name}, {"description", t.description}, {"asks", describeShape(t)}, {"gpus", t.gpus},
                         {"fits", fits.contains(t.name) ? json(fits[t.name]) : json(nullptr)}});
    return json{{"templates", std::move(out)}};
  }, nullptr};
}

}  // namespace switchyard::web
