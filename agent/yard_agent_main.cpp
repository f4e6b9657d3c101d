// yard-agent: the Switchyard host agent. Runs on each compute host behind the fabric; yardd asks it to
// make newly bound devices appear and verify them, and to let go of devices before they are unbound.
#include <array>
#include <grpcpp/grpcpp.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <systemd/sd-daemon.h>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "agent/agent_service.h"
#include "agent/host_ops.h"
#include "composer/model/config_syntax.h"
#include "composer/model/durable_file.h"
#include "composer/model/grpc_target.h"
#include "composer/model/version.h"
#include "switchyard/v1/agent.grpc.pb.h"

using namespace switchyard;
using namespace switchyard::agent;

namespace {

struct AgentFlags {
  std::string host;
  std::string listen = "127.0.0.1:7391";
  std::string advertise;
  std::string yardd;
  std::filesystem::path sysfsRoot = "/sys";
  std::filesystem::path procRoot = "/proc";
  std::string gpuUuidCommand = HostOpsOptions{}.gpuUuidCommand;
  std::vector<std::string> afterAttach, beforeDetach, beforeReclaim, beforePreempt, ports;
  std::string deviceReset = "sysfs";
  std::string gpuActivityCommand = HostOpsOptions{}.gpuActivityCommand, gpuProcessesCommand = HostOpsOptions{}.gpuProcessesCommand,
              gpuMigProcessesCommand = HostOpsOptions{}.gpuMigProcessesCommand;
  double verifyDeadlineSeconds = 30;
  double commandTimeoutSeconds = 120;
  std::string migCreate = HostOpsOptions{}.migCreateCommand, migList = HostOpsOptions{}.migListCommand,
              migDestroy = HostOpsOptions{}.migDestroyCommand;
  int migSliceGiB = 10;
  std::filesystem::path portFile;
  std::filesystem::path tlsCert, tlsKey, tlsClientCa;
  std::filesystem::path yarddCa, yarddCert, yarddKey, yarddTokenFile;  // how to reach and prove itself to yardd
  bool yarddPlaintext = false;
  std::string logLevel = "info";
  bool printInventory = false;
  bool printActivity = false;
  bool printHolds = false;
  int idleBusyAbove = 5;  // --print-activity: yardd's --idle-busy-above
  bool json = false;
};

// --print-activity: what each GPU on this host does now, as idle reclaim sees it (JSON: one object per GPU).
int printActivity(const HostOps& ops, bool json, int busyAbovePercent, const std::filesystem::path& sysfsRoot) {
  auto inventory = ops.inventory();
  if (!inventory) {
    spdlog::critical("{}", inventory.error().message);
    return 1;
  }
  std::vector<PciFunction> gpus;
  for (const auto& h : *inventory)
    if (h.pci.isGpu()) gpus.push_back(h.pci);
  if (gpus.empty() && !json) {  // say so, rather than print nothing (issue 63)
    fmt::print("no GPU on this host: no display-class PCI function (class 03) under {}; nothing for idle reclaim to watch\n",
               (sysfsRoot / "bus" / "pci" / "devices").string());
    return 0;
  }
  auto activity = ops.activityOf(gpus);
  if (!activity) {
    spdlog::critical("{}", activity.error().message);
    return 1;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : gpus) {
    const auto address = toString(f.address);
    const auto serial = f.serial().empty() ? std::string("none") : f.serial();
    auto a = activity->find(address);
    if (a == activity->end()) {
      if (json) out.push_back({{"address", address}, {"serial", serial}, {"reported", false}});
      else fmt::print("{}  serial {}  not reported by the vendor tool (never counted idle)\n", address, serial);
      continue;
    }
    nlohmann::json processes = nlohmann::json::array();
    std::vector<std::string> names;
    for (const auto& p : a->second.processes) {
      processes.push_back({{"pid", p.pid}, {"name", p.name}, {"memory_mib", p.memoryMiB}});
      names.push_back(fmt::format("{} ({}, {} MiB)", p.pid, p.name, p.memoryMiB));
    }
    const bool idle = a->second.processes.empty() && a->second.utilizationPercent <= busyAbovePercent;
    // In MIG mode (no utilization is read): each GPU instance, idle while nothing runs in it.
    nlohmann::json instances = nlohmann::json::array();
    for (const auto& i : a->second.instances) {
      nlohmann::json running = nlohmann::json::array();
      for (const auto& p : i.processes) running.push_back(p.pid);
      instances.push_back({{"start", i.start}, {"pids", running}, {"idle", i.processes.empty()}});
    }
    if (json) {
      out.push_back({{"address", address}, {"serial", serial}, {"reported", true}, {"utilization_percent", a->second.utilizationPercent},
                     {"memory_used_mib", a->second.memoryUsedMiB}, {"processes", processes}, {"idle", idle}});
      if (a->second.migMode()) out.back()["mig_instances"] = instances;
      continue;
    }
    const std::string utilization = a->second.migMode() ? "MIG" : fmt::format("{}%", a->second.utilizationPercent);
    fmt::print("{}  serial {}  {}  {} MiB  {}  {}\n", address, serial, utilization, a->second.memoryUsedMiB, idle ? "idle" : "busy",
               names.empty() ? "no process" : fmt::format("{}", fmt::join(names, ", ")));
    for (const auto& i : a->second.instances) {
      std::vector<std::string> pids;
      for (const auto& p : i.processes) pids.push_back(std::to_string(p.pid));
      fmt::print("  GPU instance at slice {}  {}\n", i.start, pids.empty() ? std::string("idle") : fmt::format("busy: pid {}", fmt::join(pids, ", ")));
    }
  }
  if (json) fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  return 0;
}

// --print-holds: what would stop yardd from taking each device back from this host now (a release refused): the
// processes holding it open, and what the kernel holds it by (a mounted filesystem or swap on a drive, a NIC's
// interface up). Bridges are left out: they are the fabric, never released.
int printHolds(const HostOps& ops, bool json) {
  auto inventory = ops.inventory();
  if (!inventory) {
    spdlog::critical("{}", inventory.error().message);
    return 1;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& h : *inventory) {
    const PciFunction& f = h.pci;
    if (f.bridge || (f.classCode >> 16) == 0x06) continue;
    std::vector<std::string> holds;
    nlohmann::json processes = nlohmann::json::array();
    for (const auto& u : ops.usersOf(f)) {
      processes.push_back({{"pid", u.pid}, {"command", u.command}, {"path", u.path}});
      holds.push_back(fmt::format("process {} ({}) holds {}", u.pid, u.command, u.path));
    }
    const auto kernel = ops.kernelHoldsOf(f);
    holds.insert(holds.end(), kernel.begin(), kernel.end());
    const std::string address = toString(f.address), klass = fmt::format("{:06x}", f.classCode);
    if (json) {
      out.push_back({{"address", address}, {"class", klass}, {"driver", f.driver}, {"serial", f.serial()}, {"processes", processes},
                     {"kernel", kernel}, {"releasable", holds.empty()}});
      continue;
    }
    fmt::print("{}  class {}  driver {}  {}\n", address, klass, f.driver.empty() ? "-" : f.driver,
               holds.empty() ? std::string("nothing holds it") : fmt::format("held: {}", fmt::join(holds, "; ")));
  }
  if (json) fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  return 0;
}

void printInventory(const std::vector<HostFunction>& functions, bool json) {
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& h : functions) {
      const auto& f = h.pci;
      nlohmann::json parents = nlohmann::json::array();
      for (const auto& p : f.parents) parents.push_back(toString(p));
      out.push_back({{"address", toString(f.address)}, {"vendor_id", fmt::format("{:04x}", f.vendorId)}, {"device_id", fmt::format("{:04x}", f.deviceId)},
                     {"class", fmt::format("{:06x}", f.classCode)}, {"port_type", toString(f.portType)},
                     {"link", f.linkGeneration ? fmt::format("{} x{}", linkSpeedText(f.linkGeneration), f.linkWidth) : ""},
                     {"serial_number", f.serial()}, {"driver", f.driver},
                     {"numa_node", f.numaNode}, {"parents", parents}, {"gpu_uuid", h.gpuUuid}});
    }
    fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  // Columns as wide as their widest cell, so that every row lines up whatever the drivers and serials are.
  std::vector<std::array<std::string, 9>> rows{{"ADDRESS", "ID", "CLASS", "PORT TYPE", "LINK", "SERIAL", "DRIVER", "ROOT PORT", "GPU UUID"}};
  for (const auto& h : functions) {
    const auto& f = h.pci;
    rows.push_back({toString(f.address), fmt::format("{:04x}:{:04x}", f.vendorId, f.deviceId), fmt::format("{:06x}", f.classCode),
                    std::string(toString(f.portType)), f.linkGeneration ? fmt::format("{} x{}", linkSpeedText(f.linkGeneration), f.linkWidth) : "-",
                    f.serial().empty() ? "-" : f.serial(), f.driver.empty() ? "-" : f.driver,
                    f.parents.empty() ? "-" : toString(f.parents.back()), h.gpuUuid.empty() ? "-" : h.gpuUuid});
  }
  std::array<std::size_t, 9> width{};
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) line += c + 1 == row.size() ? row[c] : fmt::format("{:<{}}  ", row[c], width[c]);
    fmt::print("{}\n", line);
  }
}

