// The learned demand (demand_mix.h) and the switchyard-v2 profile's "fragmentation" score.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "composer/packing/capacity.h"
#include "composer/packing/composable_model.h"
#include "composer/packing/demand_mix.h"
#include "composer/packing/packing.h"
#include "fabric/topology_generator.h"
#include "tests/support/pool_requests.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

using testing::TopologyBuilder;

using testing::gpus;
using testing::take;

const ComposableScheduler& v1() {
  static const auto kScheduler = *buildComposableScheduler("switchyard-v1");
  return *kScheduler;
}
const ComposableScheduler& v2() {
  static const auto kScheduler = *buildComposableScheduler("switchyard-v2");
  return *kScheduler;
}


// Teaches the pool a demand of `n` requests of each size.
void learn(Pool& pool, const std::vector<int>& sizes, int n = 8) {
  DemandTracker demand;
  for (int i = 0; i < n; ++i)
    for (int s : sizes) demand.observe(gpus(s), pool);
}

TEST(DemandShape, CountsWhatANewSystemTakesFromTheFabric) {
  EXPECT_EQ(demandShapeOf(gpus(4)), (DemandShape{4, true, {}}));
  EXPECT_EQ(demandShapeOf(gpus(4, PeerToPeer::kNone)), (DemandShape{4, false, {}}));
  PlacementRequest mig;
  mig.gpuInstances = {MigProfile::k3g, MigProfile::k3g, MigProfile::k4g};
  mig.model = "A100-SXM4-40GB";
  EXPECT_EQ(demandShapeOf(mig), (DemandShape{2, false, "A100-SXM4-40GB"})) << "3g+4g on one GPU, the second 3g on another";
  PlacementRequest pinned;
  pinned.devices = {"sw0-gpu0"};
  EXPECT_FALSE(demandShapeOf(pinned)) << "explicit devices leave nothing to choose";
  EXPECT_FALSE(demandShapeOf(gpus(0)));
}

TEST(DemandTracker, HandsThePoolTheMixItLearned) {
  Pool pool(defaultTopology());
  EXPECT_TRUE(pool.demand().empty());
  DemandTracker demand;
  for (int i = 0; i < 12; ++i) demand.observe(gpus(i % 4 == 0 ? 8 : 2), pool);
  ASSERT_EQ(pool.demand().size(), 2u);
  EXPECT_EQ(pool.demand()[0].shape.gpus, 2);
  EXPECT_NEAR(pool.demand()[0].weight, 0.75, 1e-9);
  EXPECT_EQ(pool.demand()[1].shape.gpus, 8);
  const Pool copy = pool;
  EXPECT_EQ(&copy.demand(), &pool.demand()) << "a copy (capacity probe) shares the snapshot";
}

TEST(SwitchyardV2, WithoutALearnedDemandDecidesAsV1) {
  TopologyShape shape;
  shape.totalGpus = 64;
  shape.gpusPerSwitch = 8;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = 6;
  Pool a(generateTopology(shape)), b = a;
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    const auto r = gpus(1 << (rng() % 4));
    auto da = place(v1(), a, r), db = place(v2(), b, r);
    ASSERT_EQ(da.placement.has_value(), db.placement.has_value()) << i;
    if (!da.placement) continue;
    ASSERT_EQ(da.placement->hostId, db.placement->hostId) << i;
    for (Pool* p : {&a, &b}) {
      for (const auto& d : da.placement->devices) take(*p, d.deviceId);
      p->setInSystem(p->hostIndex(da.placement->hostId), true);
    }
    // Free a random host now and then so the pool churns.
    const int h = static_cast<int>(rng() % a.hosts().size());
    if (rng() % 2) {
      a.setInSystem(h, false);
      b.setInSystem(h, false);
    }
  }
}

