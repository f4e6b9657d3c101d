// The operation runner on its own (operation_runner.h): a real step registry and the simulated switch, with the
// engine's side played by the test: it keeps every transaction, answers the switch calls when the test says, and can
// refuse a write as a failed disk would. No engine, no threads: each call runs on the test's thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>

#include <boost/asio/io_context.hpp>

#include "composer/engine/operation_runner.h"
#include "fabric/simulated_fabric.h"
#include "fabric/topology_generator.h"

namespace switchyard {
namespace {

class OperationRunnerTest : public ::testing::Test, public OperationRunner::Context {
 protected:
  void SetUp() override {
    auto f = SimulatedFabric::create(defaultTopology(), clock_, {});
    ASSERT_TRUE(f) << f.error().message;
    fabric_ = std::move(*f);
  }

  // The engine's side.
  PoolState& state() override { return state_; }
  bool halted() const override { return halted_; }
  Result<void> persist(Mutation& m) override {
    if (refuseWrites_) {
      halted_ = true;  // as the engine does when its store refuses
      return fail(Code::kUnavailable, "the disk is full");
    }
    written_.push_back(m);
    return {};
  }
  Event event(std::string type, std::string subject, std::string message, std::string actor) override {
    return Event{++lastEvent_, clock_.now(), std::move(type), std::move(subject), std::move(message), std::move(actor), {}, {}};
  }
  void callAtCommitPoint(std::function<std::function<void()>()> call) override { calls_.push_back(std::move(call)); }
  void asTask(const std::function<void()>& body) override { body(); }
  void ending(const Operation& op, Mutation& m) override {
    m.events.push_back(event("test.ending", op.id, std::string(toString(op.state)), "test"));
  }
  void ended(const Operation& op) override { ended_.push_back(op); }

  // Makes the switch call the runner asked for last, then hands its result back; false when none was asked for.
  bool answerCall() {
    if (calls_.empty()) return false;
    auto call = std::move(calls_.front());
    calls_.pop_front();
    call()();
    return true;
  }

  // sys-1 on host0 attaching sw0-gpu0 and sw0-gpu1 through sw0-usp0, as accepted: the GPUs reserved, the log
  // reserve (done), bind, verify, commit.
  Operation accepted() {
    System system{.id = "sys-1", .name = "train", .hostId = "host0"};
    system.activeOperation = "op-1";
    state_.putSystem(system);
    const std::vector<Binding> bindings{{"sw0-gpu0", "sw0-usp0"}, {"sw0-gpu1", "sw0-usp0"}};
    for (const auto& b : bindings) state_.assign({b.deviceId, DeviceAllocation::kReserved, "op-1"}, "host0");
    Operation op{.id = "op-1", .kind = OperationKind::kCompose, .systemId = "sys-1", .hostId = "host0"};
    op.steps = {makeStep(step::kReserve), makeStep(step::kBind, bindings), makeStep(step::kVerify), makeStep(step::kCommit)};
    op.steps[0].state = StepState::kDone;
    op.requestedBy = Caller::local();
    return op;
  }

  std::vector<std::string> kindsOf(const Operation& op) {
    std::vector<std::string> out;
    for (const auto& s : op.steps) out.push_back(s.kind + (s.compensation ? "(undo)" : "") + ":" + std::string(toString(s.state)));
    return out;
  }
  std::vector<std::string> eventTypes(const Mutation& m) {
    std::vector<std::string> out;
    for (const auto& e : m.events) out.push_back(e.type);
    return out;
  }

  ManualClock clock_;
  std::unique_ptr<SimulatedFabric> fabric_;
  PoolState state_{defaultTopology()};
  boost::asio::io_context control_;
  EngineOptions options_{.maxStepAttempts = 3};
  std::shared_ptr<const StepKindRegistry> steps_ = StepKindRegistry::builtIn();
  std::unique_ptr<OperationRunner> runner_;
  bool halted_ = false;
  bool refuseWrites_ = false;
  std::uint64_t lastEvent_ = 0;
  std::vector<Mutation> written_;
  std::deque<std::function<std::function<void()>()>> calls_;
  std::vector<Operation> ended_;

