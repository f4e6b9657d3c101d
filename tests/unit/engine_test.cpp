// The operation engine against the real simulated fabric and a real SQLite store (temp file).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "composer/engine/engine.h"
#include "composer/packing/gpu_instances.h"
#include "fabric/simulated_fabric.h"
#include "fabric/topology_generator.h"
#include "inventory/sqlite_store.h"
#include "tests/support/gated_driver.h"
#include "tests/support/temp_dir.h"
#include "tests/support/topology_builder.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;


TEST_F(EngineTest, ComposeBindsVerifiesAndCommits) {
  start();
  Operation op = compose("train", 4, PeerToPeer::kRequired);
  EXPECT_EQ(op.state, OperationState::kSucceeded);
  ASSERT_EQ(op.steps.size(), 4u);  // reserve, bind (the set of 4), verify, commit
  EXPECT_EQ(engine_->stepKinds().find("bind")->describe(op.steps[1]), "bind sw0-gpu0, sw0-gpu1, sw0-gpu2, sw0-gpu3 -> sw0-usp0");
  auto system = engine_->reads().getSystem("train");
  ASSERT_TRUE(system);
  EXPECT_EQ(system->state, SystemState::kComposed);
  EXPECT_EQ(system->bindings.size(), 4u);
  auto bindings = fabricBindings();
  std::sort(bindings.begin(), bindings.end(), [](auto& a, auto& b) { return a.deviceId < b.deviceId; });
  auto expected = system->bindings;
  std::sort(expected.begin(), expected.end(), [](auto& a, auto& b) { return a.deviceId < b.deviceId; });
  EXPECT_EQ(bindings, expected) << "the switch holds exactly what the store says";
  EXPECT_EQ(freeDevices(), 12u);
  const auto types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "device.bound"), 4);
  EXPECT_EQ(std::count(types.begin(), types.end(), "system.composed"), 1);
}

TEST_F(EngineTest, DecomposeUnbindsAndReturnsEverything) {
  start();
  compose("train", 6);
  Operation op = run(engine_->blocking().decompose(Caller::local(), "train"));
  EXPECT_EQ(op.state, OperationState::kSucceeded);
  EXPECT_TRUE(fabricBindings().empty());
  EXPECT_EQ(freeDevices(), 16u);
  EXPECT_EQ(engine_->reads().getSystem("train").error().code, Code::kNotFound);
  EXPECT_TRUE(engine_->reads().listHosts()->at(0).systemId.empty()) << "the host is free for a new system";
}

TEST_F(EngineTest, AttachAndDetachChangeOneSystem) {
  start();
  compose("train", 2);
  AttachRequest a{"train", {}};
  a.placement.gpuCount = 3;
  EXPECT_EQ(run(engine_->blocking().attach(Caller::local(), a)).state, OperationState::kSucceeded);
  auto system = *engine_->reads().getSystem("train");
  ASSERT_EQ(system.bindings.size(), 5u);
  const DeviceId gone = system.bindings[1].deviceId;
  EXPECT_EQ(run(engine_->blocking().detach(Caller::local(), {"train", {gone}})).state, OperationState::kSucceeded);
  system = *engine_->reads().getSystem("train");
  EXPECT_EQ(system.bindings.size(), 4u);
  for (const auto& b : system.bindings) EXPECT_NE(b.deviceId, gone);
  EXPECT_EQ(fabricBindings().size(), 4u);
  EXPECT_EQ(freeDevices(), 12u);

  // Detaching the last devices ends the system: its host is free for the next one (issue 39 item 13).
  const HostId host = system.hostId;
  std::vector<DeviceId> rest;
  for (const auto& b : system.bindings) rest.push_back(b.deviceId);
  EXPECT_EQ(run(engine_->blocking().detach(Caller::local(), {"train", rest})).state, OperationState::kSucceeded);
  EXPECT_EQ(engine_->reads().getSystem("train").error().code, Code::kNotFound);
  EXPECT_EQ(freeDevices(), 16u);
  const auto types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "system.decomposed"), types.end());
  ComposeRequest pinned{"next", {}, {}};
  pinned.placement.gpuCount = 1;
  pinned.placement.host = host;
  EXPECT_EQ(run(engine_->blocking().compose(Caller::local(), pinned)).state, OperationState::kSucceeded) << "the host took a new system";
}

