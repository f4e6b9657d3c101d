// Idle reclaim's memory: recording a round, working out what is due, the idle stretches, the view's list
// (idle_reclaim.h). How a GPU counts as idle is IdleTracker's; what happens to what is due is the engine's
// (engine_idle.cpp).
#include "composer/engine/idle_reclaim.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include "composer/engine/pool_state.h"

namespace switchyard {

namespace {

// Why the reclaim policy would not take this GPU as a whole even when idle long enough ("" when it may): a
// process running on it (in MIG mode its idle instances may still go, gpu.instances says which).
std::string reclaimBlocked(const GpuIdleState& gpu) {
  if (!gpu.processes.empty()) return fmt::format("pid {} ({}) runs on it", gpu.processes.front().pid, gpu.processes.front().name);
  return "";
}

// What a dry run's notice and an idle stretch are remembered by: a GPU, or one MIG instance on it.
std::string reclaimKey(const DeviceId& device) { return device; }
std::string reclaimKey(const DeviceId& device, int start) { return fmt::format("{}@{}", device, start); }

}  // namespace

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

ActivityOutcome IdleReclaim::record(const ActivityRound& round, const std::vector<Result<std::vector<GpuActivity>>>& seen, Timestamp now,
                                    bool writeStretches) {
  ActivityOutcome out;
  std::lock_guard lock(mutex_);
  IdleTracker& tracker = book_.tracker;
  // Where each GPU asked about was when the round started: only those are recorded and kept.
  std::unordered_map<std::string_view, const ActivityCheck*> checkOf;
  checkOf.reserve(round.checks.size());
  for (const auto& check : round.checks) checkOf.emplace(check.system, &check);
  for (std::size_t i = 0; i < round.checks.size() && i < seen.size(); ++i) {
    const ActivityCheck& check = round.checks[i];
    if (!seen[i]) continue;  // that host could not tell: what its GPUs did before is kept
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
  std::erase_if(book_.announced, [&](const auto& entry) {
    const auto at = entry.first.rfind('@');
    const GpuIdleState* g = tracker.find(entry.first.substr(0, at));
    if (g == nullptr) return true;
    if (at == std::string::npos) return g->idleSince != entry.second;
    const InstanceIdleState* i = g->instance(std::atoi(entry.first.c_str() + at + 1));
    return i == nullptr || i->idleSince != entry.second;
  });
  if (writeStretches)
    out.stretchWrites = stretchesToWrite(now, [&](const SystemId& system) {
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
               !(check.policy.dryRun && book_.announced.contains(key));
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

void IdleReclaim::announced(const ActivityOutcome::Reclaim& due) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < due.gpus.size() && i < due.idleSince.size(); ++i) book_.announced[reclaimKey(due.gpus[i])] = due.idleSince[i];
  for (std::size_t i = 0; i < due.instances.size() && i < due.instanceIdleSince.size(); ++i)
    book_.announced[reclaimKey(due.instances[i].deviceId, due.instances[i].start)] = due.instanceIdleSince[i];
}

// Idle stretches for usage accounting: a stretch is written when it ends (the GPU ran something, or left its
// system) and, while it goes on, at most every kCheckpoint, so that a restart or failover loses at most that much
// of one. A round writes at most kWritesPerRound of them: ended ones first, the rest the next round.
std::vector<IdleStretch> IdleReclaim::stretchesToWrite(Timestamp now, const std::function<std::string(const SystemId&)>& tenantOf) {
  std::vector<IdleStretch> writes;
  const IdleTracker& tracker = book_.tracker;
  auto& open = book_.openStretches;
  auto& ended = book_.endedStretches;
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
  std::size_t budget = kWritesPerRound;
  std::size_t written = 0;
  for (; written < ended.size() && budget > 0; ++written, --budget) writes.push_back(ended[written]);
  ended.erase(ended.begin(), ended.begin() + static_cast<std::ptrdiff_t>(written));
  std::vector<OpenStretch*> due;  // the longest since their checkpoint first
  for (auto& [key, stretch] : open)
    if (Duration(now - stretch.writtenAt) >= kCheckpoint) due.push_back(&stretch);
  std::sort(due.begin(), due.end(), [](const OpenStretch* a, const OpenStretch* b) { return a->writtenAt < b->writtenAt; });
  for (std::size_t i = 0; i < due.size() && budget > 0; ++i, --budget) {
    due[i]->stretch.to = now;
    due[i]->writtenAt = now;
    writes.push_back(due[i]->stretch);
  }
  return writes;
}

std::vector<IdleStretch> IdleReclaim::unwritten(Timestamp now) const {
  std::lock_guard lock(mutex_);
  std::vector<IdleStretch> out = book_.endedStretches;
  for (const auto& [key, open] : book_.openStretches) {
    out.push_back(open.stretch);
    out.back().to = now;
  }
  return out;
}

void IdleReclaim::show(std::shared_ptr<const std::vector<IdleGpu>> list) {
  list_ = std::move(list);
  changed_ = true;
}

void IdleReclaim::policiesChanged() {
  list_ = nullptr;
  changed_ = true;
}

std::shared_ptr<const std::vector<IdleGpu>> IdleReclaim::forView(const PoolState& state, const PolicyOf& policyOf) {
  if (!list_) list_ = build(state, policyOf);
  changed_ = false;
  return list_;
}

std::shared_ptr<const std::vector<IdleGpu>> IdleReclaim::current(const PoolState& state, const PolicyOf& policyOf) const {
  return list_ ? list_ : build(state, policyOf);
}

// The list from the record and the systems as they are now (after new policies; a round builds its own).
std::shared_ptr<const std::vector<IdleGpu>> IdleReclaim::build(const PoolState& state, const PolicyOf& policyOf) const {
  std::lock_guard lock(mutex_);
  auto out = std::make_shared<std::vector<IdleGpu>>();
  out->reserve(book_.tracker.gpus().size());
  // GPUs of one system come together often enough (attach order): its lookups and policy once per run of them.
  const System* s = nullptr;
  ReclaimPolicy policy;
  for (const auto& [device, g] : book_.tracker.gpus()) {
    if (s == nullptr || s->id != g.systemId) {
      auto it = state.systems().find(g.systemId);
      s = it == state.systems().end() ? nullptr : &it->second;
      if (s == nullptr) continue;
      policy = policyOf(*s);
    }
    IdleGpu v;
    v.gpu = g;
    v.systemId = s->id;
    v.systemName = s->name;
    v.tenant = s->tenant;
    v.hostId = s->hostId;
    if (const Device* d = state.index().device(device)) v.model = d->model;
    v.reclaim = policy;
    v.reclaimBlocked = reclaimBlocked(g);
    v.instances = instancesOn(*s, device);
    v.shareMilli = shareMilliOn(*s, device);
    out->push_back(std::move(v));
  }
  return out;
}

}  // namespace switchyard
