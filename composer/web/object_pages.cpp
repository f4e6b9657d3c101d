// The console's pages per object (issue 63, item 1): a system (its devices, labels, lease, class, queue place,
// operations and events), a device (where it sits, whose it is, what changed it), an operation with its steps,
// and usage as `yardctl usage --by` adds it up (a tenant's page). What a caller may not see is "not found", as a
// missing object is: a tenant learns nothing of another tenant's systems or operations.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "composer/engine/usage_groups.h"
#include "composer/model/access.h"
#include "composer/model/queue.h"
#include "composer/web/api_json.h"
#include "composer/web/web_service.h"
#include "net/form_encoding.h"

namespace switchyard::web {

using nlohmann::json;

namespace {

constexpr std::size_t kEventsScanned = 2000;  // the newest events searched for an object's own
constexpr std::size_t kEventsShown = 25;
constexpr std::size_t kOperationsShown = 20;
constexpr std::size_t kOperationsScanned = 200;  // the newest operations searched for a device's

// The newest of the last kEventsScanned events that `keep` keeps and the caller may see, newest first.
template <typename Keep>
Result<json> eventsOf(const HistoryReads& history, const Caller& caller, Keep keep) {
  SY_ASSIGN(const auto events, history.recentEvents(kEventsScanned));
  json out = json::array();
  for (auto it = events.rbegin(); it != events.rend() && out.size() < kEventsShown; ++it)
    if (maySee(caller, it->tenant) && keep(*it)) out.push_back(eventJson(*it));
  return out;
}

std::string query(const std::string& text, const char* key) { return net::formValue(net::parseForm(text), key); }

}  // namespace

Result<WebService::ApiRead> WebService::systemPageApi(const Caller& caller, const std::string& name, const std::string&) {
  return ApiRead{nullptr, [this, caller, name](const HistoryReads& history) -> Result<json> {
    const auto view = engine_.view();
    if (!view) return fail(Code::kUnavailable, "yardd is starting: the pool is not loaded yet");
    auto system = engine_.getSystem(name);
    if ((!system && system.error().code == Code::kNotFound) || (system && !maySee(caller, system->tenant)))
      return fail(Code::kNotFound, fmt::format("no system '{}' now (a decomposed system is still named by its operations)", name));
    if (!system) return std::unexpected(system.error());
    json page = systemJson(*system);
    json devices = json::array();
    for (const auto& b : system->bindings)
      if (const DeviceView* d = view->device(b.deviceId)) {
        json j = deviceJson(*d, &*system, true);
        j["upstream_port_id"] = b.upstreamPortId;
        if (d->device.kind == DeviceKind::kCxlMemory) j["memory_gib"] = d->device.memoryGiB;
        if (d->device.speedGbps > 0) j["speed_gbps"] = d->device.speedGbps;
        devices.push_back(std::move(j));
      }
    page["devices"] = std::move(devices);
    page["pooled_memory_gib"] = view->pooledMemoryGiB(*system);
    SY_ASSIGN(const auto queue, engine_.listQueue());
    for (const auto& e : queue)
      if (e.systemId == system->id)
        page["queue"] = json{{"position", e.position}, {"length", queue.size()}, {"asks", describeShape(e.request)}, {"waiting_for", e.waitingFor},
                             {"deadline", e.request.deadline > 0 ? formatTimestamp(e.request.deadline) : ""}};
    SY_ASSIGN(const auto operations, history.listOperations(OperationQuery{.limit = kOperationsShown, .systemId = system->id}));
    json ops = json::array();
    for (const auto& op : operations) ops.push_back(operationJson(op));
    page["operations"] = std::move(ops);
    SY_ASSIGN(page["events"], eventsOf(history, caller, [&](const Event& e) { return e.systemId == system->id || e.subject == system->id; }));
    return page;
  }};
}

Result<WebService::ApiRead> WebService::devicePageApi(const Caller& caller, const std::string& id, const std::string&) {
  return ApiRead{nullptr, [this, caller, id](const HistoryReads& history) -> Result<json> {
    const auto view = engine_.view();
    if (!view) return fail(Code::kUnavailable, "yardd is starting: the pool is not loaded yet");
    const DeviceView* d = view->device(id);
    if (!d) return fail(Code::kNotFound, fmt::format("no device '{}' in the pool (the console's pool view lists them)", id));
    const auto system = d->systemId.empty() ? nullptr : view->systems.find(d->systemId);
    const bool visible = system && maySee(caller, system->tenant);
    json page = deviceJson(*d, system.get(), visible);
    if (d->device.memoryGiB > 0) page["memory_gib"] = d->device.memoryGiB;
    if (d->device.speedGbps > 0) page["speed_gbps"] = d->device.speedGbps;
    if (visible) page["system_tenant"] = system->tenant;
    // What bound, checked or let it go: the newest operations whose steps name it (of those the caller may see).
    SY_ASSIGN(const auto operations,
              history.listOperations(OperationQuery{.limit = kOperationsScanned, .tenant = caller.role == Role::kTenant ? caller.tenant : std::string()}));
    json ops = json::array();
    for (const auto& op : operations) {
      if (ops.size() >= kOperationsShown || !maySee(caller, op.tenant)) continue;
      const bool names = std::ranges::any_of(op.steps, [&](const Step& s) {
        return std::ranges::any_of(s.bindings, [&](const Binding& b) { return b.deviceId == id; });
      });
      if (names) ops.push_back(operationJson(op));
    }
    page["operations"] = std::move(ops);
    // Its own events (bound, online, quarantined, released, ...): a message's text is not searched, where sw0-gpu1
    // would also find sw0-gpu10.
    SY_ASSIGN(page["events"], eventsOf(history, caller, [&](const Event& e) { return e.subject == id; }));
    return page;
  }};
}

Result<WebService::ApiRead> WebService::operationPageApi(const Caller& caller, const std::string& id, const std::string&) {
  return ApiRead{nullptr, [this, caller, id](const HistoryReads& history) -> Result<json> {
    SY_ASSIGN(const auto op, history.getOperation(id));
    if (!op || !maySee(caller, op->tenant)) return fail(Code::kNotFound, fmt::format("no operation '{}' (the operations table lists the latest)", id));
    json page = operationJson(*op);
    const auto view = engine_.view();
    if (const auto live = view ? view->systems.find(op->systemId) : nullptr) {
      page["system_name"] = live->name;
    } else {
      SY_ASSIGN(const auto ended, history.systemIdentities({op->systemId}));
      if (auto it = ended.find(op->systemId); it != ended.end()) page["system_name"] = it->second.name;
      page["system_ended"] = true;
    }
    SY_ASSIGN(page["events"], eventsOf(history, caller, [&](const Event& e) { return e.subject == id; }));
    return page;
  }};
}

Result<WebService::ApiRead> WebService::usageApi(const Caller& caller, const std::string& text) {
  // ?by= as `yardctl usage --by` (default: system,model), ?since= and ?until= RFC 3339 or dates, ?tenant= one tenant's.
  const std::string byText = query(text, "by");
  SY_ASSIGN(const auto by, UsageGrouping::parse(byText.empty() ? "system,model" : byText));
  Timestamp since = 0, until = 0;
  for (auto [key, field] : {std::pair{"since", &since}, std::pair{"until", &until}}) {
    const std::string value = query(text, key);
    if (value.empty()) continue;
    const auto t = parseTimestamp(value);
    if (!t) return fail(Code::kInvalidArgument, fmt::format("{} '{}': an RFC 3339 UTC time such as 2026-11-01T00:00:00Z, or a date", key, value));
    *field = *t;
  }
  const std::string tenant = query(text, "tenant");
  return ApiRead{nullptr, [caller, by, since, until, tenant](const HistoryReads& history) -> Result<json> {
    SY_ASSIGN(auto report, history.usage(caller, since, until));
    if (!tenant.empty()) std::erase_if(report.rows, [&](const UsageRow& r) { return r.tenant != tenant; });
    json rows = json::array();
    for (const auto& g : groupUsage(report.rows, by)) rows.push_back(usageGroupJson(g));
    const UsageTotals total = totalUsage(report.rows);
    return json{{"since", formatTimestamp(report.since)},
                {"until", formatTimestamp(report.until)},
                {"history_from", report.historyFrom > 0 ? formatTimestamp(report.historyFrom) : std::string()},
                {"rows", std::move(rows)},
                {"total_gpu_hours", total.gpuSeconds / 3600.0},
                {"total_idle_gpu_hours", total.idleGpuSeconds / 3600.0},
                {"total_memory_gib_hours", total.memoryGiBSeconds / 3600.0},
                {"total_device_hours", total.deviceSeconds / 3600.0}};
  }};
}

}  // namespace switchyard::web