TEST_F(EngineTest, RejectsBadRequestsWithoutChangingAnything) {
  start();
  compose("train", 2);
  ComposeRequest dup{"train", {}, {}};
  dup.placement.gpuCount = 1;
  EXPECT_EQ(engine_->blocking().compose(Caller::local(), dup).error().code, Code::kAlreadyExists);
  ComposeRequest bad{"no spaces allowed", {}, {}};
  bad.placement.gpuCount = 1;
  EXPECT_EQ(engine_->blocking().compose(Caller::local(), bad).error().code, Code::kInvalidArgument);
  ComposeRequest zero{"zero", {}, {}};
  EXPECT_EQ(engine_->blocking().compose(Caller::local(), zero).error().code, Code::kInvalidArgument);
  ComposeRequest huge{"huge", {}, {}};
  huge.placement.gpuCount = 15;
  EXPECT_EQ(engine_->blocking().compose(Caller::local(), huge).error().code, Code::kResourceExhausted);
  EXPECT_EQ(engine_->blocking().decompose(Caller::local(), "ghost").error().code, Code::kNotFound);
  EXPECT_EQ(engine_->blocking().detach(Caller::local(), {"train", {"sw1-gpu7"}}).error().code, Code::kFailedPrecondition);
  EXPECT_EQ(engine_->blocking().detach(Caller::local(), {"train", {"nope"}}).error().code, Code::kNotFound);
  // A model the pool lacks can never fit: refused as a bad argument naming the models, and not learned as demand.
  ComposeRequest b200{"b200", {}, {}};
  b200.placement.gpuCount = 1;
  b200.placement.model = "B200";
  auto unknown = engine_->blocking().compose(Caller::local(), b200);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kInvalidArgument);
  EXPECT_NE(unknown.error().message.find("the pool has: A100-SXM4-40GB, H100-SXM5-80GB"), std::string::npos) << unknown.error().message;
  EXPECT_EQ(engine_->reads().listSystems()->size(), 1u);
  EXPECT_EQ(fabricBindings().size(), 2u);
  EXPECT_EQ(freeDevices(), 14u);
}

TEST_F(EngineTest, ComposeRequestsTeachThePoolItsDemand) {
  start();
  EXPECT_TRUE(engine_->reads().capacity({}, {})->demand.empty()) << "nothing asked yet";
  compose("a", 2);
  compose("b", 2);
  compose("c", 1, PeerToPeer::kNone);
  ComposeRequest huge{"huge", {}, {}};
  huge.placement.gpuCount = 15;
  EXPECT_EQ(engine_->blocking().compose(Caller::local(), huge).error().code, Code::kResourceExhausted);  // demand all the same
  ComposeRequest unknown{"unknown", {}, {}};
  unknown.placement.gpuCount = 2;
  unknown.placement.model = "no-such-gpu";
  EXPECT_FALSE(engine_->blocking().compose(Caller::local(), unknown));  // malformed: not demand
  auto report = engine_->reads().capacity({}, {});
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->demand.size(), 3u);
  EXPECT_EQ(report->demand[0].shape, (DemandShape{2, true, {}}));
  EXPECT_DOUBLE_EQ(report->demand[0].weight, 0.5);
  EXPECT_EQ(report->demand[1].shape, (DemandShape{1, false, {}}));
  EXPECT_EQ(report->demand[2].shape, (DemandShape{15, true, {}}));
}

TEST_F(EngineTest, TheLearnedDemandSurvivesARestart) {
  start();
  compose("a", 2);
  compose("b", 2);
  compose("c", 1, PeerToPeer::kNone);
  ComposeRequest huge{"huge", {}, {}};
  huge.placement.gpuCount = 15;
  EXPECT_EQ(engine_->blocking().compose(Caller::local(), huge).error().code, Code::kResourceExhausted);  // refused, still demand
  const auto before = engine_->reads().capacity({}, {})->demand;
  ASSERT_EQ(before.size(), 3u);
  start();
  const auto after = engine_->reads().capacity({}, {})->demand;
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].shape, before[i].shape);
    EXPECT_DOUBLE_EQ(after[i].weight, before[i].weight);
  }
}

