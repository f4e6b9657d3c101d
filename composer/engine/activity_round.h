// An idle-reclaim sampling round's types (engine_idle.cpp, ADR 0019): what the control thread hands the round
// (a check per live system with GPUs, as the system is then), what the round hands back (stretch writes, the
// reclaims due, the view's list), and what idle reclaim remembers between rounds (the activity book).
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

struct OpenStretch {
  IdleStretch stretch;
  Timestamp writtenAt = 0;  // its latest checkpoint (its start until the first)
};

// What idle reclaim remembers between rounds. Written by the round's worker, off the control thread, under the
// engine's activityMutex_.
struct ActivityBook {
  ActivityBook(int busyAbovePercent, std::size_t history) : tracker(busyAbovePercent, history) {}
  IdleTracker tracker;                             // what attached GPUs did, as sampled
  // Dry run: the idle stretch (its start) a would-detach named, by GPU or MIG instance (reclaimKey).
  std::map<std::string, Timestamp> reclaimAnnounced;
  std::map<DeviceId, OpenStretch> openStretches;   // idle now, by GPU
  std::vector<IdleStretch> endedStretches;         // ended, waiting for a round's write budget
};

}  // namespace switchyard
