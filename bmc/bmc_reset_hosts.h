// The bmc-reset host policy (ADR 0012): hosts without an agent that only see a change of devices across
// a power cycle (cold plug). admit resets the host through its BMC after the switch bound the devices
// (ForceRestart, or On when it is off) and waits for it to be On; release powers the host off
// (GracefulShutdown, ForceOff when that is not allowed) and waits for Off before the switch unbinds, so no
// device leaves a running host. The next admit powers it on. A BMC reports no host PCI addresses, so
// devices admitted this way carry no host identity.
#pragma once

#include <map>

#include "bmc/host_bmc.h"
#include "agent/host_agents.h"

namespace switchyard::bmc {

struct BmcResetHostsOptions {
  std::map<HostId, HostBmcOptions> bmcs;  // the BMC of each host under this policy
  Duration pollInterval = std::chrono::milliseconds(500);
};

class BmcResetHosts final : public HostAgents {
 public:
  explicit BmcResetHosts(BmcResetHostsOptions options) : options_(std::move(options)) {}

  [[nodiscard]] HostPolicy policy(const HostId& host) const override;
  [[nodiscard]] std::string status(const HostId& host) const override;
  [[nodiscard]] Result<std::vector<HostDeviceIdentity>> admit(const HostId& host, const HostChange& change,
                                                              const CallOptions& options = {}) override;
  [[nodiscard]] Result<HostRelease> release(const HostId& host, const HostChange& change, const CallOptions& options = {}) override;
  // A reset someone asked for (Redfish ComputerSystem.Reset on the host or a system composed on it), passed to the
  // host's BMC as it is: the BMC refuses a ResetType it does not allow (kInvalidArgument). It does not wait for
  // the power state: the caller reads it from the BMC. kFailedPrecondition for a host without a BMC.
  [[nodiscard]] Result<void> reset(const HostId& host, const std::string& resetType, const CallOptions& options = {});

 private:
  [[nodiscard]] Result<std::unique_ptr<HostBmc>> connect(const HostId& host, const CallOptions& options) const;
  // Polls the power state until it is `wanted` or the call's deadline passes.
  [[nodiscard]] Result<void> waitFor(HostBmc& bmc, const HostId& host, std::string_view wanted, std::chrono::steady_clock::time_point deadline) const;

  BmcResetHostsOptions options_;
};

}  // namespace switchyard::bmc