TEST(SwitchyardV2, LeavesTheShapesItHasSeenServable) {
  // Switch a has 2 free GPUs, b has 3. Half the requests are for 2 GPUs under one switch.
  // v1's tightest fit puts a 1-GPU request on a, leaving {1, 3}: one 2-GPU group.
  // v2 puts it on b, leaving {2, 2}: two.
  const Topology t = TopologyBuilder().sw("a").sw("b").gpus("a", 2).gpus("b", 3)
                         .host("ha", {"a"}).host("hb", {"b"}).host("hx", {"a", "b"}).host("hy", {"a", "b"}).build();
  Pool pool(t);
  learn(pool, {1, 2});
  auto first = place(v1(), pool, gpus(1));
  ASSERT_TRUE(first.placement);
  EXPECT_EQ(first.placement->devices[0].switchId, "a");
  auto chosen = place(v2(), pool, gpus(1));
  ASSERT_TRUE(chosen.placement);
  EXPECT_EQ(chosen.placement->devices[0].switchId, "b");

  for (const auto& d : chosen.placement->devices) take(pool, d.deviceId);
  pool.setInSystem(pool.hostIndex(chosen.placement->hostId), true);
  const auto capacity = usableCapacity(v2(), pool, {{2, PeerToPeer::kRequired, {}}});
  EXPECT_EQ(capacity.shapes[0].placeable, 2);
}

TEST(SwitchyardV2, DoesNotTakeTheLastHostThatReachesASwitch) {
  // h1 is the only host cabled into c. Both hosts would take their 2 GPUs from a; v1 breaks the tie by
  // host order (h1) and strands c's four GPUs. v2 takes h2.
  const Topology t = TopologyBuilder().sw("a").sw("c").gpus("a", 4).gpus("c", 4).host("h1", {"a", "c"}).host("h2", {"a"}).build();
  Pool pool(t);
  learn(pool, {2});
  auto byV1 = place(v1(), pool, gpus(2, PeerToPeer::kRequired));
  ASSERT_TRUE(byV1.placement);
  EXPECT_EQ(byV1.placement->hostId, "h1");
  PlacementRequest r = gpus(2, PeerToPeer::kRequired);
  r.explain = true;
  auto byV2 = place(v2(), pool, r);
  ASSERT_TRUE(byV2.placement);
  EXPECT_EQ(byV2.placement->hostId, "h2");
}

TEST(SwitchyardV2, NeverHandsOutATakenDeviceAndKeepsRequiredP2pUnderOneSwitch) {
  TopologyShape shape;
  shape.totalGpus = 128;
  shape.gpusPerSwitch = 16;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = 12;
  Pool pool(generateTopology(shape));
  DemandTracker demand;
  std::mt19937 rng(11);
  std::set<std::string> taken;
  std::vector<std::pair<int, std::vector<std::string>>> live;
  for (int i = 0; i < 400; ++i) {
    const int sizes[] = {1, 2, 3, 4, 6, 8, 12, 16};
    const auto r = gpus(sizes[rng() % 8], rng() % 2 ? PeerToPeer::kRequired : PeerToPeer::kPreferred);
    demand.observe(r, pool);
    auto d = place(v2(), pool, r);
    if (d.placement) {
      std::set<std::string> switches;
      std::vector<std::string> ids;
      for (const auto& dev : d.placement->devices) {
        ASSERT_TRUE(taken.insert(dev.deviceId).second) << dev.deviceId << " handed out twice";
        switches.insert(dev.switchId);
        ids.push_back(dev.deviceId);
        take(pool, dev.deviceId);
      }
      if (r.peerToPeer == PeerToPeer::kRequired) EXPECT_EQ(switches.size(), 1u);
      const int h = pool.hostIndex(d.placement->hostId);
      ASSERT_FALSE(pool.hosts()[static_cast<std::size_t>(h)].inSystem);
      pool.setInSystem(h, true);
      pool.addAttached(h, static_cast<int>(ids.size()));
      live.emplace_back(h, std::move(ids));
    }
    if (!live.empty() && rng() % 3 == 0) {  // a random system leaves
      const std::size_t k = rng() % live.size();
      for (const auto& id : live[k].second) {
        pool.setFree(pool.deviceIndex(id), true);
        taken.erase(id);
      }
      pool.addAttached(live[k].first, -static_cast<int>(live[k].second.size()));
      pool.setInSystem(live[k].first, false);
      live.erase(live.begin() + static_cast<long>(k));
    }
  }
  EXPECT_FALSE(pool.demand().empty());
}

}  // namespace
}  // namespace switchyard
