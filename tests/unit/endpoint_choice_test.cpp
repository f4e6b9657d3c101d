// Drives and NICs by count beside a request's GPUs (ADR 0031): near the GPUs they serve, spread over the
// GPUs' switches, never emptying another switch of its only one while spares exist, and a refusal that
// says what the host reaches.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "composer/model/endpoint_demand.h"
#include "composer/packing/capacity.h"
#include "composer/packing/endpoint_choice.h"
#include "composer/packing/packing.h"
#include "composer/packing/pool.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

using testing::TopologyBuilder;

std::vector<DeviceId> endpointsOfKind(const Pool& pool, const Placement& p, DeviceKind kind) {
  std::vector<DeviceId> out;
  for (const auto& d : p.devices)
    if (pool.devices()[static_cast<std::size_t>(pool.deviceIndex(d.deviceId))].kind == kind) out.push_back(d.deviceId);
  std::sort(out.begin(), out.end());
  return out;
}

EndpointDemand nicDemand(int count, Affinity affinity = Affinity::kDomain) { return {DeviceKind::kNic, count, "", 0, affinity}; }

TEST(EndpointChoiceTest, NicsGoUnderTheSwitchesOfTheGpusTheyServe) {
  // h0 reaches sw0 and sw1; 4 GPUs fit only on sw1 (p2p required): its NIC goes with them, not sw0's.
  const Topology t = TopologyBuilder().sw("sw0").sw("sw1").gpus("sw0", 2).nics("sw0", 1).gpus("sw1", 4).nics("sw1", 1).host("h0", {"sw0", "sw1"}).build();
  const Pool pool(t);
  PlacementRequest r;
  r.gpuCount = 4;
  r.peerToPeer = PeerToPeer::kRequired;
  r.endpoints = {nicDemand(1, Affinity::kSwitch)};
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(endpointsOfKind(pool, *d.placement, DeviceKind::kNic), (std::vector<DeviceId>{"sw1-nic4"}));
  EXPECT_NE(d.placement->explanation.find("1 nic (sw1-nic4), 1 under the GPUs' switches"), std::string::npos) << d.placement->explanation;
  // The NIC is bound through the host's port into its switch.
  for (const auto& p : d.placement->devices)
    if (p.deviceId == "sw1-nic4") EXPECT_EQ(p.upstreamPortId, "sw1-usp-h0");
}

TEST(EndpointChoiceTest, TheGpusGoWhereTheirNicCanBeBesideThem) {
  // h0 reaches sw0 (4 GPUs, no NIC) and sw1 (6 GPUs, a NIC). 4 GPUs alone fit tightest on sw0; with a NIC that must
  // sit beside them they go under sw1, which has it (they used to go to sw0 and the request was refused).
  const Topology t = TopologyBuilder().sw("sw0").sw("sw1").gpus("sw0", 4).gpus("sw1", 6).nics("sw1", 1).host("h0", {"sw0", "sw1"}).build();
  const Pool pool(t);
  PlacementRequest alone;
  alone.gpuCount = 4;
  alone.peerToPeer = PeerToPeer::kRequired;
  auto a = place(pool, alone);
  ASSERT_TRUE(a.placement);
  EXPECT_EQ(a.placement->devices.front().switchId, "sw0") << "GPU-only placement is unchanged: the tightest switch";
  PlacementRequest r = alone;
  r.endpoints = {nicDemand(1, Affinity::kSwitch)};
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  for (const auto& p : d.placement->devices) EXPECT_EQ(p.switchId, "sw1") << p.deviceId;
  EXPECT_EQ(endpointsOfKind(pool, *d.placement, DeviceKind::kNic).size(), 1u);
  // Where no switch has both, the tightest fit stands and the refusal says what is missing.
  PlacementRequest two = r;
  two.endpoints = {nicDemand(2, Affinity::kSwitch)};
  auto refused = place(pool, two);
  ASSERT_FALSE(refused.placement);
  EXPECT_NE(refused.error->message.find("0 free under its GPUs' switches, 1 elsewhere it reaches"), std::string::npos) << refused.error->message;
}

