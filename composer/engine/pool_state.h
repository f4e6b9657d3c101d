// The engine's in-memory picture of the pool: inventory, who holds each device, the live systems, and
// the packing index kept in step with them. Owned and touched by the control executor only.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "composer/model/composition.h"
#include "composer/model/topology.h"
#include "composer/engine/pool_view.h"
#include "composer/packing/demand_mix.h"
#include "composer/packing/packing.h"
#include "composer/packing/placement_index.h"
#include "composer/packing/pool.h"

namespace switchyard {

class PoolState {
 public:
  explicit PoolState(Topology topology);

  [[nodiscard]] const Topology& topology() const { return topology_; }
  [[nodiscard]] const TopologyIndex& index() const { return *index_; }
  [[nodiscard]] const Pool& pool() const { return pool_; }
  // Per-host verdicts kept across decisions on this pool (placement_index.h); pass it to place().
  [[nodiscard]] PlacementIndex& placementIndex() { return placementIndex_; }
  // Counts a new-system request's shape towards the demand the pool learns (the "fragmentation" score
  // reads it). The engine stores the shape first, and replays the stored ones after a restart.
  void observeDemand(const DemandShape& shape) { demand_.observe(shape, pool_); }
  void replayDemand(const std::vector<DemandShape>& shapes) { demand_.replay(shapes, pool_); }

  // Device holders. A device absent from the map is free.
  [[nodiscard]] DeviceAssignment assignment(const DeviceId& device) const;
  // Sets a device's holder and keeps the packing index and host counts in step. hostId is the host the
  // device counts against (empty for quarantined devices that belong to no host).
  void assign(const DeviceAssignment& a, const HostId& hostId);
  [[nodiscard]] const std::unordered_map<DeviceId, std::pair<DeviceAssignment, HostId>>& assignments() const {
    return assignments_;
  }
  void setHealth(const DeviceId& device, DeviceHealth health);
  // A host held by a composition reservation takes no other system until let go.
  void holdHost(const HostId& host, bool held);
  // Hosts whose agent is silent now (HostAgents::silentHosts): placement passes them by. What changed.
  [[nodiscard]] std::pair<std::vector<HostId>, std::vector<HostId>> setSilentHosts(const std::vector<HostId>& silent);

  // Live systems (not decomposed, not failed).
  [[nodiscard]] System* system(const SystemId& id);
  // By id, else by name: O(1) either way (a name is looked up on every compose, at any pool size).
  [[nodiscard]] const System* findSystem(std::string_view idOrName) const;
  [[nodiscard]] const std::map<SystemId, System>& systems() const { return systems_; }
  // Adds or updates a live system; a decomposed or failed one is dropped, freeing its host.
  void putSystem(const System& s);
  [[nodiscard]] const System* systemOfHost(const HostId& host) const;
  // A standby's refresh: the live systems and the device holders become these (the store's, as the leader wrote them),
  // in time proportional to what is held, not to the pool. A system not among `systems` leaves (its host frees); a
  // device no holder names goes free; each held one counts against the host of its owner (`hostOfOwner`: a system's
  // id or an operation's; none, as a quarantined device's reason, counts against no host).
  void replaceHeld(const std::vector<System>& systems, const std::vector<DeviceAssignment>& held,
                   const std::unordered_map<std::string, HostId>& hostOfOwner);

  // What a published view shows of one device or host now (pool_view.h).
  [[nodiscard]] DeviceView deviceView(const DeviceId& device) const;
  [[nodiscard]] HostSlot hostSlot(const HostId& host) const;
  // What changed since the last call: the devices, hosts and systems a view must show anew.
  struct Changes {
    std::set<DeviceId> devices;
    std::set<HostId> hosts;
    std::set<SystemId> systems;
    [[nodiscard]] bool empty() const { return devices.empty() && hosts.empty() && systems.empty(); }
  };
  [[nodiscard]] Changes takeChanges() { return std::exchange(changes_, {}); }
  // Marks a system changed though it is not: its running operation moved on (its progress line did).
  void touchSystem(const SystemId& id) { changes_.systems.insert(id); }

 private:
  Topology topology_;
  std::unique_ptr<TopologyIndex> index_;
  Pool pool_;
  DemandTracker demand_;
  PlacementIndex placementIndex_;
  std::unordered_map<DeviceId, std::pair<DeviceAssignment, HostId>> assignments_;
  std::map<SystemId, System> systems_;
  std::unordered_map<DeviceId, SystemId> systemOfDevice_;  // every device in a live system's bindings
  std::unordered_map<HostId, SystemId> systemOfHost_;
  std::unordered_map<std::string, SystemId> systemOfName_;  // names are unique among live systems
  std::set<int> silent_;  // indexes of the hosts marked silent now
  Changes changes_;
};

}  // namespace switchyard