TEST_F(EngineTest, ByDefaultPlacesForTheDemandItLearned) {
  // d and a have 2 free GPUs, b has 3. The first compose (2 GPUs under one switch) is all the demand the
  // engine has seen when the second, 1 GPU, arrives. Tightest fit (v1) would put it on a, leaving {1, 3}:
  // one more 2-GPU system. The default profile puts it on b, leaving {2, 2}: two. (hx keeps both switches
  // reachable after the placement, so neither choice strands a switch.)
  startFabric(testing::TopologyBuilder().sw("d").sw("a").sw("b").gpus("d", 2).gpus("a", 2).gpus("b", 3)
                  .host("ht", {"d"}).host("ha", {"a"}).host("hb", {"b"}).host("hx", {"a", "b"}).build());
  start();
  compose("teach", 2, PeerToPeer::kRequired);
  ASSERT_EQ(engine_->reads().getSystem("teach")->hostId, "ht");
  compose("one", 1);
  EXPECT_EQ(engine_->reads().getSystem("one")->hostId, "hb");
}

TEST_F(EngineTest, ASwitchThatSaysNoRollsTheComposeBack) {
  start();
  fabric_->setFaults({.failNext = 1});  // UNAVAILABLE: the switch may have applied part of the set
  Operation op = compose("train", 4);
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_NE(op.error.find("injected fault"), std::string::npos) << op.error;
  // reserve, bind FAILED, verify and commit never run, then undo in reverse: unbind the set, release.
  EXPECT_EQ(stepLog(op), (std::vector<std::string>{"reserve:done", "bind:failed", "verify:skipped", "commit:skipped", "unbind:done*",
                                                   "release:done*"}));
  EXPECT_EQ(op.steps[4].bindings, op.steps[1].bindings) << "the undo unbinds the whole set";
  EXPECT_TRUE(fabricBindings().empty());
  EXPECT_EQ(freeDevices(), 16u);
  EXPECT_TRUE(engine_->reads().listSystems()->empty());
  EXPECT_EQ(compose("train", 4).state, OperationState::kSucceeded) << "name and devices are usable again";
}

TEST_F(EngineTest, ARefusalThatChangedNothingIsNotUndone) {
  start();
  fabric_->setFaults({.failNext = 1, .failCode = Code::kFailedPrecondition});
  Operation op = compose("train", 2);
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_EQ(stepLog(op), (std::vector<std::string>{"reserve:done", "bind:failed", "verify:skipped", "commit:skipped", "release:done*"}))
      << "FAILED_PRECONDITION means the switch changed nothing (fabric_driver.h): no unbind call";
  EXPECT_EQ(freeDevices(), 16u);
}

TEST_F(EngineTest, AComposeBindsAllItsDevicesInOneSwitchCall) {
  start();
  const auto before = fabric_->callCount();
  Operation op = compose("train", 8);
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  EXPECT_EQ(fabric_->callCount() - before, 2u) << "one bind call for the set, one read to verify";
  EXPECT_EQ(stepLog(op), (std::vector<std::string>{"reserve:done", "bind:done", "verify:done", "commit:done"}));
  EXPECT_EQ(op.steps[1].bindings.size(), 8u);
  const auto events = *engine_->history().listEvents(0, 1000);
  EXPECT_EQ(std::count_if(events.begin(), events.end(), [](const Event& e) { return e.type == "device.bound"; }), 8)
      << "the audit trail still has one event per device";
  Operation down = run(engine_->blocking().decompose(Caller::local(), "train"));
  EXPECT_EQ(stepLog(down), (std::vector<std::string>{"unbind:done", "release:done"}));
  EXPECT_EQ(fabric_->callCount() - before, 3u);
}

TEST_F(EngineTest, ATimedOutBindIsUndoneToo) {
  start();
  fabric_->setFaults({.timeoutNext = 1, .targets = kFaultBind});
  Operation op = compose("train", 3);
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_NE(op.error.find("DEADLINE_EXCEEDED"), std::string::npos) << op.error;
  EXPECT_TRUE(fabricBindings().empty()) << "the switch applied the timed-out bind; rollback removed it";
  EXPECT_EQ(freeDevices(), 16u);
}

