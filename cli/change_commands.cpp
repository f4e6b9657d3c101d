// compose, attach, detach, decompose, renew: the commands that change a system. Each starts an operation
// and, unless --no-wait, follows it to its end showing each step; --request-id makes a retry safe.
#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <optional>

#include "cli/commands.h"
#include "cli/gpu_flags.h"
#include "composer/model/queue.h"

namespace yardctl {
namespace {

const char* const kRequestIdHelp =
    "Idempotency key: running the command again with the same key follows the operation the first run started instead "
    "of starting another (safe retries from scripts)";

// --no-wait and --request-id, on every command here.
struct OperationFlags {
  bool noWait = false;
  std::string requestId;
  void add(CLI::App* cmd) {
    cmd->add_flag("--no-wait", noWait, "Print the operation id and return at once");
    cmd->add_option("--request-id", requestId, kRequestIdHelp);
  }
};

// Prints the operation a change started (its id with --no-wait), or follows it to its end.
int runMutation(const CommandContext& ctx, const OperationFlags& flags, int rc, const pb::Operation& op) {
  if (rc != kExitOk) return rc;
  if (flags.noWait) {
    if (ctx.g.format() == Format::kJson)
      std::cout << toJson(op) << "\n";
    else
      std::cout << op.id() << "\n";
    return kExitOk;
  }
  return ctx.client().follow(op);
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

const CLI::Validator& durationCheck() {
  static const CLI::Validator check(
      [](std::string& v) { return switchyard::parseDuration(v) ? std::string() : "'" + v + "' is not a duration such as 90s, 30m, 8h, 2d or 1h30m"; },
      "DURATION");
  return check;
}

// A checked duration flag in whole seconds (at least 1); 0 when not given.
std::int64_t seconds(const std::string& text) {
  if (text.empty()) return 0;
  const auto d = switchyard::parseDuration(text);
  return d ? std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(*d).count()) : 0;
}

void addCompose(CLI::App& app, const CommandContext& ctx) {
  struct Flags {
    std::string name, tenant, priority, queueTimeout, lease, machineTemplate;
    std::vector<std::string> labels;
    GpuFlags gpus;
    OperationFlags operation;
    bool queue = false;
  };
  auto f = std::make_shared<Flags>();
  auto* compose = app.add_subcommand("compose", "Compose a logical server: bind GPUs (and pooled memory, drives, NICs) to a free host, by count or from a template");
  compose->add_option("name", f->name, "Name of the new system (letters, digits, . _ -)")->required();
  f->gpus.add(compose, true);
  compose->add_option("--tenant", f->tenant, "Owning tenant")->default_str("default");
  compose->add_option("-t,--template", f->machineTemplate,
                      "Start from this machine template (see `yardctl templates`): any of --gpus, --model, --p2p, --memory, --nic, --nvme, "
                      "--priority and --lease given too replaces that part of it; labels are merged");
  compose->add_option("-l,--label", f->labels, "key=value label (repeatable); a key alone (--label spot) is key= (an empty value)");
  f->operation.add(compose);
  compose->add_flag("--queue", f->queue,
                    "When it does not fit now, wait in yardd's queue instead of failing; it is composed the moment capacity frees "
                    "(see `yardctl queue`)");
  compose->add_option("--priority", f->priority, "Priority class, which orders the queue: production, batch (default) or spot, unless yardd "
                                                 "configures others");
  compose->add_option("--queue-timeout", f->queueTimeout, "Give up waiting in the queue after this long (90s, 30m, 8h)")
      ->check(durationCheck())
      ->needs(compose->get_option("--queue"));
  compose->add_option("--lease", f->lease, "Decompose the system this long after it is composed (90s, 30m, 8h, 2d); `yardctl renew` extends it")
      ->check(durationCheck());
  compose->callback([ctx, f] {
    pb::ComposeRequest req;
    req.set_queue(f->queue);
    req.set_priority_class(f->priority);
    req.set_queue_timeout_seconds(seconds(f->queueTimeout));
    req.set_lease_seconds(seconds(f->lease));
    req.set_name(f->name);
    req.set_machine_template(f->machineTemplate);
    req.set_request_id(f->operation.requestId);
    *req.mutable_gpus() = f->gpus.toProto();
    if (f->gpus.wantsMemory()) f->gpus.fillMemory(req.mutable_memory());
    f->gpus.fillEndpoints(req.mutable_endpoints());
    req.set_tenant(f->tenant);
    for (const auto& l : f->labels) {
      // `--label spot` is `spot=`: a label with an empty value, which `-l spot` selects (as kubectl takes it).
      const auto eq = std::min(l.find('='), l.size());
      if (eq == 0) {
        std::cerr << "error: --label '" << l << "' has no key: key=value, or key alone for an empty value\n";
        ctx.rc = kExitUsage;
        return;
      }
      (*req.mutable_labels())[l.substr(0, eq)] = eq < l.size() ? l.substr(eq + 1) : std::string();
    }
    pb::Operation op;
    ctx.rc = runMutation(ctx, f->operation, ctx.client().call(&pb::Switchyard::Stub::Compose, req, op), op);
  });
}

void addRenew(CLI::App& app, const CommandContext& ctx) {
  struct Flags {
    std::string system, lease;
  };
  auto f = std::make_shared<Flags>();
  auto* renew = app.add_subcommand("renew", "Extend (or set) a system's lease: it is decomposed when the lease ends");
  renew->add_option("system", f->system, "System id or name")->required();
  renew->add_option("--lease", f->lease, "The lease ends this long from now (90s, 30m, 8h, 2d)")->required()->check(durationCheck());
  renew->callback([ctx, f] {
    pb::RenewLeaseRequest req;
    req.set_system(f->system);
    req.set_lease_seconds(seconds(f->lease));
    pb::System s;
    if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::RenewLease, req, s)) != kExitOk) return;
    if (ctx.g.format() == Format::kJson)
      std::cout << toJson(s) << "\n";
    else
      std::cout << fmt::format("{} ({}): lease until {}\n", s.name(), s.id(), s.lease_expires_at());
  });
}

