#include "composer/model/usage_grouping.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "composer/model/label_selector.h"

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
      if (!isLabelKey(key)) return fail(Code::kInvalidArgument, fmt::format("by '{}': '{}' is not a label key ({})", text, key, kLabelKeyRule));
      g.labelKeys.push_back(std::move(key));
    } else {
      return fail(Code::kInvalidArgument, fmt::format("by '{}': no dimension '{}'; group by {}", text, item, kDimensions));
    }
  }
  return g;
}

}  // namespace switchyard
