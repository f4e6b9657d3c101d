#include "composer/packing/placement_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace switchyard {

namespace {
// Rankings kept (request shapes x profiles): as many as fit a budget of host verdicts (16-24 bytes each:
// a total and its share of the tree), within [8, 256]; past it the least recently used ranking is dropped,
// and rebuilt if asked again.
constexpr std::size_t kVerdictBudget = 1'000'000;
constexpr std::size_t kMinRankings = 8, kMaxRankings = 256;
constexpr double kRejected = std::numeric_limits<double>::quiet_NaN();
}  // namespace

void PlacementIndex::Ranking::reset(std::size_t hosts) {
  leaves = std::bit_ceil(std::max<std::size_t>(hosts, 1));
  total.assign(hosts, kRejected);
  rejectedBy.assign(hosts, placement::Scheduler::kNotRejected);
  winner.assign(2 * leaves, -1);
  dirty.clear();
  whole = true;
}

void PlacementIndex::Ranking::set(int host, double value) {
  total[static_cast<std::size_t>(host)] = value;
  const std::size_t i = leaves + static_cast<std::size_t>(host);
  winner[i] = std::isnan(value) ? -1 : host;
  if (!whole) dirty.push_back(i);
}

void PlacementIndex::Ranking::settle() {
  if (dirty.empty() && !whole) return;
  auto better = [&](int a, int b) {
    if (a < 0) return b;
    if (b < 0) return a;
    const double ta = total[static_cast<std::size_t>(a)], tb = total[static_cast<std::size_t>(b)];
    return ta > tb || (ta == tb && a < b) ? a : b;
  };
  if (whole || dirty.size() >= leaves / 8) {  // a rebuild, or many changed: redo every inner node, bottom up
    for (std::size_t i = leaves - 1; i >= 1; --i) winner[i] = better(winner[2 * i], winner[2 * i + 1]);
  } else {
    // Level by level: all dirty nodes sit at the same depth, and halving keeps them sorted, so one
    // sort up front and a dedupe per level visit each changed ancestor once.
    std::sort(dirty.begin(), dirty.end());
    while (dirty.front() > 1) {
      std::size_t kept = 0;
      for (std::size_t k = 0; k < dirty.size(); ++k) {
        const std::size_t parent = dirty[k] / 2;
        if (kept > 0 && dirty[kept - 1] == parent) continue;
        dirty[kept++] = parent;
        winner[parent] = better(winner[2 * parent], winner[2 * parent + 1]);
      }
      dirty.resize(kept);
    }
  }
  dirty.clear();
  whole = false;
}

bool PlacementIndex::refresh(Ranking& ranking, const ComposableScheduler& scheduler, placement::CycleState& state, const Pool& pool,
                             const PlacementRequest& request, int host) {
  const auto h = static_cast<std::size_t>(host);
  seen_[h] = cycle_;
  ++stats_.evaluated;
  const auto verdict = scheduler.evaluate(state, pool, request, placement::Candidate{host});
  if (verdict.status.kind == placement::Status::kError) return false;
  ranking.rejectedBy[h] = verdict.rejectedBy;
  const double was = ranking.total[h], now = verdict.status.ok() ? verdict.total : kRejected;
  if (now == was || (std::isnan(now) && std::isnan(was))) return true;  // most re-evaluated hosts did not move
  ranking.set(host, now);
  return true;
}

bool PlacementIndex::rebuild(Ranking& ranking, const ComposableScheduler& scheduler, placement::CycleState& state, const Pool& pool,
                             const PlacementRequest& request) {
  ++stats_.rebuilds;
  ranking.reset(pool.hosts().size());
  for (std::size_t h = 0; h < pool.hosts().size(); ++h)
    if (!refresh(ranking, scheduler, state, pool, request, static_cast<int>(h))) return false;
  ranking.settle();
  return true;
}

placement::Decision PlacementIndex::schedule(const ComposableScheduler& scheduler, const Pool& pool,
                                                              const PlacementRequest& request) {
  auto fullCycle = [&] {
    ++stats_.fallbacks;
    return scheduler.schedule(pool, request, request.explain);
  };
  const unsigned reads = scheduler.reads();
  // Rankings are kept per GPU shape; drives or NICs beside the GPUs change a host's verdict, so those requests
  // (rare, and small) take the full cycle.
  if (request.explain || request.host || !scheduler.perCandidate() || (reads & ~placement::kDemandMix) != 0) return fullCycle();
  // A profile that never reads the demand mix keeps its rankings when the mix moves.
  const std::uint64_t demandVersion = (reads & placement::kDemandMix) != 0 ? pool.demandVersion() : 0;

  std::string companions;
  if (request.companionMemoryGiB > 0) companions = fmt::format("memory {} GiB", request.companionMemoryGiB);
  for (const auto& d : request.companionEndpoints)
    companions += fmt::format(";{} {} {} {} {} {}", kindName(d), d.count, d.model, d.minCapacityGiB, toString(d.affinity), d.minSpeedGbps);
  Key key{&scheduler, request.gpuCount, request.model, request.minMemoryGiB, request.migCapable, request.peerToPeer,
          request.hostMayHaveSystem, std::move(companions)};
  const std::size_t limit = std::clamp(kVerdictBudget / std::max<std::size_t>(1, pool.hosts().size()), kMinRankings, kMaxRankings);
  if (rankings_.size() >= limit && !rankings_.contains(key)) {
    auto oldest = std::min_element(rankings_.begin(), rankings_.end(),
                                   [](const auto& a, const auto& b) { return a.second.lastUsed < b.second.lastUsed; });
    rankings_.erase(oldest);
  }
  ++cycle_;
  Ranking& ranking = rankings_[key];
  ranking.lastUsed = cycle_;
  seen_.resize(pool.hosts().size(), 0);
  fabricSeen_.resize(pool.fabricSwitches().size(), 0);

  placement::Decision d;
  if (!scheduler.prepare(d.state, pool, request).ok()) return fullCycle();

  const bool samePool = ranking.pool == pool.instance() && ranking.demandVersion == demandVersion;
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
  ranking.demandVersion = demandVersion;
  if (!ok) {
    ranking.pool = 0;  // half refreshed: rebuild next time
    return fullCycle();
  }
  ranking.settle();
  if (ranking.best() < 0) {  // nothing fits: every host's rejecting filter is known, and a few of each explain
    ++stats_.refusals;
    d.status = placement::Status::rejected(pool.hosts().empty() ? "there is no candidate" : "no candidate passed the filters");
    scheduler.explainRefusal(d, pool, request, ranking.rejectedBy);
    stats_.evaluated += d.diagnoses.size();
    return d;
  }

  int best = ranking.best();
  if (seen_[static_cast<std::size_t>(best)] != cycle_) {
    // Its plan must be in this cycle's state, and its verdict must still hold.
    const double cached = ranking.total[static_cast<std::size_t>(best)];
    if (!refresh(ranking, scheduler, d.state, pool, request, best)) return fullCycle();
    ranking.settle();
    if (ranking.total[static_cast<std::size_t>(best)] != cached) {
      ++stats_.stale;
      if (!rebuild(ranking, scheduler, d.state, pool, request)) {
        ranking.pool = 0;
        return fullCycle();
      }
      best = ranking.best();
      if (best < 0) return fullCycle();
    }
  }
  ++stats_.cycles;
  d.chosen = placement::Candidate{best};
  d.status = placement::Status::fits();
  return d;
}

}  // namespace switchyard
