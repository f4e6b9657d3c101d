// Simulated host agents, driven by a simulated fabric (SimulatedFabric::router()): a device appears on a host (gets a host PCI
// address and, for a GPU, a UUID) only when admit() finds the switch really routes it to one of the host's
// upstream ports, after a configurable delay; release() removes it, unless a process holds it. Faults are
// set per device (never appears, wrong serial, in use, BAR space exhausted) or per host (unreachable,
// slow), so the engine's host steps and their rollbacks run in the demo and in tests without hardware.
//
// The simulation also keeps the score a real host would: a device the switch unbound while the host
// still had it enumerated is a surprise removal (on real hardware, AER errors or a crashed host).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "composer/model/clock.h"
#include "agent/host_agents.h"
#include "composer/model/topology.h"

namespace switchyard {

enum class SimulatedHostFault {
  kNone,
  kNeverAppears,  // the host never enumerates it: admit times out
  kWrongSerial,   // a device with another serial number shows up in its place
  kInUse,         // a process holds it: release is refused, naming the process
  kBarExhausted,  // the host enumerates it but cannot map its BARs ("no space for BAR")
  kMigFails,      // creating a MIG instance on it fails (as nvidia-smi does when MIG mode is off)
  kResetFails,    // release removes it but its reset fails (secure release): reported in HostRelease::notReset
};

struct SimulatedHostsOptions {
  Duration appearDelay{0};  // how long a bound device takes to show up after the rescan
  // What each host has enumerated and the MIG instances made on it, kept across yardd restarts (the hosts
  // are machines of their own: a device a host released before yardd crashed stays released). Empty: in
  // memory only. A file that is missing or unreadable: each host sees what the switch routes to it.
  std::filesystem::path statePath;
  HostPolicy policy = HostPolicy::kAgent;
  std::map<HostId, HostPolicy> policies;  // per-host overrides
};

// The simulated hosts are machines of their own: created beside a switch that already routes devices (a
// yardd restart), each host sees what it saw before (SimulatedHostsOptions::statePath) or, with no state
// kept, the devices routed to it.
class SimulatedHosts final : public HostAgents {
 public:
  // Where the simulated hardware routes a device now (SimulatedFabric::router(), or the first of several
  // simulated domains that knows the device); nullopt when nowhere.
  using RoutedPort = std::function<std::optional<PortId>(const DeviceId&)>;

  SimulatedHosts(const Topology& topology, RoutedPort routedPort, Clock& clock, SimulatedHostsOptions options = {});

  [[nodiscard]] HostPolicy policy(const HostId& host) const override;
  [[nodiscard]] std::string status(const HostId& host) const override;
  [[nodiscard]] Result<std::vector<HostDeviceIdentity>> admit(const HostId& host, const HostChange& change,
                                                              const CallOptions& options = {}) override;
  [[nodiscard]] Result<HostRelease> release(const HostId& host, const HostChange& change, const CallOptions& options = {}) override;
  [[nodiscard]] bool canList(const HostId& host) const override {
    return upstreamPorts_.contains(host) && policy(host) == HostPolicy::kAgent;
  }
  [[nodiscard]] Result<std::vector<HostDeviceIdentity>> listPresent(const HostId& host, const CallOptions& options = {}) override;
  [[nodiscard]] bool canReportActivity(const HostId& host) const override { return canList(host); }
  // A present GPU is idle (0 %, nothing running) unless setActivity said otherwise; one with a kInUse fault
  // runs pid 4242 (python3 train.py).
  [[nodiscard]] Result<std::vector<GpuActivity>> activity(const HostId& host, const std::vector<Binding>& devices,
                                                          const CallOptions& options = {}) override;
  // What a GPU is doing from now on (tests, the demo): its utilization and processes, until it is released
  // from its host. A GPU with processes is in use: release refuses it, naming them, as a real agent does.
  void setActivity(const DeviceId& device, int utilizationPercent, std::vector<GpuProcess> processes = {});
  // What runs in the MIG instance at `start` of a GPU from now on (until it is destroyed). A GPU with instances
  // reports MIG mode: no utilization, each instance with its processes; releasing a busy one is refused. An
  // instance the host has not made is left alone.
  void setInstanceActivity(const DeviceId& device, int start, std::vector<GpuProcess> processes);
  // The host loses sight of a device (a link that went down, a driver that dropped it) or sees one
  // nobody admitted (enumerated at boot): what host-side reconcile must notice.
  void forget(const HostId& host, const DeviceId& device);
  void enumerate(const HostId& host, const DeviceId& device);

  void setDeviceFault(const DeviceId& device, SimulatedHostFault fault);
  void setHostReachable(const HostId& host, bool reachable);
  // The host's agent restarts: the next `missedCalls` calls to it find nobody listening (kUnavailable).
  void restartAgent(const HostId& host, int missedCalls);
  void setAppearDelay(Duration delay);

  // What each host has enumerated now (device id -> identity).
  [[nodiscard]] std::vector<HostDeviceIdentity> present(const HostId& host) const;
  // The MIG instances created on a host now.
  [[nodiscard]] std::vector<GpuInstance> migInstances(const HostId& host) const;
  // Devices a host still had enumerated when the switch stopped routing them to it.
  [[nodiscard]] std::vector<std::string> surpriseRemovals() const;
  [[nodiscard]] std::uint64_t calls() const;

 private:
  [[nodiscard]] HostDeviceIdentity identityOf(const HostId& host, const Binding& b) const;
  [[nodiscard]] Result<void> reachableLocked(const HostId& host, std::string_view what);
  // What the hosts had when their state was last saved (SimulatedHostsOptions::statePath).
  struct SavedState {
    std::map<HostId, std::map<DeviceId, HostDeviceIdentity>> present;
    std::map<HostId, std::set<DeviceId>> absent;
    std::map<HostId, std::vector<GpuInstance>> instances;
  };
  [[nodiscard]] std::optional<SavedState> loadState() const;  // none: no state file, or one that cannot be read
  void saveStateLocked() const;  // after every change to what a host has (a failure is logged: it is a simulation)
  // A device leaves the host while the switch may still route it there: remembered as absent, so that a
  // restart does not show it again.
  void noteAbsentLocked(const HostId& host, const DeviceId& device);
  // Saves the hosts' state when the change that holds the lock ends, on every path out of it.
  struct SaveWhenDone {
    const SimulatedHosts& hosts;
    ~SaveWhenDone() { hosts.saveStateLocked(); }
  };

  RoutedPort routedPort_;
  Clock& clock_;
  SimulatedHostsOptions options_;
  std::map<HostId, std::vector<PortId>> upstreamPorts_;
  std::map<DeviceId, Device> devices_;

  mutable std::mutex mutex_;
  std::map<DeviceId, SimulatedHostFault> faults_;
  std::map<DeviceId, GpuActivity> activity_;  // setActivity
  std::map<std::pair<DeviceId, int>, std::vector<GpuProcess>> instanceProcesses_;  // setInstanceActivity
  std::set<HostId> unreachable_;
  std::map<HostId, int> restarting_;  // calls still to miss
  std::map<HostId, std::map<DeviceId, HostDeviceIdentity>> present_;
  std::map<HostId, std::set<DeviceId>> absent_;  // routed to the host, not enumerated there (released, lost sight of)
  std::map<HostId, std::vector<GpuInstance>> instances_;
  std::uint64_t calls_ = 0;
};

// The UUID a simulated GPU reports: stable per device (on every build), in nvidia-smi's "GPU-8-4-4-4-12" form.
[[nodiscard]] std::string simulatedGpuUuid(const DeviceId& device);

}  // namespace switchyard
