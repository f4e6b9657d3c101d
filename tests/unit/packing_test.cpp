#include <gtest/gtest.h>

#include <random>
#include <set>

#include "composer/packing/capacity.h"
#include "composer/packing/composable_model.h"
#include "composer/packing/packing.h"
#include "composer/packing/placement_index.h"
#include "fabric/topology_generator.h"
#include "tests/support/pool_requests.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

using testing::TopologyBuilder;

using testing::gpus;
using testing::take;


std::set<std::string> switchesOf(const Placement& p) {
  std::set<std::string> s;
  for (const auto& d : p.devices) s.insert(d.switchId);
  return s;
}

TEST(Packing, PutsP2pGroupUnderOneSwitchReachedDirectly) {
  Pool pool(defaultTopology());
  auto d = place(pool, gpus(4, PeerToPeer::kRequired));
  ASSERT_TRUE(d.placement);
  EXPECT_EQ(switchesOf(*d.placement).size(), 1u);
  for (const auto& dev : d.placement->devices) EXPECT_EQ(dev.upstreamPortId.substr(0, 3), dev.switchId) << "bound via the host's port on that switch";
}

TEST(Packing, BestFitKeepsTheLargerBlockWhole) {
  // sw0 has 3 free, sw1 has 8 free: a 2-GPU request goes to sw0 so that 8 stay together.
  Pool pool(defaultTopology());
  for (auto id : {"sw0-gpu0", "sw0-gpu1", "sw0-gpu2", "sw0-gpu3", "sw0-gpu4"}) take(pool, id);
  auto d = place(pool, gpus(2, PeerToPeer::kRequired));
  ASSERT_TRUE(d.placement);
  EXPECT_EQ(switchesOf(*d.placement), std::set<std::string>{"sw0"});
  auto eight = place(pool, gpus(8, PeerToPeer::kRequired));
  ASSERT_TRUE(eight.placement) << "the 8-block survived";
}

TEST(Packing, P2pRequiredFailsWithAReasonPerHost) {
  Pool pool(defaultTopology());
  for (auto id : {"sw0-gpu0", "sw0-gpu1", "sw1-gpu0", "sw1-gpu1"}) take(pool, id);
  auto d = place(pool, gpus(7, PeerToPeer::kRequired));
  ASSERT_FALSE(d.placement);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->code, Code::kResourceExhausted);
  ASSERT_EQ(d.candidates.size(), 4u);
  for (const auto& c : d.candidates) {
    EXPECT_FALSE(c.feasible);
    EXPECT_NE(c.reason.find("sw0 has 6, sw1 has 6"), std::string::npos) << c.reason;
    EXPECT_NE(d.error->message.find(c.hostId + ": "), std::string::npos);
  }
}

// At scale a refusal says why for a few hosts per reason and counts the rest, with the scheduler's own cycle and with
// the index alike; asked to explain (Plan), it names every host.
TEST(Packing, ARefusalExplainsEightHostsPerReasonAndCountsTheRest) {
  TopologyShape shape;
  shape.totalGpus = 64;  // 4 fabrics of 2 switches, 4 hosts each: 16 hosts
  Pool pool(generateTopology(shape));
  pool.setInSystem(5, true);  // one host rejected for another reason
  auto scheduler = *buildComposableScheduler("switchyard-v1");
  PlacementIndex index;
  for (PlacementIndex* with : {static_cast<PlacementIndex*>(nullptr), &index}) {
    auto d = place(*scheduler, pool, gpus(9, PeerToPeer::kRequired), with);
    ASSERT_TRUE(d.error);
    ASSERT_EQ(d.candidates.size(), 9U) << "eight of one reason, the one host of the other";
    ASSERT_EQ(d.unexplained.size(), 1U);
    EXPECT_EQ(d.unexplained[0].hosts, 7U);
    EXPECT_NE(d.error->message.find("\n  ... and 7 more host(s): 7 rejected by " + d.unexplained[0].rejectedBy +
                                     " (`yardctl plan --explain` lists every host)"),
              std::string::npos)
        << d.error->message;
    EXPECT_NE(d.error->message.find(pool.hosts()[5].id + ": "), std::string::npos) << "the host of the rarer reason is named";
  }
  auto explained = gpus(9, PeerToPeer::kRequired);
  explained.explain = true;
  auto all = place(*scheduler, pool, explained, &index);
  EXPECT_EQ(all.candidates.size(), 16U);
  EXPECT_TRUE(all.unexplained.empty());
}

