// Defragmentation (engine_defrag.cpp, defragmentation.h; ADR 0033): a queued request that does not fit although
// the pool has its GPUs free in pieces gets room from moves of idle GPUs of systems that allow them (label
// movable=true): each such system takes free GPUs elsewhere first, then gives up its idle ones; never a GPU with
// a process, never a system without the label; a move that fails half-way leaves its system whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <tuple>

#include "agent/simulated_hosts.h"
#include "tests/support/gated_driver.h"
#include "tests/support/topology_builder.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

class EngineDefragTest : public EngineTest {
 protected:
  void SetUp() override {}  // each test starts on its own pool (startOn)
  // sw0 and sw1 hold 4 GPUs each; "mover" reaches both switches, "head" only sw0.
  static Topology twoSwitches() {
    return testing::TopologyBuilder().sw("sw0").sw("sw1").gpus("sw0", 4).gpus("sw1", 4).host("mover", {"sw0", "sw1"}).host("head", {"sw0"}).build();
  }
  // `driver`: the switch the engine drives instead of the fabric itself (a gate in front of it).
  void startOn(const Topology& t, std::function<FabricDriver*(SimulatedFabric&)> driver = {}) {
    startFabric(t);
    simulated_ = std::make_unique<SimulatedHosts>(t, fabric_->router(), clock_);
    hosts_ = simulated_.get();
    configure_ = [](EngineOptions& o) { o.activityInterval = 0ms; };  // the tests sample on the manual clock
    start(driver ? driver(*fabric_) : nullptr);
  }
  // twoSwitches() behind a gate, the idle movable system, the queued request ("big", returned), and the engine
  // stopped while the gate, closed by `close`, holds a call of the move the request started; then the call finishes.
  Operation stopMidMove(void (testing::GatedDriver::*close)(int)) {
    startOn(twoSwitches(), [&](SimulatedFabric& f) { return (gated_ = std::make_unique<testing::GatedDriver>(f)).get(); });
    composeIdleUnderSw0({{"movable", "true"}});
    ((*gated_).*close)(0);
    const Operation big = queueFourUnderOneSwitch();
    gated_->waitUntilHeld();
    std::thread stopper([&] { engine_->stop(0s); });
    while (!engine_->halted()) std::this_thread::yield();
    gated_->open();
    stopper.join();
    return big;
  }
  // "idle" on the mover with two GPUs under sw0, labelled as asked; then one activity sample.
  void composeIdleUnderSw0(std::map<std::string, std::string> labels) {
    ComposeRequest r{"idle", {}, std::move(labels)};
    r.placement.devices = {"sw0-gpu0", "sw0-gpu1"};
    r.placement.host = "mover";
    const Operation op = run(engine_->blocking().compose(Caller::local(), r));
    ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
    ASSERT_TRUE(engine_->sampleActivity());
  }
  // Four GPUs under one switch: only sw0 is reachable from the free host, and it has two free.
  Operation queueFourUnderOneSwitch() {
    ComposeRequest r{"big", {}, {}};
    r.placement.gpuCount = 4;
    r.placement.peerToPeer = PeerToPeer::kRequired;
    r.queue = true;
    auto op = engine_->blocking().compose(Caller::local(), r);
    EXPECT_TRUE(op) << op.error().message;
    if (!op) return {};
    EXPECT_EQ(op->state, OperationState::kQueued) << op->explanation;
    return *op;
  }
  std::vector<DeviceId> devicesOf(const std::string& system) {
    std::vector<DeviceId> out;
    const auto s = engine_->reads().getSystem(system);
    EXPECT_TRUE(s) << system;
    if (s)
      for (const auto& b : s->bindings) out.push_back(b.deviceId);
    std::sort(out.begin(), out.end());
    return out;
  }
  // The moves are operations of their own: each that defragmentation started, finished. A detach starts only once
  // its attach has succeeded, so `expected` says how many to wait for (the attaches exist when the pass returns).
  std::vector<Operation> movesDone(std::size_t expected) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    std::vector<Operation> out;
    while (true) {
      out.clear();
      const auto ops = engine_->history().listOperations({.limit = 1000});
      EXPECT_TRUE(ops);
      for (const auto& op : *ops)
        if (op.requestedBy.identity == kDefragActor) out.push_back(*engine_->waitOperation(op.id, 10s));
      if (out.size() >= expected || std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(5ms);
    }
    std::sort(out.begin(), out.end(), [](const Operation& a, const Operation& b) { return a.id < b.id; });
    return out;
  }
  std::size_t count(const std::string& type) {
    const auto types = eventTypes();
    return static_cast<std::size_t>(std::count(types.begin(), types.end(), type));
  }
  std::string why(const OperationId& id) {
    const auto queue = engine_->reads().listQueue();
    for (const auto& e : *queue)
      if (e.operationId == id) return e.waitingFor;
    return "(not queued)";
  }
  std::unique_ptr<SimulatedHosts> simulated_;
  std::unique_ptr<testing::GatedDriver> gated_;  // stopMidMove's
};

