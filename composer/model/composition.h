// What Switchyard changes: bindings of devices to host upstream ports, the composed systems that own
// them, and the durable operations (with their step logs) that move the pool from one state to the next.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/caller.h"
#include "composer/model/clock.h"
#include "composer/model/mig.h"
#include "composer/model/queue.h"
#include "composer/model/topology.h"

namespace switchyard {

using SystemId = std::string;
using OperationId = std::string;
using TenantId = std::string;

inline constexpr std::string_view kDefaultTenant = "default";

// Device D is routed into the partition of host upstream port U.
struct Binding {
  DeviceId deviceId;
  PortId upstreamPortId;
  friend bool operator==(const Binding&, const Binding&) = default;
};

// A MIG GPU instance carved out of a bound device for one system: the device is bound whole to the
// system's host (the switch works at device granularity) and this system owns the slices
// [start, start + memorySlices(profile)). A bound device that carries instances is used only through them.
struct GpuInstance {
  DeviceId deviceId;
  MigProfile profile = MigProfile::k1g;
  int start = 0;
  friend bool operator==(const GpuInstance&, const GpuInstance&) = default;
};

// A time-sliced share of a bound GPU for one system: the device is bound whole to the system's host (the
// switch works at device granularity) and this system is entitled to `milli` thousandths of its time; the
// host side enforces it (CUDA MPS active-thread percentage, or the driver's time-slicing). A GPU that
// carries shares is used only through them, by its own system, and never also carved into MIG instances.
inline constexpr int kMilliPerGpu = 1000;
struct GpuShare {
  int id = 0;  // unique within the system (1, 2, ...): how detach and the host side name it
  DeviceId deviceId;
  int milli = 0;  // 1..999
  friend bool operator==(const GpuShare&, const GpuShare&) = default;
};

// What the host's side reported for a device once it saw it: where the host enumerated it and, for GPUs,
// the UUID the vendor tool prints (`nvidia-smi -L`: "GPU-..."), which orchestrators match devices by.
struct HostDeviceIdentity {
  DeviceId deviceId;
  std::string pciAddress;  // "0000:12:00.0" on the host
  std::string uuid;        // "" when the host side cannot tell (not a GPU, no vendor tool)
  friend bool operator==(const HostDeviceIdentity&, const HostDeviceIdentity&) = default;
};

// A process running on a GPU, as the vendor tool reports it (nvidia-smi --query-compute-apps).
struct GpuProcess {
  int pid = 0;
  std::string name;
  std::uint64_t memoryMiB = 0;
  friend bool operator==(const GpuProcess&, const GpuProcess&) = default;
};

// What runs on one MIG GPU instance (the instance at placement `start`, as GpuInstance names it).
struct MigInstanceActivity {
  int start = 0;
  std::vector<GpuProcess> processes;
  friend bool operator==(const MigInstanceActivity&, const MigInstanceActivity&) = default;
};

// What a GPU on a host is doing now (nvidia-smi --query-gpu=utilization.gpu,memory.used): the input of
// idle reclaim (composer/engine/idle_tracker.h).
struct GpuActivity {
  DeviceId deviceId;
  int utilizationPercent = 0;  // 0..100, over the vendor tool's last sample period; 0 in MIG mode (unreadable)
  std::uint64_t memoryUsedMiB = 0;
  std::vector<GpuProcess> processes;  // every process on the GPU, those of its MIG instances included
  // In MIG mode (the driver reads no utilization then): each GPU instance and what runs on it. Empty otherwise.
  std::vector<MigInstanceActivity> instances;
  [[nodiscard]] bool migMode() const { return !instances.empty(); }
  friend bool operator==(const GpuActivity&, const GpuActivity&) = default;
};

// A stretch of time a GPU attached to a system was idle, from idle reclaim's samples: kept in the store so
// that usage accounting splits the GPU-hours a system held into busy and idle, across restarts (issue 40).
struct IdleStretch {
  DeviceId deviceId;  // a GPU; for a GPU in MIG mode, one of its instances: "GPU@START" (START its placement start)
  SystemId systemId;
  std::string tenant;
  Timestamp from = 0;  // the first idle sample
  // The first sample that was not idle, or the round that found the GPU gone from the system; while the
  // stretch goes on, its latest checkpoint.
  Timestamp to = 0;
  friend bool operator==(const IdleStretch&, const IdleStretch&) = default;
};

// A device that left its host without the reset that clears what the last tenant left in it (secure
// release): the host side reports it, and the engine quarantines it until an operator releases it.
struct DeviceNotReset {
  DeviceId deviceId;
  std::string reason;
  friend bool operator==(const DeviceNotReset&, const DeviceNotReset&) = default;
};

struct Tenant {
  TenantId id;
  std::string displayName;
};

// queued: accepted into yardd's queue (composer/model/queue.h); it has no host or devices until admitted.
enum class SystemState { kComposing, kComposed, kDegraded, kDecomposing, kDecomposed, kFailed, kQueued };

// A logical server: one host plus the devices bound to it by composition.
struct System {
  SystemId id;
  std::string name;
  HostId hostId;
  std::vector<Binding> bindings;  // devices in the system, with the upstream port each is bound to
  std::vector<GpuInstance> gpuInstances;  // MIG instances on some of those devices
  std::vector<GpuShare> gpuShares;        // time-sliced shares on some others
  std::vector<HostDeviceIdentity> hostDevices;  // bound devices the host side verified, as it sees them
  TenantId tenant{kDefaultTenant};
  std::map<std::string, std::string> labels;
  SystemState state = SystemState::kComposing;
  // Why it is in its state, where that needs saying: what the fabric says of a degraded system's devices
  // ("sw0-gpu1 is unbound in the fabric"). Empty otherwise.
  std::string stateReason;
  OperationId activeOperation;  // empty when no operation is running on it
  // Not stored: what the running operation is doing now ("binding", "verifying on the host", ...), filled
  // in by the engine's reads, so a system being composed says so until its host has verified it.
  std::string progress;
  Timestamp createdAt = 0;
  Timestamp updatedAt = 0;
  // When its lease ends and yardd decomposes it (compose --lease, renew); 0: no lease.
  Timestamp leaseExpiresAt = 0;
  // The priority class it was composed in (composer/model/queue.h): whether a higher class may preempt it.
  // Empty: the default class.
  std::string priorityClass;
  // What its compose asked for (a queued one's request as queued; none for a system stored before schema 19):
  // what a preemption that queues it again carries over besides its shape (requeue.h).
  std::optional<QueuedRequest> asked;
};

enum class OperationKind { kCompose, kDecompose, kAttach, kDetach };
// queued: a compose waiting in yardd's queue; it has no steps until admitted, then runs as any compose.
enum class OperationState { kRunning, kRollingBack, kSucceeded, kFailed, kQueued };
enum class StepState { kPending, kDone, kFailed, kSkipped };  // skipped: abandoned by a rollback

// One entry of an operation's step log. What a kind does (which component it calls, its undo, whether it
// retries, how it describes itself) is the step kind's business: composer/engine/steps/step_kind.h.
struct Step {
  std::string kind;               // a registered step kind: reserve, bind, verify, commit, unbind, release, ...
  std::vector<Binding> bindings;  // what the step acts on: the device bindings it makes, breaks or checks
  StepState state = StepState::kPending;
  bool compensation = false;  // appended while rolling back
  int attempts = 0;
  std::string message;
  Timestamp finishedAt = 0;
  // An earlier attempt failed in a way that may have applied it (a lost reply, a timeout): when the step
  // fails for good it is undone whatever the last attempt said (an agent that is down now may have acted before).
  bool outcomeUnknown = false;
};

// A durable, resumable unit of change. Its step log is the state machine: the engine runs the first
// pending step, records the outcome, and on failure appends compensating steps (undo in reverse).
struct Operation {
  OperationId id;
  OperationKind kind = OperationKind::kCompose;
  SystemId systemId;
  HostId hostId;
  OperationState state = OperationState::kRunning;
  std::vector<Step> steps;
  std::vector<GpuInstance> gpuInstances;  // compose/attach: instances it adds; detach: instances it removes
  std::vector<GpuShare> gpuShares;        // compose/attach: shares it adds; detach: shares it removes
  std::string explanation;  // why the packing core chose these devices
  std::string error;        // set when it failed (and was rolled back)
  Caller requestedBy;       // who asked for it: the actor of its events
  Timestamp createdAt = 0;
  Timestamp updatedAt = 0;
  std::string tenant;       // the tenant of its system: who may see it
  std::string requestId;    // the client's idempotency key: the same key again returns this operation
  std::optional<QueuedRequest> queued;  // a compose that went through the queue: what it asked for and how
  // A move's attach (defragmentation, ADR 0033): the system's devices it replaces, detached once it succeeded.
  // Stored with it, so that a yardd stopped between the attach and the detach finishes the move at its next start.
  std::vector<DeviceId> replaces;

