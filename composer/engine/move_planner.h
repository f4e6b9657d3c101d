// Defragmentation's planner (ADR 0033): the fewest idle GPUs of systems that allow moves (label movable=true) to
// move elsewhere for a request to fit. Pure: it reads the pool, the live systems and the last activity samples and
// changes nothing; the engine starts what it chooses (engine_defrag.cpp) and `yardctl plan` shows it.
#pragma once

#include <optional>
#include <vector>

#include "composer/engine/defragmentation.h"
#include "composer/engine/idle_tracker.h"
#include "composer/engine/pool_state.h"
#include "composer/packing/composable_model.h"
#include "composer/packing/packing.h"

namespace switchyard {

// GPUs moved for one request at most: past that, the head waits for what leases and preemption give it.
inline constexpr std::size_t kMostMovedGpus = 8;

struct MoveChoice {
  std::vector<SystemMove> moves;  // grouped by system, each at Stage::kAttaching with no operation yet
  Placement placement;            // where the request goes once they are done
  std::size_t gpus = 0;           // GPUs moved
};

// For each switch with movable GPUs: empty it of them one GPU at a time (in the systems' order), each to a free GPU
// of the same model and at least the memory that its system's host reaches elsewhere, until `wanted` places on the
// pool as it would be; the fewest GPUs over all switches (the first switch on a tie). Only requests for whole GPUs
// by count are helped; a GPU moves only when `activity` shows it idle with no process at its latest sample, whole
// (no MIG instance, no share), in a composed system with no operation running.
[[nodiscard]] std::optional<MoveChoice> planMoves(const ComposableScheduler& scheduler, const PoolState& state,
                                                  const std::vector<IdleGpu>& activity, const PlacementRequest& wanted);

}  // namespace switchyard
