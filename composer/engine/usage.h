// Usage accounting (issue 40 part 5): GPU-hours per tenant, system and GPU model, computed from the durable
// operation log, so it is the same after a restart or a failover. A whole GPU counts 1 while it is bound
// to a system; a MIG instance counts its share of the GPU's memory slices (3g: 4/8); a time-sliced share its
// fraction (250 milli: 0.25). A system holds what its succeeded compose and attach operations bound, from
// the moment each ended, until a succeeded detach or decompose let it go. Of that, the time its GPUs were
// idle (the idle stretches idle reclaim's samples recorded) is counted apart: never more than was held.
// Pooled memory (cxl-memory devices) is counted in GiB-hours, in rows of its own (model "cxl-memory"); drives
// and NICs in device-hours (drive-hours, NIC-hours), in rows of model "nvme" and "nic".
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/clock.h"
#include "composer/model/composition.h"

namespace switchyard {

struct UsageRow {
  std::string tenant;
  SystemId systemId;
  std::string model;
  double gpuSeconds = 0;
  double idleGpuSeconds = 0;  // of gpuSeconds, idle (a GPU held in parts: while all of them idled, by its part)
  double memoryGiBSeconds = 0;  // pooled memory held (rows of model "cxl-memory")
  double deviceSeconds = 0;     // drives or NICs held (rows of model "nvme" or "nic")
  std::string systemName;  // filled by HistoryReads::usage (live systems and ended ones the store still holds)
  std::map<std::string, std::string> labels;  // the system's, filled as systemName is
};

// The model of the rows that count pooled memory.
inline constexpr std::string_view kPooledMemoryModel = "cxl-memory";

struct UsageReport {
  Timestamp since = 0;
  Timestamp until = 0;
  Timestamp historyFrom = 0;  // the oldest operation the log still holds: usage before it is not known
  std::vector<UsageRow> rows;  // per (tenant, system, model), nonzero, ordered by tenant then system then model
};

// `operations` oldest first (finished or not; only succeeded ones change what a system holds). `modelOf`
// names a device's GPU model ("" for a device that is not a GPU: not counted as GPU time); `memoryOf` a
// pooled-memory device's GiB (0 for others); `endpointKindOf` a drive's or NIC's kind ("nvme", "nic"; "" for
// others). Open holdings run to min(until, now).
[[nodiscard]] UsageReport computeUsage(const std::vector<Operation>& operations, const std::function<std::string(const DeviceId&)>& modelOf,
                                       Timestamp since, Timestamp until, Timestamp now, const std::vector<IdleStretch>& idle = {},
                                       const std::function<int(const DeviceId&)>& memoryOf = {},
                                       const std::function<std::string(const DeviceId&)>& endpointKindOf = {});

}  // namespace switchyard
