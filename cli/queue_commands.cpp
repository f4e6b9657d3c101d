// queue, `queue cancel` and usage: what waits for capacity, and who used how much of it.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/list_watch.h"
#include "cli/usage_output.h"
#include "composer/model/usage_grouping.h"

namespace yardctl {
namespace {

void addQueue(CLI::App& app, const CommandContext& ctx) {
  auto tenant = std::make_shared<std::string>();
  auto* queue = app.add_subcommand("queue", "List the requests waiting in yardd's queue, in the order they will be admitted, and why each waits");
  queue->add_option("--tenant", *tenant, "Only this tenant's requests (positions stay those of the whole queue)");
  auto watching = std::make_shared<bool>(false);
  addWatchFlag(queue, *watching);
  queue->callback([ctx, tenant, queue, watching] {
    if (!queue->get_subcommands().empty()) return;  // `queue cancel` ran instead
    auto list = [ctx, tenant] {
      pb::ListQueueRequest req;
      req.set_tenant(*tenant);
      pb::ListQueueResponse r;
      int rc = ctx.client().call(&pb::Switchyard::Stub::ListQueue, req, r);
      if (rc == kExitOk) emit(ctx.g, r, printQueue);
      return rc;
    };
    ctx.rc = *watching ? watchList(ctx, list) : list();
  });
  auto id = std::make_shared<std::string>();
  auto* cancel = queue->add_subcommand("cancel", "Take a request out of the queue (its operation fails as cancelled)");
  cancel->add_option("id", *id, "The queued operation's id (op-N) or its system's name")->required();
  cancel->callback([ctx, id] {
    pb::CancelQueuedRequest req;
    req.set_id(*id);
    pb::Operation op;
    if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::CancelQueued, req, op)) != kExitOk) return;
    if (ctx.g.format() == Format::kJson)
      std::cout << toJson(op) << "\n";
    else
      std::cout << fmt::format("{} cancelled: {} left the queue\n", op.id(), op.system_id());
  });
}

void addUsage(CLI::App& app, const CommandContext& ctx) {
  auto req = std::make_shared<pb::GetUsageRequest>();
  auto* usage = app.add_subcommand("usage", "GPU-hours by tenant, system or GPU model, from yardd's operation log (showback and chargeback)");
  usage->add_option_function<std::string>("--by", [req](const std::string& v) { req->set_by(v); },
                                          "One row per tenant, system, model or label:KEY (the value of label KEY on the system: "
                                          "--by label:team), or per several: --by tenant,label:team (default: tenant,system,model)")
      ->check(CLI::Validator(
          [](std::string& v) {
            auto grouping = switchyard::UsageGrouping::parse(v);
            return grouping ? std::string() : grouping.error().message;
          },
          "GROUPING"));
  usage->add_option_function<std::string>("--since", [req](const std::string& v) { req->set_since(v); },
                                          "From this time (RFC 3339 UTC or a date: 2026-11-01); default: the start of the log");
  usage->add_option_function<std::string>("--until", [req](const std::string& v) { req->set_until(v); }, "Until this time; default: now");
  usage->callback([ctx, req] {
    pb::UsageResponse r;
    if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::GetUsage, *req, r)) != kExitOk) return;
    const std::vector<std::string> labelKeys = switchyard::UsageGrouping::parse(req->by())->labelKeys;  // checked above
    if (ctx.g.output == "csv") {
      printUsageCsv(r, labelKeys, std::cout);
      return;
    }
    emit(ctx.g, r, [&labelKeys](const pb::UsageResponse& response, std::ostream& out) { printUsage(response, labelKeys, out); });
  });
}

}  // namespace

void addQueueCommands(CLI::App& app, const CommandContext& ctx) {
  addQueue(app, ctx);
  addUsage(app, ctx);
}

}  // namespace yardctl
