#include "composer/packing/placement_index.h"

#include <cmath>
#include <limits>

namespace switchyard {

namespace {
// Rankings kept (request shapes x profiles); past it they are all dropped and rebuilt on demand.
constexpr std::size_t kMaxRankings = 256;
constexpr double kRejected = std::numeric_limits<double>::quiet_NaN();
}  // namespace

bool PlacementIndex::refresh(Ranking& ranking, const ComposableScheduler& scheduler, placement::CycleState& state, const Pool& pool,
                             const PlacementRequest& request, int host) {
  const auto h = static_cast<std::size_t>(host);
  seen_[h] = cycle_;
  ++stats_.evaluated;
  const auto verdict = scheduler.evaluate(state, pool, request, ComposableModel::Candidate{host});
  if (verdict.status.kind == placement::Status::kError) return false;
  double& total = ranking.total[h];
  const double now = verdict.status.ok() ? verdict.total : kRejected;
  if (now == total || (std::isnan(now) && std::isnan(total))) return true;  // most re-evaluated hosts did not move
  if (!std::isnan(total)) ranking.order.erase({total, host});
  total = now;
  if (!std::isnan(total)) ranking.order.insert({total, host});
  return true;
}

bool PlacementIndex::rebuild(Ranking& ranking, const ComposableScheduler& scheduler, placement::CycleState& state, const Pool& pool,
                             const PlacementRequest& request) {
  ++stats_.rebuilds;
  ranking.total.assign(pool.hosts().size(), kRejected);
  ranking.order.clear();
  for (std::size_t h = 0; h < pool.hosts().size(); ++h)
    if (!refresh(ranking, scheduler, state, pool, request, static_cast<int>(h))) return false;
  return true;
}

placement::Decision<ComposableModel> PlacementIndex::schedule(const ComposableScheduler& scheduler, const Pool& pool,
                                                              const PlacementRequest& request) {
  auto fullCycle = [&] {
    ++stats_.fallbacks;
    return scheduler.schedule(pool, request, request.explain);
  };
  if (request.explain || request.host || !scheduler.perCandidate()) return fullCycle();

  Key key{&scheduler, request.gpuCount, request.model, request.minMemoryGiB, request.migCapable, request.peerToPeer,
          request.hostMayHaveSystem};
  if (rankings_.size() >= kMaxRankings && !rankings_.contains(key)) rankings_.clear();
  Ranking& ranking = rankings_[key];
  ++cycle_;
  seen_.resize(pool.hosts().size(), 0);
  fabricSeen_.resize(pool.fabricSwitches().size(), 0);

  placement::Decision<ComposableModel> d;
  if (!scheduler.prepare(d.state, pool, request).ok()) return fullCycle();

  const bool samePool = ranking.pool == pool.instance() && ranking.demandVersion == pool.demandVersion();
  const auto changed = samePool ? pool.fabricsChangedSince(ranking.position) : std::nullopt;
  bool ok = true;
  if (!changed) {
    ok = rebuild(ranking, scheduler, d.state, pool, request);
  } else {
    for (int f : *changed) {
      if (fabricSeen_[static_cast<std::size_t>(f)] == cycle_) continue;
      fabricSeen_[static_cast<std::size_t>(f)] = cycle_;
      for (int h : pool.fabricHosts()[static_cast<std::size_t>(f)])
        if (ok && seen_[static_cast<std::size_t>(h)] != cycle_) ok = refresh(ranking, scheduler, d.state, pool, request, h);
    }
  }
  ranking.pool = pool.instance();
  ranking.position = pool.changes();
  ranking.demandVersion = pool.demandVersion();
  if (!ok) {
    ranking.pool = 0;  // half refreshed: rebuild next time
    return fullCycle();
  }
  if (ranking.order.empty()) return fullCycle();  // nothing fits: the full cycle explains why

  int best = ranking.order.begin()->host;
  if (seen_[static_cast<std::size_t>(best)] != cycle_) {
    // Its plan must be in this cycle's state, and its verdict must still hold.
    const double cached = ranking.total[static_cast<std::size_t>(best)];
    if (!refresh(ranking, scheduler, d.state, pool, request, best)) return fullCycle();
    if (ranking.total[static_cast<std::size_t>(best)] != cached) {
      ++stats_.stale;
      if (!rebuild(ranking, scheduler, d.state, pool, request)) {
        ranking.pool = 0;
        return fullCycle();
      }
      if (ranking.order.empty()) return fullCycle();
      best = ranking.order.begin()->host;
    }
  }
  ++stats_.cycles;
  d.chosen = ComposableModel::Candidate{best};
  d.status = placement::Status::fits();
  return d;
}

}  // namespace switchyard
