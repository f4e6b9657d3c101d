// Pooled memory as a composable resource: a request's GiB come as whole cxl-memory devices (a CXL pool's
// logical devices) from under the chosen host's own switches, with the GPUs or alone.
#include <gtest/gtest.h>

#include <algorithm>

#include "composer/packing/packing.h"
#include "composer/packing/pool.h"
#include "composer/packing/pooled_memory.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

using testing::TopologyBuilder;

std::vector<DeviceId> memoryOf(const Pool& pool, const Placement& p) {
  std::vector<DeviceId> out;
  for (const auto& d : p.devices)
    if (pool.devices()[static_cast<std::size_t>(pool.deviceIndex(d.deviceId))].kind == DeviceKind::kCxlMemory) out.push_back(d.deviceId);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(PooledMemoryTest, TheFewestDevicesThenTheLeastLeftOver) {
  const Topology t = TopologyBuilder().sw("sw0").memoryPool("sw0", {1, 2, 4}).host("h0", {"sw0"}).build();
  const Pool pool(t);
  auto ids = [&](const std::optional<std::vector<int>>& chosen) {
    std::vector<DeviceId> out;
    for (int i : chosen.value()) out.push_back(pool.devices()[static_cast<std::size_t>(i)].id);
    return out;
  };
  EXPECT_EQ(ids(choosePooledMemory(pool, 0, 3, 8)), (std::vector<DeviceId>{"sw0-mem0-ld2"}));                  // the 4
  EXPECT_EQ(ids(choosePooledMemory(pool, 0, 5, 8)), (std::vector<DeviceId>{"sw0-mem0-ld0", "sw0-mem0-ld2"}));  // 4 + 1
  EXPECT_EQ(ids(choosePooledMemory(pool, 0, 2, 8)), (std::vector<DeviceId>{"sw0-mem0-ld1"}));                  // exactly
  EXPECT_EQ(ids(choosePooledMemory(pool, 0, 7, 8)).size(), 3u);
  EXPECT_FALSE(choosePooledMemory(pool, 0, 8, 8));  // 7 GiB in all
  EXPECT_FALSE(choosePooledMemory(pool, 0, 6, 1));  // would take two devices; one slot left
}

TEST(PooledMemoryTest, GpusAndMemoryComeFromTheHostsOwnSwitch) {
  // h0 on sw0 (GPUs, no memory), h1 on sw1 (GPUs and 4 x 64 GiB): 2 GPUs + 100 GiB can only go to h1.
  const Topology t = TopologyBuilder()
                         .sw("sw0").sw("sw1").link("sw0", "sw1")
                         .gpus("sw0", 4).gpus("sw1", 4)
                         .memoryPool("sw1", {64, 64, 64, 64})
                         .host("h0", {"sw0"}).host("h1", {"sw1"})
                         .build();
  const Pool pool(t);
  PlacementRequest r;
  r.gpuCount = 2;
  r.pooledMemoryGiB = 100;
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(d.placement->hostId, "h1");
  EXPECT_EQ(d.placement->devices.size(), 4u);
  EXPECT_EQ(memoryOf(pool, *d.placement), (std::vector<DeviceId>{"sw1-mem4-ld0", "sw1-mem4-ld1"}));
  EXPECT_NE(d.placement->explanation.find("100 GiB pooled memory in 2 device(s) (128 GiB)"), std::string::npos) << d.placement->explanation;
  // Not across the inter-switch link: h0 reaches none of it.
  EXPECT_EQ(reachableMemory(pool, pool.hostIndex("h0")).gib, 0);
  EXPECT_EQ(reachableMemory(pool, pool.hostIndex("h1")).gib, 256);
}

TEST(PooledMemoryTest, MemoryAloneGoesWhereItLeavesTheLeastOver) {
  const Topology t = TopologyBuilder()
                         .sw("sw0").sw("sw1")
                         .memoryPool("sw0", {128, 128}).memoryPool("sw1", {32, 32, 32, 32})
                         .host("h0", {"sw0"}).host("h1", {"sw1"})
                         .build();
  const Pool pool(t);
  PlacementRequest r;
  r.pooledMemoryGiB = 96;
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(d.placement->hostId, "h1");  // 3 x 32 = 96 exactly; h0 would give 128
  EXPECT_EQ(d.placement->devices.size(), 3u);
  r.pooledMemoryGiB = 200;
  d = place(pool, r);
  ASSERT_TRUE(d.placement);
  EXPECT_EQ(d.placement->hostId, "h0");
}

TEST(PooledMemoryTest, NotEnoughSaysWhatEachHostReaches) {
  const Topology t = TopologyBuilder().sw("sw0").gpus("sw0", 2).memoryPool("sw0", {16, 16}).host("h0", {"sw0"}).build();
  Pool pool(t);
  PlacementRequest r;
  r.gpuCount = 1;
  r.pooledMemoryGiB = 64;
  auto d = place(pool, r);
  ASSERT_FALSE(d.placement);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->code, Code::kResourceExhausted);
  EXPECT_NE(d.error->message.find("h0: 32 GiB free there"), std::string::npos) << d.error->message;
  // Taken devices are not counted.
  pool.setFree(pool.deviceIndex("sw0-mem2-ld0"), false);
  EXPECT_EQ(reachableMemory(pool, 0).gib, 16);
  // A negative size is refused as such.
  r.pooledMemoryGiB = -1;
  d = place(pool, r);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.error->code, Code::kInvalidArgument);
}

// Memory alone refused on many hosts: eight named per reason, the rest counted, as the scheduler's refusals say it.
TEST(PooledMemoryTest, MemoryAloneRefusedOnManyHostsNamesEightPerReason) {
  TopologyBuilder b;
  b.sw("sw0").memoryPool("sw0", {16});
  for (int h = 0; h < 12; ++h) b.host("h" + std::to_string(h), {"sw0"});
  Pool pool(b.build());
  pool.setInSystem(pool.hostIndex("h3"), true);
  PlacementRequest r;
  r.pooledMemoryGiB = 64;
  auto d = place(pool, r);
  ASSERT_TRUE(d.error);
  EXPECT_EQ(d.candidates.size(), 9U) << d.error->message;  // eight that reach too little, the one in a system
  ASSERT_EQ(d.unexplained.size(), 1U);
  EXPECT_EQ(d.unexplained[0].rejectedBy, "companions");
  EXPECT_EQ(d.unexplained[0].hosts, 3U);
  EXPECT_NE(d.error->message.find("h3: serves a composed system"), std::string::npos) << d.error->message;
  EXPECT_NE(d.error->message.find("... and 3 more host(s): 3 rejected by companions"), std::string::npos) << d.error->message;
  r.explain = true;  // Plan: every host
  EXPECT_EQ(place(pool, r).candidates.size(), 12U);
}

TEST(PooledMemoryTest, AttachOnAPinnedHostTakesOnlyItsSwitchesMemory) {
  const Topology t = TopologyBuilder().sw("sw0").sw("sw1").memoryPool("sw0", {8, 8}).memoryPool("sw1", {64}).host("h0", {"sw0"}).host("h1", {"sw1"}).build();
  Pool pool(t);
  pool.setInSystem(pool.hostIndex("h0"), true);
  PlacementRequest r;
  r.pooledMemoryGiB = 16;
  r.host = "h0";
  r.hostMayHaveSystem = true;
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_EQ(d.placement->devices.size(), 2u);
  r.pooledMemoryGiB = 32;
  d = place(pool, r);
  EXPECT_FALSE(d.placement);
}

}  // namespace
}  // namespace switchyard