// Issue 62, item 3: GPUs alone are not taken from beside a free NIC when another place fits ("spare-endpoints"),
// so the requests that need a NIC under their GPUs still find one (switchyard_bench nic-stranding measures it).
TEST(EndpointChoiceTest, GpusAloneSpareASwitchsFreeNicWhenAnotherPlaceFits) {
  // h0 reaches sw0 (4 GPUs and a NIC), h1 reaches sw1 (6 GPUs, no NIC): the tightest fit for 4 GPUs is sw0.
  const Topology t = TopologyBuilder().sw("sw0").sw("sw1").gpus("sw0", 4).nics("sw0", 1).gpus("sw1", 6).host("h0", {"sw0"}).host("h1", {"sw1"}).build();
  Pool pool(t);
  PlacementRequest alone;
  alone.gpuCount = 4;
  alone.peerToPeer = PeerToPeer::kRequired;
  auto a = place(pool, alone);
  ASSERT_TRUE(a.placement);
  EXPECT_EQ(a.placement->hostId, "h1") << "not beside sw0's free NIC";
  // The NIC taken, sw0 holds nothing to strand: the tightest fit again.
  pool.setFree(pool.deviceIndex("sw0-nic4"), false);
  auto b = place(pool, alone);
  ASSERT_TRUE(b.placement);
  EXPECT_EQ(b.placement->hostId, "h0");
  // Where only the NIC's switch fits, the GPUs go there (sparing is a preference, never a refusal).
  pool.setFree(pool.deviceIndex("sw0-nic4"), true);
  alone.gpuCount = 1;
  for (int i = 0; i < 6; ++i) pool.setFree(pool.deviceIndex(fmt::format("sw1-gpu{}", i)), false);
  auto c = place(pool, alone);
  ASSERT_TRUE(c.placement);
  EXPECT_EQ(c.placement->hostId, "h0");
  // A request with its own NIC is not steered away from one.
  PlacementRequest withNic = alone;
  withNic.endpoints = {nicDemand(1, Affinity::kSwitch)};
  auto d = place(pool, withNic);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(d.placement->hostId, "h0");

  // A free GPU that is critical is no drive or NIC: its switch has nothing to spare, and keeps the tightest fit.
  const Topology u = TopologyBuilder().sw("sw0").sw("sw1").gpus("sw0", 5).gpus("sw1", 6).host("h0", {"sw0"}).host("h1", {"sw1"}).build();
  Pool sick(u);
  sick.setHealth(sick.deviceIndex("sw0-gpu4"), DeviceHealth::kCritical);
  alone.gpuCount = 4;
  auto e = place(sick, alone);
  ASSERT_TRUE(e.placement);
  EXPECT_EQ(e.placement->hostId, "h0");
}

// Capacity by kind (issue 62, item 3): free drives and NICs, and of those the ones under a switch that still has a
// free GPU (what a request with one beside its GPUs can have); `yardctl capacity` and /metrics show them.
TEST(EndpointChoiceTest, CapacityCountsFreeDrivesAndNicsAndThoseBesideAFreeGpu) {
  const Topology t = TopologyBuilder().sw("sw0").sw("sw1").gpus("sw0", 4).nics("sw0", 1).gpus("sw1", 2).nics("sw1", 1).endpoints("sw1", DeviceKind::kNvme, 2)
                         .host("h0", {"sw0", "sw1"}).build();
  Pool pool(t);
  for (const char* gpu : {"sw1-gpu0", "sw1-gpu1"}) pool.setFree(pool.deviceIndex(gpu), false);
  pool.setFree(pool.deviceIndex("sw1-nvme4"), false);
  const CapacityReport r = usableCapacity(pool, {});
  ASSERT_EQ(r.endpoints.size(), 2u);
  const EndpointCapacity& nvme = r.endpoints[0].kind == DeviceKind::kNvme ? r.endpoints[0] : r.endpoints[1];
  const EndpointCapacity& nic = r.endpoints[0].kind == DeviceKind::kNic ? r.endpoints[0] : r.endpoints[1];
  EXPECT_EQ((std::tuple{nic.model, nic.total, nic.free, nic.besideFreeGpus}), (std::tuple{std::string("ConnectX-7"), 2, 2, 1}))
      << "sw1's NIC has no free GPU beside it";
  EXPECT_EQ((std::tuple{nvme.total, nvme.free, nvme.besideFreeGpus}), (std::tuple{2, 1, 0}));
}

