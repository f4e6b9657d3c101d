// yardctl: the Switchyard command line. Talks to yardd over gRPC (switchyard.v1).
#include <grpc/support/log.h>
#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <optional>
#include <cstdlib>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <unistd.h>

#include "cli/agents_command.h"
#include "cli/release_command.h"
#include "cli/audit_command.h"
#include "cli/idle_command.h"
#include "cli/client.h"
#include "cli/connection.h"
#include "cli/contexts.h"
#include "cli/output.h"
#include "cli/safe_terminal.h"
#include "cli/session_commands.h"
#include "composer/model/queue.h"
#include "composer/model/version.h"
#include "switchyard/v1/switchyard.grpc.pb.h"

namespace pb = switchyard::v1;
using yardctl::Format;
using namespace yardctl;  // Globals, Client, emit and the exit codes (cli/client.h)

namespace {


struct GpuFlags {
  int count = 0;
  std::string model;
  int minMemory = 0;
  std::string p2p = "preferred";
  std::string host;
  std::vector<std::string> devices;
  std::vector<std::string> mig;
  double share = 0;

  void add(CLI::App* cmd, bool withHost) {
    auto* gpus = cmd->add_option("-g,--gpus", count, "Number of GPUs")->check(CLI::Range(0, 4096));
    cmd->add_option("--model", model, "Only this GPU model (see `yardctl devices`)");
    cmd->add_option("--min-memory", minMemory, "Minimum GPU memory in GiB")->check(CLI::Range(0, 1 << 20));
    cmd->add_option("--p2p", p2p, "required: all GPUs under one switch or fail; preferred: one switch if possible; none")
        ->check(CLI::IsMember({"required", "preferred", "none"}))
        ->capture_default_str();
    if (withHost) cmd->add_option("--host", host, "Use this host instead of letting the packing core choose");
    auto* deviceList = cmd->add_option("-d,--device", devices, "Use these devices instead of a count (repeatable)")->excludes(gpus);
    auto* migProfiles = cmd->add_option("--mig", mig,
                    "Fractional GPUs: MIG instances instead of whole GPUs, e.g. --mig 3g,1g,1g (profiles 1g 2g 3g 4g 7g). "
                    "A system's partly used GPUs are filled first; fresh MIG-capable GPUs are attached for the rest")
        ->delimiter(',')
        ->check(CLI::IsMember({"1g", "2g", "3g", "4g", "7g"}))
        ->excludes(gpus)
        ->excludes(deviceList);
    cmd->add_option("--gpu-share", share,
                    "A time-sliced share of one GPU instead of whole GPUs, as a fraction: --gpu-share 0.25 is a quarter of a GPU's "
                    "time (0.001-0.999). A system's share GPUs with room are filled first; otherwise a fresh GPU is bound")
        ->check(CLI::Range(0.001, 0.999))
        ->excludes(gpus)
        ->excludes(deviceList)
        ->excludes(migProfiles);  // each asks for GPUs its own way: two would leave one silently unused
  }

