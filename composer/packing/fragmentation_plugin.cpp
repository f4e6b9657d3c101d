// The "fragmentation" score: how much usable capacity a placement costs the requests the pool keeps
// being asked for (Pool::demand(), learned by the engine). In the spirit of FGD (fragmentation gradient
// descent), adapted to a switched pool of whole GPUs:
//  - a free GPU is unusable for a shape of k GPUs under one switch when its switch has fewer than k
//    free GPUs left over (f mod k of the switch's f free GPUs), and for any shape when no host that could
//    still take that shape (free, room under its device limit) is cabled into its switch (stranded);
//  - the pool's fragmentation is the expected number of unusable free GPUs over the learned mix;
//  - a candidate scores minus the change its plan makes: GPUs taken from its switches, and the host
//    itself leaving the hosts that reach them.
// With no demand learned yet every candidate scores 0 and the profile's other scores decide.
#include <algorithm>
#include <cmath>
#include <vector>

#include "composer/packing/composable_model.h"

namespace switchyard {

using placement::CycleState;
using placement::Candidate;

namespace {

bool usableFor(const PoolDevice& d, const DemandShape& s) {
  return isFreeGpu(d) && (s.model.empty() || d.model == s.model);
}

bool canTake(const PoolHost& h, const DemandShape& s) { return !h.inSystem && !h.silent && h.maxDevices - h.attachedDevices >= s.gpus; }

// Per switch and shape (index into the mix): free GPUs of the shape's model, hosts that could take it.
// Worked out for a switch the first time a candidate's plan touches it, from the pool's GPU classes
// and the hosts cabled into the switch: a decision costs the switches its candidates touch, not a pass
// over every free GPU.
struct DemandView {
  std::size_t shapes = 0;
  std::vector<int> at;        // [switch]: offset of its entries in freeGpus/hosts; -1 until learned
  std::vector<int> freeGpus;  // [offset + shape]
  std::vector<int> hosts;     // [offset + shape]

  // The switch's offset, learning it on first use.
  std::size_t learn(const Pool& pool, const DemandMix& mix, int s) {
    int& offset = at[static_cast<std::size_t>(s)];
    if (offset >= 0) return static_cast<std::size_t>(offset);
    offset = static_cast<int>(freeGpus.size());
    const PoolSwitch& sw = pool.switches()[static_cast<std::size_t>(s)];
    for (std::size_t i = 0; i < shapes; ++i) {
      const DemandShape& shape = mix[i].shape;
      int free = 0, able = 0;
      for (const PoolGpuClass& c : sw.gpuClasses) free += shape.model.empty() || c.model == shape.model ? c.free : 0;
      for (int h : sw.hosts) able += canTake(pool.hosts()[static_cast<std::size_t>(h)], shape) ? 1 : 0;
      freeGpus.push_back(free);
      hosts.push_back(able);
    }
    return static_cast<std::size_t>(offset);
  }
};

double unusable(int freeGpus, int hosts, const DemandShape& s) {
  if (hosts == 0) return freeGpus;
  return s.sameSwitch && s.gpus > 1 ? freeGpus % s.gpus : 0;
}

DemandView& viewOf(CycleState& state, const Pool& pool) {
  if (auto* v = state.find<DemandView>()) return *v;
  auto& v = state.emplace<DemandView>();
  v.shapes = pool.demand().size();
  if (v.shapes > 0) v.at.assign(pool.switches().size(), -1);
  return v;
}

// Of the first `take` eligible GPUs of a switch, those of the shape's model.
int takenFor(const Pool& pool, EligibleDevices& eligible, const PlanPart& part, const DemandShape& shape) {
  if (shape.model.empty()) return static_cast<int>(part.take);
  const auto& classes = pool.switches()[static_cast<std::size_t>(part.switchIndex)].gpuClasses;
  if (part.devices.empty() && classes.size() == 1) return classes.front().model == shape.model ? static_cast<int>(part.take) : 0;
  const auto& from = part.devices.empty() ? eligible.devices(part.switchIndex) : part.devices;
  int taken = 0;
  for (std::size_t k = 0; k < part.take; ++k) taken += usableFor(pool.devices()[static_cast<std::size_t>(from[k])], shape) ? 1 : 0;
  return taken;
}

class FragmentationPlugin final : public placement::ScorePlugin {
 public:
  std::string_view name() const override { return "fragmentation"; }
  unsigned reads() const override { return placement::kDemandMix; }

  double score(CycleState& state, const Pool& pool, const PlacementRequest& r, const Candidate& c) override {
    DemandView& v = viewOf(state, pool);
    if (v.shapes == 0) return 0;
    const DemandMix& mix = pool.demand();
    const DevicePlan& plan = *state.find<DevicePlans>()->find(c.hostIndex);
    auto& eligible = *state.find<EligibleDevices>();
    const PoolHost& host = pool.hosts()[static_cast<std::size_t>(c.hostIndex)];
    const bool hostLeaves = !host.inSystem && !r.hostMayHaveSystem;

    // The switches the placement touches: those it takes from, and those the host leaves.
    boost::container::small_vector<int, 8> touched;
    for (const auto& p : plan.parts) touched.push_back(p.switchIndex);
    if (hostLeaves)
      for (const auto& p : host.ports)
        if (p.switchIndex >= 0) touched.push_back(p.switchIndex);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());

    double delta = 0;
    for (int s : touched) {
      const std::size_t at = v.learn(pool, mix, s);
      const auto* part = [&]() -> const PlanPart* {
        for (const auto& p : plan.parts)
          if (p.switchIndex == s) return &p;
        return nullptr;
      }();
      const bool cabled = std::any_of(host.ports.begin(), host.ports.end(), [&](const auto& p) { return p.switchIndex == s; });
      for (std::size_t i = 0; i < v.shapes; ++i) {
        const DemandShape& shape = mix[i].shape;
        const int freeBefore = v.freeGpus[at + i];
        const int hostsBefore = v.hosts[at + i];
        const int taken = part ? takenFor(pool, eligible, *part, shape) : 0;
        const int hostsAfter = hostsBefore - (hostLeaves && cabled && canTake(host, shape) ? 1 : 0);
        delta += mix[i].weight * (unusable(freeBefore - taken, hostsAfter, shape) - unusable(freeBefore, hostsBefore, shape));
      }
    }
    // Rounded so that sums taken in a different order tie exactly and the next score decides. Clamped under
    // 100 GPUs so that, at switchyard-v2's weight of 100, it can never outweigh one GPU over an inter-switch
    // link (weight 1e4): the profile stays lexicographic however large the switches it strands.
    return -std::clamp(std::round(delta * 1e6) / 1e6, -99.0, 99.0);
  }
};

}  // namespace

void registerFragmentationPlugin(ComposableRegistry& registry) {
  registry.add("fragmentation", [] { return std::make_unique<FragmentationPlugin>(); });
}

}  // namespace switchyard
