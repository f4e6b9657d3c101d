// yardd: the Switchyard daemon. The composition root: the only place that knows the concrete driver,
// store and clock, and wires them into the engine and the gRPC service.
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
#include "bmc/http_server.h"
#include "bmc/redfish_service.h"
#include "composer/api/resource_provider_service.h"
#include "composer/api/switchyard_service.h"
#include "composer/auth/identities.h"
#include "composer/daemon/grpc_security.h"
#include "composer/daemon/lockout_report.h"
#include "composer/daemon/secret_files.h"
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
#include "composer/daemon/open_fabric.h"
#include "fabric/simulated_fabric.h"
#include "fabric/simulated_hosts.h"
#include "fabric/topology_generator.h"
#include "fabric/topology_json.h"
#include "inventory/etcd/etcd_store.h"
#include "inventory/etcd/leader_election.h"
#include "inventory/sqlite_store.h"

using namespace switchyard;

namespace {

void setUpLogging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("yardd");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%-5l%$ %v", spdlog::pattern_time_type::utc);
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
  // gRPC's own lines (status blobs like "UNKNOWN:No address added ... {created_time: ...}") go through yardd's
  // log at debug: yardd logs what they mean in its words (a port in use, a failed handshake), and
  // --log-level debug still shows them.
  gpr_set_log_function([](gpr_log_func_args* args) { spdlog::debug("grpc: {} ({}:{})", args->message, args->file, args->line); });
}

Result<std::vector<PriorityClass>> priorityClassesOf(const DaemonOptions& o) {
  if (o.priorityClasses.empty()) return defaultPriorityClasses();
  std::vector<PriorityClass> classes;
  for (const auto& text : o.priorityClasses) {
    std::string error;
    auto c = parsePriorityClass(text, error);
    if (!c) return fail(Code::kInvalidArgument, "--priority-class " + error);
    if (std::any_of(classes.begin(), classes.end(), [&](const PriorityClass& k) { return k.name == c->name; }))
      return fail(Code::kInvalidArgument, fmt::format("--priority-class: '{}' is named twice", c->name));
    classes.push_back(*c);
  }
  if (std::none_of(classes.begin(), classes.end(), [](const PriorityClass& k) { return k.name == kDefaultPriorityClass; }))
    return fail(Code::kInvalidArgument, fmt::format("--priority-class: name a class '{}' too: requests that name none get it", kDefaultPriorityClass));
  return classes;
}

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