TEST_F(EngineTest, AnUndoThatKeepsFailingQuarantinesTheDevices) {
  start();
  fabric_->setFaults({.failNext = 4});  // the bind fails, then 3 attempts to unbind its set fail
  Operation op = compose("train", 2);
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_NE(op.error.find("quarantined"), std::string::npos) << op.error;
  ASSERT_EQ(op.steps.size(), 6u);
  EXPECT_EQ(op.steps[4].kind, "unbind");
  EXPECT_EQ(op.steps[4].attempts, 3) << "the undo was retried";
  auto devices = *engine_->reads().listDevices();
  for (const auto& b : op.steps[1].bindings) {
    auto it = std::find_if(devices.begin(), devices.end(), [&](const DeviceView& d) { return d.device.id == b.deviceId; });
    EXPECT_EQ(it->assignment.allocation, DeviceAllocation::kQuarantined) << b.deviceId;
  }
  EXPECT_EQ(freeDevices(), 14u) << "the devices whose state is unknown are never handed out";
  // The switch reports them unbound: reconcile puts them back in the pool.
  auto drifts = engine_->reconcile();
  ASSERT_TRUE(drifts);
  EXPECT_EQ(freeDevices(), 16u);
}

TEST_F(EngineTest, AVerifyThatFailsRollsBackInsteadOfRetrying) {
  start();
  compose("train", 2);
  fabric_->setFaults({.failNext = 1, .targets = kFaultRead});
  Operation op = compose("more", 1);
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_EQ(stepLog(op), (std::vector<std::string>{"reserve:done", "bind:done", "verify:failed", "commit:skipped", "unbind:done*",
                                                   "release:done*"}));
  EXPECT_EQ(op.steps[2].attempts, 1) << "a forward verify is of the roll-back class";
  EXPECT_EQ(fabricBindings().size(), 2u) << "train keeps its devices";
}

// A kind the built-in engine has never heard of, standing in for host-rescan: it calls no switch, fails its
// first two calls with UNAVAILABLE and converges.
class FlakyProbe final : public StepKind {
 public:
  explicit FlakyProbe(std::atomic<int>& calls) : calls_(calls) {}
  std::string_view name() const override { return "flaky-probe"; }
  StepComponent component() const override { return StepComponent::kFabric; }
  RetryClass retry() const override { return RetryClass::kConverge; }
  std::string describe(const Step& s) const override { return fmt::format("probe {} device(s)", s.bindings.size()); }
  Result<StepReport> call(StepTargets&, const Operation&, const Step&) const override {
    if (++calls_ <= 2) return fail(Code::kUnavailable, "host not answering yet");
    return StepReport{};
  }
  void succeeded(LocalStepContext& effects, const Operation& op, const Step& s, const StepReport&) const override {
    effects.event("probe.done", op.id, describe(s));
  }

 private:
  std::atomic<int>& calls_;
};

