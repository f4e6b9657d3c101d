#include "inventory/sqlite_store.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "inventory/queued_codec.h"

#include "composer/model/fail_points.h"
#include "inventory/migrations.h"
#include "inventory/record_number.h"
#include "inventory/sqlite_gpu_rows.h"
#include "inventory/sqlite_columns.h"

namespace switchyard {

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::filesystem::path& path, Durability durability) {
  if (path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) return fail(Code::kUnavailable, fmt::format("{}: cannot create directory: {}", path.parent_path().string(), ec.message()));
  }
  SY_ASSIGN(auto db, SqliteDb::open(path, durability));
  // The pool's state, the audit trail and who asked for what: for yardd's user alone (an existing file made
  // 0644 by an older yardd is tightened too), with its journal beside it.
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::error_code ignored;
    const std::filesystem::path file = path.string() + suffix;
    if (std::filesystem::exists(file, ignored))
      std::filesystem::permissions(file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                                   std::filesystem::perm_options::replace, ignored);
  }
  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(db), nullptr));
  if (auto r = store->checkIntegrity(path); !r) return fail(r.error().wrap(path.string()));
  if (auto r = store->migrate(); !r) return fail(r.error().wrap(path.string()));
  // The history's readers: opened once the schema is the newest (a reader sees only what was committed).
  SY_ASSIGN(store->reader_, SqliteDb::open(path, durability));
  return store;
}

Result<void> SqliteStore::checkIntegrity(const std::filesystem::path& path) {
  // A damaged file is refused at start, naming what is wrong, not at the first write that trips over it. The
  // full check, not quick_check: only it compares each index with its table, and an index that disagrees
  // passed quick_check and then failed yardd's first write (exit 75, and again after every restart).
  auto stmt = db_->prepare("PRAGMA integrity_check(8)");
  if (!stmt) return fail(Code::kFailedPrecondition, fmt::format("the database is damaged: {}; restore it from a backup", stmt.error().message));
  std::vector<std::string> problems;
  while (true) {
    auto row = stmt->step();
    if (!row) return fail(Code::kFailedPrecondition, fmt::format("the database is damaged: {}; restore it from a backup", row.error().message));
    if (!*row) break;
    if (std::string line = stmt->text(0); line != "ok") problems.push_back(std::move(line));
  }
  if (problems.empty()) return {};
  // Indexes are derived from the tables: rebuilding them loses nothing.
  const bool onlyIndexes = std::all_of(problems.begin(), problems.end(), [](const std::string& p) {
    return p.find(" from index ") != std::string::npos || p.starts_with("wrong # of entries in index ") ||
           p.find("missing from index") != std::string::npos || p.starts_with("non-unique entry in index ");
  });
  if (onlyIndexes)
    return fail(Code::kFailedPrecondition,
                fmt::format("the database's indexes disagree with its tables (PRAGMA integrity_check: {}); nothing in the tables is lost: "
                            "with yardd stopped, rebuild them with `sqlite3 {} REINDEX` (Debian package sqlite3), then start yardd",
                            fmt::join(problems, "; "), path.string()));
  return fail(Code::kFailedPrecondition,
              fmt::format("the database is damaged (PRAGMA integrity_check: {}); restore it from a backup", fmt::join(problems, "; ")));
}

Result<int> SqliteStore::schemaVersion() {
  SY_ASSIGN(auto stmt, db_->prepare("PRAGMA user_version"));
  SY_ASSIGN(bool row, stmt.step());
  const int version = row ? static_cast<int>(stmt.integer(0)) : 0;
  stmt.reset();
  return version;
}

Result<void> SqliteStore::migrate() {
  SY_ASSIGN(int current, schemaVersion());
  const auto& migrations = schemaMigrations();
  const int newest = migrations.empty() ? 0 : migrations.back().version;
  if (current > newest)
    return fail(Code::kFailedPrecondition,
                fmt::format("database schema version {} is newer than this yardd understands ({}); upgrade yardd", current, newest));
  for (const auto& m : migrations) {
    if (m.version <= current) continue;
    Transaction tx(*db_);
    SY_TRY(tx.begin());
    if (auto r = db_->exec(m.sql); !r) return fail(r.error().wrap(fmt::format("migration {} ({})", m.version, m.description)));
    SY_TRY(db_->exec(fmt::format("PRAGMA user_version = {}", m.version)));
    SY_TRY(tx.commit());
  }
  return {};
}

