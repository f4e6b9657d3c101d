// `yardctl usage` as a table and as CSV (for a billing system's import): one column per label key the rows are
// grouped by (--by label:team, read by composer/model/usage_grouping.h as yardd reads it).
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/v1/switchyard.pb.h"

namespace yardctl {

void printUsage(const switchyard::v1::UsageResponse& r, const std::vector<std::string>& labelKeys, std::ostream& out);
// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
void printUsageCsv(const switchyard::v1::UsageResponse& r, const std::vector<std::string>& labelKeys, std::ostream& out);

}  // namespace yardctl
