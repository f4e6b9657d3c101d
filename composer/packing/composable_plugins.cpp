// The composable pool's placement plugins. Together, in the switchyard-v1 profile, they are packing v1.
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "composer/packing/composable_model.h"
#include "composer/packing/endpoint_choice.h"

namespace switchyard {

using placement::CycleState;
using placement::Status;
using placement::Candidate;

namespace {

const PoolHost& hostOf(const Pool& pool, const Candidate& c) { return pool.hosts()[static_cast<std::size_t>(c.hostIndex)]; }

// Whether a switch has a free drive or NIC under it that a request for GPUs alone could strand.
bool holdsFreeEndpoints(const Pool& pool, int switchIndex) { return pool.switches()[static_cast<std::size_t>(switchIndex)].freeEndpoints > 0; }
const std::string& switchName(const Pool& pool, int s) { return pool.switches()[static_cast<std::size_t>(s)].id; }

class EligibleDevicesPlugin final : public placement::PreFilterPlugin {
 public:
  std::string_view name() const override { return "eligible-devices"; }
  unsigned reads() const override { return placement::kHostSurroundings; }
  Status preFilter(CycleState& state, const Pool& pool, const PlacementRequest& r) override {
    state.emplace<EligibleDevices>(pool, r);
    state.emplace<DevicePlans>(pool.hosts().size());
    return Status::fits();
  }
};

class HostsPlugin final : public placement::CandidatePlugin {
 public:
  std::string_view name() const override { return "hosts"; }
  unsigned reads() const override { return placement::kHostSurroundings; }
  void candidates(CycleState&, const Pool& pool, const PlacementRequest& r, std::vector<Candidate>& out) override {
    if (r.host) {
      if (const int h = pool.hostIndex(*r.host); h >= 0) out.push_back({h});
      return;
    }
    out.reserve(pool.hosts().size());
    for (std::size_t h = 0; h < pool.hosts().size(); ++h) out.push_back({static_cast<int>(h)});
  }
};

class HostFreePlugin final : public placement::FilterPlugin {
 public:
  std::string_view name() const override { return "host-free"; }
  unsigned reads() const override { return placement::kHostSurroundings; }
  Status filter(CycleState& state, const Pool& pool, const PlacementRequest& r, const Candidate& c) override {
    const PoolHost& h = hostOf(pool, c);
    if (h.silent) return Status::rejected(placement::explaining(state) ? "its yard-agent is silent (see `yardctl agents`)" : "");
    if (!h.inSystem || r.hostMayHaveSystem) return Status::fits();
    return Status::rejected(placement::explaining(state) ? "already serves a composed system (use attach to grow it)" : "");
  }
};

class DeviceLimitPlugin final : public placement::FilterPlugin {
 public:
  std::string_view name() const override { return "device-limit"; }
  unsigned reads() const override { return placement::kHostSurroundings; }
  Status filter(CycleState& state, const Pool& pool, const PlacementRequest& r, const Candidate& c) override {
    const PoolHost& h = hostOf(pool, c);
    if (h.maxDevices - h.attachedDevices >= r.gpuCount) return Status::fits();
    if (!placement::explaining(state)) return Status::rejected({});
    return Status::rejected(fmt::format("device limit: {} of {} attached, needs room for {}", h.attachedDevices, h.maxDevices, r.gpuCount));
  }
};

// Works out which devices the host would get, honouring the peer-to-peer requirement:
// 1. all under one directly cabled switch, the tightest such fit;
// 2. otherwise (P2P preferred or none) direct switches with the most free first, then switches of
//    the same fabric over an inter-switch link, most free first.
// Cost per host: its ports, plus the switches the plan takes from (EligibleDevices keeps each fabric's
// switches sorted), not every switch of the pool.
class DeviceSetPlugin final : public placement::FilterPlugin {
 public:
  std::string_view name() const override { return "device-set"; }
  unsigned reads() const override { return placement::kHostSurroundings; }
  Status filter(CycleState& state, const Pool& pool, const PlacementRequest& r, const Candidate& c) override {
    auto& eligible = *state.find<EligibleDevices>();
    const PoolHost& host = hostOf(pool, c);
    const auto n = static_cast<std::size_t>(r.gpuCount);
    const bool explain = placement::explaining(state);
    auto& plans = *state.find<DevicePlans>();

    // One switch, the tightest fit; with drives or NICs that must sit beside the GPUs, the tightest that has them
    // too when one does (else as without them: the companions filter then says what is missing).
    const PoolHostPort* bestPort = nullptr;
    std::size_t bestCount = 0;
    boost::container::small_vector<EndpointDemand, 2> beside;
    for (const auto& d : r.companionEndpoints)
      if (d.affinity == Affinity::kSwitch) beside.push_back(d);
    for (const bool wantBeside : {!beside.empty(), false}) {
      for (const auto& p : host.ports) {
        if (p.switchIndex < 0) continue;
        const std::size_t count = eligible.count(p.switchIndex);
        if (count >= n && (!bestPort || count < bestCount) &&
            (!wantBeside || servesUnder(pool, p.switchIndex, std::span<const EndpointDemand>(beside.data(), beside.size())))) {
          bestPort = &p;
          bestCount = count;
        }
      }
      if (bestPort || !wantBeside) break;
    }
    if (bestPort) {
      plans.set(c.hostIndex, DevicePlan{{{bestPort->switchIndex, n, bestCount, bestPort, false}}, 0, bestCount - n});
      return Status::fits();
    }

    boost::container::small_vector<std::pair<int, std::size_t>, 4> direct;  // switches with a host port, in port order
    for (const auto& p : host.ports)
      if (p.switchIndex >= 0 && std::none_of(direct.begin(), direct.end(), [&](auto& e) { return e.first == p.switchIndex; }))
        direct.emplace_back(p.switchIndex, eligible.count(p.switchIndex));
    if (direct.empty()) return Status::rejected(explain ? "has no upstream port into any switch" : "");
    if (r.peerToPeer == PeerToPeer::kRequired) {
      if (!explain) return Status::rejected({});
      std::string counts;
      for (const auto& [s, k] : direct) counts += fmt::format("{}{} has {}", counts.empty() ? "" : ", ", switchName(pool, s), k);
      return Status::rejected(
          fmt::format("peer-to-peer required: no directly cabled switch has {} eligible free GPUs ({})", n, counts));
    }

    DevicePlan p;
    std::size_t taken = 0;
    auto takeFrom = [&](int s, const PoolHostPort* port, bool crosses) {
      const std::size_t count = eligible.count(s);
      const std::size_t take = std::min(count, n - taken);
      p.parts.push_back({s, take, count, port, crosses});
      taken += take;
      if (crosses) p.islDevices += take;
      p.leftover += count - take;
    };
    // Most eligible first, port order among equals (an insertion sort: stable, and no buffer to allocate).
    for (std::size_t i = 1; i < direct.size(); ++i)
      for (std::size_t j = i; j > 0 && direct[j - 1].second < direct[j].second; --j) std::swap(direct[j - 1], direct[j]);
    for (const auto& [s, count] : direct)
      if (taken < n && count > 0) takeFrom(s, portInto(host, s), false);
    if (taken < n) {
      auto isDirect = [&](int s) { return std::any_of(direct.begin(), direct.end(), [&](auto& e) { return e.first == s; }); };
      const std::vector<int>& fabrics = pool.hostFabrics(c.hostIndex);
      const std::vector<int> merged = fabrics.size() > 1 ? mergeByCount(eligible, fabrics) : std::vector<int>{};
      for (int s : fabrics.size() == 1 ? eligible.byCount(fabrics[0]) : merged) {
        if (taken == n) break;
        if (!isDirect(s)) takeFrom(s, portIntoFabric(pool, host, pool.switches()[static_cast<std::size_t>(s)].fabric), true);
      }
    }
    if (taken < n) return Status::rejected(explain ? fmt::format("only {} eligible free GPU(s) reachable, needs {}", taken, n) : "");
    plans.set(c.hostIndex, std::move(p));
    return Status::fits();
  }