std::string readPem(const std::filesystem::path& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Registers with yardd, then heartbeats at the interval yardd asks for, until `stop`.
void keepRegistered(const AgentFlags& flags, const std::string& advertise, std::atomic<bool>& stop, std::mutex& m, std::condition_variable& cv) {
  // yardd serves TLS unless it was started with --plaintext (loopback only); a yardd with --identities wants
  // this agent's token or client certificate, for an identity with the operator or admin role.
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!flags.yarddPlaintext) {
    grpc::SslCredentialsOptions tls;
    if (!flags.yarddCa.empty()) tls.pem_root_certs = readPem(flags.yarddCa);
    if (!flags.yarddCert.empty()) {
      tls.pem_cert_chain = readPem(flags.yarddCert);
      tls.pem_private_key = readPem(flags.yarddKey);
    }
    credentials = grpc::SslCredentials(tls);
  }
  std::string token;
  if (!flags.yarddTokenFile.empty()) {
    std::ifstream in(flags.yarddTokenFile);
    std::getline(in, token);
  }
  grpc::ChannelArguments args;
  // Several yardd (ipv4:A:P,B:P): each certificate must name the first one's host, not the whole list.
  if (const auto name = switchyard::tlsNameOfTarget(flags.yardd); !name.empty() && !flags.yarddPlaintext) args.SetSslTargetNameOverride(name);
  auto registry = v1::AgentRegistry::NewStub(grpc::CreateCustomChannel(flags.yardd, credentials, args));
  bool registered = false;
  std::chrono::milliseconds interval{2000};
  while (!stop) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    v1::RegisterAgentResponse response;
    grpc::Status status;
    if (!registered) {
      v1::RegisterAgentRequest request;
      request.set_host_id(flags.host);
      request.set_address(advertise);
      request.set_version(std::string(switchyard::projectVersion()));
      status = registry->Register(&context, request, &response);
    } else {
      v1::AgentHeartbeat beat;
      beat.set_host_id(flags.host);
      beat.set_address(advertise);
      status = registry->Heartbeat(&context, beat, &response);
    }
    if (status.ok()) {
      if (!registered) spdlog::info("registered with yardd at {} as {} ({})", flags.yardd, flags.host, advertise);
      registered = true;
      interval = std::chrono::milliseconds(std::max<std::int64_t>(100, response.heartbeat_interval_ms()));
    } else {
      spdlog::warn("yardd at {}: {} (retrying in 2 s)", flags.yardd, status.error_message());
      registered = false;
      interval = std::chrono::milliseconds(2000);
    }
    std::unique_lock lock(m);
    cv.wait_for(lock, interval, [&] { return stop.load(); });
  }
}


