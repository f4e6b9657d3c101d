#include "composer/daemon/open_fabric.h"

#include "composer/daemon/secret_files.h"

#include <grpc/support/log.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <systemd/sd-daemon.h>
#include <functional>
#include <condition_variable>
#include <csignal>
#include <sys/stat.h>
#include <mutex>
#include <thread>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include "agent/agent_directory.h"
#include "bmc/bmc_reset_hosts.h"
#include "net/http_server.h"
#include "bmc/redfish_service.h"
#include "composer/api/resource_provider_service.h"
#include "composer/api/switchyard_service.h"
#include "composer/auth/identities.h"
#include "composer/daemon/grpc_security.h"
#include "composer/daemon/daemon_options.h"
#include "composer/daemon/domain_spec.h"
#include "composer/daemon/standby_reads.h"
#include "composer/daemon/signal_waiter.h"
#include "composer/daemon/state_lock.h"
#include "composer/api/version_interceptor.h"
#include "composer/model/config_syntax.h"
#include "composer/model/version.h"
#include "composer/engine/engine.h"
#include "composer/metrics/instrumented_fabric.h"
#include "composer/web/web_service.h"
#include "composer/model/fail_points.h"
#include "fabric/multi_fabric.h"
#include "fabric/redfish/redfish_fabric.h"
#include "fabric/cxl/cxl_fabric.h"
#include "fabric/qemu/qemu_fabric.h"
#include "fabric/switchtec/switchtec_fabric.h"
#include "fabric/simulated_fabric.h"
#include "agent/simulated_hosts.h"
#include "fabric/topology_generator.h"
#include "fabric/topology_json.h"
#include "inventory/etcd/etcd_store.h"
#include "inventory/etcd/leader_election.h"
#include "inventory/sqlite_store.h"

namespace switchyard {

namespace {

Result<Topology> chooseTopology(const DaemonOptions& o) {
  if (!o.topologyFile.empty()) return loadTopologyFile(o.topologyFile);
  if (o.generateGpus > 0) {
    TopologyShape shape;
    shape.totalGpus = o.generateGpus;
    shape.gpusPerSwitch = 16;
    shape.switchesPerFabric = 4;
    shape.hostsPerFabric = 8;
    return generateTopology(shape);
  }
  return embeddedTopology();
}


// Discovery (at start and at each rediscovery) is bounded by --switch-timeout like every other switch call.
Duration switchTimeout(const DaemonOptions& o) { return std::chrono::milliseconds(static_cast<std::int64_t>(o.switchTimeoutSeconds * 1000)); }

Result<std::unique_ptr<FabricDriver>> openRedfish(const std::string& url, const std::string& fabricId, const std::string& user,
                                                  const std::filesystem::path& passwordFile, const std::filesystem::path& ca, Duration timeout) {
  RedfishFabricOptions options;
  options.discoveryTimeout = timeout;
  options.url = url;
  options.fabric = fabricId;
  options.user = user;
  options.caFile = ca.string();
  if (!passwordFile.empty()) {
    SY_ASSIGN(options.password, readPasswordFile(passwordFile, "password file"));
  }
  SY_ASSIGN(auto fabric, RedfishFabric::connect(options));
  return std::unique_ptr<FabricDriver>(std::move(fabric));
}

// A Switchtec PAX fabric; `prefix` names its ids (a domain's name and '-', or nothing).
Result<std::unique_ptr<FabricDriver>> openSwitchtec(const std::string& endpoint, const std::vector<std::string>& hostNames, const std::string& prefix,
                                                    Duration timeout) {
  SwitchtecOptions options;
  options.discoveryTimeout = timeout;
  options.endpoint = endpoint;
  options.prefix = prefix;
  for (const auto& h : hostNames) {
    const auto eq = h.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == h.size())
      return fail(Code::kInvalidArgument, fmt::format("--switchtec-host '{}': expected paxN-pP=NAME", h));
    options.hostNames[h.substr(0, eq)] = h.substr(eq + 1);
  }
  SY_ASSIGN(auto fabric, SwitchtecFabric::connect(options));
  return std::unique_ptr<FabricDriver>(std::move(fabric));
}

// A CXL switch through its FM-API; `prefix` names its ids (a domain's name and '-', or nothing).
Result<std::unique_ptr<FabricDriver>> openCxl(const std::string& endpoint, const std::vector<std::string>& hostNames, const std::string& dialect,
                                              const std::string& prefix, Duration timeout) {
  CxlOptions options;
  options.endpoint = endpoint;
  options.prefix = prefix;
  options.discoveryTimeout = timeout;
  SY_ASSIGN(options.dialect, cxl::parseDialect(dialect));
  for (const auto& h : hostNames) {
    const auto eq = h.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == h.size() || h.rfind("vcs", 0) != 0)
      return fail(Code::kInvalidArgument, fmt::format("--cxl-host '{}': expected vcsN=NAME", h));
    options.hostNames[h.substr(0, eq)] = h.substr(eq + 1);
  }
  SY_ASSIGN(auto fabric, CxlFabric::connect(std::move(options)));
  return std::unique_ptr<FabricDriver>(std::move(fabric));
}

