#include "composer/model/endpoint_demand.h"

#include <fmt/format.h>

namespace switchyard {

std::string_view toString(Affinity v) { return v == Affinity::kSwitch ? "switch" : "domain"; }

std::optional<Affinity> parseAffinity(std::string_view s) {
  if (s == "switch") return Affinity::kSwitch;
  if (s == "domain" || s.empty()) return Affinity::kDomain;
  return std::nullopt;
}

bool isEndpointKind(DeviceKind kind) { return kind == DeviceKind::kNvme || kind == DeviceKind::kNic || kind == DeviceKind::kOther; }

std::optional<AffinityRule> parseAffinityRule(std::string_view text, std::string& error) {
  const auto colon = text.find(':');
  const auto eq = text.find('=');
  if (colon == std::string_view::npos || eq == std::string_view::npos || eq < colon || text.substr(colon + 1, eq - colon - 1) != "gpu") {
    error = fmt::format("'{}' is not KIND:gpu=switch|domain (e.g. nic:gpu=switch)", text);
    return std::nullopt;
  }
  const auto kind = parseKindName(text.substr(0, colon));
  if (!kind || !isEndpointKind(kind->kind)) {
    error = fmt::format("'{}': the kind must be nic, nvme or another class asked for by count", text.substr(0, colon));
    return std::nullopt;
  }
  const auto affinity = parseAffinity(text.substr(eq + 1));
  if (!affinity || text.substr(eq + 1).empty()) {
    error = fmt::format("'{}': the affinity must be switch or domain", text.substr(eq + 1));
    return std::nullopt;
  }
  return AffinityRule{kind->kind, *affinity, kind->deviceClass};
}

std::string describe(const EndpointDemand& d) {
  std::string out = fmt::format("{} {}", d.count, d.kind == DeviceKind::kNvme ? "NVMe drive(s)" : d.kind == DeviceKind::kNic ? "NIC(s)" : kindName(d) + "(s)");
  if (!d.model.empty()) out += " " + d.model;
  if (d.minCapacityGiB > 0) out += fmt::format(" >= {} GiB", d.minCapacityGiB);
  if (d.minSpeedGbps > 0) out += fmt::format(" >= {} Gb/s", d.minSpeedGbps);
  if (d.affinity == Affinity::kSwitch) out += " under the GPUs' switches";
  return out;
}

std::string describe(const std::vector<EndpointDemand>& demands) {
  std::string out;
  for (const auto& d : demands) out += (out.empty() ? "" : ", ") + describe(d);
  return out;
}

std::string invalidDemand(const EndpointDemand& d) {
  if (!isEndpointKind(d.kind))
    return fmt::format("a demand by kind names nvme, nic or another class, not {} (GPUs and pooled memory are asked for their own way)",
                       toString(d.kind));
  if (d.kind == DeviceKind::kOther) {
    if (!isClassName(d.deviceClass)) return fmt::format("'{}' is not a class of device to ask for by count ({})", d.deviceClass, kKindNameRule);
  } else if (!d.deviceClass.empty()) {
    return fmt::format("a {} demand names no class", toString(d.kind));
  }
  const std::string kind = kindName(d);
  if (d.count < 1 || d.count > kMaxEndpointsPerDemand) return fmt::format("{} count must be 1-{} (got {})", kind, kMaxEndpointsPerDemand, d.count);
  if (d.minCapacityGiB < 0) return fmt::format("{} minimum capacity must be >= 0 GiB", kind);
  if (d.minSpeedGbps < 0 || d.minSpeedGbps > kMaxLinkSpeedGbps)
    return fmt::format("{} minimum speed must be 0-{} Gb/s (got {})", kind, kMaxLinkSpeedGbps, d.minSpeedGbps);
  if (d.minSpeedGbps > 0 && d.kind != DeviceKind::kNic) return fmt::format("a minimum speed is for NICs; {} has none to ask for", kind);
  return {};
}

}  // namespace switchyard
