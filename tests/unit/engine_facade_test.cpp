// The engine's facade: who asked (Caller on every change, actor on every event), completion-based calls
// that never block, pushed event streams, per-call switch timeouts, and a switch event feed that fails.
#include <future>
#include <mutex>
#include <thread>

#include "composer/engine/engine_client.h"
#include "tests/support/gated_driver.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

const Caller kAlice{"alice", Role::kOperator, "team-a"};

ComposeRequest gpus(const std::string& name, int n) {
  ComposeRequest r{name, {}, {}};
  r.placement.gpuCount = n;
  return r;
}

// Alice's 2-GPU compose, accepted and held at its bind call until the gate opens.
Result<Operation> composeHeldAtBind(Engine& engine, testing::GatedDriver& gated) {
  gated.closeBeforeBind(0);
  auto op = engine.blocking().compose(kAlice, gpus("train", 2));
  if (op) gated.waitUntilHeld();
  return op;
}

TEST_F(EngineTest, AnOperationRecordsItsCallerAndItsEventsNameThem) {
  start();
  const auto atStart = engine_->history().listEvents(0, 100)->size();
  Operation op = run(engine_->blocking().compose(kAlice, gpus("train", 2)));
  EXPECT_EQ(op.requestedBy, kAlice);
  auto stored = store_->getOperation(op.id);
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ((*stored)->requestedBy, kAlice) << "the caller is durable";
  auto events = *engine_->history().listEvents(atStart, 100);
  ASSERT_FALSE(events.empty());
  for (const auto& e : events) EXPECT_EQ(e.actor, "alice") << e.type;

  run(engine_->blocking().decompose(Caller::local(), "train"));
  events = *engine_->history().listEvents(0, 100);
  EXPECT_EQ(events.back().type, "operation.succeeded");
  EXPECT_EQ(events.back().actor, "local");
}

TEST_F(EngineTest, TheDaemonIsTheActorOfWhatNobodyAskedFor) {
  start();
  ASSERT_TRUE(fabric_->setDeviceHealth("sw0-gpu0", DeviceHealth::kCritical));
  ASSERT_TRUE(engine_->pollFabricEvents());
  auto events = *engine_->history().listEvents(0, 100);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, "fabric.device.health");
  EXPECT_EQ(events.back().actor, "yardd");
}

TEST_F(EngineTest, AsyncCallsCompleteWithoutBlockingTheCaller) {
  start();
  std::promise<Result<Operation>> accepted;
  EngineClient(*engine_).run<Operation>([](EngineCore& core) { return core.compose(kAlice, gpus("train", 2)); },
                                        [&](Result<Operation> r) { accepted.set_value(std::move(r)); });
  auto op = accepted.get_future().get();
  ASSERT_TRUE(op) << op.error().message;

  std::promise<Result<Operation>> finished;
  engine_->waitOperation(op->id, 10s, [&](Result<Operation> r) { finished.set_value(std::move(r)); });
  auto done = finished.get_future().get();
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, OperationState::kSucceeded);

  std::promise<Result<Operation>> unknown;
  engine_->waitOperation("op-999999", 10s, [&](Result<Operation> r) { unknown.set_value(std::move(r)); });
  auto missing = unknown.get_future().get();
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);
}

TEST_F(EngineTest, AWaitThatTimesOutAnswersWithTheOperationAsItStands) {
  testing::GatedDriver gated(*fabric_);
  start(&gated);
  auto op = composeHeldAtBind(*engine_, gated);
  ASSERT_TRUE(op);
  std::promise<Result<Operation>> answer;
  engine_->waitOperation(op->id, 20ms, [&](Result<Operation> r) { answer.set_value(std::move(r)); });
  auto current = answer.get_future().get();
  ASSERT_TRUE(current);
  EXPECT_FALSE(current->finished()) << "answered at the timeout, while the bind is still held";
  gated.open();
  EXPECT_EQ(run(std::move(op)).state, OperationState::kSucceeded);
}

