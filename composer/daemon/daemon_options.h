// yardd's flags (also readable from a TOML/INI config file with --config).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <charconv>
#include <filesystem>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "composer/engine/admission/admission_profile.h"
#include "composer/model/listen_address.h"
#include "composer/model/queue.h"
#include "composer/packing/composable_model.h"

namespace switchyard {

struct DaemonOptions {
  std::string listen = "127.0.0.1:7390";
  std::filesystem::path stateDir = defaultStateDir();
  std::filesystem::path dbPath;  // default: <state-dir>/yard.db
  bool adoptFabric = false;       // start on a store another fabric made (EngineOptions::adoptFabric)
  std::string durability = "normal";
  std::size_t groupCommitTasks = 32;  // EngineOptions::groupCommitTasks
  std::filesystem::path topologyFile;
  int generateGpus = 0;
  std::string driver = "simulated";  // simulated | redfish | switchtec | cxl | qemu
  std::string switchtecEndpoint;      // HOST[:PORT][@INSTANCE] or /dev/switchtecN
  std::vector<std::string> switchtecHosts;  // PAXn-pP=NAME: operator names for the fabric's host ports
  std::string cxlEndpoint;                  // HOST[:PORT]: a CXL switch's FM-API endpoint (MCTP over TCP)
  std::vector<std::string> cxlHosts;        // vcsN=NAME: operator names for the switch's virtual CXL switches
  std::string cxlDialect = "spec";          // spec | jackrabbit
  std::filesystem::path qemuPool;           // the QEMU driver's VMs and device pool (JSON; docs/qemu.md)
  std::vector<std::string> domains;  // NAME=DRIVER[,KEY=VALUE...] (domain_spec.h); empty: one domain from the flags above
  std::string redfishUrl;
  std::string redfishFabric = "CXL";
  std::string redfishUser;
  std::filesystem::path redfishPasswordFile;
  std::filesystem::path redfishCa;
  std::string simStatePath;  // default: <state-dir>/sim-fabric.json; "none": memory only
  int simLatencyMs = 0;
  int simFailNext = 0;
  double simFailProbability = 0.0;
  int simTimeoutNext = 0;
  std::uint64_t simSeed = 1;
  int driverThreads = 256;
  double switchTimeoutSeconds = 60;
  int shutdownGraceSeconds = 10;
  std::string logLevel = "info";
  std::string placementProfile = "switchyard-v2";
  std::vector<std::string> placementWeights;  // plugin=weight
  std::string admissionProfile{admission::kDefaultAdmissionProfile};
  std::vector<std::string> admissionQueueSort;  // empty: the profile's
  int reconcileIntervalSeconds = 30;
  std::size_t retainEvents = 1'000'000;
  std::size_t retainOperations = 100'000;
  std::filesystem::path portFile;
  std::string redfishListen;                // empty: no Redfish service
  bool redfishHttp = false;                 // plain HTTP instead of HTTPS
  std::filesystem::path redfishCert;        // default: <state-dir>/redfish-cert.pem (self-signed at first start)
  std::filesystem::path redfishKey;         // default: <state-dir>/redfish-key.pem
  std::filesystem::path redfishPortFile;
  std::string cohdiListen;                  // empty: no CoHDI fabric-manager API
  std::filesystem::path cohdiCert;          // default: <state-dir>/cohdi-cert.pem (self-signed at first start)
  std::filesystem::path cohdiKey;           // default: <state-dir>/cohdi-key.pem
  std::filesystem::path cohdiPortFile;
  std::string metricsListen;                // empty: no metrics/dashboard endpoint
  std::string metricsDeviceSeries = "auto";  // switchyard_device_info: auto, all, none
  std::filesystem::path metricsPortFile;
  bool metricsTls = false;                  // HTTPS with <state-dir>/metrics-cert.pem or --metrics-cert/--metrics-key
  std::filesystem::path metricsCert;
  std::filesystem::path metricsKey;
  double capacitySampleSeconds = 60;        // how often the dashboard's capacity history is sampled
  std::vector<std::string> priorityClasses;  // NAME=VALUE[:preemptible[:requeue]][:preempting]; empty: production, batch, spot
  std::string templatesFile;  // machine templates (JSON); empty: the built-in examples; "none": none
  std::string leaseWarning = "10m";          // lease.expiring this long before a lease ends
  std::string preemptionGrace = "30s";       // system.preempting this long before the victim is decomposed
  std::string activityInterval = "60s";      // how often hosts are asked what attached GPUs do; 0s: never
  int idleBusyAbovePercent = 5;              // a GPU above this utilization is busy
  std::string reclaimIdleAfter = "never";    // yardd's reclaim policy for tenants and systems that choose none
  std::string reclaimMode = "dry-run";
  std::vector<std::string> hostPolicies;     // HOST=POLICY
  std::string hostPolicyDefault = "unset";   // for hosts no agent serves and no --host-policy names
  bool simHostAgents = true;                 // simulated driver: in-process simulated agents serve every host
  int simHostDelayMs = 0;
  std::vector<std::string> simGpuBusy;  // DEVICE=PERCENT: what simulated hosts report the GPU doing (the demo's busy GPU)
  double hostTimeoutSeconds = 30;
  int agentHeartbeatSeconds = 5;
  std::vector<std::string> hostBmcs;         // HOST=URL
  std::string hostBmcUser;
  std::filesystem::path hostBmcPasswordFile;
  std::filesystem::path hostBmcCa;
  std::filesystem::path agentCa;    // dial yard-agents over TLS, trusting this CA
  std::filesystem::path agentCert;  // client certificate for agents that require one
  std::filesystem::path agentKey;
  std::filesystem::path identitiesFile;  // empty: no authentication (every caller is an admin)
  std::filesystem::path tlsCert;         // empty: <state-dir>/grpc-cert.pem, self-signed at first start
  std::filesystem::path tlsKey;
  std::filesystem::path tlsClientCa;     // accept client certificates signed by this CA
  bool requireClientCert = false;
  bool plaintext = false;                // loopback only
  std::vector<std::string> failPoints;   // NAME=ACTION[@N], for the crash harness

