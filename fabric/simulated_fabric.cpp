#include "fabric/simulated_fabric.h"

#include "composer/model/durable_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

namespace switchyard {

using nlohmann::json;

Result<std::unique_ptr<SimulatedFabric>> SimulatedFabric::create(Topology topology, Clock& clock,
                                                                 SimulatedFabricOptions options) {
  if (auto v = validateTopology(topology); !v) return fail(v.error().wrap("simulated fabric"));
  std::unique_ptr<SimulatedFabric> fabric(new SimulatedFabric(std::move(topology), clock, std::move(options)));
  if (auto r = fabric->loadState(); !r) return fail(r.error());
  if (auto r = fabric->prepareStateFile(); !r) return fail(r.error());
  return fabric;
}

SimulatedFabric::SimulatedFabric(Topology topology, Clock& clock, SimulatedFabricOptions options)
    : topology_(std::move(topology)), index_(topology_), clock_(clock), options_(std::move(options)), latency_(options_.latency.count()), rng_(options_.seed) {}

Result<Topology> SimulatedFabric::discover() {
  clock_.sleepFor(Duration(latency_.load()));
  std::lock_guard lock(mutex_);
  ++calls_;
  if (auto fault = nextFaultLocked(kFaultRead)) return fail(fault->first, "simulated switch did not answer discovery");
  return topology_;
}

namespace {

std::string describeSet(std::string_view verb, std::span<const Binding> set) {
  if (set.empty()) return fmt::format("{} of an empty set", verb);
  if (set.size() == 1) return fmt::format("{} {} {} {}", verb, set[0].deviceId, verb == "bind" ? "->" : "from", set[0].upstreamPortId);
  return fmt::format("{} {} device(s), first {} {} {}", verb, set.size(), set[0].deviceId, verb == "bind" ? "->" : "from",
                     set[0].upstreamPortId);
}

}  // namespace

Result<void> SimulatedFabric::checkSetLocked(std::span<const Binding> set, bool binding) const {
  std::unordered_set<std::string_view> seen;
  for (const auto& [device, upstreamPort] : set) {
    if (!seen.insert(device).second) return fail(Code::kInvalidArgument, fmt::format("device '{}' appears twice in one call", device));
    const Device* d = index_.device(device);
    if (!d) return fail(Code::kNotFound, fmt::format("switch has no device '{}'", device));
    const Port* usp = index_.port(upstreamPort);
    if (binding) {
      if (!usp || usp->kind != PortKind::kUpstream)
        return fail(Code::kNotFound, fmt::format("switch has no upstream port '{}'", upstreamPort));
      if (index_.fabricOf(*index_.switchOfDevice(device)) != index_.fabricOf(usp->switchId))
        return fail(Code::kInvalidArgument,
                    fmt::format("device '{}' and upstream port '{}' are in different fabrics", device, upstreamPort));
    }
    auto it = bindings_.find(device);
    if (it == bindings_.end() || it->second == upstreamPort) continue;  // idempotent
    return fail(Code::kFailedPrecondition, binding ? fmt::format("device '{}' is bound to upstream port '{}'", device, it->second)
                                                   : fmt::format("device '{}' is bound to '{}', not '{}'", device, it->second, upstreamPort));
  }
  return {};
}

Result<void> SimulatedFabric::bindAll(std::span<const Binding> set, const CallOptions& options) { return changeSet(set, true, options); }

Result<void> SimulatedFabric::unbindAll(std::span<const Binding> set, const CallOptions& options) {
  return changeSet(set, false, options);
}

bool SimulatedFabric::answeredInTime(const CallOptions& options) {
  const Duration latency{latency_.load()};
  if (latency <= options.timeout) {
    clock_.sleepFor(latency);
    return true;
  }
  clock_.sleepFor(options.timeout);
  return false;
}

Result<void> SimulatedFabric::changeSet(std::span<const Binding> set, bool binding, const CallOptions& options) {
  // One round trip for the whole set, like a zone PATCH. A caller that stops waiting first does not stop
  // the switch: the change is applied and the caller told the outcome is unknown.
  const bool inTime = answeredInTime(options);
  std::lock_guard lock(mutex_);
  ++calls_;
  SY_TRY(checkSetLocked(set, binding));
  auto fault = nextFaultLocked(binding ? kFaultBind : kFaultUnbind);
  auto what = [&] { return describeSet(binding ? "bind" : "unbind", set); };
  if (!inTime) fault = std::pair{Code::kDeadlineExceeded, true};
  if (fault && !fault->second) return reportFault(*fault, what(), options);
  // The set was checked: each member is unbound or already bound as asked. Remember what changes, to put it
  // back if the table cannot be saved.
  std::vector<Binding> changed;
  for (const auto& b : set) {
    const bool bound = bindings_.contains(b.deviceId);
    if (bound == binding) continue;  // idempotent member
    changed.push_back(b);
    if (binding)
      bindLocked(b.deviceId, b.upstreamPortId);
    else
      unbindLocked(b.deviceId);
  }
  if (auto saved = saveStateLocked(); !saved) {
    for (const auto& b : changed) {
      if (binding)
        unbindLocked(b.deviceId);
      else
        bindLocked(b.deviceId, b.upstreamPortId);
    }
    return saved;
  }
  if (fault) {
    if (!inTime)
      return fail(Code::kDeadlineExceeded, fmt::format("simulated switch did not answer within {} ms: {}; it may have applied it",
                                                       std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout).count(), what()));
    return reportFault(*fault, what(), options);
  }
  return {};
}