int run(const AgentFlags& flags) {
  HostOpsOptions options;
  options.sysfsRoot = flags.sysfsRoot;
  options.procRoot = flags.procRoot;
  options.gpuUuidCommand = flags.gpuUuidCommand;
  options.afterAttach = flags.afterAttach;
  options.beforeDetach = flags.beforeDetach;
  options.beforeReclaim = flags.beforeReclaim;
  options.beforePreempt = flags.beforePreempt;
  options.deviceReset = flags.deviceReset;
  options.gpuActivityCommand = flags.gpuActivityCommand;
  options.gpuProcessesCommand = flags.gpuProcessesCommand;
  options.gpuMigProcessesCommand = flags.gpuMigProcessesCommand;
  options.migCreateCommand = flags.migCreate;
  options.migListCommand = flags.migList;
  options.migDestroyCommand = flags.migDestroy;
  options.migSliceGiB = flags.migSliceGiB;
  options.defaultDeadline = std::chrono::milliseconds(static_cast<std::int64_t>(flags.verifyDeadlineSeconds * 1000));
  options.commandTimeout = std::chrono::milliseconds(static_cast<std::int64_t>(flags.commandTimeoutSeconds * 1000));
  for (const auto& p : flags.ports) {
    const auto eq = p.find('=');
    const auto address = eq == std::string::npos ? std::nullopt : parsePciAddress(p.substr(eq + 1));
    if (eq == 0 || !address) {
      spdlog::critical("--port '{}': expected UPSTREAM_PORT_ID=ROOT_PORT_ADDRESS, e.g. sw0-usp0=0000:00:01.0", p);
      return 2;
    }
    options.upstreamPorts[p.substr(0, eq)] = *address;
  }
  HostOps ops(options);
  if (flags.printActivity) return printActivity(ops, flags.json, flags.idleBusyAbove, flags.sysfsRoot);
  if (flags.printHolds) return printHolds(ops, flags.json);
  if (flags.printInventory) {
    auto inventory = ops.inventory();
    if (!inventory) {
      spdlog::critical("{}", inventory.error().message);
      return 1;
    }
    printInventory(*inventory, flags.json);
    return 0;
  }
  if (flags.host.empty()) {
    spdlog::critical("--host is required: the pool's id for this host (as `yardctl hosts` lists it)");
    return 2;
  }
  AgentService service(flags.host, ops);
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!flags.tlsCert.empty()) {
    grpc::SslServerCredentialsOptions tls(flags.tlsClientCa.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                                    : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    tls.pem_key_cert_pairs.push_back({readPem(flags.tlsKey), readPem(flags.tlsCert)});
    if (!flags.tlsClientCa.empty()) tls.pem_root_certs = readPem(flags.tlsClientCa);
    credentials = grpc::SslServerCredentials(tls);
  } else if (flags.listen.rfind("127.", 0) != 0 && flags.listen.rfind("localhost:", 0) != 0) {
    spdlog::warn("serving plaintext gRPC on {}: anyone who reaches it can remove this host's PCI devices; give --tls-cert/--tls-key "
                 "(and --tls-client-ca to require yardd's certificate)",
                 flags.listen);
  }
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(flags.listen, credentials, &port);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  if (!server || port == 0) {
    spdlog::critical("cannot listen on {}", flags.listen);
    return 1;
  }
  const std::string advertise = flags.advertise.empty() ? fmt::format("{}:{}", flags.listen.substr(0, flags.listen.rfind(':')), port) : flags.advertise;
  spdlog::info("yard-agent for {} listening on {} ({}; sysfs {}, {} port mapping(s))", flags.host, advertise,
               flags.tlsCert.empty() ? "plaintext" : flags.tlsClientCa.empty() ? "TLS" : "mutual TLS", flags.sysfsRoot.string(),
               options.upstreamPorts.size());
  if (auto written = writePortFile(flags.portFile, port); !written) {
    spdlog::critical("--port-file: {}", written.error().message);
    return 1;
  }

  sd_notify(0, fmt::format("READY=1\nSTATUS=serving {} on {}", flags.host, advertise).c_str());
  std::atomic<bool> stop{false};
  std::mutex m;
  std::condition_variable cv;
  std::thread registration;
  if (!flags.yardd.empty()) registration = std::thread([&] { keepRegistered(flags, advertise, stop, m, cv); });

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  int received = 0;
  sigwait(&signals, &received);
  spdlog::info("{} received: stopping", received == SIGTERM ? "SIGTERM" : "SIGINT");
  sd_notify(0, "STOPPING=1");
  {
    std::lock_guard lock(m);
    stop = true;
  }
  cv.notify_all();
  if (registration.joinable()) registration.join();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  AgentFlags flags;
  CLI::App app{"yard-agent: the Switchyard host agent.\n"
               "Runs on each compute host behind the fabric (as root: it writes to sysfs). yardd calls it to rescan the\n"
               "PCI bus and verify a newly bound device (serial number, behind the right root port) before the device\n"
               "is reported online, and to release a device (refused while a process holds it; then driver unbind and\n"
               "PCI remove) before the switch unbinds it.\n\n"
               "  yard-agent --print-inventory                   what this host's PCI bus holds (find root ports for --port)\n"
               "  yard-agent --print-activity                    what its GPUs do now, as yardd's idle reclaim sees it\n"
               "  yard-agent --print-holds                       what would stop each device's release now (processes, mounts, links up)\n"
               "  yard-agent --host h1 --yardd yardd:7390 --port sw0-usp0=0000:00:01.0"};
  app.set_config("--config", "", "Read flags from a TOML/INI file: long flag names as keys (host = \"h1\", port = [\"sw0-usp0=0000:00:01.0\"]); "
                 "command-line flags win");
  app.add_option("--host", flags.host, "This host's id in the pool");
  app.add_option("--listen", flags.listen, "gRPC listen address (port 0: any free port)")->capture_default_str();
  app.add_option("--advertise", flags.advertise, "Address yardd dials to reach this agent (default: the listen address)");
  app.add_option("--yardd", flags.yardd, "yardd's gRPC address to register with and heartbeat to");
  app.add_option("--yardd-ca", flags.yarddCa, "Trust this certificate (PEM) for yardd's TLS (its --tls-cert, its CA, or <state-dir>/grpc-cert.pem)")
      ->check(CLI::ExistingFile);
  app.add_option("--yardd-cert", flags.yarddCert, "Client certificate (PEM) for a yardd with --tls-client-ca; its CN names this agent's identity")
      ->check(CLI::ExistingFile);
  app.add_option("--yardd-key", flags.yarddKey, "The client certificate's key (PEM)")->check(CLI::ExistingFile)->needs("--yardd-cert");
  app.add_option("--yardd-token-file", flags.yarddTokenFile,
                 "File holding this agent's bearer token (first line), for a yardd with --identities (operator or admin role)")
      ->check(CLI::ExistingFile);
  app.add_flag("--yardd-plaintext", flags.yarddPlaintext, "Talk to a yardd started with --plaintext (loopback only)");
  app.add_option("--port", flags.ports, "UPSTREAM_PORT_ID=ROOT_PORT_ADDRESS: where the cable of a fabric upstream port enters this host "
                                        "(repeatable); devices are verified to sit behind it");
  app.add_option("--sysfs-root", flags.sysfsRoot, "sysfs tree to read and write")->capture_default_str();
  app.add_option("--proc-root", flags.procRoot, "procfs tree (processes holding devices, NVIDIA driver information)")->capture_default_str();
  app.add_option("--gpu-uuid-command", flags.gpuUuidCommand, "Prints '<bus id>, <uuid>' per GPU; empty: the driver's proc files only")
      ->capture_default_str();
  app.add_option("--after-attach", flags.afterAttach, "Shell command run after devices were verified (repeatable); gets "
                                                      "YARD_PCI_ADDRESSES, YARD_DEVICE_IDS, YARD_GPU_UUIDS");
  app.add_option("--before-detach", flags.beforeDetach,
                 "Shell command run before devices are removed (repeatable), same variables and YARD_DETACH_REASON "
                 "(request, lease, preemption, reclaim or move)");
  app.add_option("--device-reset", flags.deviceReset,
                 "How a device is reset as it leaves this host, so that the next tenant finds nothing of this one's in it: sysfs "
                 "(the kernel's reset, after the driver is unbound), a shell command with {pci} (e.g. 'nvidia-smi -r -i {pci}', run "
                 "while the driver is bound), or none (the previous tenant's data may reach the next). A device whose reset fails "
                 "is removed all the same and reported, and yardd quarantines it until an operator releases it")
      ->capture_default_str();
  app.add_option("--before-reclaim", flags.beforeReclaim,
                 "Shell command run first when yardd takes idle GPUs back (repeatable; YARD_DETACH_REASON=reclaim): a notice; "
                 "failing stops the release");
  app.add_option("--before-preempt", flags.beforePreempt,
                 "Shell command run first when yardd preempts this host's system (repeatable): checkpoint now; failing stops the release");
  app.add_option("--gpu-activity-command", flags.gpuActivityCommand,
                 "Prints '<bus id>, <utilization %>, <memory MiB>' per GPU (idle reclaim); empty: report no GPU activity")
      ->capture_default_str();
  app.add_option("--gpu-processes-command", flags.gpuProcessesCommand,
                 "Prints '<bus id>, <pid>, <name>, <memory MiB>' per compute process (idle reclaim)")
      ->capture_default_str();
  app.add_option("--gpu-mig-processes-command", flags.gpuMigProcessesCommand,
                 "Prints nvidia-smi's plain table, whose Processes rows name each process's GPU instance: read for GPUs in MIG "
                 "mode (utilization [N/A], instances listed by --mig-list-command), so an idle instance is told from a busy "
                 "one; empty: MIG GPUs report no activity")
      ->capture_default_str();
  app.add_option("--command-timeout", flags.commandTimeoutSeconds,
                 "Seconds a hook or vendor command (nvidia-smi) may run; then it is killed with what it started, and the "
                 "attach or detach fails")
      ->check(CLI::Range(0.1, 86400.0))->capture_default_str();
  app.add_option("--verify-deadline", flags.verifyDeadlineSeconds, "Seconds to wait for devices to appear when yardd gives no deadline")
      ->check(CLI::Range(0.1, 3600.0))->capture_default_str();
  app.add_option("--mig-create-command", flags.migCreate,
                 "Creates one MIG instance; {pci}, {profile} (1g..7g), {start}, {memory_gib} are filled in")->capture_default_str();
  app.add_option("--mig-list-command", flags.migList, "Lists a GPU's instances (rows: MIG <name> <profile id> <instance id> <start>:<size>)")
      ->capture_default_str();
  app.add_option("--mig-destroy-command", flags.migDestroy, "Destroys one GPU instance; {pci}, {gi} are filled in")->capture_default_str();
  app.add_option("--mig-slice-gib", flags.migSliceGiB, "Memory per MIG slice: 10 on 80 GB A100/H100, 5 on A100-40GB")
      ->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--tls-cert", flags.tlsCert, "Serve gRPC over TLS with this certificate (PEM)")->check(CLI::ExistingFile);
  app.add_option("--tls-key", flags.tlsKey, "The certificate's private key (PEM)")->check(CLI::ExistingFile);
  app.add_option("--tls-client-ca", flags.tlsClientCa, "Require clients (yardd) to present a certificate signed by this CA (mutual TLS)")
      ->check(CLI::ExistingFile);
  app.add_option("--port-file", flags.portFile, "Write the gRPC port here once listening");
  app.add_flag("--print-inventory", flags.printInventory, "Print this host's PCI functions and exit");
  app.add_flag("--print-activity", flags.printActivity,
               "Print what each GPU on this host does now (utilization, memory, processes: what idle reclaim sees) and exit");
  app.add_flag("--print-holds", flags.printHolds,
               "Print what would stop each device's release now (processes holding it, a mounted drive or swap, a NIC's "
               "interface up) and exit");
  app.add_option("--idle-busy-above", flags.idleBusyAbove,
                 "With --print-activity: a GPU with no process is idle at this utilization (%) or below; set it as yardd's "
                 "--idle-busy-above is set")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  app.add_flag("--json", flags.json, "With --print-inventory, --print-activity or --print-holds: JSON");
  app.add_option("--log-level", flags.logLevel, "trace, debug, info, warn, error")->capture_default_str();
  app.set_version_flag("--version", switchyard::versionLine("yard-agent"), "Print yard-agent's version (and git commit) and exit");
  // CLI11 skips unknown keys and reads a broken line as some value: the file is checked first.
  if (auto checked = switchyard::checkConfigOf(app, argc, argv); !checked) {
    std::fprintf(stderr, "error: %s\n", checked.error().message.c_str());
    return 2;
  }
  CLI11_PARSE(app, argc, argv);
  if (flags.tlsCert.empty() != flags.tlsKey.empty()) {
    std::fprintf(stderr, "error: --tls-cert and --tls-key go together\n");
    return 2;
  }
  if (!flags.tlsClientCa.empty() && flags.tlsCert.empty()) {
    std::fprintf(stderr, "error: --tls-client-ca needs --tls-cert and --tls-key\n");
    return 2;
  }

  auto logger = spdlog::stderr_color_mt("yard-agent");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%-5l%$ %v", spdlog::pattern_time_type::utc);
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(flags.logLevel));
  const int rc = run(flags);
  spdlog::shutdown();
  std::fflush(stdout);
  // gRPC's library teardown can block on idle connections; nothing of ours is left to flush.
  std::_Exit(rc);
}