void addDecompose(CLI::App& app, const CommandContext& ctx) {
  struct Flags {
    std::string system;
    OperationFlags operation;
  };
  auto f = std::make_shared<Flags>();
  auto* decompose = app.add_subcommand("decompose", "Unbind every device of a system and return them to the pool");
  decompose->add_option("system", f->system, "System id or name")->required();
  f->operation.add(decompose);
  decompose->callback([ctx, f] {
    pb::DecomposeRequest req;
    req.set_system(f->system);
    req.set_request_id(f->operation.requestId);
    pb::Operation op;
    const int rc = ctx.client().call(&pb::Switchyard::Stub::Decompose, req, op);
    // A queued system has nothing bound: yardd cancels its request and answers with that (compose) operation,
    // failed as cancelled. That is what was asked, so it ends 0, as `queue cancel` does.
    if (rc == kExitOk && op.kind() == pb::OPERATION_KIND_COMPOSE) {
      if (ctx.g.format() == Format::kJson)
        std::cout << toJson(op) << "\n";
      else
        std::cout << fmt::format("{} was queued: its request {} is cancelled and nothing was bound\n", f->system, op.id());
      ctx.rc = kExitOk;
      return;
    }
    ctx.rc = runMutation(ctx, f->operation, rc, op);
  });
}

void addAttach(CLI::App& app, const CommandContext& ctx) {
  struct Flags {
    std::string system;
    GpuFlags gpus;
    OperationFlags operation;
  };
  auto f = std::make_shared<Flags>();
  auto* attach = app.add_subcommand("attach", "Add GPUs, pooled memory, drives or NICs to an existing system");
  attach->add_option("system", f->system, "System id or name")->required();
  f->gpus.add(attach, false);
  f->operation.add(attach);
  attach->callback([ctx, f] {
    pb::AttachRequest req;
    req.set_system(f->system);
    req.set_request_id(f->operation.requestId);
    *req.mutable_gpus() = f->gpus.toProto();
    if (f->gpus.wantsMemory()) f->gpus.fillMemory(req.mutable_memory());
    f->gpus.fillEndpoints(req.mutable_endpoints());
    pb::Operation op;
    ctx.rc = runMutation(ctx, f->operation, ctx.client().call(&pb::Switchyard::Stub::Attach, req, op), op);
  });
}

void addDetach(CLI::App& app, const CommandContext& ctx) {
  struct Flags {
    std::string system;
    std::vector<std::string> devices, instances;
    std::vector<int> shares;
    OperationFlags operation;
  };
  auto f = std::make_shared<Flags>();
  auto* detach = app.add_subcommand("detach", "Remove devices, MIG instances or GPU shares from a system");
  detach->add_option("system", f->system, "System id or name")->required();
  detach->add_option("-d,--device", f->devices, "Device to remove, with any MIG instances on it (repeatable)");
  detach->add_option("-i,--instance", f->instances,
                     "MIG instance to remove, as DEVICE@START (see `yardctl systems NAME`); a GPU left with none is unbound")
      ->check([](const std::string& v) -> std::string {
        if (!parseInstanceRef(v)) return "must look like DEVICE@START with START a memory slice 0-7, e.g. sw0-gpu5@4";
        return {};
      });
  detach->add_option("--share", f->shares, "GPU share to remove, by its id (see `yardctl systems NAME`); a GPU left with none is unbound")
      ->check(CLI::PositiveNumber);
  f->operation.add(detach);
  detach->callback([ctx, f] {
    pb::DetachRequest req;
    req.set_system(f->system);
    req.set_request_id(f->operation.requestId);
    for (const auto& d : f->devices) req.add_device_ids(d);
    for (int id : f->shares) req.add_gpu_shares(id);
    for (const auto& i : f->instances) {
      const auto parsed = parseInstanceRef(i);  // checked while parsing the flags
      auto* ref = req.add_gpu_instances();
      ref->set_device_id(parsed->first);
      ref->set_start(parsed->second);
    }
    if (req.device_ids().empty() && req.gpu_instances().empty() && req.gpu_shares().empty()) {
      std::cerr << "error: name what to remove with --device, --instance or --share\n";
      ctx.rc = kExitUsage;
      return;
    }
    pb::Operation op;
    ctx.rc = runMutation(ctx, f->operation, ctx.client().call(&pb::Switchyard::Stub::Detach, req, op), op);
  });
}

}  // namespace

void addChangeCommands(CLI::App& app, const CommandContext& ctx) {
  addCompose(app, ctx);
  addRenew(app, ctx);
  addDecompose(app, ctx);
  addAttach(app, ctx);
  addDetach(app, ctx);
}

}  // namespace yardctl
