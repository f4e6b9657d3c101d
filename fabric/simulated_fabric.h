// A simulated PCIe/CXL switch manager: a first-class FabricDriver with a real binding table (one
// partition per host upstream port), per-call latency on an injected clock (a set of bindings is one call), fault injection, and
// an optional state file so that, like a real switch, its bindings outlive a crash of the daemon.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <random>
#include <unordered_map>

#include "composer/model/clock.h"
#include "fabric/fabric_driver.h"

namespace switchyard {

struct SimulatedFabricOptions {
  Duration latency{0};                       // added to every bind, unbind and read (a call with a shorter timeout gives up)
  std::filesystem::path statePath;            // empty: bindings live in memory only
  std::uint64_t seed = 1;                     // for probabilistic faults
};

// Which calls faults apply to.
enum FaultTarget : unsigned { kFaultBind = 1, kFaultUnbind = 2, kFaultRead = 4, kFaultEvents = 8 };

struct FaultPlan {
  int passNext = 0;              // let this many targeted calls through before the faults below start
  int failNext = 0;              // the next N targeted calls fail with failCode
  double failProbability = 0.0;  // then each targeted call fails with this probability
  int timeoutNext = 0;           // the next N targeted calls apply, then report kDeadlineExceeded at their timeout
  Code failCode = Code::kUnavailable;
  unsigned targets = kFaultBind | kFaultUnbind;
};

class SimulatedFabric final : public FabricDriver {
 public:
  // Loads bindings from options.statePath when the file exists; fails if it names unknown devices.
  [[nodiscard]] static Result<std::unique_ptr<SimulatedFabric>> create(Topology topology, Clock& clock,
                                                                       SimulatedFabricOptions options);

  [[nodiscard]] std::string_view name() const override { return "simulated"; }
  [[nodiscard]] Result<Topology> discover() override;
  [[nodiscard]] Result<void> bindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<void> unbindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<Binding>> readBindings(const CallOptions& options = {}) override;
  // One scan of the table keeping these ports' rows: a verify does not copy and sort the whole table.
  [[nodiscard]] Result<std::vector<Binding>> readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<FabricEvent>> pollEvents() override;

  void setFaults(const FaultPlan& plan);
  // Changes the latency of every call from now on.
  void setLatency(Duration latency) { latency_.store(latency.count()); }
  // Changes a device's health as a switch's monitor would, and raises an event.
  [[nodiscard]] Result<void> setDeviceHealth(const DeviceId& device, DeviceHealth health);
  [[nodiscard]] std::uint64_t callCount() const;
  // What the switch routes now, with no call latency or fault: the simulated hardware's own state, which
  // the simulated hosts (simulated_hosts.h) see.
  [[nodiscard]] std::optional<PortId> routedPort(const DeviceId& device) const;
  // Whether the bindings outlive this process (SimulatedFabricOptions::statePath).
  [[nodiscard]] bool keepsState() const { return !options_.statePath.empty(); }
  // routedPort as a function, for the simulated hosts (agent/simulated_hosts.h) this switch drives.
  [[nodiscard]] std::function<std::optional<PortId>(const DeviceId&)> router() const {
    return [this](const DeviceId& device) { return routedPort(device); };
  }

 private:
  SimulatedFabric(Topology topology, Clock& clock, SimulatedFabricOptions options);
  [[nodiscard]] Result<void> loadState();
  [[nodiscard]] Result<void> prepareStateFile();
  // Checks a whole set before anything is applied: unknown names, other fabrics, devices bound elsewhere.
  [[nodiscard]] Result<void> checkSetLocked(std::span<const Binding> set, bool binding) const;
  // bindAll (binding) or unbindAll: one latency, the whole set checked, then applied and saved.
  [[nodiscard]] Result<void> changeSet(std::span<const Binding> set, bool binding, const CallOptions& options);
  // Waits one round trip, or until the call's timeout when that comes first: false then.
  [[nodiscard]] bool answeredInTime(const CallOptions& options);
  [[nodiscard]] Result<void> saveStateLocked() const;
  // The partition table (all of it, or the rows of `ports`), sorted by device: one latency, read faults.
  [[nodiscard]] Result<std::vector<Binding>> readTable(std::optional<std::span<const PortId>> ports, const CallOptions& options);
  // Returns the injected fault for this call, if any: {code, applyAnyway}.
  [[nodiscard]] std::optional<std::pair<Code, bool>> nextFaultLocked(FaultTarget target);
  // The only changes to the table: they keep devicesOfPort_ with it.
  void bindLocked(const DeviceId& device, const PortId& port);
  void unbindLocked(const DeviceId& device);
  [[nodiscard]] Result<void> reportFault(std::pair<Code, bool> fault, std::string_view what, const CallOptions& options);

  Topology topology_;
  TopologyIndex index_;
  Clock& clock_;
  SimulatedFabricOptions options_;
  std::atomic<Duration::rep> latency_;

  mutable std::mutex mutex_;
  std::unordered_map<DeviceId, PortId> bindings_;  // the switch's partition table
  std::unordered_map<PortId, std::set<DeviceId>> devicesOfPort_;  // the same rows by upstream port
  std::vector<FabricEvent> events_;
  FaultPlan faults_;
  std::mt19937_64 rng_;
  std::uint64_t calls_ = 0;
};

}  // namespace switchyard