// How yardd reaches etcd: TLS files for an etcds:// store, an etcd user for a cluster with authentication on.
Result<etcd::ClientSecurity> etcdClientSecurity(const DaemonOptions& o, const etcd::EtcdUrl& url) {
  etcd::ClientSecurity s{o.etcdCa.string(), o.etcdCert.string(), o.etcdKey.string(), o.etcdUser, {}};
  const bool tls = url.endpoints.front().starts_with("https://");
  if (!tls && (!s.caFile.empty() || !s.certFile.empty()))
    return fail(Code::kInvalidArgument, fmt::format("--etcd-ca/--etcd-cert are for TLS: write the store as etcds://{}", o.store.substr(7)));
  if (s.certFile.empty() != s.keyFile.empty()) return fail(Code::kInvalidArgument, "--etcd-cert and --etcd-key go together");
  if (s.user.empty() != o.etcdPasswordFile.empty()) return fail(Code::kInvalidArgument, "--etcd-user and --etcd-password-file go together");
  if (!s.user.empty()) {
    SY_TRY(refuseIfOthersMayRead(o.etcdPasswordFile, "--etcd-password-file"));
    SY_ASSIGN(s.password, readPasswordFile(o.etcdPasswordFile, "--etcd-password-file"));
    if (!tls) spdlog::warn("the etcd password for {} goes over plain HTTP: use an etcds:// store", s.user);
  }
  return s;
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

// The service manager's view of yardd (systemd's Type=notify; a no-op when not started by systemd).
void notifyServiceManager(const std::string& state) { sd_notify(0, state.c_str()); }

// The exit status of a yardd that can no longer write (as for a leader that lost its lease): restart it.
constexpr int kExitCannotWrite = 75;

int run(const DaemonOptions& o) {
  SignalWaiter signalWaiter;
  SystemClock clock;
  {
    std::string spec;
    for (const auto& p : o.failPoints) spec += p + ";";
    SY_ASSIGN_OR_EXIT(std::string armed, failpoints::configure(spec));
    SY_ASSIGN_OR_EXIT(std::string fromEnvironment, failpoints::configureFromEnvironment());
    if (!armed.empty() || !fromEnvironment.empty())
      spdlog::warn("fail points armed (testing only): {}{}{}", armed, armed.empty() || fromEnvironment.empty() ? "" : ", ", fromEnvironment);
  }
  std::shared_ptr<auth::Identities> identities;
  if (!o.identitiesFile.empty()) {
    // It holds password hashes and token digests: one that anyone on the machine can read (or write) is refused.
    SY_TRY_OR_EXIT(refuseIfOthersMayRead(o.identitiesFile, "--identities"));
    SY_ASSIGN_OR_EXIT(identities, auth::Identities::load(o.identitiesFile));
    identities->onLockout([](const auth::Identities::Lockout& lockout) { reportLockout(lockout, nullptr); });
    spdlog::info("identities: {} from {}, {} tenant quota(s)", identities->identities().size(), o.identitiesFile.string(),
                 identities->quotas().size());
  } else if (!isLoopbackHost(o.listen.substr(0, o.listen.rfind(':')))) {
    spdlog::warn("no --identities: every gRPC client that reaches {} acts as an admin", o.listen);
  }
  SY_ASSIGN_OR_EXIT(GrpcSecurity security, grpcSecurity(o));
  std::vector<std::pair<std::string, double>> weights;
  for (const auto& w : o.placementWeights) {
    const auto eq = w.find('=');
    char* end = nullptr;
    const double value = eq == std::string::npos ? 0 : std::strtod(w.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == w.c_str() + eq + 1 || *end != '\0') {
      spdlog::critical("--placement-weight '{}': expected plugin=number, e.g. best-fit=10", w);
      return 1;
    }
    weights.emplace_back(w.substr(0, eq), value);
  }
  SY_ASSIGN_OR_EXIT(auto scheduler, buildComposableScheduler(o.placementProfile, weights));
  spdlog::info("{}; placement profile {}", versionLine("yardd"), o.placementProfile);

  // One yardd per state directory and per SQLite database: a second one refuses to start (naming the first's pid)
  // instead of serving stale reads beside it.
  SY_ASSIGN_OR_EXIT(StateLock stateLock, StateLock::acquire(o.stateDir / "yardd.lock", "the state directory " + o.stateDir.string()));
  std::optional<StateLock> databaseLock;
  std::unique_ptr<Store> store;
  std::unique_ptr<etcd::LeaderElection> election;
  if (o.store.empty() || o.store.starts_with("sqlite:")) {
    const std::filesystem::path path = o.store.empty() ? o.db() : std::filesystem::path(o.store.substr(7));
    if (std::filesystem::weakly_canonical(path.parent_path()) != std::filesystem::weakly_canonical(o.stateDir)) {
      SY_ASSIGN_OR_EXIT(auto locked, StateLock::acquire(std::filesystem::path(path.string() + ".yardd-lock"), "the database " + path.string()));
      databaseLock.emplace(std::move(locked));
    }
    SY_ASSIGN_OR_EXIT(auto sqlite, SqliteStore::open(path, o.durability == "full" ? Durability::kFull : Durability::kNormal));
    spdlog::info("store {} (SQLite WAL, synchronous={})", path.string(), o.durability == "full" ? "FULL" : "NORMAL");
    store = std::move(sqlite);
  } else {
    SY_ASSIGN_OR_EXIT(const etcd::EtcdUrl url, etcd::parseEtcdUrl(o.store));
    SY_ASSIGN_OR_EXIT(etcd::ClientSecurity etcdSecurity, etcdClientSecurity(o, url));
    SY_ASSIGN_OR_EXIT(auto remote, EtcdStore::open(EtcdStoreOptions{url.endpoints, url.prefix, std::chrono::milliseconds(5000), etcdSecurity}));
    spdlog::info("store etcd {} under {} ({} member(s){}{})", o.store, url.prefix, url.endpoints.size(),
                 url.endpoints.front().starts_with("https://") ? fmt::format(", TLS{}", etcdSecurity.certFile.empty() ? "" : " with a client certificate") : "",
                 etcdSecurity.user.empty() ? "" : fmt::format(", as etcd user {}", etcdSecurity.user));
    // Active/standby: only the leader opens the engine; the others wait here for the leader key to go.
    election = std::make_unique<etcd::LeaderElection>(
        remote->client(), etcd::ElectionOptions{url.prefix, o.advertise.empty() ? o.listen : o.advertise, std::chrono::seconds(o.leaseTtlSeconds)});
    const auto waitStarted = std::chrono::steady_clock::now();
    // While standing by, serve reads from the store (and refuse changes, naming the leader) on the gRPC port.
    Authenticator standbyAuthenticator(identities.get());
    EngineOptions replicaOptions;
    replicaOptions.placement = scheduler;
    if (identities) replicaOptions.quotas = identities->quotas();
    std::unique_ptr<StandbyReads> standbyReads;
    if (auto reads = StandbyReads::start(*remote, clock, standbyAuthenticator, {o.listen, security.credentials, replicaOptions}); reads) {
      standbyReads = std::move(*reads);
      spdlog::info("standby: serving reads on {}; changes are refused with the leader's address", o.listen);
      notifyServiceManager("READY=1\nSTATUS=standing by: serving reads, waiting for the leadership");
    } else {
      spdlog::warn("standby: not serving reads while standing by: {}", reads.error().message);
    }
    auto won = election->campaign([&signalWaiter] { return signalWaiter.received() != 0; },
                                  [&standbyReads](const std::string& leader) {
                                    spdlog::info("standing by: the leader is {}", leader.empty() ? "(none yet)" : leader);
                                    if (standbyReads) standbyReads->setLeader(leader.starts_with("(") ? std::string() : leader);
                                  });
    if (standbyReads) standbyReads->stop();  // the leader's server takes the port over below
    if (!won) {
      spdlog::info("stopped while standing by");
      return 0;
    }
    notifyServiceManager("STATUS=elected leader: recovering");
    spdlog::info("elected leader after {} ms of standing by (lease {}, fencing revision {}); recovering as after a restart",
                 std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - waitStarted).count(), won->lease,
                 won->keyRevision);
    remote->fenceOn(url.prefix + "leader", won->keyRevision);
    election->keepLeading([](const std::string& why) {
      // A successor may be elected any moment now, and every write of ours is fenced off: stop at once and
      // let the service manager start this yardd again, as a standby.
      spdlog::critical("leadership lost: {}; exiting so a standby takes over (restart this yardd to stand by again)", why);
      spdlog::shutdown();
      std::_Exit(75);
    });
    store = std::move(remote);
  }
  SY_ASSIGN_OR_EXIT(auto opened, openFabric(o, clock));
  // With metrics on, the engine calls the switch through a decorator that counts every call.
  std::shared_ptr<metrics::EngineMetrics> engineMetrics;
  std::unique_ptr<FabricDriver> fabric = std::move(opened.driver);
  std::unique_ptr<metrics::InstrumentedFabric> instrumented;
  if (!o.metricsListen.empty()) {
    engineMetrics = std::make_shared<metrics::EngineMetrics>();
    instrumented = std::make_unique<metrics::InstrumentedFabric>(*fabric, *engineMetrics);
  }
  FabricDriver& engineFabric = instrumented ? static_cast<FabricDriver&>(*instrumented) : *fabric;


  EngineOptions engineOptions;
  engineOptions.placement = scheduler;
  engineOptions.driverThreads = o.driverThreads;
  engineOptions.switchCallTimeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.switchTimeoutSeconds * 1000));
  engineOptions.hostCallTimeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.hostTimeoutSeconds * 1000));
  engineOptions.reconcileInterval = std::chrono::seconds(o.reconcileIntervalSeconds);
  engineOptions.retention.events = o.retainEvents;
  engineOptions.retention.finishedOperations = o.retainOperations;
  if (identities) engineOptions.quotas = identities->quotas();
  SY_ASSIGN_OR_EXIT(engineOptions.priorityClasses, priorityClassesOf(o));
  engineOptions.leaseWarning = *parseDuration(o.leaseWarning);
  engineOptions.preemptionGrace = *parseDuration(o.preemptionGrace);
  engineOptions.activityInterval = o.activityInterval == "0" ? std::chrono::milliseconds(0) : *parseDuration(o.activityInterval);
  engineOptions.idleBusyAbovePercent = o.idleBusyAbovePercent;
  if (o.reclaimIdleAfter != "never") engineOptions.reclaim.after = *parseDuration(o.reclaimIdleAfter);
  engineOptions.reclaim.dryRun = o.reclaimMode == "dry-run";
  engineOptions.metrics = engineMetrics;
  // A yardd that can no longer write (its store failed, or a newer yardd fenced it out) serves nothing
  // true any more: it says so, and exits 75 for its service manager to start it again (to resume).
  engineOptions.onHalt = [&signalWaiter](const std::string& why) { signalWaiter.requestExit(kExitCannotWrite, why); };
  Engine engine(engineFabric, *store, clock, engineOptions);

  // The host side: registered yard-agents, the simulated hosts of the simulated fabric, the policies.
  SY_ASSIGN_OR_EXIT(auto hostOptions, hostSideOptions(o));
  SY_ASSIGN_OR_EXIT(auto bmcOptions, bmcResetOptions(o, hostOptions));
  agent::AgentDirectory agents(clock, hostOptions);
  bmc::BmcResetHosts bmcResets(bmcOptions);
  agents.useBmcResets(bmcResets);
  std::unique_ptr<SimulatedHosts> simulatedHosts;
  if (!opened.simulated.empty() && o.simHostAgents) {
    // The simulated switches' inventories are in memory; a real fabric is discovered once, by the engine's start.
    Topology simulated;
    for (SimulatedFabric* sim : opened.simulated) {
      SY_ASSIGN_OR_EXIT(Topology part, sim->discover());
      for (auto& h : part.hosts) simulated.hosts.push_back(std::move(h));
      for (auto& d : part.devices) simulated.devices.push_back(std::move(d));
    }
    auto routedPort = [sims = opened.simulated](const DeviceId& device) -> std::optional<PortId> {
      for (SimulatedFabric* sim : sims)
        if (auto port = sim->routedPort(device)) return port;
      return std::nullopt;
    };
    simulatedHosts = std::make_unique<SimulatedHosts>(simulated, routedPort, clock,
                                                      SimulatedHostsOptions{.appearDelay = std::chrono::milliseconds(o.simHostDelayMs)});
    agents.useLocalAgents(*simulatedHosts);
    spdlog::info("host side: simulated host agents serve all {} host(s) until a yard-agent registers for one", simulated.hosts.size());
  }
  engine.useHostAgents(agents);
  SY_ASSIGN_OR_EXIT(auto report, engine.start());
  if (identities)  // from now on a lockout goes to the audit trail too
    identities->onLockout([&engine](const auth::Identities::Lockout& lockout) { reportLockout(lockout, &engine); });
  spdlog::info("recovery: {} operation(s) resumed, {} drift(s) found", report.resumedOperations, report.drifts.size());
  if (engineMetrics)
    engineMetrics->servingSince.set({election ? "etcd" : "sqlite"},
                                    std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  // What the engine discovered is what agents register against (host ids) and are asked for (serials).
  SY_ASSIGN_OR_EXIT(Topology inventory, engine.topology());
  agents.setInventory(inventory);
  for (const auto& h : inventory.hosts)
    if (agents.policy(h.id) == HostPolicy::kUnset)
      spdlog::warn("host {} has no host-side policy: composing onto it is refused until a yard-agent registers for it or "
                   "--host-policy {}=trust-fabric is set",
                   h.id, h.id);
  auth::Sessions loginSessions(clock);  // tokens from Login (`yardctl login`), for identities with only a password
  Authenticator authenticator(identities.get(), &loginSessions);
  agent::AgentRegistryService agentRegistry(
      agents,
      identities ? agent::AgentRegistryService::Admit([&authenticator](const grpc::ServerContextBase& ctx) -> Result<void> {
        SY_ASSIGN(const Caller caller, authenticator.callerOf(ctx));
        if (caller.role != Role::kOperator && caller.role != Role::kAdmin)
          return fail(Code::kPermissionDenied, fmt::format("'{}' may not register or manage host agents: that needs the operator or admin role",
                                                           caller.identity));
        return {};
      })
                 : nullptr,
      [&authenticator, &engine, &clock](const grpc::ServerContextBase& ctx, const HostId& host, const Error* refused) {
        auto caller = authenticator.callerOf(ctx);
        AuditRecord record;
        record.at = clock.now();
        record.caller = caller ? *caller : Caller{"unknown", Role::kViewer, {}};
        record.action = "agent-remove";
        record.target = "host:" + host;
        record.result = refused ? std::string(codeName(refused->code)) : "accepted";
        record.message = refused ? refused->message : fmt::format("the yard-agent of {} was forgotten", host);
        if (auto written = engine.recordAudit(std::move(record)); !written) spdlog::warn("audit of agent removal: {}", written.error().message);
      });

  SwitchyardService service(engine, authenticator);
  ResourceProviderService resourceProvider(engine, authenticator);

  // Identities as HTTP Basic / bearer credentials, for the Redfish service and the dashboard.
  std::unique_ptr<bmc::Accounts> accounts;
  if (identities) accounts = std::make_unique<bmc::Accounts>(identities);

  // Metrics, the dashboard and its JSON, when asked for: another adapter over the same engine.
  std::unique_ptr<web::CapacityHistory> capacityHistory;
  std::unique_ptr<web::WebService> web;
  std::unique_ptr<bmc::HttpServer> webServer;
  if (!o.metricsListen.empty()) {
    const std::string metricsHost = o.metricsListen.substr(0, o.metricsListen.rfind(':'));
    bmc::HttpServerOptions httpOptions{o.metricsListen};
    if (o.metricsTls) {
      bmc::CertificateFiles files{o.metricsCert.empty() ? o.stateDir / "metrics-cert.pem" : o.metricsCert,
                                  o.metricsKey.empty() ? o.stateDir / "metrics-key.pem" : o.metricsKey};
      auto made = bmc::ensureCertificate(files, metricsHost);
      if (!made) {
        spdlog::critical("metrics: {}", made.error().message);
        engine.stop(std::chrono::seconds(0));
        return 1;
      }
      httpOptions.tls = files;
    } else if (identities && !isLoopbackHost(metricsHost)) {
      spdlog::warn("metrics and dashboard on plain HTTP off loopback: HTTP Basic passwords and tokens cross the network in the clear; "
                   "consider --metrics-tls");
    }
    capacityHistory = std::make_unique<web::CapacityHistory>(
        engine, clock, std::chrono::milliseconds(static_cast<std::int64_t>(o.capacitySampleSeconds * 1000)));
    capacityHistory->start();
    web = std::make_unique<web::WebService>(engine, engineMetrics.get(), accounts.get(), capacityHistory.get());
    auto started = bmc::HttpServer::start(httpOptions, [w = web.get()](const bmc::HttpRequest& req, bmc::Reply reply, bmc::OpenStream openStream,
                                                                       const std::string& peer) {
      w->handle(req, std::move(reply), openStream, peer);
    });
    if (!started) {
      spdlog::critical("metrics: {}", started.error().message);
      engine.stop(std::chrono::seconds(0));
      return 1;
    }
    webServer = std::move(*started);
    spdlog::info("metrics on {}://{}:{}/metrics, dashboard at /{}", httpOptions.tls ? "https" : "http", metricsHost, webServer->port(),
                 identities ? " (credentials needed)" : "");
    if (!o.metricsPortFile.empty()) {
      std::ofstream(o.metricsPortFile.string() + ".tmp") << webServer->port() << "\n";
      std::filesystem::rename(o.metricsPortFile.string() + ".tmp", o.metricsPortFile);
    }
  }

  // The Redfish service, when asked for: another adapter over the same engine.
  std::unique_ptr<bmc::RedfishService> redfish;
  std::unique_ptr<bmc::HttpServer> redfishServer;
  if (!o.redfishListen.empty()) {
    bmc::HttpServerOptions httpOptions{o.redfishListen};
    if (!o.redfishHttp) {
      bmc::CertificateFiles files{o.redfishCert.empty() ? o.stateDir / "redfish-cert.pem" : o.redfishCert,
                                  o.redfishKey.empty() ? o.stateDir / "redfish-key.pem" : o.redfishKey};
      auto made = bmc::ensureCertificate(files, o.redfishListen.substr(0, o.redfishListen.rfind(':')));
      if (!made) {
        spdlog::critical("redfish: {}", made.error().message);
        engine.stop(std::chrono::seconds(0));
        return 1;
      }
      if (*made)
        spdlog::warn("redfish: made a self-signed TLS certificate {} (key {}); clients trust it by pinning that file, or configure "
                     "--redfish-cert/--redfish-key",
                     files.certificate.string(), files.key.string());
      httpOptions.tls = files;
    }
    if (!identities) {
      spdlog::critical("--redfish-listen needs --identities FILE (the accounts Redfish clients log in with; see docs/security.md)");
      engine.stop(std::chrono::seconds(0));
      return 1;
    }
    redfish = std::make_unique<bmc::RedfishService>(engine, *accounts);
    auto started = bmc::HttpServer::start(httpOptions, [r = redfish.get()](const bmc::HttpRequest& req, bmc::Reply reply, bmc::OpenStream open,
                                                                            const std::string& peer) {
      r->handle(req, std::move(reply), std::move(open), peer);
    });
    if (!started) {
      spdlog::critical("redfish: {}", started.error().message);
      engine.stop(std::chrono::seconds(0));
      return 1;
    }
    redfishServer = std::move(*started);
    if (httpOptions.tls)
      spdlog::info("Redfish service on https://{}:{}", o.redfishListen.substr(0, o.redfishListen.rfind(':')), redfishServer->port());
    else
      spdlog::warn("Redfish service on http://{}:{} (plain HTTP: Basic auth sends passwords in the clear)",
                   o.redfishListen.substr(0, o.redfishListen.rfind(':')), redfishServer->port());
    if (!o.redfishPortFile.empty()) {
      std::ofstream(o.redfishPortFile.string() + ".tmp") << redfishServer->port() << "\n";
      std::filesystem::rename(o.redfishPortFile.string() + ".tmp", o.redfishPortFile);
    }
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  // No SO_REUSEPORT: a second process on the same port must fail to listen, not share the connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.experimental().SetInterceptorCreators(versionInterceptors());  // every answer names yardd's version
  builder.AddListeningPort(o.listen, security.credentials, &port);
  builder.RegisterService(&service);
  builder.RegisterService(&resourceProvider);
  builder.RegisterService(&agentRegistry);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    spdlog::critical("cannot listen on {}: is another process using the port? (pick another with --listen)", o.listen);
    engine.stop(std::chrono::seconds(0));
    return 1;
  }
  const std::string host = o.listen.substr(0, o.listen.rfind(':'));
  spdlog::info("yardd listening on {}:{} over {}; {}", host, port, security.description,
               identities ? "callers authenticate (client certificate or bearer token)" : "no --identities: every caller is an admin");
  if (!o.portFile.empty()) {
    std::ofstream(o.portFile.string() + ".tmp") << port << "\n";
    std::filesystem::rename(o.portFile.string() + ".tmp", o.portFile);
  }
  notifyServiceManager(fmt::format("READY=1\nSTATUS=serving on {}:{}{}", host, port, election ? " (leader)" : ""));
  // SIGHUP: read the identities file again (a new user, a revoked token, changed quotas) without a restart.
  // A file that does not load leaves the identities in use as they are.
  signalWaiter.onReload([&o, &identities, &engine] {
    notifyServiceManager("RELOADING=1");
    if (!identities) {
      spdlog::info("SIGHUP: nothing to reload (yardd runs without --identities)");
    } else if (auto exposed = refuseIfOthersMayRead(o.identitiesFile, "--identities"); !exposed) {
      spdlog::error("SIGHUP: {}; keeping the identities in use", exposed.error().message);
    } else if (auto fresh = auth::Identities::load(o.identitiesFile); !fresh) {
      spdlog::error("SIGHUP: {}; keeping the identities in use", fresh.error().message);
    } else {
      identities->replaceWith(**fresh);
      if (auto set = engine.setQuotas((*fresh)->quotas()); !set) spdlog::error("SIGHUP: quotas not applied: {}", set.error().message);
      spdlog::info("SIGHUP: identities reloaded: {} from {}, {} tenant quota(s)", (*fresh)->identities().size(), o.identitiesFile.string(),
                   (*fresh)->quotas().size());
    }
    notifyServiceManager("READY=1");
  });

  // Signals were blocked before any thread started; the signal waiter's thread receives them.
  const int received = signalWaiter.wait();
  const auto [exitStatus, why] = signalWaiter.exitRequest();
  if (exitStatus != 0) {
    if (auto* health = server->GetHealthCheckService()) health->SetServingStatus(false);
    spdlog::critical("yardd can no longer write its store ({}): not serving; exiting with status {} so its service manager "
                     "restarts it, and the restart resumes every operation from its last recorded step",
                     why, exitStatus);
  } else {
    spdlog::info("{} received: draining (up to {} s for running operations)", received == SIGTERM ? "SIGTERM" : "SIGINT",
                 o.shutdownGraceSeconds);
  }
  signalWaiter.onReload(nullptr);
  if (identities) identities->onLockout([](const auth::Identities::Lockout& lockout) { reportLockout(lockout, nullptr); });
  notifyServiceManager("STOPPING=1");
  // Refuse new work and let running operations finish (or leave them resumable), then close the
  // server. Clients that stay connected but idle cannot acknowledge the close, so keep its wait short.
  service.shutdown();
  if (capacityHistory) capacityHistory->stop();
  engine.stop(std::chrono::seconds(o.shutdownGraceSeconds));
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  // The engine answered every pending call; let the password checks and the Redfish replies out, then close
  // the HTTP servers.
  if (accounts) accounts->drain();
  if (redfish) redfish->drain();
  if (redfishServer) redfishServer->stop();
  if (webServer) webServer->stop();
  if (election) election->resign();  // a standby takes over now rather than after the lease runs out
  spdlog::info("yardd stopped");
  return exitStatus;
}

}  // namespace

