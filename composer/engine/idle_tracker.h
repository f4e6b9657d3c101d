// Idle reclaim's memory (issue 40 part 4): what each attached GPU has been doing, from the samples the host
// side reports (HostAgents::activity: nvidia-smi's utilization and compute processes). A GPU is idle in a
// sample when nothing runs on it and its utilization is at most `busyAbovePercent`; it has been idle since
// the first idle sample after a busy one (or after it was first seen), so an idle time is never longer than
// what was observed. Pure bookkeeping on the control thread: the engine samples, decides and publishes.
#pragma once

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
};

class IdleTracker {
 public:
  explicit IdleTracker(int busyAbovePercent = 5, std::size_t historySamples = 60)
      : busyAbovePercent_(busyAbovePercent), historySamples_(historySamples) {}

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