  OperationRunner& runner() {
    if (!runner_) runner_ = std::make_unique<OperationRunner>(*this, control_, *steps_, StepTargets{*fabric_, {}, nullptr, {}}, clock_, options_);
    return *runner_;
  }
};

TEST_F(OperationRunnerTest, SwitchCallsWaitForTheCommitPointAndEachOutcomeIsWrittenBeforeTheNextCallStarts) {
  runner().run(accepted());
  EXPECT_TRUE(fabric_->readBindings()->empty()) << "the bind waits for the task's commit point";
  EXPECT_EQ(runner().stepCallsInFlight(), 1);
  EXPECT_EQ(runner().progressOf("op-1"), runner().kindOf(runner().find("op-1")->steps[1]).activity());
  EXPECT_TRUE(written_.empty()) << "nothing new to write before the first call";

  ASSERT_TRUE(answerCall());  // bind
  EXPECT_EQ(fabric_->readBindings()->size(), 2u);
  EXPECT_EQ(runner().stepResults(), 1u);
  ASSERT_EQ(written_.size(), 1u) << "the bind's outcome, written before the verify call is asked for";
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(runner().stepCallsInFlight(), 1);

  ASSERT_TRUE(answerCall());  // verify, then commit and the end in one transaction
  EXPECT_EQ(runner().stepCallsInFlight(), 0);
  EXPECT_TRUE(calls_.empty());
  ASSERT_EQ(written_.size(), 2u);
  EXPECT_EQ(eventTypes(written_.back()), (std::vector<std::string>{"system.composed", "test.ending", "operation.succeeded"}))
      << "the engine's rules run inside the transaction that ends the operation, before its last event";
  ASSERT_EQ(ended_.size(), 1u);
  EXPECT_EQ(ended_[0].state, OperationState::kSucceeded);
  EXPECT_EQ(runner().find("op-1"), nullptr);
  EXPECT_EQ(state_.system("sys-1")->state, SystemState::kComposed);
  EXPECT_EQ(state_.system("sys-1")->bindings.size(), 2u);
  EXPECT_EQ(state_.assignment("sw0-gpu0").allocation, DeviceAllocation::kAllocated);
}

TEST_F(OperationRunnerTest, ASwitchThatSaysNoIsUndoneByStepsAppendedToTheLog) {
  fabric_->setFaults({.failNext = 1, .failCode = Code::kFailedPrecondition, .targets = kFaultBind});
  runner().run(accepted());
  ASSERT_TRUE(answerCall());  // the switch refused the bind and said it changed nothing: nothing to unbind
  EXPECT_TRUE(calls_.empty());
  ASSERT_EQ(ended_.size(), 1u);
  EXPECT_EQ(kindsOf(ended_[0]), (std::vector<std::string>{"reserve:done", "bind:failed", "verify:skipped", "commit:skipped", "release(undo):done"}));
  EXPECT_NE(ended_[0].error.find("FAILED_PRECONDITION"), std::string::npos) << ended_[0].error;
  EXPECT_EQ(state_.assignment("sw0-gpu0").allocation, DeviceAllocation::kFree);
  EXPECT_EQ(state_.system("sys-1"), nullptr) << "a compose that failed leaves no system";
}

TEST_F(OperationRunnerTest, ACallWhoseReplyWasLostIsUndoneAsIfItHadBeenAppliedAndTheDevicesGoBack) {
  fabric_->setFaults({.timeoutNext = 1, .targets = kFaultBind});  // applied, then no answer in time
  runner().run(accepted());
  ASSERT_TRUE(answerCall());
  EXPECT_EQ(fabric_->readBindings()->size(), 2u);
  ASSERT_EQ(calls_.size(), 1u) << "the undo's unbind";
  EXPECT_EQ(runner().progressOf("op-1").rfind("rolling back", 0), 0u) << runner().progressOf("op-1");
  ASSERT_TRUE(answerCall());
  ASSERT_EQ(ended_.size(), 1u);
  const Operation& op = ended_[0];
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_EQ(kindsOf(op), (std::vector<std::string>{"reserve:done", "bind:failed", "verify:skipped", "commit:skipped", "unbind(undo):done",
                                                   "release(undo):done"}));
  EXPECT_NE(op.error.find("DEADLINE_EXCEEDED"), std::string::npos) << op.error;
  EXPECT_EQ(state_.assignment("sw0-gpu0").allocation, DeviceAllocation::kFree);
  EXPECT_EQ(state_.system("sys-1"), nullptr);
  EXPECT_TRUE(fabric_->readBindings()->empty());
  bool rollingBack = false;
  for (const auto& m : written_)
    for (const auto& e : m.events) rollingBack = rollingBack || e.type == "operation.rolling-back";
  EXPECT_TRUE(rollingBack);
}

TEST_F(OperationRunnerTest, AnUndoThatKeepsFailingIsRetriedThenItsDevicesAreQuarantined) {
  // The bind's reply is lost, then each of its undo's unbinds fails: three attempts (maxStepAttempts), each after
  // its backoff.
  fabric_->setFaults({.timeoutNext = 1, .targets = kFaultBind});
  runner().run(accepted());
  ASSERT_TRUE(answerCall());
  fabric_->setFaults({.failNext = 3, .failCode = Code::kUnavailable, .targets = kFaultUnbind});
  int calls = 1;
  while (answerCall()) {
    ++calls;
    control_.poll();  // a retry's timer (the manual clock makes its wait zero)
  }
  EXPECT_EQ(calls, 4) << "one bind and three unbinds";
  ASSERT_EQ(ended_.size(), 1u);
  EXPECT_EQ(ended_[0].state, OperationState::kFailed);
  EXPECT_NE(ended_[0].error.find("sw0-gpu0 quarantined"), std::string::npos) << ended_[0].error;
  EXPECT_EQ(state_.assignment("sw0-gpu0").allocation, DeviceAllocation::kQuarantined);
  EXPECT_EQ(state_.assignment("sw0-gpu1").allocation, DeviceAllocation::kQuarantined);
  const Step& unbind = ended_[0].steps[4];
  EXPECT_EQ(unbind.kind, step::kUnbind);
  EXPECT_EQ(unbind.attempts, 3);
}

TEST_F(OperationRunnerTest, AStoreThatRefusesAWriteLeavesTheOperationRunningForTheNextStartAndTellsNoOne) {
  runner().run(accepted());
  refuseWrites_ = true;
  ASSERT_TRUE(answerCall());  // the bind succeeds but its outcome cannot be written
  EXPECT_TRUE(calls_.empty()) << "no step starts after a write failed";
  EXPECT_TRUE(ended_.empty());
  ASSERT_NE(runner().find("op-1"), nullptr) << "still running: the next start resumes it from its log";

  // Taken again as a start would load it, it runs from its step log.
  Operation loaded = accepted();
  halted_ = refuseWrites_ = false;
  runner().clear();
  runner().adopt(loaded);
  EXPECT_EQ(runner().resumeAll(), (std::vector<OperationId>{"op-1"}));
  while (answerCall()) {
  }
  ASSERT_EQ(ended_.size(), 1u);
  EXPECT_EQ(ended_[0].state, OperationState::kSucceeded) << "binding again what is bound already is idempotent";
}

}  // namespace
}  // namespace switchyard
