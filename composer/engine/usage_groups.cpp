#include "composer/engine/usage_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <tuple>

namespace switchyard {

namespace {

constexpr std::string_view kDimensions = "tenant, system, model or label:KEY, or several comma-separated (tenant,label:team)";

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

Result<UsageGrouping> UsageGrouping::parse(std::string_view text) {
  UsageGrouping g;
  if (trimmed(text).empty()) {
    g.tenant = g.system = g.model = true;
    return g;
  }
  static const std::regex kLabelKey("[A-Za-z0-9][A-Za-z0-9._/-]{0,62}");
  std::set<std::string> seen;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item(trimmed(text.substr(start, comma - start)));
    start = comma + 1;
    if (item.empty()) return fail(Code::kInvalidArgument, fmt::format("by '{}': an empty dimension; group by {}", text, kDimensions));
    if (!seen.insert(item).second) return fail(Code::kInvalidArgument, fmt::format("by '{}': {} is named twice", text, item));
    if (item == "tenant") g.tenant = true;
    else if (item == "system") g.system = true;
    else if (item == "model") g.model = true;
    else if (item.starts_with("label:")) {
      std::string key = item.substr(6);
      if (!std::regex_match(key, kLabelKey))
        return fail(Code::kInvalidArgument, fmt::format("by '{}': '{}' is not a label key (1-63 letters, digits, '.', '_', '/' or '-', "
                                                        "starting with a letter or digit)", text, key));
      g.labelKeys.push_back(std::move(key));
    } else {
      return fail(Code::kInvalidArgument, fmt::format("by '{}': no dimension '{}'; group by {}", text, item, kDimensions));
    }
  }
  return g;
}

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
