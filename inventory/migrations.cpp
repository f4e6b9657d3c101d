#include "inventory/migrations.h"

namespace switchyard {

const std::vector<Migration>& schemaMigrations() {
  static const std::vector<Migration> kMigrations{
      {1, "inventory, assignments, systems, operations and events", R"sql(
CREATE TABLE switches (
  id TEXT PRIMARY KEY, kind TEXT NOT NULL, model TEXT NOT NULL);
CREATE TABLE ports (
  id TEXT PRIMARY KEY, switch_id TEXT NOT NULL REFERENCES switches(id), kind TEXT NOT NULL,
  link_generation INTEGER NOT NULL, link_width INTEGER NOT NULL, peer_port TEXT NOT NULL);
CREATE TABLE hosts (
  id TEXT PRIMARY KEY, cpu_cores INTEGER NOT NULL, memory_gib INTEGER NOT NULL, max_devices INTEGER NOT NULL);
CREATE TABLE host_upstream_ports (
  host_id TEXT NOT NULL REFERENCES hosts(id), port_id TEXT NOT NULL, numa_node INTEGER NOT NULL,
  position INTEGER NOT NULL, PRIMARY KEY (host_id, port_id));
CREATE TABLE devices (
  id TEXT PRIMARY KEY, kind TEXT NOT NULL, port_id TEXT NOT NULL, model TEXT NOT NULL,
  memory_gib INTEGER NOT NULL, serial TEXT NOT NULL, health TEXT NOT NULL, mig_capable INTEGER NOT NULL);
CREATE TABLE device_assignments (
  device_id TEXT PRIMARY KEY, allocation TEXT NOT NULL, owner TEXT NOT NULL);
CREATE TABLE tenants (id TEXT PRIMARY KEY, display_name TEXT NOT NULL);
INSERT INTO tenants VALUES ('default', 'Default tenant');
CREATE TABLE systems (
  id TEXT PRIMARY KEY, number INTEGER NOT NULL UNIQUE, name TEXT NOT NULL, host_id TEXT NOT NULL,
  tenant TEXT NOT NULL, state TEXT NOT NULL, active_operation TEXT NOT NULL, labels TEXT NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX systems_by_state ON systems(state);
CREATE TABLE system_devices (
  system_id TEXT NOT NULL REFERENCES systems(id), device_id TEXT NOT NULL, upstream_port_id TEXT NOT NULL,
  position INTEGER NOT NULL, PRIMARY KEY (system_id, device_id));
CREATE TABLE operations (
  id TEXT PRIMARY KEY, number INTEGER NOT NULL UNIQUE, kind TEXT NOT NULL, system_id TEXT NOT NULL,
  host_id TEXT NOT NULL, state TEXT NOT NULL, explanation TEXT NOT NULL, error TEXT NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX operations_by_state ON operations(state);
CREATE TABLE operation_steps (
  operation_id TEXT NOT NULL REFERENCES operations(id), position INTEGER NOT NULL, kind TEXT NOT NULL,
  device_id TEXT NOT NULL, upstream_port_id TEXT NOT NULL, state TEXT NOT NULL, compensation INTEGER NOT NULL,
  attempts INTEGER NOT NULL, message TEXT NOT NULL, finished_at INTEGER NOT NULL,
  PRIMARY KEY (operation_id, position));
CREATE TABLE events (
  sequence INTEGER PRIMARY KEY, at INTEGER NOT NULL, type TEXT NOT NULL, subject TEXT NOT NULL, message TEXT NOT NULL);
)sql"},
      {2, "MIG GPU instances of systems and operations", R"sql(
CREATE TABLE system_gpu_instances (
  system_id TEXT NOT NULL REFERENCES systems(id), position INTEGER NOT NULL, device_id TEXT NOT NULL,
  profile TEXT NOT NULL, start INTEGER NOT NULL, PRIMARY KEY (system_id, position));
CREATE TABLE operation_gpu_instances (
  operation_id TEXT NOT NULL REFERENCES operations(id), position INTEGER NOT NULL, device_id TEXT NOT NULL,
  profile TEXT NOT NULL, start INTEGER NOT NULL, PRIMARY KEY (operation_id, position));
)sql"},
      {3, "recent demand: the shapes of composed system asked for", R"sql(
CREATE TABLE demand (
  sequence INTEGER PRIMARY KEY, gpus INTEGER NOT NULL, same_switch INTEGER NOT NULL, model TEXT NOT NULL);
)sql"},
      {4, "a step's payload is a set of bindings (one switch call binds many devices)", R"sql(
CREATE TABLE operation_step_bindings (
  operation_id TEXT NOT NULL REFERENCES operations(id), step INTEGER NOT NULL, position INTEGER NOT NULL,
  device_id TEXT NOT NULL, upstream_port_id TEXT NOT NULL, PRIMARY KEY (operation_id, step, position));
INSERT INTO operation_step_bindings
  SELECT operation_id, position, 0, device_id, upstream_port_id FROM operation_steps WHERE device_id != '';
UPDATE operation_steps SET device_id = '', upstream_port_id = '';
)sql"},
      {5, "the writer epoch: the fencing token of the one yardd allowed to write", R"sql(
CREATE TABLE writer (id INTEGER PRIMARY KEY CHECK (id = 1), epoch INTEGER NOT NULL);
INSERT INTO writer VALUES (1, 0);
)sql"},
      {6, "who asked: the caller of each operation and the actor of each event ('' before this version)", R"sql(
ALTER TABLE operations ADD COLUMN requested_by TEXT NOT NULL DEFAULT '';
ALTER TABLE operations ADD COLUMN requested_role TEXT NOT NULL DEFAULT 'admin';
ALTER TABLE operations ADD COLUMN requested_tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN actor TEXT NOT NULL DEFAULT '';
)sql"},
      {7, "time-sliced GPU shares of systems and operations", R"sql(
CREATE TABLE system_gpu_shares (
  system_id TEXT NOT NULL REFERENCES systems(id), position INTEGER NOT NULL, share_id INTEGER NOT NULL,
  device_id TEXT NOT NULL, milli INTEGER NOT NULL, PRIMARY KEY (system_id, position));
CREATE TABLE operation_gpu_shares (
  operation_id TEXT NOT NULL REFERENCES operations(id), position INTEGER NOT NULL, share_id INTEGER NOT NULL,
  device_id TEXT NOT NULL, milli INTEGER NOT NULL, PRIMARY KEY (operation_id, position));
)sql"},
      {8, "devices as the host side saw them: host PCI address and GPU UUID", R"sql(
CREATE TABLE system_host_devices (
  system_id TEXT NOT NULL REFERENCES systems(id), device_id TEXT NOT NULL, pci_address TEXT NOT NULL, uuid TEXT NOT NULL,
  PRIMARY KEY (system_id, device_id));
)sql"},
      {9, "the audit trail (every request to change something, accepted or refused, and how it ended); the tenant of operations and events", R"sql(
CREATE TABLE audit (
  sequence INTEGER PRIMARY KEY, at INTEGER NOT NULL, identity TEXT NOT NULL, role TEXT NOT NULL, caller_tenant TEXT NOT NULL,
  action TEXT NOT NULL, target TEXT NOT NULL, tenant TEXT NOT NULL, result TEXT NOT NULL, message TEXT NOT NULL,
  operation_id TEXT NOT NULL, outcome TEXT NOT NULL, finished_at INTEGER NOT NULL);
CREATE INDEX audit_by_tenant ON audit (tenant, sequence);
CREATE INDEX audit_by_operation ON audit (operation_id);
ALTER TABLE operations ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
)sql"},
      {10, "client request ids of operations, so a retried request finds the operation it started", R"sql(
ALTER TABLE operations ADD COLUMN request_id TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX operations_by_request ON operations (request_id) WHERE request_id <> '';
)sql"},
      {11, "fabric domains: the switch manager each switch belongs to ('default' before this version)", R"sql(
ALTER TABLE switches ADD COLUMN domain TEXT NOT NULL DEFAULT 'default';
)sql"},
      {12, "the queue and leases: what a queued compose asked for (JSON, '' for none), when a system's lease ends, its priority class", R"sql(
ALTER TABLE operations ADD COLUMN queued TEXT NOT NULL DEFAULT '';
ALTER TABLE systems ADD COLUMN lease_expires_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE systems ADD COLUMN priority_class TEXT NOT NULL DEFAULT '';
)sql"},
      {13, "the system each event is about ('' for the pool's own, and for events recorded before this version)", R"sql(
ALTER TABLE events ADD COLUMN system_id TEXT NOT NULL DEFAULT '';
)sql"},
      {14, "why a system is in its state (a degraded one's missing devices; '' for most)", R"sql(
ALTER TABLE systems ADD COLUMN state_reason TEXT NOT NULL DEFAULT '';
)sql"},
      {15, "idle stretches of attached GPUs, so that usage splits GPU-hours into busy and idle", R"sql(
CREATE TABLE idle_stretches (
  device_id TEXT NOT NULL, from_at INTEGER NOT NULL, to_at INTEGER NOT NULL, system_id TEXT NOT NULL, tenant TEXT NOT NULL,
  PRIMARY KEY (device_id, from_at));
CREATE INDEX idle_stretches_by_start ON idle_stretches (from_at);
)sql"},
      {16, "whether an earlier attempt of a step may have applied it (a lost reply): a final failure is undone", R"sql(
ALTER TABLE operation_steps ADD COLUMN outcome_unknown INTEGER NOT NULL DEFAULT 0;
)sql"},
      {17, "a NIC's port speed in Gb/s (0 where the fabric does not say, and for devices recorded before this version)", R"sql(
ALTER TABLE devices ADD COLUMN speed_gbps INTEGER NOT NULL DEFAULT 0;
)sql"},
      {18, "a move's attach: the devices of its system it replaces (JSON array, '' for every other operation)", R"sql(
ALTER TABLE operations ADD COLUMN replaces TEXT NOT NULL DEFAULT '';
)sql"},
      {19, "what a system's compose asked for (JSON, as a queued request's; '' for systems stored before this version)", R"sql(
ALTER TABLE systems ADD COLUMN asked TEXT NOT NULL DEFAULT '';
)sql"},
  };
  return kMigrations;
}

}  // namespace switchyard
