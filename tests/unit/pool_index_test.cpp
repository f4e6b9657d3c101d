// The pool's placement index (per-switch GPU classes, EligibleDevices, the device-set plans built from
// them) against brute force over the devices, after random churn. The index must never drift from the
// devices it summarises: a drift would hand out GPUs that are not there, or miss ones that are.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <tuple>

#include "composer/packing/composable_model.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

using testing::TopologyBuilder;

// Two fabrics (sw0-sw1-sw2 and sw3-sw4), a lone switch (sw5), mixed models on sw1, and hosts cabled into
// one switch, two switches of a fabric, two fabrics, or nothing.
Topology mixedTopology() {
  return TopologyBuilder()
      .sw("sw0").sw("sw1").sw("sw2").sw("sw3").sw("sw4").sw("sw5")
      .gpus("sw0", 6).gpus("sw1", 3).gpus("sw1", 3, "A100-SXM4-40GB", 40).gpus("sw2", 8, "A100-SXM4-40GB", 40)
      .gpus("sw3", 4).gpus("sw4", 5).gpus("sw5", 2, "L40S", 48)
      .link("sw0", "sw1").link("sw1", "sw2").link("sw3", "sw4")
      .host("h0", {"sw0"}).host("h1", {"sw0", "sw1"}).host("h2", {"sw2"}).host("h3", {"sw0", "sw3"})
      .host("h4", {"sw4", "sw1"}).host("h5", {"sw5"}).host("h6", {}).host("h7", {"sw3"}, 4)
      .build();
}

bool eligibleFor(const PoolDevice& d, const PlacementRequest& r) {
  return isFreeGpu(d) && (r.model.empty() || d.model == r.model) && d.memoryGiB >= r.minMemoryGiB && (!r.migCapable || d.migCapable);
}

std::vector<int> bruteEligible(const Pool& pool, int s, const PlacementRequest& r) {
  std::vector<int> out;
  for (std::size_t d = 0; d < pool.devices().size(); ++d)
    if (pool.devices()[d].switchIndex == s && eligibleFor(pool.devices()[d], r)) out.push_back(static_cast<int>(d));
  return out;
}

void churn(Pool& pool, std::mt19937& rng, int steps) {
  std::uniform_int_distribution<int> device(0, static_cast<int>(pool.devices().size()) - 1);
  for (int i = 0; i < steps; ++i) {
    const int d = device(rng);
    if (rng() % 5 == 0) {
      const DeviceHealth h[] = {DeviceHealth::kOk, DeviceHealth::kWarning, DeviceHealth::kCritical};
      pool.setHealth(d, h[rng() % 3]);
    } else {
      pool.setFree(d, rng() % 2 == 0);
    }
  }
}

PlacementRequest randomRequest(std::mt19937& rng) {
  PlacementRequest r;
  r.gpuCount = 1 + static_cast<int>(rng() % 12);
  const char* models[] = {"", "", "", "H100-SXM5-80GB", "A100-SXM4-40GB", "L40S"};
  r.model = models[rng() % 6];
  r.minMemoryGiB = rng() % 4 == 0 ? 48 : 0;
  r.peerToPeer = rng() % 3 == 0 ? PeerToPeer::kRequired : PeerToPeer::kPreferred;
  return r;
}

TEST(PoolIndex, SwitchCountsMatchTheDevicesAfterChurn) {
  Pool pool(mixedTopology());
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    churn(pool, rng, 5);
    for (std::size_t s = 0; s < pool.switches().size(); ++s) {
      const PoolSwitch& sw = pool.switches()[s];
      int free = 0;
      std::vector<int> byClass(sw.gpuClasses.size(), 0);
      for (const auto& d : pool.devices())
        if (d.switchIndex == static_cast<int>(s) && isFreeGpu(d)) {
          ++free;
          ++byClass[static_cast<std::size_t>(d.gpuClass)];
        }
      ASSERT_EQ(sw.freeGpus, free) << sw.id;
      for (std::size_t c = 0; c < byClass.size(); ++c) ASSERT_EQ(sw.gpuClasses[c].free, byClass[c]) << sw.id << " class " << c;
    }
  }
  EXPECT_EQ(pool.switches()[1].gpuClasses.size(), 2U);  // sw1 holds two models
}

TEST(PoolIndex, EligibleDevicesMatchBruteForce) {
  Pool pool(mixedTopology());
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    churn(pool, rng, 3);
    const PlacementRequest r = randomRequest(rng);
    EligibleDevices eligible(pool, r);
    for (std::size_t s = 0; s < pool.switches().size(); ++s) {
      const auto want = bruteEligible(pool, static_cast<int>(s), r);
      ASSERT_EQ(eligible.count(static_cast<int>(s)), want.size());
      ASSERT_EQ(eligible.devices(static_cast<int>(s)), want);
    }
    for (std::size_t f = 0; f < pool.fabricSwitches().size(); ++f) {
      std::vector<int> want;
      for (int s : pool.fabricSwitches()[f])
        if (eligible.count(s) > 0) want.push_back(s);
      std::stable_sort(want.begin(), want.end(), [&](int a, int b) { return eligible.count(a) > eligible.count(b); });
      ASSERT_EQ(eligible.byCount(static_cast<int>(f)), want);
    }
  }
}

