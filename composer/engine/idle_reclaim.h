// Idle reclaim's memory (ADR 0019; issue 59: one of the engine's parts): what attached GPUs did between sampling
// rounds, the idle stretches usage reads (open ones, ended ones not yet written), which dry-run notices were given
// for which idle stretch, and the list of attached GPUs the view shows. The engine decides whom a round asks
// (Engine::activityRoundOnControl, from the systems as they are) and what to do with what is due
// (Engine::applyActivity: events, detaches); this part records the answers and works out what is due.
//
// Threads: `record` runs off the control thread (the round's worker, after the hosts answered) and `unwritten` on
// any thread (usage, a stop); both under the part's mutex, as is `announced`. The view's list and the
// one-round-at-a-time flag are the control thread's.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "composer/engine/activity_round.h"
#include "composer/engine/idle_tracker.h"
#include "composer/model/composition.h"

namespace switchyard {

class PoolState;

// The system's MIG instances on one GPU, by start, and its time-sliced shares on it in thousandths.
[[nodiscard]] std::vector<GpuInstance> instancesOn(const System& s, const DeviceId& device);
[[nodiscard]] int shareMilliOn(const System& s, const DeviceId& device);

class IdleReclaim {
 public:
  // An idle stretch still open is written at most this often (a restart loses at most that much of it), and one
  // round writes at most this many stretches (one store transaction; etcd bounds its size).
  static constexpr Duration kCheckpoint = std::chrono::minutes(10);
  static constexpr std::size_t kWritesPerRound = 1000;

  IdleReclaim(int busyAbovePercent, std::size_t historySamples) : book_(busyAbovePercent, historySamples) {}

  // What the hosts said (`seen[i]` answers round.checks[i]; an error: that host could not tell), taken at `now`:
  // records it, forgets GPUs no longer where the round found them, and returns what each system's policy says is
  // due, the idle stretches to write (none when `writeStretches` is false: a standby writes nothing) and the list
  // for the view. Any thread; one round at a time.
  [[nodiscard]] ActivityOutcome record(const ActivityRound& round, const std::vector<Result<std::vector<GpuActivity>>>& seen,
                                       Timestamp now, bool writeStretches);
  // A dry run named these GPUs and instances (a reclaim.would-detach event): not again during the same idle stretches.
  void announced(const ActivityOutcome::Reclaim& due);
  // The stretches not in the store yet, as of `now`: open ones (to now) and ended ones waiting for a round's write
  // budget. Any thread (usage reads them beside the stored ones; a clean stop writes them).
  [[nodiscard]] std::vector<IdleStretch> unwritten(Timestamp now) const;

  // The view's list (control thread). A round hands in the list it built; a change to the reclaim policies
  // (new quotas) drops it, and the next read builds one from the record and the systems as they are now.
  using PolicyOf = std::function<ReclaimPolicy(const System&)>;
  void show(std::shared_ptr<const std::vector<IdleGpu>> list);
  void policiesChanged();
  // Whether the view's list changed since the view last took it; `forView` hands it over (and clears that).
  [[nodiscard]] bool changed() const { return changed_; }
  [[nodiscard]] std::shared_ptr<const std::vector<IdleGpu>> forView(const PoolState& state, const PolicyOf& policyOf);
  // The list as it stands, without handing it to the view (defragmentation reads which GPUs idle).
  [[nodiscard]] std::shared_ptr<const std::vector<IdleGpu>> current(const PoolState& state, const PolicyOf& policyOf) const;

  // One round out at a time (hosts slower than the interval): the timer starts none while one is out.
  [[nodiscard]] bool roundOut() const { return roundOut_; }
  void beginRound() { roundOut_ = true; }
  void endRound() { roundOut_ = false; }

 private:
  struct OpenStretch {
    IdleStretch stretch;
    Timestamp writtenAt = 0;  // its latest checkpoint (its start until the first)
  };
  struct Book {
    Book(int busyAbovePercent, std::size_t history) : tracker(busyAbovePercent, history) {}
    IdleTracker tracker;                              // what attached GPUs did, as sampled
    std::map<std::string, Timestamp> announced;       // dry run: the idle stretch (its start) a notice named, by key
    std::map<std::string, OpenStretch> openStretches; // idle now, by GPU (or GPU@START for a MIG instance)
    std::vector<IdleStretch> endedStretches;          // ended, waiting for a round's write budget
  };
  // The stretches that ended this round, and checkpoints of open ones (under mutex_).
  [[nodiscard]] std::vector<IdleStretch> stretchesToWrite(Timestamp now, const std::function<std::string(const SystemId&)>& tenantOf);
  [[nodiscard]] std::shared_ptr<const std::vector<IdleGpu>> build(const PoolState& state, const PolicyOf& policyOf) const;

  mutable std::mutex mutex_;  // one round's recording at a time; usage and stop read under it
  Book book_;                 // guarded by mutex_
  std::shared_ptr<const std::vector<IdleGpu>> list_;  // the view's (control thread); null: build it anew
  bool changed_ = false;                              // the view's list is stale
  bool roundOut_ = false;                             // a round is out: the timer does not start another
};

}  // namespace switchyard
