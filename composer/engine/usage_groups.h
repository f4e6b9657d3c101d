// Usage rows added up by what a bill groups by (issue 63, item 4): a UsageGrouping (composer/model/usage_grouping.h:
// any of tenant, system, model and label:KEY, comma-separated). A label dimension groups by the value KEY had on each row's system
// (live systems' from the view, ended ones' from the store's history); systems without KEY form a group of
// their own. Shared by gRPC's GetUsage and the console's /api/v1/usage, so both add up the same way.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "composer/engine/usage.h"
#include "composer/model/usage_grouping.h"

namespace switchyard {

struct UsageGroup {
  std::string tenant;  // set when grouped by tenant or system (a system is one tenant's)
  SystemId systemId;
  std::string systemName;
  std::string model;
  std::map<std::string, std::string> labels;  // per label key grouped by: its value; absent where the systems have none
  double gpuSeconds = 0;
  double idleGpuSeconds = 0;
  double memoryGiBSeconds = 0;
  double deviceSeconds = 0;
  std::set<SystemId> systems;  // the systems the group adds up
};

struct UsageTotals {
  double gpuSeconds = 0, idleGpuSeconds = 0, memoryGiBSeconds = 0, deviceSeconds = 0;
};

// The report's rows added up per group, ordered by the grouped values (as the dimensions were given).
[[nodiscard]] std::vector<UsageGroup> groupUsage(const std::vector<UsageRow>& rows, const UsageGrouping& by);
[[nodiscard]] UsageTotals totalUsage(const std::vector<UsageRow>& rows);

}  // namespace switchyard
