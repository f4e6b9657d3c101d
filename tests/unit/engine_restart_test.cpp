// The engine across restarts and trouble, against the real simulated fabric and a real SQLite store: a crash
// between steps resumes from the step log, drift found at start and while running, unhealthy devices, history
// pruning, a system busy with one operation refusing another, a store the engine can no longer write (fenced
// out), and reconcile waiting for operations to leave the switch alone.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "composer/engine/engine.h"
#include "fabric/simulated_fabric.h"
#include "inventory/sqlite_store.h"
#include "tests/support/gated_driver.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;

TEST_F(EngineTest, ACrashBetweenStepsResumesFromTheStepLog) {
  testing::GatedDriver gated(*fabric_);
  start(&gated);
  auto accepted = composeHeldInTheSwitch(*engine_, gated, "train", 4);
  ASSERT_TRUE(accepted) << accepted.error().message;
  // Stop while the bind call is in the switch: its result is recorded, nothing after it (verify, commit) runs.
  std::thread stopper([&] { engine_->stop(0s); });
  while (!engine_->halted()) std::this_thread::yield();  // the bind returns only after stop() halted the engine
  gated.open();
  stopper.join();
  EXPECT_EQ(fabricBindings().size(), 4u);
  auto stored = store_->getOperation(accepted->id);
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ(stepLog(**stored), (std::vector<std::string>{"reserve:done", "bind:done", "verify:pending", "commit:pending"}));

  RecoveryReport report = start();
  EXPECT_EQ(report.resumedOperations, 1u);
  EXPECT_TRUE(report.drifts.empty());
  auto op = engine_->blocking().getOperation(accepted->id);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->state, OperationState::kSucceeded);
  EXPECT_EQ(engine_->reads().getSystem("train")->bindings.size(), 4u);
  EXPECT_EQ(fabricBindings().size(), 4u);
}

TEST_F(EngineTest, RestartReportsEveryKindOfDrift) {
  start();
  compose("train", 3);
  const System system = *engine_->reads().getSystem("train");
  engine_.reset();
  // Someone works the switch behind our back.
  ASSERT_TRUE(fabric_->unbind(system.bindings[0].deviceId, system.bindings[0].upstreamPortId));
  ASSERT_TRUE(fabric_->unbind(system.bindings[1].deviceId, system.bindings[1].upstreamPortId));
  ASSERT_TRUE(fabric_->bind(system.bindings[1].deviceId, "sw0-usp3"));
  ASSERT_TRUE(fabric_->bind("sw1-gpu7", "sw1-usp2"));

  RecoveryReport report = start();
  std::set<std::string> kinds;
  for (const auto& d : report.drifts) kinds.insert(d.kind + ":" + d.deviceId);
  EXPECT_EQ(kinds, (std::set<std::string>{"missing-binding:" + system.bindings[0].deviceId, "wrong-port:" + system.bindings[1].deviceId,
                                          "unexpected-binding:sw1-gpu7"}));
  EXPECT_EQ(engine_->reads().getSystem("train")->state, SystemState::kDegraded);
  PlacementRequest all;
  all.gpuCount = 8;
  all.model = "A100-SXM4-40GB";
  EXPECT_FALSE(engine_->blocking().plan(all)->decision.placement) << "the foreign-bound GPU is quarantined";

  // Put the switch right; reconcile clears the drift.
  ASSERT_TRUE(fabric_->bind(system.bindings[0].deviceId, system.bindings[0].upstreamPortId));
  ASSERT_TRUE(fabric_->unbind(system.bindings[1].deviceId, "sw0-usp3"));
  ASSERT_TRUE(fabric_->bind(system.bindings[1].deviceId, system.bindings[1].upstreamPortId));
  ASSERT_TRUE(fabric_->unbind("sw1-gpu7", "sw1-usp2"));
  auto drifts = engine_->reconcile();
  ASSERT_TRUE(drifts);
  EXPECT_TRUE(drifts->empty());
  EXPECT_EQ(engine_->reads().getSystem("train")->state, SystemState::kComposed);
  EXPECT_TRUE(engine_->blocking().plan(all)->decision.placement);
}

TEST_F(EngineTest, ARepeatedDriftIsReportedButRecordedOnce) {
  start();
  compose("train", 1);
  const Binding b = engine_->reads().getSystem("train")->bindings[0];
  ASSERT_TRUE(fabric_->unbind(b.deviceId, b.upstreamPortId));
  for (int i = 0; i < 3; ++i) {
    auto drifts = engine_->reconcile();
    ASSERT_TRUE(drifts);
    EXPECT_EQ(drifts->size(), 1u);
  }
  const auto types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "drift.missing-binding"), 1);
}

