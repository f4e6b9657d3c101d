// Idle reclaim (issue 40 part 4; ADR 0019). Every EngineOptions::activityInterval the engine asks the host
// side of each composed system what its GPUs are doing (HostAgents::activity: nvidia-smi's utilization and
// compute processes, through yard-agent or the simulated hosts), off the control thread like host
// reconcile. The answers update the IdleTracker; then each system's reclaim policy (its labels, else its
// tenant's, else yardd's) is applied to its whole GPUs idle at least that long:
//  - dry run: a reclaim.would-detach event, once per idle stretch, naming the GPUs and how long they idled;
//  - detach: an ordinary detach whose caller is `yardd (reclaim)`, through the safe path (host-release
//    first: the agent refuses a GPU a process holds, and its hooks hear YARD_DETACH_REASON=reclaim).
// A GPU with a process on it is never idle, whatever its utilization. MIG instances and time-sliced shares
// are shown but not reclaimed: their GPU's activity is the sum of several systems' work.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "composer/engine/engine.h"
#include "composer/engine/engine_control.h"

namespace switchyard {

namespace asio = boost::asio;

namespace {

Caller reclaimCaller() { return {std::string(kReclaimActor), Role::kAdmin, {}}; }

// Why the reclaim policy would not take this GPU of `system` even when idle long enough ("" when it may):
// MIG instances or time-sliced shares on it (several systems' work), or a process running on it.
std::string reclaimBlocked(const System& system, const GpuIdleState& gpu) {
  const auto on = [&](const auto& parts) {
    return std::any_of(parts.begin(), parts.end(), [&](const auto& p) { return p.deviceId == gpu.deviceId; });
  };
  if (on(system.gpuInstances)) return "MIG instances on it";
  if (on(system.gpuShares)) return "shared (time-sliced)";
  if (!gpu.processes.empty()) return fmt::format("pid {} ({}) runs on it", gpu.processes.front().pid, gpu.processes.front().name);
  return "";
}

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

std::vector<Engine::ActivityCheck> Engine::activityChecksOnControl() const {
  std::vector<ActivityCheck> out;
  if (hosts_ == nullptr) return out;
  for (const auto& [id, s] : state_->systems()) {
    if (s.state == SystemState::kQueued || s.hostId.empty() || !s.activeOperation.empty()) continue;
    ActivityCheck check{s.hostId, id, {}};
    for (const auto& b : s.bindings)
      if (const Device* d = state_->index().device(b.deviceId); d != nullptr && d->kind == DeviceKind::kGpu) check.gpus.push_back(b);
    if (check.gpus.empty() || !hosts_->canReportActivity(s.hostId)) continue;
    out.push_back(std::move(check));
  }
  return out;
}

void Engine::recordActivityOnControl(const std::vector<ActivityCheck>& checks, const std::vector<Result<std::vector<GpuActivity>>>& seen,
                                     Mutation& m, std::vector<Operation>& started) {
  const Timestamp now = clock_.now();
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (!seen[i]) {
      spdlog::debug("GPU activity: {}: {}", checks[i].host, seen[i].error().message);
      continue;
    }
    // Only GPUs that are still where the look found them: an operation may have moved them since.
    const System* sys = state_->system(checks[i].system);
    if (sys == nullptr) continue;
    for (const auto& sample : *seen[i]) {
      const auto& bindings = sys->bindings;
      if (std::none_of(bindings.begin(), bindings.end(), [&](const Binding& b) { return b.deviceId == sample.deviceId; })) continue;
      idle_.record(checks[i].system, sample, now);
    }
  }
  // GPUs that left their system since are forgotten; a dry run's notice is per idle stretch.
  idle_.keepOnly([&](const DeviceId& device, const SystemId& system) {
    const System* s = state_->system(system);
    return s != nullptr && std::any_of(s->bindings.begin(), s->bindings.end(), [&](const Binding& b) { return b.deviceId == device; });
  });
  std::erase_if(reclaimAnnounced_, [&](const auto& entry) {
    const GpuIdleState* g = idle_.find(entry.first);
    return g == nullptr || g->idleSince != entry.second;
  });
  activityChanged_ = true;
  recordIdleStretches(m, now);
  reclaimIdle(m, started);
}

// Idle stretches for usage accounting: a stretch is written when it ends (the GPU ran something, or left its
// system) and, while it goes on, at most every kIdleCheckpoint, so that a restart or failover loses at most
// that much of one. A round writes at most kIdleWritesPerRound of them (one store transaction; etcd bounds
// its size): ended ones first, the rest the next round.
void Engine::recordIdleStretches(Mutation& m, Timestamp now) {
  if (replica_) return;  // a standby writes nothing; the leader keeps the stretches
  for (auto it = openStretches_.begin(); it != openStretches_.end();) {
    const GpuIdleState* g = idle_.find(it->first);
    const IdleStretch& s = it->second.stretch;
    if (g != nullptr && g->idle() && g->systemId == s.systemId && g->idleSince == s.from) {
      ++it;
      continue;
    }
    endedStretches_.push_back(s);
    endedStretches_.back().to = now;
    it = openStretches_.erase(it);
  }
  for (const auto& [device, g] : idle_.gpus()) {
    if (!g.idle()) continue;
    auto [it, fresh] = openStretches_.try_emplace(device);
    if (fresh) {  // first written at its first checkpoint, or when it ends: a short stretch costs one write
      const System* s = state_->system(g.systemId);
      it->second.stretch = IdleStretch{device, g.systemId, s ? s->tenant : std::string(), g.idleSince, g.idleSince};
      it->second.writtenAt = g.idleSince;
    }
  }
  std::size_t budget = kIdleWritesPerRound;
  std::size_t written = 0;
  for (; written < endedStretches_.size() && budget > 0; ++written, --budget) m.writes.emplace_back(PutIdleStretch{endedStretches_[written]});
  endedStretches_.erase(endedStretches_.begin(), endedStretches_.begin() + static_cast<std::ptrdiff_t>(written));
  std::vector<OpenStretch*> due;  // the longest since their checkpoint first
  for (auto& [device, open] : openStretches_)
    if (Duration(now - open.writtenAt) >= kIdleCheckpoint) due.push_back(&open);
  std::sort(due.begin(), due.end(), [](const OpenStretch* a, const OpenStretch* b) { return a->writtenAt < b->writtenAt; });
  for (std::size_t i = 0; i < due.size() && budget > 0; ++i, --budget) {
    due[i]->stretch.to = now;
    due[i]->writtenAt = now;
    m.writes.emplace_back(PutIdleStretch{due[i]->stretch});
  }
}

void Engine::writeIdleStretchesAtStop() {
  if (replica_ || writerEpoch_ == 0) return;
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
  std::vector<IdleStretch> out = endedStretches_;
  for (const auto& [device, open] : openStretches_) {
    out.push_back(open.stretch);
    out.back().to = now;
  }
  return out;
}

void Engine::reclaimIdle(Mutation& m, std::vector<Operation>& started) {
  if (replica_ || !accepting_ || halted_) return;
  const Timestamp now = clock_.now();
  struct Due {
    SystemId system;
    ReclaimPolicy policy;
    std::vector<DeviceId> gpus;
    Duration idlest{0};
  };
  std::vector<Due> due;
  for (const auto& [id, s] : state_->systems()) {
    if (s.state != SystemState::kComposed || !s.activeOperation.empty()) continue;
    const ReclaimPolicy policy = reclaimPolicyFor(s);
    if (policy.after.count() <= 0) continue;
    Due d{id, policy, {}, Duration(0)};
    for (const auto& b : s.bindings) {
      const GpuIdleState* g = idle_.find(b.deviceId);
      if (g == nullptr || g->systemId != id || !g->idle() || !reclaimBlocked(s, *g).empty()) continue;
      if (g->idleFor(now) < std::chrono::duration_cast<Duration>(policy.after)) continue;
      if (policy.dryRun && reclaimAnnounced_.contains(b.deviceId)) continue;
      d.gpus.push_back(b.deviceId);
      d.idlest = std::max(d.idlest, g->idleFor(now));
    }
    if (!d.gpus.empty()) due.push_back(std::move(d));
  }
  for (const auto& d : due) {
    const System& s = *state_->system(d.system);
    const std::string name = s.name;
    const std::string gpus = fmt::format("{}", fmt::join(d.gpus, ", "));
    if (d.policy.dryRun) {
      for (const auto& g : d.gpus) reclaimAnnounced_[g] = idle_.find(g)->idleSince;
      m.events.push_back(makeEvent("reclaim.would-detach", d.system,
                                   fmt::format("{} ({}): would detach {} idle GPU(s) ({}; idle up to {} h), reclaim {} (dry run: "
                                               "label {}=detach, or the tenant's reclaim_mode, makes it happen)",
                                               name, d.system, d.gpus.size(), gpus, hours(d.idlest), switchyard::describe(d.policy), kReclaimModeLabel)));
      if (options_.metrics) options_.metrics->reclaimedGpus.add({"dry-run"}, static_cast<double>(d.gpus.size()));
      continue;
    }
    DetachRequest request;
    request.system = d.system;
    request.devices = d.gpus;
    auto op = audited(reclaimCaller(), "detach", d.system, {}, {}, [&](const Acceptance& a) { return acceptDetach(a, request); });
    if (!op) {
      spdlog::warn("reclaim of {} idle GPU(s) of {} ({}) refused: {}", d.gpus.size(), name, d.system, op.error().message);
      continue;
    }
    if (options_.metrics) options_.metrics->reclaimedGpus.add({"detach"}, static_cast<double>(d.gpus.size()));
    m.events.push_back(makeEvent("reclaim.started", d.system,
                                 fmt::format("{} ({}): {} detaches {} GPU(s) idle up to {} h ({}), reclaim {}", name, d.system, op->id,
                                             d.gpus.size(), hours(d.idlest), gpus, switchyard::describe(d.policy)),
                                 std::string(kReclaimActor)));
    started.push_back(*op);
  }
}

Result<std::vector<Operation>> Engine::sampleActivity() {
  SY_ASSIGN(auto checks, onControl([this]() -> Result<std::vector<ActivityCheck>> {
              if (hosts_ == nullptr) return std::vector<ActivityCheck>{};
              return activityChecksOnControl();
            }));
  std::vector<Result<std::vector<GpuActivity>>> seen;
  for (const auto& check : checks) seen.push_back(hosts_->activity(check.host, check.gpus, {options_.hostCallTimeout}));
  return onControl([&]() -> Result<std::vector<Operation>> {
    Mutation m;
    std::vector<Operation> started;
    recordActivityOnControl(checks, seen, m, started);
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
    auto checks = activityChecksOnControl();
    if (checks.empty()) return;
    activityInFlight_ = true;
    ++driverCallsInFlight_;
    driverPool_->post([this, checks = std::move(checks)] {
      std::vector<Result<std::vector<GpuActivity>>> seen;
      for (const auto& check : checks) seen.push_back(hosts_->activity(check.host, check.gpus, {options_.hostCallTimeout}));
      asio::post(*control_, [this, checks, seen = std::move(seen)] {
        CommitPoint sampled{*this};
        --driverCallsInFlight_;
        activityInFlight_ = false;
        if (halted_) return;
        Mutation m;
        std::vector<Operation> started;
        recordActivityOnControl(checks, seen, m, started);
        if (!m.events.empty() || !m.writes.empty())
          if (auto r = persist(m); !r) spdlog::warn("idle reclaim: {}", r.error().message);
      });
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
    if (!includeBusy && (!g.gpu.idle() || g.gpu.idleFor(now) < minIdle)) continue;
    out.push_back(g);
  }
  std::stable_sort(out.begin(), out.end(), [&](const IdleGpu& a, const IdleGpu& b) { return a.gpu.idleFor(now) > b.gpu.idleFor(now); });
  return out;
}

// The view's picture of what attached GPUs do (engine_view.cpp calls it when activityChanged_).
std::shared_ptr<const std::vector<IdleGpu>> Engine::activityForView() const {
  auto out = std::make_shared<std::vector<IdleGpu>>();
  out->reserve(idle_.gpus().size());
  // GPUs of one system come together often enough (attach order): its lookups and policy once per run of them.
  const System* s = nullptr;
  ReclaimPolicy policy;
  for (const auto& [device, g] : idle_.gpus()) {
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
    v.reclaimBlocked = reclaimBlocked(*s, g);
    out->push_back(std::move(v));
  }
  return out;
}

}  // namespace switchyard
