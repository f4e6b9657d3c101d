// A HiveD-style buddy allocator over the switch hierarchy (Zhao et al., "HiveD: Sharing a GPU Cluster
// for Deep Learning with Guarantees", OSDI '20), as placement plugins of the composable pool.
//
// The cells: a GPU; aligned runs of 2, 4, 8 ... of a switch's GPU slots (PoolSwitch::gpus); the switch
// (its top cell, whatever its size); and a set of whole switches in one fabric for requests larger than
// any switch. A request for n GPUs takes a free cell of bit_ceil(n) slots (its first n GPUs), never GPUs
// gathered from several partly used cells: that is what keeps large cells whole, and why a buddy
// allocator refuses a request while enough GPUs are free but scattered. Among the free cells it takes the
// one split from the smallest free cell around it (the buddy rule); "leftover" in the plan is what stays
// free in that cell, so the ordinary best-fit score does the choosing. HiveD's virtual clusters (per-tenant
// cell quotas) are not modelled here.
//
// A free cell is worked out from the free-device index each request (a cell is free when every GPU in it
// is free and eligible), so there is no second free list to keep in step with the pool.
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "composer/packing/composable_model.h"

namespace switchyard {

using placement::CycleState;
using placement::Status;
using placement::Candidate;

namespace {

// The best free cell of each switch for this request.
struct BuddyIndex {
  struct SwitchCell {
    int offset = -1;           // first slot of the best free cell; -1: none
    std::size_t cell = 0;      // its size in slots
    std::size_t enclosing = 0;  // the largest free aligned cell around it (the switch, when all of it is free)
    bool wholeFree = false;    // every GPU of the switch is free and eligible
  };
  std::vector<SwitchCell> bySwitch;
};

BuddyIndex::SwitchCell bestCell(const Pool& pool, std::size_t s, const std::vector<int>& eligibleHere, std::size_t n) {
  const auto& slots = pool.switches()[s].gpus;
  const std::size_t k = slots.size();
  BuddyIndex::SwitchCell out;
  out.wholeFree = k > 0 && eligibleHere.size() == k;
  if (n == 0 || n > k) return out;
  // prefix[i]: free eligible GPUs among slots [0, i).
  std::vector<std::size_t> prefix(k + 1, 0);
  {
    std::vector<char> freeSlot(k, 0);
    for (int d : eligibleHere) {
      const int slot = pool.devices()[static_cast<std::size_t>(d)].slot;
      if (slot >= 0) freeSlot[static_cast<std::size_t>(slot)] = 1;
    }
    for (std::size_t i = 0; i < k; ++i) prefix[i + 1] = prefix[i] + static_cast<std::size_t>(freeSlot[i]);
  }
  auto allFree = [&](std::size_t from, std::size_t size) { return prefix[from + size] - prefix[from] == size; };
  const std::size_t cell = std::bit_ceil(n);
  if (cell > k) {  // only the switch itself holds n: its top cell
    if (out.wholeFree) out = {0, k, k, true};
    return out;
  }
  for (std::size_t offset = 0; offset + cell <= k; offset += cell) {
    if (!allFree(offset, cell)) continue;
    std::size_t enclosing = cell;
    for (std::size_t up = cell * 2; up <= k; up *= 2) {
      const std::size_t base = offset / up * up;
      if (base + up > k || !allFree(base, up)) break;
      enclosing = up;
    }
    if (out.wholeFree) enclosing = k;
    if (out.offset < 0 || enclosing < out.enclosing) {
      out.offset = static_cast<int>(offset);
      out.cell = cell;
      out.enclosing = enclosing;
    }
  }
  return out;
}

const BuddyIndex& indexFor(CycleState& state, const Pool& pool, const PlacementRequest& r) {
  if (const BuddyIndex* found = state.find<BuddyIndex>()) return *found;
  auto& eligible = *state.find<EligibleDevices>();
  auto& index = state.emplace<BuddyIndex>();
  index.bySwitch.reserve(pool.switches().size());
  for (std::size_t s = 0; s < pool.switches().size(); ++s)
    index.bySwitch.push_back(bestCell(pool, s, eligible.devices(static_cast<int>(s)), static_cast<std::size_t>(r.gpuCount)));
  return index;
}

class BuddyCellsPlugin final : public placement::FilterPlugin {
 public:
  std::string_view name() const override { return "buddy-cells"; }
  unsigned reads() const override { return placement::kHostSurroundings; }

  Status filter(CycleState& state, const Pool& pool, const PlacementRequest& r, const Candidate& c) override {
    std::optional<DevicePlan> plan;
    Status st = planFor(state, pool, r, c, plan);
    if (plan) state.find<DevicePlans>()->set(c.hostIndex, std::move(*plan));
    return st;
  }

