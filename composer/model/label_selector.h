// Label selectors, as Kubernetes writes them: a comma-separated list of requirements that must all hold.
// Equality-based: `team=vision` (or `team==vision`), `team!=vision` (the label is absent or differs), `gpu`
// (the label is present), `!gpu` (absent). Set-based: `env in (dev,prod)` (present, with one of the values),
// `env notin (dev,prod)` (absent, or none of them). `yardctl systems -l 'team=vision,env notin (dev)'`.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/error.h"

namespace switchyard {

// A key a system's label may have: 1-63 letters, digits, '.', '_', '/' or '-', starting with a letter or digit.
[[nodiscard]] bool isLabelKey(std::string_view key);
inline constexpr std::string_view kLabelKeyRule = "1-63 letters, digits, '.', '_', '/' or '-', starting with a letter or digit";

class LabelSelector {
 public:
  // The empty selector selects everything. Refuses an empty requirement, a key with spaces or '=', an
  // operator without a key, an empty or unclosed value set.
  [[nodiscard]] static Result<LabelSelector> parse(std::string_view text);
  [[nodiscard]] bool matches(const std::map<std::string, std::string>& labels) const;
  [[nodiscard]] bool empty() const { return requirements_.empty(); }

 private:
  enum class Op { kEquals, kNotEquals, kExists, kNotExists, kIn, kNotIn };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;  // one for = and !=, the set for in and notin
  };
  std::vector<Requirement> requirements_;
};

}  // namespace switchyard