int main(int argc, char** argv) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  DaemonOptions options;
  CLI::App app{"yardd: the Switchyard composable-infrastructure daemon.\n"
               "Keeps the pool's inventory, composes logical servers by binding fabric devices to host upstream\n"
               "ports, and serves the switchyard.v1 gRPC API (with health checking and reflection).\n"
               "With no flags it runs the embedded simulated fabric (two 8-GPU switches, four hosts) and keeps\n"
               "its SQLite database under the state directory."};
  addDaemonOptions(app, options);
  bool hashPassword = false;
  bool newToken = false;
  app.add_flag("--hash-password", hashPassword,
               "Read a password from stdin and print its hash for the identities file's \"password\", then exit");
  app.add_flag("--new-token", newToken,
               "Print a new random bearer token and, for the identities file, its \"token_sha256\", then exit");
  app.set_version_flag("--version", versionLine("yardd"), "Print yardd's version (and git commit) and exit");
  // CLI11 skips unknown keys and reads a broken line as some value: the file is checked first.
  if (auto checked = switchyard::checkConfigOf(app, argc, argv); !checked) {
    std::fprintf(stderr, "error: %s\n", checked.error().message.c_str());
    return 2;
  }
  CLI11_PARSE(app, argc, argv);
  if (hashPassword) {
    std::string password;
    std::getline(std::cin, password);
    if (password.empty()) {
      std::fprintf(stderr, "yardd --hash-password: no password on stdin\n");
      return 2;
    }
    std::printf("%s\n", auth::Identities::hashPassword(password).c_str());
    return 0;
  }
  if (newToken) {
    const std::string token = auth::Identities::newToken();
    std::printf("token:        %s\ntoken_sha256: %s\n", token.c_str(), auth::Identities::hashToken(token).c_str());
    return 0;
  }
  setUpLogging(options.logLevel);
  int rc = 1;
  try {
    rc = run(options);  // everything of ours is closed (store, engine, server) when it returns
  } catch (const std::exception& e) {
    // Every expected failure is a Result with a message; this only keeps a bug from ending in abort().
    spdlog::critical("internal error: {}; please report it with the log above", e.what());
  }
  spdlog::shutdown();
  // gRPC's library teardown can block for seconds on idle client connections; nothing of ours is left
  // to flush, so leave without it.
  std::_Exit(rc);
}
