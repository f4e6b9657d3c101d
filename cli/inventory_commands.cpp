// hosts, devices (and `devices release`), systems, topology: what is in the pool and who holds it.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/release_command.h"

namespace yardctl {

void addInventoryCommands(CLI::App& app, const CommandContext& ctx) {
  app.add_subcommand("hosts", "List hosts, their upstream ports and what they serve")->callback([ctx] {
    pb::ListHostsResponse r;
    if ((ctx.rc = ctx.allPages(&pb::Switchyard::Stub::ListHosts, pb::ListHostsRequest{}, r)) == kExitOk) emit(ctx.g, r, printHosts);
  });

  auto* devices = app.add_subcommand("devices", "List devices with their switch, health and holder (filters combine: every one must match)");
  auto filter = std::make_shared<pb::ListDevicesRequest>();
  devices->add_flag_callback("--free", [filter] { filter->set_free_only(true); }, "Only free devices that are not critical (what a compose could take)");
  devices->add_option_function<std::string>("--model", [filter](const std::string& v) { filter->set_model(v); }, "Only this model (exact name)");
  devices->add_option_function<std::string>("--switch", [filter](const std::string& v) { filter->set_switch_id(v); }, "Only devices under this switch");
  devices->add_option_function<std::string>("--host", [filter](const std::string& v) { filter->set_host_id(v); },
                                            "Only devices counted against this host (in its system, or held for it)");
  devices->add_option_function<std::string>("--system", [filter](const std::string& v) { filter->set_system(v); },
                                            "Only this system's devices (id or name)");
  devices->callback([ctx, filter, devices] {
    if (!devices->get_subcommands().empty()) return;  // `devices release` ran instead
    pb::ListDevicesResponse r;
    if ((ctx.rc = ctx.allPages(&pb::Switchyard::Stub::ListDevices, *filter, r)) == kExitOk) emit(ctx.g, r, printDevices);
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
                      "Only systems whose labels match: team=vision, team!=vision, gpu (has the label), !spot (has not); "
                      "comma-separated, all must hold");
  systems->callback([ctx, f] {
    if (!f->system.empty()) {
      pb::GetSystemRequest req;
      req.set_system(f->system);
      pb::System s;
      if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::GetSystem, req, s)) == kExitOk) emit(ctx.g, s, printSystem);
      return;
    }
    pb::ListSystemsRequest req;
    req.set_tenant(f->tenant);
    req.set_label_selector(f->selector);
    pb::ListSystemsResponse r;
    if ((ctx.rc = ctx.allPages(&pb::Switchyard::Stub::ListSystems, req, r)) == kExitOk) emit(ctx.g, r, printSystems);
  });

  app.add_subcommand("topology", "Show switches and ports as a tree, with what is bound where")->callback([ctx] {
    pb::Topology t;
    if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::GetTopology, pb::GetTopologyRequest{}, t)) == kExitOk) emit(ctx.g, t, printTopology);
  });
}

}  // namespace yardctl
