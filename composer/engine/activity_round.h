// An idle-reclaim sampling round's types (engine_idle.cpp, ADR 0019): what the control thread hands the round
// (a check per live system with GPUs, as the system is then) and what the round hands back (stretch writes, the
// reclaims due, the view's list). What idle reclaim remembers between rounds is IdleReclaim's (idle_reclaim.h).
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "composer/engine/idle_tracker.h"
#include "composer/model/composition.h"

namespace switchyard {

struct ActivityCheck {
  HostId host;
  SystemId system;
  std::vector<Binding> gpus;
  std::string name;
  std::string tenant;
  ReclaimPolicy policy;
  bool asked = false;                  // its host is asked this round (no operation runs, the host can report)
  bool reclaimable = false;            // composed with no operation running: reclaim may take its GPUs
  std::vector<std::string> models;                     // per GPU
  std::vector<std::vector<GpuInstance>> instances;     // per GPU: the system's MIG instances on it
  std::vector<int> shareMilli;                         // per GPU: the system's time-sliced shares on it
};

struct ActivityRound {
  std::vector<ActivityCheck> checks;  // every live system with a GPU; what a system not asked did is kept
  [[nodiscard]] bool asksAny() const {
    return std::any_of(checks.begin(), checks.end(), [](const ActivityCheck& c) { return c.asked; });
  }
};

struct ActivityOutcome {
  std::vector<IdleStretch> stretchWrites;
  struct Reclaim {
    SystemId system;
    std::string name;
    ReclaimPolicy policy;
    std::vector<DeviceId> gpus;        // whole GPUs (with any MIG instances or shares of the system on them)
    std::vector<Timestamp> idleSince;  // per GPU: the idle stretch a dry run's notice names
    std::vector<GpuInstance> instances;         // single MIG instances, their GPU staying (a sibling is busy)
    std::vector<Timestamp> instanceIdleSince;   // per instance
    Duration idlest{0};
  };
  std::vector<Reclaim> due;
  std::shared_ptr<const std::vector<IdleGpu>> list;  // for the view
};

}  // namespace switchyard
