// A stepped engine (EngineOptions::stepped, ADR 0026): the test's thread is the control thread and decides
// when each control task and each switch call runs, so an interleaving is written down, not raced for.
#include <tuple>

#include "agent/simulated_hosts.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace engine_stepped_test {

const Caller kAlice{"alice", Role::kOperator, "team-a"};

ComposeRequest gpus(const std::string& name, int n) {
  ComposeRequest r{name, {}, {}};
  r.placement.gpuCount = n;
  return r;
}

class SteppedEngineTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    configure_ = [](EngineOptions& o) { o.stepped = true; };
  }
};

TEST_F(SteppedEngineTest, NothingReachesTheSwitchUntilTheTestStepsIt) {
  start();
  auto op = engine_->blocking().compose(kAlice, gpus("train", 2));
  ASSERT_TRUE(op) << op.error().message;
  EXPECT_EQ(op->state, OperationState::kRunning);
  EXPECT_TRUE(fabricBindings().empty()) << "accepted and durable, but its bind has not run";
  auto view = engine_->reads().view();
  ASSERT_TRUE(view);
  EXPECT_NE(view->systems.findByIdOrName("train"), nullptr) << "a call outside a task ends at its own commit point";

  // One step at a time: the bind call runs on this thread, then its result is recorded, and so on.
  std::size_t steps = 0;
  while (fabricBindings().empty()) {
    ASSERT_TRUE(engine_->loop().step()) << "the bind is among the waiting work";
    ++steps;
  }
  EXPECT_GE(steps, 1u);
  EXPECT_FALSE(engine_->blocking().getOperation(op->id)->finished()) << "bound in the switch; verify and commit still wait";
  engine_->loop().runUntilIdle();
  auto done = engine_->blocking().getOperation(op->id);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, OperationState::kSucceeded);
  EXPECT_EQ(fabricBindings().size(), 2u);
  EXPECT_FALSE(engine_->loop().step()) << "idle: nothing waits";
}

TEST_F(SteppedEngineTest, ADecomposeAskedWhileTheComposesBindWaitsIsRefusedAndChangesNothing) {
  start();
  auto op = engine_->blocking().compose(kAlice, gpus("train", 2));
  ASSERT_TRUE(op);
  // The interleaving a threaded test can only hope for: the compose is accepted, its bind not yet run.
  auto early = engine_->blocking().decompose(kAlice, "train");
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().code, Code::kFailedPrecondition) << early.error().message;
  EXPECT_EQ(run(std::move(op)).state, OperationState::kSucceeded) << "the blocking wait steps until it ends";
  EXPECT_EQ(run(engine_->blocking().decompose(kAlice, "train")).state, OperationState::kSucceeded);
  EXPECT_TRUE(fabricBindings().empty());
}

// reconcile(done) reads the switch as a waiting call, as a switch call of a step does: refused at once while a step's
// call waits, refused as stale when a step called the switch while its read waited, and otherwise recorded.
TEST_F(SteppedEngineTest, AReconcilesReadWaitsAmongTheCallsAndIsRefusedWhenAStepCalledTheSwitchMeanwhile) {
  start();
  std::optional<Result<std::vector<Drift>>> outcome;
  auto reconcileNow = [&] {
    outcome.reset();
    engine_->reconcile([&](Result<std::vector<Drift>> r) { outcome = std::move(r); });
  };

  auto op = engine_->blocking().compose(kAlice, gpus("train", 2));
  ASSERT_TRUE(op) << op.error().message;
  reconcileNow();
  while (engine_->loop().stepControl()) {
  }
  ASSERT_TRUE(outcome && !*outcome) << "refused at once: the compose's bind waits";
  EXPECT_NE(outcome->error().message.find("operations are changing the fabric"), std::string::npos) << outcome->error().message;
  engine_->loop().runUntilIdle();

  reconcileNow();
  while (engine_->loop().stepControl()) {
  }
  ASSERT_EQ(engine_->loop().waitingCalls(), 1u) << "the read waits";
  EXPECT_FALSE(outcome);
  auto decompose = engine_->blocking().decompose(kAlice, "train");
  ASSERT_TRUE(decompose) << decompose.error().message;
  ASSERT_EQ(engine_->loop().waitingCalls(), 2u) << "the read and the decompose's first call";
  ASSERT_TRUE(engine_->loop().runCall(1));  // the decompose's call first, then the read
  while (engine_->loop().stepControl()) {
  }
  ASSERT_TRUE(engine_->loop().runCall(0));
  while (engine_->loop().stepControl()) {
  }
  ASSERT_TRUE(outcome && !*outcome) << "a step called the switch while the read waited";
  EXPECT_NE(outcome->error().message.find("changed the fabric during the read"), std::string::npos) << outcome->error().message;
  EXPECT_EQ(run(std::move(decompose)).state, OperationState::kSucceeded);

  auto kept = run(engine_->blocking().compose(kAlice, gpus("kept", 1)));
  ASSERT_EQ(kept.state, OperationState::kSucceeded);
  const System system = *engine_->reads().getSystem("kept");
  ASSERT_TRUE(fabric_->unbind(system.bindings[0].deviceId, system.bindings[0].upstreamPortId));  // behind yardd's back
  reconcileNow();
  engine_->loop().runUntilIdle();
  ASSERT_TRUE(outcome && *outcome) << (outcome ? outcome->error().message : "no answer");
  ASSERT_EQ((*outcome)->size(), 1u);
  EXPECT_EQ((*outcome)->front().kind, "missing-binding");
  EXPECT_EQ(engine_->reads().getSystem("kept")->state, SystemState::kDegraded) << "what the answer said is recorded";
}

