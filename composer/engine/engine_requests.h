// What the engine's callers hand it and get back (issue 36 item 1: request and view types in their own
// header): the change requests (compose, attach, detach), the host view, drift and recovery reports, and
// the completion type of the calls that never block.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "composer/model/composition.h"
#include "composer/model/event_stream.h"
#include "composer/model/queue.h"
#include "composer/model/error.h"
#include "composer/model/topology.h"
#include "composer/packing/packing.h"
#include "agent/host_agents.h"

namespace switchyard {

// requestId, on every change: the client's idempotency key. A request whose key started an operation
// before gets that operation back (running or finished) instead of starting another; empty: no key.

// queue: wait in yardd's queue when it does not fit now (the operation is answered in state queued, and
// runs once admitted) instead of being refused. priorityClass orders the queue (empty: the default class).
// queueTimeout gives up waiting after that long (0: never). lease decomposes the system that long after
// it is composed (0: no lease). machineTemplate: the template (EngineOptions::templates) the request starts
// from; what the request sets itself replaces the template's part (machine_templates.h).

struct ComposeRequest {
  std::string name;
  PlacementRequest placement;
  std::map<std::string, std::string> labels;
  std::string requestId;
  bool queue = false;
  std::string priorityClass;
  std::chrono::milliseconds queueTimeout{0};
  std::chrono::milliseconds lease{0};
  std::string machineTemplate;
  bool peerToPeerAsked = true;  // false: the caller left peer-to-peer unsaid (a template's then holds)
};

struct AttachRequest {
  std::string system;  // id or name
  PlacementRequest placement;
  std::string requestId;
};

// A MIG instance of a system, named by its device and first memory slice.
struct GpuInstanceRef {
  DeviceId deviceId;
  int start = 0;
};

struct DetachRequest {
  std::string system;  // id or name
  std::vector<DeviceId> devices;             // whole devices (with any MIG instances on them)
  std::vector<GpuInstanceRef> gpuInstances;  // single MIG instances; a GPU left with none is unbound
  std::vector<int> gpuShares;                // share ids; a GPU left with no share is unbound
  std::string requestId;
};

struct HostView {
  Host host;
  std::vector<SwitchId> upstreamSwitches;  // the switch of each of host.upstreamPorts
  SystemId systemId;
  int attachedDevices = 0;
  HostPolicy policy = HostPolicy::kTrustFabric;  // how it takes devices (agent/host_agents.h)
  std::string hostSide;                          // the host side's status line
  std::string reservationId;                     // when a composition reservation holds it
};

struct Drift {
  std::string kind;  // missing-binding, unexpected-binding, wrong-port
  DeviceId deviceId;
  std::string message;
};

struct RecoveryReport {
  std::size_t resumedOperations = 0;
  std::vector<Drift> drifts;
};

// A dry run of a placement (plan). A request that does not fit also names the idle GPUs defragmentation would
// move for it (when the admission profile moves any) and where it would go then; failing that, with a priority
// class that preempts, the systems preemption would take back and where it would go then. Nothing changes.
struct PlanOutcome {
  PlacementDecision decision;
  std::vector<PreemptionVictim> wouldPreempt;
  std::optional<Placement> afterPreemption;
  std::vector<PlannedMove> wouldMove;
  std::optional<Placement> afterMoves;
};

// Live events after a replay of the recorded ones after `lastSeen` (subscribeAfter): subscribed before the
// log was read, so nothing falls between (an event in both is the reader's to skip by its sequence).
struct EventSubscription {
  std::shared_ptr<EventStream> live;
  std::vector<Event> replay;
  std::uint64_t lastSeen = 0;
};

// How a quarantined device is released (`yardctl devices release`): `unbind`: unbound first if the fabric still has it
// bound, once the host behind its port (one with an agent) says it no longer has it; `hostIsDown` (with `unbind`): that
// host is down for good, so its silence does not stop the unbind (a host that answers is still asked, and heeded).
struct ReleaseAsked {
  bool unbind = false;
  bool hostIsDown = false;
};

// A completion: runs exactly once, on the control thread (or on the stopping thread with kAborted when
// the engine stops first). It must return quickly and must not call the engine's blocking methods.
template <typename T>
using Completion = std::function<void(Result<T>)>;

}  // namespace switchyard
