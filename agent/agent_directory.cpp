#include "agent/agent_directory.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "composer/model/durable_file.h"
#include "net/grpc_status.h"

namespace switchyard::agent {


AgentDirectory::AgentDirectory(Clock& clock, AgentDirectoryOptions options) : clock_(clock), options_(std::move(options)) {
  if (options_.registrationsFile.empty()) return;
  std::ifstream in(options_.registrationsFile);
  if (!in) return;
  const auto kept = nlohmann::json::parse(in, nullptr, false);
  if (!kept.is_object()) {
    spdlog::warn("{} is not a JSON object of host -> agent address: ignored (agents register again at their next heartbeat)",
                 options_.registrationsFile.string());
    return;
  }
  for (const auto& [host, address] : kept.items()) {
    if (!address.is_string() || address.get<std::string>().empty()) continue;
    auto& remote = remotes_[host];
    remote.address = address.get<std::string>();
    remote.stub = dial(remote.address);
    remote.lastHeard = clock_.now();
    spdlog::info("host agent for {} at {}: registered before the restart, dialed until it misses its heartbeats", host, remote.address);
  }
}

std::shared_ptr<v1::HostAgent::Stub> AgentDirectory::dial(const std::string& address) const {
  return v1::HostAgent::NewStub(grpc::CreateChannel(address, options_.credentials ? options_.credentials : grpc::InsecureChannelCredentials()));
}

void AgentDirectory::saveRegistrations() const {
  if (options_.registrationsFile.empty()) return;
  nlohmann::json kept = nlohmann::json::object();
  for (const auto& [host, r] : remotes_) kept[host] = r.address;
  if (auto w = writeFileDurably(options_.registrationsFile, kept.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"); !w)
    spdlog::warn("cannot keep the agents' registrations: {}", w.error().message);
}

void AgentDirectory::setInventory(const Topology& inventory) {
  std::lock_guard lock(mutex_);
  devices_.clear();
  hosts_.clear();
  for (const auto& d : inventory.devices) devices_.emplace(d.id, d);
  for (const auto& h : inventory.hosts) hosts_.insert(h.id);
}

Result<void> AgentDirectory::registerAgent(const HostId& host, const std::string& address) {
  if (address.empty()) return fail(Code::kInvalidArgument, "an agent must say where it listens (host:port)");
  std::lock_guard lock(mutex_);
  if (!hosts_.contains(host)) return fail(Code::kNotFound, fmt::format("no host '{}' in the pool: check yard-agent --host", host));
  auto& remote = remotes_[host];
  if (remote.address != address) {
    remote.address = address;
    remote.stub = dial(address);
    spdlog::info("host agent for {} registered at {}", host, address);
    saveRegistrations();
  }
  remote.lastHeard = clock_.now();
  return {};
}

Result<void> AgentDirectory::heartbeat(const HostId& host, const std::string& address) {
  {
    std::lock_guard lock(mutex_);
    auto it = remotes_.find(host);
    if (it != remotes_.end() && it->second.address == address) {
      it->second.lastHeard = clock_.now();
      return {};
    }
  }
  return registerAgent(host, address);  // yardd restarted, or the agent moved: take it as a registration
}

std::vector<AgentView> AgentDirectory::agents() const {
  std::lock_guard lock(mutex_);
  std::vector<AgentView> out;
  const auto now = clock_.now();
  const auto silence = options_.heartbeatInterval * options_.missedHeartbeats;
  for (const auto& [host, r] : remotes_)
    out.push_back({host, r.address, r.lastHeard, now - r.lastHeard <= std::chrono::duration_cast<Duration>(silence).count()});
  return out;
}

Result<AgentView> AgentDirectory::deregister(const HostId& host) {
  std::lock_guard lock(mutex_);
  auto it = remotes_.find(host);
  if (it == remotes_.end()) return fail(Code::kNotFound, fmt::format("no yard-agent is registered for host '{}' (see `yardctl agents`)", host));
  const auto silent = clock_.now() - it->second.lastHeard;
  const auto limit = std::chrono::duration_cast<Duration>(options_.heartbeatInterval * options_.missedHeartbeats).count();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(Duration(silent)).count();
  if (silent <= limit)
    return fail(Code::kFailedPrecondition, fmt::format("the yard-agent of {} at {} was heard {} s ago and would register again at its next "
                                                       "heartbeat: stop it first, then remove it once it is silent",
                                                       host, it->second.address, seconds));
  AgentView gone{host, it->second.address, it->second.lastHeard, false};
  remotes_.erase(it);
  saveRegistrations();
  spdlog::warn("host agent for {} at {} deregistered (silent for {} s)", host, gone.address, seconds);
  return gone;
}

std::vector<HostId> AgentDirectory::silentHosts() const {
  std::lock_guard lock(mutex_);
  std::vector<HostId> out;
  const auto now = clock_.now();
  const auto limit = std::chrono::duration_cast<Duration>(options_.heartbeatInterval * options_.missedHeartbeats).count();
  for (const auto& [host, r] : remotes_)
    if (now - r.lastHeard > limit && !options_.policies.contains(host)) out.push_back(host);
  return out;
}

HostPolicy AgentDirectory::policy(const HostId& host) const {
  if (auto it = options_.policies.find(host); it != options_.policies.end()) return it->second;
  {
    std::lock_guard lock(mutex_);
    if (remotes_.contains(host)) return HostPolicy::kAgent;
  }
  if (local_ != nullptr && local_->policy(host) == HostPolicy::kAgent) return HostPolicy::kAgent;
  return options_.defaultPolicy;
}

std::string AgentDirectory::status(const HostId& host) const {
  const HostPolicy p = policy(host);
  if (p == HostPolicy::kBmcReset) return bmcResets_ != nullptr ? bmcResets_->status(host) : "no BMC configured";
  if (p == HostPolicy::kTrustFabric) return "no host steps";
  {
    std::lock_guard lock(mutex_);
    if (auto it = remotes_.find(host); it != remotes_.end()) {
      const auto silent = std::chrono::duration_cast<std::chrono::seconds>(Duration(clock_.now() - it->second.lastHeard)).count();
      const bool alive = silent <= std::chrono::duration_cast<std::chrono::seconds>(options_.heartbeatInterval * options_.missedHeartbeats).count();
      return fmt::format("yard-agent at {}, heard {} s ago{}", it->second.address, silent, alive ? "" : " (silent: calls fail UNAVAILABLE)");
    }
  }
  if (local_ != nullptr && local_->policy(host) == HostPolicy::kAgent) return local_->status(host);
  return p == HostPolicy::kAgent ? "no yard-agent registered" : "";
}

Result<std::shared_ptr<v1::HostAgent::Stub>> AgentDirectory::remoteFor(const HostId& host) const {
  std::lock_guard lock(mutex_);
  auto it = remotes_.find(host);
  if (it == remotes_.end()) return nullptr;
  const auto silent = clock_.now() - it->second.lastHeard;
  const auto limit = std::chrono::duration_cast<Duration>(options_.heartbeatInterval * options_.missedHeartbeats).count();
  if (silent > limit)
    return fail(Code::kUnavailable, fmt::format("the yard-agent of {} at {} was last heard {} s ago", host, it->second.address,
                                                std::chrono::duration_cast<std::chrono::seconds>(Duration(silent)).count()));
  return it->second.stub;
}

void AgentDirectory::fill(const HostChange& change, google::protobuf::RepeatedPtrField<v1::ExpectedDevice>& devices,
                          google::protobuf::RepeatedPtrField<v1::MigInstanceSpec>& instances) const {
  std::lock_guard lock(mutex_);
  auto serialOf = [&](const DeviceId& id) {
    auto it = devices_.find(id);
    return it == devices_.end() ? std::string() : it->second.serial;
  };
  for (const auto& b : change.devices) {
    auto* e = devices.Add();
    e->set_device_id(b.deviceId);
    e->set_upstream_port_id(b.upstreamPortId);
    e->set_serial_number(serialOf(b.deviceId));
  }
  for (const auto& i : change.instances) {
    auto* m = instances.Add();
    m->set_device_id(i.deviceId);
    m->set_serial_number(serialOf(i.deviceId));
    m->set_profile(std::string(toString(i.profile)));
    m->set_start(i.start);
  }
}

Result<AgentDirectory::Route> AgentDirectory::routeFor(const HostId& host) const {
  if (policy(host) == HostPolicy::kBmcReset) {
    if (bmcResets_ == nullptr) return fail(Code::kFailedPrecondition, fmt::format("host {} is bmc-reset but no BMC is configured", host));
    return Route{bmcResets_, nullptr};
  }
  SY_ASSIGN(auto stub, remoteFor(host));
  if (stub) return Route{nullptr, std::move(stub)};
  if (local_ != nullptr && local_->policy(host) == HostPolicy::kAgent) return Route{local_, nullptr};
  return fail(Code::kUnavailable, fmt::format("no yard-agent has registered for {} (policy agent)", host));
}

namespace {
Error agentError(const HostId& host, const grpc::Status& status) {
  Error e = fromGrpcStatus(status);
  return Error{e.code, fmt::format("yard-agent on {}: {}", host, e.message)};
}
}  // namespace

Result<std::vector<HostDeviceIdentity>> AgentDirectory::admit(const HostId& host, const HostChange& change, const CallOptions& options) {
  SY_ASSIGN(const Route route, routeFor(host));
  if (route.inProcess) return route.inProcess->admit(host, change, options);
  v1::VerifyPresentRequest request;
  fill(change, *request.mutable_devices(), *request.mutable_mig_instances());
  request.set_deadline_ms(std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout).count());
  grpc::ClientContext context;
  // The agent stops looking at the deadline it was given; the call's own deadline leaves it time to say so.
  context.set_deadline(std::chrono::system_clock::now() + options.timeout + std::chrono::seconds(2));
  v1::VerifyPresentResponse response;
  if (auto status = route.remote->VerifyPresent(&context, request, &response); !status.ok()) return fail(agentError(host, status));
  std::vector<HostDeviceIdentity> out;
  for (const auto& d : response.devices()) out.push_back({d.device_id(), d.pci_address(), d.gpu_uuid()});
  return out;
}

Result<HostRelease> AgentDirectory::release(const HostId& host, const HostChange& change, const CallOptions& options) {
  SY_ASSIGN(const Route route, routeFor(host));
  if (route.inProcess) return route.inProcess->release(host, change, options);
  v1::PrepareDetachRequest request;
  fill(change, *request.mutable_devices(), *request.mutable_mig_instances());
  request.set_reason(change.reason);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options.timeout);
  v1::ActionReport response;
  if (auto status = route.remote->PrepareDetach(&context, request, &response); !status.ok()) return fail(agentError(host, status));
  for (const auto& a : response.actions()) spdlog::info("{}: {}", host, a);
  HostRelease out;
  for (const auto& n : response.not_reset()) out.notReset.push_back({n.device_id(), n.reason()});
  return out;
}

bool AgentDirectory::canList(const HostId& host) const {
  if (policy(host) != HostPolicy::kAgent) return false;
  {
    std::lock_guard lock(mutex_);
    if (remotes_.contains(host)) return true;
  }
  return local_ != nullptr && local_->canList(host);
}

// The agent's inventory, mapped to the pool's devices by serial number.
Result<std::vector<HostDeviceIdentity>> AgentDirectory::listPresent(const HostId& host, const CallOptions& options) {
  SY_ASSIGN(const Route route, routeFor(host));
  if (route.inProcess) return route.inProcess->listPresent(host, options);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options.timeout);
  v1::HostInventory inventory;
  if (auto status = route.remote->Inventory(&context, v1::InventoryRequest{}, &inventory); !status.ok()) return fail(agentError(host, status));
  std::map<std::string, DeviceId> bySerial;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, d] : devices_)
      if (!d.serial.empty()) bySerial.emplace(d.serial, id);
  }
  std::vector<HostDeviceIdentity> out;
  for (const auto& f : inventory.functions())
    if (auto it = bySerial.find(f.serial_number()); !f.serial_number().empty() && it != bySerial.end())
      out.push_back({it->second, f.address(), f.gpu_uuid()});
  return out;
}