// runCall(index, Reply::kLate): the call acts at once, and its reply waits until deliverReply(), as a slow switch's
// answer does; the operation waits for it, nothing else does.
TEST_F(SteppedEngineTest, ACallsLateReplyHoldsItsOperationUntilItIsDeliveredAndNothingElse) {
  start();
  auto op = engine_->blocking().compose(kAlice, gpus("train", 2));
  ASSERT_TRUE(op) << op.error().message;
  ASSERT_EQ(engine_->loop().waitingCalls(), 1u);
  ASSERT_TRUE(engine_->loop().runCall(0, ControlLoop::Reply::kLate));
  EXPECT_EQ(fabricBindings().size(), 2u) << "the bind acted";
  EXPECT_EQ(engine_->loop().lateReplies(), 1u);
  EXPECT_FALSE(engine_->loop().stepControl()) << "the engine has not heard of it";
  EXPECT_EQ(engine_->blocking().getOperation(op->id)->state, OperationState::kRunning);

  auto other = engine_->blocking().compose(kAlice, gpus("other", 1));
  ASSERT_TRUE(other) << other.error().message;
  while (engine_->loop().stepControl() || engine_->loop().runCall(0)) {
  }
  EXPECT_EQ(engine_->blocking().getOperation(other->id)->state, OperationState::kSucceeded) << "answered while the first reply waits";
  EXPECT_EQ(engine_->blocking().getOperation(op->id)->state, OperationState::kRunning);

  ASSERT_TRUE(engine_->loop().deliverReply(0));
  EXPECT_EQ(engine_->loop().lateReplies(), 0u);
  EXPECT_FALSE(engine_->loop().deliverReply(0)) << "none left";
  engine_->loop().runUntilIdle();
  EXPECT_EQ(engine_->blocking().getOperation(op->id)->state, OperationState::kSucceeded);
  EXPECT_EQ(fabricBindings().size(), 3u);
}

// The window reconcile's freshness guard closes: its read of the switch ran, a whole decompose ran and ended, and
// only then does the read's reply arrive. It shows the two GPUs still bound; recorded, it would quarantine them.
TEST_F(SteppedEngineTest, AReadWhoseReplyArrivesAfterAWholeOperationEndedIsRefusedAsStale) {
  start();
  ASSERT_EQ(run(engine_->blocking().compose(kAlice, gpus("train", 2))).state, OperationState::kSucceeded);
  std::optional<Result<std::vector<Drift>>> outcome;
  engine_->reconcile([&](Result<std::vector<Drift>> r) { outcome = std::move(r); });
  while (engine_->loop().stepControl()) {
  }
  ASSERT_EQ(engine_->loop().waitingCalls(), 1u) << "the read waits";
  ASSERT_TRUE(engine_->loop().runCall(0, ControlLoop::Reply::kLate));
  auto decompose = engine_->blocking().decompose(kAlice, "train");
  ASSERT_TRUE(decompose) << decompose.error().message;
  while (engine_->loop().stepControl() || engine_->loop().runCall(0)) {
  }
  ASSERT_EQ(engine_->blocking().getOperation(decompose->id)->state, OperationState::kSucceeded);
  ASSERT_TRUE(fabricBindings().empty());
  EXPECT_FALSE(outcome) << "the read's reply has not arrived";

  ASSERT_TRUE(engine_->loop().deliverReply(0));
  while (engine_->loop().stepControl()) {
  }
  ASSERT_TRUE(outcome && !*outcome) << "a stale read recorded: " << (outcome && *outcome ? (*outcome)->size() : 0u) << " drift(s)";
  EXPECT_NE(outcome->error().message.find("changed the fabric during the read"), std::string::npos) << outcome->error().message;
  const auto devices = engine_->reads().listDevices();
  ASSERT_TRUE(devices);
  for (const auto& d : *devices)
    EXPECT_NE(d.assignment.allocation, DeviceAllocation::kQuarantined) << d.device.id << " quarantined on a stale read";
}

