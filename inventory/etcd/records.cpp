#include "inventory/etcd/records.h"

#include <fmt/format.h>

#include <stdexcept>

#include "inventory/queued_codec.h"

namespace switchyard::etcd {

using nlohmann::json;

namespace {

// Enum parsing that throws, caught once per record and turned into an error naming it.
template <typename T, typename Parse>
T parsed(const json& j, const char* field, Parse parse) {
  const std::string text = j.at(field).get<std::string>();
  auto v = parse(text);
  if (!v) throw std::invalid_argument(fmt::format("{}: unknown value '{}'", field, text));
  return *v;
}

template <typename T, typename F>
Result<T> parseRecord(std::string_view text, std::string_view what, F f) {
  try {
    return f(json::parse(text));
  } catch (const std::exception& e) {
    return fail(Code::kInternal, fmt::format("the store's record {} cannot be read: {}", what, e.what()));
  }
}

json bindingsJson(const std::vector<Binding>& bindings) {
  json out = json::array();
  for (const auto& b : bindings) out.push_back(json::array({b.deviceId, b.upstreamPortId}));
  return out;
}

std::vector<Binding> bindingsFrom(const json& j) {
  std::vector<Binding> out;
  for (const auto& b : j) out.push_back({b.at(0).get<std::string>(), b.at(1).get<std::string>()});
  return out;
}

json instancesJson(const std::vector<GpuInstance>& instances) {
  json out = json::array();
  for (const auto& i : instances) out.push_back(json{{"device", i.deviceId}, {"profile", toString(i.profile)}, {"start", i.start}});
  return out;
}

std::vector<GpuInstance> instancesFrom(const json& j) {
  std::vector<GpuInstance> out;
  for (const auto& i : j) out.push_back({i.at("device").get<std::string>(), parsed<MigProfile>(i, "profile", parseMigProfile), i.at("start").get<int>()});
  return out;
}

json sharesJson(const std::vector<GpuShare>& shares) {
  json out = json::array();
  for (const auto& s : shares) out.push_back(json{{"id", s.id}, {"device", s.deviceId}, {"milli", s.milli}});
  return out;
}

std::vector<GpuShare> sharesFrom(const json& j) {
  std::vector<GpuShare> out;
  for (const auto& s : j) out.push_back({s.at("id").get<int>(), s.at("device").get<std::string>(), s.at("milli").get<int>()});
  return out;
}

json callerJson(const Caller& c) { return json{{"identity", c.identity}, {"role", toString(c.role)}, {"tenant", c.tenant}}; }

Caller callerFrom(const json& j) {
  return {j.value("identity", ""), parsed<Role>(j, "role", parseRole), j.value("tenant", "")};
}

}  // namespace

json toJson(const Topology& t) {
  json switches = json::array(), ports = json::array(), hosts = json::array(), devices = json::array();
  for (const auto& s : t.switches) switches.push_back(json{{"id", s.id}, {"kind", toString(s.kind)}, {"model", s.model}, {"domain", s.domain}});
  for (const auto& p : t.ports)
    ports.push_back(json{{"id", p.id}, {"switch", p.switchId}, {"kind", toString(p.kind)}, {"gen", p.linkGeneration}, {"width", p.linkWidth},
                         {"peer", p.peerPort}});
  for (const auto& h : t.hosts) {
    json ups = json::array();
    for (const auto& u : h.upstreamPorts) ups.push_back(json{{"port", u.portId}, {"numa", u.numaNode}});
    hosts.push_back(json{{"id", h.id}, {"upstream", ups}, {"cores", h.cpuCores}, {"memory", h.memoryGiB}, {"maxDevices", h.maxDevices}});
  }
  for (const auto& d : t.devices)
    devices.push_back(json{{"id", d.id}, {"kind", kindName(d)}, {"port", d.portId}, {"model", d.model}, {"memory", d.memoryGiB},
                           {"serial", d.serial}, {"health", toString(d.health)}, {"mig", d.migCapable}, {"speed", d.speedGbps}});
  return json{{"switches", switches}, {"ports", ports}, {"hosts", hosts}, {"devices", devices}};
}

Result<Topology> topologyFrom(std::string_view text, std::string_view what) {
  return parseRecord<Topology>(text, what, [](const json& j) {
    Topology t;
    for (const auto& s : j.at("switches")) t.switches.push_back({s.at("id").get<std::string>(), parsed<SwitchKind>(s, "kind", parseSwitchKind), s.value("model", ""),
                                                             s.value("domain", std::string(kDefaultDomain))});
    for (const auto& p : j.at("ports"))
      t.ports.push_back({p.at("id").get<std::string>(), p.at("switch").get<std::string>(), parsed<PortKind>(p, "kind", parsePortKind),
                         p.value("gen", 5), p.value("width", 16), p.value("peer", "")});
    for (const auto& h : j.at("hosts")) {
      Host host{h.at("id").get<std::string>(), {}, h.value("cores", 0), h.value("memory", 0), h.value("maxDevices", 8)};
      for (const auto& u : h.at("upstream")) host.upstreamPorts.push_back({u.at("port").get<std::string>(), u.value("numa", 0)});
      t.hosts.push_back(std::move(host));
    }
    for (const auto& d : j.at("devices")) {
      const auto kind = parsed<KindName>(d, "kind", parseKindName);
      t.devices.push_back({d.at("id").get<std::string>(), kind.kind, d.at("port").get<std::string>(), d.value("model", ""), d.value("memory", 0),
                           d.value("serial", ""), parsed<DeviceHealth>(d, "health", parseDeviceHealth), d.value("mig", false), d.value("speed", 0),
                           kind.deviceClass});
    }
    return t;
  });
}

json toJson(const System& s) {
  json hostDevices = json::array();
  for (const auto& h : s.hostDevices) hostDevices.push_back(json{{"device", h.deviceId}, {"pci", h.pciAddress}, {"uuid", h.uuid}});
  json record{{"id", s.id},
              {"name", s.name},
              {"host", s.hostId},
              {"bindings", bindingsJson(s.bindings)},
              {"instances", instancesJson(s.gpuInstances)},
              {"shares", sharesJson(s.gpuShares)},
              {"hostDevices", hostDevices},
              {"tenant", s.tenant},
              {"labels", s.labels},
              {"state", toString(s.state)},
              {"activeOperation", s.activeOperation},
              {"createdAt", s.createdAt},
              {"updatedAt", s.updatedAt},
              {"leaseExpiresAt", s.leaseExpiresAt},
              {"priorityClass", s.priorityClass},
              {"stateReason", s.stateReason}};
  if (s.asked) record["asked"] = queuedToJson(*s.asked);
  return record;
}

Result<System> systemFrom(std::string_view text, std::string_view what) {
  return parseRecord<System>(text, what, [](const json& j) {
    System s;
    s.id = j.at("id").get<std::string>();
    s.name = j.value("name", "");
    s.hostId = j.value("host", "");
    s.bindings = bindingsFrom(j.at("bindings"));
    s.gpuInstances = instancesFrom(j.value("instances", json::array()));
    s.gpuShares = sharesFrom(j.value("shares", json::array()));
    for (const auto& h : j.value("hostDevices", json::array()))
      s.hostDevices.push_back({h.at("device").get<std::string>(), h.value("pci", ""), h.value("uuid", "")});
    s.tenant = j.value("tenant", std::string(kDefaultTenant));
    s.labels = j.value("labels", std::map<std::string, std::string>{});
    s.state = parsed<SystemState>(j, "state", parseSystemState);
    s.activeOperation = j.value("activeOperation", "");
    s.createdAt = j.value("createdAt", Timestamp{0});
    s.updatedAt = j.value("updatedAt", Timestamp{0});
    s.leaseExpiresAt = j.value("leaseExpiresAt", Timestamp{0});
    s.priorityClass = j.value("priorityClass", "");
    s.stateReason = j.value("stateReason", "");
    if (j.contains("asked")) {
      auto asked = queuedFromJson(j.at("asked"), "asked");
      if (!asked) throw std::runtime_error(asked.error().message);
      s.asked = std::move(*asked);
    }
    return s;
  });
}

json toJson(const Operation& op) {
  json steps = json::array();
  for (const auto& s : op.steps)
    steps.push_back(json{{"kind", s.kind},
                         {"bindings", bindingsJson(s.bindings)},
                         {"state", toString(s.state)},
                         {"compensation", s.compensation},
                         {"attempts", s.attempts},
                         {"message", s.message},
                         {"finishedAt", s.finishedAt},
                         {"outcomeUnknown", s.outcomeUnknown}});
  json record{{"id", op.id},
              {"kind", toString(op.kind)},
              {"system", op.systemId},
              {"host", op.hostId},
              {"state", toString(op.state)},
              {"steps", steps},
              {"instances", instancesJson(op.gpuInstances)},
              {"shares", sharesJson(op.gpuShares)},
              {"explanation", op.explanation},
              {"error", op.error},
              {"requestedBy", callerJson(op.requestedBy)},
              {"createdAt", op.createdAt},
              {"updatedAt", op.updatedAt},
              {"tenant", op.tenant},
              {"requestId", op.requestId}};
  if (op.queued) record["queued"] = queuedToJson(*op.queued);
  if (!op.replaces.empty()) record["replaces"] = op.replaces;
  return record;
}

Result<Operation> operationFrom(std::string_view text, std::string_view what) {
  return parseRecord<Operation>(text, what, [](const json& j) {
    Operation op;
    op.id = j.at("id").get<std::string>();
    op.kind = parsed<OperationKind>(j, "kind", parseOperationKind);
    op.systemId = j.value("system", "");
    op.hostId = j.value("host", "");
    op.state = parsed<OperationState>(j, "state", parseOperationState);
    for (const auto& s : j.at("steps")) {
      Step step;
      step.kind = s.at("kind").get<std::string>();
      step.bindings = bindingsFrom(s.at("bindings"));
      step.state = parsed<StepState>(s, "state", parseStepState);
      step.compensation = s.value("compensation", false);
      step.attempts = s.value("attempts", 0);
      step.message = s.value("message", "");
      step.finishedAt = s.value("finishedAt", Timestamp{0});
      step.outcomeUnknown = s.value("outcomeUnknown", false);
      op.steps.push_back(std::move(step));
    }
    op.gpuInstances = instancesFrom(j.value("instances", json::array()));
    op.gpuShares = sharesFrom(j.value("shares", json::array()));
    op.explanation = j.value("explanation", "");
    op.error = j.value("error", "");
    op.requestedBy = callerFrom(j.at("requestedBy"));
    op.createdAt = j.value("createdAt", Timestamp{0});
    op.updatedAt = j.value("updatedAt", Timestamp{0});
    op.tenant = j.value("tenant", "");
    op.requestId = j.value("requestId", "");
    if (j.contains("queued")) {
      auto queued = queuedFromJson(j.at("queued"), "operation record");
      if (!queued) throw std::runtime_error(queued.error().message);
      op.queued = std::move(*queued);
    }
    op.replaces = j.value("replaces", std::vector<DeviceId>{});
    return op;
  });
}

json toJson(const DeviceAssignment& a) { return json{{"device", a.deviceId}, {"allocation", toString(a.allocation)}, {"owner", a.owner}}; }

Result<DeviceAssignment> assignmentFrom(std::string_view text, std::string_view what) {
  return parseRecord<DeviceAssignment>(text, what, [](const json& j) {
    return DeviceAssignment{j.at("device").get<std::string>(), parsed<DeviceAllocation>(j, "allocation", parseDeviceAllocation), j.value("owner", "")};
  });
}

json toJson(const Event& e) {
  return json{{"sequence", e.sequence}, {"at", e.at}, {"type", e.type}, {"subject", e.subject}, {"message", e.message}, {"actor", e.actor}, {"tenant", e.tenant}, {"system", e.systemId}};
}

Result<Event> eventFrom(std::string_view text, std::string_view what) {
  return parseRecord<Event>(text, what, [](const json& j) {
    return Event{j.at("sequence").get<std::uint64_t>(), j.value("at", Timestamp{0}), j.value("type", ""), j.value("subject", ""),
                 j.value("message", ""), j.value("actor", ""), j.value("tenant", ""), j.value("system", "")};
  });
}

json toJson(const AuditRecord& a) {
  return json{{"sequence", a.sequence}, {"at", a.at}, {"caller", callerJson(a.caller)}, {"action", a.action}, {"target", a.target},
              {"tenant", a.tenant}, {"result", a.result}, {"message", a.message}, {"operation", a.operationId}, {"outcome", a.outcome},
              {"finishedAt", a.finishedAt}};
}

Result<AuditRecord> auditFrom(std::string_view text, std::string_view what) {
  return parseRecord<AuditRecord>(text, what, [](const json& j) {
    AuditRecord a;
    a.sequence = j.at("sequence").get<std::uint64_t>();
    a.at = j.value("at", Timestamp{0});
    a.caller = callerFrom(j.at("caller"));
    a.action = j.value("action", "");
    a.target = j.value("target", "");
    a.tenant = j.value("tenant", "");
    a.result = j.value("result", "");
    a.message = j.value("message", "");
    a.operationId = j.value("operation", "");
    a.outcome = j.value("outcome", "");
    a.finishedAt = j.value("finishedAt", Timestamp{0});
    return a;
  });
}

json toJson(const DemandShape& d) { return json{{"gpus", d.gpus}, {"sameSwitch", d.sameSwitch}, {"model", d.model}}; }

Result<DemandShape> demandFrom(std::string_view text, std::string_view what) {
  return parseRecord<DemandShape>(text, what, [](const json& j) {
    return DemandShape{j.value("gpus", 1), j.value("sameSwitch", true), j.value("model", "")};
  });
}

json toJson(const IdleStretch& s) {
  return json{{"device", s.deviceId}, {"system", s.systemId}, {"tenant", s.tenant}, {"from", s.from}, {"to", s.to}};
}

Result<IdleStretch> idleStretchFrom(std::string_view text, std::string_view what) {
  return parseRecord<IdleStretch>(text, what, [](const json& j) {
    return IdleStretch{j.at("device").get<std::string>(), j.value("system", ""), j.value("tenant", ""), j.at("from").get<Timestamp>(),
                       j.at("to").get<Timestamp>()};
  });
}

}  // namespace switchyard::etcd