TEST(Packing, PreferredSpansTheFewestSwitches) {
  Pool pool(defaultTopology());
  for (auto id : {"sw0-gpu0", "sw0-gpu1"}) take(pool, id);
  auto d = place(pool, gpus(10));
  ASSERT_TRUE(d.placement);
  EXPECT_EQ(d.placement->devices.size(), 10u);
  EXPECT_EQ(switchesOf(*d.placement).size(), 2u);
  std::set<std::string> ids;
  for (const auto& dev : d.placement->devices) ids.insert(dev.deviceId);
  EXPECT_EQ(ids.size(), 10u) << "no device twice";
}

TEST(Packing, UsesInterSwitchLinkOnlyWhenTheHostHasNoDirectPort) {
  const Topology t = TopologyBuilder().sw("a").sw("b").link("a", "b").gpus("a", 1).gpus("b", 4).host("h", {"a"}).build();
  Pool pool(t);
  EXPECT_FALSE(place(pool, gpus(3, PeerToPeer::kRequired)).placement);
  auto d = place(pool, gpus(3));
  ASSERT_TRUE(d.placement);
  EXPECT_NE(d.placement->explanation.find("over an inter-switch link"), std::string::npos) << d.placement->explanation;
  for (const auto& dev : d.placement->devices) EXPECT_EQ(dev.upstreamPortId, "a-usp-h");
}

TEST(Packing, RespectsModelMemoryAndHealth) {
  Pool pool(defaultTopology());
  PlacementRequest r = gpus(8, PeerToPeer::kRequired);
  r.model = "A100-SXM4-40GB";
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement);
  EXPECT_EQ(switchesOf(*d.placement), std::set<std::string>{"sw1"});
  r.model.clear();
  r.minMemoryGiB = 80;
  r.gpuCount = 9;
  EXPECT_FALSE(place(pool, r).placement) << "only 8 GPUs have 80 GiB";
  pool.setHealth(pool.deviceIndex("sw0-gpu0"), DeviceHealth::kCritical);
  r.gpuCount = 8;
  EXPECT_FALSE(place(pool, r).placement) << "a critical GPU is not eligible";
}

TEST(Packing, AModelThePoolLacksIsRefusedWithTheModelsItHas) {
  Pool pool(defaultTopology());
  PlacementRequest r = gpus(1);
  r.model = "B200";
  auto d = place(pool, r);
  ASSERT_FALSE(d.placement);
  EXPECT_EQ(d.error->code, Code::kInvalidArgument) << "it can never fit: not capacity, so not queued or learned as demand";
  EXPECT_NE(d.error->message.find("no GPU in the pool is a 'B200'; the pool has: A100-SXM4-40GB, H100-SXM5-80GB"), std::string::npos)
      << d.error->message;
  r.model = "a100-sxm4-40gb";
  d = place(pool, r);
  ASSERT_FALSE(d.placement);
  EXPECT_NE(d.error->message.find("did you mean 'A100-SXM4-40GB'?"), std::string::npos) << d.error->message;
  EXPECT_EQ(pool.gpuModels(), (std::vector<std::string>{"A100-SXM4-40GB", "H100-SXM5-80GB"}));
}

TEST(Packing, RespectsHostDeviceLimitAndOneSystemPerHost) {
  const Topology t = TopologyBuilder().sw("a").gpus("a", 8).host("small", {"a"}, 2).host("big", {"a"}, 8).build();
  Pool pool(t);
  PlacementRequest four = gpus(4);
  four.explain = true;
  auto d = place(pool, four);
  ASSERT_TRUE(d.placement);
  EXPECT_EQ(d.placement->hostId, "big");
  EXPECT_NE(d.candidates[0].reason.find("device limit: 0 of 2 attached"), std::string::npos) << d.candidates[0].reason;
  pool.setInSystem(pool.hostIndex("big"), true);
  auto again = place(pool, gpus(2));
  ASSERT_TRUE(again.placement);
  EXPECT_EQ(again.placement->hostId, "small");
}

