// yardd: the Switchyard daemon. The composition root: the only place that knows the concrete driver,
// store and clock, and wires them into the engine and the gRPC service.
#include <grpc/support/log.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include "agent/agent_directory.h"
#include "composer/api/resource_provider_service.h"
#include "composer/api/switchyard_service.h"
#include "composer/auth/identities.h"
#include "composer/daemon/template_file.h"
#include "composer/daemon/grpc_security.h"
#include "composer/daemon/host_side.h"
#include "composer/daemon/http_endpoints.h"
#include "composer/daemon/loopback.h"
#include "composer/daemon/open_store.h"
#include "composer/daemon/service_manager.h"
#include "composer/daemon/lockout_report.h"
#include "composer/daemon/secret_files.h"
#include "composer/daemon/daemon_options.h"
#include "composer/daemon/domain_spec.h"
#include "composer/daemon/signal_waiter.h"
#include "composer/daemon/state_lock.h"
#include "composer/api/version_interceptor.h"
#include "composer/model/config_syntax.h"
#include "composer/model/durable_file.h"
#include "composer/model/version.h"
#include "composer/engine/engine.h"
#include "composer/metrics/instrumented_fabric.h"
#include "composer/model/fail_points.h"
#include "composer/daemon/open_fabric.h"

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

// The fail points --fail-point and SWITCHYARD_FAIL_POINTS arm (testing only: each is logged as a warning).
Result<void> armFailPoints(const DaemonOptions& o) {
  std::string spec;
  for (const auto& p : o.failPoints) spec += p + ";";
  SY_ASSIGN(std::string armed, failpoints::configure(spec));
  SY_ASSIGN(std::string fromEnvironment, failpoints::configureFromEnvironment());
  if (!armed.empty() || !fromEnvironment.empty())
    spdlog::warn("fail points armed (testing only): {}{}{}", armed, armed.empty() || fromEnvironment.empty() ? "" : ", ", fromEnvironment);
  return {};
}

// --identities: who may call, with which role and tenants, and the tenants' quotas. None: every caller is
// an admin (warned about off loopback).
Result<std::shared_ptr<auth::Identities>> loadIdentities(const DaemonOptions& o) {
  if (o.identitiesFile.empty()) {
    if (!isLoopbackHost(o.listen.substr(0, o.listen.rfind(':'))))
      spdlog::warn("no --identities: every gRPC client that reaches {} acts as an admin", o.listen);
    return std::shared_ptr<auth::Identities>();
  }
  // It holds password hashes and token digests: one that anyone on the machine can read (or write) is refused.
  SY_TRY(refuseIfOthersMayRead(o.identitiesFile, "--identities"));
  SY_ASSIGN(std::shared_ptr<auth::Identities> identities, auth::Identities::load(o.identitiesFile));
  identities->onLockout([](const auth::Identities::Lockout& lockout) { reportLockout(lockout, nullptr); });
  spdlog::info("identities: {} from {}, {} tenant quota(s)", identities->identities().size(), o.identitiesFile.string(),
               identities->quotas().size());
  return identities;
}

// --placement-profile with its --placement-weight changes.
Result<std::shared_ptr<const ComposableScheduler>> placementScheduler(const DaemonOptions& o) {
  std::vector<std::pair<std::string, double>> weights;
  for (const auto& w : o.placementWeights) {
    const auto eq = w.find('=');
    char* end = nullptr;
    const double value = eq == std::string::npos ? 0 : std::strtod(w.c_str() + eq + 1, &end);
    if (eq == std::string::npos || eq == 0 || end == w.c_str() + eq + 1 || *end != '\0')
      return fail(Code::kInvalidArgument, fmt::format("--placement-weight '{}': expected plugin=number, e.g. best-fit=10", w));
    weights.emplace_back(w.substr(0, eq), value);
  }
  return buildComposableScheduler(o.placementProfile, weights);
}

// The exit status of a yardd that can no longer write (as for a leader that lost its lease): restart it.
constexpr int kExitCannotWrite = 75;