TEST(EndpointChoiceTest, SpreadOverTheGpusSwitchesByTheirShare) {
  // 6 GPUs across sw0 (2) and sw1 (4), 3 NICs: sw1 gets 2 and sw0 1 (2 GPUs per NIC on each). Taking them in
  // switch order, or all from the first switch, would give sw0 2 or 3.
  const Topology t = TopologyBuilder().sw("sw0").sw("sw1").gpus("sw0", 2).nics("sw0", 3).gpus("sw1", 4).nics("sw1", 3).host("h0", {"sw0", "sw1"}).build();
  const Pool pool(t);
  PlacementRequest r;
  r.gpuCount = 6;
  r.peerToPeer = PeerToPeer::kNone;
  r.endpoints = {nicDemand(3, Affinity::kSwitch)};
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  const auto nics = endpointsOfKind(pool, *d.placement, DeviceKind::kNic);
  ASSERT_EQ(nics.size(), 3u);
  EXPECT_EQ(std::count_if(nics.begin(), nics.end(), [](const DeviceId& id) { return id.starts_with("sw1-"); }), 2);
}

TEST(EndpointChoiceTest, AffinitySwitchRefusesWhatDomainTakesFromElsewhere) {
  // The GPUs' switch sw0 has no NIC; sw1 (reached directly) has one, sw2 two.
  const Topology t = TopologyBuilder().sw("sw0").sw("sw1").sw("sw2").gpus("sw0", 2).nics("sw1", 1).nics("sw2", 2).host("h0", {"sw0", "sw1", "sw2"}).build();
  const Pool pool(t);
  PlacementRequest r;
  r.gpuCount = 2;
  r.endpoints = {nicDemand(1, Affinity::kSwitch)};
  auto refused = place(pool, r);
  ASSERT_FALSE(refused.placement);
  EXPECT_EQ(refused.error->code, Code::kResourceExhausted);
  EXPECT_NE(refused.error->message.find("0 free under its GPUs' switches, 3 elsewhere it reaches (affinity switch)"), std::string::npos)
      << refused.error->message;
  r.endpoints = {nicDemand(1, Affinity::kDomain)};
  auto taken = place(pool, r);
  ASSERT_TRUE(taken.placement) << taken.error->message;
  // From sw2, which has two: sw1's only NIC stays.
  EXPECT_EQ(endpointsOfKind(pool, *taken.placement, DeviceKind::kNic), (std::vector<DeviceId>{"sw2-nic0"}));
}

// Asked whether there are `enough`, the count stops there and leaves out switches an affinity-switch demand cannot
// use; whether it reaches the count is what the whole count says.
TEST(EndpointChoiceTest, ASupplyCountStopsAtEnoughAndSaysTheSameAsTheWholeCount) {
  const Topology t = TopologyBuilder().sw("sw0").sw("sw1").sw("sw2").gpus("sw0", 2).nics("sw0", 2).nics("sw1", 1).nics("sw2", 2).host("h0", {"sw0", "sw1", "sw2"}).build();
  const Pool pool(t);
  const int sw0 = pool.devices()[static_cast<std::size_t>(pool.deviceIndex("sw0-gpu0"))].switchIndex;
  const std::vector<int> gpuSwitches{sw0, sw0};
  for (const Affinity affinity : {Affinity::kSwitch, Affinity::kDomain})
    for (int count = 1; count <= 6; ++count) {
      const EndpointDemand demand = nicDemand(count, affinity);
      const auto whole = endpointSupply(pool, 0, gpuSwitches, demand);
      EXPECT_EQ(whole.near, 2);
      EXPECT_EQ(whole.far, 3);
      const auto cut = endpointSupply(pool, 0, gpuSwitches, demand, count);
      const bool farServes = affinity == Affinity::kDomain;
      const int usable = whole.near + (farServes ? whole.far : 0), counted = cut.near + (farServes ? cut.far : 0);
      EXPECT_EQ(counted >= count, usable >= count) << count;
      EXPECT_LE(counted, std::max(count, usable)) << "stopped once it had enough";
      if (!farServes) EXPECT_EQ(cut.far, 0) << "the switches it cannot use are not counted";
    }
}

