// Fractional GPUs on composable hosts: the fill-before-attach plan, placement of the fresh GPUs it
// needs, and usable capacity per MIG profile.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "composer/packing/capacity.h"
#include "composer/packing/gpu_instances.h"
#include "composer/packing/composable_model.h"
#include "composer/packing/packing.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

using testing::TopologyBuilder;

std::vector<MigProfile> profiles(std::initializer_list<MigProfile> p) { return p; }

TEST(GpuInstancePlan, FreshGpusArePackedLargestFirst) {
  // 1g,4g,1g,3g,2g: 4g+3g fill one GPU, 2g+1g+1g share a second.
  const auto plan = planGpuInstances({}, profiles({MigProfile::k1g, MigProfile::k4g, MigProfile::k1g, MigProfile::k3g, MigProfile::k2g}));
  EXPECT_TRUE(plan.onBound.empty());
  ASSERT_EQ(plan.onFresh.size(), 2u);
  EXPECT_EQ(plan.onFresh[0].size(), 2u);
  EXPECT_EQ(plan.onFresh[1].size(), 3u);
}

TEST(GpuInstancePlan, FillsTheFullestPartlyUsedGpuThatFits) {
  // gpu-a has a 3g (4 free compute), gpu-b has a 4g and a 1g (2 free): a 1g goes on gpu-b.
  const std::vector<GpuInstance> bound{{"gpu-a", MigProfile::k3g, 0}, {"gpu-b", MigProfile::k4g, 0}, {"gpu-b", MigProfile::k1g, 4}};
  auto plan = planGpuInstances(bound, profiles({MigProfile::k1g}));
  ASSERT_EQ(plan.onBound.size(), 1u);
  EXPECT_EQ(plan.onBound[0].deviceId, "gpu-b");
  EXPECT_TRUE(plan.onFresh.empty());
  // A 3g fits only on gpu-a (slices 4-7).
  plan = planGpuInstances(bound, profiles({MigProfile::k3g}));
  ASSERT_EQ(plan.onBound.size(), 1u);
  EXPECT_EQ(plan.onBound[0].deviceId, "gpu-a");
  EXPECT_EQ(plan.onBound[0].start, 4);
  // A 7g fits on neither: one fresh GPU.
  plan = planGpuInstances(bound, profiles({MigProfile::k7g}));
  EXPECT_TRUE(plan.onBound.empty());
  EXPECT_EQ(plan.onFresh.size(), 1u);
}

// Property: whatever is asked, the plan places every profile once, never overlaps slices on a GPU
// (bound or fresh), and opens a fresh GPU only when the request could not be placed on the GPUs
// at hand in that order.
TEST(GpuInstancePlan, NeverOverlapsSlicesAndPlacesEverything) {
  std::mt19937 rng(7);
  for (int round = 0; round < 500; ++round) {
    std::vector<GpuInstance> bound;
    const int gpus = static_cast<int>(rng() % 4);
    for (int g = 0; g < gpus; ++g) {
      MigLayout layout;
      for (int k = 0; k < 4; ++k) {
        const MigProfile p = kMigProfiles[rng() % kMigProfiles.size()];
        if (auto s = layout.placeBest(p)) bound.push_back({"gpu-" + std::to_string(g), p, *s});
      }
    }
    std::vector<MigProfile> request;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) request.push_back(kMigProfiles[rng() % kMigProfiles.size()]);

    const auto plan = planGpuInstances(bound, request);
    std::size_t placed = plan.onBound.size();
    for (const auto& fresh : plan.onFresh) {
      EXPECT_FALSE(fresh.empty()) << "a fresh GPU opened for nothing";
      MigLayout layout;
      for (const auto& i : fresh) EXPECT_TRUE(layout.place(i.profile, i.start)) << "overlap on a fresh GPU";
      placed += fresh.size();
    }
    EXPECT_EQ(placed, request.size());
    std::map<DeviceId, MigLayout> layouts;
    for (const auto& i : bound) layouts[i.deviceId].place(i.profile, i.start);
    for (const auto& i : plan.onBound) EXPECT_TRUE(layouts[i.deviceId].place(i.profile, i.start)) << describe(i) << " overlaps";
    // Fill before attach: had a fresh GPU been opened while the bound GPUs could still take the first
    // profile that went fresh, that profile would be on a bound GPU.
    if (!plan.onFresh.empty())
      for (auto& [id, layout] : layouts) EXPECT_FALSE(layout.canPlace(plan.onFresh.front().front().profile)) << id;
  }
}