Result<EngineOptions> engineOptionsOf(const DaemonOptions& o, std::shared_ptr<const ComposableScheduler> scheduler,
                                      const auth::Identities* identities, std::shared_ptr<metrics::EngineMetrics> metrics,
                                      SignalWaiter& signalWaiter) {
  EngineOptions options;
  options.placement = std::move(scheduler);
  SY_ASSIGN(options.admission, admission::buildProfile(o.admissionProfile, o.admissionQueueSort));
  spdlog::info("admission profile {}", options.admission->describe());
  options.driverThreads = o.driverThreads;
  options.groupCommitTasks = o.groupCommitTasks;
  options.adoptFabric = o.adoptFabric;
  options.switchCallTimeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.switchTimeoutSeconds * 1000));
  options.hostCallTimeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.hostTimeoutSeconds * 1000));
  options.reconcileInterval = std::chrono::seconds(o.reconcileIntervalSeconds);
  options.retention.events = o.retainEvents;
  options.retention.finishedOperations = o.retainOperations;
  if (identities) options.quotas = identities->quotas();
  SY_ASSIGN(options.priorityClasses, priorityClassesOf(o));
  if (!o.templatesFile.empty()) {
    SY_ASSIGN(options.templates, loadTemplates(o.templatesFile));
  }
  for (const auto& t : options.templates)
    if (!t.priorityClass.empty() && std::none_of(options.priorityClasses.begin(), options.priorityClasses.end(),
                                                 [&](const PriorityClass& c) { return c.name == t.priorityClass; }))
      return fail(Code::kInvalidArgument, fmt::format("--templates: template '{}' names priority class '{}', which yardd does not have", t.name, t.priorityClass));
  options.leaseWarning = *parseDuration(o.leaseWarning);
  options.preemptionGrace = *parseDuration(o.preemptionGrace);
  options.activityInterval = o.activityInterval == "0" ? std::chrono::milliseconds(0) : *parseDuration(o.activityInterval);
  options.idleBusyAbovePercent = o.idleBusyAbovePercent;
  if (o.reclaimIdleAfter != "never") options.reclaim.after = *parseDuration(o.reclaimIdleAfter);
  options.reclaim.dryRun = o.reclaimMode == "dry-run";
  options.metrics = std::move(metrics);
  // A yardd that can no longer write (its store failed, or a newer yardd fenced it out) serves nothing
  // true any more: it says so, and exits 75 for its service manager to start it again (to resume).
  options.onHalt = [&signalWaiter](const std::string& why) { signalWaiter.requestExit(kExitCannotWrite, why); };
  return options;
}

// What the engine discovered is what agents register against (host ids) and are asked for (serials).
Result<void> introduceInventory(Engine& engine, agent::AgentDirectory& agents) {
  SY_ASSIGN(Topology inventory, engine.reads().topology());
  agents.setInventory(inventory);
  for (const auto& h : inventory.hosts)
    if (agents.policy(h.id) == HostPolicy::kUnset)
      spdlog::warn("host {} has no host-side policy: composing onto it is refused until a yard-agent registers for it or "
                   "--host-policy {}=trust-fabric is set",
                   h.id, h.id);
  return {};
}

// The yard-agents' registration service: operators and admins only (with --identities), every removal audited.
std::unique_ptr<agent::AgentRegistryService> agentRegistryOf(HostSide& hosts, Authenticator& authenticator, Engine& engine, Clock& clock,
                                                             bool authenticated) {
  agent::AgentRegistryService::Admit admit;
  if (authenticated)
    admit = [&authenticator](const grpc::ServerContextBase& ctx) -> Result<void> {
      SY_ASSIGN(const Caller caller, authenticator.callerOf(ctx));
      if (caller.role != Role::kOperator && caller.role != Role::kAdmin)
        return fail(Code::kPermissionDenied,
                    fmt::format("'{}' may not register or manage host agents: that needs the operator or admin role", caller.identity));
      return {};
    };
  return std::make_unique<agent::AgentRegistryService>(
      hosts.agents, std::move(admit), [&authenticator, &engine, &clock](const grpc::ServerContextBase& ctx, const HostId& host, const Error* refused) {
        auto caller = authenticator.callerOf(ctx);
        AuditRecord record;
        record.at = clock.now();
        record.caller = caller ? *caller : Caller{"unknown", Role::kViewer, {}};
        record.action = "agent-remove";
        record.target = "host:" + host;
        record.result = refused ? std::string(codeName(refused->code)) : "accepted";
        record.message = refused ? refused->message : fmt::format("the yard-agent of {} was forgotten", host);
        if (auto written = engine.blocking().recordAudit(std::move(record)); !written)
          spdlog::warn("audit of agent removal: {}", written.error().message);
      });
}

