// Fractional GPUs through the engine: MIG instances on bound GPUs, end to end through the step log and the store.
#include <gtest/gtest.h>

#include <thread>

#include "composer/packing/gpu_instances.h"
#include "tests/support/gated_driver.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

// Fractional GPUs: MIG instances on bound GPUs, end to end through the step log and the store.
class EngineMigTest : public EngineTest {
 protected:
  Result<Operation> composeMig(const std::string& name, std::vector<MigProfile> profiles) {
    ComposeRequest r{name, {}, {}};
    r.placement.gpuInstances = std::move(profiles);
    return engine_->blocking().compose(Caller::local(), r);
  }
  Result<Operation> attachMig(const std::string& name, std::vector<MigProfile> profiles) {
    AttachRequest a{name, {}};
    a.placement.gpuInstances = std::move(profiles);
    return engine_->blocking().attach(Caller::local(), a);
  }
  // GPUs the operation bound (all in one bind step).
  static std::size_t binds(const Operation& op) { return forwardBindings(op, step::kBind).size(); }
};

TEST_F(EngineMigTest, ComposePacksInstancesOntoAsFewFreshGpusAsFit) {
  start();
  Operation op = run(composeMig("infer", {MigProfile::k1g, MigProfile::k3g, MigProfile::k3g, MigProfile::k1g}));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  EXPECT_EQ(binds(op), 2u) << "3g+3g fill one GPU's memory slices, the two 1g go on a second";
  const System system = *engine_->reads().getSystem("infer");
  EXPECT_EQ(system.bindings.size(), 2u);
  ASSERT_EQ(system.gpuInstances.size(), 4u);
  for (const auto& b : system.bindings) {
    MigLayout layout;
    for (const auto& i : system.gpuInstances)
      if (i.deviceId == b.deviceId) EXPECT_TRUE(layout.place(i.profile, i.start)) << describe(i) << " overlaps another instance";
    EXPECT_FALSE(layout.empty()) << b.deviceId << " was attached for nothing";
  }
  EXPECT_EQ(fabricBindings().size(), 2u);
}

TEST_F(EngineMigTest, AttachFillsAPartlyUsedGpuBeforeAttachingAnother) {
  start();
  run(composeMig("infer", {MigProfile::k3g}));
  Operation fill = run(attachMig("infer", {MigProfile::k2g, MigProfile::k1g}));
  ASSERT_EQ(fill.state, OperationState::kSucceeded) << fill.error;
  EXPECT_EQ(binds(fill), 0u) << "both fit beside the 3g: no hot-plug needed";
  EXPECT_EQ(engine_->reads().getSystem("infer")->bindings.size(), 1u);
  Operation grow = run(attachMig("infer", {MigProfile::k4g}));
  ASSERT_EQ(grow.state, OperationState::kSucceeded) << grow.error;
  EXPECT_EQ(binds(grow), 1u) << "4g needs slices 0-3, which the 3g holds: a fresh GPU";
  const System system = *engine_->reads().getSystem("infer");
  EXPECT_EQ(system.bindings.size(), 2u);
  EXPECT_EQ(system.gpuInstances.size(), 4u);
}

TEST_F(EngineMigTest, DetachingTheLastInstanceOfAGpuUnbindsIt) {
  start();
  run(composeMig("infer", {MigProfile::k3g, MigProfile::k1g}));
  const System before = *engine_->reads().getSystem("infer");
  ASSERT_EQ(before.bindings.size(), 1u);
  const GpuInstance small = *std::find_if(before.gpuInstances.begin(), before.gpuInstances.end(),
                                          [](const GpuInstance& i) { return i.profile == MigProfile::k1g; });
  const GpuInstance large = *std::find_if(before.gpuInstances.begin(), before.gpuInstances.end(),
                                          [](const GpuInstance& i) { return i.profile == MigProfile::k3g; });
  DetachRequest first{"infer", {}, {{small.deviceId, small.start}}};
  Operation op = run(engine_->blocking().detach(Caller::local(), first));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  EXPECT_EQ(op.steps.size(), 1u) << "only a release: the GPU still carries the 3g";
  EXPECT_EQ(engine_->reads().getSystem("infer")->gpuInstances, std::vector<GpuInstance>{large});
  EXPECT_EQ(fabricBindings().size(), 1u);

  DetachRequest last{"infer", {}, {{large.deviceId, large.start}}};
  op = run(engine_->blocking().detach(Caller::local(), last));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  EXPECT_EQ(op.steps.front().kind, step::kUnbind);
  EXPECT_TRUE(fabricBindings().empty());
  EXPECT_EQ(engine_->reads().getSystem("infer").error().code, Code::kNotFound) << "with nothing left it is decomposed, not kept empty";
  EXPECT_EQ(freeDevices(), 16u);
}