TEST(Packing, PinnedHostAndExplicitDevices) {
  Pool pool(defaultTopology());
  PlacementRequest r = gpus(2);
  r.host = "host2";
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement);
  EXPECT_EQ(d.placement->hostId, "host2");

  PlacementRequest e;
  e.host = "host1";
  e.devices = {"sw1-gpu3", "sw0-gpu5"};
  auto x = place(pool, e);
  ASSERT_TRUE(x.placement);
  EXPECT_EQ(x.placement->devices[0].upstreamPortId, "sw1-usp1");
  EXPECT_EQ(x.placement->devices[1].upstreamPortId, "sw0-usp1");

  take(pool, "sw1-gpu3");
  auto busy = place(pool, e);
  ASSERT_TRUE(busy.error);
  EXPECT_EQ(busy.error->code, Code::kFailedPrecondition);
}

TEST(Packing, RejectsInvalidRequests) {
  Pool pool(defaultTopology());
  EXPECT_EQ(place(pool, gpus(0)).error->code, Code::kInvalidArgument);
  EXPECT_EQ(place(pool, gpus(-3)).error->code, Code::kInvalidArgument);
  EXPECT_EQ(place(pool, gpus(17)).error->code, Code::kResourceExhausted);
  PlacementRequest r = gpus(1);
  r.host = "ghost";
  EXPECT_EQ(place(pool, r).error->code, Code::kNotFound);
  PlacementRequest e;
  e.host = "host0";
  e.devices = {"sw0-gpu0", "sw0-gpu0"};
  EXPECT_EQ(place(pool, e).error->code, Code::kInvalidArgument);
  e.devices = {"nope"};
  EXPECT_EQ(place(pool, e).error->code, Code::kNotFound);
}

TEST(Packing, IsDeterministic) {
  TopologyShape shape;
  shape.totalGpus = 1000;
  shape.gpusPerSwitch = 16;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = 8;
  Pool pool(generateTopology(shape));
  for (int i = 0; i < 1000; i += 3) pool.setFree(i, false);
  auto a = place(pool, gpus(5));
  auto b = place(pool, gpus(5));
  ASSERT_TRUE(a.placement && b.placement);
  EXPECT_EQ(a.placement->hostId, b.placement->hostId);
  EXPECT_EQ(a.placement->explanation, b.placement->explanation);
  for (std::size_t i = 0; i < a.placement->devices.size(); ++i) EXPECT_EQ(a.placement->devices[i].deviceId, b.placement->devices[i].deviceId);
}

TEST(Packing, NeverHandsOutATakenDevice) {
  Pool pool(defaultTopology());
  std::set<std::string> taken;
  for (int round = 0; round < 8; ++round) {
    auto d = place(pool, gpus(2));
    ASSERT_TRUE(d.placement) << round;
    for (const auto& dev : d.placement->devices) {
      EXPECT_TRUE(taken.insert(dev.deviceId).second) << dev.deviceId;
      take(pool, dev.deviceId);
    }
    pool.setInSystem(pool.hostIndex(d.placement->hostId), false);
  }
  EXPECT_EQ(pool.freeCount(), 0);
  EXPECT_FALSE(place(pool, gpus(1)).placement);
}

TEST(PackingProfiles, WeightsChangeThePolicy) {
  // h1 reaches two 4-GPU switches, h2 one 10-GPU switch; 8 GPUs, P2P preferred.
  const Topology t = TopologyBuilder().sw("a").sw("b").sw("c").gpus("a", 4).gpus("b", 4).gpus("c", 10)
                         .host("h1", {"a", "b"}).host("h2", {"c"}).build();
  Pool pool(t);
  auto byDefault = place(pool, gpus(8));
  ASSERT_TRUE(byDefault.placement);
  EXPECT_EQ(byDefault.placement->hostId, "h2") << "one switch beats a tight fit";

  auto fitFirst = buildComposableScheduler("switchyard-v1", {{"fewest-switches", 0}, {"best-fit", 1e9}});
  ASSERT_TRUE(fitFirst) << fitFirst.error().message;
  auto tuned = place(**fitFirst, pool, gpus(8));
  ASSERT_TRUE(tuned.placement);
  EXPECT_EQ(tuned.placement->hostId, "h1") << "with fit weighted above switches, the exact fit wins";

  EXPECT_FALSE(buildComposableScheduler("fgd"));
  EXPECT_FALSE(buildComposableScheduler("switchyard-v1", {{"no-such-plugin", 1}}));
}

