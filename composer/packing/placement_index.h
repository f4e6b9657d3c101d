// The placement index: the daemon's decisions without a pass over every host.
//
// A scheduling cycle scores every host. Most of those verdicts did not change since the last request
// of the same shape: a placement touches one or two fabrics, and a host's verdict depends only on its
// own fabrics. The index keeps, per request shape and profile, every host's verdict (its weighted total,
// or rejected) in a ranking, and re-evaluates only the hosts of the fabrics the pool logged as changed
// (Pool::fabricsChangedSince). The best-ranked host is then evaluated afresh in this cycle, so its plan
// is current; a cached total that differs from the fresh one is a broken plugin contract, and the index
// rebuilds that shape's ranking from scratch rather than trust it (stats().stale counts those).
//
// The contract composable plugins keep (composable_model.h): a host's verdict depends only on the
// request, the host, the switches of the fabrics it has a port into, the hosts cabled into those
// switches, and the pool's demand mix; a host with no port into a fabric is never feasible. Plugins say
// what they read (placement::Reads): a profile none of whose plugins reads the demand mix keeps its
// rankings when the mix moves.
//
// GPUs with companions (PlacementRequest::companionEndpoints, companionMemoryGiB) are ranked per shape with them:
// the companions filter reads only the host's fabrics, as the contract wants.
// A request nothing fits is answered from the ranking too: each host's rejecting filter is kept beside its
// total, and only the few hosts per filter a refusal explains are evaluated again (Scheduler::explainRefusal).
// Falls back to the scheduler's full cycle for what it cannot rank: explained requests, a pinned host,
// a profile whose scores are normalised across candidates or that has a plugin reading more than its
// host's surroundings (or not saying what it reads). Not thread-safe: one index per pool owner. Rankings
// are keyed by the scheduler's address, so a scheduler must outlive the index that ranked with it (the
// engine's lives as long as the engine).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "composer/packing/composable_model.h"

namespace switchyard {

class PlacementIndex {
 public:
  struct Stats {
    std::uint64_t cycles = 0;     // decisions answered from the ranking
    std::uint64_t fallbacks = 0;  // decisions handed to the scheduler's full cycle
    std::uint64_t rebuilds = 0;   // rankings built from scratch (new shape, pool, profile or demand mix)
    std::uint64_t evaluated = 0;  // host verdicts worked out
    std::uint64_t stale = 0;      // cached verdicts that did not hold (a plugin broke the contract)
    std::uint64_t refusals = 0;   // decisions nothing fitted, explained from the ranking
  };

  // The decision scheduler.schedule(pool, request, request.explain) would make.
  [[nodiscard]] placement::Decision schedule(const ComposableScheduler& scheduler, const Pool& pool,
                                                              const PlacementRequest& request);
  [[nodiscard]] const Stats& stats() const { return stats_; }
  [[nodiscard]] std::size_t rankingsKept() const { return rankings_.size(); }

 private:
  // The last part: the request's companions (drives, NICs, pooled memory) as text; empty for GPUs alone.
  using Key = std::tuple<const ComposableScheduler*, int, std::string, int, bool, PeerToPeer, bool, std::string>;
  // Every host's total (NaN: rejected) and, over them, a tournament tree: each inner node holds the best
  // host of its subtree (highest total, then lowest index, as the framework selects), so changing one
  // host's total replays log2(hosts) matches in two flat arrays, with no allocation.
  struct Ranking {
    std::uint64_t pool = 0;  // Pool::instance()
    std::uint64_t position = 0;
    std::uint64_t demandVersion = 0;
    std::uint64_t lastUsed = 0;  // the cycle that last asked for this shape
    std::vector<double> total;   // per host
    std::vector<std::uint8_t> rejectedBy;  // per host: the filter that rejected it (Scheduler::Verdict)
    std::vector<int> winner;     // [1, 2 * leaves): the best host of the subtree, -1: none feasible
    std::size_t leaves = 0;      // a power of two >= hosts; host h is leaf leaves + h
    std::vector<std::size_t> dirty;  // leaves set since the last settle()
    bool whole = false;              // reset since the last settle(): every inner node is redone

    void reset(std::size_t hosts);
    // Sets a host's verdict; the tree above it is brought up to date by settle(), once for all hosts set.
    void set(int host, double value);
    void settle();
    [[nodiscard]] int best() const { return winner.size() > 1 ? winner[1] : -1; }  // after settle()
  };

  // False when a plugin reported an error (the caller falls back to the full cycle).
  bool rebuild(Ranking& ranking, const ComposableScheduler& scheduler, placement::CycleState& state, const Pool& pool,
               const PlacementRequest& request);
  bool refresh(Ranking& ranking, const ComposableScheduler& scheduler, placement::CycleState& state, const Pool& pool,
               const PlacementRequest& request, int host);

  std::map<Key, Ranking> rankings_;
  std::vector<std::uint64_t> seen_;        // per host: the cycle that last evaluated it
  std::vector<std::uint64_t> fabricSeen_;  // per fabric: the cycle that last visited its hosts
  std::uint64_t cycle_ = 0;
  Stats stats_;
};

}  // namespace switchyard
