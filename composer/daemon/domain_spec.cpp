#include "composer/daemon/domain_spec.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <set>
#include <vector>

namespace switchyard {

namespace {

std::vector<std::string> splitOn(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

Result<int> number(const std::string& spec, const std::string& key, const std::string& value, int max) {
  int n = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || end != value.data() + value.size() || n < 0 || n > max)
    return fail(Code::kInvalidArgument, fmt::format("--domain '{}': {}={} is not a number from 0 to {}", spec, key, value, max));
  return n;
}

bool validName(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

}  // namespace

Result<DomainSpec> parseDomainSpec(const std::string& text) {
  const auto usage = fmt::format("--domain '{}': expected NAME=simulated[,topology=FILE|,generate-gpus=N][,state=FILE|none]"
                                 "[,latency-ms=N] or NAME=redfish,url=https://HOST[:PORT][,fabric=ID][,user=NAME]"
                                 "[,password-file=FILE][,ca=FILE] or NAME=switchtec,endpoint=HOST[:PORT]|/dev/switchtecN"
                                 " or NAME=cxl,endpoint=HOST[:PORT][,dialect=spec|jackrabbit] or NAME=qemu,pool=FILE",
                                 text);
  const auto eq = text.find('=');
  if (eq == std::string::npos) return fail(Code::kInvalidArgument, usage);
  DomainSpec spec;
  spec.name = text.substr(0, eq);
  if (!validName(spec.name))
    return fail(Code::kInvalidArgument,
                fmt::format("--domain '{}': the name '{}' must be 1 to 63 letters, digits, '-', '_' or '.'", text, spec.name));
  auto parts = splitOn(text.substr(eq + 1), ',');
  spec.driver = parts.front();
  if (spec.driver != "simulated" && spec.driver != "redfish" && spec.driver != "switchtec" && spec.driver != "cxl" && spec.driver != "qemu")
    return fail(Code::kInvalidArgument, fmt::format("{}; '{}' is not a driver (simulated, redfish, switchtec, cxl or qemu)", usage, spec.driver));
  const std::set<std::string> allowed = spec.driver == "simulated"  ? std::set<std::string>{"topology", "generate-gpus", "state", "latency-ms"}
                                        : spec.driver == "redfish" ? std::set<std::string>{"url", "fabric", "user", "password-file", "ca"}
                                        : spec.driver == "cxl"     ? std::set<std::string>{"endpoint", "dialect"}
                                        : spec.driver == "qemu"    ? std::set<std::string>{"pool"}
                                                                   : std::set<std::string>{"endpoint"};
  std::set<std::string> seen;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const auto kv = parts[i].find('=');
    if (kv == std::string::npos || kv == 0) return fail(Code::kInvalidArgument, fmt::format("{}; '{}' is not KEY=VALUE", usage, parts[i]));
    const std::string key = parts[i].substr(0, kv), value = parts[i].substr(kv + 1);
    if (!allowed.contains(key))
      return fail(Code::kInvalidArgument, fmt::format("--domain '{}': '{}' is not a key of the {} driver", text, key, spec.driver));
    if (!seen.insert(key).second) return fail(Code::kInvalidArgument, fmt::format("--domain '{}': '{}' is given twice", text, key));
    if (value.empty()) return fail(Code::kInvalidArgument, fmt::format("--domain '{}': '{}' has no value", text, key));
    if (key == "topology") spec.topology = value;
    else if (key == "generate-gpus") {
      SY_ASSIGN(spec.generateGpus, number(text, key, value, 1'000'000));
      if (spec.generateGpus == 0) return fail(Code::kInvalidArgument, fmt::format("--domain '{}': generate-gpus must be at least 1", text));
    } else if (key == "state") spec.state = value;
    else if (key == "latency-ms") {
      SY_ASSIGN(spec.latencyMs, number(text, key, value, 600'000));
    } else if (key == "url") spec.url = value;
    else if (key == "fabric") spec.fabric = value;
    else if (key == "user") spec.user = value;
    else if (key == "password-file") spec.passwordFile = value;
    else if (key == "ca") spec.ca = value;
    else if (key == "endpoint") spec.endpoint = value;
    else if (key == "pool") spec.pool = value;
    else if (key == "dialect") {
      if (value != "spec" && value != "jackrabbit")
        return fail(Code::kInvalidArgument, fmt::format("--domain '{}': dialect is spec or jackrabbit, not '{}'", text, value));
      spec.dialect = value;
    }
  }
  if (spec.driver == "simulated" && !spec.topology.empty() && spec.generateGpus > 0)
    return fail(Code::kInvalidArgument, fmt::format("--domain '{}': topology and generate-gpus exclude each other", text));
  if (spec.driver == "simulated" && spec.topology.empty() && spec.generateGpus == 0)
    return fail(Code::kInvalidArgument, fmt::format("--domain '{}': a simulated domain needs topology=FILE or generate-gpus=N", text));
  if (spec.driver == "redfish" && spec.url.empty())
    return fail(Code::kInvalidArgument, fmt::format("--domain '{}': a redfish domain needs url=https://HOST[:PORT]", text));
  if (spec.driver == "switchtec" && spec.endpoint.empty())
    return fail(Code::kInvalidArgument, fmt::format("--domain '{}': a switchtec domain needs endpoint=HOST[:PORT] or endpoint=/dev/switchtecN", text));
  if (spec.driver == "cxl" && spec.endpoint.empty())
    return fail(Code::kInvalidArgument, fmt::format("--domain '{}': a cxl domain needs endpoint=HOST[:PORT] (the switch's FM-API over MCTP/TCP)", text));
  if (spec.driver == "qemu" && spec.pool.empty())
    return fail(Code::kInvalidArgument, fmt::format("--domain '{}': a qemu domain needs pool=FILE (its VMs and device pool; docs/qemu.md)", text));
  return spec;
}

}  // namespace switchyard