// QEMU VMs and a device pool from `poolFile`; `prefix` names the switch's and ports' ids.
Result<std::unique_ptr<FabricDriver>> openQemu(const std::filesystem::path& poolFile, const std::string& prefix) {
  SY_ASSIGN(auto pool, qemu::loadQemuPool(poolFile.string()));
  spdlog::info("QEMU pool {}: {} VM(s), {} device(s)", poolFile.string(), pool.hosts.size(), pool.devices.size());
  SY_ASSIGN(auto fabric, QemuFabric::open({.pool = std::move(pool), .prefix = prefix}));
  return std::unique_ptr<FabricDriver>(std::move(fabric));
}

Result<std::unique_ptr<SimulatedFabric>> openSimulated(Topology topology, const std::filesystem::path& statePath, int latencyMs,
                                                       const DaemonOptions& o, Clock& clock) {
  SimulatedFabricOptions simOptions;
  simOptions.latency = std::chrono::milliseconds(latencyMs);
  simOptions.statePath = statePath;
  simOptions.seed = o.simSeed;
  SY_ASSIGN(auto fabric, SimulatedFabric::create(std::move(topology), clock, simOptions));
  FaultPlan faults;
  faults.failNext = o.simFailNext;
  faults.failProbability = o.simFailProbability;
  faults.timeoutNext = o.simTimeoutNext;
  fabric->setFaults(faults);
  return fabric;
}

// --domain NAME=DRIVER,...: one driver per domain, behind one MultiFabric.
Result<OpenedFabric> openDomains(const DaemonOptions& o, Clock& clock) {
  OpenedFabric opened;
  std::vector<FabricDomain> domains;
  for (const auto& text : o.domains) {
    SY_ASSIGN(const DomainSpec spec, parseDomainSpec(text));
    if (spec.driver == "redfish") {
      auto driver = openRedfish(spec.url, spec.fabric, spec.user, spec.passwordFile, spec.ca, switchTimeout(o));
      if (!driver) return fail(driver.error().wrap(fmt::format("domain '{}'", spec.name)));
      spdlog::info("domain '{}': Redfish fabric {} at {}", spec.name, spec.fabric, spec.url);
      domains.push_back({spec.name, std::move(*driver)});
      continue;
    }
    if (spec.driver == "cxl") {
      auto driver = openCxl(spec.endpoint, {}, spec.dialect, spec.name + "-", switchTimeout(o));
      if (!driver) return fail(driver.error().wrap(fmt::format("domain '{}'", spec.name)));
      spdlog::info("domain '{}': CXL switch (FM-API) at {}", spec.name, spec.endpoint);
      domains.push_back({spec.name, std::move(*driver)});
      continue;
    }
    if (spec.driver == "qemu") {
      auto driver = openQemu(spec.pool, spec.name + "-");
      if (!driver) return fail(driver.error().wrap(fmt::format("domain '{}'", spec.name)));
      spdlog::info("domain '{}': QEMU VMs over QMP", spec.name);
      domains.push_back({spec.name, std::move(*driver)});
      continue;
    }
    if (spec.driver == "switchtec") {
      auto driver = openSwitchtec(spec.endpoint, {}, spec.name + "-", switchTimeout(o));
      if (!driver) return fail(driver.error().wrap(fmt::format("domain '{}'", spec.name)));
      spdlog::info("domain '{}': Switchtec PAX fabric at {}", spec.name, spec.endpoint);
      domains.push_back({spec.name, std::move(*driver)});
      continue;
    }
    Result<Topology> topology = [&]() -> Result<Topology> {
      if (!spec.topology.empty()) return loadTopologyFile(spec.topology);
      TopologyShape shape;
      shape.totalGpus = spec.generateGpus;
      shape.gpusPerSwitch = 16;
      shape.switchesPerFabric = 4;
      shape.hostsPerFabric = 8;
      shape.idPrefix = spec.name + "-";
      return generateTopology(shape);
    }();
    if (!topology) return fail(topology.error().wrap(fmt::format("domain '{}'", spec.name)));
    const std::filesystem::path state = !spec.state ? o.stateDir / fmt::format("sim-fabric-{}.json", spec.name)
                                        : *spec.state == "none" ? std::filesystem::path() : std::filesystem::path(*spec.state);
    auto fabric = openSimulated(std::move(*topology), state, spec.latencyMs, o, clock);
    if (!fabric) return fail(fabric.error().wrap(fmt::format("domain '{}'", spec.name)));
    spdlog::info("domain '{}': simulated switch{}", spec.name, state.empty() ? " (bindings in memory)" : " (bindings kept in " + state.string() + ")");
    opened.simulated.push_back(fabric->get());
    domains.push_back({spec.name, std::move(*fabric)});
  }
  SY_ASSIGN(auto multi, MultiFabric::create(std::move(domains)));
  opened.driver = std::move(multi);
  return opened;
}

}  // namespace