  [[nodiscard]] pb::GpuRequest toProto() const {
    pb::GpuRequest r;
    r.set_count(count);
    r.set_model(model);
    r.set_min_memory_gib(minMemory);
    r.set_peer_to_peer(p2p == "required" ? pb::PEER_TO_PEER_REQUIRED : p2p == "none" ? pb::PEER_TO_PEER_NONE : pb::PEER_TO_PEER_PREFERRED);
    r.set_host(host);
    for (const auto& d : devices) r.add_device_ids(d);
    for (const auto& m : mig) r.add_mig_profiles(m);
    if (share > 0) r.set_share_milli(static_cast<int>(std::lround(share * 1000)));
    return r;
  }
};


// Adds the global flags to a command and to every command below it. Each copy writes the same variable, so
// the flag counts wherever it is given.
void addGlobalFlags(CLI::App* cmd, Globals& g) {
  const std::string group = "Global flags (before or after the command)";
  cmd->add_option("-o,--output", g.output, "table or json (and csv for `yardctl usage`)")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str()
      ->group(group);
  cmd->add_option("--timeout", g.timeoutSeconds, "Seconds to wait for each call")->check(CLI::PositiveNumber)->capture_default_str()->group(group);
  cmd->add_option("--context", g.context, "Connect as this named context says (`yardctl context`; YARD_CONTEXT)")->group(group);
  g.connection.addFlags(cmd, group);
  for (CLI::App* sub : cmd->get_subcommands([](CLI::App*) { return true; })) addGlobalFlags(sub, g);
}

// Parses DEVICE@START (a MIG instance's device and first memory slice).
std::optional<std::pair<std::string, int>> parseInstanceRef(const std::string& v) {
  const auto at = v.rfind('@');
  if (at == std::string::npos || at == 0 || at + 1 == v.size()) return std::nullopt;
  int start = -1;
  const char* first = v.data() + at + 1;
  const char* last = v.data() + v.size();
  auto [end, ec] = std::from_chars(first, last, start);
  if (ec != std::errc() || end != last || start < 0 || start > 7) return std::nullopt;
  return std::pair{v.substr(0, at), start};
}

int runMutation(Client& client, const Globals& g, bool noWait, int rc, const pb::Operation& op) {
  if (rc != kExitOk) return rc;
  if (noWait) {
    if (g.format() == Format::kJson)
      std::cout << yardctl::toJson(op) << "\n";
    else
      std::cout << op.id() << "\n";
    return kExitOk;
  }
  return client.follow(op);
}

}  // namespace