bool AgentDirectory::canReportActivity(const HostId& host) const {
  if (policy(host) != HostPolicy::kAgent) return false;
  {
    std::lock_guard lock(mutex_);
    if (remotes_.contains(host)) return true;
  }
  return local_ != nullptr && local_->canReportActivity(host);
}

Result<std::vector<GpuActivity>> AgentDirectory::activity(const HostId& host, const std::vector<Binding>& devices, const CallOptions& options) {
  SY_ASSIGN(const Route route, routeFor(host));
  if (route.inProcess) return route.inProcess->activity(host, devices, options);
  v1::ActivityRequest request;
  google::protobuf::RepeatedPtrField<v1::MigInstanceSpec> none;
  fill(HostChange{devices, {}, {}}, *request.mutable_devices(), none);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options.timeout);
  v1::ActivityResponse response;
  if (auto status = route.remote->Activity(&context, request, &response); !status.ok()) return fail(agentError(host, status));
  std::vector<GpuActivity> out;
  for (const auto& g : response.gpus()) {
    if (std::none_of(devices.begin(), devices.end(), [&](const Binding& b) { return b.deviceId == g.device_id(); })) continue;
    GpuActivity a{g.device_id(), std::clamp(g.utilization_percent(), 0, 100), g.memory_used_mib(), {}, {}};
    for (const auto& p : g.processes()) a.processes.push_back({p.pid(), p.name(), p.memory_mib()});
    for (const auto& i : g.instances()) {
      MigInstanceActivity instance{i.start(), {}};
      for (const auto& p : i.processes()) instance.processes.push_back({p.pid(), p.name(), p.memory_mib()});
      a.instances.push_back(std::move(instance));
    }
    out.push_back(std::move(a));
  }
  return out;
}

