#include "composer/engine/quota_check.h"

#include <fmt/format.h>

#include <tuple>

namespace switchyard {

HeldDevices& HeldDevices::operator+=(const HeldDevices& o) {
  gpus += o.gpus;
  memoryGiB += o.memoryGiB;
  drives += o.drives;
  nics += o.nics;
  for (const auto& [deviceClass, n] : o.others) others[deviceClass] += n;
  return *this;
}

void HeldDevices::add(const Device& d) {
  switch (d.kind) {
    case DeviceKind::kGpu: ++gpus; break;
    case DeviceKind::kCxlMemory: memoryGiB += d.memoryGiB; break;
    case DeviceKind::kNvme: ++drives; break;
    case DeviceKind::kNic: ++nics; break;
    case DeviceKind::kOther: ++others[d.deviceClass]; break;
  }
}

int HeldDevices::other(std::string_view deviceClass) const {
  auto it = others.find(deviceClass);
  return it == others.end() ? 0 : it->second;
}

Result<void> checkTenantQuota(std::string_view tenant, const TenantQuota& quota, const TenantHolding& now, int newSystems, const HeldDevices& more) {
  if (quota.maxSystems && newSystems > 0 && now.systems + newSystems > *quota.maxSystems)
    return fail(Code::kResourceExhausted, fmt::format("tenant '{}' is at its quota of {} system(s) (it has {}); decompose one first", tenant,
                                                      *quota.maxSystems, now.systems));
  if (quota.maxGpus && more.gpus > 0 && now.held.gpus + more.gpus > *quota.maxGpus)
    return fail(Code::kResourceExhausted, fmt::format("tenant '{}' may hold {} GPU(s); it holds {} and this asks for {} more", tenant, *quota.maxGpus,
                                                      now.held.gpus, more.gpus));
  if (quota.maxMemoryGiB && more.memoryGiB > 0 && now.held.memoryGiB + more.memoryGiB > *quota.maxMemoryGiB)
    return fail(Code::kResourceExhausted,
                fmt::format("tenant '{}' may hold {} GiB of pooled memory; it holds {} GiB and this would add {} GiB (whole logical devices)", tenant,
                            *quota.maxMemoryGiB, now.held.memoryGiB, more.memoryGiB));
  auto byCount = [&](int limit, int held, int adding, std::string_view what) -> Result<void> {
    if (adding > 0 && held + adding > limit)
      return fail(Code::kResourceExhausted, fmt::format("tenant '{}' may hold {} {}; it holds {} and this asks for {} more", tenant, limit, what, held, adding));
    return {};
  };
  if (quota.maxDrives) SY_TRY(byCount(*quota.maxDrives, now.held.drives, more.drives, "NVMe drive(s)"));
  if (quota.maxNics) SY_TRY(byCount(*quota.maxNics, now.held.nics, more.nics, "NIC(s)"));
  for (const auto& [deviceClass, limit] : quota.maxEndpoints)
    SY_TRY(byCount(limit, now.held.other(deviceClass), more.other(deviceClass), fmt::format("{} device(s)", deviceClass)));
  return {};
}

}  // namespace switchyard