TEST(PackingProfiles, PlanExplainsEveryHost) {
  Pool pool(defaultTopology());
  pool.setInSystem(pool.hostIndex("host1"), true);
  PlacementRequest r = gpus(2);
  r.explain = true;
  auto d = place(pool, r);
  ASSERT_EQ(d.candidates.size(), 4u);
  EXPECT_FALSE(d.candidates[1].feasible);
  EXPECT_NE(d.candidates[1].reason.find("already serves"), std::string::npos);
  EXPECT_TRUE(d.candidates[0].feasible);
  EXPECT_NE(d.candidates[0].reason.find("under sw0"), std::string::npos) << d.candidates[0].reason;
}


// The HiveD-style buddy profile: cells are aligned runs of a switch's GPU slots.
const ComposableScheduler& hived() {
  static const auto kScheduler = *buildComposableScheduler("hived-buddy");
  return *kScheduler;
}

std::vector<std::string> deviceIds(const Placement& p) {
  std::vector<std::string> ids;
  for (const auto& d : p.devices) ids.push_back(d.deviceId);
  return ids;
}

// Places and takes the devices, leaving the host free for the next request.
std::vector<std::string> placeAndTake(Pool& pool, const PlacementRequest& r) {
  auto d = place(hived(), pool, r);
  if (!d.placement) return {};
  for (const auto& dev : d.placement->devices) take(pool, dev.deviceId);
  return deviceIds(*d.placement);
}

TEST(HivedBuddy, TakesTheCellSplitFromTheSmallestFreeCell) {
  Pool pool(TopologyBuilder().sw("a").gpus("a", 8).host("h", {"a"}).build());
  take(pool, "a-gpu5");
  // Free cells of 1: slot 4 is the buddy of the taken slot 5; every other slot sits in a free 2- or 4-cell.
  EXPECT_EQ(placeAndTake(pool, gpus(1)), (std::vector<std::string>{"a-gpu4"}));
  // Free cells of 2: [0,1] and [2,3] inside the free 4-cell, [6,7] whose buddy [4,5] is taken.
  EXPECT_EQ(placeAndTake(pool, gpus(2)), (std::vector<std::string>{"a-gpu6", "a-gpu7"}));
  EXPECT_EQ(placeAndTake(pool, gpus(4)), (std::vector<std::string>{"a-gpu0", "a-gpu1", "a-gpu2", "a-gpu3"}));
  EXPECT_EQ(pool.freeCount(), 0);
}

TEST(HivedBuddy, ANonPowerOfTwoRequestTakesTheFrontOfItsCell) {
  Pool pool(TopologyBuilder().sw("a").gpus("a", 8).host("h", {"a"}).build());
  EXPECT_EQ(placeAndTake(pool, gpus(3)), (std::vector<std::string>{"a-gpu0", "a-gpu1", "a-gpu2"}));
  EXPECT_EQ(placeAndTake(pool, gpus(1)), (std::vector<std::string>{"a-gpu3"})) << "the free slot left in the 4-cell";
  EXPECT_EQ(placeAndTake(pool, gpus(4)).size(), 4u);
}

TEST(HivedBuddy, RefusesFreeGpusThatFormNoAlignedCell) {
  Pool pool(TopologyBuilder().sw("a").gpus("a", 8).host("h", {"a"}).build());
  for (auto id : {"a-gpu0", "a-gpu2", "a-gpu4", "a-gpu6"}) take(pool, id);
  PlacementRequest r = gpus(2);
  r.explain = true;
  auto d = place(hived(), pool, r);
  ASSERT_FALSE(d.placement) << "four GPUs are free, but no two of them form a cell";
  ASSERT_TRUE(d.error);
  EXPECT_NE(d.error->message.find("no free aligned cell of 2"), std::string::npos) << d.error->message;
  EXPECT_TRUE(place(pool, gpus(2)).placement) << "switchyard-v1 gathers them";
}

