// The counters and histograms of yardd's work: what the engine records as operations and steps end, the
// store writes, drift is found, and (through InstrumentedFabric) every switch call. Names follow the
// Prometheus conventions (base units: seconds; _total for counters); docs/operations.md lists them.
#pragma once

#include <memory>

#include "composer/metrics/registry.h"

namespace switchyard::metrics {

struct EngineMetrics {
  EngineMetrics();
  Registry registry;
  CounterFamily& operations;          // {kind, result}: result succeeded|failed
  HistogramFamily& operationSeconds;  // {kind}: accepted to finished
  HistogramFamily& stepSeconds;       // {step, result}: one attempt of a remote step (switch or host call)
  CounterFamily& refusals;            // {action, code}: requests refused at acceptance
  CounterFamily& switchCalls;         // {call, result}: result ok or the error code
  HistogramFamily& switchCallSeconds; // {call}
  CounterFamily& drifts;              // {kind}: disagreements found by reconcile (first sightings)
  HistogramFamily& storeWriteSeconds; // {}: one transaction
  CounterFamily& storeWriteErrors;    // {}
  CounterFamily& storeWriteTasks;     // {}: control-thread tasks whose writes went in a transaction (group commit)
  CounterFamily& queued;              // {class}: composes that went into the queue
  HistogramFamily& queueWaitSeconds;  // {class, outcome}: time in the queue; outcome admitted|left (cancelled, timed out)
  HistogramFamily& queuePassSeconds;  // {}: one admission pass over the queue
  CounterFamily& leaseExpiries;       // {result}: started (a decompose began) or overdue (it failed: retried)
  CounterFamily& preemptions;         // {class}: systems decomposed to make room for a higher class
  CounterFamily& reclaimedGpus;       // {mode}: idle GPUs detached (detach) or named in a would-detach event (dry-run)
  CounterFamily& movedGpus;           // {outcome}: idle GPUs moved to make room for the queue's head (moved, failed)
  CounterFamily& servingSince;        // gauge {store}: Unix time this yardd began serving writes (a start, or winning leadership)
};

}  // namespace switchyard::metrics