TEST_F(EngineTest, DriftIsFoundWhileRunning) {
  reconcileInterval_ = 10ms;
  start();
  compose("train", 2);
  auto stream = engine_->blocking().subscribe().value();
  const Binding b = engine_->reads().getSystem("train")->bindings[1];
  ASSERT_TRUE(fabric_->unbind(b.deviceId, b.upstreamPortId));
  std::optional<Event> drift;
  for (auto e = stream->next(5s); e; e = stream->next(5s))
    if (e->type == "drift.missing-binding") {
      drift = e;
      break;
    }
  ASSERT_TRUE(drift) << "the periodic reconcile should notice within a few intervals";
  EXPECT_EQ(drift->subject, b.deviceId);
  EXPECT_EQ(engine_->reads().getSystem("train")->state, SystemState::kDegraded);
  // The system's own event says why it is degraded.
  const auto events = *engine_->history().listEvents(0, 1000);
  const auto degraded = std::find_if(events.begin(), events.end(), [](const Event& e) { return e.type == "system.degraded"; });
  ASSERT_NE(degraded, events.end());
  EXPECT_NE(degraded->message.find("is degraded: " + b.deviceId + " is unbound in the fabric"), std::string::npos) << degraded->message;
  // And so does the system itself, stored (issue 39 item 13): after a restart, and until it recovers.
  EXPECT_EQ(engine_->reads().getSystem("train")->stateReason, b.deviceId + " is unbound in the fabric");
  reconcileInterval_ = std::chrono::hours(1);
  start();
  EXPECT_EQ(engine_->reads().getSystem("train")->stateReason, b.deviceId + " is unbound in the fabric");
  ASSERT_TRUE(fabric_->bind(b.deviceId, b.upstreamPortId));
  ASSERT_TRUE(engine_->reconcile());
  EXPECT_EQ(engine_->reads().getSystem("train")->state, SystemState::kComposed);
  EXPECT_EQ(engine_->reads().getSystem("train")->stateReason, "");
}

TEST_F(EngineTest, ASystemMidOperationRefusesAnotherOperation) {
  testing::GatedDriver gated(*fabric_);
  start(&gated);
  compose("train", 1);
  gated.closeBeforeBind(0);
  AttachRequest a{"train", {}};
  a.placement.gpuCount = 1;
  auto accepted = engine_->blocking().attach(Caller::local(), a);
  ASSERT_TRUE(accepted);
  gated.waitUntilHeld();
  auto second = engine_->blocking().decompose(Caller::local(), "train");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, Code::kFailedPrecondition);
  EXPECT_NE(second.error().message.find(accepted->id), std::string::npos);
  gated.open();
  EXPECT_EQ(engine_->waitOperation(accepted->id, 10s)->state, OperationState::kSucceeded);
}

TEST_F(EngineTest, UnhealthyDevicesLeaveThePool) {
  start();
  ASSERT_TRUE(fabric_->setDeviceHealth("sw0-gpu0", DeviceHealth::kCritical));
  ASSERT_TRUE(engine_->pollFabricEvents());
  PlacementRequest eight;
  eight.gpuCount = 8;
  eight.model = "H100-SXM5-80GB";
  auto plan = engine_->blocking().plan(eight);
  ASSERT_TRUE(plan);
  EXPECT_FALSE(plan->decision.placement);
  const auto types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "fabric.device.health"), types.end());
}

TEST_F(EngineTest, PruningHistoryKeepsIdsMovingForward) {
  retention_ = {.events = 5, .finishedOperations = 1};
  start();
  for (int i = 0; i < 3; ++i) {
    compose("job", 1);
    run(engine_->blocking().decompose(Caller::local(), "job"));
  }
  auto report = engine_->blocking().pruneHistory();
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->operations, 5u);
  EXPECT_EQ(report->systems, 2u);
  EXPECT_EQ(engine_->history().listEvents(0, 1000)->size(), 5u);
  start();  // a restart after pruning continues numbering where it was
  Operation op = compose("job", 1);
  EXPECT_EQ(op.id, "op-000007");
  EXPECT_EQ(op.systemId, "sys-000004");
}