// The old retry path re-ran `unbind` for any step that was not a bind: a retried host step would have unbound
// the GPU it was probing.
TEST_F(EngineTest, ANewStepKindIsOneRegistrationAndIsRetriedAsItself) {
  std::atomic<int> calls{0};
  auto registry = std::make_shared<StepKindRegistry>();
  ASSERT_TRUE(registerLocalSteps(*registry));
  ASSERT_TRUE(registerFabricSteps(*registry));
  ASSERT_TRUE(registry->add(std::make_unique<FlakyProbe>(calls)));
  EXPECT_FALSE(registry->add(std::make_unique<FlakyProbe>(calls))) << "a name is registered once";
  stepKinds_ = registry;
  {  // a compose left by a yardd that probes the host between bind and verify
    auto store = std::move(*SqliteStore::open(dir_ / "yard.db"));
    System system;
    system.id = "sys-000001";
    system.name = "probed";
    system.hostId = "host0";
    system.activeOperation = "op-000001";
    Operation op;
    op.id = "op-000001";
    op.systemId = system.id;
    op.hostId = system.hostId;
    const std::vector<Binding> gpu{{"sw0-gpu0", "sw0-usp0"}};
    op.steps = {{"reserve", {}, StepState::kDone}, {"bind", gpu}, {"flaky-probe", gpu}, {"verify"}, {"commit"}};
    std::vector<StoreWrite> writes{PutSystem{system}, PutAssignment{{"sw0-gpu0", DeviceAllocation::kReserved, op.id}}, PutOperation{op}};
    ASSERT_TRUE(store->write(writes, *store->claimWriter()));
  }
  RecoveryReport report = start();
  EXPECT_EQ(report.resumedOperations, 1u);
  auto op = engine_->blocking().getOperation("op-000001");
  ASSERT_TRUE(op);
  EXPECT_EQ(op->state, OperationState::kSucceeded) << op->error;
  EXPECT_EQ(stepLog(*op), (std::vector<std::string>{"reserve:done", "bind:done", "flaky-probe:done", "verify:done", "commit:done"}));
  EXPECT_EQ(op->steps[2].attempts, 3);
  EXPECT_EQ(calls.load(), 3) << "each retry called the probe again";
  EXPECT_EQ(fabricBindings(), (std::vector<Binding>{{"sw0-gpu0", "sw0-usp0"}})) << "no retry unbound the GPU";
  const auto types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "probe.done"), types.end());
}

TEST_F(EngineTest, DecomposeRetriesTransientUnbindFailures) {
  start();
  compose("train", 2);
  fabric_->setFaults({.failNext = 2, .targets = kFaultUnbind});
  Operation op = run(engine_->blocking().decompose(Caller::local(), "train"));
  EXPECT_EQ(op.state, OperationState::kSucceeded);
  EXPECT_EQ(op.steps[0].attempts, 3);
  EXPECT_TRUE(fabricBindings().empty());
}

TEST_F(EngineTest, ANameShapedLikeAnIdIsRefused) {
  start();
  for (const std::string name : {"sys-000028", "sys-1", "op-000003", "rsv-000001"}) {
    ComposeRequest r{name, {}, {}};
    r.placement.gpuCount = 1;
    auto refused = engine_->blocking().compose(Caller::local(), r);
    ASSERT_FALSE(refused) << name;
    EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
    EXPECT_NE(refused.error().message.find("looks like a yardd id"), std::string::npos) << refused.error().message;
  }
  compose("sys-a", 1);  // a name that merely starts like one is fine
  compose("system-7", 1);
}

TEST_F(EngineTest, ARetriedStepBacksOffOnTheEnginesClockWithJitter) {
  start();
  compose("train", 2);
  fabric_->setFaults({.failNext = 2, .targets = kFaultUnbind});
  const Timestamp before = clock_.now();
  Operation op = run(engine_->blocking().decompose(Caller::local(), "train"));
  EXPECT_EQ(op.state, OperationState::kSucceeded);
  EXPECT_EQ(op.steps[0].attempts, 3);
  // Two waits: 50-100 ms, then 100-200 ms (retryBackoff 100 ms, doubling, each between half and all).
  const auto waited = std::chrono::nanoseconds(clock_.now() - before);
  EXPECT_GE(waited, 150ms);
  EXPECT_LE(waited, 300ms);
  EXPECT_EQ(op.steps[0].message, "") << "the last attempt succeeded";
}

