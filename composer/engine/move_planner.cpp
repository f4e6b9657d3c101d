#include "composer/engine/move_planner.h"

#include <map>
#include <string>
#include <unordered_map>

namespace switchyard {

namespace {

// An idle whole GPU of a system that allows moves.
struct Movable {
  const System* system = nullptr;
  DeviceId device;
  int index = -1;  // in the pool
};

}  // namespace

std::optional<MoveChoice> planMoves(const ComposableScheduler& scheduler, const PoolState& state, const std::vector<IdleGpu>& activity,
                                   const PlacementRequest& wanted) {
  // Whole GPUs by count: a request for named devices, MIG instances or a share is not helped by moving others.
  if (wanted.gpuCount <= 0 || !wanted.devices.empty() || !wanted.gpuInstances.empty() || wanted.gpuShareMilli != 0) return std::nullopt;
  if (activity.empty()) return std::nullopt;
  std::unordered_map<DeviceId, const IdleGpu*> idle;
  for (const auto& g : activity) idle.emplace(g.gpu.deviceId, &g);

  const Pool& now = state.pool();
  std::map<int, std::vector<Movable>> bySwitch;  // the candidates under each switch, in the systems' order
  for (const auto& [id, s] : state.systems()) {
    if (!allowsMoves(s) || s.state != SystemState::kComposed || !s.activeOperation.empty() || s.hostId.empty()) continue;
    for (const auto& b : s.bindings) {
      auto g = idle.find(b.deviceId);
      if (g == idle.end()) continue;
      const IdleGpu& row = *g->second;
      // Idle at the latest sample with no process, and whole: MIG instances and shares stay where they are.
      if (row.systemId != s.id || !row.gpu.idle() || !row.gpu.processes.empty() || !row.instances.empty() || row.shareMilli != 0) continue;
      if (const int di = now.deviceIndex(b.deviceId); di >= 0) bySwitch[now.devices()[static_cast<std::size_t>(di)].switchIndex].push_back({&s, b.deviceId, di});
    }
  }
  if (bySwitch.empty()) return std::nullopt;

  std::optional<MoveChoice> best;
  for (const auto& [sw, movables] : bySwitch) {
    // Empty this switch of movable GPUs one at a time, each to a free GPU its system's host reaches elsewhere,
    // until the head fits: the fewest GPUs moved over all switches wins (the first switch on a tie).
    Pool trial = now;      // the pool once the moves are done
    Pool elsewhere = now;  // where a moved GPU may go: this switch's free GPUs hidden, the chosen ones taken
    for (int d : now.switches()[static_cast<std::size_t>(sw)].freeDevices) elsewhere.setFree(d, false);
    std::map<SystemId, SystemMove> moves;
    std::size_t moved = 0;
    for (const Movable& m : movables) {
      if (moved >= kMostMovedGpus || (best && moved + 1 >= best->gpus)) break;
      const PoolDevice& device = now.devices()[static_cast<std::size_t>(m.index)];
      PlacementRequest to;
      to.gpuCount = 1;
      to.model = device.model;
      to.minMemoryGiB = device.memoryGiB;
      to.host = m.system->hostId;
      to.hostMayHaveSystem = true;
      to.peerToPeer = PeerToPeer::kNone;
      to.tenant = m.system->tenant;
      const PlacementDecision destination = place(scheduler, elsewhere, to);
      if (!destination.placement || destination.placement->devices.empty()) continue;
      const DeviceId& target = destination.placement->devices.front().deviceId;
      const int ti = now.deviceIndex(target);
      elsewhere.setFree(ti, false);
      elsewhere.addAttached(elsewhere.hostIndex(m.system->hostId), 1);  // the attach comes before the detach
      trial.setFree(ti, false);
      trial.setFree(m.index, true);
      SystemMove& move = moves[m.system->id];
      move.system = m.system->id;
      move.from.push_back(m.device);
      move.to.push_back(target);
      ++moved;
      if (auto fits = place(scheduler, trial, wanted); fits.placement) {
        MoveChoice choice{{}, std::move(*fits.placement), moved};
        for (auto& entry : moves) choice.moves.push_back(std::move(entry.second));
        best = std::move(choice);
        break;
      }
    }
  }
  return best;
}

}  // namespace switchyard