TEST_F(EngineDefragTest, AHeadThatFitsOnlyInPiecesGetsRoomByMovingIdleGpusOfAMovableSystem) {
  startOn(twoSwitches());
  composeIdleUnderSw0({{"movable", "true"}});
  PlacementRequest four;
  four.gpuCount = 4;
  four.peerToPeer = PeerToPeer::kRequired;
  const auto plan = engine_->blocking().plan(four);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_FALSE(plan->decision.placement);
  ASSERT_EQ(plan->wouldMove.size(), 1u) << "the dry run names the moves a pass would start";
  EXPECT_EQ(plan->wouldMove[0].name, "idle");
  EXPECT_EQ(plan->wouldMove[0].from, (std::vector<std::string>{"sw0-gpu0", "sw0-gpu1"}));
  ASSERT_TRUE(plan->afterMoves);
  EXPECT_EQ(plan->afterMoves->hostId, "head");
  EXPECT_TRUE(movesDone(0).empty()) << "a plan changes nothing";
  const Operation big = queueFourUnderOneSwitch();
  const Operation done = *engine_->waitOperation(big.id, 10s);
  ASSERT_EQ(done.state, OperationState::kSucceeded) << done.error << " / " << why(big.id);
  EXPECT_EQ(devicesOf("big"), (std::vector<DeviceId>{"sw0-gpu0", "sw0-gpu1", "sw0-gpu2", "sw0-gpu3"}))
      << "the whole of sw0, which the moves emptied";
  const auto moved = devicesOf("idle");
  ASSERT_EQ(moved.size(), 2u) << "the moved system keeps its size";
  for (const auto& d : moved) EXPECT_EQ(d.rfind("sw1-", 0), 0u) << d << ": its GPUs are under sw1 now";
  const auto moves = movesDone(2);
  ASSERT_EQ(moves.size(), 2u) << "one attach, then one detach";
  EXPECT_EQ(moves[0].kind, OperationKind::kAttach);
  EXPECT_EQ(moves[1].kind, OperationKind::kDetach);
  for (const auto& op : moves) EXPECT_EQ(op.state, OperationState::kSucceeded) << op.id << ": " << op.error;
  EXPECT_EQ(count("system.moving"), 1u);
  EXPECT_EQ(count("system.moved"), 1u);
  EXPECT_EQ(count("move.failed"), 0u);
}

TEST_F(EngineDefragTest, NothingMovesWithoutTheLabelNorWhenAProcessRunsOnAGpuItWouldNeed) {
  startOn(twoSwitches());
  composeIdleUnderSw0({});  // no consent
  const Operation big = queueFourUnderOneSwitch();
  EXPECT_EQ(engine_->reads().listQueue()->size(), 1u);
  EXPECT_EQ(why(big.id).find("moving"), std::string::npos) << why(big.id);
  EXPECT_TRUE(movesDone(0).empty());
  EXPECT_EQ(devicesOf("idle"), (std::vector<DeviceId>{"sw0-gpu0", "sw0-gpu1"}));
  ASSERT_TRUE(engine_->blocking().cancelQueued(Caller::local(), big.id));
  run(engine_->blocking().decompose(Caller::local(), "idle"));

  composeIdleUnderSw0({{"movable", "true"}});
  simulated_->setActivity("sw0-gpu1", 0, {{4100, "python3 eval.py", 2048}});
  ASSERT_TRUE(engine_->sampleActivity());
  const Operation again = queueFourUnderOneSwitch();
  EXPECT_EQ(why(again.id).find("moving"), std::string::npos) << "one idle GPU is not enough room; the busy one stays: " << why(again.id);
  EXPECT_TRUE(movesDone(0).empty());
  EXPECT_EQ(count("system.moving"), 0u);
}

