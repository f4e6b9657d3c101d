#include "tests/bench/packing/loop_moves.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace switchyard::bench {

std::optional<LoopMovePlan> planLoopMoves(const SimPool& pool, const std::vector<LoopMovable>& movable, const sharing::ShareRequest& head,
                                          int mostMovedGpus, bool& chance) {
  chance = false;
  const ComposablePool* composable = pool.composable();
  if (composable == nullptr || composable->mirror() || !head.wholeGpus()) return std::nullopt;
  std::map<long, std::vector<LoopMovable>> byEnclosure;
  std::map<long, int> movableGpus;
  for (const LoopMovable& m : movable) {
    const long e = pool.site(m.holding->placement.node).enclosure;
    if (e < 0) continue;
    byEnclosure[e].push_back(m);
    movableGpus[e] += m.request->gpuCount;
  }
  // The enclosures where moves could make room, the fewest GPUs missing first; four tried at most.
  std::vector<std::pair<int, long>> tries;
  // A host cabled to the enclosure must have the head's CPU, memory, model and room for its GPUs: moves free GPUs,
  // not hosts.
  const auto hostFor = [&](long e) {
    for (size_t v : composable->viewsOfEnclosure(static_cast<size_t>(e))) {
      const sharing::ShareNode& n = pool.view().node(v);
      if (n.cpuLeft >= head.cpuMilli && n.memoryLeft >= head.memoryMib && n.serves(head.modelMask) &&
          composable->hostRoom(pool.site(v).host) >= head.gpuCount)
        return true;
    }
    return false;
  };
  for (const auto& [e, gpus] : movableGpus) {
    const int missing = head.gpuCount - composable->enclosureFree(static_cast<size_t>(e));
    if (missing > 0 && missing <= std::min(gpus, mostMovedGpus) && hostFor(e)) tries.emplace_back(missing, e);
  }
  chance = !tries.empty();
  if (tries.empty()) return std::nullopt;
  std::sort(tries.begin(), tries.end());
  if (tries.size() > 4) tries.resize(4);
  std::optional<LoopMovePlan> best;
  for (const auto& [missing, e] : tries) {
    auto& candidates = byEnclosure[e];
    std::sort(candidates.begin(), candidates.end(), [](const LoopMovable& x, const LoopMovable& y) {  // the fewest GPUs first
      const int32_t gx = x.request->gpuCount, gy = y.request->gpuCount;
      return gx != gy ? gx < gy : x.slot < y.slot;
    });
    SimPool copy = pool;
    LoopMovePlan plan;
    for (const LoopMovable& m : candidates) {
      const SimPool::Holding& holding = *m.holding;
      const sharing::ShareRequest& q = *m.request;
      if (plan.gpus + q.gpuCount > mostMovedGpus || (best && plan.gpus + q.gpuCount >= best->gpus)) continue;
      // Where it goes: another enclosure its host reaches with as many GPUs free (the host's CPU, memory and device
      // count stay as they are: it gives up as many GPUs as it takes).
      std::optional<size_t> to;
      for (size_t v : composable->viewsOfHost(pool.site(holding.placement.node).host))
        if (const long ve = copy.site(v).enclosure;
            ve >= 0 && ve != e && copy.composable()->enclosureFree(static_cast<size_t>(ve)) >= q.gpuCount) {
          to = v;
          break;
        }
      if (!to) continue;
      copy.remove(holding, q);
      if (!sharing::fits(copy.view().node(*to), q)) throw std::logic_error("a move's destination does not fit it");
      (void)copy.place({*to, sharing::pickExclusiveGpus(copy.view().node(*to), q)}, q);
      plan.moves.emplace_back(m.slot, *to);
      plan.gpus += q.gpuCount;
      std::optional<size_t> fits;
      for (size_t v : composable->viewsOfEnclosure(static_cast<size_t>(e)))
        if (sharing::fits(copy.view().node(v), head)) {
          fits = v;
          break;
        }
      if (fits) {
        plan.view = *fits;
        best = std::move(plan);
        break;
      }
    }
  }
  return best;
}

}  // namespace switchyard::bench
