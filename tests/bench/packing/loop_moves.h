// The trace loop's defragmentation plan (LoopRules::defragment, ADR 0033): which idle systems to move off one
// enclosure, and where, for a waiting head to fit there. Pure: it plans on a copy of the pool; the loop applies it.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "composer/packing/sharing/share_cluster.h"
#include "tests/bench/packing/sim_pool.h"

namespace switchyard::bench {

// A running system that may move: its running slot, what it holds and what it asked for.
struct LoopMovable {
  std::size_t slot = 0;
  const SimPool::Holding* holding = nullptr;
  const sharing::ShareRequest* request = nullptr;
};

struct LoopMovePlan {
  int gpus = 0;                                            // GPUs moved
  std::vector<std::pair<std::size_t, std::size_t>> moves;  // slot, destination view, in the order to apply them
  std::size_t view = 0;                                    // where the head fits once they are done
};

// Tries the enclosures where a host could take `head` (its CPU, memory, model and device room) and the movable GPUs
// cover what it lacks, the fewest GPUs missing first, four at most; on each, moves its candidates (`movable`, in
// slot order) the fewest GPUs first to another enclosure their host reaches with their GPUs free, until the head
// fits; the plan moving the fewest GPUs, at most `mostMovedGpus`. `chance` says whether any enclosure was tried.
// Composable pools only (none on a static or mirror pool).
[[nodiscard]] std::optional<LoopMovePlan> planLoopMoves(const SimPool& pool, const std::vector<LoopMovable>& movable,
                                                        const sharing::ShareRequest& head, int mostMovedGpus, bool& chance);

}  // namespace switchyard::bench
