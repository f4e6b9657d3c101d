#include "inventory/queued_codec.h"

#include <fmt/format.h>

namespace switchyard {

namespace {

// The name and labels a preempted system is queued again under (QueuedRequest::requeueAs).
nlohmann::json requeueToJson(const QueuedRequest::RequeueAs& r) { return {{"name", r.name}, {"labels", r.labels}}; }

}  // namespace

nlohmann::json queuedToJson(const QueuedRequest& q) {
  nlohmann::json instances = nlohmann::json::array();
  for (MigProfile p : q.gpuInstances) instances.push_back(std::string(toString(p)));
  nlohmann::json endpoints = nlohmann::json::array();
  for (const auto& e : q.endpoints)
    endpoints.push_back({{"kind", kindName(e)}, {"count", e.count}, {"model", e.model}, {"minCapacityGiB", e.minCapacityGiB}, {"minSpeedGbps", e.minSpeedGbps},
                         {"affinity", toString(e.affinity)}});
  nlohmann::json j{{"gpus", q.gpuCount},
                        {"endpoints", endpoints},
                        {"model", q.model},
                        {"minMemoryGiB", q.minMemoryGiB},
                        {"pooledMemoryGiB", q.pooledMemoryGiB},
                        {"p2p", q.peerToPeer},
                        {"host", q.host},
                        {"devices", q.devices},
                        {"instances", instances},
                        {"migCapable", q.migCapable},
                        {"shareMilli", q.gpuShareMilli},
                        {"class", q.priorityClass},
                        {"priority", q.priority},
                        {"enqueuedAt", q.enqueuedAt},
                        {"deadline", q.deadline},
                        {"leaseSeconds", q.leaseSeconds}};
  if (q.requeueAs) j["requeueAs"] = requeueToJson(*q.requeueAs);
  return j;
}

Result<QueuedRequest> queuedFromJson(const nlohmann::json& j, std::string_view what) {
  try {
    QueuedRequest q;
    q.gpuCount = j.at("gpus").get<int>();
    q.model = j.value("model", "");
    q.minMemoryGiB = j.value("minMemoryGiB", 0);
    q.pooledMemoryGiB = j.value("pooledMemoryGiB", 0);
    q.peerToPeer = j.value("p2p", "preferred");
    q.host = j.value("host", "");
    q.devices = j.value("devices", std::vector<std::string>{});
    for (const auto& p : j.value("instances", nlohmann::json::array())) {
      auto profile = parseMigProfile(p.get<std::string>());
      if (!profile) return fail(Code::kInternal, fmt::format("{}: unknown MIG profile {}", what, p.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
      q.gpuInstances.push_back(*profile);
    }
    for (const auto& e : j.value("endpoints", nlohmann::json::array())) {
      const auto kind = parseKindName(e.at("kind").get<std::string>());
      const auto affinity = parseAffinity(e.value("affinity", ""));
      if (!kind || !affinity) return fail(Code::kInternal, fmt::format("{}: unknown endpoint kind or affinity in {}", what, e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
      q.endpoints.push_back(
          {kind->kind, e.at("count").get<int>(), e.value("model", ""), e.value("minCapacityGiB", 0), *affinity, e.value("minSpeedGbps", 0), kind->deviceClass});
    }
    q.migCapable = j.value("migCapable", false);
    q.gpuShareMilli = j.value("shareMilli", 0);
    q.priorityClass = j.value("class", std::string(kDefaultPriorityClass));
    q.priority = j.value("priority", 100);
    q.enqueuedAt = j.value("enqueuedAt", Timestamp{0});
    q.deadline = j.value("deadline", Timestamp{0});
    q.leaseSeconds = j.value("leaseSeconds", std::int64_t{0});
    if (const auto r = j.find("requeueAs"); r != j.end())
      q.requeueAs = QueuedRequest::RequeueAs{r->at("name").get<std::string>(), r->value("labels", std::map<std::string, std::string>{})};
    return q;
  } catch (const nlohmann::json::exception& e) {
    return fail(Code::kInternal, fmt::format("{}: the queued request is damaged ({})", what, e.what()));
  }
}

}  // namespace switchyard