TEST_F(EngineDefragTest, AMoveTheSwitchRefusesLeavesTheSystemWhereItWasAndTheHeadWaiting) {
  startOn(twoSwitches());
  composeIdleUnderSw0({{"movable", "true"}});
  fabric_->setFaults({.failNext = 1, .failCode = Code::kFailedPrecondition, .targets = kFaultBind});
  const Operation big = queueFourUnderOneSwitch();
  const auto moves = movesDone(1);
  ASSERT_EQ(moves.size(), 1u) << "the attach only: no detach after it failed";
  EXPECT_EQ(moves[0].state, OperationState::kFailed);
  EXPECT_EQ(devicesOf("idle"), (std::vector<DeviceId>{"sw0-gpu0", "sw0-gpu1"}));
  EXPECT_EQ(count("move.failed"), 1u);
  EXPECT_EQ(engine_->reads().listQueue()->size(), 1u) << "the head still waits";
  EXPECT_EQ(why(big.id).find("moving"), std::string::npos) << "no promise from a failed plan: " << why(big.id);
}

TEST_F(EngineDefragTest, AGpuThatTurnedBusyBeforeItsDetachStaysAndTheSystemKeepsBoth) {
  startOn(twoSwitches());
  composeIdleUnderSw0({{"movable", "true"}});
  // A process starts on a GPU after the sample the plan reads: the host side refuses to let it go.
  simulated_->setActivity("sw0-gpu0", 0, {{4100, "python3 train.py", 2048}});
  const Operation big = queueFourUnderOneSwitch();
  const auto moves = movesDone(2);
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[0].state, OperationState::kSucceeded) << "the new GPUs came";
  EXPECT_EQ(moves[1].state, OperationState::kFailed) << "the busy GPU was not taken: " << moves[1].error;
  EXPECT_EQ(devicesOf("idle").size(), 4u) << "it keeps both sets until someone detaches the extra ones";
  EXPECT_EQ(count("move.failed"), 1u);
  EXPECT_EQ(engine_->reads().listQueue()->size(), 1u);
}

// Of two switches the head could use, the one that needs fewer GPUs moved is emptied: one move, not two.
TEST_F(EngineDefragTest, TheFewestGpusAreMoved) {
  const Topology t = testing::TopologyBuilder()
                   .sw("sw0").sw("sw1").sw("sw2")
                   .gpus("sw0", 4).gpus("sw1", 4).gpus("sw2", 4)
                   .host("a", {"sw0", "sw2"}).host("b", {"sw1", "sw2"}).host("head", {"sw0", "sw1"})
                   .build();
  startOn(t);
  for (const auto& [name, host, devices] : {std::tuple<std::string, std::string, std::vector<DeviceId>>{"two", "a", {"sw0-gpu0", "sw0-gpu1"}},
                                            {"one", "b", {"sw1-gpu0"}}}) {
    ComposeRequest r{name, {}, {{"movable", "true"}}};
    r.placement.devices = devices;
    r.placement.host = host;
    ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), r)).state, OperationState::kSucceeded) << name;
  }
  ASSERT_TRUE(engine_->sampleActivity());
  const Operation big = queueFourUnderOneSwitch();
  ASSERT_EQ(engine_->waitOperation(big.id, 10s)->state, OperationState::kSucceeded) << why(big.id);
  EXPECT_EQ(devicesOf("big"), (std::vector<DeviceId>{"sw1-gpu0", "sw1-gpu1", "sw1-gpu2", "sw1-gpu3"}));
  EXPECT_EQ(devicesOf("two"), (std::vector<DeviceId>{"sw0-gpu0", "sw0-gpu1"})) << "not moved: it would have taken two";
  ASSERT_EQ(devicesOf("one").size(), 1u);
  EXPECT_EQ(devicesOf("one")[0].rfind("sw2-", 0), 0u) << devicesOf("one")[0];
  EXPECT_EQ(movesDone(2).size(), 2u) << "one system's attach and detach";
}

