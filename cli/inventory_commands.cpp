// hosts, devices (and `devices release`), systems (and `systems forget`), topology: what is in the pool and who holds it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/list_watch.h"
#include "cli/release_command.h"
#include "composer/model/endpoint_demand.h"  // the kind-name grammar yardd parses too

namespace yardctl {

void addInventoryCommands(CLI::App& app, const CommandContext& ctx) {
  auto watching = std::make_shared<bool>(false);  // -w/--watch: one flag per command, one command runs
  auto* hosts = app.add_subcommand("hosts", "List hosts, their upstream ports and what they serve");
  addWatchFlag(hosts, *watching);
  hosts->callback([ctx, watching] {
    auto list = [ctx] {
      pb::ListHostsResponse r;
      int rc = ctx.allPages(&pb::Switchyard::Stub::ListHosts, pb::ListHostsRequest{}, r);
      if (rc == kExitOk) emit(ctx.g, r, printHosts);
      return rc;
    };
    ctx.rc = *watching ? watchList(ctx, list) : list();
  });

  auto* devices = app.add_subcommand("devices", "List devices with their switch, health and holder (filters combine: every one must match)");
  auto filter = std::make_shared<pb::ListDevicesRequest>();
  devices->add_flag_callback("--free", [filter] { filter->set_free_only(true); }, "Only free devices that are not critical (what a compose could take)");
  devices->add_option_function<std::string>("--model", [filter](const std::string& v) { filter->set_model(v); }, "Only this model (exact name)");
  devices->add_option_function<std::string>("--kind", [filter](const std::string& v) { filter->set_kind(v); },
                                            "Only devices of this kind: gpu, nvme, nic, cxl-memory, or another class by name (fpga)")
      ->check(CLI::Validator([](std::string& v) { return switchyard::parseKindName(v) ? std::string() : std::string(switchyard::kKindNameRule); },
                             "KIND"));
  devices->add_option_function<std::string>("--switch", [filter](const std::string& v) { filter->set_switch_id(v); }, "Only devices under this switch");
  devices->add_option_function<std::string>("--host", [filter](const std::string& v) { filter->set_host_id(v); },
                                            "Only devices counted against this host (in its system, or held for it)");
  devices->add_option_function<std::string>("--system", [filter](const std::string& v) { filter->set_system(v); },
                                            "Only this system's devices (id or name)");
  addWatchFlag(devices, *watching);
  devices->callback([ctx, filter, devices, watching] {
    if (!devices->get_subcommands().empty()) return;  // `devices release` ran instead
    auto list = [ctx, filter] {
      pb::ListDevicesResponse r;
      if (int rc = ctx.allPages(&pb::Switchyard::Stub::ListDevices, *filter, r); rc != kExitOk) return rc;
      if (const auto none = noneMatched("device", "yardctl devices",
                                        {{"--free", filter->free_only() ? "(set)" : ""}, {"--model", filter->model()}, {"--kind", filter->kind()}, {"--switch", filter->switch_id()},
                                         {"--host", filter->host_id()}, {"--system", filter->system()}});
          r.devices().empty() && !none.empty() && ctx.g.format() == Format::kTable)
        std::cout << none << "\n";
      else
        emit(ctx.g, r, printDevices);
      return kExitOk;
    };
    ctx.rc = *watching ? watchList(ctx, list) : list();
  });
  addReleaseCommand(*devices, [ctx](const pb::ReleaseDeviceRequest& req, pb::Device& d) {
    return ctx.client().call(&pb::Switchyard::Stub::ReleaseDevice, req, d);
  }, [ctx] { return ctx.g.format(); }, ctx.rc);

  struct SystemsFlags {
    std::string system, tenant, selector;
  };
  auto f = std::make_shared<SystemsFlags>();
  auto* systems = app.add_subcommand("systems", "List composed systems, or show one");
  systems->add_option("system", f->system, "Show this system (id or name)");
  systems->add_option("--tenant", f->tenant, "Only this tenant's systems");
  systems->add_option("-l,--selector", f->selector,
                      "Only systems whose labels match: team=vision, team!=vision, gpu (has the label), !spot (has not), "
                      "'env in (dev,prod)', 'env notin (dev)'; comma-separated, all must hold");
  addWatchFlag(systems, *watching);
  systems->callback([ctx, f, systems, watching] {
    if (!systems->get_subcommands().empty()) return;  // `systems forget` ran instead
    if (!f->system.empty()) {
      pb::GetSystemRequest req;
      req.set_system(f->system);
      pb::System s;
      if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::GetSystem, req, s)) != kExitOk) return;
      emit(ctx.g, s, printSystem);
      if (ctx.g.format() != Format::kTable) return;
      // What happened to it lately: its newest operations, newest first (`yardctl ops --system NAME` lists more).
      pb::ListOperationsRequest opsReq;
      opsReq.set_system(s.id());
      opsReq.set_limit(5);
      pb::ListOperationsResponse ops;
      if (ctx.client().call(&pb::Switchyard::Stub::ListOperations, opsReq, ops) == kExitOk && !ops.operations().empty()) {
        std::cout << "recent operations (yardctl ops --system " << s.name() << "):\n";
        for (const auto& op : ops.operations())
          std::cout << fmt::format("  {}  {:<10} {:<9} {}{}{}\n", op.updated_at(), kindName(op.kind()), stateName(op.state()), op.id(),
                                   op.requested_by().identity().empty() ? "" : " by " + op.requested_by().identity(),
                                   op.error().empty() ? "" : ": " + op.error());
      }
      // And its newest events, oldest first (`yardctl watch --system NAME --after 0` replays them all).
      pb::ListEventsRequest eventsReq;
      eventsReq.set_system(s.id());
      eventsReq.set_limit(8);
      pb::ListEventsResponse events;
      if (ctx.client().call(&pb::Switchyard::Stub::ListEvents, eventsReq, events) != kExitOk || events.events().empty()) return;
      std::cout << "recent events (yardctl watch --system " << s.name() << " --after 0):\n";
      for (const auto& e : events.events()) std::cout << fmt::format("  {}  {:<22} {}\n", e.at(), e.type(), e.message());
      return;
    }
    auto list = [ctx, f] {
      pb::ListSystemsRequest req;
      req.set_tenant(f->tenant);
      req.set_label_selector(f->selector);
      pb::ListSystemsResponse r;
      if (int rc = ctx.allPages(&pb::Switchyard::Stub::ListSystems, req, r); rc != kExitOk) return rc;
      if (const auto none = noneMatched("system", "yardctl systems", {{"-l", f->selector}, {"--tenant", f->tenant}});
          r.systems().empty() && !none.empty() && ctx.g.format() == Format::kTable)
        std::cout << none << "\n";
      else
        emit(ctx.g, r, printSystems);
      return kExitOk;
    };
    ctx.rc = *watching ? watchList(ctx, list) : list();
  });

  auto forgotten = std::make_shared<std::string>();
  auto* forget = systems->add_subcommand(
      "forget",
      "Drop a system whose devices the fabric no longer reports (admins; audited): it ends as decomposed and nothing is "
      "unbound. For a system left behind when yardd's store was taken over by another fabric (yardd --adopt-fabric) or "
      "whose chassis left the pool for good; a system with a device the fabric still reports is refused: decompose it");
  forget->add_option("system", *forgotten, "The system (id or name)")->required();
  forget->callback([ctx, forgotten] {
    pb::ForgetSystemRequest req;
    req.set_system(*forgotten);
    pb::System s;
    if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::ForgetSystem, req, s)) != kExitOk) return;
    if (ctx.g.format() == Format::kJson)
      std::cout << toJson(s) << "\n";
    else
      std::cout << fmt::format("{} ({}): {}\n", s.name(), s.id(), s.state_reason());
  });

  app.add_subcommand("topology", "Show switches and ports as a tree, with what is bound where")->callback([ctx] {
    pb::Topology t;
    if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::GetTopology, pb::GetTopologyRequest{}, t)) == kExitOk) emit(ctx.g, t, printTopology);
  });
}

}  // namespace yardctl
