#include "composer/daemon/host_side.h"

#include <grpcpp/security/credentials.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "composer/daemon/secret_files.h"

namespace switchyard {
namespace {

Result<agent::AgentDirectoryOptions> hostSideOptions(const DaemonOptions& o) {
  agent::AgentDirectoryOptions options;
  options.defaultPolicy = o.hostPolicyDefault == "unset" ? HostPolicy::kUnset : *parseHostPolicy(o.hostPolicyDefault);
  for (const auto& p : o.hostPolicies) {
    const auto eq = p.find('=');
    const auto policy = eq == std::string::npos ? std::nullopt : parseHostPolicy(p.substr(eq + 1));
    if (eq == 0 || !policy)
      return fail(Code::kInvalidArgument, fmt::format("--host-policy '{}': expected HOST=agent, HOST=bmc-reset or HOST=trust-fabric", p));
    options.policies[p.substr(0, eq)] = *policy;
  }
  options.heartbeatInterval = std::chrono::seconds(o.agentHeartbeatSeconds);
  options.registrationsFile = o.stateDir / "agents.json";
  if (!o.agentCa.empty()) {
    auto pem = [](const std::filesystem::path& file) {
      std::ifstream in(file);
      return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    if (o.agentCert.empty() != o.agentKey.empty())
      return fail(Code::kInvalidArgument, "--agent-cert and --agent-key go together");
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = pem(o.agentCa);
    if (!o.agentCert.empty()) {
      tls.pem_cert_chain = pem(o.agentCert);
      tls.pem_private_key = pem(o.agentKey);
    }
    options.credentials = grpc::SslCredentials(tls);
  }
  return options;
}

// The BMCs of bmc-reset hosts: every such host needs one, and a BMC is given only for such a host.
Result<bmc::BmcResetHostsOptions> bmcResetOptions(const DaemonOptions& o, const agent::AgentDirectoryOptions& policies) {
  bmc::BmcResetHostsOptions options;
  std::string password;
  if (!o.hostBmcPasswordFile.empty()) {
    SY_ASSIGN(password, readPasswordFile(o.hostBmcPasswordFile, "--host-bmc-password-file"));
  }
  for (const auto& entry : o.hostBmcs) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size())
      return fail(Code::kInvalidArgument, fmt::format("--host-bmc '{}': expected HOST=https://BMC[:PORT]", entry));
    const HostId host = entry.substr(0, eq);
    auto policy = policies.policies.find(host);
    if (policy == policies.policies.end() || policy->second != HostPolicy::kBmcReset)
      return fail(Code::kInvalidArgument, fmt::format("--host-bmc '{}': host {} is not bmc-reset; add --host-policy {}=bmc-reset", entry, host, host));
    options.bmcs[host] = bmc::HostBmcOptions{entry.substr(eq + 1), o.hostBmcUser, password, o.hostBmcCa.string(), {}};
  }
  for (const auto& [host, policy] : policies.policies)
    if (policy == HostPolicy::kBmcReset && !options.bmcs.contains(host))
      return fail(Code::kInvalidArgument, fmt::format("--host-policy {}=bmc-reset needs --host-bmc {}=https://BMC", host, host));
  return options;
}

// The simulated switches' inventories are in memory; a real fabric is discovered once, by the engine's start.
Result<std::unique_ptr<SimulatedHosts>> simulatedHostsOf(const DaemonOptions& o, const OpenedFabric& fabric, Clock& clock) {
  Topology simulated;
  for (SimulatedFabric* sim : fabric.simulated) {
    SY_ASSIGN(Topology part, sim->discover());
    for (auto& h : part.hosts) simulated.hosts.push_back(std::move(h));
    for (auto& d : part.devices) simulated.devices.push_back(std::move(d));
  }
  auto routedPort = [sims = fabric.simulated](const DeviceId& device) -> std::optional<PortId> {
    for (SimulatedFabric* sim : sims)
      if (auto port = sim->routedPort(device)) return port;
    return std::nullopt;
  };
  spdlog::info("host side: simulated host agents serve all {} host(s) until a yard-agent registers for one", simulated.hosts.size());
  // The hosts keep what they have enumerated beside the simulated switch's bindings (none kept: none).
  const bool kept = std::any_of(fabric.simulated.begin(), fabric.simulated.end(), [](SimulatedFabric* sim) { return sim->keepsState(); });
  auto hosts = std::make_unique<SimulatedHosts>(simulated, routedPort, clock,
                                                SimulatedHostsOptions{.appearDelay = std::chrono::milliseconds(o.simHostDelayMs),
                                                                      .statePath = kept ? o.stateDir / "sim-hosts.json" : std::filesystem::path()});
  // --sim-gpu-busy: the demo's busy GPUs (CLI11 checked DEVICE=PERCENT).
  int pid = 4200;
  for (const auto& spec : o.simGpuBusy) {
    const auto eq = spec.find('=');
    const DeviceId device = spec.substr(0, eq);
    const int percent = std::stoi(spec.substr(eq + 1));
    if (std::none_of(simulated.devices.begin(), simulated.devices.end(), [&](const Device& d) { return d.id == device && d.kind == DeviceKind::kGpu; }))
      return fail(Code::kInvalidArgument, fmt::format("--sim-gpu-busy {}: no simulated GPU '{}' (see `yardctl devices`)", spec, device));
    hosts->setActivity(device, percent, percent > 0 ? std::vector<GpuProcess>{{pid++, "sim-job", 2048}} : std::vector<GpuProcess>{});
    spdlog::info("simulated hosts: {} reports {}% utilization{}", device, percent, percent > 0 ? " and a process (sim-job)" : "");
  }
  return hosts;
}

}  // namespace

Result<std::unique_ptr<HostSide>> startHostSide(const DaemonOptions& o, const OpenedFabric& fabric, Clock& clock) {
  SY_ASSIGN(auto agentOptions, hostSideOptions(o));
  SY_ASSIGN(auto bmcOptions, bmcResetOptions(o, agentOptions));
  auto side = std::make_unique<HostSide>(clock, std::move(agentOptions), std::move(bmcOptions));
  side->agents.useBmcResets(side->bmcResets);
  if (!fabric.simulated.empty() && o.simHostAgents) {
    SY_ASSIGN(side->simulatedHosts, simulatedHostsOf(o, fabric, clock));
    side->agents.useLocalAgents(*side->simulatedHosts);
  }
  return side;
}

}  // namespace switchyard
