// yardd's queue (issue 40, ADR 0017): a compose asked with --queue that does not fit now waits as a queued
// system with a queued operation, both durable, until the moment capacity frees. What it waits with:
// the request as asked, its priority class and its deadlines. Leases and durations live here too.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/clock.h"
#include "composer/model/endpoint_demand.h"
#include "composer/model/mig.h"
#include "composer/model/topology.h"

namespace switchyard {

// A priority class (yardd --priority-class): a higher value is admitted first. A queued request of a
// preempting class that cannot fit may take back the systems of preemptible classes of a lower value
// (engine_preemption.cpp). A preempted system of a class that requeues is queued again once decomposed (requeue.h).
struct PriorityClass {
  std::string name;
  int value = 0;
  bool preemptible = false;
  bool preempting = false;
  bool requeue = false;  // only with preemptible
};

// The classes yardd knows when none are configured: production 1000 (preempting), batch 100 (the default;
// preempting), spot 0 (preemptible).
[[nodiscard]] const std::vector<PriorityClass>& defaultPriorityClasses();
inline constexpr std::string_view kDefaultPriorityClass = "batch";
// "NAME=VALUE[:preemptible[:requeue]][:preempting]" (yardd --priority-class); nothing, with `error` set, when malformed.
[[nodiscard]] std::optional<PriorityClass> parsePriorityClass(std::string_view text, std::string& error);

// A system that a preempting request would take back (yardctl plan --explain --priority CLASS).
struct PreemptionVictim {
  std::string systemId;
  std::string name;
  std::string tenant;
  std::string priorityClass;
  int gpus = 0;
  bool requeued = false;  // its class requeues: it would wait in the queue again once decomposed
};

// A system whose idle GPUs defragmentation would move to make room (ADR 0033): `from` leave, `to` come.
struct PlannedMove {
  std::string systemId;
  std::string name;
  std::string tenant;
  std::vector<std::string> from;
  std::vector<std::string> to;
};

// What a queued compose asked for, as the packing core takes it (PlacementRequest's stored form).
struct QueuedRequest {
  int gpuCount = 0;
  std::string model;
  int minMemoryGiB = 0;
  int pooledMemoryGiB = 0;               // pooled CXL memory (PlacementRequest::pooledMemoryGiB)
  std::vector<EndpointDemand> endpoints;  // drives and NICs by count (PlacementRequest::endpoints)
  std::string peerToPeer = "preferred";  // required, preferred, none
  std::string host;                      // pinned host; empty: any
  std::vector<DeviceId> devices;         // named devices
  std::vector<MigProfile> gpuInstances;  // MIG instances instead of whole GPUs
  bool migCapable = false;
  int gpuShareMilli = 0;
  std::string priorityClass{kDefaultPriorityClass};
  int priority = 100;               // the class's value when it was queued
  Timestamp enqueuedAt = 0;
  Timestamp deadline = 0;           // given up at this time (--queue-timeout); 0: waits until cancelled
  std::int64_t leaseSeconds = 0;    // the system's lease once admitted; 0: none
  // Set on a preemption's decompose of a system whose class requeues (requeue.h), not on a compose: the name and
  // labels its request is queued again under once the decompose succeeded; the fields above are its shape.
  struct RequeueAs {
    std::string name;
    std::map<std::string, std::string> labels;
    friend bool operator==(const RequeueAs&, const RequeueAs&) = default;
  };
  std::optional<RequeueAs> requeueAs;
  friend bool operator==(const QueuedRequest&, const QueuedRequest&) = default;
};

// Why a request waits, short enough to keep with each queued request: the first line of the packing core's
// answer and its first three hosts' reasons, then how many more hosts the answer covers. `unexplainedHosts`: the
// hosts it counted without naming (its last line then says so; PlacementDecision::unexplained).
[[nodiscard]] std::string shortReason(std::string_view why, std::size_t unexplainedHosts = 0);
// "4 GPU(s) H100", "share 250m", "2 MIG instance(s)": what a queued request asks for, for people.
[[nodiscard]] std::string describeShape(const QueuedRequest& q);

// "90s", "30m", "8h", "2d", "1h30m", "500ms"; a bare number is seconds. Nothing for anything else,
// for zero or negative, or for more than 10 years.
[[nodiscard]] std::optional<std::chrono::milliseconds> parseDuration(std::string_view text);
// The inverse, for people: "1h30m", "45s", "2d".
[[nodiscard]] std::string formatDuration(std::chrono::milliseconds d);

}  // namespace switchyard