// A store that refuses a write (here: a second yardd claimed the store, fencing this one out) used to abort
// the daemon. The engine now stops taking work, starts no more steps and leaves the operation resumable.
TEST_F(EngineTest, AnEngineThatCanNoLongerWriteSaysSoOnceToItsDaemonAndToHealthChecks) {
  std::mutex mutex;
  std::vector<std::string> halts;
  onHalt_ = [&](const std::string& why) {
    std::lock_guard lock(mutex);
    halts.push_back(why);
  };
  start();
  EXPECT_EQ(engine_->storeFailure(), "");
  auto successor = SqliteStore::open(dir_ / "yard.db");
  ASSERT_TRUE(successor);
  ASSERT_TRUE((*successor)->claimWriter());  // a newer yardd: every write of this engine is refused now
  ComposeRequest r{"train", {}, {}};
  r.placement.gpuCount = 1;
  EXPECT_FALSE(engine_->blocking().compose(Caller::local(), r));
  EXPECT_FALSE(engine_->blocking().compose(Caller::local(), r));
  EXPECT_NE(engine_->storeFailure(), "") << "health checks read why";
  std::lock_guard lock(mutex);
  ASSERT_EQ(halts.size(), 1u) << "the daemon is told once";
  EXPECT_EQ(halts[0], engine_->storeFailure());
}

TEST_F(EngineTest, AFencedOutEngineStopsCleanlyAndTheNextWriterResumes) {
  testing::GatedDriver gated(*fabric_);
  start(&gated);
  auto accepted = composeHeldInTheSwitch(*engine_, gated, "train", 2);
  ASSERT_TRUE(accepted) << accepted.error().message;
  auto successor = SqliteStore::open(dir_ / "yard.db");
  ASSERT_TRUE(successor);
  ASSERT_TRUE((*successor)->claimWriter());  // the bind's outcome can no longer be recorded by this engine
  gated.open();
  auto after = engine_->waitOperation(accepted->id, 200ms);
  ASSERT_TRUE(after);
  EXPECT_FALSE(after->finished()) << "nothing after the refused write runs";
  ComposeRequest another{"other", {}, {}};
  another.placement.gpuCount = 1;
  auto refused = engine_->blocking().compose(Caller::local(), another);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kUnavailable);
  EXPECT_NE(refused.error().message.find("fenced"), std::string::npos) << refused.error().message;

  RecoveryReport report = start();  // the next writer resumes from the last durable step
  EXPECT_EQ(report.resumedOperations, 1u);
  EXPECT_EQ(engine_->blocking().getOperation(accepted->id)->state, OperationState::kSucceeded);
  EXPECT_EQ(fabricBindings().size(), 2u);
}

// Any refused write halts the engine, the first one included: here an acceptance, fenced out by a second
// yardd claiming the store while this one is idle.
TEST_F(EngineTest, AFencedOutEngineRefusesWorkFromItsFirstRefusedWrite) {
  start();
  auto successor = SqliteStore::open(dir_ / "yard.db");
  ASSERT_TRUE(successor);
  ASSERT_TRUE((*successor)->claimWriter());
  ComposeRequest r{"train", {}, {}};
  r.placement.gpuCount = 2;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto refused = engine_->blocking().compose(Caller::local(), r);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, Code::kUnavailable) << attempt;
    EXPECT_NE(refused.error().message.find("fenced"), std::string::npos) << refused.error().message;
  }
  auto halted = engine_->blocking().decompose(Caller::local(), "no-such-system");
  ASSERT_FALSE(halted);
  EXPECT_EQ(halted.error().code, Code::kUnavailable) << "refused before it looks anything up: the engine has stopped taking work";
  EXPECT_EQ(freeDevices(), 16u) << "nothing was reserved";
  EXPECT_TRUE(engine_->reads().listSystems()->empty());
}

TEST_F(EngineTest, ReconcileWaitsForOperationsToLeaveTheSwitchAlone) {
  testing::GatedDriver gated(*fabric_);
  start(&gated);
  auto accepted = composeHeldInTheSwitch(*engine_, gated, "train", 2);
  ASSERT_TRUE(accepted) << accepted.error().message;
  auto during = engine_->reconcile();
  ASSERT_FALSE(during) << "a bind is in the switch: a read now could show the operation half-way";
  EXPECT_EQ(during.error().code, Code::kUnavailable);
  gated.open();
  ASSERT_EQ(engine_->waitOperation(accepted->id, 10s)->state, OperationState::kSucceeded);
  auto after = engine_->reconcile();
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_TRUE(after->empty());
}

}  // namespace
}  // namespace switchyard