 private:
  // A host with ports into several fabrics: their switches in one order, most eligible free GPUs first, then by index.
  static std::vector<int> mergeByCount(EligibleDevices& eligible, const std::vector<int>& fabrics) {
    std::vector<int> out;
    for (int f : fabrics) out.insert(out.end(), eligible.byCount(f).begin(), eligible.byCount(f).end());
    std::sort(out.begin(), out.end(), [&](int a, int b) { return eligible.count(a) != eligible.count(b) ? eligible.count(a) > eligible.count(b) : a < b; });
    return out;
  }
};

const DevicePlan& planOf(const CycleState& state, const Candidate& c) {
  return *state.find<DevicePlans>()->find(c.hostIndex);
}

class FewestSwitchesPlugin final : public placement::ScorePlugin {
 public:
  std::string_view name() const override { return "fewest-switches"; }
  unsigned reads() const override { return placement::kHostSurroundings; }
  double score(CycleState& state, const Pool&, const PlacementRequest&, const Candidate& c) override {
    return -static_cast<double>(planOf(state, c).parts.size());
  }
};

class AvoidInterSwitchLinksPlugin final : public placement::ScorePlugin {
 public:
  std::string_view name() const override { return "avoid-inter-switch-links"; }
  unsigned reads() const override { return placement::kHostSurroundings; }
  double score(CycleState& state, const Pool&, const PlacementRequest&, const Candidate& c) override {
    return -static_cast<double>(planOf(state, c).islDevices);
  }
};

// Tightest fit: leave big free blocks whole for the requests that need them.
class BestFitPlugin final : public placement::ScorePlugin {
 public:
  std::string_view name() const override { return "best-fit"; }
  unsigned reads() const override { return placement::kHostSurroundings; }
  double score(CycleState& state, const Pool&, const PlacementRequest&, const Candidate& c) override {
    return -static_cast<double>(planOf(state, c).leftover);
  }
};

// A request for GPUs alone takes them from switches with no free drive or NIC when another place fits (issue 62,
// item 3): a NIC serves the GPUs under its own switch (GPUDirect RDMA does not cross the root complex), so GPUs
// taken beside it for a request that needs none may strand it for the requests that do. -1 for a plan that takes
// from such a switch; 0 otherwise, and for requests with companions (the companions filter places those).
class SpareEndpointsPlugin final : public placement::ScorePlugin {
 public:
  std::string_view name() const override { return "spare-endpoints"; }
  unsigned reads() const override { return placement::kHostSurroundings; }
  double score(CycleState& state, const Pool& pool, const PlacementRequest& r, const Candidate& c) override {
    if (!r.companionEndpoints.empty() || r.companionMemoryGiB > 0) return 0;
    for (const auto& part : planOf(state, c).parts)
      if (holdsFreeEndpoints(pool, part.switchIndex)) return -1;
    return 0;
  }
};

template <typename P>
void add(ComposableRegistry& r) {
  r.add(std::string(P().name()), [] { return std::make_unique<P>(); });
}

}  // namespace

void registerComposablePlugins(ComposableRegistry& registry) {
  add<EligibleDevicesPlugin>(registry);
  add<HostsPlugin>(registry);
  add<HostFreePlugin>(registry);
  add<DeviceLimitPlugin>(registry);
  add<DeviceSetPlugin>(registry);
  add<FewestSwitchesPlugin>(registry);
  add<AvoidInterSwitchLinksPlugin>(registry);
  add<BestFitPlugin>(registry);
  add<SpareEndpointsPlugin>(registry);
  registerBuddyPlugins(registry);
  registerFragmentationPlugin(registry);
  registerCompanionsPlugin(registry);
}

const ComposableRegistry& composableRegistry() {
  static const ComposableRegistry kRegistry = [] {
    ComposableRegistry r;
    registerComposablePlugins(r);
    return r;
  }();
  return kRegistry;
}

placement::Profile switchyardV1Profile() {
  // Weights far apart make the sum lexicographic: switches, then ISL crossings, then sparing NICs and drives
  // (a pool without them scores 0 there), then fit.
  return {"switchyard-v1",
          {"eligible-devices"},
          "hosts",
          {"host-free", "device-limit", "device-set", "companions"},
          {{"fewest-switches", 1e8}, {"avoid-inter-switch-links", 1e4}, {"spare-endpoints", 5e3}, {"best-fit", 1}}};
}

placement::Profile switchyardV2Profile() {
  // Lexicographic as v1: the fragmentation change is a few GPUs at most (x100 stays under the 1e4 step),
  // and the best-fit leftover breaks its ties.
  return {"switchyard-v2",
          {"eligible-devices"},
          "hosts",
          {"host-free", "device-limit", "device-set", "companions"},
          {{"fewest-switches", 1e8}, {"avoid-inter-switch-links", 1e4}, {"spare-endpoints", 5e3}, {"fragmentation", 100}, {"best-fit", 1}}};
}

placement::Profile hivedBuddyProfile() {
  return {"hived-buddy",
          {"eligible-devices"},
          "hosts",
          {"host-free", "device-limit", "buddy-cells", "companions"},
          {{"fewest-switches", 1e8}, {"avoid-inter-switch-links", 1e4}, {"spare-endpoints", 5e3}, {"best-fit", 1}}};
}

const std::vector<std::string>& composableProfileNames() {
  static const std::vector<std::string> kNames{"switchyard-v1", "switchyard-v2", "hived-buddy"};
  return kNames;
}

Result<std::shared_ptr<const ComposableScheduler>> buildComposableScheduler(
    const std::string& profileName, const std::vector<std::pair<std::string, double>>& weightOverrides) {
  placement::Profile profile;
  if (profileName == "switchyard-v1") {
    profile = switchyardV1Profile();
  } else if (profileName == "switchyard-v2") {
    profile = switchyardV2Profile();
  } else if (profileName == "hived-buddy") {
    profile = hivedBuddyProfile();
  } else {
    return fail(Code::kInvalidArgument, fmt::format("unknown placement profile '{}' (known: {})", profileName,
                                                    fmt::join(composableProfileNames(), ", ")));
  }
  for (const auto& [plugin, weight] : weightOverrides) {
    auto it = std::find_if(profile.scores.begin(), profile.scores.end(), [&](auto& s) { return s.first == plugin; });
    if (it == profile.scores.end())
      return fail(Code::kInvalidArgument, fmt::format("profile '{}' has no score plugin '{}'", profileName, plugin));
    it->second = weight;
  }
  return ComposableScheduler::build(composableRegistry(), profile);
}

const ComposableScheduler& defaultComposableScheduler() {
  // Never destroyed: a thread may still schedule while the process exits.
  static const auto* kDefault = new std::shared_ptr<const ComposableScheduler>(*buildComposableScheduler("switchyard-v1"));
  return **kDefault;
}

std::string summarizePlan(const Pool& pool, const DevicePlan& plan, std::size_t n) {
  if (plan.parts.size() == 1 && !plan.parts[0].crossesIsl) {
    const PlanPart& p = plan.parts[0];
    return fmt::format("{} GPU(s) under {} via {} (NUMA {}); {} eligible free there, {} left", n, switchName(pool, p.switchIndex),
                       p.port->portId, p.port->numaNode, p.eligible, p.eligible - n);
  }
  std::string parts;
  for (const auto& p : plan.parts)
    parts += fmt::format("{}{} from {}{}", parts.empty() ? "" : ", ", p.take, switchName(pool, p.switchIndex),
                         p.crossesIsl ? " (over an inter-switch link)" : "");
  return fmt::format("{} GPU(s) across {} switches: {}", n, plan.parts.size(), parts);
}

}  // namespace switchyard
