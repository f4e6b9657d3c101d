// Idle reclaim (issue 40 part 4; ADR 0019). Every EngineOptions::activityInterval the engine asks the host
// side of each composed system what its GPUs are doing (HostAgents::activity: nvidia-smi's utilization and
// compute processes, through yard-agent or the simulated hosts), off the control thread like host
// reconcile. The answers update the IdleTracker; then each system's reclaim policy (its labels, else its
// tenant's, else yardd's) is applied to its whole GPUs idle at least that long:
//  - dry run: a reclaim.would-detach event, once per idle stretch, naming the GPUs and how long they idled;
//  - detach: an ordinary detach whose caller is `yardd (reclaim)`, through the safe path (host-release
//    first: the agent refuses a GPU a process holds, and its hooks hear YARD_DETACH_REASON=reclaim).
// A GPU with a process on it is never idle, whatever its utilization. A GPU carrying MIG instances or
// time-sliced shares belongs to one system as a whole GPU does (the switch binds whole devices), so its
// activity is that system's: a GPU whose shares all idle is taken back with them; in MIG mode (no utilization
// is read) each instance is idle while nothing runs in it, and idle instances are detached one by one while a
// sibling works (the GPU goes back with its last one).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include <boost/asio/steady_timer.hpp>

#include "composer/engine/engine.h"
#include "composer/engine/engine_control.h"
#include "composer/model/contain.h"

