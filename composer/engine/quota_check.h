// What a tenant holds, counted as its quotas count it, and whether more would pass its limits (TenantQuota:
// max_gpus, max_systems, max_memory_gib, max_nvme, max_nics and max_endpoints per other class). Pure: the engine
// counts what the tenant's systems and running operations hold and asks here before it reserves anything more.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "composer/model/access.h"
#include "composer/model/error.h"
#include "composer/model/topology.h"

namespace switchyard {

// Devices as quotas count them: GPUs, pooled memory in GiB, drives, NICs, and other classes by name.
struct HeldDevices {
  int gpus = 0;
  int memoryGiB = 0;
  int drives = 0;
  int nics = 0;
  std::map<std::string, int, std::less<>> others;  // by class ("fpga")

  HeldDevices& operator+=(const HeldDevices& o);
  void add(const Device& d);
  [[nodiscard]] int other(std::string_view deviceClass) const;
};

struct TenantHolding {
  int systems = 0;
  HeldDevices held;
};

// kResourceExhausted, naming the limit, when `newSystems` more systems or `more` devices would take `tenant`
// past `quota`; a limit binds only where the request adds what it counts.
[[nodiscard]] Result<void> checkTenantQuota(std::string_view tenant, const TenantQuota& quota, const TenantHolding& now, int newSystems,
                                            const HeldDevices& more);

}  // namespace switchyard
