// yardd's host-side step: who admits and releases devices on each host (a registered yard-agent, a host's
// BMC, the simulated hosts of the simulated fabric) and each host's policy (--host-policy, ADR 0012).
#pragma once

#include <memory>

#include "agent/agent_directory.h"
#include "bmc/bmc_reset_hosts.h"
#include "composer/daemon/daemon_options.h"
#include "composer/daemon/open_fabric.h"
#include "agent/simulated_hosts.h"

namespace switchyard {

struct HostSide {
  HostSide(Clock& clock, agent::AgentDirectoryOptions agentOptions, bmc::BmcResetHostsOptions bmcOptions)
      : agents(clock, std::move(agentOptions)), bmcResets(std::move(bmcOptions)) {}
  agent::AgentDirectory agents;  // what the engine calls: it routes each host to its policy's side
  bmc::BmcResetHosts bmcResets;
  std::unique_ptr<SimulatedHosts> simulatedHosts;  // the simulated switches' hosts, until a yard-agent registers
};

// Builds the host side from the flags; with the simulated fabric (and --sim-host-agents) its hosts answer
// for every host until a yard-agent registers for one.
[[nodiscard]] Result<std::unique_ptr<HostSide>> startHostSide(const DaemonOptions& o, const OpenedFabric& fabric, Clock& clock);

}  // namespace switchyard