TEST_F(EngineMigTest, DetachingAGpuTakesItsInstancesAlong) {
  start();
  run(composeMig("infer", {MigProfile::k2g, MigProfile::k2g}));
  const System before = *engine_->reads().getSystem("infer");
  DetachRequest r{"infer", {before.bindings[0].deviceId}, {}};
  Operation op = run(engine_->blocking().detach(Caller::local(), r));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  EXPECT_EQ(op.gpuInstances.size(), 2u);
  EXPECT_TRUE(engine_->reads().getSystem("infer")->gpuInstances.empty());
}

TEST_F(EngineMigTest, BadMigRequestsChangeNothing) {
  start();
  run(composeMig("infer", {MigProfile::k7g}));
  DetachRequest unknown{"infer", {}, {{"sw0-gpu0", 3}}};
  EXPECT_EQ(engine_->blocking().detach(Caller::local(), unknown).error().code, Code::kNotFound);
  const GpuInstance i = engine_->reads().getSystem("infer")->gpuInstances.at(0);
  DetachRequest twice{"infer", {i.deviceId}, {{i.deviceId, i.start}}};
  EXPECT_EQ(engine_->blocking().detach(Caller::local(), twice).error().code, Code::kInvalidArgument);
  ComposeRequest both{"mixed", {}, {}};
  both.placement.gpuInstances = {MigProfile::k1g};
  both.placement.devices = {"sw1-gpu0"};
  both.placement.host = "host1";
  EXPECT_EQ(engine_->blocking().compose(Caller::local(), both).error().code, Code::kInvalidArgument);
  EXPECT_EQ(engine_->reads().getSystem("infer")->gpuInstances.size(), 1u);
  EXPECT_EQ(fabricBindings().size(), 1u);
}

TEST_F(EngineMigTest, ASwitchThatSaysNoLeavesNoInstances) {
  start();
  run(composeMig("infer", {MigProfile::k3g}));
  fabric_->setFaults({.failNext = 1, .failCode = Code::kFailedPrecondition, .targets = kFaultBind});
  Operation op = run(attachMig("infer", {MigProfile::k3g, MigProfile::k7g}));
  EXPECT_EQ(op.state, OperationState::kFailed);
  const System system = *engine_->reads().getSystem("infer");
  EXPECT_EQ(system.gpuInstances.size(), 1u) << "the fill onto the bound GPU is undone with the failed attach";
  EXPECT_EQ(system.bindings.size(), 1u);
  EXPECT_EQ(fabricBindings().size(), 1u);
}

TEST_F(EngineMigTest, InstancesSurviveARestartMidOperation) {
  testing::GatedDriver gated(*fabric_);
  start(&gated);
  gated.closeBeforeBind(0);  // hold the bind call (both GPUs in one set) in the switch
  auto accepted = composeMig("infer", {MigProfile::k4g, MigProfile::k4g, MigProfile::k2g});
  ASSERT_TRUE(accepted) << accepted.error().message;
  gated.waitUntilHeld();
  std::thread stopper([&] { engine_->stop(0s); });
  while (!engine_->halted()) std::this_thread::yield();  // the bind returns only after stop() halted the engine
  gated.open();
  stopper.join();

  RecoveryReport report = start();
  EXPECT_EQ(report.resumedOperations, 1u);
  auto op = engine_->blocking().getOperation(accepted->id);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->state, OperationState::kSucceeded);
  EXPECT_EQ(op->gpuInstances, accepted->gpuInstances) << "the plan was read back from the store";
  const System system = *engine_->reads().getSystem("infer");
  EXPECT_EQ(system.gpuInstances, accepted->gpuInstances);
  EXPECT_EQ(system.bindings.size(), 2u);
  start();  // and once more, from a clean stop
  EXPECT_EQ(engine_->reads().getSystem("infer")->gpuInstances, accepted->gpuInstances);
}

TEST_F(EngineMigTest, CapacityCountsFreeSlicesApartFromFreeGpus) {
  start();
  run(composeMig("infer", {MigProfile::k4g}));
  auto report = engine_->reads().capacity({}, {MigProfile::k1g, MigProfile::k3g, MigProfile::k7g});
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->mig.size(), 3u);
  EXPECT_EQ(report->attachableMigGpus, 15);
  EXPECT_EQ(report->mig[0].onPartlyUsedGpus, 3) << "slices 4-6 of the 4g's GPU";
  EXPECT_EQ(report->mig[0].onFreeGpus, 15 * 7);
  EXPECT_EQ(report->mig[1].onPartlyUsedGpus, 1);
  EXPECT_EQ(report->mig[2].onPartlyUsedGpus, 0);
  EXPECT_EQ(report->mig[2].onFreeGpus, 15);
}

}  // namespace
}  // namespace switchyard
