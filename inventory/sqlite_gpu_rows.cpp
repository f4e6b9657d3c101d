#include "inventory/sqlite_gpu_rows.h"

#include <fmt/format.h>

#include "inventory/sqlite_columns.h"

namespace switchyard {

namespace {

// The statements of one table, made once (a system is written at every step of its operations).
struct GpuRowsSql {
  std::string remove, insert, select;
  GpuRowsSql(std::string_view table, std::string_view ownerColumn, std::string_view columns)
      : remove(fmt::format("DELETE FROM {} WHERE {} = ?1", table, ownerColumn)),
        insert(fmt::format("INSERT INTO {} VALUES (?1, ?2, ?3, ?4, ?5)", table)),
        select(fmt::format("SELECT {} FROM {} WHERE {} = ?1 ORDER BY position", columns, table, ownerColumn)) {}
};

const GpuRowsSql& instancesSql(GpuRowsOwner kind) {
  static const GpuRowsSql system("system_gpu_instances", "system_id", "device_id, profile, start");
  static const GpuRowsSql operation("operation_gpu_instances", "operation_id", "device_id, profile, start");
  return kind == GpuRowsOwner::kSystem ? system : operation;
}

const GpuRowsSql& sharesSql(GpuRowsOwner kind) {
  static const GpuRowsSql system("system_gpu_shares", "system_id", "share_id, device_id, milli");
  static const GpuRowsSql operation("operation_gpu_shares", "operation_id", "share_id, device_id, milli");
  return kind == GpuRowsOwner::kSystem ? system : operation;
}

}  // namespace

Result<void> writeGpuInstances(SqliteDb& db, GpuRowsOwner kind, const std::string& owner, const std::vector<GpuInstance>& instances) {
  const GpuRowsSql& sql = instancesSql(kind);
  SY_ASSIGN(auto del, db.prepare(sql.remove));
  SY_TRY(del.bind(1, owner).run());
  for (std::size_t i = 0; i < instances.size(); ++i) {
    SY_ASSIGN(auto ins, db.prepare(sql.insert));
    SY_TRY(ins.bind(1, owner).bind(2, static_cast<int>(i)).bind(3, instances[i].deviceId).bind(4, toString(instances[i].profile))
               .bind(5, instances[i].start).run());
  }
  return {};
}

Result<std::vector<GpuInstance>> loadGpuInstances(SqliteDb& db, GpuRowsOwner kind, const std::string& owner) {
  SY_ASSIGN(auto st, db.prepare(instancesSql(kind).select));
  st.bind(1, owner);
  std::vector<GpuInstance> out;
  while (true) {
    SY_ASSIGN(bool row, st.step());
    if (!row) break;
    SY_ASSIGN(MigProfile profile, parseColumn<MigProfile>(st.text(1), parseMigProfile, "MIG profile"));
    out.push_back({st.text(0), profile, static_cast<int>(st.integer(2))});
  }
  st.reset();
  return out;
}

Result<void> writeGpuShares(SqliteDb& db, GpuRowsOwner kind, const std::string& owner, const std::vector<GpuShare>& shares) {
  const GpuRowsSql& sql = sharesSql(kind);
  SY_ASSIGN(auto del, db.prepare(sql.remove));
  SY_TRY(del.bind(1, owner).run());
  for (std::size_t i = 0; i < shares.size(); ++i) {
    SY_ASSIGN(auto ins, db.prepare(sql.insert));
    SY_TRY(ins.bind(1, owner).bind(2, static_cast<int>(i)).bind(3, shares[i].id).bind(4, shares[i].deviceId).bind(5, shares[i].milli).run());
  }
  return {};
}

Result<std::vector<GpuShare>> loadGpuShares(SqliteDb& db, GpuRowsOwner kind, const std::string& owner) {
  SY_ASSIGN(auto st, db.prepare(sharesSql(kind).select));
  st.bind(1, owner);
  std::vector<GpuShare> out;
  while (true) {
    SY_ASSIGN(bool row, st.step());
    if (!row) break;
    out.push_back({static_cast<int>(st.integer(0)), st.text(1), static_cast<int>(st.integer(2))});
  }
  st.reset();
  return out;
}

}  // namespace switchyard
