// Idle reclaim's memory (issue 40 part 4): what each attached GPU has been doing, from the samples the host
// side reports (HostAgents::activity: nvidia-smi's utilization and compute processes). A GPU is idle in a
// sample when nothing runs on it and its utilization is at most `busyAbovePercent`; it has been idle since
// the first idle sample after a busy one (or after it was first seen), so an idle time is never longer than
// what was observed. Pure bookkeeping on the control thread: the engine samples, decides and publishes.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/clock.h"
#include "composer/model/composition.h"
#include "agent/host_agents.h"

namespace switchyard {

// When idle GPUs of a system are taken back: after `after` idle (0: never), by detaching them (dryRun
// false) or only by saying so in a reclaim.would-detach event (dryRun true: the default, to try a policy).
struct ReclaimPolicy {
  std::chrono::milliseconds after{0};
  bool dryRun = true;
  friend bool operator==(const ReclaimPolicy&, const ReclaimPolicy&) = default;
};

// "off", "30m dry-run", "2h".
[[nodiscard]] std::string describe(const ReclaimPolicy& policy);

// The labels a system's owner sets at compose to choose its own policy (over the tenant's and yardd's).
inline constexpr std::string_view kReclaimAfterLabel = "reclaim-idle-after";  // a duration, or "never"
inline constexpr std::string_view kReclaimModeLabel = "reclaim-mode";         // "dry-run" or "detach"

// The system's policy: its labels over `inherited`; an error names a label that does not parse.
[[nodiscard]] Result<ReclaimPolicy> reclaimPolicyOf(const std::map<std::string, std::string>& labels, ReclaimPolicy inherited);

// A duration of one GPU's time, in GPU-hours.
[[nodiscard]] inline double gpuHours(Duration d) { return std::chrono::duration<double, std::ratio<3600>>(d).count(); }

struct UtilizationSample {
  Timestamp at = 0;
  int utilizationPercent = 0;
  bool idle = false;
  friend bool operator==(const UtilizationSample&, const UtilizationSample&) = default;
};

// A MIG GPU instance of an attached GPU (the driver reads no utilization in MIG mode: idle is nothing running
// in it), since when it has been idle.
struct InstanceIdleState {
  int start = 0;  // placement start, as GpuInstance names it
  std::vector<GpuProcess> processes;
  Timestamp idleSince = 0;  // 0: busy at the latest sample
  [[nodiscard]] bool idle() const { return idleSince != 0; }
  [[nodiscard]] Duration idleFor(Timestamp now) const { return Duration(idleSince == 0 ? 0 : now - idleSince); }
  friend bool operator==(const InstanceIdleState&, const InstanceIdleState&) = default;
};

struct GpuIdleState {
  DeviceId deviceId;
  SystemId systemId;  // the system it was attached to when sampled; a new system starts a new record
  Timestamp firstSampleAt = 0;
  Timestamp sampledAt = 0;  // the latest sample
  int utilizationPercent = 0;
  std::uint64_t memoryUsedMiB = 0;
  std::vector<GpuProcess> processes;
  Timestamp idleSince = 0;  // 0: busy at the latest sample
  std::vector<UtilizationSample> history;  // the latest samples, oldest first
  std::vector<InstanceIdleState> instances;  // in MIG mode: its GPU instances, by start (the GPU is idle when all are)
  // One of `instances` (nullptr: not sampled).
  [[nodiscard]] const InstanceIdleState* instance(int start) const {
    auto it = std::find_if(instances.begin(), instances.end(), [&](const InstanceIdleState& i) { return i.start == start; });
    return it == instances.end() ? nullptr : &*it;
  }
  [[nodiscard]] bool idle() const { return idleSince != 0; }
  [[nodiscard]] Duration idleFor(Timestamp now) const { return Duration(idleSince == 0 ? 0 : now - idleSince); }
  // What the idle stretch has cost so far, in GPU-hours (yardctl idle, the dashboard, the gauges).
  [[nodiscard]] double idleGpuHours(Timestamp now) const { return gpuHours(idleFor(now)); }
  friend bool operator==(const GpuIdleState&, const GpuIdleState&) = default;
};

// An attached GPU as `yardctl idle` shows it: what it did, whose it is, and when its policy takes it back.
struct IdleGpu {
  GpuIdleState gpu;
  SystemId systemId;
  std::string systemName;
  std::string tenant;
  HostId hostId;
  std::string model;
  ReclaimPolicy reclaim;
  std::string reclaimBlocked;  // why the policy does not take it even when idle long enough ("" when it may)
  std::vector<GpuInstance> instances;  // the system's MIG instances on it (profiles; gpu.instances says what they do)
  int shareMilli = 0;                  // the system's time-sliced shares on it, in thousandths (0: none)

  // What it did of one of `instances` (nullptr: not sampled yet).
  [[nodiscard]] const InstanceIdleState* instanceState(int start) const { return gpu.instance(start); }
  // What one of `instances` has cost idling so far, by its part of the GPU (memory slices of 8).
  [[nodiscard]] double instanceIdleGpuHours(const GpuInstance& i, Timestamp now) const {
    const InstanceIdleState* s = instanceState(i.start);
    return s == nullptr ? 0.0 : gpuHours(s->idleFor(now)) * memorySlices(i.profile) / 8.0;
  }
  // Idle as a whole, or (MIG) some instance idle.
  [[nodiscard]] bool anyIdle() const {
    return gpu.idle() || std::any_of(gpu.instances.begin(), gpu.instances.end(), [](const InstanceIdleState& i) { return i.idle(); });
  }
  // How long: the longest of those stretches.
  [[nodiscard]] Duration idleFor(Timestamp now) const;
  // What idling has cost so far: the whole GPU's idle stretch, or (MIG, a sibling busy) each idle instance's by
  // its part of the GPU (memory slices of 8).
  [[nodiscard]] double idleGpuHours(Timestamp now) const;
};

class IdleTracker {
 public:
  explicit IdleTracker(int busyAbovePercent = 5, std::size_t historySamples = 60)
      : busyAbovePercent_(busyAbovePercent), historySamples_(historySamples) {}

  // In MIG mode utilization is not read (0): nothing running is idle.
  [[nodiscard]] bool idleIn(const GpuActivity& sample) const {
    return sample.processes.empty() && sample.utilizationPercent <= busyAbovePercent_;
  }
  // A sample of a GPU attached to `system`, taken at `at`. Returns whether the GPU turned idle or busy.
  bool record(const SystemId& system, const GpuActivity& sample, Timestamp at);
  // Forgets GPUs that are no longer attached where they were (`stillIn(device, system)` false).
  template <typename StillIn>
  bool keepOnly(StillIn&& stillIn) {
    return std::erase_if(gpus_, [&](const auto& entry) { return !stillIn(entry.first, entry.second.systemId); }) > 0;
  }
  [[nodiscard]] const GpuIdleState* find(const DeviceId& device) const;
  [[nodiscard]] const std::map<DeviceId, GpuIdleState>& gpus() const { return gpus_; }
  [[nodiscard]] int busyAbovePercent() const { return busyAbovePercent_; }

 private:
  int busyAbovePercent_;
  std::size_t historySamples_;
  std::map<DeviceId, GpuIdleState> gpus_;
};

}  // namespace switchyard