TEST_F(EngineTest, StopCutsARetrysBackoffShortAndTheStepRunsAtTheNextStart) {
  start();
  compose("train", 2);
  engine_.reset();
  // The same store and switch under an engine on the wall clock whose retries wait 30 s.
  SystemClock wall;
  EngineOptions options;
  options.fabricPollInterval = 0ms;
  options.reconcileInterval = 0ms;
  options.pruneInterval = 0ms;
  options.deadlineInterval = 0ms;
  options.activityInterval = 0ms;
  options.retryBackoff = 30s;
  options.maxRetryBackoff = 30s;
  auto walled = std::make_unique<Engine>(*fabric_, *store_, wall, options);
  ASSERT_TRUE(walled->start());
  fabric_->setFaults({.failNext = 1, .targets = kFaultUnbind});
  auto accepted = walled->blocking().decompose(Caller::local(), "train");
  ASSERT_TRUE(accepted) << accepted.error().message;
  for (int i = 0; i < 1000; ++i) {
    auto op = walled->blocking().getOperation(accepted->id);
    ASSERT_TRUE(op);
    if (op->steps[0].attempts == 1) break;
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(walled->blocking().getOperation(accepted->id)->steps[0].attempts, 1) << "the unbind failed once and waits to retry";
  const auto before = std::chrono::steady_clock::now();
  walled->stop(0s);
  EXPECT_LT(std::chrono::steady_clock::now() - before, 10s) << "stop() waited out the backoff";
  walled.reset();
  EXPECT_EQ(fabricBindings().size(), 2u) << "the retry was not made";

  start();  // the fixture's engine: the decompose resumes where it stood
  auto done = engine_->waitOperation(accepted->id, 10s);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, OperationState::kSucceeded);
  EXPECT_EQ(done->steps[0].attempts, 2);
  EXPECT_TRUE(fabricBindings().empty());
}

TEST_F(EngineTest, DecomposeThatCannotUnbindLeavesTheSystemWhole) {
  start();
  compose("train", 3);
  // Every unbind call is applied but times out: after 3 attempts the decompose gives up and binds the set back.
  fabric_->setFaults({.timeoutNext = 3, .targets = kFaultUnbind});
  Operation op = run(engine_->blocking().decompose(Caller::local(), "train"));
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_EQ(stepLog(op), (std::vector<std::string>{"unbind:failed", "release:skipped", "bind:done*"}));
  auto system = engine_->reads().getSystem("train");
  ASSERT_TRUE(system);
  EXPECT_EQ(system->state, SystemState::kComposed);
  EXPECT_EQ(system->bindings.size(), 3u);
  EXPECT_EQ(fabricBindings().size(), 3u) << "the unbound set was bound back";
}

TEST_F(EngineTest, ConcurrentComposesNeverShareADevice) {
  TopologyShape shape;
  shape.totalGpus = 128;
  shape.gpusPerSwitch = 16;
  shape.switchesPerFabric = 4;
  shape.hostsPerFabric = 16;
  startFabric(generateTopology(shape));
  start();
  std::vector<std::thread> clients;
  std::vector<Result<Operation>> results(32);
  for (int i = 0; i < 32; ++i)
    clients.emplace_back([&, i] {
      ComposeRequest r{"job-" + std::to_string(i), {}, {}};
      r.placement.gpuCount = 3;
      auto accepted = engine_->blocking().compose(Caller::local(), r);
      results[static_cast<std::size_t>(i)] = accepted ? engine_->waitOperation(accepted->id, 10s) : accepted;
    });
  for (auto& c : clients) c.join();
  std::set<DeviceId> seen;
  for (const auto& r : results) {
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->state, OperationState::kSucceeded);
  }
  const auto systems = engine_->reads().listSystems();
  for (const auto& s : *systems)
    for (const auto& b : s.bindings) EXPECT_TRUE(seen.insert(b.deviceId).second) << b.deviceId << " is in two systems";
  EXPECT_EQ(seen.size(), 96u);
  EXPECT_EQ(fabricBindings().size(), 96u);
}

TEST(EventStream, ASlowSubscriberLosesTheOldestAndIsToldHowMany) {
  EventStream stream(2);
  for (std::uint64_t i = 1; i <= 3; ++i) stream.push({i, 0, "t", "s", "m"});
  EXPECT_EQ(stream.dropped(), 1u);
  EXPECT_EQ(stream.next(0ms)->sequence, 2u);
  EXPECT_EQ(stream.next(0ms)->sequence, 3u);
  EXPECT_FALSE(stream.next(0ms));
  stream.close();
  stream.push({4, 0, "t", "s", "m"});
  EXPECT_FALSE(stream.next(0ms)) << "nothing arrives after close";
}

TEST_F(EngineTest, WatchersSeeEventsInOrder) {
  start();
  auto stream = engine_->blocking().subscribe().value();
  compose("train", 1);
  std::vector<std::string> types;
  std::uint64_t last = 0;
  while (auto e = stream->next(50ms)) {
    EXPECT_GT(e->sequence, last);
    last = e->sequence;
    types.push_back(e->type);
  }
  EXPECT_EQ(types, (std::vector<std::string>{"operation.accepted", "device.bound", "system.composed", "operation.succeeded"}));
}

