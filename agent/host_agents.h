// The host's side of a binding: the second thing the engine drives, after the switch. Binding a GPU in
// the switch is half the job: the host must see it appear (rescan, verify) before it is handed out, and
// must let go of it (nothing using it, driver unbound, PCI function removed) before the switch unbinds,
// or the host can crash (../shared/design/host-hotplug.md).
//
// How each host takes devices is a policy chosen in configuration, never by default:
//  - agent:        a host agent (yard-agent, or a simulated one) rescans, verifies and releases;
//  - bmc-reset:    a host without an agent is power-cycled through its BMC after a bind (cold plug);
//  - trust-fabric: the switch's word is enough (no host steps);
//  - unset:        nobody said; composing onto or taking devices from the host is refused with the reason.
//
// Contract of admit/release (implementations: SimulatedHosts, the gRPC agent client, the BMC reset):
//  - admit(host, set) returns once every device of the set is present on the host with the serial the
//    inventory records, behind the expected upstream port, each with its identity; it fails with
//    kDeadlineExceeded when one has not appeared by options.timeout, kFailedPrecondition when a
//    different device appeared (wrong serial) or the host could not map it (no BAR space), kUnavailable
//    when the host side cannot be reached. Admitting a device already present succeeds (idempotent).
//  - release(host, set) fails with kFailedPrecondition, naming the processes, when a device is in use,
//    and then has changed nothing. Otherwise the devices are gone from the host when it returns, each
//    reset on its way out (secure release) or named in HostRelease::notReset with why its reset failed.
//    Releasing a device the host does not see succeeds (idempotent).
//  - admit creates the change's MIG instances once its devices are present; when one cannot be created, the
//    ones it created are destroyed again and it fails (kFailedPrecondition). release destroys the change's
//    instances first (a tool that refuses because an instance is in use: kFailedPrecondition).
//  - Both may be called from several threads at once.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/call_options.h"
#include "composer/model/composition.h"
#include "composer/model/error.h"
#include "composer/model/topology.h"

namespace switchyard {

enum class HostPolicy { kUnset, kTrustFabric, kAgent, kBmcReset };

[[nodiscard]] inline std::string_view toString(HostPolicy policy) {
  switch (policy) {
    case HostPolicy::kUnset: return "unset";
    case HostPolicy::kTrustFabric: return "trust-fabric";
    case HostPolicy::kAgent: return "agent";
    case HostPolicy::kBmcReset: return "bmc-reset";
  }
  return "unset";
}

[[nodiscard]] inline std::optional<HostPolicy> parseHostPolicy(std::string_view text) {
  for (auto p : {HostPolicy::kTrustFabric, HostPolicy::kAgent, HostPolicy::kBmcReset})
    if (toString(p) == text) return p;
  return std::nullopt;
}

// Whether the engine runs host steps for a host under this policy.
[[nodiscard]] inline bool hasHostSteps(HostPolicy policy) { return policy == HostPolicy::kAgent || policy == HostPolicy::kBmcReset; }

// A change on a host: devices arriving (admit) or leaving (release) whole, and MIG instances to create on
// (admit) or destroy on (release) GPUs the host has; an attach of MIG instances onto GPUs the system
// already holds has instances and no devices.
struct HostChange {
  std::vector<Binding> devices;
  std::vector<GpuInstance> instances;
  // release only: why the devices leave (detachReason in composer/model/caller.h: request, lease,
  // preemption, reclaim), so that the host's hooks can tell a user's detach from yardd taking GPUs back.
  std::string reason = "request";
};

// What a release reports besides success: devices that left the host but whose reset failed. They may
// still hold the previous tenant's data (GPU memory), so the engine quarantines them until an operator
// releases them (`yardctl devices release`).
struct HostRelease {
  std::vector<DeviceNotReset> notReset;
};

class HostAgents {
 public:
  virtual ~HostAgents() = default;
  // The pool as the fabric reports it, told by the engine once it has discovered it and before any host
  // step, recovery's included (an agent is sent each device's serial from it).
  virtual void inventoryDiscovered(const Topology&) {}
  [[nodiscard]] virtual HostPolicy policy(const HostId& host) const = 0;
  // One line for operators: who serves the host's side and how it is ("yard-agent at 10.0.0.7:7391, heard 2 s ago").
  [[nodiscard]] virtual std::string status(const HostId&) const { return ""; }
  // Hosts whose host side is known to be unreachable now (a registered agent that stopped heartbeating):
  // placement passes them by until they are heard again, rather than bind and roll back.
  [[nodiscard]] virtual std::vector<HostId> silentHosts() const { return {}; }
  [[nodiscard]] virtual Result<std::vector<HostDeviceIdentity>> admit(const HostId& host, const HostChange& change,
                                                                      const CallOptions& options = {}) = 0;
  [[nodiscard]] virtual Result<HostRelease> release(const HostId& host, const HostChange& change, const CallOptions& options = {}) = 0;
  // The pool's devices the host sees now (for host-side drift); kUnavailable when the host side cannot
  // tell (a BMC, an agent that does not answer). Callers skip hosts for which canList() is false.
  [[nodiscard]] virtual bool canList(const HostId&) const { return false; }
  [[nodiscard]] virtual Result<std::vector<HostDeviceIdentity>> listPresent(const HostId& host, const CallOptions& options = {});
  // What each of `devices` (GPUs the host holds) is doing now. A device the host does not see, or whose
  // activity it cannot read, is left out. kUnavailable when the host side cannot tell (a BMC, an agent that
  // does not answer). Callers skip hosts for which canReportActivity() is false.
  [[nodiscard]] virtual bool canReportActivity(const HostId&) const { return false; }
  [[nodiscard]] virtual Result<std::vector<GpuActivity>> activity(const HostId& host, const std::vector<Binding>& devices,
                                                                  const CallOptions& options = {});
};

inline Result<std::vector<GpuActivity>> HostAgents::activity(const HostId& host, const std::vector<Binding>&, const CallOptions&) {
  return fail(Code::kUnavailable, "the host side of " + host + " cannot report what its GPUs are doing");
}

inline Result<std::vector<HostDeviceIdentity>> HostAgents::listPresent(const HostId& host, const CallOptions&) {
  return fail(Code::kUnavailable, "the host side of " + host + " cannot list its devices");
}

}  // namespace switchyard