TEST(HivedBuddy, LargerThanASwitchTakesWholeFreeSwitchesOfOneFabric) {
  const Topology t = TopologyBuilder().sw("a").sw("b").sw("c").gpus("a", 4).gpus("b", 4).gpus("c", 4).link("a", "b")
                         .host("h", {"a"}).build();
  Pool pool(t);
  auto d = place(hived(), pool, gpus(6));
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(deviceIds(*d.placement), (std::vector<std::string>{"a-gpu0", "a-gpu1", "a-gpu2", "a-gpu3", "b-gpu0", "b-gpu1"}));
  EXPECT_EQ(switchesOf(*d.placement), (std::set<std::string>{"a", "b"})) << "c is in another fabric";

  EXPECT_FALSE(place(hived(), pool, gpus(6, PeerToPeer::kRequired)).placement);
  take(pool, "b-gpu3");
  PlacementRequest r = gpus(6);
  r.explain = true;
  auto refused = place(hived(), pool, r);
  ASSERT_FALSE(refused.placement) << "b is no longer a whole free cell";
  EXPECT_NE(refused.error->message.find("whole free switches of one fabric"), std::string::npos) << refused.error->message;
}

TEST(HivedBuddy, NeverHandsOutATakenDeviceAndKeepsP2pUnderOneSwitch) {
  TopologyShape shape;
  shape.totalGpus = 256;
  shape.gpusPerSwitch = 16;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = 16;
  Pool pool(generateTopology(shape));
  std::mt19937_64 rng(7);
  std::vector<std::pair<int, std::vector<int>>> live;  // host, devices
  const int sizes[] = {1, 2, 3, 4, 8, 16, 24};
  int placed = 0;
  for (int step = 0; step < 3000; ++step) {
    if (!live.empty() && rng() % 2 == 0) {
      const std::size_t k = rng() % live.size();
      for (int di : live[k].second) pool.setFree(di, true);
      pool.addAttached(live[k].first, -static_cast<int>(live[k].second.size()));
      pool.setInSystem(live[k].first, false);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      continue;
    }
    PlacementRequest r = gpus(sizes[rng() % 7], rng() % 2 ? PeerToPeer::kRequired : PeerToPeer::kPreferred);
    auto d = place(hived(), pool, r);
    if (!d.placement) continue;
    ASSERT_EQ(static_cast<int>(d.placement->devices.size()), r.gpuCount);
    if (r.peerToPeer == PeerToPeer::kRequired) EXPECT_EQ(switchesOf(*d.placement).size(), 1u);
    const int h = pool.hostIndex(d.placement->hostId);
    ASSERT_FALSE(pool.hosts()[static_cast<std::size_t>(h)].inSystem);
    std::vector<int> taken;
    for (const auto& dev : d.placement->devices) {
      const int di = pool.deviceIndex(dev.deviceId);
      ASSERT_TRUE(pool.devices()[static_cast<std::size_t>(di)].free) << dev.deviceId << " handed out twice";
      pool.setFree(di, false);
      taken.push_back(di);
    }
    pool.addAttached(h, r.gpuCount);
    ASSERT_LE(pool.hosts()[static_cast<std::size_t>(h)].attachedDevices, pool.hosts()[static_cast<std::size_t>(h)].maxDevices);
    pool.setInSystem(h, true);
    live.emplace_back(h, std::move(taken));
    ++placed;
  }
  EXPECT_GT(placed, 500) << "the churn must exercise placements, not only refusals";
}

TEST(PackingProfiles, UnknownProfileNamesTheKnownOnes) {
  auto bad = buildComposableScheduler("fgd");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("switchyard-v1, switchyard-v2, hived-buddy"), std::string::npos) << bad.error().message;
  EXPECT_TRUE(buildComposableScheduler("hived-buddy", {{"best-fit", 0}}));
}

int placeable(const CapacityReport& r, int gpus) {
  for (const auto& s : r.shapes)
    if (s.shape.gpus == gpus) return s.placeable;
  return -1;
}

TEST(Capacity, CountsWhatFitsNotWhatIsFree) {
  Pool pool(defaultTopology());
  auto r = usableCapacity(pool, defaultShapes());
  EXPECT_EQ(r.freeGpus, 16);
  EXPECT_EQ(r.strandedGpus, 0);
  EXPECT_EQ(placeable(r, 1), 4) << "one system per host: four free hosts";
  EXPECT_EQ(placeable(r, 8), 2) << "one per switch";
  EXPECT_EQ(placeable(r, 16), 0) << "no switch holds 16 GPUs";

  // Two GPUs taken on each switch: 12 free GPUs, but no 8-GPU peer-to-peer group left.
  for (auto id : {"sw0-gpu0", "sw0-gpu1", "sw1-gpu0", "sw1-gpu1"}) take(pool, id);
  r = usableCapacity(pool, defaultShapes());
  EXPECT_EQ(r.freeGpus, 12);
  EXPECT_EQ(placeable(r, 8), 0);
  EXPECT_EQ(placeable(r, 4), 2);
  EXPECT_EQ(pool.freeCount(), 12) << "the pool itself is untouched";
}

