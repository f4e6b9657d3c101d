// Time-sliced GPU shares through the engine: compose, attach (filling the system's share GPUs first),
// detach, restart and capacity, end to end through the step log and the store.
#include <gtest/gtest.h>

#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

class EngineSharesTest : public EngineTest {
 protected:
  Result<Operation> composeShare(const std::string& name, int milli) {
    ComposeRequest r{name, {}, {}};
    r.placement.gpuShareMilli = milli;
    return engine_->blocking().compose(Caller::local(), r);
  }
  Result<Operation> attachShare(const std::string& name, int milli) {
    AttachRequest a{name, {}};
    a.placement.gpuShareMilli = milli;
    return engine_->blocking().attach(Caller::local(), a);
  }
  static std::size_t binds(const Operation& op) { return forwardBindings(op, step::kBind).size(); }
};

TEST_F(EngineSharesTest, AComposedShareBindsOneGpuAndRecordsTheShare) {
  start();
  Operation op = run(composeShare("svc", 250));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  EXPECT_EQ(binds(op), 1u);
  const System system = *engine_->reads().getSystem("svc");
  ASSERT_EQ(system.bindings.size(), 1u);
  ASSERT_EQ(system.gpuShares.size(), 1u);
  EXPECT_EQ(system.gpuShares[0], (GpuShare{1, system.bindings[0].deviceId, 250}));
  EXPECT_EQ(fabricBindings().size(), 1u);
}

TEST_F(EngineSharesTest, AttachFillsTheSystemsShareGpuBeforeBindingAnother) {
  start();
  run(composeShare("svc", 250));
  Operation fill = run(attachShare("svc", 500));
  ASSERT_EQ(fill.state, OperationState::kSucceeded) << fill.error;
  EXPECT_EQ(binds(fill), 0u) << "250 + 500 fit on one GPU: no hot-plug";
  EXPECT_EQ(fill.steps.size(), 2u) << "reserve, commit: no switch call";
  Operation grow = run(attachShare("svc", 500));
  ASSERT_EQ(grow.state, OperationState::kSucceeded) << grow.error;
  EXPECT_EQ(binds(grow), 1u) << "250 left is too little for 500: a fresh GPU";
  const System system = *engine_->reads().getSystem("svc");
  EXPECT_EQ(system.bindings.size(), 2u);
  ASSERT_EQ(system.gpuShares.size(), 3u);
  EXPECT_EQ(system.gpuShares[1].deviceId, system.gpuShares[0].deviceId);
  EXPECT_NE(system.gpuShares[2].deviceId, system.gpuShares[0].deviceId);
  EXPECT_EQ(system.gpuShares[2].id, 3);
}

TEST_F(EngineSharesTest, DetachingTheLastShareOfAGpuUnbindsIt) {
  start();
  run(composeShare("svc", 250));
  run(attachShare("svc", 250));
  Operation first = run(engine_->blocking().detach(Caller::local(), {"svc", {}, {}, {1}}));
  ASSERT_EQ(first.state, OperationState::kSucceeded) << first.error;
  EXPECT_EQ(binds(first), 0u);
  EXPECT_EQ(forwardBindings(first, step::kUnbind).size(), 0u) << "share #2 still uses the GPU";
  EXPECT_EQ(fabricBindings().size(), 1u);
  Operation last = run(engine_->blocking().detach(Caller::local(), {"svc", {}, {}, {2}}));
  ASSERT_EQ(last.state, OperationState::kSucceeded) << last.error;
  EXPECT_EQ(forwardBindings(last, step::kUnbind).size(), 1u);
  EXPECT_TRUE(fabricBindings().empty());
  EXPECT_EQ(engine_->reads().getSystem("svc").error().code, Code::kNotFound) << "with nothing left it is decomposed, not kept empty";
}

TEST_F(EngineSharesTest, DetachingAGpuTakesItsSharesAndDecomposeTakesAll) {
  start();
  run(composeShare("svc", 250));
  run(attachShare("svc", 250));
  run(attachShare("svc", 900));
  const System before = *engine_->reads().getSystem("svc");
  ASSERT_EQ(before.bindings.size(), 2u);
  Operation op = run(engine_->blocking().detach(Caller::local(), {"svc", {before.gpuShares[0].deviceId}, {}, {}}));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  EXPECT_EQ(op.gpuShares.size(), 2u);
  EXPECT_EQ(engine_->reads().getSystem("svc")->gpuShares.size(), 1u);
  EXPECT_EQ(run(engine_->blocking().decompose(Caller::local(), "svc")).state, OperationState::kSucceeded);
  // The decomposed system is gone with its shares (reading it is NOT_FOUND: this test used to dereference
  // that error, which only passed by luck), and every GPU is free.
  auto gone = engine_->reads().getSystem("svc");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, Code::kNotFound);
  EXPECT_EQ(freeDevices(), 16u);
}

TEST_F(EngineSharesTest, BadShareRequestsChangeNothing) {
  start();
  run(composeShare("svc", 250));
  for (int bad : {0, 1000, -5}) {
    AttachRequest a{"svc", {}};
    a.placement.gpuShareMilli = bad;
    if (bad == 0) a.placement.gpuCount = 0;  // nothing asked for at all
    auto r = engine_->blocking().attach(Caller::local(), a);
    EXPECT_FALSE(r) << bad;
  }
  ComposeRequest both{"both", {}, {}};
  both.placement.gpuShareMilli = 250;
  both.placement.gpuCount = 2;
  EXPECT_EQ(engine_->blocking().compose(Caller::local(), both).error().code, Code::kInvalidArgument);
  auto unknown = engine_->blocking().detach(Caller::local(), {"svc", {}, {}, {7}});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kNotFound);
  auto twice = engine_->blocking().detach(Caller::local(), {"svc", {}, {}, {1, 1}});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, Code::kInvalidArgument);
  EXPECT_EQ(engine_->reads().getSystem("svc")->gpuShares.size(), 1u);
}

TEST_F(EngineSharesTest, SharesSurviveARestart) {
  start();
  run(composeShare("svc", 300));
  run(attachShare("svc", 300));
  const System before = *engine_->reads().getSystem("svc");
  start();
  const System after = *engine_->reads().getSystem("svc");
  EXPECT_EQ(after.gpuShares, before.gpuShares);
  Operation fill = run(attachShare("svc", 300));
  EXPECT_EQ(binds(fill), 0u) << "the restarted engine knows the GPU has 400 left";
}

TEST_F(EngineSharesTest, CapacityCountsShareRoomApartFromFreeGpus) {
  start();
  run(composeShare("svc", 250));
  run(attachShare("svc", 500));
  auto report = engine_->reads().capacity({}, {}, {250, 100});
  ASSERT_TRUE(report);
  ASSERT_EQ(report->shares.size(), 2u);
  EXPECT_EQ(report->shares[0].milli, 250);
  EXPECT_EQ(report->shares[0].onPartlyUsedGpus, 1) << "250 left on the system's GPU";
  EXPECT_EQ(report->shares[1].onPartlyUsedGpus, 2);
  EXPECT_GT(report->attachableGpus, 0);
  EXPECT_EQ(report->shares[0].onFreeGpus, report->attachableGpus * 4);
}

TEST_F(EngineSharesTest, PlanForAShareShowsTheFreshGpu) {
  start();
  PlacementRequest r;
  r.gpuShareMilli = 250;
  auto plan = engine_->blocking().plan(r);
  ASSERT_TRUE(plan);
  ASSERT_TRUE(plan->decision.placement);
  EXPECT_EQ(plan->decision.placement->devices.size(), 1u);
}

}  // namespace
}  // namespace switchyard
