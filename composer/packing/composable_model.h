// The composable pool as a placement-framework model: the cluster is the Pool, a request asks for GPUs,
// a candidate is a host. The device set a host would get is worked out by the "device-set" filter and
// kept in the cycle state (DevicePlans), where score plugins and the caller read it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "composer/packing/packing.h"
#include "composer/packing/pool.h"
#include "composer/placement/framework.h"

namespace switchyard {

// `take` devices from one switch, bound through one host port.
struct PlanPart {
  int switchIndex;
  std::size_t take;
  std::size_t eligible;  // eligible free devices on that switch before taking
  const PoolHostPort* port;
  bool crossesIsl;
};

struct DevicePlan {
  std::vector<PlanPart> parts;
  std::size_t islDevices = 0;  // devices reached over an inter-switch link
  std::size_t leftover = 0;    // eligible devices left on the switches used (small: tight fit)
};

struct ComposableModel {
  using Cluster = Pool;
  using Request = PlacementRequest;
  struct Candidate {
    int hostIndex;
  };
  [[nodiscard]] static std::string describe(const Pool& pool, const Candidate& c) {
    return pool.hosts()[static_cast<std::size_t>(c.hostIndex)].id;
  }
};

// Cycle state: eligible free devices per switch (filled once per request by the "eligible-devices"
// pre-filter) and the plan for each host that passed "device-set".
struct EligibleDevices {
  std::vector<std::vector<int>> bySwitch;
};
struct DevicePlans {
  std::vector<std::optional<DevicePlan>> byHost;
};

using ComposableScheduler = placement::Scheduler<ComposableModel>;
using ComposableRegistry = placement::Registry<ComposableModel>;

// Every plugin for the composable pool, by name.
void registerComposablePlugins(ComposableRegistry& registry);
[[nodiscard]] const ComposableRegistry& composableRegistry();

// Packing v1 as a profile: same-switch first, fewest switches, fewest inter-switch-link crossings,
// tightest fit, then host order.
[[nodiscard]] placement::Profile switchyardV1Profile();
// A profile by name ("switchyard-v1"), with optional weight overrides (plugin name -> weight).
[[nodiscard]] Result<std::shared_ptr<const ComposableScheduler>> buildComposableScheduler(
    const std::string& profileName, const std::vector<std::pair<std::string, double>>& weightOverrides = {});
[[nodiscard]] const ComposableScheduler& defaultComposableScheduler();

[[nodiscard]] std::string summarizePlan(const Pool& pool, const DevicePlan& plan, std::size_t gpus);

}  // namespace switchyard