TEST(EndpointChoiceTest, GpusMoveToAHostThatReachesTheDrives) {
  // h0 (sw0) has GPUs and no drive; h1 (sw1) has GPUs and drives: the first choice is h0, the answer h1.
  const Topology t = TopologyBuilder().sw("sw0").sw("sw1").gpus("sw0", 2).gpus("sw1", 4).drives("sw1", 2).host("h0", {"sw0"}).host("h1", {"sw1"}).build();
  const Pool pool(t);
  PlacementRequest r;
  r.gpuCount = 2;
  r.endpoints = {{DeviceKind::kNvme, 1, "", 0, Affinity::kSwitch}};
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(d.placement->hostId, "h1");
  EXPECT_EQ(endpointsOfKind(pool, *d.placement, DeviceKind::kNvme).size(), 1u);
}

TEST(EndpointChoiceTest, CapacityAndModelAreMetByTheSmallestThatFits) {
  const Topology t = TopologyBuilder()
                         .sw("sw0")
                         .endpoints("sw0", DeviceKind::kNvme, 1, "PM1743", 1920)
                         .endpoints("sw0", DeviceKind::kNvme, 1, "PM1743", 7680)
                         .endpoints("sw0", DeviceKind::kNvme, 1, "PM1743", 3840)
                         .nics("sw0", 1, "E810")
                         .host("h0", {"sw0"})
                         .build();
  const Pool pool(t);
  PlacementRequest r;
  r.endpoints = {{DeviceKind::kNvme, 1, "", 2000, Affinity::kDomain}};  // drives alone: no GPU
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(endpointsOfKind(pool, *d.placement, DeviceKind::kNvme), (std::vector<DeviceId>{"sw0-nvme2"}));  // the 3840, not the 7680
  r.endpoints = {{DeviceKind::kNic, 1, "ConnectX-7", 0, Affinity::kDomain}};
  auto unknown = place(pool, r);
  ASSERT_TRUE(unknown.error);
  EXPECT_EQ(unknown.error->code, Code::kInvalidArgument);
  EXPECT_NE(unknown.error->message.find("no nic in the pool is a 'ConnectX-7'; the pool has: E810"), std::string::npos) << unknown.error->message;
}

TEST(EndpointChoiceTest, NicSpeedIsMetByTheSlowestThatFitsAndAnUnknownSpeedNeverMeetsOne) {
  // sw0: a 400 Gb/s, a 100 Gb/s, a 200 Gb/s NIC and one whose speed the fabric does not report.
  const Topology t = TopologyBuilder()
                         .sw("sw0")
                         .gpus("sw0", 2)
                         .nics("sw0", 1, "", 400)
                         .nics("sw0", 1, "", 100)
                         .nics("sw0", 1, "", 200)
                         .nics("sw0", 1)
                         .host("h0", {"sw0"})
                         .build();
  const Pool pool(t);
  PlacementRequest r;
  r.gpuCount = 1;
  r.endpoints = {{DeviceKind::kNic, 1, "", 0, Affinity::kSwitch, 150}};
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(endpointsOfKind(pool, *d.placement, DeviceKind::kNic), (std::vector<DeviceId>{"sw0-nic4"}));  // the 200, not the 400
  r.endpoints = {{DeviceKind::kNic, 2, "", 0, Affinity::kSwitch, 200}};
  d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(endpointsOfKind(pool, *d.placement, DeviceKind::kNic), (std::vector<DeviceId>{"sw0-nic2", "sw0-nic4"}));
  // Three at 200 Gb/s or more: two are there; the refusal counts what qualifies.
  r.endpoints = {{DeviceKind::kNic, 3, "", 0, Affinity::kSwitch, 200}};
  auto refused = place(pool, r);
  ASSERT_FALSE(refused.placement);
  EXPECT_EQ(refused.error->code, Code::kResourceExhausted);
  EXPECT_NE(refused.error->message.find("3 NIC(s) >= 200 Gb/s"), std::string::npos) << refused.error->message;
  // No speed asked: any NIC, the slowest known first (the unknown one counts as 0).
  r.endpoints = {{DeviceKind::kNic, 1, "", 0, Affinity::kSwitch}};
  d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(endpointsOfKind(pool, *d.placement, DeviceKind::kNic), (std::vector<DeviceId>{"sw0-nic5"}));
  // A speed is for NICs: asked of drives it is a malformed demand, as is one out of range.
  r.endpoints = {{DeviceKind::kNvme, 1, "", 0, Affinity::kDomain, 100}};
  auto drives = place(pool, r);
  ASSERT_TRUE(drives.error);
  EXPECT_EQ(drives.error->code, Code::kInvalidArgument);
  EXPECT_NE(drives.error->message.find("a minimum speed is for NICs"), std::string::npos) << drives.error->message;
  r.endpoints = {{DeviceKind::kNic, 1, "", 0, Affinity::kDomain, -1}};
  EXPECT_EQ(place(pool, r).error->code, Code::kInvalidArgument);
}