grpc::Status AgentRegistryService::Register(grpc::ServerContext* ctx, const v1::RegisterAgentRequest* in, v1::RegisterAgentResponse* out) {
  if (admit_)
    if (auto r = admit_(*ctx); !r) return toGrpcStatus(r.error());
  if (auto r = directory_.registerAgent(in->host_id(), in->address()); !r) return toGrpcStatus(r.error());
  out->set_heartbeat_interval_ms(directory_.heartbeatInterval().count());
  return grpc::Status::OK;
}

grpc::Status AgentRegistryService::Heartbeat(grpc::ServerContext* ctx, const v1::AgentHeartbeat* in, v1::RegisterAgentResponse* out) {
  if (admit_)
    if (auto r = admit_(*ctx); !r) return toGrpcStatus(r.error());
  if (auto r = directory_.heartbeat(in->host_id(), in->address()); !r) return toGrpcStatus(r.error());
  out->set_heartbeat_interval_ms(directory_.heartbeatInterval().count());
  return grpc::Status::OK;
}

grpc::Status AgentRegistryService::List(grpc::ServerContext* ctx, const v1::ListAgentsRequest*, v1::ListAgentsResponse* out) {
  if (admit_)
    if (auto r = admit_(*ctx); !r) return toGrpcStatus(r.error());
  for (const auto& a : directory_.agents()) {
    auto* agent = out->add_agents();
    agent->set_host_id(a.host);
    agent->set_address(a.address);
    agent->set_last_heard_unix_ms(a.lastHeard / 1'000'000);
    agent->set_alive(a.alive);
  }
  return grpc::Status::OK;
}

grpc::Status AgentRegistryService::Deregister(grpc::ServerContext* ctx, const v1::DeregisterAgentRequest* in, v1::RegisteredAgent* out) {
  if (admit_)
    if (auto r = admit_(*ctx); !r) return toGrpcStatus(r.error());
  auto gone = directory_.deregister(in->host_id());
  if (audit_) audit_(*ctx, in->host_id(), gone ? nullptr : &gone.error());
  if (!gone) return toGrpcStatus(gone.error());
  out->set_host_id(gone->host);
  out->set_address(gone->address);
  out->set_last_heard_unix_ms(gone->lastHeard / 1'000'000);
  out->set_alive(false);
  return grpc::Status::OK;
}

}  // namespace switchyard::agent
