#include "composer/web/api_json.h"

namespace switchyard::web {

using nlohmann::json;

json deviceJson(const DeviceView& d, const System* system, bool visible) {
  json j{{"id", d.device.id},
         {"kind", kindName(d.device)},
         {"model", d.device.model},
         {"health", toString(d.device.health)},
         {"state", toString(d.assignment.allocation)},
         {"switch", d.switchId},
         {"host", d.hostId}};
  if (system) {
    j["system"] = visible ? system->name : "(another tenant)";
    if (visible)
      for (const auto& h : system->hostDevices)
        if (h.deviceId == d.device.id) j["uuid"] = h.uuid, j["host_pci_address"] = h.pciAddress;
  }
  return j;
}

json systemJson(const System& s) {
  json instances = json::array(), shares = json::array();
  for (const auto& i : s.gpuInstances) instances.push_back(json{{"device", i.deviceId}, {"profile", toString(i.profile)}, {"start", i.start}});
  for (const auto& sh : s.gpuShares) shares.push_back(json{{"device", sh.deviceId}, {"percent", sh.milli / 10.0}});
  json devices = json::array();
  for (const auto& b : s.bindings) {
    json d{{"id", b.deviceId}, {"upstream_port_id", b.upstreamPortId}};
    for (const auto& h : s.hostDevices)
      if (h.deviceId == b.deviceId) d["uuid"] = h.uuid, d["host_pci_address"] = h.pciAddress;
    devices.push_back(std::move(d));
  }
  return json{{"id", s.id},         {"name", s.name},         {"host", s.hostId},        {"tenant", s.tenant},
              {"state", toString(s.state)}, {"state_reason", s.stateReason}, {"progress", s.progress}, {"devices", std::move(devices)},
              {"mig", instances},          {"shares", shares},
              {"active_operation", s.activeOperation}, {"created_at", formatTimestamp(s.createdAt)},
              {"lease_expires_at", s.leaseExpiresAt == 0 ? std::string() : formatTimestamp(s.leaseExpiresAt)}, {"labels", s.labels},
              {"priority_class", s.priorityClass}};
}

json eventJson(const Event& e) {
  return json{{"sequence", e.sequence}, {"at", formatTimestamp(e.at)}, {"type", e.type},       {"subject", e.subject},
              {"message", e.message},   {"actor", e.actor},    {"tenant", e.tenant}, {"system_id", e.systemId}};
}

json operationJson(const Operation& op) {
  json steps = json::array();
  for (const auto& st : op.steps) {
    json devices = json::array();
    for (const auto& b : st.bindings) devices.push_back(b.deviceId);
    steps.push_back(json{{"kind", st.kind},
                         {"state", toString(st.state)},
                         {"compensation", st.compensation},
                         {"attempts", st.attempts},
                         {"message", st.message},
                         {"finished_at", st.finishedAt == 0 ? std::string() : formatTimestamp(st.finishedAt)},
                         {"devices", std::move(devices)}});
  }
  return json{{"id", op.id},
              {"kind", toString(op.kind)},
              {"system", op.systemId},
              {"host", op.hostId},
              {"state", toString(op.state)},
              {"error", op.error},
              {"explanation", op.explanation},
              {"requested_by", op.requestedBy.identity},
              {"tenant", op.tenant},
              {"created_at", formatTimestamp(op.createdAt)},
              {"updated_at", formatTimestamp(op.updatedAt)},
              {"steps", std::move(steps)}};
}

json usageGroupJson(const UsageGroup& g) {
  return json{{"tenant", g.tenant},
              {"system_id", g.systemId},
              {"system_name", g.systemName},
              {"model", g.model},
              {"labels", g.labels},
              {"gpu_hours", g.gpuSeconds / 3600.0},
              {"idle_gpu_hours", g.idleGpuSeconds / 3600.0},
              {"memory_gib_hours", g.memoryGiBSeconds / 3600.0},
              {"device_hours", g.deviceSeconds / 3600.0},
              {"systems", g.systems.size()}};
}

}  // namespace switchyard::web
