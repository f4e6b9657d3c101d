#include "composer/engine/usage_groups.h"

#include <map>
#include <tuple>

namespace switchyard {

std::vector<UsageGroup> groupUsage(const std::vector<UsageRow>& rows, const UsageGrouping& by) {
  // Keyed by the grouped values, so groups come out ordered by them; an absent label sorts before every value.
  using Key = std::tuple<std::string, std::string, std::string, std::vector<std::pair<bool, std::string>>>;
  std::map<Key, UsageGroup> groups;
  for (const auto& r : rows) {
    std::vector<std::pair<bool, std::string>> labelValues;
    for (const auto& k : by.labelKeys) {
      const auto it = r.labels.find(k);
      labelValues.emplace_back(it != r.labels.end(), it != r.labels.end() ? it->second : std::string());
    }
    const bool withTenant = by.tenant || by.system;
    Key key{withTenant ? r.tenant : std::string(), by.system ? r.systemId : std::string(), by.model ? r.model : std::string(), labelValues};
    auto [it, fresh] = groups.try_emplace(std::move(key));
    UsageGroup& g = it->second;
    if (fresh) {
      if (withTenant) g.tenant = r.tenant;
      if (by.system) g.systemId = r.systemId, g.systemName = r.systemName;
      if (by.model) g.model = r.model;
      for (std::size_t i = 0; i < by.labelKeys.size(); ++i)
        if (labelValues[i].first) g.labels[by.labelKeys[i]] = labelValues[i].second;
    }
    g.gpuSeconds += r.gpuSeconds;
    g.idleGpuSeconds += r.idleGpuSeconds;
    g.memoryGiBSeconds += r.memoryGiBSeconds;
    g.deviceSeconds += r.deviceSeconds;
    g.systems.insert(r.systemId);
  }
  std::vector<UsageGroup> out;
  out.reserve(groups.size());
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  return out;
}

UsageTotals totalUsage(const std::vector<UsageRow>& rows) {
  UsageTotals t;
  for (const auto& r : rows) {
    t.gpuSeconds += r.gpuSeconds;
    t.idleGpuSeconds += r.idleGpuSeconds;
    t.memoryGiBSeconds += r.memoryGiBSeconds;
    t.deviceSeconds += r.deviceSeconds;
  }
  return t;
}

}  // namespace switchyard
