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

// Why the reclaim policy would not take this GPU as a whole even when idle long enough ("" when it may): a
// process running on it (in MIG mode its idle instances may still go, gpu.instances says which).
std::string reclaimBlocked(const GpuIdleState& gpu) {
  if (!gpu.processes.empty()) return fmt::format("pid {} ({}) runs on it", gpu.processes.front().pid, gpu.processes.front().name);
  return "";
}

// What a dry run's notice is remembered by: a GPU, or one MIG instance on it.
std::string reclaimKey(const DeviceId& device) { return device; }
std::string reclaimKey(const DeviceId& device, int start) { return fmt::format("{}@{}", device, start); }

// The system's MIG instances and shares on one GPU.
std::vector<GpuInstance> instancesOn(const System& s, const DeviceId& device) {
  std::vector<GpuInstance> out;
  for (const auto& i : s.gpuInstances)
    if (i.deviceId == device) out.push_back(i);
  std::sort(out.begin(), out.end(), [](const GpuInstance& a, const GpuInstance& b) { return a.start < b.start; });
  return out;
}
int shareMilliOn(const System& s, const DeviceId& device) {
  int milli = 0;
  for (const auto& share : s.gpuShares)
    if (share.deviceId == device) milli += share.milli;
  return milli;
}

std::string describeInstance(const GpuInstance& i) { return fmt::format("MIG {}@{} on {}", toString(i.profile), i.start, i.deviceId); }

std::string hours(Duration d) { return fmt::format("{:.2f}", gpuHours(d)); }

// Idle stretches: how often an open one is written, and how many one store transaction carries (etcd bounds it).
constexpr Duration kIdleCheckpoint = std::chrono::minutes(10);
constexpr std::size_t kIdleWritesPerRound = 1000;

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
  for (const auto& check : round.checks)
    seen.push_back(check.asked ? resultContained("the host activity call",
                                                 [&] { return hosts_->activity(check.host, check.gpus, {options_.hostCallTimeout}); })
                               : Result<std::vector<GpuActivity>>(std::vector<GpuActivity>{}));
  const Timestamp now = clock_.now();
  ActivityOutcome out;
  std::lock_guard lock(activityMutex_);
  IdleTracker& tracker = activity_.tracker;
  // Where each GPU asked about was when the round started: only those are recorded and kept.
  std::unordered_map<std::string_view, const ActivityCheck*> checkOf;
  checkOf.reserve(round.checks.size());
  for (const auto& check : round.checks) checkOf.emplace(check.system, &check);
  for (std::size_t i = 0; i < round.checks.size(); ++i) {
    const ActivityCheck& check = round.checks[i];
    if (!seen[i]) {
      spdlog::debug("GPU activity: {}: {}", check.host, seen[i].error().message);
      continue;
    }
    for (const auto& sample : *seen[i])
      if (std::any_of(check.gpus.begin(), check.gpus.end(), [&](const Binding& b) { return b.deviceId == sample.deviceId; }))
        tracker.record(check.system, sample, now);
  }
  // GPUs that left their system since are forgotten; a dry run's notice is per idle stretch.
  tracker.keepOnly([&](const DeviceId& device, const SystemId& system) {
    auto it = checkOf.find(system);
    return it != checkOf.end() &&
           std::any_of(it->second->gpus.begin(), it->second->gpus.end(), [&](const Binding& b) { return b.deviceId == device; });
  });
  std::erase_if(activity_.reclaimAnnounced, [&](const auto& entry) {
    const auto at = entry.first.rfind('@');
    const GpuIdleState* g = tracker.find(entry.first.substr(0, at));
    if (g == nullptr) return true;
    if (at == std::string::npos) return g->idleSince != entry.second;
    const InstanceIdleState* i = g->instance(std::atoi(entry.first.c_str() + at + 1));
    return i == nullptr || i->idleSince != entry.second;
  });
  if (!standby_.on())
    out.stretchWrites = idleStretchesToWrite(now, [&](const SystemId& system) {
      auto it = checkOf.find(system);
      return it == checkOf.end() ? std::string() : it->second->tenant;
    });

  // The list the view shows, and what the systems' policies say is due.
  auto list = std::make_shared<std::vector<IdleGpu>>();
  list->reserve(tracker.gpus().size());
  std::map<SystemId, std::size_t> dueOf;
  for (const auto& check : round.checks) {
    for (std::size_t k = 0; k < check.gpus.size(); ++k) {
      const GpuIdleState* g = tracker.find(check.gpus[k].deviceId);
      if (g == nullptr || g->systemId != check.system) continue;
      IdleGpu v{*g, check.system, check.name, check.tenant, check.host, check.models[k], check.policy, reclaimBlocked(*g),
                check.instances[k], check.shareMilli[k]};
      const auto dueSince = [&](const std::string& key, Timestamp since) {
        return check.reclaimable && check.policy.after.count() > 0 && since != 0 &&
               Duration(now - since) >= std::chrono::duration_cast<Duration>(check.policy.after) &&
               !(check.policy.dryRun && activity_.reclaimAnnounced.contains(key));
      };
      const auto dueEntry = [&]() -> ActivityOutcome::Reclaim& {
        auto [at, fresh] = dueOf.try_emplace(check.system, out.due.size());
        if (fresh) out.due.push_back({check.system, check.name, check.policy, {}, {}, {}, {}, Duration(0)});
        return out.due[at->second];
      };
      if (g->idle()) {  // the whole GPU, with the system's instances or shares on it
        if (v.reclaimBlocked.empty() && dueSince(reclaimKey(g->deviceId), g->idleSince)) {
          auto& d = dueEntry();
          d.gpus.push_back(g->deviceId);
          d.idlest = std::max(d.idlest, g->idleFor(now));
          d.idleSince.push_back(g->idleSince);
        }
      } else {  // in MIG mode, the instances nothing runs in while a sibling works
        for (const auto& instance : check.instances[k]) {
          const InstanceIdleState* i = g->instance(instance.start);
          if (i == nullptr || !i->idle() || !dueSince(reclaimKey(g->deviceId, instance.start), i->idleSince)) continue;
          auto& d = dueEntry();
          d.instances.push_back(instance);
          d.instanceIdleSince.push_back(i->idleSince);
          d.idlest = std::max(d.idlest, i->idleFor(now));
        }
      }
      list->push_back(std::move(v));
    }
  }
  out.list = std::move(list);
  return out;
}

