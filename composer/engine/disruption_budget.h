// A tenant's disruption budget (TenantQuota::maxPreemptedGpusPerDay, ADR 0017): how many of its GPUs preemption
// took in the last 24 hours, so that the engine's preemption passes over a system that would take its tenant past
// the budget. One of the engine's parts (issue 59): it owns the record of what was preempted and nothing else.
// Memory only (a restart forgets it, as the ADR says); control thread only.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "composer/model/clock.h"

namespace switchyard {

class DisruptionBudget {
 public:
  // GPUs of `tenant` that may still be preempted at `now`, given its budget per day (none: INT_MAX). Forgets
  // what was preempted a day or more before `now`.
  [[nodiscard]] int left(std::string_view tenant, std::optional<int> perDay, Timestamp now);
  // Preemption took `gpus` of `tenant`'s GPUs at `at` (when their decompose started).
  void record(std::string_view tenant, int gpus, Timestamp at);
  // Forgets what was preempted a day or more before `now`; answers whether anything was (a budget grew back).
  bool expire(Timestamp now);

 private:
  std::map<std::string, std::vector<std::pair<Timestamp, int>>, std::less<>> preempted_;
};

}  // namespace switchyard