// Issue 62, item 1: any other endpoint class by name (an FPGA, a DPU) is asked for by count like a NIC, and only
// a device of that class meets it.
TEST(EndpointChoiceTest, AnotherClassIsAskedForByNameAndMetOnlyByThatClass) {
  const Topology t = TopologyBuilder()
                         .sw("sw0")
                         .gpus("sw0", 2)
                         .others("sw0", "dpu", 1, "BlueField-3")
                         .sw("sw1")
                         .gpus("sw1", 2)
                         .others("sw1", "fpga", 2, "Alveo U55C")
                         .host("h0", {"sw0", "sw1"})
                         .build();
  ASSERT_TRUE(validateTopology(t));
  const Pool pool(t);
  PlacementRequest r;
  r.gpuCount = 2;
  r.peerToPeer = PeerToPeer::kRequired;
  r.endpoints = {{DeviceKind::kOther, 1, "", 0, Affinity::kSwitch, 0, "fpga"}};
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(endpointsOfKind(pool, *d.placement, DeviceKind::kOther), (std::vector<DeviceId>{"sw1-fpga2"}));
  for (const auto& p : d.placement->devices) EXPECT_EQ(p.switchId, "sw1") << "the GPUs go where their FPGA can be beside them";
  EXPECT_NE(d.placement->explanation.find("1 fpga (sw1-fpga2)"), std::string::npos) << d.placement->explanation;
  // Two classes in one request, each by its own count.
  r.gpuCount = 0;
  r.endpoints = {{DeviceKind::kOther, 2, "", 0, Affinity::kDomain, 0, "fpga"}, {DeviceKind::kOther, 1, "", 0, Affinity::kDomain, 0, "dpu"}};
  d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(endpointsOfKind(pool, *d.placement, DeviceKind::kOther), (std::vector<DeviceId>{"sw0-dpu2", "sw1-fpga2", "sw1-fpga3"}));
  // A class the pool lacks is refused with what the host reaches; a class that is no name is malformed.
  r.endpoints = {{DeviceKind::kOther, 1, "", 0, Affinity::kDomain, 0, "gpu-ish"}};
  auto none = place(pool, r);
  ASSERT_FALSE(none.placement);
  EXPECT_EQ(none.error->code, Code::kResourceExhausted);
  EXPECT_NE(none.error->message.find("1 gpu-ish(s)"), std::string::npos) << none.error->message;
  EXPECT_NE(none.error->message.find("h0: 1 gpu-ish(s): reaches 0 free"), std::string::npos) << none.error->message;
  r.endpoints = {{DeviceKind::kOther, 1, "", 0, Affinity::kDomain, 0, "FPGA!"}};
  auto bad = place(pool, r);
  ASSERT_TRUE(bad.error);
  EXPECT_EQ(bad.error->code, Code::kInvalidArgument);
  EXPECT_NE(bad.error->message.find("'FPGA!' is not a class"), std::string::npos) << bad.error->message;
  r.endpoints = {{DeviceKind::kOther, 1, "Alveo U50", 0, Affinity::kDomain, 0, "fpga"}};
  auto model = place(pool, r);
  ASSERT_TRUE(model.error);
  EXPECT_NE(model.error->message.find("no fpga in the pool is a 'Alveo U50'; the pool has: Alveo U55C"), std::string::npos) << model.error->message;
}