namespace switchyard {

namespace {

Caller reclaimCaller() { return {std::string(kReclaimActor), Role::kAdmin, {}}; }

std::string describeInstance(const GpuInstance& i) { return fmt::format("MIG {}@{} on {}", toString(i.profile), i.start, i.deviceId); }

std::string hours(Duration d) { return fmt::format("{:.2f}", gpuHours(d)); }

}  // namespace

ReclaimPolicy Engine::reclaimPolicyFor(const System& system) const {
  ReclaimPolicy inherited = options_.reclaim;
  if (auto q = options_.quotas.find(system.tenant); q != options_.quotas.end()) {
    if (q->second.reclaimIdleAfter) inherited.after = *q->second.reclaimIdleAfter;
    if (q->second.reclaimDryRun) inherited.dryRun = *q->second.reclaimDryRun;
  }
  auto policy = reclaimPolicyOf(system.labels, inherited);
  return policy ? *policy : inherited;  // labels were checked at compose; one that no longer parses is ignored
}

ActivityRound Engine::activityRoundOnControl() const {
  ActivityRound round;
  if (hosts_ == nullptr) return round;
  for (const auto& [id, s] : state_->systems()) {
    if (s.state == SystemState::kQueued || s.hostId.empty()) continue;
    ActivityCheck check{s.hostId, id, {}, s.name, s.tenant, reclaimPolicyFor(s), false, false, {}, {}, {}};
    for (const auto& b : s.bindings)
      if (const Device* d = state_->index().device(b.deviceId); d != nullptr && d->kind == DeviceKind::kGpu) {
        check.gpus.push_back(b);
        check.models.push_back(d->model);
        check.instances.push_back(instancesOn(s, b.deviceId));
        check.shareMilli.push_back(shareMilliOn(s, b.deviceId));
      }
    if (check.gpus.empty()) continue;
    check.asked = s.activeOperation.empty() && hosts_->canReportActivity(s.hostId);
    check.reclaimable = s.state == SystemState::kComposed && s.activeOperation.empty();
    round.checks.push_back(std::move(check));
  }
  return round;
}

ActivityOutcome Engine::recordActivity(const ActivityRound& round) {
  std::vector<Result<std::vector<GpuActivity>>> seen;
  seen.reserve(round.checks.size());
  for (const auto& check : round.checks) {
    seen.push_back(check.asked ? resultContained("the host activity call",
                                                 [&] { return hosts_->activity(check.host, check.gpus, {options_.hostCallTimeout}); })
                               : Result<std::vector<GpuActivity>>(std::vector<GpuActivity>{}));
    if (!seen.back()) spdlog::debug("GPU activity: {}: {}", check.host, seen.back().error().message);
  }
  return idle_.record(round, seen, clock_.now(), !standby_.on());
}

void Engine::writeIdleStretchesAtStop() {
  if (standby_.on() || writerEpoch_ == 0) return;
  const auto all = idle_.unwritten(clock_.now());
  for (std::size_t at = 0; at < all.size(); at += IdleReclaim::kWritesPerRound) {
    Mutation m;
    for (std::size_t i = at; i < std::min(all.size(), at + IdleReclaim::kWritesPerRound); ++i) m.writes.emplace_back(PutIdleStretch{all[i]});
    if (auto r = persist(m); !r) {
      spdlog::warn("idle stretches not written at stop: {}", r.error().message);
      return;
    }
  }
}

void Engine::applyActivity(ActivityOutcome outcome, Mutation& m, std::vector<Operation>& started) {
  for (auto& s : outcome.stretchWrites) m.writes.emplace_back(PutIdleStretch{std::move(s)});
  idle_.show(std::move(outcome.list));
  if (standby_.on() || !lifecycle_.accepting()) return;
  for (auto& d : outcome.due) {
    // The round saw the system as it was when it started: detach only what is still there as it was.
    const System* s = state_->system(d.system);
    if (s == nullptr || s->state != SystemState::kComposed || !s->activeOperation.empty()) continue;
    for (std::size_t i = d.gpus.size(); i-- > 0;)
      if (std::none_of(s->bindings.begin(), s->bindings.end(), [&](const Binding& b) { return b.deviceId == d.gpus[i]; })) {
        d.gpus.erase(d.gpus.begin() + static_cast<std::ptrdiff_t>(i));
        d.idleSince.erase(d.idleSince.begin() + static_cast<std::ptrdiff_t>(i));
      }
    for (std::size_t i = d.instances.size(); i-- > 0;)
      if (std::find(s->gpuInstances.begin(), s->gpuInstances.end(), d.instances[i]) == s->gpuInstances.end()) {
        d.instances.erase(d.instances.begin() + static_cast<std::ptrdiff_t>(i));
        d.instanceIdleSince.erase(d.instanceIdleSince.begin() + static_cast<std::ptrdiff_t>(i));
      }
    if (d.gpus.empty() && d.instances.empty()) continue;
    // What is taken, as the events name it: GPUs (those carrying MIG instances or shares say so) and single
    // instances. What a GPU is worth: the system's part of it (an instance's memory slices, its shares).
    std::vector<std::string> named;
    double gpuWorth = 0;
    for (const auto& gpu : d.gpus) {
      const auto instances = instancesOn(*s, gpu);
      const int milli = shareMilliOn(*s, gpu);
      if (!instances.empty()) {
        int slices = 0;
        for (const auto& i : instances) slices += memorySlices(i.profile);
        named.push_back(fmt::format("{} with {} MIG instance(s)", gpu, instances.size()));
        gpuWorth += slices / 8.0;
      } else if (milli > 0) {
        named.push_back(fmt::format("{} with its time-sliced share(s) ({:.3g} of it)", gpu, milli / 1000.0));
        gpuWorth += milli / 1000.0;
      } else {
        named.push_back(gpu);
        gpuWorth += 1;
      }
    }
    for (const auto& i : d.instances) {
      named.push_back(describeInstance(i));
      gpuWorth += memorySlices(i.profile) / 8.0;
    }
    const std::string what = d.instances.empty() ? fmt::format("{} GPU(s)", d.gpus.size())
                             : d.gpus.empty()    ? fmt::format("{} MIG instance(s)", d.instances.size())
                                                 : fmt::format("{} GPU(s) and {} MIG instance(s)", d.gpus.size(), d.instances.size());
    const std::string list = fmt::format("{}", fmt::join(named, ", "));
    if (d.policy.dryRun) {
      idle_.announced(d);  // once per idle stretch: only what this event names
      m.events.push_back(makeEvent("reclaim.would-detach", d.system,
                                   fmt::format("{} ({}): would detach {} idle ({}; idle up to {} h), reclaim {} (dry run: "
                                               "label {}=detach, or the tenant's reclaim_mode, makes it happen)",
                                               d.name, d.system, what, list, hours(d.idlest), switchyard::describe(d.policy), kReclaimModeLabel)));
      if (options_.metrics) options_.metrics->reclaimedGpus.add({"dry-run"}, gpuWorth);
      continue;
    }
    DetachRequest request;
    request.system = d.system;
    request.devices = d.gpus;
    for (const auto& i : d.instances) request.gpuInstances.push_back({i.deviceId, i.start});
    auto op = audited(reclaimCaller(), "detach", d.system, {}, {}, [&](const Acceptance& a) { return acceptDetach(a, request); });
    if (!op) {
      spdlog::warn("reclaim of {} idle of {} ({}) refused: {}", what, d.name, d.system, op.error().message);
      continue;
    }
    if (options_.metrics) options_.metrics->reclaimedGpus.add({"detach"}, gpuWorth);
    m.events.push_back(makeEvent("reclaim.started", d.system,
                                 fmt::format("{} ({}): {} detaches {} idle up to {} h ({}), reclaim {}", d.name, d.system, op->id, what,
                                             hours(d.idlest), list, switchyard::describe(d.policy)),
                                 std::string(kReclaimActor)));
    started.push_back(*op);
  }
}

Result<std::vector<Operation>> Engine::sampleActivity() {
  SY_ASSIGN(auto round, onControl([this]() -> Result<ActivityRound> { return activityRoundOnControl(); }));
  if (hosts_ == nullptr) return std::vector<Operation>{};
  auto outcome = recordActivity(round);
  return onControl([&]() -> Result<std::vector<Operation>> {
    Mutation m;
    std::vector<Operation> started;
    applyActivity(std::move(outcome), m, started);
    if (!m.events.empty() || !m.writes.empty()) SY_TRY(persist(m));  // events, reclaims, idle stretches
    return started;
  });
}

void Engine::scheduleActivity() {
  if (lifecycle_.halted() || hosts_ == nullptr || options_.activityInterval.count() <= 0) return;
  pollTimer_->activityTimer.expires_after(options_.activityInterval);
  pollTimer_->activityTimer.async_wait([this](const boost::system::error_code& ec) {
    CommitPoint commit{*this};
    if (ec || lifecycle_.halted()) return;
    scheduleActivity();
    if (idle_.roundOut()) return;  // hosts slower than the interval: one look at a time
    auto round = activityRoundOnControl();
    if (!round.asksAny()) return;
    idle_.beginRound();
    callOffControl([this, round = std::move(round)]() -> std::function<void()> {
      auto outcome = std::make_shared<ActivityOutcome>(recordActivity(round));
      return [this, outcome] {
        idle_.endRound();
        if (lifecycle_.halted()) return;
        Mutation m;
        std::vector<Operation> started;
        applyActivity(std::move(*outcome), m, started);
        if (!m.events.empty() || !m.writes.empty())
          if (auto r = persist(m); !r) spdlog::warn("idle reclaim: {}", r.error().message);
      };
    });
  });
}

}  // namespace switchyard
