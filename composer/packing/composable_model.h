// The composable pool's placement plugins and profiles (the framework: placement_framework.h). The device set a host would get is worked out by the "device-set" filter and
// kept in the cycle state (DevicePlans), where score plugins and the caller read it.
//
// The contract every plugin here keeps, which the placement index (placement_index.h) relies on to
// re-evaluate only the hosts of changed fabrics: a host's verdict (filters and scores) depends only on
// the request, the host itself, the switches of the fabrics it has a port into, the hosts cabled into
// those switches, and (for plugins whose reads() says so) the pool's demand mix; a host with no port
// into a fabric is never feasible; and no score is normalised across candidates. A plugin states what it
// reads (placement::Reads); one that does not, or reads more, makes the index run the full cycle.
// tests/unit/placement_index_test.cpp checks each profile.
#pragma once

#include <boost/container/small_vector.hpp>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "composer/packing/packing.h"
#include "composer/packing/pool.h"
#include "composer/packing/placement_framework.h"

namespace switchyard {

// `take` devices from one switch, bound through one host port.
struct PlanPart {
  int switchIndex;
  std::size_t take;
  std::size_t eligible;  // eligible free devices on that switch before taking
  const PoolHostPort* port;
  bool crossesIsl;
  std::vector<int> devices{};  // the devices to take (buddy cells); empty: the first `take` eligible ones
};

struct DevicePlan {
  boost::container::small_vector<PlanPart, 2> parts;  // most plans take from one switch: no allocation
  std::size_t islDevices = 0;  // devices reached over an inter-switch link
  // Small is a tight fit: eligible devices left on the switches used ("device-set"), or left free in the
  // smallest free buddy cell the plan takes its cell from ("buddy-cells").
  std::size_t leftover = 0;
};

// Cycle state: the request's eligible free GPUs per switch (set up once per request by the
// "eligible-devices" pre-filter) and the plan for each host that passed "device-set".
//
// A switch's count is worked out from the pool's per-switch GPU classes the first time a plugin asks,
// its GPUs are listed only when a plan takes from them, and a fabric's switches are sorted by count
// only for plans that gather GPUs across switches: a cycle costs what its candidates touch, not a pass
// over the free GPUs.
class EligibleDevices {
 public:
  EligibleDevices(const Pool& pool, const PlacementRequest& request);
  [[nodiscard]] std::size_t count(int switchIndex) const {
    std::size_t& c = counts_[static_cast<std::size_t>(switchIndex)];
    if (c == kUnknown) c = countOn(switchIndex);
    return c;
  }
  // The eligible free GPUs of a switch, ascending.
  [[nodiscard]] const std::vector<int>& devices(int switchIndex);
  // The fabric's switches with an eligible free GPU: most first, then by index.
  [[nodiscard]] const std::vector<int>& byCount(int fabric);

 private:
  static constexpr std::size_t kUnknown = ~std::size_t{0};
  [[nodiscard]] std::size_t countOn(int switchIndex) const;
  // Whether a GPU, or a class of them (PoolDevice, PoolGpuClass), is what the request asks for.
  template <typename Gpu>
  [[nodiscard]] bool asked(const Gpu& g) const {
    return (model_.empty() || g.model == model_) && g.memoryGiB >= minMemoryGiB_ && (!migCapable_ || g.migCapable);
  }

  const Pool* pool_;
  std::string model_;
  int minMemoryGiB_;
  bool migCapable_;
  mutable std::vector<std::size_t> counts_;  // per switch, worked out on first use
  // Only the switches and fabrics a cycle asks about (node-based: references stay valid).
  std::unordered_map<int, std::vector<int>> devices_;
  std::unordered_map<int, std::vector<int>> byCount_;
};

// Only the hosts a cycle evaluates get a plan, so a cycle costs what it evaluates, not the pool's size.
class DevicePlans {
 public:
  explicit DevicePlans(std::size_t hosts) : slot_(hosts, -1) {}
  void set(int host, DevicePlan plan) {
    int& slot = slot_[static_cast<std::size_t>(host)];
    if (slot < 0) {
      slot = static_cast<int>(plans_.size());
      plans_.push_back(std::move(plan));
    } else {
      plans_[static_cast<std::size_t>(slot)] = std::move(plan);
    }
  }
  // Null when no filter worked one out for the host in this cycle.
  [[nodiscard]] const DevicePlan* find(int host) const {
    const int slot = slot_[static_cast<std::size_t>(host)];
    return slot < 0 ? nullptr : &plans_[static_cast<std::size_t>(slot)];
  }

 private:
  std::vector<int> slot_;
  std::vector<DevicePlan> plans_;
};

using ComposableScheduler = placement::Scheduler;
using ComposableRegistry = placement::Registry;

// Every plugin for the composable pool, by name.
void registerComposablePlugins(ComposableRegistry& registry);
[[nodiscard]] const ComposableRegistry& composableRegistry();

// The HiveD-style buddy cells over the switch hierarchy (buddy_plugins.cpp).
void registerBuddyPlugins(ComposableRegistry& registry);

// The "fragmentation" score (fragmentation_plugin.cpp): expected usable capacity lost for the learned demand.
void registerFragmentationPlugin(ComposableRegistry& registry);

// The "companions" filter (companions.cpp): a host whose GPU plan leaves no room or reach for the request's pooled
// memory, drives and NICs (PlacementRequest::companionMemoryGiB, companionEndpoints) is rejected, saying why. Every
// profile runs it after its device plan; it passes every GPU-only request untouched.
void registerCompanionsPlugin(ComposableRegistry& registry);

// Packing v1 as a profile: same-switch first, fewest switches, fewest inter-switch-link crossings,
// tightest fit, then host order.
[[nodiscard]] placement::Profile switchyardV1Profile();
// Switchyard's own policy: v1's topology first (same switch, fewest switches, fewest inter-switch-link
// crossings), then the least usable capacity lost for the demand the pool has been seeing
// ("fragmentation"), then tightest fit, then host order. Until a demand is learned it decides as v1.
[[nodiscard]] placement::Profile switchyardV2Profile();
// The HiveD baseline: devices come in aligned buddy cells (buddy-cells), the cell split from the
// smallest free cell (best-fit on the cell left), then as v1.
[[nodiscard]] placement::Profile hivedBuddyProfile();
[[nodiscard]] const std::vector<std::string>& composableProfileNames();
// A profile by name (composableProfileNames()), with optional weight overrides (plugin name -> weight).
[[nodiscard]] Result<std::shared_ptr<const ComposableScheduler>> buildComposableScheduler(
    const std::string& profileName, const std::vector<std::pair<std::string, double>>& weightOverrides = {});
[[nodiscard]] const ComposableScheduler& defaultComposableScheduler();

[[nodiscard]] std::string summarizePlan(const Pool& pool, const DevicePlan& plan, std::size_t gpus);

}  // namespace switchyard
