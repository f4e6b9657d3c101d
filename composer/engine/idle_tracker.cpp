#include "composer/engine/idle_tracker.h"

#include <fmt/format.h>

#include <algorithm>

#include "composer/model/queue.h"

namespace switchyard {

std::string describe(const ReclaimPolicy& policy) {
  if (policy.after.count() <= 0) return "off";
  return fmt::format("after {} idle{}", formatDuration(policy.after), policy.dryRun ? " (dry run)" : "");
}

Result<ReclaimPolicy> reclaimPolicyOf(const std::map<std::string, std::string>& labels, ReclaimPolicy inherited) {
  ReclaimPolicy out = inherited;
  if (auto it = labels.find(std::string(kReclaimAfterLabel)); it != labels.end()) {
    if (it->second == "never" || it->second == "off") {
      out.after = std::chrono::milliseconds(0);
    } else {
      auto after = parseDuration(it->second);
      if (!after || after->count() < 60'000)
        return fail(Code::kInvalidArgument,
                    fmt::format("label {}={}: a duration of at least 1m (such as 30m, 2h), or never", kReclaimAfterLabel, it->second));
      out.after = *after;
    }
  }
  if (auto it = labels.find(std::string(kReclaimModeLabel)); it != labels.end()) {
    if (it->second != "dry-run" && it->second != "detach")
      return fail(Code::kInvalidArgument, fmt::format("label {}={}: dry-run or detach", kReclaimModeLabel, it->second));
    out.dryRun = it->second == "dry-run";
  }
  return out;
}

bool IdleTracker::record(const SystemId& system, const GpuActivity& sample, Timestamp at) {
  auto [it, fresh] = gpus_.try_emplace(sample.deviceId);
  GpuIdleState& s = it->second;
  if (!fresh && s.systemId != system) {  // attached again elsewhere: what it did before is not this system's
    s = GpuIdleState{};
    fresh = true;
  }
  if (fresh) {
    s.deviceId = sample.deviceId;
    s.systemId = system;
    s.firstSampleAt = at;
  }
  const bool wasIdle = s.idle();
  const bool idle = idleIn(sample);
  s.sampledAt = at;
  s.utilizationPercent = sample.utilizationPercent;
  s.memoryUsedMiB = sample.memoryUsedMiB;
  s.processes = sample.processes;
  if (!idle) s.idleSince = 0;
  else if (!wasIdle) s.idleSince = at;
  std::vector<InstanceIdleState> instances;
  instances.reserve(sample.instances.size());
  for (const auto& i : sample.instances) {
    auto before = std::find_if(s.instances.begin(), s.instances.end(), [&](const InstanceIdleState& b) { return b.start == i.start; });
    InstanceIdleState now{i.start, i.processes, 0};
    if (i.processes.empty()) now.idleSince = before != s.instances.end() && before->idle() ? before->idleSince : at;
    instances.push_back(std::move(now));
  }
  s.instances = std::move(instances);
  s.history.push_back({at, sample.utilizationPercent, idle});
  if (s.history.size() > historySamples_) s.history.erase(s.history.begin(), s.history.end() - static_cast<std::ptrdiff_t>(historySamples_));
  return fresh || wasIdle != idle;
}

Duration IdleGpu::idleFor(Timestamp now) const {
  Duration longest = gpu.idleFor(now);
  for (const auto& i : instances)
    if (const InstanceIdleState* s = instanceState(i.start)) longest = std::max(longest, s->idleFor(now));
  return longest;
}

double IdleGpu::idleGpuHours(Timestamp now) const {
  if (gpu.idle()) return gpu.idleGpuHours(now);
  double hours = 0;
  for (const auto& i : instances) hours += instanceIdleGpuHours(i, now);
  return hours;
}

const GpuIdleState* IdleTracker::find(const DeviceId& device) const {
  auto it = gpus_.find(device);
  return it == gpus_.end() ? nullptr : &it->second;
}

}  // namespace switchyard
