// What a usage report adds up by (issue 63, item 4): any of tenant, system, model and label:KEY, comma-separated
// (`tenant,label:team`). A pure grammar shared by yardd (composer/engine/usage_groups.h adds the rows up) and
// yardctl (its table and CSV get one column per label grouped by), so both read a --by the same way.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "composer/model/error.h"

namespace switchyard {

struct UsageGrouping {
  bool tenant = false, system = false, model = false;
  std::vector<std::string> labelKeys;  // label:KEY dimensions, in the order given

  // "" is the finest grouping: tenant, system and model. Refuses an unknown dimension, one named twice and a
  // label key that no system could carry.
  [[nodiscard]] static Result<UsageGrouping> parse(std::string_view text);
};

}  // namespace switchyard