// The device-set rule as written before the index (a pass over every switch per host), kept as the
// reference: the tightest direct switch that holds all; else, unless P2P is required, direct switches
// then switches of the same fabrics over an inter-switch link, most eligible first.
std::optional<DevicePlan> referencePlan(const Pool& pool, const PoolHost& host, const PlacementRequest& r) {
  const auto n = static_cast<std::size_t>(r.gpuCount);
  auto count = [&](int s) { return bruteEligible(pool, s, r).size(); };
  const PoolHostPort* best = nullptr;
  for (const auto& p : host.ports)
    if (p.switchIndex >= 0 && count(p.switchIndex) >= n && (!best || count(p.switchIndex) < count(best->switchIndex))) best = &p;
  if (best) return DevicePlan{{{best->switchIndex, n, count(best->switchIndex), best, false}}, 0, count(best->switchIndex) - n};
  if (r.peerToPeer == PeerToPeer::kRequired) return std::nullopt;
  std::vector<std::tuple<int, int, std::size_t>> order;  // (crossesIsl, switch, count)
  for (const auto& p : host.ports)
    if (p.switchIndex >= 0 && count(p.switchIndex) > 0 &&
        std::none_of(order.begin(), order.end(), [&](auto& e) { return std::get<1>(e) == p.switchIndex; }))
      order.emplace_back(0, p.switchIndex, count(p.switchIndex));
  for (std::size_t s = 0; s < pool.switches().size(); ++s) {
    const int si = static_cast<int>(s);
    if (count(si) > 0 && !portInto(host, si) && portIntoFabric(pool, host, pool.switches()[s].fabric)) order.emplace_back(1, si, count(si));
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b) : std::get<2>(a) > std::get<2>(b);
  });
  DevicePlan plan;
  std::size_t taken = 0;
  for (const auto& [crosses, s, c] : order) {
    if (taken == n) break;
    const std::size_t take = std::min(c, n - taken);
    plan.parts.push_back({s, take, c, crosses ? portIntoFabric(pool, host, pool.switches()[static_cast<std::size_t>(s)].fabric) : portInto(host, s),
                          crosses != 0});
    taken += take;
    plan.islDevices += crosses ? take : 0;
    plan.leftover += c - take;
  }
  if (taken < n) return std::nullopt;
  return plan;
}

TEST(PoolIndex, DeviceSetPlansMatchTheReferenceScan) {
  Pool pool(mixedTopology());
  std::mt19937 rng(3);
  auto scheduler = *buildComposableScheduler("switchyard-v1");
  int plansCompared = 0, islPlans = 0;
  for (int round = 0; round < 400; ++round) {
    churn(pool, rng, 3);
    const PlacementRequest r = randomRequest(rng);
    auto d = scheduler->schedule(pool, r, true);
    const auto* plans = d.state.find<DevicePlans>();
    ASSERT_NE(plans, nullptr);
    for (std::size_t h = 0; h < pool.hosts().size(); ++h) {
      if (pool.hosts()[h].maxDevices < r.gpuCount) continue;  // device-limit said no before device-set ran
      const auto want = referencePlan(pool, pool.hosts()[h], r);
      const DevicePlan* got = plans->find(static_cast<int>(h));
      ASSERT_EQ(got != nullptr, want.has_value()) << "host " << pool.hosts()[h].id << " round " << round;
      if (!want) continue;
      ++plansCompared;
      islPlans += want->islDevices > 0 ? 1 : 0;
      ASSERT_EQ(got->parts.size(), want->parts.size());
      for (std::size_t k = 0; k < want->parts.size(); ++k) {
        EXPECT_EQ(got->parts[k].switchIndex, want->parts[k].switchIndex);
        EXPECT_EQ(got->parts[k].take, want->parts[k].take);
        EXPECT_EQ(got->parts[k].eligible, want->parts[k].eligible);
        EXPECT_EQ(got->parts[k].port, want->parts[k].port);
        EXPECT_EQ(got->parts[k].crossesIsl, want->parts[k].crossesIsl);
      }
      EXPECT_EQ(got->islDevices, want->islDevices);
      EXPECT_EQ(got->leftover, want->leftover);
    }
  }
  EXPECT_GT(plansCompared, 400);
  EXPECT_GT(islPlans, 20);  // the gathering path was exercised, not only direct fits
}

TEST(PoolIndex, ChangeLogNamesTheFabricsTouchedAndForgetsOnlyOldEntries) {
  Pool pool(mixedTopology());
  const std::uint64_t start = pool.changes();
  pool.setFree(pool.deviceIndex("sw3-gpu0"), false);  // fabric of sw3/sw4
  pool.setInSystem(pool.hostIndex("h3"), true);      // h3 is cabled into both fabrics
  pool.setFree(pool.deviceIndex("sw3-gpu0"), false);  // no change: not logged
  const auto changed = pool.fabricsChangedSince(start);
  ASSERT_TRUE(changed);
  const int f0 = pool.switches()[0].fabric, f3 = pool.switches()[3].fabric;
  EXPECT_EQ(std::vector<int>(changed->begin(), changed->end()), (std::vector<int>{f3, f0, f3}));

  // A long run of changes: a reader that kept up still gets its tail; one far behind is told to start over.
  const std::uint64_t recent = pool.changes();
  for (int i = 0; i < 20000; ++i) pool.setFree(pool.deviceIndex("sw0-gpu0"), i % 2 == 0);
  EXPECT_FALSE(pool.fabricsChangedSince(start));
  EXPECT_FALSE(pool.fabricsChangedSince(recent));
  const std::uint64_t late = pool.changes() - 10;
  ASSERT_TRUE(pool.fabricsChangedSince(late));
  EXPECT_EQ(pool.fabricsChangedSince(late)->size(), 10U);
  EXPECT_EQ(pool.fabricsChangedSince(pool.changes())->size(), 0U);
}

}  // namespace
}  // namespace switchyard
