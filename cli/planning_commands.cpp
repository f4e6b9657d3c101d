// plan and capacity: what a request would get, and how many more of each shape fit, without changing anything.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>

#include "cli/commands.h"
#include "cli/gpu_flags.h"

namespace yardctl {
namespace {

void addPlan(CLI::App& app, const CommandContext& ctx) {
  struct Flags {
    GpuFlags gpus;
    bool explain = false;
    std::string priority;
  };
  auto f = std::make_shared<Flags>();
  auto* plan = app.add_subcommand("plan", "Dry run: which host and GPUs a request would get, and why");
  f->gpus.add(plan, true);
  plan->add_flag("--explain", f->explain, "Show every candidate host and why it was chosen or rejected");
  plan->add_option("--priority", f->priority,
                   "Priority class the request would have: when it does not fit and its class preempts (production and batch by "
                   "default), also show which systems preemption would take back for it and the host it would get");
  plan->callback([ctx, f] {
    pb::PlanRequest req;
    *req.mutable_gpus() = f->gpus.toProto();
    if (f->gpus.wantsMemory()) f->gpus.fillMemory(req.mutable_memory());
    f->gpus.fillEndpoints(req.mutable_endpoints());
    req.set_priority_class(f->priority);
    pb::PlanResponse r;
    if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::Plan, req, r)) != kExitOk) return;
    if (ctx.g.format() == Format::kJson)
      std::cout << toJson(r) << "\n";
    else
      printPlan(r, f->explain, std::cout);
    if (!r.fits()) ctx.rc = kExitRefused;
  });
}

void addCapacity(CLI::App& app, const CommandContext& ctx) {
  struct Flags {
    std::vector<int> gpus;
    std::string p2p = "required", model;
    std::vector<std::string> mig{"1g", "2g", "3g", "4g", "7g"};
    std::vector<double> shares{0.1, 0.25, 0.5};
  };
  auto f = std::make_shared<Flags>();
  auto* capacity = app.add_subcommand("capacity", "Usable capacity: how many more requests of each size fit now");
  capacity->add_option("-g,--gpus", f->gpus, "Request sizes (default 1 2 4 8 16)")->check(CLI::PositiveNumber);
  capacity->add_option("--p2p", f->p2p, "required: each request under one switch; preferred; none")
      ->check(CLI::IsMember({"required", "preferred", "none"}))
      ->capture_default_str();
  capacity->add_option("--model", f->model, "Only this GPU model");
  capacity->add_option("--mig", f->mig, "MIG profiles to report (comma list; 'none' for no MIG rows)")
      ->delimiter(',')
      ->check(CLI::IsMember({"1g", "2g", "3g", "4g", "7g", "none"}))
      ->capture_default_str();
  capacity->add_option("--gpu-share", f->shares, "GPU share sizes to report, as fractions (comma list; 0 for no share rows)")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 0.999))
      ->capture_default_str();
  capacity->callback([ctx, f] {
    pb::GetCapacityRequest req;
    for (int n : f->gpus) req.add_gpus(n);
    req.set_peer_to_peer(f->p2p == "none"        ? pb::PEER_TO_PEER_NONE
                         : f->p2p == "preferred" ? pb::PEER_TO_PEER_PREFERRED
                                                 : pb::PEER_TO_PEER_REQUIRED);
    req.set_model(f->model);
    for (const auto& m : f->mig)
      if (m != "none") req.add_mig_profiles(m);
    for (double share : f->shares)
      if (const int milli = static_cast<int>(std::lround(share * 1000)); milli > 0) req.add_share_milli(milli);
    pb::Capacity r;
    if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::GetCapacity, req, r)) == kExitOk) emit(ctx.g, r, printCapacity);
  });
}

void addTemplates(CLI::App& app, const CommandContext& ctx) {
  auto name = std::make_shared<std::string>();
  auto* templates = app.add_subcommand("templates", "The machine templates `compose --template` starts from (yardd --templates)");
  templates->add_option("name", *name, "Show this template only, with every part it sets");
  templates->callback([ctx, name] {
    pb::ListTemplatesResponse r;
    if ((ctx.rc = ctx.client().call(&pb::Switchyard::Stub::ListTemplates, pb::ListTemplatesRequest{}, r)) != kExitOk) return;
    if (!name->empty()) {
      const auto it = std::find_if(r.templates().begin(), r.templates().end(), [&](const pb::MachineTemplate& t) { return t.name() == *name; });
      if (it == r.templates().end()) {
        std::cerr << "error: no machine template '" << *name << "' (`yardctl templates` lists them)\n";
        ctx.rc = kExitRefused;
        return;
      }
      if (ctx.g.format() == Format::kJson) {
        std::cout << toJson(*it) << "\n";
        return;
      }
      std::cout << fmt::format("{}: {}\n  asks for: {}\n", it->name(), it->description().empty() ? "-" : it->description(), it->shape());
      for (const auto& [k, v] : it->labels()) std::cout << fmt::format("  label: {}={}\n", k, v);
      if (!it->priority_class().empty()) std::cout << fmt::format("  priority class: {}\n", it->priority_class());
      if (it->lease_seconds() > 0) std::cout << fmt::format("  lease: {}s\n", it->lease_seconds());
      std::cout << fmt::format("  compose one: yardctl compose NAME --template {}\n", it->name());
      return;
    }
    if (ctx.g.format() == Format::kJson) {
      std::cout << toJson(r) << "\n";
      return;
    }
    if (r.templates().empty()) {
      std::cout << "yardd offers no machine templates (yardd --templates FILE defines them)\n";
      return;
    }
    Table t({"NAME", "ASKS FOR", "CLASS", "DESCRIPTION"});
    for (const auto& m : r.templates()) t.add({m.name(), m.shape(), m.priority_class().empty() ? "-" : m.priority_class(), m.description()});
    t.print(std::cout);
  });
}

}  // namespace

void addPlanningCommands(CLI::App& app, const CommandContext& ctx) {
  addPlan(app, ctx);
  addCapacity(app, ctx);
  addTemplates(app, ctx);
}

}  // namespace yardctl