// Idle stretches for usage accounting: a stretch is written when it ends (the GPU ran something, or left its
// system) and, while it goes on, at most every kIdleCheckpoint, so that a restart or failover loses at most
// that much of one. A round writes at most kIdleWritesPerRound of them (one store transaction; etcd bounds
// its size): ended ones first, the rest the next round.
std::vector<IdleStretch> Engine::idleStretchesToWrite(Timestamp now, const std::function<std::string(const SystemId&)>& tenantOf) {
  std::vector<IdleStretch> writes;
  const IdleTracker& tracker = activity_.tracker;
  auto& open = activity_.openStretches;
  auto& ended = activity_.endedStretches;
  // A GPU in MIG mode idles instance by instance: its stretches are its instances' (keyed GPU@START).
  for (auto it = open.begin(); it != open.end();) {
    const IdleStretch& s = it->second.stretch;
    const auto at = it->first.rfind('@');
    const GpuIdleState* g = tracker.find(it->first.substr(0, at));
    bool goesOn = g != nullptr && g->systemId == s.systemId;
    if (goesOn && at == std::string::npos) {
      goesOn = g->instances.empty() && g->idle() && g->idleSince == s.from;
    } else if (goesOn) {
      const InstanceIdleState* i = g->instance(std::atoi(it->first.c_str() + at + 1));
      goesOn = i != nullptr && i->idle() && i->idleSince == s.from;
    }
    if (goesOn) {
      ++it;
      continue;
    }
    ended.push_back(s);
    ended.back().to = now;
    it = open.erase(it);
  }
  // First written at its first checkpoint, or when it ends: a short stretch costs one write.
  const auto opened = [&](const std::string& key, const GpuIdleState& g, Timestamp since) {
    auto [it, fresh] = open.try_emplace(key);
    if (!fresh) return;
    it->second.stretch = IdleStretch{key, g.systemId, tenantOf(g.systemId), since, since};
    it->second.writtenAt = since;
  };
  for (const auto& [device, g] : tracker.gpus()) {
    if (g.instances.empty() && g.idle()) opened(reclaimKey(device), g, g.idleSince);
    for (const auto& i : g.instances)
      if (i.idle()) opened(reclaimKey(device, i.start), g, i.idleSince);
  }
  std::size_t budget = kIdleWritesPerRound;
  std::size_t written = 0;
  for (; written < ended.size() && budget > 0; ++written, --budget) writes.push_back(ended[written]);
  ended.erase(ended.begin(), ended.begin() + static_cast<std::ptrdiff_t>(written));
  std::vector<OpenStretch*> due;  // the longest since their checkpoint first
  for (auto& [device, stretch] : open)
    if (Duration(now - stretch.writtenAt) >= kIdleCheckpoint) due.push_back(&stretch);
  std::sort(due.begin(), due.end(), [](const OpenStretch* a, const OpenStretch* b) { return a->writtenAt < b->writtenAt; });
  for (std::size_t i = 0; i < due.size() && budget > 0; ++i, --budget) {
    due[i]->stretch.to = now;
    due[i]->writtenAt = now;
    writes.push_back(due[i]->stretch);
  }
  return writes;
}