// A quarantine release unbinds too (`yardctl devices release DEV --unbind`), outside any operation: a reconcile whose
// read was taken before that unbind and processed after the release freed the GPU would see it still bound, in no
// system, and quarantine it again (found by the simulation, thirty-fifth session, seed 833). Such a read is stale.
TEST_F(SteppedEngineTest, AReadTakenBeforeAQuarantineReleaseUnboundIsRefusedAsStale) {
  start();
  ASSERT_TRUE(fabric_->bind("sw1-gpu7", "sw1-usp2"));  // behind yardd's back
  std::optional<Result<std::vector<Drift>>> outcome;
  engine_->reconcile([&](Result<std::vector<Drift>> r) { outcome = std::move(r); });
  engine_->loop().runUntilIdle();
  ASSERT_TRUE(outcome && *outcome);
  ASSERT_EQ(engine_->reads().view()->device("sw1-gpu7")->assignment.allocation, DeviceAllocation::kQuarantined);

  outcome.reset();
  engine_->reconcile([&](Result<std::vector<Drift>> r) { outcome = std::move(r); });
  while (engine_->loop().stepControl()) {
  }
  ASSERT_TRUE(engine_->loop().runCall(0, ControlLoop::Reply::kLate)) << "the read runs: sw1-gpu7 still bound";
  std::optional<Result<DeviceView>> released;
  engine_->releaseQuarantined({"ops", Role::kOperator, {}}, "sw1-gpu7", {.unbind = true}, [&](Result<DeviceView> r) { released = std::move(r); });
  while (engine_->loop().stepControl() || engine_->loop().runCall(0)) {
  }
  ASSERT_TRUE(released && *released) << (released ? released->error().message : "no answer");
  ASSERT_EQ(engine_->reads().view()->device("sw1-gpu7")->assignment.allocation, DeviceAllocation::kFree);
  ASSERT_TRUE(fabricBindings().empty());

  ASSERT_TRUE(engine_->loop().deliverReply(0));
  while (engine_->loop().stepControl()) {
  }
  ASSERT_TRUE(outcome);
  EXPECT_FALSE(*outcome) << "a stale read recorded " << (*outcome ? (*outcome)->size() : 0u) << " drift(s)";
  EXPECT_EQ(engine_->reads().view()->device("sw1-gpu7")->assignment.allocation, DeviceAllocation::kFree) << "quarantined again on a stale read";
}

