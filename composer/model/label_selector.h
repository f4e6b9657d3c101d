// Label selectors, as Kubernetes writes equality-based ones: a comma-separated list of requirements that
// must all hold: `team=vision` (or `team==vision`), `team!=vision` (the label is absent or differs), `gpu`
// (the label is present), `!gpu` (absent). `yardctl systems -l team=vision,env!=dev`.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/error.h"

namespace switchyard {

class LabelSelector {
 public:
  // The empty selector selects everything. Refuses an empty requirement, a key with spaces or '=', and an
  // operator without a key.
  [[nodiscard]] static Result<LabelSelector> parse(std::string_view text);
  [[nodiscard]] bool matches(const std::map<std::string, std::string>& labels) const;
  [[nodiscard]] bool empty() const { return requirements_.empty(); }

 private:
  enum class Op { kEquals, kNotEquals, kExists, kNotExists };
  struct Requirement {
    std::string key;
    Op op;
    std::string value;
  };
  std::vector<Requirement> requirements_;
};

}  // namespace switchyard