void Engine::writeIdleStretchesAtStop() {
  if (standby_.on() || writerEpoch_ == 0) return;
  const auto all = unwrittenIdleStretches(clock_.now());
  for (std::size_t at = 0; at < all.size(); at += kIdleWritesPerRound) {
    Mutation m;
    for (std::size_t i = at; i < std::min(all.size(), at + kIdleWritesPerRound); ++i) m.writes.emplace_back(PutIdleStretch{all[i]});
    if (auto r = persist(m); !r) {
      spdlog::warn("idle stretches not written at stop: {}", r.error().message);
      return;
    }
  }
}

std::vector<IdleStretch> Engine::unwrittenIdleStretches(Timestamp now) const {
  std::lock_guard lock(activityMutex_);
  std::vector<IdleStretch> out = activity_.endedStretches;
  for (const auto& [device, open] : activity_.openStretches) {
    out.push_back(open.stretch);
    out.back().to = now;
  }
  return out;
}

void Engine::applyActivity(ActivityOutcome outcome, Mutation& m, std::vector<Operation>& started) {
  for (auto& s : outcome.stretchWrites) m.writes.emplace_back(PutIdleStretch{std::move(s)});
  activityList_ = std::move(outcome.list);
  activityChanged_ = true;
  if (standby_.on() || !accepting_ || halted_) return;
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
      {  // announced once per idle stretch: only what this event names
        std::lock_guard lock(activityMutex_);
        for (std::size_t i = 0; i < d.gpus.size(); ++i) activity_.reclaimAnnounced[reclaimKey(d.gpus[i])] = d.idleSince[i];
        for (std::size_t i = 0; i < d.instances.size(); ++i)
          activity_.reclaimAnnounced[reclaimKey(d.instances[i].deviceId, d.instances[i].start)] = d.instanceIdleSince[i];
      }
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
  if (halted_ || hosts_ == nullptr || options_.activityInterval.count() <= 0) return;
  pollTimer_->activityTimer.expires_after(options_.activityInterval);
  pollTimer_->activityTimer.async_wait([this](const boost::system::error_code& ec) {
    CommitPoint commit{*this};
    if (ec || halted_) return;
    scheduleActivity();
    if (activityInFlight_) return;  // hosts slower than the interval: one look at a time
    auto round = activityRoundOnControl();
    if (!round.asksAny()) return;
    activityInFlight_ = true;
    callOffControl([this, round = std::move(round)]() -> std::function<void()> {
      auto outcome = std::make_shared<ActivityOutcome>(recordActivity(round));
      return [this, outcome] {
        activityInFlight_ = false;
        if (halted_) return;
        Mutation m;
        std::vector<Operation> started;
        applyActivity(std::move(*outcome), m, started);
        if (!m.events.empty() || !m.writes.empty())
          if (auto r = persist(m); !r) spdlog::warn("idle reclaim: {}", r.error().message);
      };
    });
  });
}

Result<std::vector<IdleGpu>> Engine::idleGpus(const Caller& caller, Duration minIdle, bool includeBusy) const {
  SY_ASSIGN(auto view, readableView());
  const Timestamp now = clock_.now();
  std::vector<IdleGpu> out;
  for (const auto& g : *view->activity) {
    if (!maySee(caller, g.tenant)) continue;
    const DeviceView* d = view->device(g.gpu.deviceId);
    if (d == nullptr || d->systemId != g.systemId) continue;  // detached since it was sampled
    const Duration idleFor = g.idleFor(now);  // the GPU's, or its longest idle MIG instance's
    if (!includeBusy && (!g.anyIdle() || idleFor < minIdle)) continue;
    out.push_back(g);
  }
  std::stable_sort(out.begin(), out.end(), [&](const IdleGpu& a, const IdleGpu& b) { return a.idleFor(now) > b.idleFor(now); });
  return out;
}

// The view's picture of what attached GPUs do (engine_view.cpp calls it when activityChanged_).
std::shared_ptr<const std::vector<IdleGpu>> Engine::activityForView() const {
  std::lock_guard lock(activityMutex_);
  auto out = std::make_shared<std::vector<IdleGpu>>();
  out->reserve(activity_.tracker.gpus().size());
  // GPUs of one system come together often enough (attach order): its lookups and policy once per run of them.
  const System* s = nullptr;
  ReclaimPolicy policy;
  for (const auto& [device, g] : activity_.tracker.gpus()) {
    if (s == nullptr || s->id != g.systemId) {
      s = state_->system(g.systemId);
      if (s == nullptr) continue;
      policy = reclaimPolicyFor(*s);
    }
    IdleGpu v;
    v.gpu = g;
    v.systemId = s->id;
    v.systemName = s->name;
    v.tenant = s->tenant;
    v.hostId = s->hostId;
    if (const Device* d = state_->index().device(device)) v.model = d->model;
    v.reclaim = policy;
    v.reclaimBlocked = reclaimBlocked(g);
    v.instances = instancesOn(*s, device);
    v.shareMilli = shareMilliOn(*s, device);
    out->push_back(std::move(v));
  }
  return out;
}

}  // namespace switchyard