Result<WriterEpoch> SqliteStore::claimWriter() {
  systemRows_.forgetAll();  // another writer may have written since this one last did
  Transaction tx(*db_);
  SY_TRY(tx.begin());
  SY_ASSIGN(auto bump, db_->prepare("UPDATE writer SET epoch = epoch + 1 WHERE id = 1"));
  SY_TRY(bump.run());
  SY_ASSIGN(WriterEpoch epoch, currentWriter());
  SY_TRY(tx.commit());
  return epoch;
}

Result<WriterEpoch> SqliteStore::currentWriter() {
  SY_ASSIGN(auto read, db_->prepare("SELECT epoch FROM writer WHERE id = 1"));
  SY_ASSIGN(bool row, read.step());
  const auto epoch = row ? static_cast<WriterEpoch>(read.integer(0)) : 0;
  read.reset();
  if (!row) return fail(Code::kInternal, "store has no writer row");
  return epoch;
}

Result<void> SqliteStore::checkWriter(WriterEpoch epoch) {
  SY_ASSIGN(WriterEpoch current, currentWriter());
  if (current != epoch || epoch == 0)
    return fail(Code::kFailedPrecondition,
                fmt::format("fenced: this writer's epoch is {}, the store's is {} (another yardd has taken over the store)", epoch, current));
  return {};
}

Result<void> SqliteStore::write(std::span<const StoreWrite> batch, WriterEpoch epoch) {
  Transaction tx(*db_);
  // What the batch wrote of systems' child rows counts once it is committed (a failed write is rolled back).
  struct Staged {
    SystemRowsWritten& rows;
    bool committed = false;
    ~Staged() {
      if (!committed) rows.rolledBack();
    }
  } staged{systemRows_};
  SY_TRY(tx.begin());
  SY_TRY(checkWriter(epoch));
  for (const auto& w : batch) {
    auto r = std::visit([this](const auto& item) { return apply(item); }, w);
    if (!r) return r;
  }
  SY_TRY(failpoints::hit("store.before-commit"));  // an injected error rolls the transaction back
  SY_TRY(tx.commit());
  systemRows_.committed();
  staged.committed = true;
  failpoints::crashPoint("store.after-commit");
  return {};
}