TEST_F(EngineTest, CallsPendingWhenTheEngineStopsAreAnswered) {
  testing::GatedDriver gated(*fabric_);
  start(&gated);
  auto op = composeHeldAtBind(*engine_, gated);
  ASSERT_TRUE(op);
  std::promise<Result<Operation>> waited;
  engine_->waitOperation(op->id, 1h, [&](Result<Operation> r) { waited.set_value(std::move(r)); });
  std::thread opener([&] {
    while (!engine_->halted()) std::this_thread::yield();  // the bind returns only after stop() halted the engine
    gated.open();
  });
  engine_->stop(0s);
  opener.join();
  auto w = waited.get_future().get();
  ASSERT_TRUE(w) << "a waiter gets the operation as it stands when the engine stops";
  EXPECT_FALSE(w->finished()) << "halted between its bind and its verify: unfinished, resumable";

  std::promise<Result<Operation>> late;
  engine_->async<Operation>([] { return Result<Operation>(Operation{}); }, [&](Result<Operation> r) { late.set_value(std::move(r)); });
  auto refused = late.get_future().get();
  ASSERT_FALSE(refused) << "a call after stop is answered, not dropped";
  EXPECT_EQ(refused.error().code, Code::kAborted);
}

TEST_F(EngineTest, SubscribersArePushedEachEventAsItHappens) {
  start();
  auto stream = engine_->blocking().subscribe().value();
  std::mutex mutex;
  std::vector<std::string> pushed;
  stream->setListener([&] {
    std::lock_guard lock(mutex);
    while (auto e = stream->tryNext()) pushed.push_back(e->type);
  });
  run(engine_->blocking().compose(kAlice, gpus("train", 1)));
  std::lock_guard lock(mutex);
  EXPECT_EQ(pushed, (std::vector<std::string>{"operation.accepted", "device.bound", "system.composed", "operation.succeeded"}))
      << "every event was pushed by the time the operation finished: nobody polled";
}

TEST_F(EngineTest, ASwitchSlowerThanTheCallTimeoutFailsTheStepAtTheTimeout) {
  switchCallTimeout_ = 2000ms;
  start();
  fabric_->setLatency(10s);
  const Timestamp before = clock_.now();
  Operation op = compose("train", 2);
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_NE(op.error.find("DEADLINE_EXCEEDED"), std::string::npos) << op.error;
  // The bind gave up after 2 s, and each of the 3 attempts of its undo did too: no call waited 10 s. Between
  // the undo's attempts, the retry backoff (50-100 ms, then 100-200 ms).
  const Duration took(clock_.now() - before);
  EXPECT_GE(took, 8s + 150ms);
  EXPECT_LE(took, 8s + 300ms);
  EXPECT_EQ(freeDevices(), 14u) << "the devices the switch may or may not have bound are quarantined";
  fabric_->setLatency(0s);
  ASSERT_TRUE(engine_->reconcile());
  EXPECT_TRUE(fabricBindings().empty()) << "the late undo did apply";
  EXPECT_EQ(freeDevices(), 16u) << "reconcile found them unbound and put them back";
}

TEST_F(EngineTest, AnUnreadableEventFeedIsRecordedOnceAndItsReturnOnce) {
  start();
  fabric_->setFaults({.failNext = 3, .targets = kFaultEvents});
  ASSERT_TRUE(fabric_->setDeviceHealth("sw0-gpu3", DeviceHealth::kCritical));
  for (int i = 0; i < 3; ++i) {
    auto r = engine_->pollFabricEvents();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::kUnavailable);
  }
  ASSERT_TRUE(engine_->pollFabricEvents());
  auto types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "fabric.events-unavailable"), 1);
  EXPECT_EQ(std::count(types.begin(), types.end(), "fabric.events-restored"), 1);
  EXPECT_EQ(std::count(types.begin(), types.end(), "fabric.device.health"), 1) << "the change made while the feed was down arrived";
  auto devices = *engine_->reads().listDevices();
  auto gpu3 = std::find_if(devices.begin(), devices.end(), [](const DeviceView& d) { return d.device.id == "sw0-gpu3"; });
  ASSERT_NE(gpu3, devices.end());
  EXPECT_EQ(gpu3->device.health, DeviceHealth::kCritical);
}

}  // namespace
}  // namespace switchyard