Topology migPool() {
  Topology t = TopologyBuilder().sw("sw0").gpus("sw0", 4).sw("sw1").gpus("sw1", 2).host("h0", {"sw0", "sw1"}).host("h1", {"sw1"}, 1).build();
  for (auto& d : t.devices)
    if (d.id == "sw0-gpu0" || d.id == "sw0-gpu1") d.migCapable = false;
  return t;
}

TEST(GpuInstancePlacement, UsesOnlyMigCapableGpusAndCarvesThem) {
  Pool pool(migPool());
  PlacementRequest r;
  r.gpuInstances = profiles({MigProfile::k7g, MigProfile::k7g, MigProfile::k7g});
  const auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  ASSERT_EQ(d.placement->devices.size(), 3u);
  for (const auto& dev : d.placement->devices) EXPECT_NE(dev.deviceId.substr(0, 8), "sw0-gpu0");
  EXPECT_EQ(d.placement->gpuInstances.size(), 3u);
  r.gpuInstances.push_back(MigProfile::k7g);
  r.gpuInstances.push_back(MigProfile::k7g);
  const auto none = place(pool, r);
  ASSERT_FALSE(none.placement);
  EXPECT_EQ(none.error->code, Code::kResourceExhausted);
  EXPECT_NE(none.error->message.find("5 fresh MIG-capable GPU(s)"), std::string::npos) << none.error->message;
}

TEST(GpuInstancePlacement, AnAttachThatFitsOnBoundGpusNeedsNoDevice) {
  Pool pool(migPool());
  pool.setInSystem(pool.hostIndex("h1"), true);
  pool.addAttached(pool.hostIndex("h1"), 1);  // at its limit of one device
  PlacementRequest r;
  r.host = "h1";
  r.hostMayHaveSystem = true;
  r.boundInstances = {{"sw1-gpu0", MigProfile::k4g, 0}};
  r.gpuInstances = profiles({MigProfile::k2g, MigProfile::k1g});
  auto d = place(pool, r);
  ASSERT_TRUE(d.placement) << d.error->message;
  EXPECT_TRUE(d.placement->devices.empty());
  EXPECT_EQ(d.placement->gpuInstances.size(), 2u);
  r.gpuInstances = profiles({MigProfile::k4g});
  d = place(pool, r);
  ASSERT_FALSE(d.placement) << "a second GPU would break h1's device limit";
  EXPECT_NE(d.error->message.find("device limit"), std::string::npos) << d.error->message;
}

TEST(GpuInstancePlacement, RejectsMixingInstancesWithExplicitDevices) {
  Pool pool(migPool());
  PlacementRequest r;
  r.host = "h0";
  r.devices = {"sw0-gpu2"};
  r.gpuInstances = profiles({MigProfile::k1g});
  EXPECT_EQ(place(pool, r).error->code, Code::kInvalidArgument);
  PlacementRequest unpinned;
  unpinned.gpuInstances = profiles({MigProfile::k1g});
  unpinned.boundInstances = {{"sw1-gpu0", MigProfile::k4g, 0}};
  EXPECT_EQ(place(pool, unpinned).error->code, Code::kInvalidArgument) << "partly used GPUs without their host";
}

TEST(MigCapacity, SeparatesPartlyUsedGpusFromAttachableOnes) {
  Pool pool(migPool());
  // h1 (limit 1) serves a system with sw1-gpu0 carved 3g@0; h0 can attach the other 3 MIG GPUs.
  pool.setFree(pool.deviceIndex("sw1-gpu0"), false);
  pool.setInSystem(pool.hostIndex("h1"), true);
  pool.addAttached(pool.hostIndex("h1"), 1);
  CapacityQuery q{{}, {MigProfile::k1g, MigProfile::k3g, MigProfile::k4g}, {{"sw1-gpu0", MigProfile::k3g, 0}}};
  const auto report = usableCapacity(defaultComposableScheduler(), pool, q);
  EXPECT_EQ(report.attachableMigGpus, 3);
  ASSERT_EQ(report.mig.size(), 3u);
  EXPECT_EQ(report.mig[0].onPartlyUsedGpus, 3);  // 1g at 4, 5, 6
  EXPECT_EQ(report.mig[0].onFreeGpus, 21);
  EXPECT_EQ(report.mig[1].onPartlyUsedGpus, 1);  // 3g at 4
  EXPECT_EQ(report.mig[1].onFreeGpus, 6);
  EXPECT_EQ(report.mig[2].onPartlyUsedGpus, 0);  // 4g only starts at 0
  EXPECT_EQ(report.mig[2].onFreeGpus, 3);
}

}  // namespace
}  // namespace switchyard