Result<void> SqliteStore::apply(const PutInventory& w) {
  for (const char* table : {"host_upstream_ports", "hosts", "devices", "ports", "switches"})
    SY_TRY(db_->exec(fmt::format("DELETE FROM {}", table)));
  const Topology& t = w.topology;
  for (const auto& s : t.switches) {
    SY_ASSIGN(auto st, db_->prepare("INSERT INTO switches (id, kind, model, domain) VALUES (?1, ?2, ?3, ?4)"));
    SY_TRY(st.bind(1, s.id).bind(2, toString(s.kind)).bind(3, s.model).bind(4, s.domain).run());
  }
  for (const auto& p : t.ports) {
    SY_ASSIGN(auto st, db_->prepare("INSERT INTO ports VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    SY_TRY(st.bind(1, p.id).bind(2, p.switchId).bind(3, toString(p.kind)).bind(4, p.linkGeneration).bind(5, p.linkWidth).bind(6, p.peerPort).run());
  }
  for (const auto& h : t.hosts) {
    SY_ASSIGN(auto st, db_->prepare("INSERT INTO hosts VALUES (?1, ?2, ?3, ?4)"));
    SY_TRY(st.bind(1, h.id).bind(2, h.cpuCores).bind(3, h.memoryGiB).bind(4, h.maxDevices).run());
    for (std::size_t i = 0; i < h.upstreamPorts.size(); ++i) {
      SY_ASSIGN(auto us, db_->prepare("INSERT INTO host_upstream_ports VALUES (?1, ?2, ?3, ?4)"));
      SY_TRY(us.bind(1, h.id).bind(2, h.upstreamPorts[i].portId).bind(3, h.upstreamPorts[i].numaNode).bind(4, static_cast<int>(i)).run());
    }
  }
  for (const auto& d : t.devices) {
    SY_ASSIGN(auto st, db_->prepare("INSERT INTO devices (id, kind, port_id, model, memory_gib, serial, health, mig_capable, speed_gbps) "
                                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
    SY_TRY(st.bind(1, d.id).bind(2, kindName(d)).bind(3, d.portId).bind(4, d.model).bind(5, d.memoryGiB)
               .bind(6, d.serial).bind(7, toString(d.health)).bind(8, d.migCapable ? 1 : 0).bind(9, d.speedGbps).run());
  }
  return {};
}

Result<void> SqliteStore::apply(const PutSystem& w) {
  const System& s = w.system;
  nlohmann::json labels = s.labels;
  SY_ASSIGN(auto st, db_->prepare(
                         "INSERT INTO systems (id, number, name, host_id, tenant, state, active_operation, labels, created_at, updated_at, "
                         "lease_expires_at, priority_class, state_reason, asked) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
                         "ON CONFLICT(id) DO UPDATE SET "
                         "name=excluded.name, host_id=excluded.host_id, tenant=excluded.tenant, state=excluded.state, "
                         "active_operation=excluded.active_operation, labels=excluded.labels, updated_at=excluded.updated_at, "
                         "lease_expires_at=excluded.lease_expires_at, priority_class=excluded.priority_class, state_reason=excluded.state_reason, "
                         "asked=excluded.asked"));
  SY_TRY(st.bind(1, s.id).bind(2, static_cast<std::int64_t>(numberFromId(s.id))).bind(3, s.name).bind(4, s.hostId).bind(5, s.tenant)
             .bind(6, toString(s.state)).bind(7, s.activeOperation).bind(8, labels.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)).bind(9, s.createdAt).bind(10, s.updatedAt)
             .bind(11, s.leaseExpiresAt).bind(12, s.priorityClass).bind(13, s.stateReason)
             .bind(14, askedTextOf(s)).run());
  const bool last = s.state == SystemState::kDecomposed || s.state == SystemState::kFailed;  // written for the last time
  if (last) askedText_.erase(s.id);
  // The child rows: each table only when its rows differ from what is stored (system_rows_written.h).
  const SystemRowsWritten::Rows* stored = systemRows_.stored(s.id);
  if (stored == nullptr || stored->bindings != s.bindings) {
    SY_ASSIGN(auto del, db_->prepare("DELETE FROM system_devices WHERE system_id = ?1"));
    SY_TRY(del.bind(1, s.id).run());
    for (std::size_t i = 0; i < s.bindings.size(); ++i) {
      SY_ASSIGN(auto ins, db_->prepare("INSERT INTO system_devices VALUES (?1, ?2, ?3, ?4)"));
      SY_TRY(ins.bind(1, s.id).bind(2, s.bindings[i].deviceId).bind(3, s.bindings[i].upstreamPortId).bind(4, static_cast<int>(i)).run());
    }
  }
  if (stored == nullptr || stored->gpuInstances != s.gpuInstances) SY_TRY(writeGpuInstances(*db_, GpuRowsOwner::kSystem, s.id, s.gpuInstances));
  if (stored == nullptr || stored->gpuShares != s.gpuShares) SY_TRY(writeGpuShares(*db_, GpuRowsOwner::kSystem, s.id, s.gpuShares));
  if (stored == nullptr || stored->hostDevices != s.hostDevices) {
    SY_ASSIGN(auto delHost, db_->prepare("DELETE FROM system_host_devices WHERE system_id = ?1"));
    SY_TRY(delHost.bind(1, s.id).run());
    for (const auto& h : s.hostDevices) {
      SY_ASSIGN(auto ins, db_->prepare("INSERT INTO system_host_devices VALUES (?1, ?2, ?3, ?4)"));
      SY_TRY(ins.bind(1, s.id).bind(2, h.deviceId).bind(3, h.pciAddress).bind(4, h.uuid).run());
    }
  }
  if (last) systemRows_.ended(s.id);
  else systemRows_.wrote(s.id, {s.bindings, s.gpuInstances, s.gpuShares, s.hostDevices});
  return {};
}

const std::string& SqliteStore::askedTextOf(const System& s) {
  static const std::string kNothing;
  if (!s.asked) {
    askedText_.erase(s.id);
    return kNothing;
  }
  auto [it, fresh] = askedText_.try_emplace(s.id);
  if (fresh || !(it->second.asked == *s.asked))
    it->second = {*s.asked, queuedToJson(*s.asked).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
  return it->second.text;
}

Result<void> SqliteStore::apply(const PutOperation& w) {
  const Operation& op = w.operation;
  // A whole log replaces the child rows stored before; a new operation has none to delete (most whole logs are
  // an operation's first write, at acceptance).
  bool stored = false;
  if (w.allSteps) {
    SY_ASSIGN(auto exists, db_->prepare("SELECT 1 FROM operations WHERE id = ?1"));
    exists.bind(1, op.id);
    SY_ASSIGN(stored, exists.step());
    exists.reset();
  }
  SY_ASSIGN(auto st, db_->prepare(
                         "INSERT INTO operations (id, number, kind, system_id, host_id, state, explanation, error, created_at, updated_at, "
                         "requested_by, requested_role, requested_tenant, tenant, request_id, queued, replaces) "
                         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17) "
                         "ON CONFLICT(id) DO UPDATE SET host_id=excluded.host_id, "
                         "state=excluded.state, explanation=excluded.explanation, error=excluded.error, updated_at=excluded.updated_at, "
                         "queued=excluded.queued"));
  SY_TRY(st.bind(1, op.id).bind(2, static_cast<std::int64_t>(numberFromId(op.id))).bind(3, toString(op.kind)).bind(4, op.systemId)
             .bind(5, op.hostId).bind(6, toString(op.state)).bind(7, op.explanation).bind(8, op.error).bind(9, op.createdAt)
             .bind(10, op.updatedAt).bind(11, op.requestedBy.identity).bind(12, toString(op.requestedBy.role))
             .bind(13, op.requestedBy.tenant).bind(14, op.tenant).bind(15, op.requestId)
             .bind(16, op.queued ? queuedToJson(*op.queued).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : std::string())
             .bind(17, op.replaces.empty() ? std::string() : nlohmann::json(op.replaces).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
             .run());
  // A step's bindings never change once it is in the log: they are written with the whole log only.
  auto writeStep = [&](std::size_t i, bool withBindings) -> Result<void> {
    const Step& s = op.steps.at(i);
    SY_ASSIGN(auto ss, db_->prepare("INSERT INTO operation_steps VALUES (?1, ?2, ?3, '', '', ?4, ?5, ?6, ?7, ?8, ?9) "
                                    "ON CONFLICT(operation_id, position) DO UPDATE SET kind=excluded.kind, state=excluded.state, "
                                    "compensation=excluded.compensation, attempts=excluded.attempts, message=excluded.message, "
                                    "finished_at=excluded.finished_at, outcome_unknown=excluded.outcome_unknown"));
    SY_TRY(ss.bind(1, op.id).bind(2, static_cast<int>(i)).bind(3, s.kind).bind(4, toString(s.state)).bind(5, s.compensation ? 1 : 0)
               .bind(6, s.attempts).bind(7, s.message).bind(8, s.finishedAt).bind(9, s.outcomeUnknown ? 1 : 0).run());
    if (!withBindings) return {};
    if (stored) {
      SY_ASSIGN(auto del, db_->prepare("DELETE FROM operation_step_bindings WHERE operation_id = ?1 AND step = ?2"));
      SY_TRY(del.bind(1, op.id).bind(2, static_cast<int>(i)).run());
    }
    for (std::size_t j = 0; j < s.bindings.size(); ++j) {
      SY_ASSIGN(auto ins, db_->prepare("INSERT INTO operation_step_bindings VALUES (?1, ?2, ?3, ?4, ?5)"));
      SY_TRY(ins.bind(1, op.id).bind(2, static_cast<int>(i)).bind(3, static_cast<int>(j)).bind(4, s.bindings[j].deviceId)
                 .bind(5, s.bindings[j].upstreamPortId).run());
    }
    return {};
  };
  if (w.allSteps) {
    for (std::size_t i = 0; i < op.steps.size(); ++i) SY_TRY(writeStep(i, true));
    if (stored || !op.gpuInstances.empty()) SY_TRY(writeGpuInstances(*db_, GpuRowsOwner::kOperation, op.id, op.gpuInstances));
    if (stored || !op.gpuShares.empty()) SY_TRY(writeGpuShares(*db_, GpuRowsOwner::kOperation, op.id, op.gpuShares));
  } else {
    for (std::size_t i : w.changedSteps) SY_TRY(writeStep(i, false));
  }
  return {};
}

Result<void> SqliteStore::apply(const PutAssignment& w) {
  const DeviceAssignment& a = w.assignment;
  if (a.allocation == DeviceAllocation::kFree) {
    SY_ASSIGN(auto st, db_->prepare("DELETE FROM device_assignments WHERE device_id = ?1"));
    return st.bind(1, a.deviceId).run();
  }
  SY_ASSIGN(auto st, db_->prepare("INSERT OR REPLACE INTO device_assignments VALUES (?1, ?2, ?3)"));
  return st.bind(1, a.deviceId).bind(2, toString(a.allocation)).bind(3, a.owner).run();
}

Result<void> SqliteStore::apply(const PutEvent& w) {
  const Event& e = w.event;
  SY_ASSIGN(auto st, db_->prepare("INSERT INTO events (sequence, at, type, subject, message, actor, tenant, system_id) VALUES (?1, ?2, ?3, ?4, ?5, "
                                  "?6, ?7, ?8)"));
  return st.bind(1, static_cast<std::int64_t>(e.sequence)).bind(2, e.at).bind(3, e.type).bind(4, e.subject).bind(5, e.message)
      .bind(6, e.actor).bind(7, e.tenant).bind(8, e.systemId).run();
}

Result<void> SqliteStore::apply(const PutIdleStretch& w) {
  const IdleStretch& s = w.stretch;
  SY_ASSIGN(auto st, db_->prepare("INSERT INTO idle_stretches (device_id, from_at, to_at, system_id, tenant) VALUES (?1, ?2, ?3, ?4, ?5) "
                                  "ON CONFLICT(device_id, from_at) DO UPDATE SET to_at = MAX(to_at, excluded.to_at)"));
  return st.bind(1, s.deviceId).bind(2, s.from).bind(3, s.to).bind(4, s.systemId).bind(5, s.tenant).run();
}

Result<void> SqliteStore::apply(const PutDemand& w) {
  SY_ASSIGN(auto st, db_->prepare("INSERT INTO demand (gpus, same_switch, model) VALUES (?1, ?2, ?3)"));
  return st.bind(1, w.shape.gpus).bind(2, w.shape.sameSwitch ? 1 : 0).bind(3, w.shape.model).run();
}

Result<void> SqliteStore::apply(const PutAudit& w) {
  const AuditRecord& a = w.record;
  SY_ASSIGN(auto st, db_->prepare("INSERT INTO audit (sequence, at, identity, role, caller_tenant, action, target, tenant, result, message, "
                                  "operation_id, outcome, finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"));
  return st.bind(1, static_cast<std::int64_t>(a.sequence)).bind(2, a.at).bind(3, a.caller.identity).bind(4, toString(a.caller.role))
      .bind(5, a.caller.tenant).bind(6, a.action).bind(7, a.target).bind(8, a.tenant).bind(9, a.result).bind(10, a.message)
      .bind(11, a.operationId).bind(12, a.outcome).bind(13, a.finishedAt).run();
}

Result<void> SqliteStore::apply(const PutAuditOutcome& w) {
  SY_ASSIGN(auto st, db_->prepare("UPDATE audit SET outcome = ?2, finished_at = ?3 WHERE operation_id = ?1"));
  return st.bind(1, w.operationId).bind(2, w.outcome).bind(3, w.finishedAt).run();
}

Result<std::optional<Topology>> SqliteStore::loadInventory() {
  Topology t;
  SY_ASSIGN(auto sw, db_->prepare("SELECT id, kind, model, domain FROM switches ORDER BY rowid"));
  while (true) {
    SY_ASSIGN(bool row, sw.step());
    if (!row) break;
    SY_ASSIGN(auto kind, parseColumn<SwitchKind>(sw.text(1), parseSwitchKind, "switch kind"));
    t.switches.push_back({sw.text(0), kind, sw.text(2), sw.text(3)});
  }
  sw.reset();
  if (t.switches.empty()) return std::optional<Topology>{};
  SY_ASSIGN(auto ports, db_->prepare("SELECT id, switch_id, kind, link_generation, link_width, peer_port FROM ports ORDER BY rowid"));
  while (true) {
    SY_ASSIGN(bool row, ports.step());
    if (!row) break;
    SY_ASSIGN(auto kind, parseColumn<PortKind>(ports.text(2), parsePortKind, "port kind"));
    t.ports.push_back({ports.text(0), ports.text(1), kind, static_cast<int>(ports.integer(3)), static_cast<int>(ports.integer(4)), ports.text(5)});
  }
  ports.reset();
  SY_ASSIGN(auto hosts, db_->prepare("SELECT id, cpu_cores, memory_gib, max_devices FROM hosts ORDER BY rowid"));
  while (true) {
    SY_ASSIGN(bool row, hosts.step());
    if (!row) break;
    t.hosts.push_back({hosts.text(0), {}, static_cast<int>(hosts.integer(1)), static_cast<int>(hosts.integer(2)), static_cast<int>(hosts.integer(3))});
  }
  hosts.reset();
  for (auto& h : t.hosts) {
    SY_ASSIGN(auto usp, db_->prepare("SELECT port_id, numa_node FROM host_upstream_ports WHERE host_id = ?1 ORDER BY position"));
    usp.bind(1, h.id);
    while (true) {
      SY_ASSIGN(bool row, usp.step());
      if (!row) break;
      h.upstreamPorts.push_back({usp.text(0), static_cast<int>(usp.integer(1))});
    }
    usp.reset();
  }
  SY_ASSIGN(auto dev, db_->prepare("SELECT id, kind, port_id, model, memory_gib, serial, health, mig_capable, speed_gbps FROM devices ORDER BY rowid"));
  while (true) {
    SY_ASSIGN(bool row, dev.step());
    if (!row) break;
    SY_ASSIGN(auto kind, parseColumn<KindName>(dev.text(1), parseKindName, "device kind"));
    SY_ASSIGN(auto health, parseColumn<DeviceHealth>(dev.text(6), parseDeviceHealth, "device health"));
    t.devices.push_back({dev.text(0), kind.kind, dev.text(2), dev.text(3), static_cast<int>(dev.integer(4)), dev.text(5), health,
                         dev.integer(7) != 0, static_cast<int>(dev.integer(8)), kind.deviceClass});
  }
  dev.reset();
  return std::optional<Topology>(std::move(t));
}

Result<std::vector<System>> SqliteStore::loadSystems() {
  std::vector<System> out;
  SY_ASSIGN(auto st, db_->prepare("SELECT id, name, host_id, tenant, state, active_operation, labels, created_at, updated_at, "
                                  "lease_expires_at, priority_class, state_reason, asked FROM systems WHERE state NOT IN ('decomposed', 'failed') "
                                  "ORDER BY number"));
  while (true) {
    SY_ASSIGN(bool row, st.step());
    if (!row) break;
    System s;
    s.id = st.text(0);
    s.name = st.text(1);
    s.hostId = st.text(2);
    s.tenant = st.text(3);
    SY_ASSIGN(s.state, parseColumn<SystemState>(st.text(4), parseSystemState, "system state"));
    s.activeOperation = st.text(5);
    SY_ASSIGN(s.labels, parseSystemLabels(s.id, st.text(6)));
    s.createdAt = st.integer(7);
    s.updatedAt = st.integer(8);
    s.leaseExpiresAt = st.integer(9);
    s.priorityClass = st.text(10);
    s.stateReason = st.text(11);
    if (const std::string asked = st.text(12); !asked.empty()) {
      const auto parsed = nlohmann::json::parse(asked, nullptr, false);
      if (parsed.is_discarded()) return fail(Code::kInternal, fmt::format("systems row {}: column asked is not JSON", s.id));
      SY_ASSIGN(s.asked, queuedFromJson(parsed, fmt::format("systems row {}", s.id)));
    }
    out.push_back(std::move(s));
  }
  st.reset();
  for (auto& s : out) {
    SY_ASSIGN(auto d, db_->prepare("SELECT device_id, upstream_port_id FROM system_devices WHERE system_id = ?1 ORDER BY position"));
    d.bind(1, s.id);
    while (true) {
      SY_ASSIGN(bool row, d.step());
      if (!row) break;
      s.bindings.push_back({d.text(0), d.text(1)});
    }
    d.reset();
    SY_ASSIGN(s.gpuInstances, loadGpuInstances(*db_, GpuRowsOwner::kSystem, s.id));
    SY_ASSIGN(s.gpuShares, loadGpuShares(*db_, GpuRowsOwner::kSystem, s.id));
    SY_ASSIGN(auto h, db_->prepare("SELECT device_id, pci_address, uuid FROM system_host_devices WHERE system_id = ?1 ORDER BY device_id"));
    h.bind(1, s.id);
    while (true) {
      SY_ASSIGN(bool row, h.step());
      if (!row) break;
      s.hostDevices.push_back({h.text(0), h.text(1), h.text(2)});
    }
  }
  return out;
}

Result<void> SqliteStore::loadSteps(SqliteDb& db, Operation& op) {
  // Step kinds are the engine's (its registry checks them when it loads the log); the store keeps the name.
  SY_ASSIGN(auto st, db.prepare("SELECT kind, state, compensation, attempts, message, finished_at, outcome_unknown "
                                  "FROM operation_steps WHERE operation_id = ?1 ORDER BY position"));
  st.bind(1, op.id);
  while (true) {
    SY_ASSIGN(bool row, st.step());
    if (!row) break;
    Step s;
    s.kind = st.text(0);
    SY_ASSIGN(s.state, parseColumn<StepState>(st.text(1), parseStepState, "step state"));
    s.compensation = st.integer(2) != 0;
    s.attempts = static_cast<int>(st.integer(3));
    s.message = st.text(4);
    s.finishedAt = st.integer(5);
    s.outcomeUnknown = st.integer(6) != 0;
    op.steps.push_back(std::move(s));
  }
  st.reset();
  SY_ASSIGN(auto bs, db.prepare("SELECT step, device_id, upstream_port_id FROM operation_step_bindings WHERE operation_id = ?1 "
                                  "ORDER BY step, position"));
  bs.bind(1, op.id);
  while (true) {
    SY_ASSIGN(bool row, bs.step());
    if (!row) break;
    const auto index = static_cast<std::size_t>(bs.integer(0));
    if (index >= op.steps.size())
      return fail(Code::kInternal, fmt::format("operation {}: bindings for step {} which the log does not have", op.id, index + 1));
    op.steps[index].bindings.push_back({bs.text(1), bs.text(2)});
  }
  bs.reset();
  return {};
}

Result<std::vector<Operation>> SqliteStore::loadOperations(SqliteDb& db, const std::string& whereClause, std::size_t limit, std::string_view param,
                                                           const std::function<void(Statement&)>& bindMore) {
  std::vector<Operation> out;
  SY_ASSIGN(auto st, db.prepare(fmt::format("SELECT id, kind, system_id, host_id, state, explanation, error, created_at, updated_at, "
                                              "requested_by, requested_role, requested_tenant, tenant, request_id, queued, replaces FROM operations {} ORDER BY number DESC LIMIT ?2",
                                              whereClause)));
  if (!param.empty()) st.bind(1, param);
  st.bind(2, static_cast<std::int64_t>(limit));
  if (bindMore) bindMore(st);
  while (true) {
    SY_ASSIGN(bool row, st.step());
    if (!row) break;
    Operation op;
    op.id = st.text(0);
    SY_ASSIGN(op.kind, parseColumn<OperationKind>(st.text(1), parseOperationKind, "operation kind"));
    op.systemId = st.text(2);
    op.hostId = st.text(3);
    SY_ASSIGN(op.state, parseColumn<OperationState>(st.text(4), parseOperationState, "operation state"));
    op.explanation = st.text(5);
    op.error = st.text(6);
    op.createdAt = st.integer(7);
    op.updatedAt = st.integer(8);
    op.requestedBy.identity = st.text(9);
    SY_ASSIGN(op.requestedBy.role, parseColumn<Role>(st.text(10), parseRole, "caller role"));
    op.requestedBy.tenant = st.text(11);
    op.tenant = st.text(12);
    op.requestId = st.text(13);
    if (const std::string queued = st.text(14); !queued.empty()) {
      const auto parsed = nlohmann::json::parse(queued, nullptr, false);
      if (parsed.is_discarded()) return fail(Code::kInternal, fmt::format("operations row {}: column queued is not JSON", op.id));
      SY_ASSIGN(op.queued, queuedFromJson(parsed, fmt::format("operations row {}", op.id)));
    }
    if (const std::string replaces = st.text(15); !replaces.empty()) {
      const auto parsed = nlohmann::json::parse(replaces, nullptr, false);
      if (!parsed.is_array() || !std::all_of(parsed.begin(), parsed.end(), [](const nlohmann::json& d) { return d.is_string(); }))
        return fail(Code::kInternal, fmt::format("operations row {}: column replaces is not a JSON list of device ids", op.id));
      op.replaces = parsed.get<std::vector<DeviceId>>();
    }
    out.push_back(std::move(op));
  }
  st.reset();
  for (auto& op : out) {
    SY_TRY(loadSteps(db, op));
    SY_ASSIGN(op.gpuInstances, loadGpuInstances(db, GpuRowsOwner::kOperation, op.id));
    SY_ASSIGN(op.gpuShares, loadGpuShares(db, GpuRowsOwner::kOperation, op.id));
  }
  return out;
}

Result<StoreSnapshot> SqliteStore::load(LoadScope scope) {
  StoreSnapshot snap;
  if (scope == LoadScope::kEverything) {
    SY_ASSIGN(snap.inventory, loadInventory());
  }
  SY_ASSIGN(snap.systems, loadSystems());
  SY_ASSIGN(snap.unfinishedOperations,
            loadOperations(*db_, "WHERE state IN ('running', 'rolling-back', 'queued') AND ?1 IS NULL", 1'000'000, {}));
  std::reverse(snap.unfinishedOperations.begin(), snap.unfinishedOperations.end());  // oldest first
  SY_ASSIGN(auto as, db_->prepare("SELECT device_id, allocation, owner FROM device_assignments ORDER BY device_id"));
  while (true) {
    SY_ASSIGN(bool row, as.step());
    if (!row) break;
    SY_ASSIGN(auto allocation, parseColumn<DeviceAllocation>(as.text(1), parseDeviceAllocation, "device allocation"));
    snap.assignments.push_back({as.text(0), allocation, as.text(2)});
  }
  as.reset();
  // The newest shapes, as many as the demand is learned from (more may wait for the next prune).
  SY_ASSIGN(auto demand, db_->prepare("SELECT gpus, same_switch, model FROM (SELECT * FROM demand ORDER BY sequence DESC LIMIT ?1) "
                                      "ORDER BY sequence"));
  demand.bind(1, static_cast<std::int64_t>(kDemandWindow));
  while (true) {
    SY_ASSIGN(bool row, demand.step());
    if (!row) break;
    snap.recentDemand.push_back({static_cast<int>(demand.integer(0)), demand.integer(1) != 0, demand.text(2)});
  }
  demand.reset();
  SY_ASSIGN(auto mx, db_->prepare("SELECT (SELECT IFNULL(MAX(sequence), 0) FROM events), (SELECT IFNULL(MAX(number), 0) FROM systems), "
                                  "(SELECT IFNULL(MAX(number), 0) FROM operations), (SELECT IFNULL(MAX(sequence), 0) FROM audit)"));
  SY_ASSIGN(bool row, mx.step());
  if (row) {
    snap.lastEventSequence = static_cast<std::uint64_t>(mx.integer(0));
    snap.lastSystemNumber = static_cast<std::uint64_t>(mx.integer(1));
    snap.lastOperationNumber = static_cast<std::uint64_t>(mx.integer(2));
    snap.lastAuditSequence = static_cast<std::uint64_t>(mx.integer(3));
  }
  mx.reset();
  return snap;
}

}  // namespace switchyard