// A yardd stopped while a move's attach is in the switch: the plan was in memory, but the attach says what it
// replaces, so the next start finishes the move (the detach of the idle GPUs) instead of leaving the system with both
// sets; the head is admitted on what it freed.
TEST_F(EngineDefragTest, AMoveStoppedBetweenItsAttachAndItsDetachIsFinishedAtTheNextStart) {
  const Operation big = stopMidMove(&testing::GatedDriver::closeBeforeBind);  // the move's attach was in the switch
  std::vector<Operation> attach;  // as stored: the engine is stopped
  const auto stored = engine_->history().listOperations({.limit = 100});
  ASSERT_TRUE(stored) << stored.error().message;
  for (const auto& op : *stored)
    if (op.requestedBy.identity == kDefragActor) attach.push_back(op);
  ASSERT_EQ(attach.size(), 1u);
  EXPECT_EQ(attach[0].kind, OperationKind::kAttach);
  EXPECT_FALSE(attach[0].finished());
  EXPECT_EQ(attach[0].replaces, (std::vector<DeviceId>{"sw0-gpu0", "sw0-gpu1"})) << "stored with the attach";

  start();
  const Operation done = *engine_->waitOperation(big.id, 10s);
  ASSERT_EQ(done.state, OperationState::kSucceeded) << done.error << " / " << why(big.id);
  EXPECT_EQ(devicesOf("big"), (std::vector<DeviceId>{"sw0-gpu0", "sw0-gpu1", "sw0-gpu2", "sw0-gpu3"}));
  const auto moved = devicesOf("idle");
  ASSERT_EQ(moved.size(), 2u) << "the moved system keeps its size: the idle GPUs were given up after the restart";
  for (const auto& d : moved) EXPECT_EQ(d.rfind("sw1-", 0), 0u) << d;
  const auto moves = movesDone(2);
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[1].kind, OperationKind::kDetach);
  EXPECT_EQ(moves[1].state, OperationState::kSucceeded) << moves[1].error;
  EXPECT_EQ(count("system.moved"), 1u);

  start();  // and once the move is over, a further start finds nothing to finish
  EXPECT_EQ(movesDone(2).size(), 2u);
  EXPECT_EQ(devicesOf("idle"), moved);
}

// The same with yardd stopped while the move's detach is in the switch: the detach resumes from its step log and
// ends the move with its event, though no plan knows it any more.
TEST_F(EngineDefragTest, AMoveStoppedDuringItsDetachEndsWithItsEventAfterTheRestart) {
  const Operation big = stopMidMove(&testing::GatedDriver::closeBeforeUnbind);  // the move's detach was in the switch
  EXPECT_EQ(count("system.moved"), 0u);

  start();
  const Operation done = *engine_->waitOperation(big.id, 10s);
  ASSERT_EQ(done.state, OperationState::kSucceeded) << done.error << " / " << why(big.id);
  const auto moved = devicesOf("idle");
  ASSERT_EQ(moved.size(), 2u);
  for (const auto& d : moved) EXPECT_EQ(d.rfind("sw1-", 0), 0u) << d;
  ASSERT_EQ(count("system.moved"), 1u);
  const auto events = *engine_->history().listEvents(0, 10'000);
  const auto event = std::find_if(events.begin(), events.end(), [](const Event& e) { return e.type == "system.moved"; });
  EXPECT_NE(event->message.find("moved off sw0-gpu0, sw0-gpu1"), std::string::npos) << event->message;
  EXPECT_EQ(movesDone(2).size(), 2u) << "nothing more was started for it";
}

}  // namespace
}  // namespace switchyard