  [[nodiscard]] std::filesystem::path grpcCertificate() const { return stateDir / "grpc-cert.pem"; }
  [[nodiscard]] std::filesystem::path db() const { return dbPath.empty() ? stateDir / "yard.db" : dbPath; }
  std::string store;  // empty: SQLite at db(); etcd://HOST:PORT[,HOST:PORT...][/PREFIX]: the etcd store
  int leaseTtlSeconds = 6;  // etcd store: the leader lease (at least 1.5x etcd's election timeout)
  std::string advertise;    // etcd store: how this yardd names itself in the leader key (default: --listen)
  std::filesystem::path etcdCa;    // etcds:// store: trust this CA for the members' certificates
  std::filesystem::path etcdCert;  // etcds:// store: the client certificate to present (etcd --client-cert-auth)
  std::filesystem::path etcdKey;
  std::string etcdUser;                   // etcd store with authentication on: the user
  std::filesystem::path etcdPasswordFile;  // and its password (first line; mode 0600)
  [[nodiscard]] std::filesystem::path simState() const {
    if (simStatePath == "none") return {};
    return simStatePath.empty() ? stateDir / "sim-fabric.json" : std::filesystem::path(simStatePath);
  }

  static std::filesystem::path defaultStateDir() {
    // systemd's StateDirectory= (a list separated by ':' when the unit names several: the first).
    if (const char* state = std::getenv("STATE_DIRECTORY"); state && *state) {
      const std::string_view first(state, std::strcspn(state, ":"));
      return std::filesystem::path(first);
    }
    if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "switchyard";
    if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".local/state/switchyard";
    return "/var/lib/switchyard";
  }
};

// HOST:PORT with a port from 0 to 65535 (composer/model/listen_address.h): ":70000" is refused, not wrapped.
inline CLI::Validator listenAddressCheck(std::string flag) {
  return CLI::Validator(
      [flag](std::string& text) -> std::string {
        auto parsed = parseListenAddress(text, flag);
        return parsed ? std::string() : parsed.error().message;
      },
      "HOST:PORT");
}

inline void addDaemonOptions(CLI::App& app, DaemonOptions& o) {
  app.set_config("--config", "", "Read flags from a TOML/INI file: long flag names as keys, e.g. listen = \"0.0.0.0:7390\" and durability = \"full\"; command-line flags win");
  app.add_option("--listen", o.listen, "gRPC address; port 0 picks a free port (the bound port is logged)")
      ->check(listenAddressCheck("--listen"))
      ->capture_default_str();
  app.add_option("--state-dir", o.stateDir, "Directory for the database and the simulated switch's state")->capture_default_str();
  app.add_option("--lease-ttl", o.leaseTtlSeconds,
                 "With an etcd store: the leader lease in seconds. A dead leader is replaced after about this long; keep it at "
                 "least 1.5x etcd's election timeout")
      ->check(CLI::Range(2, 300))
      ->capture_default_str();
  app.add_option("--advertise", o.advertise, "With an etcd store: this yardd's address as the leader key shows it (default: --listen)");
  app.add_option("--db", o.dbPath, "SQLite database path (default: <state-dir>/yard.db)");
  app.add_flag("--adopt-fabric", o.adoptFabric,
               "Start on a store that another fabric made (none of the switches it records is in this one; without this flag "
               "yardd refuses, naming both). Its systems on devices this fabric lacks stay degraded until `yardctl systems "
               "forget NAME` removes them. Usually the better answer is a state directory of the fabric's own (--state-dir)");
  app.add_option("--store", o.store,
                 "Where the state lives: empty for the SQLite file (--db), or etcd://HOST:PORT[,HOST:PORT...][/PREFIX] for an etcd "
                 "cluster (etcds:// over TLS; prefix default /switchyard/; etcd needs --max-txn-ops 16384; docs/operations.md)");
  app.add_option("--etcd-ca", o.etcdCa, "etcds:// store: trust this CA (PEM) for the members' certificates (default: the system's store)")
      ->check(CLI::ExistingFile);
  app.add_option("--etcd-cert", o.etcdCert, "etcds:// store: present this client certificate (PEM), for etcd's --client-cert-auth")
      ->check(CLI::ExistingFile);
  app.add_option("--etcd-key", o.etcdKey, "etcds:// store: the client certificate's private key (PEM)")->check(CLI::ExistingFile);
  app.add_option("--etcd-user", o.etcdUser,
                 "etcd store with authentication on: the etcd user (its roles must cover the store's prefix); with --etcd-password-file");
  app.add_option("--etcd-password-file", o.etcdPasswordFile, "The etcd user's password (first line of the file, mode 0600)")
      ->check(CLI::ExistingFile);
  app.add_option("--durability", o.durability,
                 "normal: WAL + synchronous=NORMAL, survives kill -9 (default); full: fsync every commit, survives power loss")
      ->check(CLI::IsMember({"normal", "full"}))->capture_default_str();
  app.add_option("--group-commit", o.groupCommitTasks,
                 "The most requests and step results, each queued behind the one before, whose store writes go in one "
                 "transaction; each is answered only once that transaction is written (docs/adr/0035-group-commit.md). 1: every "
                 "one writes alone")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--topology", o.topologyFile, "Simulated fabric topology (JSON); default: the embedded two-chassis pool")
      ->check(CLI::ExistingFile);
  app.add_option("--generate-gpus", o.generateGpus, "Simulate a generated pool of N GPUs (16 per switch, 4 switches per fabric)")
      ->check(CLI::Range(1, 1'000'000))->excludes("--topology");
  app.add_option("--sim-state", o.simStatePath,
                 "Where the simulated switch keeps its binding table (default: <state-dir>/sim-fabric.json; 'none': memory only)");
  app.add_option("--sim-latency-ms", o.simLatencyMs, "Simulated switch latency per call")->check(CLI::Range(0, 600'000))->capture_default_str();
  app.add_option("--sim-fail-next", o.simFailNext, "Fault injection: the next N binds/unbinds fail")->check(CLI::NonNegativeNumber);
  app.add_option("--sim-fail-probability", o.simFailProbability, "Fault injection: each bind/unbind fails with probability p")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--sim-timeout-next", o.simTimeoutNext, "Fault injection: the next N binds/unbinds time out")->check(CLI::NonNegativeNumber);
  app.add_option("--sim-seed", o.simSeed, "Seed for probabilistic faults")->capture_default_str();
  app.add_option("--driver", o.driver,
                 "Switch driver: simulated (the embedded simulated switch; default), redfish (a fabric manager's Redfish "
                 "service: --redfish-url, --redfish-fabric, --redfish-user, --redfish-password-file), switchtec (a Microchip "
                 "Switchtec PAX fabric, natively: --switchtec, --switchtec-host; docs/switchtec.md), cxl (a CXL switch through its "
                 "Fabric Manager API over MCTP: --cxl, --cxl-host, --cxl-dialect; docs/cxl.md) or qemu (QEMU VMs as hosts, devices "
                 "hot-plugged into them over QMP: --qemu-pool; docs/qemu.md)")
      ->check(CLI::IsMember({"simulated", "redfish", "switchtec", "cxl", "qemu"}))
      ->capture_default_str();
  app.add_option("--domain", o.domains,
                 "A fabric domain of a pool run by several switch managers (repeat per domain): NAME=simulated,topology=FILE "
                 "(or generate-gpus=N; state=FILE|none, latency-ms=N) or NAME=redfish,url=https://HOST[:PORT] (fabric=ID, user=NAME, "
                 "password-file=FILE, ca=FILE) or NAME=switchtec,endpoint=HOST[:PORT]|/dev/switchtecN or "
                 "NAME=cxl,endpoint=HOST[:PORT] (dialect=spec|jackrabbit) or NAME=qemu,pool=FILE. One pool view; no system spans two domains; capacity is shown per domain. "
                 "Replaces --driver, --topology and --generate-gpus (docs/operations.md)")
      ->excludes("--topology")
      ->excludes("--generate-gpus");
  app.add_option("--switchtec", o.switchtecEndpoint,
                 "Switchtec driver: the PAX's management port, HOST[:PORT][@INSTANCE] (TCP, port 54545 by default), or the kernel "
                 "driver's /dev/switchtecN on the management host");
  app.add_option("--switchtec-host", o.switchtecHosts,
                 "Switchtec driver: name the host cabled to a PAX port, paxN-pP=NAME (repeat; two ports with one name are one host "
                 "with two upstream ports). Unnamed hosts are called paxN-hostP");
  app.add_option("--cxl", o.cxlEndpoint,
                 "CXL driver: the switch's Fabric Manager API endpoint, HOST[:PORT] (MCTP over TCP in the framing of Jackrabbit "
                 "Labs' cse; port 2508 by default)");
  app.add_option("--cxl-host", o.cxlHosts,
                 "CXL driver: name the host behind a virtual CXL switch, vcsN=NAME (repeat). Unnamed hosts are called cxl0-vcsN");
  app.add_option("--cxl-dialect", o.cxlDialect,
                 "CXL driver: spec (CXL 2.0+ as written; default) or jackrabbit (Jackrabbit Labs' cse: response category in the high "
                 "nibble, an MCTP type byte inside tunnelled commands, configuration registers as byte offsets)")
      ->check(CLI::IsMember({"spec", "jackrabbit"}))
      ->capture_default_str();
  app.add_option("--qemu-pool", o.qemuPool,
                 "QEMU driver: a JSON file naming the VMs (QMP socket, hot-plug slots) and the device pool (device_add properties: "
                 "emulated NVMe or NICs, or vfio-pci functions of this hypervisor); format in docs/qemu.md")
      ->check(CLI::ExistingFile);
  app.add_option("--redfish-url", o.redfishUrl, "Redfish driver: the service, https://HOST[:PORT] (its certificate is verified) or http://");
  app.add_option("--redfish-ca", o.redfishCa, "Redfish driver: trust this CA certificate (PEM) for https, e.g. the manager's self-signed one")
      ->check(CLI::ExistingFile);
  app.add_option("--redfish-fabric", o.redfishFabric, "Redfish driver: the Fabric's id under /redfish/v1/Fabrics")->capture_default_str();
  app.add_option("--redfish-user", o.redfishUser, "Redfish driver: the account to log in with (HTTP Basic)");
  app.add_option("--redfish-password-file", o.redfishPasswordFile,
                 "Redfish driver: a file holding the account's password (first line), so it never shows in ps")
      ->check(CLI::ExistingFile);
  app.add_option("--driver-threads", o.driverThreads,
                 "The most switch calls in flight at once (a thread each, started as calls need them; a compose binds all its "
                 "devices in one call)")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--switch-timeout", o.switchTimeoutSeconds,
                 "Seconds a switch call may take; past that it fails with DEADLINE_EXCEEDED, its outcome unknown, and the "
                 "operation rolls back (undo steps are idempotent). Also bounds reading the whole fabric (Redfish, Switchtec, CXL) "
                 "at start")
      ->check(CLI::Range(0.001, 3600.0))->capture_default_str();
  app.add_option("--shutdown-grace", o.shutdownGraceSeconds, "Seconds running operations get to finish on SIGTERM")
      ->check(CLI::Range(0, 3600))->capture_default_str();
  app.add_option("--placement-profile", o.placementProfile,
                 "Placement policy (profile of placement plugins): switchyard-v2 (topology first, then the least usable "
                 "capacity lost for the request shapes the pool has been seeing, learned from recent compose requests, "
                 "then tightest fit), switchyard-v1 (topology-aware best fit, no learning) or hived-buddy (HiveD-style buddy cells over the switch "
                 "hierarchy, a baseline)")
      ->check(CLI::IsMember(composableProfileNames()))->capture_default_str();
  app.add_option("--placement-weight", o.placementWeights,
                 "Override a score plugin's weight, e.g. best-fit=10 (repeatable; plugins: fewest-switches, "
                 "avoid-inter-switch-links, fragmentation (switchyard-v2), best-fit)");
  app.add_option("--admission-profile", o.admissionProfile,
                 "How the queue admits (profile of admission plugins, ADR 0032): switchyard-v1 (priority classes strict, then "
                 "each tenant's fair-share charge, then age; backfill that cannot delay the head; preemption) or share-first "
                 "(across tenants, one under its weighted share first, then the lower charge with the request admitted; class "
                 "and age inside a tenant)")
      ->check(CLI::IsMember(admission::admissionProfileNames()))->capture_default_str();
  std::vector<std::string> sorts;
  for (const auto& e : admission::queueSortPlugins()) sorts.emplace_back(e.name);
  app.add_option("--admission-queue-sort", o.admissionQueueSort,
                 "Replace the profile's queue sort: plugins in order, the first that tells two requests apart decides "
                 "(e.g. --admission-queue-sort priority-class age for class then age, no fair share; plugins: priority-class, "
                 "fair-share, share-first, age)")
      ->check(CLI::IsMember(sorts));
  app.add_option("--reconcile-interval", o.reconcileIntervalSeconds,
                 "Seconds between comparisons of the store with the fabric while running (0: only at start)")
      ->check(CLI::Range(0, 86'400))->capture_default_str();
  app.add_option("--retain-events", o.retainEvents, "Keep this many newest events in the store (older ones are pruned every minute)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40))->capture_default_str();
  app.add_option("--retain-operations", o.retainOperations,
                 "Keep this many newest finished operations (and decomposed systems) in the store")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40))->capture_default_str();
  app.add_option("--log-level", o.logLevel, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))->capture_default_str();
  app.add_option("--identities", o.identitiesFile,
                 "Who may call, as what (JSON, keep it mode 0600): identities with a role (viewer, tenant, operator, admin), a "
                 "tenant, and credentials (password hash, bearer token hash, client certificate CN), and tenants' quotas; see "
                 "docs/security.md. Used by gRPC and Redfish. Without it every gRPC caller is an admin (development only)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-cert", o.tlsCert,
                 "gRPC TLS certificate (PEM); default: <state-dir>/grpc-cert.pem, self-signed at first start (yardctl finds it "
                 "there for the default state directory, or give yardctl --ca)")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", o.tlsKey, "gRPC TLS private key (PEM)")->check(CLI::ExistingFile);
  app.add_option("--tls-client-ca", o.tlsClientCa,
                 "Accept client certificates signed by this CA (mutual TLS): a certificate's CN names an identity of --identities")
      ->check(CLI::ExistingFile);
  app.add_flag("--require-client-cert", o.requireClientCert, "With --tls-client-ca: refuse clients without a certificate");
  app.add_flag("--plaintext", o.plaintext, "Serve gRPC without TLS; allowed on a loopback --listen address only (tests, a laptop)");
  app.add_option("--fail-point", o.failPoints,
                 "Testing only: NAME=crash|error[@N] arms a fail point (repeatable; docs/reliability.md lists them), e.g. "
                 "step.bind.after-call=crash kills yardd right after the switch bound the devices")
      ->group("Testing");
  app.add_option("--port-file", o.portFile, "Write the bound gRPC port to this file once serving (for scripts and tests)");
  app.add_option("--redfish-listen", o.redfishListen,
                 "Serve the Redfish API (Systems, CompositionService, TaskService, SessionService) on HOST:PORT; port 0 picks one")
      ->check(listenAddressCheck("--redfish-listen"));
  app.add_flag("--redfish-http", o.redfishHttp,
               "Serve Redfish over plain HTTP instead of HTTPS (loopback tests, or a trusted network only: Basic auth sends passwords)");
  app.add_option("--redfish-cert", o.redfishCert,
                 "TLS certificate (PEM) for the Redfish service (default: <state-dir>/redfish-cert.pem, a self-signed one made at first start)");
  app.add_option("--redfish-key", o.redfishKey, "TLS private key (PEM) for the Redfish service (default: <state-dir>/redfish-key.pem)");
  app.add_option("--redfish-port-file", o.redfishPortFile, "Write the bound Redfish port to this file once serving");
  app.add_option("--cohdi-listen", o.cohdiListen,
                 "Serve the fabric-manager REST API that CoHDI's Kubernetes DRA driver and composable-resource operator call "
                 "(FTI_CDI_ENDPOINT; token, machines, attach/detach; docs/kubernetes.md) on HOST:PORT over HTTPS; port 0 picks one")
      ->check(listenAddressCheck("--cohdi-listen"))
      ->group("Kubernetes (CoHDI)");
  app.add_option("--cohdi-cert", o.cohdiCert,
                 "TLS certificate (PEM) for --cohdi-listen (default: <state-dir>/cohdi-cert.pem, a self-signed one made at first start; "
                 "CoHDI trusts it through its secret's \"certificate\")")
      ->group("Kubernetes (CoHDI)");
  app.add_option("--cohdi-key", o.cohdiKey, "TLS private key (PEM) for --cohdi-listen (default: <state-dir>/cohdi-key.pem)")->group("Kubernetes (CoHDI)");
  app.add_option("--cohdi-port-file", o.cohdiPortFile, "Write the bound --cohdi-listen port to this file once serving")->group("Kubernetes (CoHDI)");
  app.add_option("--metrics-listen", o.metricsListen,
                 "Serve Prometheus metrics (/metrics), the operator console (/: log in, compose, decompose, attach, detach, cancel, "
                 "renew, reclaim) and its JSON (/api/v1/...) on HOST:PORT; port 0 picks one. With --identities every page but /healthz "
                 "and the console's own files needs credentials (a console login, HTTP Basic or a bearer token; a viewer may read)")
      ->check(listenAddressCheck("--metrics-listen"))
      ->group("Metrics and dashboard");
  app.add_option("--metrics-port-file", o.metricsPortFile, "Write the bound metrics/dashboard port to this file once serving")
      ->group("Metrics and dashboard");
  app.add_option("--metrics-device-series", o.metricsDeviceSeries,
                 "Whether /metrics has switchyard_device_info, one series per device (about 150 bytes each): all, none, or auto "
                 "(for pools of up to 10,000 devices; switchyard_device_series_written says which)")
      ->check(CLI::IsMember({"auto", "all", "none"}))
      ->capture_default_str()
      ->group("Metrics and dashboard");
  app.add_flag("--metrics-tls", o.metricsTls,
               "Serve metrics and the dashboard over HTTPS (default certificate: <state-dir>/metrics-cert.pem, self-signed at first start)")
      ->group("Metrics and dashboard");
  app.add_option("--metrics-cert", o.metricsCert, "With --metrics-tls: the certificate (PEM)")->group("Metrics and dashboard");
  app.add_option("--metrics-key", o.metricsKey, "With --metrics-tls: the private key (PEM)")->group("Metrics and dashboard");
  app.add_option("--capacity-sample-seconds", o.capacitySampleSeconds,
                 "How often the dashboard's usable-capacity history is sampled (the last 1440 samples are kept in memory)")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str()
      ->group("Metrics and dashboard");
  app.add_option("--priority-class", o.priorityClasses,
                 "NAME=VALUE[:preemptible[:requeue]][:preempting], a priority class of the queue (repeatable; replaces the built-in "
                 "production=1000:preempting, batch=100:preempting and spot=0:preemptible). A higher value is admitted first; a queued "
                 "request of a preempting class that cannot fit takes back systems of preemptible classes with a lower value, after "
                 "--preemption-grace; with :requeue such a system is queued again once decomposed (same name, labels, class and "
                 "shape), e.g. spot=0:preemptible:requeue. 'batch' must be one of them: it is the default")
      ->group("Queue and leases");
  app.add_option("--templates", o.templatesFile,
                 "Machine templates (JSON: {\"templates\": [{\"name\": \"train-8x\", \"gpus\": 8, \"p2p\": \"required\", \"nic\": {\"count\": 4, "
                 "\"affinity\": \"switch\"}, ...}]}, docs/operations.md) that `yardctl compose --template` starts from; 'none' for none. "
                 "Without it yardd offers its examples: train-8x, infer-1x, storage-2x")
      ->group("Queue and leases");
  app.add_option("--lease-warning", o.leaseWarning, "A lease.expiring event this long before a system's lease ends (90s, 30m, 8h)")
      ->check(CLI::Validator([](std::string& v) { return parseDuration(v) ? std::string() : "a duration such as 10m"; }, "DURATION"))
      ->capture_default_str()
      ->group("Queue and leases");
  const auto durationOrZero = CLI::Validator(
      [](std::string& v) { return v == "0" || parseDuration(v) ? std::string() : "a duration such as 60s (0s: never)"; }, "DURATION");
  app.add_option("--activity-interval", o.activityInterval,
                 "How often each host's agent is asked what its attached GPUs do (utilization, processes: see `yardctl idle`); 0s: never")
      ->check(durationOrZero)
      ->capture_default_str()
      ->group("Idle reclaim");
  app.add_option("--idle-busy-above", o.idleBusyAbovePercent, "A GPU with no process is idle while its utilization is at most this (percent)")
      ->check(CLI::Range(0, 99))
      ->capture_default_str()
      ->group("Idle reclaim");
  app.add_option("--reclaim-idle-after", o.reclaimIdleAfter,
                 "Take back GPUs idle this long from systems whose tenant (identities file: reclaim_idle_after) and labels "
                 "(reclaim-idle-after) choose nothing; at least 1m; never: off")
      ->check(CLI::Validator(
          [](std::string& v) {
            const auto d = parseDuration(v);
            return v == "never" || (d && d->count() >= 60'000) ? std::string() : "a duration of at least 1m, or never";
          },
          "DURATION|never"))
      ->capture_default_str()
      ->group("Idle reclaim");
  app.add_option("--reclaim-mode", o.reclaimMode,
                 "dry-run: a reclaim.would-detach event names the idle GPUs; detach: they are detached through the safe path "
                 "(host-release first, never a GPU a process holds)")
      ->check(CLI::IsMember({"dry-run", "detach"}))
      ->capture_default_str()
      ->group("Idle reclaim");
  app.add_option("--preemption-grace", o.preemptionGrace,
                 "How long a system of a preemptible class is told (system.preempting) before it is decomposed for a higher class")
      ->check(CLI::Validator([](std::string& v) { return parseDuration(v) ? std::string() : "a duration such as 30s"; }, "DURATION"))
      ->capture_default_str()
      ->group("Queue and leases");
  app.add_option("--host-policy", o.hostPolicies,
                 "HOST=POLICY, how a host takes devices (repeatable): agent (a yard-agent rescans, verifies and releases; the "
                 "default for hosts whose agent registered), bmc-reset (cold plug: the host is power-cycled through its BMC "
                 "after a bind and shut down before an unbind; needs --host-bmc), trust-fabric (the switch's word is enough: no host steps)");
  app.add_option("--agent-ca", o.agentCa, "Dial yard-agents over TLS and trust this CA (PEM) for their certificates")
      ->check(CLI::ExistingFile);
  app.add_option("--agent-cert", o.agentCert, "Client certificate (PEM) for yard-agents that require one (--tls-client-ca)")
      ->check(CLI::ExistingFile)->needs("--agent-ca");
  app.add_option("--agent-key", o.agentKey, "The client certificate's private key (PEM)")->check(CLI::ExistingFile)->needs("--agent-cert");
  app.add_option("--host-bmc", o.hostBmcs, "HOST=URL: the Redfish BMC of a bmc-reset host, https://BMC[:PORT] (repeatable)");
  app.add_option("--host-bmc-user", o.hostBmcUser, "Account for the host BMCs (a Redfish session per call)");
  app.add_option("--host-bmc-password-file", o.hostBmcPasswordFile, "File holding the host BMC account's password (first line)")
      ->check(CLI::ExistingFile);
  app.add_option("--host-bmc-ca", o.hostBmcCa, "Trust this CA certificate (PEM) for the host BMCs' https")->check(CLI::ExistingFile);
  app.add_option("--host-policy-default", o.hostPolicyDefault,
                 "Policy of hosts no agent serves and no --host-policy names; unset refuses to compose onto them, saying why")
      ->check(CLI::IsMember({"unset", "agent", "trust-fabric"}))->capture_default_str();
  // Two flags rather than CLI11's "--x,!--no-x", whose help reads "--no-sim-host-agents{false}", as if off by default.
  app.add_flag("--sim-host-agents", o.simHostAgents,
               "Simulated driver: in-process simulated host agents serve every host no yard-agent registered for (devices "
               "appear on the host after a bind, are verified, and are released before an unbind). On by default");
  app.add_flag_callback(
      "--no-sim-host-agents", [&o] { o.simHostAgents = false; },
      "Simulated driver: no simulated host agents: a host takes devices once its yard-agent registers (or by --host-policy)");
  app.add_option("--sim-host-delay-ms", o.simHostDelayMs, "Simulated host agents: how long a bound device takes to appear")
      ->check(CLI::Range(0, 600'000))->capture_default_str();
  app.add_option("--sim-gpu-busy", o.simGpuBusy,
                 "DEVICE=PERCENT (repeatable): simulated host agents report this GPU at PERCENT utilization with a process "
                 "(pid 4200+, 'sim-job') once it is attached, so idle reclaim spares it and `yardctl idle --all` shows it busy; "
                 "0 keeps it idle")
      ->check(CLI::Validator(
          [](std::string& v) {
            const auto eq = v.find('=');
            int percent = -1;
            if (eq != std::string::npos && eq > 0) {
              const std::string n = v.substr(eq + 1);
              auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), percent);
              if (ec != std::errc() || end != n.data() + n.size()) percent = -1;
            }
            return percent >= 0 && percent <= 100 ? std::string() : "'" + v + "' is not DEVICE=PERCENT with PERCENT 0 to 100";
          },
          "DEVICE=PERCENT"));
  app.add_option("--host-timeout", o.hostTimeoutSeconds,
                 "Seconds a host step may take (a device must appear on its host within it); past that the attach rolls back")
      ->check(CLI::Range(0.001, 3600.0))->capture_default_str();
  app.add_option("--agent-heartbeat", o.agentHeartbeatSeconds,
                 "Seconds between yard-agent heartbeats; an agent silent for 3 of them is reported unavailable")
      ->check(CLI::Range(1, 3600))->capture_default_str();
}

// For main(): log the error and exit non-zero.
#define SY_ASSIGN_OR_EXIT(decl, expr) SY_ASSIGN_OR_EXIT_IMPL(SY_CONCAT(sy_exit_, __LINE__), decl, expr)
#define SY_ASSIGN_OR_EXIT_IMPL(tmp, decl, expr)        \
  auto tmp = (expr);                                   \
  if (!tmp) {                                          \
    spdlog::critical("{}", tmp.error().message);       \
    return 1;                                          \
  }                                                    \
  decl = std::move(*tmp)
#define SY_TRY_OR_EXIT(expr)                                  \
  do {                                                        \
    if (auto sy_try_ = (expr); !sy_try_) {                    \
      spdlog::critical("{}", sy_try_.error().message);        \
      return 1;                                               \
    }                                                         \
  } while (false)

}  // namespace switchyard