static int runYardctl(int argc, char** argv) {
  Globals g;
  // The context (cli/contexts.h) fills in what neither the YARD_* variables nor the flags say.
  std::string contextError;
  const auto chosen = yardctl::chooseContext(argc, argv, contextError);
  if (!chosen) {
    std::cerr << "error: " << contextError << "\n";
    return kExitUsage;
  }
  if (chosen->context) g.connection = Connection::fromEnvironment(&*chosen->context);
  CLI::App app{"yardctl: compose and inspect logical servers on a Switchyard fabric.\n\n"
               "Examples:\n"
               "  yardctl devices                          what is in the pool, and who holds it\n"
               "  yardctl devices --free --switch sw3      what a compose could take under one switch\n"
               "  yardctl plan --gpus 4 --p2p required     where 4 peer-to-peer GPUs would go, and why\n"
               "  yardctl compose train-a --gpus 4         bind 4 GPUs to a free host; waits, showing each step\n"
               "  yardctl attach train-a --gpus 2          grow it\n"
               "  yardctl detach train-a -d sw0-gpu3       shrink it\n"
               "  yardctl compose infer-b --mig 3g,1g,1g   fractional GPUs: MIG instances on MIG-capable GPUs\n"
               "  yardctl detach infer-b -i sw0-gpu5@4     drop one MIG instance (device@first-slice)\n"
               "  yardctl compose svc --gpu-share 0.25     a quarter of one GPU's time (time-sliced)\n"
               "  yardctl attach svc --gpu-share 0.5       another share: on the system's GPU when it has room\n"
               "  yardctl decompose train-a                give everything back\n"
               "  yardctl compose big --gpus 8 --queue     wait in the queue when 8 GPUs are not free now\n"
               "  yardctl compose job --gpus 2 --lease 8h  decomposed after 8 hours (`yardctl renew job --lease 2h`)\n"
               "  yardctl queue                            what waits, in admission order, and why\n"
               "  yardctl topology                         switches, ports and what is bound where\n"
               "  yardctl capacity                         how many 1/2/4/8/16-GPU requests still fit\n"
               "  yardctl -o json systems | jq .           the same data for scripts\n"};
  app.footer("Exit codes: 0 ok; 1 the operation failed and was rolled back; 2 usage or invalid request;\n"
             "3 not found, does not fit, busy, already exists, or not allowed (credentials, role, tenant, quota);\n"
             "4 yardd unreachable or failing.\n"
             "YARD_SERVER sets the default --server; YARD_CA, YARD_CERT/YARD_KEY, YARD_TOKEN_FILE (or YARD_TOKEN) and\n"
             "YARD_PLAINTEXT=1 set how to connect and authenticate; they override the context (`yardctl context`,\n"
             "--context NAME or YARD_CONTEXT), and the flags override them.");
  app.require_subcommand(1);
  app.set_version_flag("--version", switchyard::versionLine("yardctl"), "Print yardctl's version (and git commit) and exit");

  // Created on first use, after the global flags are parsed.
  std::unique_ptr<Client> clientHolder;
  auto client = [&]() -> Client& {
    if (!clientHolder) clientHolder = std::make_unique<Client>(g);
    return *clientHolder;
  };
  int rc = kExitOk;

  // Every page of a list, merged into one response.
  auto allPages = [&](auto method, auto request, auto& out) {
    while (true) {
      std::remove_reference_t<decltype(out)> page;
      if (int r = client().call(method, request, page); r != kExitOk) return r;
      const std::string next = page.next_page_token();
      out.MergeFrom(page);
      out.clear_next_page_token();
      if (next.empty()) return kExitOk;
      request.set_page_token(next);
    }
  };
  app.add_subcommand("hosts", "List hosts, their upstream ports and what they serve")->callback([&] {
    pb::ListHostsResponse r;
    if ((rc = allPages(&pb::Switchyard::Stub::ListHosts, pb::ListHostsRequest{}, r)) == kExitOk) emit(g, r, yardctl::printHosts);
  });
  auto* devices = app.add_subcommand("devices", "List devices with their switch, health and holder (filters combine: every one must match)");
  pb::ListDevicesRequest deviceFilter;
  devices->add_flag_callback("--free", [&] { deviceFilter.set_free_only(true); }, "Only free devices that are not critical (what a compose could take)");
  devices->add_option_function<std::string>("--model", [&](const std::string& v) { deviceFilter.set_model(v); }, "Only this model (exact name)");
  devices->add_option_function<std::string>("--switch", [&](const std::string& v) { deviceFilter.set_switch_id(v); }, "Only devices under this switch");
  devices->add_option_function<std::string>("--host", [&](const std::string& v) { deviceFilter.set_host_id(v); },
                                            "Only devices counted against this host (in its system, or held for it)");
  devices->add_option_function<std::string>("--system", [&](const std::string& v) { deviceFilter.set_system(v); }, "Only this system's devices (id or name)");
  devices->callback([&] {
    if (!devices->get_subcommands().empty()) return;
    pb::ListDevicesResponse r;
    if ((rc = allPages(&pb::Switchyard::Stub::ListDevices, deviceFilter, r)) == kExitOk) emit(g, r, yardctl::printDevices);
  });
  yardctl::addReleaseCommand(*devices, [&](const pb::ReleaseDeviceRequest& req, pb::Device& d) {
    return client().call(&pb::Switchyard::Stub::ReleaseDevice, req, d);
  }, [&] { return g.format(); }, rc);

  auto* systems = app.add_subcommand("systems", "List composed systems, or show one");
  std::string systemName, tenantFilter, labelSelector;
  systems->add_option("system", systemName, "Show this system (id or name)");
  systems->add_option("--tenant", tenantFilter, "Only this tenant's systems");
  systems->add_option("-l,--selector", labelSelector,
                      "Only systems whose labels match: team=vision, team!=vision, gpu (has the label), !spot (has not); "
                      "comma-separated, all must hold");
  systems->callback([&] {
    if (!systemName.empty()) {
      pb::GetSystemRequest req;
      req.set_system(systemName);
      pb::System s;
      if ((rc = client().call(&pb::Switchyard::Stub::GetSystem, req, s)) == kExitOk) emit(g, s, yardctl::printSystem);
      return;
    }
    pb::ListSystemsRequest req;
    req.set_tenant(tenantFilter);
    req.set_label_selector(labelSelector);
    pb::ListSystemsResponse r;
    if ((rc = allPages(&pb::Switchyard::Stub::ListSystems, req, r)) == kExitOk) emit(g, r, yardctl::printSystems);
  });

  app.add_subcommand("topology", "Show switches and ports as a tree, with what is bound where")->callback([&] {
    pb::Topology t;
    if ((rc = client().call(&pb::Switchyard::Stub::GetTopology, pb::GetTopologyRequest{}, t)) == kExitOk) emit(g, t, yardctl::printTopology);
  });

  // compose
  auto* compose = app.add_subcommand("compose", "Compose a logical server: bind GPUs to a free host");
  std::string composeName, tenant;
  std::vector<std::string> labels;
  GpuFlags composeGpus;
  bool noWait = false;
  std::string requestId;
  const std::string requestIdHelp =
      "Idempotency key: running the command again with the same key follows the operation the first run started instead "
      "of starting another (safe retries from scripts)";
  compose->add_option("name", composeName, "Name of the new system (letters, digits, . _ -)")->required();
  composeGpus.add(compose, true);
  compose->add_option("--tenant", tenant, "Owning tenant")->default_str("default");
  compose->add_option("-l,--label", labels, "key=value label (repeatable)");
  compose->add_flag("--no-wait", noWait, "Print the operation id and return at once");
  compose->add_option("--request-id", requestId, requestIdHelp);
  bool queue = false;
  std::string priority, queueTimeout, lease;
  auto durationCheck = CLI::Validator(
      [](std::string& v) { return switchyard::parseDuration(v) ? std::string() : "'" + v + "' is not a duration such as 90s, 30m, 8h, 2d or 1h30m"; },
      "DURATION");
  compose->add_flag("--queue", queue,
                    "When it does not fit now, wait in yardd's queue instead of failing; it is composed the moment capacity frees "
                    "(see `yardctl queue`)");
  compose->add_option("--priority", priority, "Priority class, which orders the queue: production, batch (default) or spot, unless yardd "
                                              "configures others");
  compose->add_option("--queue-timeout", queueTimeout, "Give up waiting in the queue after this long (90s, 30m, 8h)")
      ->check(durationCheck)
      ->needs(compose->get_option("--queue"));
  compose->add_option("--lease", lease, "Decompose the system this long after it is composed (90s, 30m, 8h, 2d); `yardctl renew` extends it")
      ->check(durationCheck);
  compose->callback([&] {
    pb::ComposeRequest req;
    req.set_queue(queue);
    req.set_priority_class(priority);
    auto seconds = [](const std::string& text) -> std::int64_t {
      if (text.empty()) return 0;
      const auto d = switchyard::parseDuration(text);
      return d ? std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(*d).count()) : 0;
    };
    req.set_queue_timeout_seconds(seconds(queueTimeout));
    req.set_lease_seconds(seconds(lease));
    req.set_name(composeName);
    req.set_request_id(requestId);
    *req.mutable_gpus() = composeGpus.toProto();
    req.set_tenant(tenant);
    for (const auto& l : labels) {
      const auto eq = l.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "error: --label '" << l << "' must look like key=value\n";
        rc = kExitUsage;
        return;
      }
      (*req.mutable_labels())[l.substr(0, eq)] = l.substr(eq + 1);
    }
    pb::Operation op;
    rc = runMutation(client(), g, noWait, client().call(&pb::Switchyard::Stub::Compose, req, op), op);
  });

  auto* queueCmd = app.add_subcommand("queue", "List the requests waiting in yardd's queue, in the order they will be admitted, and why each waits");
  std::string queueTenant;
  queueCmd->add_option("--tenant", queueTenant, "Only this tenant's requests (positions stay those of the whole queue)");
  queueCmd->callback([&] {
    if (queueCmd->get_subcommands().size() > 0) return;
    pb::ListQueueRequest req;
    req.set_tenant(queueTenant);
    pb::ListQueueResponse r;
    if ((rc = client().call(&pb::Switchyard::Stub::ListQueue, req, r)) == kExitOk) emit(g, r, yardctl::printQueue);
  });
  auto* cancel = queueCmd->add_subcommand("cancel", "Take a request out of the queue (its operation fails as cancelled)");
  std::string cancelId;
  cancel->add_option("id", cancelId, "The queued operation's id (op-N) or its system's name")->required();
  cancel->callback([&] {
    pb::CancelQueuedRequest req;
    req.set_id(cancelId);
    pb::Operation op;
    if ((rc = client().call(&pb::Switchyard::Stub::CancelQueued, req, op)) != kExitOk) return;
    if (g.format() == Format::kJson) std::cout << yardctl::toJson(op) << "\n";
    else std::cout << fmt::format("{} cancelled: {} left the queue\n", op.id(), op.system_id());
  });

  auto* usageCmd = app.add_subcommand("usage", "GPU-hours by tenant, system or GPU model, from yardd's operation log (showback and chargeback)");
  pb::GetUsageRequest usageReq;
  usageCmd->add_option_function<std::string>("--by", [&](const std::string& v) { usageReq.set_by(v); },
                                              "One row per tenant, system or model (default: per tenant, system and model)")
      ->check(CLI::IsMember({"tenant", "system", "model"}));
  usageCmd->add_option_function<std::string>("--since", [&](const std::string& v) { usageReq.set_since(v); },
                                             "From this time (RFC 3339 UTC or a date: 2026-11-01); default: the start of the log");
  usageCmd->add_option_function<std::string>("--until", [&](const std::string& v) { usageReq.set_until(v); }, "Until this time; default: now");
  usageCmd->callback([&] {
    pb::UsageResponse r;
    if ((rc = client().call(&pb::Switchyard::Stub::GetUsage, usageReq, r)) != kExitOk) return;
    if (g.output == "csv") {
      std::cout << "tenant,system_id,system_name,model,gpu_hours,systems,idle_gpu_hours\n";
      for (const auto& row : r.rows())
        std::cout << fmt::format("{},{},{},{},{:.4f},{},{:.4f}\n", row.tenant(), row.system_id(), row.system_name(), row.model(), row.gpu_hours(),
                                 row.systems(), row.idle_gpu_hours());
      return;
    }
    emit(g, r, yardctl::printUsage);
  });

  auto* renew = app.add_subcommand("renew", "Extend (or set) a system's lease: it is decomposed when the lease ends");
  std::string renewName, renewLease;
  renew->add_option("system", renewName, "System id or name")->required();
  renew->add_option("--lease", renewLease, "The lease ends this long from now (90s, 30m, 8h, 2d)")->required()->check(durationCheck);
  renew->callback([&] {
    pb::RenewLeaseRequest req;
    req.set_system(renewName);
    const auto d = switchyard::parseDuration(renewLease);
    req.set_lease_seconds(std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(*d).count()));
    pb::System s;
    if ((rc = client().call(&pb::Switchyard::Stub::RenewLease, req, s)) != kExitOk) return;
    if (g.format() == Format::kJson) std::cout << yardctl::toJson(s) << "\n";
    else std::cout << fmt::format("{} ({}): lease until {}\n", s.name(), s.id(), s.lease_expires_at());
  });

  auto* decompose = app.add_subcommand("decompose", "Unbind every device of a system and return them to the pool");
  std::string decomposeName;
  decompose->add_option("system", decomposeName, "System id or name")->required();
  decompose->add_flag("--no-wait", noWait, "Print the operation id and return at once");
  decompose->add_option("--request-id", requestId, requestIdHelp);
  decompose->callback([&] {
    pb::DecomposeRequest req;
    req.set_system(decomposeName);
    req.set_request_id(requestId);
    pb::Operation op;
    rc = runMutation(client(), g, noWait, client().call(&pb::Switchyard::Stub::Decompose, req, op), op);
  });

  auto* attach = app.add_subcommand("attach", "Add GPUs to an existing system");
  std::string attachName;
  GpuFlags attachGpus;
  attach->add_option("system", attachName, "System id or name")->required();
  attachGpus.add(attach, false);
  attach->add_flag("--no-wait", noWait, "Print the operation id and return at once");
  attach->add_option("--request-id", requestId, requestIdHelp);
  attach->callback([&] {
    pb::AttachRequest req;
    req.set_system(attachName);
    req.set_request_id(requestId);
    *req.mutable_gpus() = attachGpus.toProto();
    pb::Operation op;
    rc = runMutation(client(), g, noWait, client().call(&pb::Switchyard::Stub::Attach, req, op), op);
  });

  auto* detach = app.add_subcommand("detach", "Remove devices, MIG instances or GPU shares from a system");
  std::string detachName;
  std::vector<std::string> detachDevices, detachInstances;
  std::vector<int> detachShares;
  detach->add_option("system", detachName, "System id or name")->required();
  detach->add_option("-d,--device", detachDevices, "Device to remove, with any MIG instances on it (repeatable)");
  detach->add_option("-i,--instance", detachInstances,
                     "MIG instance to remove, as DEVICE@START (see `yardctl systems NAME`); a GPU left with none is unbound")
      ->check([](const std::string& v) -> std::string {
        if (!parseInstanceRef(v)) return "must look like DEVICE@START with START a memory slice 0-7, e.g. sw0-gpu5@4";
        return {};
      });
  detach->add_option("--share", detachShares, "GPU share to remove, by its id (see `yardctl systems NAME`); a GPU left with none is unbound")
      ->check(CLI::PositiveNumber);
  detach->add_flag("--no-wait", noWait, "Print the operation id and return at once");
  detach->add_option("--request-id", requestId, requestIdHelp);
  detach->callback([&] {
    pb::DetachRequest req;
    req.set_system(detachName);
    req.set_request_id(requestId);
    for (const auto& d : detachDevices) req.add_device_ids(d);
    for (int id : detachShares) req.add_gpu_shares(id);
    for (const auto& i : detachInstances) {
      const auto parsed = parseInstanceRef(i);  // checked while parsing the flags
      auto* ref = req.add_gpu_instances();
      ref->set_device_id(parsed->first);
      ref->set_start(parsed->second);
    }
    if (req.device_ids().empty() && req.gpu_instances().empty() && req.gpu_shares().empty()) {
      std::cerr << "error: name what to remove with --device, --instance or --share\n";
      rc = kExitUsage;
      return;
    }
    pb::Operation op;
    rc = runMutation(client(), g, noWait, client().call(&pb::Switchyard::Stub::Detach, req, op), op);
  });

  auto* plan = app.add_subcommand("plan", "Dry run: which host and GPUs a request would get, and why");
  GpuFlags planGpus;
  bool explain = false;
  planGpus.add(plan, true);
  std::string planPriority;
  plan->add_flag("--explain", explain, "Show every candidate host and why it was chosen or rejected");
  plan->add_option("--priority", planPriority,
                   "Priority class the request would have: when it does not fit and its class preempts (production and batch by "
                   "default), also show which systems preemption would take back for it and the host it would get");
  plan->callback([&] {
    pb::PlanRequest req;
    *req.mutable_gpus() = planGpus.toProto();
    req.set_priority_class(planPriority);
    pb::PlanResponse r;
    if ((rc = client().call(&pb::Switchyard::Stub::Plan, req, r)) != kExitOk) return;
    if (g.format() == Format::kJson)
      std::cout << yardctl::toJson(r) << "\n";
    else
      yardctl::printPlan(r, explain, std::cout);
    if (!r.fits()) rc = kExitRefused;
  });

  auto* capacity = app.add_subcommand("capacity", "Usable capacity: how many more requests of each size fit now");
  std::vector<int> capacityGpus;
  std::string capacityP2p = "required", capacityModel;
  capacity->add_option("-g,--gpus", capacityGpus, "Request sizes (default 1 2 4 8 16)")->check(CLI::PositiveNumber);
  capacity->add_option("--p2p", capacityP2p, "required: each request under one switch; preferred; none")
      ->check(CLI::IsMember({"required", "preferred", "none"}))
      ->capture_default_str();
  capacity->add_option("--model", capacityModel, "Only this GPU model");
  std::vector<std::string> capacityMig{"1g", "2g", "3g", "4g", "7g"};
  capacity->add_option("--mig", capacityMig, "MIG profiles to report (comma list; 'none' for no MIG rows)")
      ->delimiter(',')
      ->check(CLI::IsMember({"1g", "2g", "3g", "4g", "7g", "none"}))
      ->capture_default_str();
  std::vector<double> capacityShares{0.1, 0.25, 0.5};
  capacity->add_option("--gpu-share", capacityShares, "GPU share sizes to report, as fractions (comma list; 0 for no share rows)")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 0.999))
      ->capture_default_str();
  capacity->callback([&] {
    pb::GetCapacityRequest req;
    for (int n : capacityGpus) req.add_gpus(n);
    req.set_peer_to_peer(capacityP2p == "none" ? pb::PEER_TO_PEER_NONE
                         : capacityP2p == "preferred" ? pb::PEER_TO_PEER_PREFERRED
                                                      : pb::PEER_TO_PEER_REQUIRED);
    req.set_model(capacityModel);
    for (const auto& m : capacityMig)
      if (m != "none") req.add_mig_profiles(m);
    for (double share : capacityShares)
      if (const int milli = static_cast<int>(std::lround(share * 1000)); milli > 0) req.add_share_milli(milli);
    pb::Capacity r;
    if ((rc = client().call(&pb::Switchyard::Stub::GetCapacity, req, r)) == kExitOk) emit(g, r, yardctl::printCapacity);
  });

  auto* ops = app.add_subcommand("ops", "List recent operations (filtered: every filter must match); `ops show ID`, `ops wait ID`");
  int limit = 20;
  std::string opsSystem, opsKind, opsState;
  ops->add_option("--limit", limit, "How many (the newest that match)")->check(CLI::Range(1, 10'000))->capture_default_str();
  ops->add_option("--system", opsSystem, "Only operations on this system (name, or the id of one that is gone)");
  ops->add_option("--type,--kind", opsKind, "Only this kind of operation")->check(CLI::IsMember({"compose", "decompose", "attach", "detach"}));
  ops->add_option("--state", opsState, "Only operations in this state")
      ->check(CLI::IsMember({"queued", "running", "rolling-back", "succeeded", "failed"}));
  std::string opId;
  auto* opsShow = ops->add_subcommand("show", "Show one operation with its step log");
  opsShow->add_option("id", opId, "Operation id")->required();
  auto* opsWait = ops->add_subcommand("wait", "Wait for an operation to finish, showing progress");
  opsWait->add_option("id", opId, "Operation id")->required();
  ops->callback([&] {
    if (opsShow->parsed() || opsWait->parsed()) {
      pb::GetOperationRequest req;
      req.set_id(opId);
      pb::Operation op;
      if ((rc = client().call(&pb::Switchyard::Stub::GetOperation, req, op)) != kExitOk) return;
      if (opsWait->parsed()) {
        rc = client().follow(op);
      } else if (g.format() == Format::kJson) {
        std::cout << yardctl::toJson(op) << "\n";
      } else {
        yardctl::printOperation(op, std::cout);
      }
      return;
    }
    pb::ListOperationsRequest req;
    req.set_limit(limit);
    req.set_system(opsSystem);
    req.set_kind(opsKind);
    req.set_state(opsState);
    pb::ListOperationsResponse r;
    if ((rc = client().call(&pb::Switchyard::Stub::ListOperations, req, r)) == kExitOk) emit(g, r, yardctl::printOperations);
  });

  auto* watch = app.add_subcommand("watch", "Stream events (binds, operations, drift) until interrupted");
  std::uint64_t after = 0;
  auto* afterOption = watch->add_option("--after", after, "Replay recorded events after this sequence number first (--after 0: all of them)");
  std::vector<std::string> watchTypes, watchSubjects;
  std::string watchSystem;
  watch->add_option("--system", watchSystem, "Only events about this system (name or id): its own, its operations' and its devices'");
  watch->add_option("--type", watchTypes,
                    "Only events of this type or family, repeatable or comma-separated: drift (every drift.*), operation.failed, "
                    "device, lease, queue, system")
      ->delimiter(',');
  watch->add_option("--subject", watchSubjects,
                    "Only events about this id, repeatable: a system (sys-...), operation (op-...) or device, as the events name them")
      ->delimiter(',');
  watch->callback([&] {
    grpc::ClientContext ctx;
    client().prepare(ctx, false);
    pb::WatchRequest req;
    req.set_after_sequence(after);
    req.set_from_start(afterOption->count() > 0 && after == 0);
    for (const auto& t : watchTypes) req.add_types(t);
    for (const auto& subject : watchSubjects) req.add_subjects(subject);
    req.set_system(watchSystem);
    auto reader = client().stub().Watch(&ctx, req);
    pb::Event e;
    while (reader->Read(&e)) {
      if (g.format() == Format::kJson)
        std::cout << yardctl::toJson(e) << std::endl;
      else
        yardctl::printEvent(e, std::cout);
    }
    grpc::Status s = reader->Finish();
    if (!s.ok()) {
      rc = client().failed(s);
    }
  });

  yardctl::addSessionCommands(app, g, client, *chosen, rc);

  yardctl::addAuditCommand(app, [&](const pb::ListAuditRequest& req, pb::ListAuditResponse& r) {
    return client().call(&pb::Switchyard::Stub::ListAudit, req, r);
  }, [&] { return g.format(); }, rc);
  yardctl::addAgentsCommand(app,
                            {[&](pb::ListAgentsResponse& r) {
                               auto registry = client().stubOf<pb::AgentRegistry>();
                               return client().callOn(*registry, &pb::AgentRegistry::Stub::List, pb::ListAgentsRequest{}, r);
                             },
                             [&](const pb::DeregisterAgentRequest& req, pb::RegisteredAgent& gone) {
                               auto registry = client().stubOf<pb::AgentRegistry>();
                               return client().callOn(*registry, &pb::AgentRegistry::Stub::Deregister, req, gone);
                             }},
                            [&] { return g.format(); }, rc);
  yardctl::addIdleCommand(app, [&](const pb::ListIdleRequest& req, pb::ListIdleResponse& r) {
    return client().call(&pb::Switchyard::Stub::ListIdle, req, r);
  }, [&] { return g.format(); }, rc);

  // Global flags work before and after the command (`yardctl -o json hosts` and `yardctl hosts -o json`),
  // and every command's --help lists them.
  addGlobalFlags(&app, g);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "error: " << e.what() << "\nRun `yardctl --help` (or `yardctl COMMAND --help`) for usage.\n";
    return kExitUsage;
  }
  return rc;
}

int main(int argc, char** argv) {
  // Names, labels and messages can come from anyone: nothing printed may drive the terminal.
  yardctl::SafeTerminal safeOut(std::cout), safeErr(std::cerr);
  // gRPC's own log lines ("E1126 ... Handshake failed ...") repeat, rawly, what the error and its hint say;
  // GRPC_VERBOSITY set in the environment keeps them, for debugging.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function([](gpr_log_func_args*) {});
  // Every expected failure is an exit code with a message; this only keeps a bug from ending in abort().
  try {
    return runYardctl(argc, argv);
  } catch (const std::invalid_argument& e) {  // a connection flag that cannot work
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: internal error in yardctl: " << e.what() << "\nPlease report it with the command you ran.\n";
    return kExitServer;
  }
}
