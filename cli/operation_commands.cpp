// ops (`ops show`, `ops wait`) and watch: what yardd did and does, operation by operation and event by event.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/list_watch.h"

namespace yardctl {
namespace {

void addOps(CLI::App& app, const CommandContext& ctx) {
  struct Flags {
    int limit = 20;
    std::string system, kind, state, id;
    bool watch = false;
  };
  auto f = std::make_shared<Flags>();
  auto* ops = app.add_subcommand("ops", "List recent operations (filtered: every filter must match); `ops show ID`, `ops wait ID`");
  ops->add_option("--limit", f->limit, "How many (the newest that match)")->check(CLI::Range(1, 10'000))->capture_default_str();
  ops->add_option("--system", f->system, "Only operations on this system (name, or the id of one that is gone)");
  ops->add_option("--type,--kind", f->kind, "Only this kind of operation")->check(CLI::IsMember({"compose", "decompose", "attach", "detach"}));
  ops->add_option("--state", f->state, "Only operations in this state")
      ->check(CLI::IsMember({"queued", "running", "rolling-back", "succeeded", "failed"}));
  addWatchFlag(ops, f->watch);
  auto* show = ops->add_subcommand("show", "Show one operation with its step log");
  show->add_option("id", f->id, "Operation id")->required();
  auto* wait = ops->add_subcommand("wait", "Wait for an operation to finish, showing progress");
  wait->add_option("id", f->id, "Operation id")->required();
  ops->callback([ctx, f, show, wait] {
    if (show->parsed() || wait->parsed()) {
      pb::GetOperationRequest req;
      req.set_id(f->id);
      pb::Operation op;
      if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::GetOperation, req, op)) != kExitOk) return;
      if (wait->parsed())
        ctx.rc = ctx.client().follow(op);
      else if (ctx.g.format() == Format::kJson)
        std::cout << toJson(op) << "\n";
      else
        printOperation(op, std::cout);
      return;
    }
    auto list = [ctx, f] {
      pb::ListOperationsRequest req;
      req.set_limit(f->limit);
      req.set_system(f->system);
      req.set_kind(f->kind);
      req.set_state(f->state);
      pb::ListOperationsResponse r;
      if (int rc = ctx.client().call(&pb::Switchyard::Stub::ListOperations, req, r); rc != kExitOk) return rc;
      if (const auto none = noneMatched("operation", "yardctl ops", {{"--system", f->system}, {"--type", f->kind}, {"--state", f->state}});
          r.operations().empty() && !none.empty() && ctx.g.format() == Format::kTable)
        std::cout << none << "\n";
      else
        emit(ctx.g, r, printOperations);
      return kExitOk;
    };
    ctx.rc = f->watch ? watchList(ctx, list) : list();
  });
}

void addWatch(CLI::App& app, const CommandContext& ctx) {
  struct Flags {
    std::uint64_t after = 0;
    std::vector<std::string> types, subjects;
    std::string system;
  };
  auto f = std::make_shared<Flags>();
  auto* watch = app.add_subcommand("watch", "Stream events (binds, operations, drift) until interrupted");
  auto* after = watch->add_option("--after", f->after, "Replay recorded events after this sequence number first (--after 0: all of them)");
  watch->add_option("--system", f->system, "Only events about this system (name or id): its own, its operations' and its devices'");
  watch->add_option("--type", f->types,
                    "Only events of this type (operation.failed) or family (drift: every drift.*), repeatable or comma-separated. "
                    "Families: device, drift, fabric, host, inventory, lease, operation, preemption, queue, reclaim, "
                    "reservation, system")
      ->delimiter(',');
  watch->add_option("--subject", f->subjects,
                    "Only events about this id, repeatable: a system (sys-...), operation (op-...) or device, as the events name them")
      ->delimiter(',');
  watch->callback([ctx, f, after] {
    grpc::ClientContext call;
    ctx.client().prepare(call, false);
    pb::WatchRequest req;
    req.set_after_sequence(f->after);
    req.set_from_start(after->count() > 0 && f->after == 0);
    for (const auto& t : f->types) req.add_types(t);
    for (const auto& subject : f->subjects) req.add_subjects(subject);
    req.set_system(f->system);
    auto reader = ctx.client().stub().Watch(&call, req);
    pb::Event e;
    while (reader->Read(&e)) {
      if (ctx.g.format() == Format::kJson)
        std::cout << toJson(e) << std::endl;
      else
        printEvent(e, std::cout);
    }
    if (grpc::Status s = reader->Finish(); !s.ok()) ctx.rc = ctx.client().failed(s);
  });
}

}  // namespace

void addOperationCommands(CLI::App& app, const CommandContext& ctx) {
  addOps(app, ctx);
  addWatch(app, ctx);
}

}  // namespace yardctl
