// Reconcile's judgement (issue 59: reconcile as a part): the store's systems and holds against what the fabric
// reports bound. Pure: it reads the engine's state and the fabric's bindings and says what it finds; the engine
// (Engine::reconcileOnControl) persists the changes, announces the drifts once (DriftRound) and frees what the
// queue may now take.
//
// What it finds:
// - an idle system (no operation running) with a device the fabric shows unbound or on another port is degraded,
//   with the reason said on the system; one whose devices are all back where they belong is composed again;
// - a device bound in the fabric that no system holds, and no operation is changing, is quarantined (bound
//   outside Switchyard); a composition reservation's device counts as held by nothing, so its binding is drift;
// - a quarantine of that kind whose device the fabric no longer shows bound is lifted (a quarantine an operator
//   must look at stays);
// - the drifts, one per device and kind (missing-binding, wrong-port, unexpected-binding), in that order.
#pragma once

#include <string>
#include <vector>

#include "composer/engine/engine_requests.h"
#include "composer/engine/pool_state.h"
#include "composer/model/clock.h"

namespace switchyard {

struct SystemVerdict {
  System updated;     // its new state, reason and time
  bool stateChanged;  // degraded or recovered (not only a new reason): an event says so
};

struct FabricComparison {
  std::vector<SystemVerdict> systems;
  std::vector<DeviceAssignment> quarantine;  // bindings no system holds
  std::vector<DeviceId> freed;               // quarantines the fabric no longer shows
  std::vector<Drift> drifts;
};

[[nodiscard]] FabricComparison compareWithFabric(const PoolState& state, const std::vector<Binding>& fabricBindings, Timestamp now);

}  // namespace switchyard