Result<std::vector<Binding>> SimulatedFabric::readBindings(const CallOptions& options) { return readTable({}, options); }

Result<std::vector<Binding>> SimulatedFabric::readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options) {
  return readTable(upstreamPorts, options);
}

Result<std::vector<Binding>> SimulatedFabric::readTable(std::optional<std::span<const PortId>> ports, const CallOptions& options) {
  const bool inTime = answeredInTime(options);
  std::lock_guard lock(mutex_);
  ++calls_;
  if (!inTime)
    return fail(Code::kDeadlineExceeded, fmt::format("simulated switch did not answer the binding read within {} ms",
                                                     std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout).count()));
  if (auto fault = nextFaultLocked(kFaultRead)) return fail(fault->first, "simulated switch did not answer the binding read");
  std::vector<Binding> out;
  if (!ports) {
    out.reserve(bindings_.size());
    for (const auto& [device, port] : bindings_) out.push_back({device, port});
  } else {  // only the asked ports' rows: what a verify costs does not grow with the table
    std::set<PortId> asked(ports->begin(), ports->end());
    for (const auto& port : asked)
      if (auto it = devicesOfPort_.find(port); it != devicesOfPort_.end())
        for (const auto& device : it->second) out.push_back({device, port});
  }
  std::sort(out.begin(), out.end(), [](const Binding& a, const Binding& b) { return a.deviceId < b.deviceId; });
  return out;
}

Result<std::vector<FabricEvent>> SimulatedFabric::pollEvents() {
  std::lock_guard lock(mutex_);
  if (auto fault = nextFaultLocked(kFaultEvents)) return fail(fault->first, "simulated switch's event feed did not answer");
  return std::exchange(events_, {});
}

void SimulatedFabric::setFaults(const FaultPlan& plan) {
  std::lock_guard lock(mutex_);
  faults_ = plan;
}

Result<void> SimulatedFabric::setDeviceHealth(const DeviceId& device, DeviceHealth health) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(topology_.devices.begin(), topology_.devices.end(), [&](const Device& d) { return d.id == device; });
  if (it == topology_.devices.end()) return fail(Code::kNotFound, fmt::format("switch has no device '{}'", device));
  it->health = health;
  events_.push_back({"device.health", device, fmt::format("device {} health is now {}", device, toString(health)), health});
  return {};
}

