#include "agent/simulated_hosts.h"

#include "composer/model/durable_file.h"
#include "composer/model/mig.h"

#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fstream>

#include <algorithm>
#include <functional>

namespace switchyard {

namespace {
// FNV-1a, 64 bits: the same UUID for the same device on every build and standard library.
std::uint64_t fnv1a(std::string_view text, std::uint64_t hash = 0xcbf29ce484222325ULL) {
  for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  // splitmix64's finalizer, so that names differing in one character give unrelated ids.
  hash = (hash ^ (hash >> 30)) * 0xbf58476d1ce4e5b9ULL;
  hash = (hash ^ (hash >> 27)) * 0x94d049bb133111ebULL;
  return hash ^ (hash >> 31);
}
}  // namespace

std::string simulatedGpuUuid(const DeviceId& device) {
  const std::uint64_t a = fnv1a(device);
  const std::uint64_t b = fnv1a("uuid", a);
  return fmt::format("GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xFFFF, a & 0xFFFF, b >> 48, b & 0xFFFFFFFFFFFFULL);
}

SimulatedHosts::SimulatedHosts(const Topology& topology, RoutedPort routedPort, Clock& clock, SimulatedHostsOptions options)
    : routedPort_(std::move(routedPort)), clock_(clock), options_(std::move(options)) {
  for (const auto& h : topology.hosts)
    for (const auto& u : h.upstreamPorts) upstreamPorts_[h.id].push_back(u.portId);
  for (const auto& d : topology.devices) devices_.emplace(d.id, d);
  const auto saved = loadState();
  // Devices routed to a host now (state kept by the simulated switch): one pass over the devices, not one per
  // host (100,000 GPUs and 12,500 hosts took 17 s the other way). A host sees each, as native hot-plug would
  // show it one the switch bound while yardd was away, unless it had it absent when its state was saved (it
  // released it, or lost sight of it, and nothing since brought it back).
  std::unordered_map<PortId, HostId> hostOfPort;
  for (const auto& [host, ports] : upstreamPorts_)
    for (const auto& port : ports) hostOfPort.emplace(port, host);
  for (const auto& d : topology.devices) {
    const auto routed = routedPort_(d.id);
    const auto owner = routed ? hostOfPort.find(*routed) : hostOfPort.end();
    if (owner == hostOfPort.end()) continue;
    const HostId& host = owner->second;
    if (saved) {
      if (auto kept = saved->present.find(host); kept != saved->present.end())
        if (auto identity = kept->second.find(d.id); identity != kept->second.end()) {
          present_[host].emplace(d.id, identity->second);
          continue;
        }
      if (auto absent = saved->absent.find(host); absent != saved->absent.end() && absent->second.contains(d.id)) {
        absent_[host].insert(d.id);
        continue;
      }
    }
    present_[host].emplace(d.id, identityOf(host, {d.id, *routed}));
  }
  // A saved device the switch no longer routes to its host vanished while yardd was away (surprise removal).
  if (saved) {
    for (const auto& [host, devices] : saved->present)
      for (const auto& [device, identity] : devices)
        if (!present_[host].contains(device))
          spdlog::warn("simulated hosts: {} vanished from {} while yardd was away (it was enumerated at {})", device, host, identity.pciAddress);
    for (auto& [host, made] : saved->instances)
      for (auto& i : made)
        if (present_[host].contains(i.deviceId)) instances_[host].push_back(i);
  }
}

// {"hosts": {"host1": {"present": [{"device", "pci", "uuid"}], "absent": ["dev", ...], "instances": [{"device", "profile", "start"}]}}}
std::optional<SimulatedHosts::SavedState> SimulatedHosts::loadState() const {
  if (options_.statePath.empty() || !std::filesystem::exists(options_.statePath)) return std::nullopt;
  const std::string where = options_.statePath.string();
  try {
    std::ifstream in(options_.statePath);
    const auto root = nlohmann::json::parse(in);
    SavedState saved;
    for (const auto& [host, state] : root.at("hosts").items()) {
      if (!upstreamPorts_.contains(host)) continue;  // a host the topology no longer has
      for (const auto& p : state.value("present", nlohmann::json::array())) {
        HostDeviceIdentity identity{p.at("device").get<std::string>(), p.at("pci").get<std::string>(), p.value("uuid", "")};
        if (devices_.contains(identity.deviceId)) saved.present[host].emplace(identity.deviceId, std::move(identity));
      }
      for (const auto& d : state.value("absent", nlohmann::json::array())) saved.absent[host].insert(d.get<std::string>());
      for (const auto& i : state.value("instances", nlohmann::json::array())) {
        const auto profile = parseMigProfile(i.at("profile").get<std::string>());
        if (!profile) throw std::runtime_error("unknown MIG profile " + i.at("profile").dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        saved.instances[host].push_back({i.at("device").get<std::string>(), *profile, i.at("start").get<int>()});
      }
    }
    return saved;
  } catch (const std::exception& e) {
    spdlog::warn("simulated hosts: cannot read {} ({}); each host sees what the switch routes to it", where, e.what());
    return std::nullopt;
  }
}

void SimulatedHosts::saveStateLocked() const {
  if (options_.statePath.empty()) return;
  nlohmann::json hosts = nlohmann::json::object();
  auto hostState = [&](const HostId& host) -> nlohmann::json& {
    auto& state = hosts[host];
    if (!state.is_object()) state = {{"present", nlohmann::json::array()}, {"absent", nlohmann::json::array()}, {"instances", nlohmann::json::array()}};
    return state;
  };
  for (const auto& [host, devices] : present_)
    for (const auto& [device, identity] : devices)
      hostState(host)["present"].push_back({{"device", device}, {"pci", identity.pciAddress}, {"uuid", identity.uuid}});
  for (const auto& [host, devices] : absent_)
    for (const auto& device : devices) hostState(host)["absent"].push_back(device);
  for (const auto& [host, made] : instances_)
    for (const auto& i : made) hostState(host)["instances"].push_back({{"device", i.deviceId}, {"profile", toString(i.profile)}, {"start", i.start}});
  const nlohmann::json root{{"hosts", hosts}};
  if (auto r = writeFileDurably(options_.statePath, root.dump(1, ' ', false, nlohmann::json::error_handler_t::replace), 0600); !r)
    spdlog::warn("simulated hosts: {}", r.error().message);
}

void SimulatedHosts::noteAbsentLocked(const HostId& host, const DeviceId& device) {
  const auto routed = routedPort_(device);
  const auto& ports = upstreamPorts_.at(host);
  if (routed && std::find(ports.begin(), ports.end(), *routed) != ports.end()) absent_[host].insert(device);
}

HostPolicy SimulatedHosts::policy(const HostId& host) const {
  auto it = options_.policies.find(host);
  if (it != options_.policies.end()) return it->second;
  // A host of another domain (a real fabric beside the simulated one) is not simulated here.
  return upstreamPorts_.contains(host) ? options_.policy : HostPolicy::kUnset;
}

std::string SimulatedHosts::status(const HostId& host) const {
  std::lock_guard lock(mutex_);
  if (unreachable_.contains(host)) return "simulated agent, not answering";
  return "simulated agent";
}

HostDeviceIdentity SimulatedHosts::identityOf(const HostId& host, const Binding& b) const {
  // Bus numbers as a host sees a switch: one block of 0x10 per upstream port, a bus per downstream slot.
  const auto& ports = upstreamPorts_.at(host);
  const auto portIndex = static_cast<int>(std::find(ports.begin(), ports.end(), b.upstreamPortId) - ports.begin());
  const auto present = present_.find(host);
  const int slot = present == present_.end() ? 0 : static_cast<int>(present->second.size());
  HostDeviceIdentity id{b.deviceId, fmt::format("0000:{:02x}:00.0", (0x10 * (portIndex + 1) + 2 + slot) & 0xFF), ""};
  if (devices_.at(b.deviceId).kind == DeviceKind::kGpu) id.uuid = simulatedGpuUuid(b.deviceId);
  return id;
}

Result<void> SimulatedHosts::reachableLocked(const HostId& host, std::string_view what) {
  if (!upstreamPorts_.contains(host)) return fail(Code::kNotFound, fmt::format("no simulated host '{}'", host));
  if (auto it = restarting_.find(host); it != restarting_.end()) {
    if (--it->second <= 0) restarting_.erase(it);
    return fail(Code::kUnavailable, fmt::format("the host agent on {} is restarting ({})", host, what));
  }
  if (unreachable_.contains(host))
    return fail(Code::kUnavailable, fmt::format("the host agent on {} does not answer ({})", host, what));
  return {};
}

Result<std::vector<HostDeviceIdentity>> SimulatedHosts::admit(const HostId& host, const HostChange& change, const CallOptions& options) {
  const auto& devices = change.devices;
  Duration delay;
  {
    std::lock_guard lock(mutex_);
    ++calls_;
    SY_TRY(reachableLocked(host, "rescan"));
    delay = options_.appearDelay;
  }
  // The rescan, then the wait for the devices to enumerate; a caller's deadline ends the wait.
  const bool inTime = delay <= options.timeout;
  clock_.sleepFor(std::min(delay, options.timeout));

  std::lock_guard lock(mutex_);
  const SaveWhenDone save{*this};
  std::vector<HostDeviceIdentity> out;
  auto& present = present_[host];
  const auto& ports = upstreamPorts_.at(host);
  for (const auto& b : devices) {
    auto known = devices_.find(b.deviceId);
    if (known == devices_.end()) return fail(Code::kNotFound, fmt::format("no device '{}'", b.deviceId));
    if (auto it = present.find(b.deviceId); it != present.end()) {  // already there: idempotent
      out.push_back(it->second);
      continue;
    }
    const auto routed = routedPort_(b.deviceId);
    const bool reachesHost = routed && *routed == b.upstreamPortId && std::find(ports.begin(), ports.end(), *routed) != ports.end();
    const auto fault = faults_.contains(b.deviceId) ? faults_.at(b.deviceId) : SimulatedHostFault::kNone;
    if (!reachesHost || fault == SimulatedHostFault::kNeverAppears || !inTime)
      return fail(Code::kDeadlineExceeded,
                  fmt::format("{} (serial {}) did not appear on {} behind {} within {} ms of the rescan", b.deviceId, known->second.serial,
                              host, b.upstreamPortId, std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout).count()));
    HostDeviceIdentity identity = identityOf(host, b);
    if (fault == SimulatedHostFault::kWrongSerial) {
      present.emplace(b.deviceId, identity);  // something did appear: the rollback must release it
      absent_[host].erase(b.deviceId);
      return fail(Code::kFailedPrecondition, fmt::format("wrong device behind {} on {}: expected {} with serial {}, found serial {:016x} at {}",
                                                         b.upstreamPortId, host, b.deviceId, known->second.serial,
                                                         fnv1a(known->second.serial), identity.pciAddress));
    }
    if (fault == SimulatedHostFault::kBarExhausted)
      return fail(Code::kFailedPrecondition,
                  fmt::format("{} appeared on {} at {} but its BARs could not be assigned (no space for BAR): reserve hot-plug "
                              "padding in the BIOS or boot the host with pci=realloc",
                              b.deviceId, host, identity.pciAddress));
    present.emplace(b.deviceId, identity);
    absent_[host].erase(b.deviceId);
    out.push_back(std::move(identity));
  }
  // MIG instances on GPUs the host has; on a failure the ones made here are destroyed again.
  auto& made = instances_[host];
  const std::size_t before = made.size();
  for (const auto& i : change.instances) {
    if (std::find(made.begin(), made.end(), i) != made.end()) continue;  // already there: idempotent
    const auto fault = faults_.contains(i.deviceId) ? faults_.at(i.deviceId) : SimulatedHostFault::kNone;
    std::string why;
    if (!present.contains(i.deviceId)) why = "the GPU is not on the host";
    else if (fault == SimulatedHostFault::kMigFails) why = "MIG mode is disabled on this GPU (nvidia-smi -mig 1 needs a GPU reset)";
    if (!why.empty()) {
      made.resize(before);
      return fail(Code::kFailedPrecondition, fmt::format("{}: creating MIG {} at slice {} on {} failed: {}", host, toString(i.profile), i.start,
                                                         i.deviceId, why));
    }
    made.push_back(i);
  }
  return out;
}

Result<HostRelease> SimulatedHosts::release(const HostId& host, const HostChange& change, const CallOptions&) {
  const auto& devices = change.devices;
  std::lock_guard lock(mutex_);
  ++calls_;
  SY_TRY(reachableLocked(host, "release"));
  auto& present = present_[host];
  // Checked whole first: a device in use refuses the release and nothing is removed.
  std::vector<std::string> busy;
  for (const auto& b : devices) {
    auto fault = faults_.find(b.deviceId);
    if (present.contains(b.deviceId) && fault != faults_.end() && fault->second == SimulatedHostFault::kInUse)
      busy.push_back(fmt::format("{} at {} is in use by pid 4242 (python3 train.py)", b.deviceId, present.at(b.deviceId).pciAddress));
    else if (auto a = activity_.find(b.deviceId); present.contains(b.deviceId) && a != activity_.end() && !a->second.processes.empty())
      busy.push_back(fmt::format("{} at {} is in use by pid {} ({})", b.deviceId, present.at(b.deviceId).pciAddress,
                                 a->second.processes.front().pid, a->second.processes.front().name));
  }
  // An instance something runs in cannot be destroyed (nvidia-smi mig -dci: "In use by another client"), nor its GPU removed.
  for (const auto& [at, processes] : instanceProcesses_) {
    const auto& [device, start] = at;
    const bool gpuLeaving = std::any_of(devices.begin(), devices.end(), [&](const Binding& b) { return b.deviceId == device; });
    const bool leaving = std::any_of(change.instances.begin(), change.instances.end(),
                                     [&](const GpuInstance& i) { return i.deviceId == device && i.start == start; });
    if (!processes.empty() && (gpuLeaving || leaving) && present.contains(device))
      busy.push_back(fmt::format("MIG instance {}@{} on {} is in use by pid {} ({})", device, start, present.at(device).pciAddress,
                                 processes.front().pid, processes.front().name));
  }
  if (!busy.empty()) return fail(Code::kFailedPrecondition, fmt::format("{}: {}", host, fmt::join(busy, "; ")));
  const SaveWhenDone save{*this};  // from here on the host changes
  auto& made = instances_[host];
  std::erase_if(made, [&](const GpuInstance& i) {
    const bool leaving = std::find(change.instances.begin(), change.instances.end(), i) != change.instances.end();
    const bool gpuLeaving = std::any_of(devices.begin(), devices.end(), [&](const Binding& b) { return b.deviceId == i.deviceId; });
    if (leaving || gpuLeaving) instanceProcesses_.erase({i.deviceId, i.start});
    return leaving || gpuLeaving;
  });
  HostRelease out;
  for (const auto& b : devices) {
    auto fault = faults_.find(b.deviceId);
    if (present.contains(b.deviceId) && fault != faults_.end() && fault->second == SimulatedHostFault::kResetFails)
      out.notReset.push_back({b.deviceId, fmt::format("{}: writing 1 to {}'s reset failed: Inappropriate ioctl for device", host,
                                                      present.at(b.deviceId).pciAddress)});
    present.erase(b.deviceId);
    noteAbsentLocked(host, b.deviceId);
    activity_.erase(b.deviceId);  // what ran on it ran on this host: the next host starts it idle
  }
  return out;
}

std::vector<GpuInstance> SimulatedHosts::migInstances(const HostId& host) const {
  std::lock_guard lock(mutex_);
  auto it = instances_.find(host);
  return it == instances_.end() ? std::vector<GpuInstance>{} : it->second;
}

void SimulatedHosts::setDeviceFault(const DeviceId& device, SimulatedHostFault fault) {
  std::lock_guard lock(mutex_);
  if (fault == SimulatedHostFault::kNone)
    faults_.erase(device);
  else
    faults_[device] = fault;
}

void SimulatedHosts::setHostReachable(const HostId& host, bool reachable) {
  std::lock_guard lock(mutex_);
  if (reachable)
    unreachable_.erase(host);
  else
    unreachable_.insert(host);
}

void SimulatedHosts::restartAgent(const HostId& host, int missedCalls) {
  std::lock_guard lock(mutex_);
  if (missedCalls > 0) restarting_[host] = missedCalls;
}

void SimulatedHosts::setAppearDelay(Duration delay) {
  std::lock_guard lock(mutex_);
  options_.appearDelay = delay;
}

Result<std::vector<HostDeviceIdentity>> SimulatedHosts::listPresent(const HostId& host, const CallOptions&) {
  {
    std::lock_guard lock(mutex_);
    ++calls_;
    SY_TRY(reachableLocked(host, "inventory"));
  }
  return present(host);
}

Result<std::vector<GpuActivity>> SimulatedHosts::activity(const HostId& host, const std::vector<Binding>& devices, const CallOptions&) {
  std::lock_guard lock(mutex_);
  ++calls_;
  SY_TRY(reachableLocked(host, "GPU activity"));
  const auto& present = present_[host];
  std::vector<GpuActivity> out;
  for (const auto& b : devices) {
    if (!present.contains(b.deviceId)) continue;
    GpuActivity a{b.deviceId, 0, 0, {}, {}};
    if (auto set = activity_.find(b.deviceId); set != activity_.end()) a = set->second;
    if (auto made = instances_.find(host); made != instances_.end())
      for (const auto& i : made->second) {
        if (i.deviceId != b.deviceId) continue;
        a.utilizationPercent = 0;  // MIG mode: the driver reads none
        auto running = instanceProcesses_.find({i.deviceId, i.start});
        a.instances.push_back({i.start, running == instanceProcesses_.end() ? std::vector<GpuProcess>{} : running->second});
        for (const auto& p : a.instances.back().processes) {
          a.processes.push_back(p);
          a.memoryUsedMiB += p.memoryMiB;
        }
      }
    if (auto fault = faults_.find(b.deviceId); fault != faults_.end() && fault->second == SimulatedHostFault::kInUse && a.processes.empty()) {
      a.processes.push_back({4242, "python3 train.py", 1024});
      a.memoryUsedMiB = std::max<std::uint64_t>(a.memoryUsedMiB, 1024);
    }
    out.push_back(std::move(a));
  }
  return out;
}

void SimulatedHosts::setActivity(const DeviceId& device, int utilizationPercent, std::vector<GpuProcess> processes) {
  std::lock_guard lock(mutex_);
  GpuActivity a{device, std::clamp(utilizationPercent, 0, 100), 0, std::move(processes), {}};
  for (const auto& p : a.processes) a.memoryUsedMiB += p.memoryMiB;
  activity_[device] = std::move(a);
}

void SimulatedHosts::setInstanceActivity(const DeviceId& device, int start, std::vector<GpuProcess> processes) {
  std::lock_guard lock(mutex_);
  const bool made = std::any_of(instances_.begin(), instances_.end(), [&](const auto& host) {
    return std::any_of(host.second.begin(), host.second.end(), [&](const GpuInstance& i) { return i.deviceId == device && i.start == start; });
  });
  if (made) instanceProcesses_[{device, start}] = std::move(processes);  // nothing runs in an instance that is not there
}

void SimulatedHosts::forget(const HostId& host, const DeviceId& device) {
  std::lock_guard lock(mutex_);
  const SaveWhenDone save{*this};
  present_[host].erase(device);
  noteAbsentLocked(host, device);
}

void SimulatedHosts::enumerate(const HostId& host, const DeviceId& device) {
  std::lock_guard lock(mutex_);
  const SaveWhenDone save{*this};
  const auto& ports = upstreamPorts_.at(host);
  auto identity = identityOf(host, {device, ports.front()});
  present_[host].emplace(device, std::move(identity));
  absent_[host].erase(device);
}

std::vector<HostDeviceIdentity> SimulatedHosts::present(const HostId& host) const {
  std::lock_guard lock(mutex_);
  std::vector<HostDeviceIdentity> out;
  if (auto it = present_.find(host); it != present_.end())
    for (const auto& [id, identity] : it->second) out.push_back(identity);
  return out;
}

std::vector<std::string> SimulatedHosts::surpriseRemovals() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [host, present] : present_) {
    const auto& ports = upstreamPorts_.at(host);
    for (const auto& [device, identity] : present) {
      const auto routed = routedPort_(device);
      if (!routed || std::find(ports.begin(), ports.end(), *routed) == ports.end())
        out.push_back(fmt::format("{} vanished from {} while enumerated at {}", device, host, identity.pciAddress));
    }
  }
  return out;
}

std::uint64_t SimulatedHosts::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

}  // namespace switchyard
