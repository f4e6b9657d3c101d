// Reading Redfish resources as the fabric driver does: ids from URIs, links, members and health. Internal to
// fabric/redfish (redfish_fabric.cpp, redfish_inventory.cpp).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "composer/model/call_options.h"
#include "composer/model/topology.h"
#include "net/redfish_client.h"

namespace switchyard::redfish {

using nlohmann::json;

using switchyard::deadlineAfter;

inline std::string lastSegment(const std::string& uri) {
  const auto slash = uri.find_last_of('/', uri.size() > 1 ? uri.size() - 2 : 0);
  std::string s = slash == std::string::npos ? uri : uri.substr(slash + 1);
  if (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// ".../Switches/CXL1/Ports/U1" -> "CXL1-U1"
inline PortId portIdOf(const std::string& uri) {
  const auto ports = uri.rfind("/Ports/");
  const auto switches = uri.rfind("/Switches/", ports);
  if (ports == std::string::npos || switches == std::string::npos) return lastSegment(uri);
  const std::string sw = uri.substr(switches + 10, ports - switches - 10);
  return sw + "-" + lastSegment(uri);
}

inline std::vector<std::string> links(const json& resource, const char* key) {
  std::vector<std::string> out;
  if (!resource.contains("Links") || !resource["Links"].contains(key) || !resource["Links"][key].is_array()) return out;
  for (const auto& l : resource["Links"][key])
    if (l.contains("@odata.id") && l["@odata.id"].is_string()) out.push_back(l["@odata.id"].get<std::string>());
  return out;
}

inline std::vector<std::string> members(const json& collection) {
  std::vector<std::string> out;
  if (!collection.contains("Members") || !collection["Members"].is_array()) return out;
  for (const auto& m : collection["Members"])
    if (m.contains("@odata.id") && m["@odata.id"].is_string()) out.push_back(m["@odata.id"].get<std::string>());
  return out;
}

inline std::string text(const json& j, const char* key, std::string fallback = {}) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}

inline DeviceHealth healthOf(const json& resource) {
  const std::string h = resource.contains("Status") ? text(resource["Status"], "Health", "OK") : "OK";
  return h == "Critical" ? DeviceHealth::kCritical : h == "Warning" ? DeviceHealth::kWarning : DeviceHealth::kOk;
}

}  // namespace switchyard::redfish
