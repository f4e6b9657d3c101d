#include "composer/metrics/engine_metrics.h"

namespace switchyard::metrics {

EngineMetrics::EngineMetrics()
    : operations(registry.counter("switchyard_operations_total", "Operations finished, by kind and result.", {"kind", "result"})),
      operationSeconds(registry.histogram("switchyard_operation_duration_seconds",
                                          "Time from acceptance to the end of an operation (compose, decompose, attach, detach).", {"kind"})),
      stepSeconds(registry.histogram("switchyard_step_duration_seconds",
                                     "One attempt of an operation step that calls the switch or a host, by step kind and result.",
                                     {"step", "result"})),
      refusals(registry.counter("switchyard_requests_refused_total", "Requests refused before an operation started, by action and error code.",
                                {"action", "code"})),
      switchCalls(registry.counter("switchyard_switch_calls_total", "Calls to the fabric driver, by call and result (ok or the error code).",
                                   {"call", "result"})),
      switchCallSeconds(registry.histogram("switchyard_switch_call_duration_seconds", "Latency of calls to the fabric driver, by call.", {"call"})),
      drifts(registry.counter("switchyard_drifts_total", "Disagreements between the store and the fabric or a host, when first seen, by kind.",
                              {"kind"})),
      storeWriteSeconds(registry.histogram("switchyard_store_write_duration_seconds", "Latency of one store transaction.", {})),
      storeWriteErrors(registry.counter("switchyard_store_write_errors_total", "Store transactions that failed.", {})),
      storeWriteTasks(registry.counter("switchyard_store_write_tasks_total",
                                       "Control-thread tasks whose writes went to the store; divided by the transactions "
                                       "(switchyard_store_write_duration_seconds_count), the tasks that shared each (group commit).",
                                       {})),
      queued(registry.counter("switchyard_queue_entered_total", "Compose requests that waited in the queue, by priority class.", {"class"})),
      queueWaitSeconds(registry.histogram("switchyard_queue_wait_seconds",
                                          "Time a request spent in the queue, by priority class and outcome (admitted, left).",
                                          {"class", "outcome"})),
      queuePassSeconds(registry.histogram("switchyard_queue_pass_duration_seconds", "One admission pass over the queue.", {})),
      leaseExpiries(registry.counter("switchyard_lease_expiries_total",
                                     "Leases that ended, by result: started (its decompose began) or overdue (the decompose failed; retried).",
                                     {"result"})),
      preemptions(registry.counter("switchyard_preemptions_total",
                                   "Systems of a preemptible class decomposed to make room for a queued request of a higher one, by the victim's class.",
                                   {"class"})),
      reclaimedGpus(registry.counter("switchyard_reclaimed_gpus_total",
                                     "Idle GPUs taken back by the reclaim policy (a MIG instance or time-sliced share counts its part of a GPU): detach (a "
                                     "detach began) or dry-run (a would-detach event named it).",
                                     {"mode"})),
      movedGpus(registry.counter("switchyard_moved_gpus_total",
                                 "Idle GPUs of systems labelled movable=true that defragmentation moved elsewhere to make room for the queue's "
                                 "head: moved (attach and detach done) or failed (the system kept them).",
                                 {"outcome"})),
      servingSince(registry.gauge("switchyard_serving_since_timestamp_seconds",
                                  "Unix time at which this yardd began to serve writes: its start with SQLite, or winning the leadership with etcd. "
                                  "A change means yardd restarted or another leader took over.",
                                  {"store"})) {
  storeWriteErrors.add({}, 0);  // present from the first scrape: rate() and alerts see 0, not nothing
}

}  // namespace switchyard::metrics