std::uint64_t SimulatedFabric::callCount() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::optional<std::pair<Code, bool>> SimulatedFabric::nextFaultLocked(FaultTarget target) {
  if ((faults_.targets & target) == 0) return std::nullopt;
  if (faults_.passNext > 0) {
    --faults_.passNext;
    return std::nullopt;
  }
  if (faults_.failNext > 0) {
    --faults_.failNext;
    return std::pair{faults_.failCode, false};
  }
  if (faults_.timeoutNext > 0) {
    --faults_.timeoutNext;
    return std::pair{Code::kDeadlineExceeded, true};
  }
  if (faults_.failProbability > 0.0 && std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < faults_.failProbability)
    return std::pair{faults_.failCode, false};
  return std::nullopt;
}

Result<void> SimulatedFabric::reportFault(std::pair<Code, bool> fault, std::string_view what, const CallOptions& options) {
  if (fault.first == Code::kDeadlineExceeded) {
    clock_.sleepFor(options.timeout);
    return fail(Code::kDeadlineExceeded, fmt::format("simulated switch timed out: {}", what));
  }
  return fail(fault.first, fmt::format("simulated switch refused: {} (injected fault)", what));
}

Result<void> SimulatedFabric::loadState() {
  if (options_.statePath.empty() || !std::filesystem::exists(options_.statePath)) return {};
  const std::string where = options_.statePath.string();
  std::ifstream in(options_.statePath);
  std::stringstream buffer;
  buffer << in.rdbuf();
  json root;
  try {
    root = json::parse(buffer.str());
  } catch (const json::exception& e) {
    return fail(Code::kInvalidArgument, fmt::format("{}: corrupt simulated switch state: {}", where, e.what()));
  }
  if (!root.contains("bindings") || !root["bindings"].is_object())
    return fail(Code::kInvalidArgument, fmt::format("{}: /bindings: expected an object", where));
  for (const auto& [device, port] : root["bindings"].items()) {
    if (!index_.device(device) || !port.is_string() || !index_.port(port.get<std::string>()))
      return fail(Code::kInvalidArgument,
                  fmt::format("{}: /bindings/{}: names a device or port not in the topology", where, device));
    bindLocked(device, port.get<std::string>());
  }
  return {};
}

void SimulatedFabric::bindLocked(const DeviceId& device, const PortId& port) {
  if (bindings_.emplace(device, port).second) devicesOfPort_[port].insert(device);
}

void SimulatedFabric::unbindLocked(const DeviceId& device) {
  auto it = bindings_.find(device);
  if (it == bindings_.end()) return;
  if (auto rows = devicesOfPort_.find(it->second); rows != devicesOfPort_.end()) {
    rows->second.erase(device);
    if (rows->second.empty()) devicesOfPort_.erase(rows);
  }
  bindings_.erase(it);
}

Result<void> SimulatedFabric::prepareStateFile() {
  // Like a switch that checks its flash at power-on: a state file that cannot be written stops the start,
  // instead of failing every bind later.
  if (options_.statePath.empty()) return {};
  if (options_.statePath.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(options_.statePath.parent_path(), ec);
    if (ec)
      return fail(Code::kUnavailable, fmt::format("{}: cannot create the directory for the simulated switch state: {}",
                                                  options_.statePath.parent_path().string(), ec.message()));
  }
  std::lock_guard lock(mutex_);
  return saveStateLocked();
}

Result<void> SimulatedFabric::saveStateLocked() const {
  if (options_.statePath.empty()) return {};
  json root{{"bindings", json::object()}};
  for (const auto& [device, port] : bindings_) root["bindings"][device] = port;
  // The file is always a whole table, the old one or the new one: on a full disk too, or if yardd dies mid-write.
  if (auto r = writeFileDurably(options_.statePath, root.dump(1, ' ', false, nlohmann::json::error_handler_t::replace)); !r)
    return fail(Code::kUnavailable, fmt::format("simulated switch state not saved: {}", r.error().message));
  return {};
}

std::optional<PortId> SimulatedFabric::routedPort(const DeviceId& device) const {
  std::lock_guard lock(mutex_);
  auto it = bindings_.find(device);
  if (it == bindings_.end()) return std::nullopt;
  return it->second;
}

}  // namespace switchyard
