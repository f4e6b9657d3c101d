// Reads of the pool (issue 59: one declaration per call): systems, devices, hosts, the topology, the queue, idle
// GPUs and usable capacity, answered on the caller's thread from the latest published view (pool_view.h, ADR 0016):
// they never wait for the control thread and the control thread never waits for them. One of the engine's parts; it
// owns nothing but where it reads from. The engine has one (Engine::reads()) and every EngineClient is one, so each
// read is declared and written here once. Any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/host_agents.h"
#include "composer/engine/control_loop.h"
#include "composer/engine/engine_requests.h"
#include "composer/engine/idle_tracker.h"
#include "composer/engine/pool_view.h"
#include "composer/engine/published_view.h"
#include "composer/engine/standby_replica.h"
#include "composer/model/caller.h"
#include "composer/model/clock.h"
#include "composer/model/machine_template.h"
#include "composer/model/queue.h"
#include "composer/packing/capacity.h"
#include "composer/packing/composable_model.h"

namespace switchyard {

class PoolReads {
 public:
  // Where the reads come from: the engine's parts, read on any thread (each is safe there: the view is swapped under
  // its mutex, `running` and the standby's flag are atomic, the host side answers policy and status on any thread;
  // the templates and the placement policy are fixed once the engine is made, the host side before it starts).
  struct Sources {
    const PublishedView& view;
    const ControlLoop& loop;
    const Clock& clock;
    HostAgents* const& hosts;  // none: every host trusts the fabric
    const StandbyReplica& standby;
    const std::vector<MachineTemplate>& templates;
    const std::shared_ptr<const ComposableScheduler>& placement;
  };
  explicit PoolReads(Sources from) : from_(from) {}

  // The latest published picture of the pool, for as long as it is held; null before the engine has loaded its store.
  [[nodiscard]] std::shared_ptr<const PoolView> view() const { return from_.view.current(); }
  // The same for a read that needs one: kAborted when the engine is not running.
  [[nodiscard]] Result<std::shared_ptr<const PoolView>> readableView() const;

  [[nodiscard]] Result<System> getSystem(const std::string& idOrName) const;
  [[nodiscard]] Result<std::vector<System>> listSystems() const;
  [[nodiscard]] Result<std::vector<DeviceView>> listDevices() const;
  [[nodiscard]] Result<DeviceView> getDevice(const DeviceId& id) const;
  // Each host with its system, its devices, and what its host side says (policy, status).
  [[nodiscard]] Result<std::vector<HostView>> listHosts() const;
  [[nodiscard]] Result<Topology> topology() const;
  // The waiting requests in admission order (EngineCore::cancelQueued cancels one).
  [[nodiscard]] Result<std::vector<QueueEntry>> listQueue() const;
  // Attached GPUs idle for at least `minIdle` (busy ones too when `includeBusy`), of the tenants the caller may see,
  // longest idle first.
  [[nodiscard]] Result<std::vector<IdleGpu>> idleGpus(const Caller& caller, Duration minIdle, bool includeBusy = false) const;
  // Usable capacity per request shape, per machine template, and per MIG profile and share size when asked: on the
  // packing core's pool rebuilt from the view (however long it takes at scale, no compose waits for it).
  [[nodiscard]] Result<CapacityReport> capacity(const std::vector<RequestShape>& shapes, const std::vector<MigProfile>& migProfiles = {},
                                                const std::vector<int>& shareMilli = {}) const;

 private:
  Sources from_;
};

}  // namespace switchyard