// The gRPC server: the switchyard.v1 API, the resource provider, the agents' registry, health and reflection.
Result<std::unique_ptr<grpc::Server>> startGrpcServer(const DaemonOptions& o, const GrpcSecurity& security, std::vector<grpc::Service*> services,
                                                      int& port) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // No SO_REUSEPORT: a second process on the same port must fail to listen, not share the connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.experimental().SetInterceptorCreators(versionInterceptors());  // every answer names yardd's version
  builder.AddListeningPort(o.listen, security.credentials, &port);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0)
    return fail(Code::kUnavailable, fmt::format("cannot listen on {}: is another process using the port? (pick another with --listen)", o.listen));
  return server;
}

// SIGHUP: read the identities file again (a new user, a revoked token, changed quotas) without a restart.
// A file that does not load leaves the identities in use as they are.
void reloadIdentitiesOnHangup(SignalWaiter& signalWaiter, const DaemonOptions& o, const std::shared_ptr<auth::Identities>& identities,
                              Engine& engine) {
  signalWaiter.onReload([&o, identities, &engine] {
    notifyServiceManager("RELOADING=1");
    if (!identities) {
      spdlog::info("SIGHUP: nothing to reload (yardd runs without --identities)");
    } else if (auto exposed = refuseIfOthersMayRead(o.identitiesFile, "--identities"); !exposed) {
      spdlog::error("SIGHUP: {}; keeping the identities in use", exposed.error().message);
    } else if (auto fresh = auth::Identities::load(o.identitiesFile); !fresh) {
      spdlog::error("SIGHUP: {}; keeping the identities in use", fresh.error().message);
    } else {
      identities->replaceWith(**fresh);
      if (auto set = engine.blocking().setQuotas((*fresh)->quotas()); !set) spdlog::error("SIGHUP: quotas not applied: {}", set.error().message);
      spdlog::info("SIGHUP: identities reloaded: {} from {}, {} tenant quota(s)", (*fresh)->identities().size(), o.identitiesFile.string(),
                   (*fresh)->quotas().size());
    }
    notifyServiceManager("READY=1");
  });
}

// Everything yardd serves once it leads, for the drain at the end.
struct Serving {
  grpc::Server& server;
  SwitchyardService& service;
  WebEndpoint& web;
  RedfishEndpoint& redfish;
  CohdiEndpoint& cohdi;
  bmc::Accounts* accounts;
};

// Refuses new work and lets running operations finish (or leaves them resumable), then closes the servers.
void drain(const DaemonOptions& o, Engine& engine, Serving serving) {
  notifyServiceManager("STOPPING=1");
  serving.service.shutdown();
  if (serving.web.capacityHistory) serving.web.capacityHistory->stop();
  engine.stop(std::chrono::seconds(o.shutdownGraceSeconds));
  // Clients that stay connected but idle cannot acknowledge the close, so keep its wait short.
  serving.server.Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  // The engine answered every pending call; let the password checks and the Redfish replies out, then close
  // the HTTP servers.
  if (serving.accounts) serving.accounts->drain();
  if (serving.redfish.service) serving.redfish.service->drain();
  if (serving.redfish.server) serving.redfish.server->stop();
  if (serving.cohdi.server) serving.cohdi.server->stop();
  if (serving.web.server) serving.web.server->stop();
}

