#include "bmc/bmc_reset_hosts.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <thread>

namespace switchyard::bmc {

HostPolicy BmcResetHosts::policy(const HostId& host) const {
  return options_.bmcs.contains(host) ? HostPolicy::kBmcReset : HostPolicy::kUnset;
}

std::string BmcResetHosts::status(const HostId& host) const {
  auto it = options_.bmcs.find(host);
  return it == options_.bmcs.end() ? "" : fmt::format("BMC at {}", it->second.url);
}

Result<std::unique_ptr<HostBmc>> BmcResetHosts::connect(const HostId& host, const CallOptions& options) const {
  auto it = options_.bmcs.find(host);
  if (it == options_.bmcs.end()) return fail(Code::kFailedPrecondition, fmt::format("host {} has no BMC configured (--host-bmc)", host));
  HostBmcOptions o = it->second;
  o.timeout = std::min(o.timeout, options.timeout);
  auto bmc = HostBmc::connect(o);
  if (!bmc) return fail(bmc.error().code, fmt::format("BMC of {} at {}: {}", host, o.url, bmc.error().message));
  return bmc;
}

Result<void> BmcResetHosts::waitFor(HostBmc& bmc, const HostId& host, std::string_view wanted, std::chrono::steady_clock::time_point deadline) const {
  std::string state;
  while (true) {
    SY_ASSIGN(state, bmc.powerState());
    if (state == wanted) return {};
    if (std::chrono::steady_clock::now() >= deadline)
      return fail(Code::kDeadlineExceeded, fmt::format("host {} is still {} (waiting for {})", host, state, wanted));
    std::this_thread::sleep_for(options_.pollInterval);
  }
}

Result<std::vector<HostDeviceIdentity>> BmcResetHosts::admit(const HostId& host, const HostChange& change, const CallOptions& options) {
  const auto& devices = change.devices;
  if (!change.instances.empty())
    return fail(Code::kFailedPrecondition,
                fmt::format("host {} is bmc-reset: MIG instances are made on the host by its agent, and it has none", host));
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  SY_ASSIGN(auto bmc, connect(host, options));
  SY_ASSIGN(const std::string state, bmc->powerState());
  const std::string type = state == "Off" ? "On" : "ForceRestart";
  spdlog::info("host {}: {} through its BMC so it enumerates {} newly bound device(s)", host, type, devices.size());
  SY_TRY(bmc->reset(type));
  SY_TRY(waitFor(*bmc, host, "On", deadline));
  std::vector<HostDeviceIdentity> out;
  for (const auto& b : devices) out.push_back({b.deviceId, "", ""});
  return out;
}

// A power cycle destroys MIG instances too (they do not survive a reset), so leaving ones need nothing more;
// the host is off when the switch unbinds, and a powered-off host keeps nothing of a device's state.
Result<HostRelease> BmcResetHosts::release(const HostId& host, const HostChange& change, const CallOptions& options) {
  const auto& devices = change.devices;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  SY_ASSIGN(auto bmc, connect(host, options));
  SY_ASSIGN(const std::string state, bmc->powerState());
  if (state != "Off") {
    spdlog::info("host {}: shutting down through its BMC before {} device(s) are unbound", host, devices.size());
    auto shutdown = bmc->reset("GracefulShutdown");
    if (!shutdown && shutdown.error().code == Code::kInvalidArgument) shutdown = bmc->reset("ForceOff");
    SY_TRY(shutdown);
  }
  SY_TRY(waitFor(*bmc, host, "Off", deadline));
  return HostRelease{};
}

Result<void> BmcResetHosts::reset(const HostId& host, const std::string& resetType, const CallOptions& options) {
  SY_ASSIGN(auto bmc, connect(host, options));
  spdlog::info("host {}: {} through its BMC, as asked over Redfish", host, resetType);
  auto done = bmc->reset(resetType);
  if (!done) return fail(done.error().code, fmt::format("BMC of {}: {}", host, done.error().message));
  return {};
}

}  // namespace switchyard::bmc
