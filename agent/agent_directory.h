// yardd's side of the host agents: which hosts take devices how (the policy from configuration), which
// yard-agent serves each host (registered over AgentRegistry, kept alive by heartbeats), and the
// HostAgents calls the engine's host steps make, sent to that agent over gRPC as VerifyPresent and
// PrepareDetach with each device's serial and upstream port from the inventory.
//
// A host's policy is, in this order: the one configured for it (--host-policy HOST=POLICY); agent when
// an agent serves it (a registered yard-agent, or the in-process simulated agents of the simulated
// fabric); the configured default (--host-policy-default), which is unset unless chosen.
#pragma once

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "composer/model/clock.h"
#include "agent/host_agents.h"
#include "switchyard/v1/agent.grpc.pb.h"

namespace switchyard::agent {

struct AgentDirectoryOptions {
  std::map<HostId, HostPolicy> policies;
  HostPolicy defaultPolicy = HostPolicy::kUnset;
  std::chrono::milliseconds heartbeatInterval{5000};  // what agents are told to keep
  int missedHeartbeats = 3;                           // silent this many intervals: the agent is reported gone
  // How yardd dials agents: TLS (the agents' CA, and a client certificate when they require one) or,
  // when null, plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // Where registrations are kept across yardd's restarts ("" in memory only). yardd resumes unfinished
  // operations before it listens, so without this no agent could answer a resumed operation's host step:
  // agents register again only at their next heartbeat, once yardd listens.
  std::filesystem::path registrationsFile;
};

struct AgentView {
  HostId host;
  std::string address;  // "" for the in-process simulated agents
  Timestamp lastHeard = 0;
  bool alive = false;
};

class AgentDirectory final : public HostAgents {
 public:
  // Restores the registrations kept in options.registrationsFile, as if each agent had just been heard: one
  // that is gone is reported silent after the missed heartbeats, as always.
  AgentDirectory(Clock& clock, AgentDirectoryOptions options);

  // The pool's hosts (agents may register only for those) and devices (their serials go to the agents).
  // The engine sets it (inventoryDiscovered) once it has discovered the fabric, before recovery's host steps.
  void setInventory(const Topology& inventory);
  void inventoryDiscovered(const Topology& inventory) override { setInventory(inventory); }

  // In-process agents (the simulated hosts) serve every host no yard-agent registered for.
  void useLocalAgents(HostAgents& local) { local_ = &local; }
  // Hosts whose policy is bmc-reset are reset and shut down through their BMC by `bmcResets`.
  void useBmcResets(HostAgents& bmcResets) { bmcResets_ = &bmcResets; }
  // A yard-agent says it serves `host` at `address`; NOT_FOUND for a host the inventory lacks.
  [[nodiscard]] Result<void> registerAgent(const HostId& host, const std::string& address);
  [[nodiscard]] Result<void> heartbeat(const HostId& host, const std::string& address);
  [[nodiscard]] std::vector<AgentView> agents() const;
  // Forgets the host's agent; refused while it still heartbeats (it would register again at once).
  [[nodiscard]] Result<AgentView> deregister(const HostId& host);
  [[nodiscard]] std::chrono::milliseconds heartbeatInterval() const { return options_.heartbeatInterval; }

  [[nodiscard]] HostPolicy policy(const HostId& host) const override;
  [[nodiscard]] std::string status(const HostId& host) const override;
  [[nodiscard]] std::vector<HostId> silentHosts() const override;
  [[nodiscard]] Result<std::vector<HostDeviceIdentity>> admit(const HostId& host, const HostChange& change,
                                                              const CallOptions& options = {}) override;
  [[nodiscard]] Result<HostRelease> release(const HostId& host, const HostChange& change, const CallOptions& options = {}) override;
  [[nodiscard]] bool canList(const HostId& host) const override;
  [[nodiscard]] Result<std::vector<HostDeviceIdentity>> listPresent(const HostId& host, const CallOptions& options = {}) override;
  [[nodiscard]] bool canReportActivity(const HostId& host) const override;
  [[nodiscard]] Result<std::vector<GpuActivity>> activity(const HostId& host, const std::vector<Binding>& devices,
                                                          const CallOptions& options = {}) override;

 private:
  struct Remote {
    std::string address;
    std::shared_ptr<v1::HostAgent::Stub> stub;
    Timestamp lastHeard = 0;
  };
  // Who serves a host's calls: an in-process HostAgents (its BMC reset, or the simulated agents), or the
  // registered yard-agent; an error says why neither can.
  struct Route {
    HostAgents* inProcess = nullptr;
    std::shared_ptr<v1::HostAgent::Stub> remote;
  };
  [[nodiscard]] Result<Route> routeFor(const HostId& host) const;
  // The registered agent for the host (null when none registered), or an error when it has gone silent.
  [[nodiscard]] Result<std::shared_ptr<v1::HostAgent::Stub>> remoteFor(const HostId& host) const;
  // A client of the agent at `address`, over the configured credentials (TLS) or plaintext.
  [[nodiscard]] std::shared_ptr<v1::HostAgent::Stub> dial(const std::string& address) const;
  // The registrations kept in options_.registrationsFile (called with mutex_ held); a failure is logged.
  void saveRegistrations() const;
  void fill(const HostChange& change, google::protobuf::RepeatedPtrField<v1::ExpectedDevice>& devices,
            google::protobuf::RepeatedPtrField<v1::MigInstanceSpec>& instances) const;

  Clock& clock_;
  AgentDirectoryOptions options_;
  HostAgents* local_ = nullptr;
  HostAgents* bmcResets_ = nullptr;

  mutable std::mutex mutex_;
  std::map<DeviceId, Device> devices_;  // setInventory
  std::set<HostId> hosts_;
  std::map<HostId, Remote> remotes_;
};

// AgentRegistry (implemented by yardd): agents register and heartbeat into the directory.
class AgentRegistryService final : public v1::AgentRegistry::Service {
 public:
  // Who may register an agent: `admit` answers each call's context (yardd passes its authenticator and
  // asks for the operator or admin role); null admits everyone (a yardd without identities).
  using Admit = std::function<Result<void>(const grpc::ServerContextBase&)>;
  // Records a deregistration, accepted or refused (yardd writes it to the audit): the call's context, the
  // host, and the refusal (null when it was done).
  using Audit = std::function<void(const grpc::ServerContextBase&, const HostId&, const Error*)>;
  explicit AgentRegistryService(AgentDirectory& directory, Admit admit = nullptr, Audit audit = nullptr)
      : directory_(directory), admit_(std::move(admit)), audit_(std::move(audit)) {}
  grpc::Status Register(grpc::ServerContext*, const v1::RegisterAgentRequest* in, v1::RegisterAgentResponse* out) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const v1::AgentHeartbeat* in, v1::RegisterAgentResponse* out) override;
  grpc::Status List(grpc::ServerContext*, const v1::ListAgentsRequest* in, v1::ListAgentsResponse* out) override;
  grpc::Status Deregister(grpc::ServerContext*, const v1::DeregisterAgentRequest* in, v1::RegisteredAgent* out) override;

 private:
  AgentDirectory& directory_;
  Admit admit_;
  Audit audit_;
};

}  // namespace switchyard::agent