TEST(Capacity, FreeGpusNoFreeHostCanReachAreStranded) {
  Pool pool(defaultTopology());
  for (int h = 0; h < 4; ++h) pool.setInSystem(h, true);
  auto r = usableCapacity(pool, {{1, PeerToPeer::kNone, {}}});
  EXPECT_EQ(r.strandedGpus, 16);
  EXPECT_EQ(r.strandedAttachableGpus, 16) << "every host serves a system with room to grow: all of them can still be attached";
  EXPECT_EQ(placeable(r, 1), 0);
  pool.setInSystem(2, false);
  EXPECT_EQ(usableCapacity(pool, {}).strandedGpus, 0);
  EXPECT_EQ(usableCapacity(pool, {}).strandedAttachableGpus, 0);
}

TEST(Capacity, StrandedGpusNoSystemsHostCanGrowOntoAreNotAttachable) {
  // Every host serves a system and is at its device limit: the free GPUs are stranded for attaching too.
  auto topology = defaultTopology();
  for (auto& h : topology.hosts) h.maxDevices = 0;
  Pool pool(topology);
  for (int h = 0; h < 4; ++h) pool.setInSystem(h, true);
  const auto r = usableCapacity(pool, {});
  EXPECT_EQ(r.strandedGpus, 16);
  EXPECT_EQ(r.strandedAttachableGpus, 0);
}

// Placements never cross a fabric domain, so capacity is counted per domain and the domains add up.
TEST(Capacity, IsReportedPerFabricDomain) {
  Pool pool(TopologyBuilder()
                .sw("a0").sw("a1").sw("b0").link("a0", "a1")
                .gpus("a0", 8).gpus("a1", 8).gpus("b0", 4)
                .host("ha0", {"a0"}).host("ha1", {"a1"}).host("hb0", {"b0"}).host("hb1", {"b0"})
                .domain("east", {"a0", "a1"}).domain("west", {"b0"})
                .build());
  ASSERT_EQ(pool.domains(), (std::vector<std::string>{"east", "west"}));
  auto r = usableCapacity(pool, defaultShapes());
  ASSERT_EQ(r.domains.size(), 2u);
  const auto& east = r.domains[0];
  const auto& west = r.domains[1];
  EXPECT_EQ(east.domain, "east");
  EXPECT_EQ(east.freeGpus, 16);
  EXPECT_EQ(west.freeGpus, 4);
  EXPECT_EQ(east.freeGpus + west.freeGpus, r.freeGpus);
  ASSERT_EQ(east.shapes.size(), r.shapes.size());
  for (std::size_t i = 0; i < r.shapes.size(); ++i)
    EXPECT_EQ(east.shapes[i].placeable + west.shapes[i].placeable, r.shapes[i].placeable) << r.shapes[i].shape.gpus << " GPUs";
  EXPECT_EQ(east.shapes[3].placeable, 2) << "8 GPUs: one per east switch";
  EXPECT_EQ(west.shapes[3].placeable, 0) << "west has 4 GPUs";
  EXPECT_EQ(west.shapes[1].placeable, 2) << "2 GPUs: two west hosts";

  for (int h : {pool.hostIndex("hb0"), pool.hostIndex("hb1")}) pool.setInSystem(h, true);
  r = usableCapacity(pool, defaultShapes());
  EXPECT_EQ(r.domains[1].strandedGpus, 4) << "no free west host reaches west's GPUs";
  EXPECT_EQ(r.domains[0].strandedGpus, 0);
  EXPECT_EQ(r.strandedGpus, 4);
}

TEST(Capacity, HonoursModel) {
  Pool pool(defaultTopology());
  auto r = usableCapacity(pool, {{8, PeerToPeer::kRequired, "A100-SXM4-40GB"}, {9, PeerToPeer::kPreferred, {}}});
  EXPECT_EQ(placeable(r, 8), 1);
  EXPECT_EQ(placeable(r, 9), 1) << "P2P preferred may span both switches";
}

}  // namespace
}  // namespace switchyard
