#include "composer/engine/disruption_budget.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <limits>

namespace switchyard {

namespace {

Timestamp dayBefore(Timestamp now) { return now - std::chrono::duration_cast<Duration>(std::chrono::hours(24)).count(); }

}  // namespace

int DisruptionBudget::left(std::string_view tenant, std::optional<int> perDay, Timestamp now) {
  if (!perDay) return std::numeric_limits<int>::max();
  int used = 0;
  if (auto it = preempted_.find(tenant); it != preempted_.end())
    for (const auto& [at, gpus] : it->second)
      if (at > dayBefore(now)) used += gpus;
  return std::max(0, *perDay - used);
}

bool DisruptionBudget::expire(Timestamp now) {
  bool any = false;
  for (auto it = preempted_.begin(); it != preempted_.end();) {
    any |= std::erase_if(it->second, [&](const auto& e) { return e.first <= dayBefore(now); }) > 0;
    it = it->second.empty() ? preempted_.erase(it) : std::next(it);
  }
  return any;
}

void DisruptionBudget::record(std::string_view tenant, int gpus, Timestamp at) {
  auto it = preempted_.find(tenant);
  if (it == preempted_.end()) it = preempted_.emplace(std::string(tenant), std::vector<std::pair<Timestamp, int>>{}).first;
  it->second.emplace_back(at, gpus);
}

}  // namespace switchyard
