// What a caller may see and change: the one place the roles of composer/model/caller.h are interpreted.
// The engine asks it before accepting a change; the gRPC and Redfish services ask it before showing a
// system, an operation, an event or an audit record.
#pragma once

#include <map>
#include <chrono>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

#include "composer/model/caller.h"
#include "composer/model/error.h"

namespace switchyard {

// A tenant's limits, enforced by the engine when it accepts a compose or an attach (kResourceExhausted).
// GPUs count whole physical GPUs held by the tenant's systems, reserved or bound; a GPU carrying MIG
// instances or shares counts once.
struct TenantQuota {
  std::optional<int> maxGpus;
  std::optional<int> maxSystems;
  std::optional<int> maxMemoryGiB;  // pooled memory (cxl-memory devices), in GiB
  std::optional<int> maxDrives;     // NVMe drives (nvme devices)
  std::optional<int> maxNics;       // NICs (nic devices)
  std::map<std::string, int, std::less<>> maxEndpoints;  // devices of another class by count ("fpga": 2)
  // The queue and leases (issue 40): the tenant's fair-share weight (1 when unset), how many requests it may
  // have queued, the lease its systems get when the request names none, and the longest it may ask for.
  std::optional<double> share;
  std::optional<int> maxQueued;
  std::optional<std::chrono::milliseconds> defaultLease;
  std::optional<std::chrono::milliseconds> maxLease;
  // Idle reclaim (issue 40): the tenant's systems give back GPUs idle this long (0: never), by detaching
  // them or, in a dry run, by saying so; a system's labels may choose otherwise (idle_tracker.h).
  std::optional<std::chrono::milliseconds> reclaimIdleAfter;
  std::optional<bool> reclaimDryRun;
  // Its disruption budget: at most this many of its GPUs preempted in any 24 hours (unset: no limit).
  std::optional<int> maxPreemptedGpusPerDay;
  // The priority classes its composes may name (unset: every class). A compose that names another, or that
  // names none while the default class is not in the list, is refused (kPermissionDenied).
  std::optional<std::vector<std::string>> priorityClasses;
};
using TenantQuotas = std::map<std::string, TenantQuota, std::less<>>;

// Whether `caller` may see what belongs to `tenant` (an empty tenant: the pool itself, seen by all).
[[nodiscard]] bool maySee(const Caller& caller, std::string_view tenant);

// Whether `caller` may change a system of `tenant`: kPermissionDenied naming the role or the tenant if not.
// `what` names the change for the message ("compose", "decompose", ...).
[[nodiscard]] Result<void> mayChange(const Caller& caller, std::string_view tenant, std::string_view what);

}  // namespace switchyard