 private:
  static Status planFor(CycleState& state, const Pool& pool, const PlacementRequest& r, const Candidate& c, std::optional<DevicePlan>& plan) {
    const BuddyIndex& index = indexFor(state, pool, r);
    const auto& eligible = *state.find<EligibleDevices>();
    const PoolHost& host = pool.hosts()[static_cast<std::size_t>(c.hostIndex)];
    const auto n = static_cast<std::size_t>(r.gpuCount);
    const bool explain = placement::explaining(state);

    // The switches the host reaches: directly first (port order), then over an inter-switch link.
    std::vector<std::pair<int, const PoolHostPort*>> direct, viaIsl;
    for (const auto& p : host.ports)
      if (p.switchIndex >= 0 && !contains(direct, p.switchIndex)) direct.emplace_back(p.switchIndex, &p);
    if (direct.empty()) return Status::rejected(explain ? "has no upstream port into any switch" : "");
    if (r.peerToPeer != PeerToPeer::kRequired) {
      for (int f : pool.hostFabrics(c.hostIndex))
        for (int s : pool.fabricSwitches()[static_cast<std::size_t>(f)])
          if (!contains(direct, s)) viaIsl.emplace_back(s, portIntoFabric(pool, host, f));
      std::sort(viaIsl.begin(), viaIsl.end());  // switch order
    }

    // One cell under one switch, whenever some reachable switch is big enough to hold the request.
    bool oneSwitchHolds = false;
    for (const auto* list : {&direct, &viaIsl}) {
      const std::pair<int, const PoolHostPort*>* best = nullptr;
      for (const auto& e : *list) {
        const auto& cell = index.bySwitch[static_cast<std::size_t>(e.first)];
        oneSwitchHolds = oneSwitchHolds || pool.switches()[static_cast<std::size_t>(e.first)].gpus.size() >= n;
        if (cell.offset >= 0 && (!best || cell.enclosing < index.bySwitch[static_cast<std::size_t>(best->first)].enclosing)) best = &e;
      }
      if (!best) continue;
      const auto s = static_cast<std::size_t>(best->first);
      const auto& cell = index.bySwitch[s];
      const auto& slots = pool.switches()[s].gpus;
      const bool crosses = list == &viaIsl;
      PlanPart part{best->first, n, eligible.count(best->first), best->second, crosses,
                    std::vector<int>(slots.begin() + cell.offset, slots.begin() + cell.offset + static_cast<std::ptrdiff_t>(n))};
      plan = DevicePlan{{std::move(part)}, crosses ? n : 0, cell.enclosing - n};
      return Status::fits();
    }
    if (oneSwitchHolds) {
      if (!explain) return Status::rejected({});
      return Status::rejected(fmt::format("no free aligned cell of {} GPU slot(s) under a switch it reaches (buddy cells are never "
                                          "gathered from partly used ones)",
                                          std::bit_ceil(n)));
    }
    if (r.peerToPeer == PeerToPeer::kRequired)
      return Status::rejected(explain ? fmt::format("peer-to-peer required: no switch it reaches has {} GPU slots", n) : "");
    return wholeSwitches(pool, index, c.hostIndex, n, direct, viaIsl, plan, explain);
  }

  static bool contains(const std::vector<std::pair<int, const PoolHostPort*>>& list, int s) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.first == s; });
  }

  // Larger than any switch: whole free switches of one fabric (the next level of cells), direct ones first.
  static Status wholeSwitches(const Pool& pool, const BuddyIndex& index, int hostIndex, std::size_t n,
                              const std::vector<std::pair<int, const PoolHostPort*>>& direct,
                              const std::vector<std::pair<int, const PoolHostPort*>>& viaIsl, std::optional<DevicePlan>& plan,
                              bool explain) {
    std::size_t bestSeen = 0;
    for (int fabric : pool.hostFabrics(hostIndex)) {
      DevicePlan p;
      std::size_t taken = 0;
      for (const auto* list : {&direct, &viaIsl})
        for (const auto& [s, port] : *list) {
          const auto su = static_cast<std::size_t>(s);
          if (taken == n || pool.switches()[su].fabric != fabric || !index.bySwitch[su].wholeFree) continue;
          const auto& slots = pool.switches()[su].gpus;
          const std::size_t take = std::min(slots.size(), n - taken);
          const bool crosses = list == &viaIsl;
          p.parts.push_back({s, take, slots.size(), port, crosses, std::vector<int>(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(take))});
          p.islDevices += crosses ? take : 0;
          p.leftover += slots.size() - take;
          taken += take;
        }
      if (taken == n) {
        plan = std::move(p);
        return Status::fits();
      }
      bestSeen = std::max(bestSeen, taken);
    }
    if (!explain) return Status::rejected({});
    return Status::rejected(
        fmt::format("needs {} GPUs in whole free switches of one fabric; the most it reaches is {}", n, bestSeen));
  }
};

}  // namespace

void registerBuddyPlugins(ComposableRegistry& registry) {
  registry.add("buddy-cells", [] { return std::make_unique<BuddyCellsPlugin>(); });
}

}  // namespace switchyard
