// How an Engine is set up (engine.h): placement, step kinds, driver threads, retries and deadlines,
// retention, quotas, the queue and leases, idle reclaim, metrics, the stepped mode for tests, and what to
// do when the store fails. yardd fills it from its flags and config (composer/daemon/).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "composer/engine/idle_tracker.h"
#include "composer/engine/steps/step_kind.h"
#include "composer/metrics/engine_metrics.h"
#include "composer/model/access.h"
#include "composer/model/machine_template.h"
#include "composer/model/queue.h"
#include "composer/packing/composable_model.h"
#include "inventory/store.h"

namespace switchyard {

namespace admission {
struct Profile;
}

struct EngineOptions {
  std::shared_ptr<const ComposableScheduler> placement;  // null: the switchyard-v2 profile
  std::shared_ptr<const admission::Profile> admission;   // the admission pass's plugins; null: switchyard-v1 (ADR 0032)
  std::shared_ptr<const StepKindRegistry> steps;         // null: the built-in step kinds
  int driverThreads = 256;  // the most switch calls in flight at once (a thread each, started as needed)
  // The most history reads (operations, events, audit, usage) and capacity computations in flight at once
  // (EngineClient): on threads of their own, never the control thread or an adapter's (issue 59, item 5).
  int readThreads = 8;
  // Group commit (group_commit.h, ADR 0035): the writes of up to this many control-thread tasks that ran back to
  // back, each queued behind the one before, go to the store in one transaction. 1: every task writes alone.
  std::size_t groupCommitTasks = 32;
  int maxStepAttempts = 3;  // for steps that must converge: unbinds, compensations
  // A retried step waits first: retryBackoff doubling with each attempt, at most maxRetryBackoff, each wait
  // drawn between half and all of that (jitter, so that calls that failed together do not retry together).
  // The wait is a timer on the engine's clock: no thread waits, and stop() cancels it (the step runs
  // again at the next start); 0: retry at once.
  std::chrono::milliseconds retryBackoff{100};
  std::chrono::milliseconds maxRetryBackoff{2000};
  std::chrono::milliseconds switchCallTimeout{60'000};  // a switch call not answered by then is kDeadlineExceeded
  // A host call (admit: rescan and wait for the devices; release) not done by then is kDeadlineExceeded.
  std::chrono::milliseconds hostCallTimeout{30'000};
  std::chrono::milliseconds fabricPollInterval{1000};
  std::chrono::milliseconds reconcileInterval{30'000};  // compare with the fabric while running; 0: only at start
  RetentionPolicy retention;                      // history kept in the store
  TenantQuotas quotas;                            // per tenant; a tenant not named has no limit
  std::chrono::milliseconds pruneInterval{60'000};  // 0: prune only when asked
  // Counted as operations, steps, refusals, store writes and drift happen; null: nothing is counted.
  std::shared_ptr<metrics::EngineMetrics> metrics;
  // The queue and leases (engine_queue.cpp, engine_leases.cpp; ADR 0017).
  std::vector<PriorityClass> priorityClasses = defaultPriorityClasses();
  // The machine templates a compose may start from (yardd --templates; its examples by default). Fixed for
  // the engine's life: read on any thread.
  std::vector<MachineTemplate> templates = exampleTemplates();
  std::size_t maxQueued = 100'000;         // waiting requests in all
  std::size_t maxQueuedPerTenant = 1'000;  // waiting requests of one tenant (a flood fills only its own)
  // Fair share charges a tenant what it holds now plus what it held recently, decayed with this half-life
  // (0: what it holds now only). Kept in memory: a restart charges what is held until history builds again.
  std::chrono::milliseconds fairShareHalfLife{std::chrono::hours(24)};
  std::chrono::milliseconds maxLease{std::chrono::hours(24 * 365)};
  std::chrono::milliseconds leaseWarning{std::chrono::minutes(10)};  // lease.expiring this long before the end
  std::chrono::milliseconds leaseRetry{std::chrono::seconds(30)};    // an overdue system's next decompose try
  std::chrono::milliseconds preemptionGrace{std::chrono::seconds(30)};  // from system.preempting to the decompose
  std::chrono::milliseconds deadlineInterval{1000};  // how often leases and queue timeouts are looked at; 0: when asked
  // Idle reclaim (engine_idle.cpp, idle_tracker.h): how often the hosts are asked what their attached GPUs
  // do (0: when asked), the utilization above which a GPU counts as busy, the samples kept per GPU, and
  // yardd's policy for tenants and systems that choose none (off unless set).
  std::chrono::milliseconds activityInterval{60'000};
  int idleBusyAbovePercent = 5;
  std::size_t activityHistory = 60;
  ReclaimPolicy reclaim;
  // A stepped engine, for tests that decide the order of everything (ADR 0026): no control thread and no
  // driver threads. The thread that calls start() is the control thread: the plain methods answer inline
  // there; what the engine posts (a step's switch call, its result, a completion) waits until step() runs
  // it, and the blocking waitOperation steps until the operation ends. The periodic rounds (fabric poll,
  // deadlines, prune, reconcile, activity) do not run by themselves: call them. Never for yardd.
  bool stepped = false;
  // Start even when the store was made by another fabric (not one switch of its inventory is in the fabric's):
  // the store's systems on devices this fabric lacks stay degraded until `yardctl systems forget` removes them.
  // Off: such a start is refused, naming both fabrics (a state directory reused across fabrics, issue 63).
  bool adoptFabric = false;
  // Called once, on the control thread, when the engine stops writing for good (the store failed or fenced
  // it out): the daemon stops serving and exits for its service manager to restart it. Must return quickly.
  std::function<void(const std::string& why)> onHalt;
};

}  // namespace switchyard