// yardd from its flags to its exit status: each step logs what it did, and a step that fails ends the start
// with its message (exit status 1); what is already running stops on the way out.
int run(const DaemonOptions& o) {
  SignalWaiter signalWaiter;
  SystemClock clock;
  SY_TRY_OR_EXIT(armFailPoints(o));
  SY_ASSIGN_OR_EXIT(std::shared_ptr<auth::Identities> identities, loadIdentities(o));
  if (!o.redfishListen.empty() && !identities) {  // before anything starts, not after the engine's recovery
    spdlog::critical("--redfish-listen needs --identities FILE (the accounts Redfish clients log in with; see docs/security.md)");
    return 1;
  }
  SY_ASSIGN_OR_EXIT(GrpcSecurity security, grpcSecurity(o));
  SY_ASSIGN_OR_EXIT(auto scheduler, placementScheduler(o));
  spdlog::info("{}; placement profile {}", versionLine("yardd"), o.placementProfile);

  // One yardd per state directory and per SQLite database: a second one refuses to start (naming the first's pid)
  // instead of serving stale reads beside it.
  SY_ASSIGN_OR_EXIT(StateLock stateLock, StateLock::acquire(o.stateDir / "yardd.lock", "the state directory " + o.stateDir.string()));
  EngineOptions replicaOptions;
  replicaOptions.placement = scheduler;
  if (identities) replicaOptions.quotas = identities->quotas();
  SY_ASSIGN_OR_EXIT(std::optional<OpenedStore> opened, openStore({o, clock, signalWaiter, identities.get(), security, replicaOptions}));
  if (!opened) return 0;  // stopped while standing by
  const bool leader = opened->election != nullptr;

  SY_ASSIGN_OR_EXIT(OpenedFabric fabric, openFabric(o, clock));
  // With metrics on, the engine calls the switch through a decorator that counts every call.
  std::shared_ptr<metrics::EngineMetrics> engineMetrics;
  std::unique_ptr<metrics::InstrumentedFabric> instrumented;
  if (!o.metricsListen.empty()) {
    engineMetrics = std::make_shared<metrics::EngineMetrics>();
    instrumented = std::make_unique<metrics::InstrumentedFabric>(*fabric.driver, *engineMetrics);
  }
  FabricDriver& engineFabric = instrumented ? static_cast<FabricDriver&>(*instrumented) : *fabric.driver;
  SY_ASSIGN_OR_EXIT(EngineOptions engineOptions, engineOptionsOf(o, scheduler, identities.get(), engineMetrics, signalWaiter));
  Engine engine(engineFabric, *opened->store, clock, engineOptions);
  SY_ASSIGN_OR_EXIT(std::unique_ptr<HostSide> hosts, startHostSide(o, fabric, clock));
  engine.useHostAgents(hosts->agents);

  SY_ASSIGN_OR_EXIT(auto report, engine.start());
  if (identities)  // from now on a lockout goes to the audit trail too
    identities->onLockout([&engine](const auth::Identities::Lockout& lockout) { reportLockout(lockout, &engine); });
  spdlog::info("recovery: {} operation(s) resumed, {} drift(s) found", report.resumedOperations, report.drifts.size());
  if (engineMetrics)
    engineMetrics->servingSince.set({leader ? "etcd" : "sqlite"},
                                    std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  SY_TRY_OR_EXIT(introduceInventory(engine, hosts->agents));

  // The adapters over the engine: gRPC, the metrics endpoint and dashboard, Redfish.
  auth::Sessions loginSessions(clock);  // tokens from Login (`yardctl login`), for identities with only a password
  Authenticator authenticator(identities.get(), &loginSessions);
  auto agentRegistry = agentRegistryOf(*hosts, authenticator, engine, clock, identities != nullptr);
  SwitchyardService service(engine, authenticator);
  ResourceProviderService resourceProvider(engine, authenticator);
  // Identities as HTTP Basic / bearer credentials, for the Redfish service and the dashboard.
  std::unique_ptr<bmc::Accounts> accounts;
  if (identities) accounts = std::make_unique<bmc::Accounts>(identities);
  WebEndpoint web;
  if (!o.metricsListen.empty()) {
    SY_ASSIGN_OR_EXIT(web, startWebEndpoint(o, engine, clock, engineMetrics.get(), accounts.get()));
  }
  RedfishEndpoint redfish;
  if (!o.redfishListen.empty()) {
    SY_ASSIGN_OR_EXIT(redfish, startRedfishEndpoint(o, engine, accounts.get(), [&bmcs = hosts->bmcResets](const HostId& host, const std::string& type) {
                        return bmcs.reset(host, type);
                      }));
  }
  CohdiEndpoint cohdi;
  if (!o.cohdiListen.empty()) {
    SY_ASSIGN_OR_EXIT(cohdi, startCohdiEndpoint(o, engine, authenticator, identities.get()));
  }
  int port = 0;
  SY_ASSIGN_OR_EXIT(std::unique_ptr<grpc::Server> server, startGrpcServer(o, security, {&service, &resourceProvider, agentRegistry.get()}, port));
  const std::string host = o.listen.substr(0, o.listen.rfind(':'));
  spdlog::info("yardd listening on {}:{} over {}; {}", host, port, security.description,
               identities ? "callers authenticate (client certificate or bearer token)" : "no --identities: every caller is an admin");
  SY_TRY_OR_EXIT(writePortFile(o.portFile, port));
  notifyServiceManager(fmt::format("READY=1\nSTATUS=serving on {}:{}{}", host, port, leader ? " (leader)" : ""));
  reloadIdentitiesOnHangup(signalWaiter, o, identities, engine);

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
  drain(o, engine, {*server, service, web, redfish, cohdi, accounts.get()});
  if (leader) opened->election->resign();  // a standby takes over now rather than after the lease runs out
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
               "With no flags it runs the embedded simulated fabric (two switches of 8 GPUs, 4 NICs and 4 NVMe\n"
               "drives each, four hosts) and keeps "
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
