// Pooled memory through the engine: composed with GPUs or alone, attached to a running system, counted
// against a tenant's quota in GiB, queued when it does not fit, and shown in capacity.
#include <gtest/gtest.h>

#include "composer/packing/capacity.h"
#include "tests/support/topology_builder.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

class EnginePooledMemoryTest : public EngineTest {
 protected:
  void SetUp() override {
    // Two hosts, each on its own switch with 4 GPUs and a pool of four 64 GiB logical devices.
    startFabric(testing::TopologyBuilder()
                    .sw("sw0").sw("sw1")
                    .gpus("sw0", 4).gpus("sw1", 4)
                    .memoryPool("sw0", {64, 64, 64, 64}).memoryPool("sw1", {64, 64, 64, 64})
                    .host("h0", {"sw0"}).host("h1", {"sw1"})
                    .build());
  }
  static ComposeRequest want(const std::string& name, int gpus, int memoryGiB, const std::string& tenant = "default") {
    ComposeRequest r{name, {}, {}};
    r.placement.gpuCount = gpus;
    r.placement.pooledMemoryGiB = memoryGiB;
    r.placement.tenant = tenant;
    return r;
  }
  int memoryOf(const System& s) {
    int gib = 0;
    const Topology topology = *fabric_->discover();  // kept: the loop refers into it
    for (const auto& b : s.bindings)
      for (const auto& d : topology.devices)
        if (d.id == b.deviceId && d.kind == DeviceKind::kCxlMemory) gib += d.memoryGiB;
    return gib;
  }
};

TEST_F(EnginePooledMemoryTest, GpusAndMemoryAreBoundTogetherFromTheHostsSwitch) {
  start();
  const Operation op = run(engine_->blocking().compose(Caller::local(), want("train", 2, 100)));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  auto s = engine_->reads().getSystem("train");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->bindings.size(), 4u);  // 2 GPUs and 2 x 64 GiB
  EXPECT_EQ(memoryOf(*s), 128);
  for (const auto& b : s->bindings) EXPECT_EQ(b.upstreamPortId.substr(0, 3), s->bindings.front().upstreamPortId.substr(0, 3)) << "one switch";
  EXPECT_EQ(fabricBindings().size(), 4u);
  // More memory for the running system, on its host.
  AttachRequest more{"train", {}, {}};
  more.placement.pooledMemoryGiB = 64;
  ASSERT_EQ(run(engine_->blocking().attach(Caller::local(), more)).state, OperationState::kSucceeded);
  EXPECT_EQ(memoryOf(*engine_->reads().getSystem("train")), 192);
  // Capacity shows what is left per switch.
  const auto report = engine_->reads().capacity(defaultShapes());
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->pooledMemory.size(), 2u);
  EXPECT_EQ(report->freePooledMemoryGiB, 64 + 256);
  EXPECT_EQ(report->pooledMemory[0].totalGiB, 256);
}

TEST_F(EnginePooledMemoryTest, MemoryAloneIsASystemToo) {
  start();
  const Operation op = run(engine_->blocking().compose(Caller::local(), want("cache", 0, 256)));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  EXPECT_EQ(memoryOf(*engine_->reads().getSystem("cache")), 256);
  // The other host's switch has its own; nothing crosses switches, so 300 GiB fits nowhere now.
  auto tooMuch = engine_->blocking().compose(Caller::local(), want("big", 0, 300));
  ASSERT_FALSE(tooMuch);
  EXPECT_EQ(tooMuch.error().code, Code::kResourceExhausted);
  EXPECT_NE(tooMuch.error().message.find("256 GiB"), std::string::npos) << tooMuch.error().message;
}

TEST_F(EnginePooledMemoryTest, ATenantsMemoryQuotaIsInGiBOfWholeDevices) {
  quotas_["team-a"] = TenantQuota{.maxMemoryGiB = 100};
  start();
  // 64 GiB asked is one 64 GiB device: within 100.
  ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), want("a1", 1, 64, "team-a"))).state, OperationState::kSucceeded);
  // 30 more GiB still takes a whole 64 GiB device: 128 > 100.
  auto over = engine_->blocking().compose(Caller::local(), want("a2", 1, 30, "team-a"));
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, Code::kResourceExhausted);
  EXPECT_NE(over.error().message.find("100 GiB of pooled memory"), std::string::npos) << over.error().message;
  // GPUs alone are not held back by the memory quota.
  EXPECT_EQ(run(engine_->blocking().compose(Caller::local(), want("a3", 2, 0, "team-a"))).state, OperationState::kSucceeded);
}

TEST_F(EnginePooledMemoryTest, AQueuedMemoryRequestRunsWhenMemoryFrees) {
  start();
  ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), want("hog0", 0, 256))).state, OperationState::kSucceeded);
  ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), want("hog1", 0, 256))).state, OperationState::kSucceeded);
  auto queued = want("later", 1, 128);
  queued.queue = true;
  auto accepted = engine_->blocking().compose(Caller::local(), queued);
  ASSERT_TRUE(accepted) << accepted.error().message;
  EXPECT_EQ(accepted->state, OperationState::kQueued);
  ASSERT_EQ(run(engine_->blocking().decompose(Caller::local(), "hog1")).state, OperationState::kSucceeded);
  auto done = engine_->waitOperation(accepted->id, 10s);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, OperationState::kSucceeded) << done->error;
  EXPECT_EQ(memoryOf(*engine_->reads().getSystem("later")), 128);
}

}  // namespace
}  // namespace switchyard
