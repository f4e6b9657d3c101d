// The MIG instances and time-sliced GPU shares that a system holds or an operation made, as the SQLite store keeps
// them: a table per kind and owner (system_gpu_instances, operation_gpu_instances, system_gpu_shares,
// operation_gpu_shares), rows in the owner's order. Written whole (the owner's rows replaced), read in order.
#pragma once

#include <string>
#include <vector>

#include "composer/model/composition.h"
#include "inventory/sqlite_db.h"

namespace switchyard {

enum class GpuRowsOwner { kSystem, kOperation };

[[nodiscard]] Result<void> writeGpuInstances(SqliteDb& db, GpuRowsOwner kind, const std::string& owner, const std::vector<GpuInstance>& instances);
[[nodiscard]] Result<std::vector<GpuInstance>> loadGpuInstances(SqliteDb& db, GpuRowsOwner kind, const std::string& owner);
[[nodiscard]] Result<void> writeGpuShares(SqliteDb& db, GpuRowsOwner kind, const std::string& owner, const std::vector<GpuShare>& shares);
[[nodiscard]] Result<std::vector<GpuShare>> loadGpuShares(SqliteDb& db, GpuRowsOwner kind, const std::string& owner);

}  // namespace switchyard