// Host reconcile lists the hosts as a waiting call too. A host listed after an attach or a detach there ended, but
// compared with what its system held when the look began, would show drift that is not there: a GPU the attach
// gave it as unexpected, one the detach took as missing. Such a host is left out of the round.
TEST_F(SteppedEngineTest, AHostListedAfterAnOperationThereEndedIsLeftOutOfTheHostReconcile) {
  SimulatedHosts hosts(defaultTopology(), fabric_->router(), clock_);
  hosts_ = &hosts;
  start();
  ASSERT_EQ(run(engine_->blocking().compose(kAlice, gpus("train", 1))).state, OperationState::kSucceeded);
  std::optional<Result<std::vector<Drift>>> outcome;
  auto reconcileAround = [&](const std::function<Result<Operation>()>& change) {
    outcome.reset();
    engine_->reconcileHosts([&](Result<std::vector<Drift>> r) { outcome = std::move(r); });
    while (engine_->loop().stepControl()) {
    }
    EXPECT_EQ(engine_->loop().waitingCalls(), 1u) << "the listing waits";
    auto op = change();
    EXPECT_TRUE(op) << op.error().message;
    // The change runs to its end first (its calls queue behind the listing), then the listing runs.
    while (engine_->loop().stepControl() || engine_->loop().runCall(1)) {
    }
    EXPECT_EQ(engine_->blocking().getOperation(op->id)->state, OperationState::kSucceeded);
    engine_->loop().runUntilIdle();
    EXPECT_TRUE(outcome && *outcome) << (outcome ? outcome->error().message : "no answer");
  };

  AttachRequest more{"train", {}, {}};
  more.placement.gpuCount = 1;
  reconcileAround([&] { return engine_->blocking().attach(kAlice, more); });
  ASSERT_TRUE(outcome && *outcome);
  EXPECT_TRUE((*outcome)->empty()) << "the attach's GPU reported as drift: " << (*outcome)->front().message;
  const System train = *engine_->reads().getSystem("train");
  ASSERT_EQ(train.bindings.size(), 2u);
  reconcileAround([&] { return engine_->blocking().detach(kAlice, DetachRequest{"train", {train.bindings.back().deviceId}, {}, {}, {}}); });
  ASSERT_TRUE(outcome && *outcome);
  EXPECT_TRUE((*outcome)->empty()) << "the detached GPU reported as drift: " << (*outcome)->front().message;

  // A round with nothing happening around it still reports what is there.
  hosts.forget(train.hostId, train.bindings.front().deviceId);
  outcome.reset();
  engine_->reconcileHosts([&](Result<std::vector<Drift>> r) { outcome = std::move(r); });
  engine_->loop().runUntilIdle();
  ASSERT_TRUE(outcome && *outcome);
  ASSERT_EQ((*outcome)->size(), 1u);
  EXPECT_EQ((*outcome)->front().kind, "host-missing-device");
  for (const auto& type : eventTypes()) EXPECT_NE(type, "drift.host-unexpected-device");
}

// Everything the engine recorded, with time: the same script must give the same record.
using Record = std::vector<std::tuple<std::uint64_t, Timestamp, std::string, std::string, std::string>>;

Record runScript(const std::filesystem::path& dir) {
  ManualClock clock;
  std::filesystem::create_directories(dir);
  auto fabric = SimulatedFabric::create(defaultTopology(), clock, {.statePath = dir / "switch.json"});
  EXPECT_TRUE(fabric);
  auto store = SqliteStore::open(dir / "yard.db");
  EXPECT_TRUE(store);
  Engine engine(**fabric, **store, clock, EngineOptions{.fabricPollInterval = 0ms, .reconcileInterval = 0ms, .pruneInterval = 0ms,
                                                        .deadlineInterval = 0ms, .stepped = true});
  EXPECT_TRUE(engine.start());
  // Two composes whose steps alternate, a decompose while the second still runs, and a queued request.
  auto a = engine.blocking().compose(kAlice, gpus("a", 4));
  clock.advance(1ms);
  auto b = engine.blocking().compose(kAlice, gpus("b", 4));
  for (int i = 0; i < 3 && engine.loop().step(); ++i) clock.advance(1ms);
  auto queued = [&] {
    ComposeRequest r = gpus("c", 16);
    r.queue = true;
    return engine.blocking().compose(kAlice, r);
  }();
  EXPECT_TRUE(a && b && queued);
  engine.loop().runUntilIdle();
  clock.advance(5ms);
  EXPECT_TRUE(engine.blocking().decompose(kAlice, "a"));
  engine.loop().runUntilIdle();
  EXPECT_TRUE(engine.blocking().decompose(kAlice, "b"));
  engine.loop().runUntilIdle();
  Record record;
  const auto events = engine.history().listEvents(0, 10'000);
  EXPECT_TRUE(events);
  for (const auto& e : *events) record.emplace_back(e.sequence, e.at, e.type, e.subject, e.message);
  engine.stop(0s);
  return record;
}

TEST_F(SteppedEngineTest, TheSameScriptRecordsTheSameEventsAtTheSameTimesEveryRun) {
  const Record first = runScript(dir_ / "first");
  const Record second = runScript(dir_ / "second");
  ASSERT_GT(first.size(), 20u);
  EXPECT_EQ(first, second);
  bool admitted = false;
  for (const auto& [seq, at, type, subject, message] : first) admitted = admitted || type == "queue.admitted";
  EXPECT_TRUE(admitted) << "the queued request was admitted once both systems were gone";
}

}  // namespace engine_stepped_test
}  // namespace switchyard