Result<OpenedFabric> openFabric(const DaemonOptions& o, Clock& clock) {
  if (!o.domains.empty()) {
    if (o.driver != "simulated" || !o.redfishUrl.empty())
      return fail(Code::kInvalidArgument, "--domain replaces --driver and --redfish-url: give the Redfish fabric as --domain NAME=redfish,url=...");
    return openDomains(o, clock);
  }
  if (o.driver == "switchtec") {
    if (o.switchtecEndpoint.empty()) return fail(Code::kInvalidArgument, "--driver switchtec needs --switchtec HOST[:PORT] or --switchtec /dev/switchtecN");
    auto fabric = openSwitchtec(o.switchtecEndpoint, o.switchtecHosts, "", switchTimeout(o));
    if (!fabric) return fail(fabric.error().wrap("--driver switchtec"));
    spdlog::info("fabric driver 'switchtec': PAX fabric at {}", o.switchtecEndpoint);
    return OpenedFabric{std::move(*fabric), {}};
  }
  if (o.driver == "cxl") {
    if (o.cxlEndpoint.empty()) return fail(Code::kInvalidArgument, "--driver cxl needs --cxl HOST[:PORT] (the switch's FM-API endpoint)");
    auto fabric = openCxl(o.cxlEndpoint, o.cxlHosts, o.cxlDialect, "", switchTimeout(o));
    if (!fabric) return fail(fabric.error().wrap("--driver cxl"));
    spdlog::info("fabric driver 'cxl': CXL switch (FM-API, {} dialect) at {}", o.cxlDialect, o.cxlEndpoint);
    return OpenedFabric{std::move(*fabric), {}};
  }
  if (o.driver == "qemu") {
    if (o.qemuPool.empty()) return fail(Code::kInvalidArgument, "--driver qemu needs --qemu-pool FILE (the VMs and the device pool; docs/qemu.md)");
    auto fabric = openQemu(o.qemuPool, "");
    if (!fabric) return fail(fabric.error().wrap("--driver qemu"));
    spdlog::info("fabric driver 'qemu': VMs over QMP, devices hot-plugged");
    return OpenedFabric{std::move(*fabric), {}};
  }
  if (o.driver == "redfish") {
    if (o.redfishUrl.empty()) return fail(Code::kInvalidArgument, "--driver redfish needs --redfish-url https://HOST[:PORT]");
    auto fabric = openRedfish(o.redfishUrl, o.redfishFabric, o.redfishUser, o.redfishPasswordFile, o.redfishCa, switchTimeout(o));
    if (!fabric) return fail(fabric.error().wrap("--driver redfish"));
    spdlog::info("fabric driver 'redfish': fabric {} at {}", o.redfishFabric, o.redfishUrl);
    return OpenedFabric{std::move(*fabric), {}};
  }
  SY_ASSIGN(Topology topology, chooseTopology(o));
  SY_ASSIGN(auto fabric, openSimulated(std::move(topology), o.simState(), o.simLatencyMs, o, clock));
  spdlog::info("fabric driver 'simulated'{}",
               o.simState().empty() ? " (bindings in memory)" : " (bindings kept in " + o.simState().string() + ")");
  SimulatedFabric* simulated = fabric.get();
  return OpenedFabric{std::move(fabric), {simulated}};
}

// The queue's priority classes: --priority-class, or the built-in three.

}  // namespace switchyard