  [[nodiscard]] bool finished() const {
    return state == OperationState::kSucceeded || state == OperationState::kFailed;
  }
  // Index of the first pending step, or steps.size() when all are done.
  [[nodiscard]] std::size_t cursor() const;
};

// Why a device cannot be handed out right now (besides being in a system).
enum class DeviceAllocation {
  kFree,
  kReserved,     // held by a running operation
  kAllocated,    // bound into a system
  kQuarantined,  // fabric state unknown or foreign: needs an operator or reconcile
};

struct DeviceAssignment {
  DeviceId deviceId;
  DeviceAllocation allocation = DeviceAllocation::kFree;
  std::string owner;  // operation id (reserved), system id (allocated) or reason (quarantined)
};

// How the reason of a device quarantined because it left its host without its reset begins (secure
// release). Only an operator ends that quarantine (`yardctl devices release`), after resetting the device:
// reconcile frees other quarantined devices once the fabric shows them unbound, but this one is unbound.
inline constexpr std::string_view kNotResetQuarantine = "not reset: ";
[[nodiscard]] inline bool awaitsOperator(const DeviceAssignment& a) {
  return a.allocation == DeviceAllocation::kQuarantined && a.owner.starts_with(kNotResetQuarantine);
}

// The audit record: one per mutation, in a total order.
struct Event {
  std::uint64_t sequence = 0;  // assigned by the engine, strictly increasing
  Timestamp at = 0;
  std::string type;            // "operation.accepted", "device.bound", "drift.missing-binding", ...
  std::string subject;         // the id the event is about
  std::string message;         // a sentence an operator can read
  std::string actor;           // who caused it: the identity of an operation's caller, or "yardd"
  std::string tenant;          // the tenant of the system or operation it is about; empty: the pool's own
  std::string systemId;        // the system it is about (itself, one of its operations or devices); empty: none
};

[[nodiscard]] std::string_view toString(SystemState v);
[[nodiscard]] std::string_view toString(OperationKind v);
[[nodiscard]] std::string_view toString(OperationState v);
[[nodiscard]] std::string_view toString(StepState v);
[[nodiscard]] std::string_view toString(DeviceAllocation v);
[[nodiscard]] std::optional<SystemState> parseSystemState(std::string_view s);
[[nodiscard]] std::optional<OperationKind> parseOperationKind(std::string_view s);
[[nodiscard]] std::optional<OperationState> parseOperationState(std::string_view s);
[[nodiscard]] std::optional<StepState> parseStepState(std::string_view s);
[[nodiscard]] std::optional<DeviceAllocation> parseDeviceAllocation(std::string_view s);

}  // namespace switchyard