TEST(EndpointChoiceTest, KindNamesParseAndClassesAreChecked) {
  EXPECT_EQ(parseKindName("nic"), (KindName{DeviceKind::kNic, {}}));
  EXPECT_EQ(parseKindName("fpga"), (KindName{DeviceKind::kOther, "fpga"}));
  EXPECT_EQ(parseKindName("signal-processing"), (KindName{DeviceKind::kOther, "signal-processing"}));
  for (const char* bad : {"", "FPGA", "1fpga", "fp ga", "fpga_1", "a-very-long-class-name-over-32-chars"}) EXPECT_FALSE(parseKindName(bad)) << bad;
  EXPECT_EQ(kindName(DeviceKind::kOther, "fpga"), "fpga");
  EXPECT_EQ(kindName(DeviceKind::kNvme, ""), "nvme");
  std::string error;
  const auto rule = parseAffinityRule("fpga:gpu=switch", error);
  ASSERT_TRUE(rule) << error;
  EXPECT_EQ(rule->kind, DeviceKind::kOther);
  EXPECT_EQ(rule->deviceClass, "fpga");
  Topology t = TopologyBuilder().sw("sw0").others("sw0", "fpga", 1).host("h0", {"sw0"}).build();
  EXPECT_TRUE(validateTopology(t));
  t.devices[0].deviceClass = "";
  EXPECT_FALSE(validateTopology(t)) << "another kind needs its class";
  t.devices[0].kind = DeviceKind::kNic;
  t.devices[0].deviceClass = "fpga";
  EXPECT_FALSE(validateTopology(t)) << "only another kind has a class";
}

TEST(EndpointChoiceTest, MalformedDemandsAreRefusedBeforePlacing) {
  const Topology t = TopologyBuilder().sw("sw0").gpus("sw0", 2).nics("sw0", 2).host("h0", {"sw0"}).build();
  const Pool pool(t);
  PlacementRequest r;
  r.gpuCount = 1;
  r.endpoints = {nicDemand(0)};
  EXPECT_EQ(place(pool, r).error->code, Code::kInvalidArgument);
  r.endpoints = {{DeviceKind::kGpu, 1, "", 0, Affinity::kDomain}};
  EXPECT_EQ(place(pool, r).error->code, Code::kInvalidArgument);
  r.endpoints = {nicDemand(1), nicDemand(1)};
  EXPECT_NE(place(pool, r).error->message.find("asked for twice"), std::string::npos);
  r.endpoints = {nicDemand(3)};
  auto short_ = place(pool, r);
  ASSERT_FALSE(short_.placement);
  EXPECT_EQ(short_.error->code, Code::kResourceExhausted);
}

TEST(EndpointChoiceTest, TheDeviceLimitCountsEveryKind) {
  const Topology t = TopologyBuilder().sw("sw0").gpus("sw0", 4).nics("sw0", 2).host("h0", {"sw0"}, 5).build();
  const Pool pool(t);
  PlacementRequest r;
  r.gpuCount = 4;
  r.endpoints = {nicDemand(2)};
  auto d = place(pool, r);
  ASSERT_FALSE(d.placement);
  EXPECT_NE(d.error->message.find("device limit: room for 1 more"), std::string::npos) << d.error->message;
}

TEST(EndpointChoiceTest, AffinityRulesParse) {
  std::string error;
  auto rule = parseAffinityRule("nic:gpu=switch", error);
  ASSERT_TRUE(rule);
  EXPECT_EQ(rule->kind, DeviceKind::kNic);
  EXPECT_EQ(rule->affinity, Affinity::kSwitch);
  EXPECT_EQ(parseAffinityRule("nvme:gpu=domain", error)->affinity, Affinity::kDomain);
  EXPECT_FALSE(parseAffinityRule("gpu:gpu=switch", error));
  EXPECT_NE(error.find("nic, nvme or another class"), std::string::npos) << error;
  EXPECT_FALSE(parseAffinityRule("nic:gpu=rack", error));
  EXPECT_FALSE(parseAffinityRule("nic=switch", error));
}

}  // namespace
}  // namespace switchyard
