// Start-up and drift: rebuild the in-memory pool from the store, merge what the fabric reports, and
// compare the store's bindings with the switch's. Policies (docs/architecture.md, "Restart"):
//  - bound in the store, not in the fabric  -> system degraded, devices stay in it, event;
//  - bound to another port than recorded    -> system degraded, event;
//  - bound in the fabric, unknown to us     -> device quarantined (never handed out), event;
//  - quarantined, and unbound in the fabric -> back in the pool, event.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <set>
#include <unordered_map>

#include "composer/engine/drift_watch.h"
#include "composer/engine/fabric_comparison.h"
#include "composer/engine/engine.h"

namespace switchyard {

namespace {

std::string describeSwitches(const Topology& t) {
  std::vector<std::string> names;
  for (const auto& sw : t.switches) {
    if (names.size() == 4) {
      names.push_back(fmt::format("and {} more", t.switches.size() - 4));
      break;
    }
    names.push_back(sw.model.empty() ? sw.id : fmt::format("{} ({})", sw.id, sw.model));
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

// A store belongs to the fabric that made it: its inventory records that fabric's switches. A fabric that
// reports none of them is another fabric (a state directory reused across drivers, issue 63): the store's systems
// name devices it does not have, and no decompose could release them.
// Answers whether the store was adopted from another fabric.
Result<bool> checkSameFabric(const Topology& stored, const Topology& discovered, std::string_view driver, std::size_t systems, bool adopt) {
  if (stored.switches.empty() || discovered.switches.empty()) return false;
  std::set<SwitchId> before;
  for (const auto& sw : stored.switches) before.insert(sw.id);
  for (const auto& sw : discovered.switches)
    if (before.contains(sw.id)) return false;
  if (adopt) {
    spdlog::warn("the store was made by another fabric (switches {}); adopting this {} fabric (switches {}) as --adopt-fabric asks: {} system(s) "
                 "on devices it lacks stay degraded until `yardctl systems forget` removes them",
                 describeSwitches(stored), driver, describeSwitches(discovered), systems);
    return true;
  }
  return fail(Code::kFailedPrecondition,
              fmt::format("this store was made by another fabric: it records switches {}, and the {} fabric reports {}, none of them the "
                          "same; its {} system(s) would name devices this fabric does not have. Give this fabric its own state "
                          "(--state-dir DIR, or --db FILE), or start with --adopt-fabric to take this store over (its systems on missing "
                          "devices stay degraded until `yardctl systems forget NAME` removes them)",
                          describeSwitches(stored), driver, describeSwitches(discovered), systems));
}

}  // namespace

Result<void> Engine::loadState() {
  // Fence out whichever yardd wrote before this one, then read what it left.
  SY_ASSIGN(writerEpoch_, store_.claimWriter());
  SY_ASSIGN(StoreSnapshot snapshot, store_.load());
  SY_ASSIGN(Topology discovered, driver_.discover());
  SY_TRY(validateTopology(discovered));
  bool adopted = false;
  if (snapshot.inventory) {
    SY_ASSIGN(adopted, checkSameFabric(*snapshot.inventory, discovered, driver_.name(), snapshot.systems.size(), options_.adoptFabric));
  }
  if (hosts_) hosts_->inventoryDiscovered(discovered);  // before recovery runs a host step
  events_.continueAfter(snapshot.lastEventSequence);
  numbers_.continueAfter(snapshot);

  Mutation m;
  std::set<DeviceId> removed;
  if (!snapshot.inventory) {
    m.events.push_back(makeEvent("inventory.discovered", std::string(driver_.name()),
                                 fmt::format("{} fabric: {} switch(es), {} host(s), {} device(s)", driver_.name(),
                                             discovered.switches.size(), discovered.hosts.size(), discovered.devices.size())));
  } else {
    if (adopted)
      m.events.push_back(makeEvent("inventory.fabric-adopted", std::string(driver_.name()),
                                   fmt::format("the store, made by a fabric of switches {}, was taken over by this {} fabric (switches {}; --adopt-fabric)",
                                               describeSwitches(*snapshot.inventory), driver_.name(), describeSwitches(discovered))));
    std::set<DeviceId> before, after;
    for (const auto& d : snapshot.inventory->devices) before.insert(d.id);
    for (const auto& d : discovered.devices) after.insert(d.id);
    for (const auto& d : after)
      if (!before.contains(d)) m.events.push_back(makeEvent("inventory.device-added", d, fmt::format("{} appeared in the fabric", d)));
    for (const auto& d : before)
      if (!after.contains(d)) {
        removed.insert(d);
        m.events.push_back(makeEvent("inventory.device-removed", d, fmt::format("{} is no longer reported by the fabric", d)));
      }
  }
  m.writes.emplace_back(PutInventory{discovered});
  state_ = std::make_unique<PoolState>(std::move(discovered));
  state_->replayDemand(snapshot.recentDemand);  // the mix as it was learned before the restart

  std::unordered_map<std::string, HostId> hostOfOwner;
  for (auto& s : snapshot.systems) {
    hostOfOwner[s.id] = s.hostId;
    const bool lostDevice = std::any_of(s.bindings.begin(), s.bindings.end(), [&](const Binding& b) { return removed.contains(b.deviceId); });
    if (lostDevice && s.state == SystemState::kComposed) {
      s.state = SystemState::kDegraded;
      s.stateReason = "a device of it is no longer reported by the fabric";
      m.writes.emplace_back(PutSystem{s});
      m.events.push_back(makeEvent("system.degraded", s.id, fmt::format("{} lost a device that the fabric no longer reports", s.name)));
    }
    for (const auto& share : s.gpuShares) shareDemand_.observe(share.milli);  // the live shares seed the share mix
    state_->putSystem(s);
  }
  for (auto& op : snapshot.unfinishedOperations) {
    for (std::size_t i = 0; i < op.steps.size(); ++i)
      if (!steps_->find(op.steps[i].kind))
        return fail(Code::kFailedPrecondition,
                    fmt::format("{} step {} has kind '{}', which this yardd does not know (known: {}); was the log written by a newer yardd?",
                                op.id, i + 1, op.steps[i].kind, fmt::join(steps_->names(), ", ")));
    hostOfOwner[op.id] = op.hostId;
    if (op.state == OperationState::kQueued) queue_.add(std::move(op));  // waits again; nothing of it ran
    else runner_->adopt(std::move(op));
  }
  for (const auto& a : snapshot.assignments) {
    if (removed.contains(a.deviceId)) {
      m.writes.emplace_back(PutAssignment{{a.deviceId, DeviceAllocation::kFree, {}}});
      continue;
    }
    auto host = hostOfOwner.find(a.owner);
    state_->assign(a, host == hostOfOwner.end() ? HostId{} : host->second);
  }
  SY_TRY(persist(m));
  spdlog::info("loaded {} system(s), {} unfinished operation(s), {} queued request(s), {} held device(s)", state_->systems().size(),
               runner_->running().size(), queue_.size(), state_->assignments().size());
  return {};
}

Result<std::vector<Drift>> Engine::reconcileOnControl(const std::vector<Binding>& fabricBindings) {
  FabricComparison found = compareWithFabric(*state_, fabricBindings, clock_.now());
  Mutation m;
  DriftRound round = drifts_.round(DriftWatch::Side::kFabric, announceDrift(m));
  for (auto& d : found.drifts) round.report(std::move(d.kind), d.deviceId, std::move(d.message));
  for (const auto& [s, stateChanged] : found.systems) {
    state_->putSystem(s);
    m.writes.emplace_back(PutSystem{s});
    if (!stateChanged) continue;
    const bool degraded = s.state == SystemState::kDegraded;
    m.events.push_back(makeEvent(degraded ? "system.degraded" : "system.recovered", s.id,
                                 degraded ? fmt::format("{} ({}) is degraded: {}", s.name, s.id, s.stateReason)
                                          : fmt::format("{} ({}) is {}: the fabric has every device of it where it should be", s.name, s.id,
                                                        toString(s.state))));
  }
  for (const auto& q : found.quarantine) {
    state_->assign(q, {});
    m.writes.emplace_back(PutAssignment{q});
  }
  for (const auto& device : found.freed) {
    state_->assign({device, DeviceAllocation::kFree, {}}, {});
    m.writes.emplace_back(PutAssignment{{device, DeviceAllocation::kFree, {}}});
    m.events.push_back(makeEvent("drift.resolved", device, fmt::format("{} is unbound in the fabric; back in the pool", device)));
    queue_.markDirty();
  }
  SY_TRY(persist(m));
  if (drifts_.remember(DriftWatch::Side::kFabric, round)) spdlog::info("reconcile: store and fabric agree again ({} binding(s))", fabricBindings.size());
  return round.drifts();
}

DriftRound::Announce Engine::announceDrift(Mutation& m) {
  return [this, &m](const Drift& d) {
    spdlog::warn("drift: {}: {}", d.kind, d.message);
    if (options_.metrics) options_.metrics->drifts.add({d.kind});
    m.events.push_back(makeEvent("drift." + d.kind, d.deviceId, d.message));
  };
}

void Engine::applyFabricEvents(const Result<std::vector<FabricEvent>>& events) {
  Mutation m;
  // A feed that cannot be read is recorded once when it goes and once when it comes back; health changes
  // meanwhile arrive with the first successful poll (the driver keeps them).
  const DriftWatch::Feed feed = drifts_.feedRead(events ? std::string{} : events.error().message);
  if (feed == DriftWatch::Feed::kLost) {
    spdlog::warn("cannot read the switch's events: {}; device health may be stale until it answers", drifts_.feedFailure());
    m.events.push_back(makeEvent("fabric.events-unavailable", std::string(driver_.name()),
                                 fmt::format("cannot read the switch's events: {}; device health may be stale", drifts_.feedFailure())));
  } else if (feed == DriftWatch::Feed::kBack) {
    spdlog::info("the switch's events can be read again");
    m.events.push_back(makeEvent("fabric.events-restored", std::string(driver_.name()), "the switch's events can be read again"));
  }
  for (const auto& e : events ? *events : std::vector<FabricEvent>{}) {
    if (e.type == "device.health") {
      state_->setHealth(e.subject, e.health);
      queue_.markDirty();  // a device back to health may be what a queued request waits for
    }
    m.events.push_back(makeEvent("fabric." + e.type, e.subject, e.message));
  }
  if (m.events.empty()) return;
  if (auto r = persist(m); !r) spdlog::error("cannot record fabric events: {}", r.error().message);
}

}  // namespace switchyard
