// Host-side drift (../shared/design/host-hotplug.md, "Reconcile on the host side"): what each host's side
// sees against what the store says is online there. A device online in a system that its host no longer
// sees, and a pool device a host sees that is in none of its systems, are both drift. Hosts whose system
// has an operation running are skipped (the grace period: an attach or detach is changing exactly this),
// and so are hosts whose side cannot list its devices (a BMC) or does not answer (its status says so).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>

#include "composer/engine/drift_watch.h"
#include "composer/engine/engine.h"
#include "composer/model/contain.h"

namespace switchyard {

std::vector<Engine::HostCheck> Engine::hostChecksOnControl() const {
  std::vector<HostCheck> out;
  if (hosts_ == nullptr) return out;
  for (const auto& h : state_->topology().hosts) {
    if (!hosts_->canList(h.id)) continue;
    HostCheck check{h.id, {}, {}, {}};
    if (const System* s = state_->systemOfHost(h.id)) {
      if (!s->activeOperation.empty()) continue;
      check.system = s->id;
      check.online = s->hostDevices;
      for (const auto& b : s->bindings) check.inSystem.insert(b.deviceId);
    }
    out.push_back(std::move(check));
  }
  return out;
}

Result<std::vector<Drift>> Engine::compareHostsOnControl(const std::vector<HostCheck>& checks,
                                                         const std::vector<Result<std::vector<HostDeviceIdentity>>>& seen,
                                                         std::uint64_t stepResultsBefore) {
  Mutation m;
  DriftRound round = drifts_.round(DriftWatch::Side::kHosts, announceDrift(m));
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const HostCheck& check = checks[i];
    if (!seen[i]) {
      spdlog::debug("host reconcile: {}: {}", check.host, seen[i].error().message);
      continue;
    }
    // An operation that started on the host since the look began owns what it sees; one that answered there since
    // may have changed it before or after the host was listed (an attach that ended, a compose rolled back).
    const System* system = state_->systemOfHost(check.host);
    const SystemId systemNow = system ? system->id : SystemId{};
    if (systemNow != check.system || (system && !system->activeOperation.empty())) continue;
    if (runner_->lastStepResultOn(check.host) > stepResultsBefore) continue;
    std::map<DeviceId, const HostDeviceIdentity*> visible;
    for (const auto& identity : *seen[i]) visible.emplace(identity.deviceId, &identity);
    for (const auto& online : check.online)
      if (!visible.contains(online.deviceId))
        round.report("host-missing-device", online.deviceId,
               fmt::format("{} is online in {} on {} at {}, but the host no longer sees it", online.deviceId, system->name, check.host,
                           online.pciAddress.empty() ? "an unknown address" : online.pciAddress));
    for (const auto& [device, identity] : visible)
      if (!check.inSystem.contains(device))
        round.report("host-unexpected-device", device,
               fmt::format("{} sees {} at {}, which is in none of its systems: release it from the host (yard-agent) or compose it", check.host,
                           device, identity->pciAddress));
  }
  SY_TRY(persist(m));
  if (drifts_.remember(DriftWatch::Side::kHosts, round)) spdlog::info("host reconcile: every host sees what its system holds again");
  return round.drifts();
}

void Engine::reconcileHostsInBackground() {
  hostReconcileRound([](Result<std::vector<Drift>> r) {
    if (!r && r.error().code != Code::kUnavailable) spdlog::warn("host reconcile: {}", r.error().message);
  });
}

void Engine::hostReconcileRound(std::function<void(Result<std::vector<Drift>>)> then) {
  auto checks = hostChecksOnControl();
  if (checks.empty()) return then(std::vector<Drift>{});
  const std::uint64_t before = runner_->stepResults();
  // The hosts are listed as a call like a step's (a waiting call in a stepped engine), off the control thread.
  callOffControl([this, checks = std::move(checks), before, then = std::move(then)]() -> std::function<void()> {
    std::vector<Result<std::vector<HostDeviceIdentity>>> seen;
    for (const auto& check : checks)
      seen.push_back(resultContained("the host listing call", [&] { return hosts_->listPresent(check.host, {options_.hostCallTimeout}); }));
    return [this, checks, before, then, seen = std::move(seen)] {
      if (lifecycle_.halted()) return then(fail(Code::kUnavailable, "yardd has stopped taking work"));
      then(compareHostsOnControl(checks, seen, before));
    };
  });
}

}  // namespace switchyard