// What a reconnecting SSE client (Last-Event-ID) gets: the recorded events after the one it saw, then the live
// ones; an event in both (it happened while the log was read) is the reader's to skip by its sequence.
TEST_F(EngineTest, ASubscriptionAfterASequenceReplaysWhatCameAfterItThenGoesLive) {
  start();
  compose("first", 1);
  auto recorded = engine_->history().recentEvents(1);
  ASSERT_TRUE(recorded && !recorded->empty());
  const std::uint64_t seen = recorded->back().sequence;
  compose("second", 1);

  auto fresh = engine_->blocking().subscribeAfter(std::nullopt);
  ASSERT_TRUE(fresh) << fresh.error().message;
  EXPECT_TRUE(fresh->replay.empty()) << "no Last-Event-ID: nothing replayed";

  auto sub = engine_->blocking().subscribeAfter(seen);
  ASSERT_TRUE(sub) << sub.error().message;
  EXPECT_EQ(sub->lastSeen, seen);
  ASSERT_FALSE(sub->replay.empty());
  EXPECT_EQ(sub->replay.front().sequence, seen + 1) << "the replay starts right after the event the client saw";
  for (std::size_t i = 1; i < sub->replay.size(); ++i) EXPECT_EQ(sub->replay[i].sequence, sub->replay[i - 1].sequence + 1);
  const std::uint64_t lastReplayed = sub->replay.back().sequence;

  compose("third", 1);
  std::vector<std::uint64_t> live;
  while (auto e = sub->live->next(50ms)) live.push_back(e->sequence);
  ASSERT_FALSE(live.empty());
  EXPECT_EQ(live.front(), lastReplayed + 1) << "live picks up where the replay ended: nothing falls between";

  engine_->stop(0ms);
  EXPECT_TRUE(sub->live->closed());
  auto stopped = engine_->blocking().subscribeAfter(seen);
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().code, Code::kUnavailable) << stopped.error().message;
}

}  // namespace
}  // namespace switchyard

namespace switchyard {
namespace {

TEST_F(EngineTest, ARequestIdStartsOneOperationWhoeverRetriesAndWhenever) {
  start();
  ComposeRequest r{"keyed", {}, {}, "req-1"};
  r.placement.gpuCount = 2;
  auto first = engine_->blocking().compose(Caller::local(), r);
  ASSERT_TRUE(first) << first.error().message;
  r.placement.gpuCount = 4;  // a retry is answered by the first operation, whatever it says now
  auto again = engine_->blocking().compose(Caller::local(), r);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, first->id);
  EXPECT_EQ(again->requestId, "req-1");
  run(std::move(first));
  auto reused = engine_->blocking().decompose(Caller::local(), "keyed", "req-1");
  ASSERT_FALSE(reused);
  EXPECT_EQ(reused.error().code, Code::kAlreadyExists);
  const Caller tenant{"eve", Role::kTenant, "team-e"};
  ComposeRequest theirs{"theirs", {}, {}, "req-1"};
  theirs.placement.gpuCount = 1;
  theirs.placement.tenant = "team-e";
  auto hidden = engine_->blocking().compose(tenant, theirs);
  ASSERT_FALSE(hidden);
  EXPECT_EQ(hidden.error().code, Code::kAlreadyExists);
  EXPECT_EQ(hidden.error().message.find("op-"), std::string::npos) << "another tenant's operation is not named";
  EXPECT_FALSE(*engine_->blocking().operationForRequest(tenant, "req-1"));

  start();  // after a restart the key still finds its operation, from the store
  auto afterRestart = engine_->blocking().compose(Caller::local(), r);
  ASSERT_TRUE(afterRestart);
  EXPECT_EQ(afterRestart->id, again->id);
  EXPECT_EQ(afterRestart->state, OperationState::kSucceeded);
  EXPECT_EQ(engine_->reads().listSystems()->size(), 1u);
}

}  // namespace
}  // namespace switchyard
