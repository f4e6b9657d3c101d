// Small JSON pieces every Redfish resource file builds with: a link, a collection, and the URIs of the
// resources others link to. Internal to bmc/.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "bmc/redfish_resources.h"

namespace switchyard::bmc::redfish_json {

inline json odataRef(const std::string& uri) { return {{"@odata.id", uri}}; }

// A resource collection of `type` (e.g. "ResourceBlockCollection") with these members.
inline json collection(const std::string& uri, const std::string& type, const std::string& name, const std::vector<std::string>& members) {
  json m = json::array();
  for (const auto& member : members) m.push_back(odataRef(member));
  return {{"@odata.id", uri}, {"@odata.type", "#" + type + "." + type}, {"Name", name}, {"Members", m}, {"Members@odata.count", members.size()}};
}

// An integer JSON value read at full width, anything above `cap` as cap + 1: get<int>() would cut 4294967298 to 2
// and compose that. The value must be an integer (is_number_integer()).
inline long long wholeNumberUpTo(const json& v, long long cap) {
  if (v.is_number_unsigned()) return v.get<unsigned long long>() > static_cast<unsigned long long>(cap) ? cap + 1 : static_cast<long long>(v.get<unsigned long long>());
  return v.get<long long>();
}

inline std::string systemUri(const std::string& id) { return fmt::format("{}/Systems/{}", kRoot, id); }
inline std::string blockUri(const std::string& id) { return fmt::format("{}/CompositionService/ResourceBlocks/{}", kRoot, id); }

}  // namespace switchyard::bmc::redfish_json
