// The engine's host steps against simulated hosts driven by the simulated fabric: a device is online only
// once its host saw it; a device that never appears, the wrong device, or one the host cannot map rolls
// the attach back; a GPU in use is not detached; an agent that does not answer is retried, then reported.
#include <future>
#include <thread>

#include "agent/simulated_hosts.h"
#include "tests/support/call_gate.h"
#include "tests/support/forwarding_hosts.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

class EngineHostTest : public EngineTest {
 protected:
  void startWithHosts(SimulatedHostsOptions options = {}) {
    simulatedHosts_ = std::make_unique<SimulatedHosts>(defaultTopology(), fabric_->router(), clock_, std::move(options));
    hosts_ = simulatedHosts_.get();
    start();
  }

  static std::vector<std::string> stepLog(const Operation& op) {
    std::vector<std::string> log;
    for (const auto& s : op.steps) log.push_back(s.kind + ":" + std::string(toString(s.state)) + (s.compensation ? "*" : ""));
    return log;
  }

  // Composes two GPUs and returns the devices the packing core picked.
  System composeTwo(const std::string& name) {
    Operation op = compose(name, 2);
    EXPECT_EQ(op.state, OperationState::kSucceeded) << op.error;
    return *engine_->reads().getSystem(name);
  }

  // The device the next compose will take first: compose, look, decompose.
  DeviceId nextDevice() {
    System probe = composeTwo("probe");
    run(engine_->blocking().decompose(Caller::local(), "probe"));
    return probe.bindings.front().deviceId;
  }

  std::unique_ptr<SimulatedHosts> simulatedHosts_;
};

TEST_F(EngineHostTest, ADeviceIsOnlineOnlyAfterItsHostSawIt) {
  startWithHosts();
  Operation op = compose("train", 2);
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  EXPECT_EQ(stepLog(op), (std::vector<std::string>{"reserve:done", "bind:done", "verify:done", "host-admit:done", "commit:done"}));
  const System system = *engine_->reads().getSystem("train");
  ASSERT_EQ(system.hostDevices.size(), 2u);
  for (const auto& b : system.bindings) {
    auto it = std::find_if(system.hostDevices.begin(), system.hostDevices.end(), [&](const auto& h) { return h.deviceId == b.deviceId; });
    ASSERT_NE(it, system.hostDevices.end()) << b.deviceId;
    EXPECT_EQ(it->pciAddress.size(), 12u) << it->pciAddress;
    EXPECT_EQ(it->uuid, simulatedGpuUuid(b.deviceId));
  }
  EXPECT_EQ(simulatedHosts_->present(system.hostId).size(), 2u);
  const auto types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "device.online"), 2);

  // The identities survive a restart (they are stored with the system).
  start();
  EXPECT_EQ(engine_->reads().getSystem("train")->hostDevices, system.hostDevices);

  // Decompose lets the host go first, then unbinds: no surprise removal.
  Operation down = run(engine_->blocking().decompose(Caller::local(), "train"));
  ASSERT_EQ(down.state, OperationState::kSucceeded) << down.error;
  EXPECT_EQ(stepLog(down), (std::vector<std::string>{"host-release:done", "unbind:done", "release:done"}));
  EXPECT_TRUE(simulatedHosts_->present(system.hostId).empty());
  EXPECT_TRUE(simulatedHosts_->surpriseRemovals().empty());
  EXPECT_TRUE(fabricBindings().empty());
}

TEST_F(EngineHostTest, ADeviceThatNeverAppearsIsUnboundAndReturnedWithTheReason) {
  hostCallTimeout_ = 5000ms;
  startWithHosts();
  const DeviceId missing = nextDevice();
  simulatedHosts_->setDeviceFault(missing, SimulatedHostFault::kNeverAppears);
  const std::size_t freeBefore = freeDevices();
  Operation op = compose("train", 2);
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_EQ(stepLog(op), (std::vector<std::string>{"reserve:done", "bind:done", "verify:done", "host-admit:failed", "commit:skipped",
                                                   "host-release:done*", "unbind:done*", "release:done*"}));
  EXPECT_NE(op.error.find("DEADLINE_EXCEEDED"), std::string::npos) << op.error;
  EXPECT_NE(op.error.find(missing + " (serial"), std::string::npos) << op.error;
  EXPECT_NE(op.error.find("did not appear"), std::string::npos) << op.error;
  EXPECT_EQ(freeDevices(), freeBefore);
  EXPECT_TRUE(fabricBindings().empty());
  EXPECT_TRUE(simulatedHosts_->surpriseRemovals().empty());
  const auto types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "host.admit-failed"), types.end());
}

TEST_F(EngineHostTest, TheWrongDeviceIsReleasedFromTheHostBeforeItIsUnbound) {
  startWithHosts();
  const DeviceId swapped = nextDevice();
  simulatedHosts_->setDeviceFault(swapped, SimulatedHostFault::kWrongSerial);
  Operation op = compose("train", 2);
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_NE(op.error.find("wrong device"), std::string::npos) << op.error;
  EXPECT_EQ(stepLog(op).at(5), "host-release:done*");  // the host let go of what appeared, then the switch unbound
  EXPECT_TRUE(fabricBindings().empty());
  EXPECT_TRUE(simulatedHosts_->surpriseRemovals().empty());
  EXPECT_TRUE(simulatedHosts_->present(engine_->reads().listHosts()->front().host.id).empty());
}

// Found by the deterministic simulation (seed 2301): when a rollback's host-release fails for good, the
// devices must not be unbound under the host that may still use them; they stay bound, quarantined.
TEST_F(EngineHostTest, ARollbackWhoseHostKeepsTheDevicesLeavesThemBoundAndQuarantined) {
  startWithHosts();
  const System probe = composeTwo("probe");  // the two devices the next compose of two gets
  run(engine_->blocking().decompose(Caller::local(), "probe"));
  const DeviceId first = probe.bindings[0].deviceId, second = probe.bindings[1].deviceId;
  simulatedHosts_->setDeviceFault(first, SimulatedHostFault::kInUse);         // appears, then cannot be released
  simulatedHosts_->setDeviceFault(second, SimulatedHostFault::kWrongSerial);  // fails the admit
  Operation op = compose("train", 2);
  ASSERT_EQ(op.state, OperationState::kFailed);
  EXPECT_NE(op.error.find("quarantined"), std::string::npos) << op.error;
  bool unbindSkipped = false;
  for (const auto& s : op.steps)
    if (s.kind == "unbind" && s.compensation) unbindSkipped = s.state == StepState::kSkipped;
  EXPECT_TRUE(unbindSkipped) << "the switch was not asked to unbind what the host kept";
  EXPECT_TRUE(simulatedHosts_->surpriseRemovals().empty());
  EXPECT_EQ(fabricBindings().size(), 2u);
  const auto devices = engine_->reads().listDevices();  // kept: the loop refers into it
  for (const auto& d : *devices)
    if (d.device.id == first || d.device.id == second) EXPECT_EQ(d.assignment.allocation, DeviceAllocation::kQuarantined) << d.device.id;
}

TEST_F(EngineHostTest, BarSpaceExhaustionIsASpecificError) {
  startWithHosts();
  const DeviceId device = nextDevice();
  simulatedHosts_->setDeviceFault(device, SimulatedHostFault::kBarExhausted);
  Operation op = compose("train", 2);
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_NE(op.error.find("no space for BAR"), std::string::npos) << op.error;
  EXPECT_NE(op.error.find("pci=realloc"), std::string::npos) << op.error;
  EXPECT_TRUE(fabricBindings().empty());
}

TEST_F(EngineHostTest, AGpuInUseIsNotDetachedAndTheErrorNamesTheProcess) {
  startWithHosts();
  const System system = composeTwo("train");
  const DeviceId busy = system.bindings.front().deviceId;
  simulatedHosts_->setDeviceFault(busy, SimulatedHostFault::kInUse);

  Operation detach = run(engine_->blocking().detach(Caller::local(), {.system = "train", .devices = {busy}}));
  EXPECT_EQ(detach.state, OperationState::kFailed);
  EXPECT_NE(detach.error.find("in use by pid 4242 (python3 train.py)"), std::string::npos) << detach.error;
  EXPECT_EQ(stepLog(detach), (std::vector<std::string>{"host-release:failed", "unbind:skipped", "release:skipped"}));
  Operation decompose = run(engine_->blocking().decompose(Caller::local(), "train"));
  EXPECT_EQ(decompose.state, OperationState::kFailed);

  // Nothing was unbound or removed; the system is whole.
  EXPECT_EQ(fabricBindings().size(), 2u);
  EXPECT_EQ(simulatedHosts_->present(system.hostId).size(), 2u);
  const System after = *engine_->reads().getSystem("train");
  EXPECT_EQ(after.state, SystemState::kComposed);
  EXPECT_EQ(after.bindings.size(), 2u);
  EXPECT_EQ(after.hostDevices.size(), 2u);

  simulatedHosts_->setDeviceFault(busy, SimulatedHostFault::kNone);
  EXPECT_EQ(run(engine_->blocking().decompose(Caller::local(), "train")).state, OperationState::kSucceeded);
  EXPECT_TRUE(simulatedHosts_->surpriseRemovals().empty());
}

// Secure release (issue 39 item 11): a device its host removed without its reset leaves the system but not
// for the pool. It is quarantined, placement and reconcile (start included) leave it so, and only an
// operator's release returns it.
TEST_F(EngineHostTest, ADeviceWhoseResetFailedIsQuarantinedUntilAnOperatorReleasesIt) {
  startWithHosts();
  const System system = composeTwo("train");
  const DeviceId dirty = system.bindings.front().deviceId;
  const DeviceId clean = system.bindings.back().deviceId;
  simulatedHosts_->setDeviceFault(dirty, SimulatedHostFault::kResetFails);

  Operation down = run(engine_->blocking().decompose(Caller::local(), "train"));
  ASSERT_EQ(down.state, OperationState::kSucceeded) << down.error;
  EXPECT_TRUE(simulatedHosts_->present(system.hostId).empty()) << "the host let go of both";
  EXPECT_TRUE(fabricBindings().empty()) << "and the switch unbound both";
  EXPECT_EQ(engine_->reads().view()->device(clean)->assignment.allocation, DeviceAllocation::kFree);
  const auto held = engine_->reads().view()->device(dirty)->assignment;
  EXPECT_EQ(held.allocation, DeviceAllocation::kQuarantined);
  EXPECT_TRUE(held.owner.starts_with(kNotResetQuarantine)) << held.owner;
  EXPECT_NE(held.owner.find("reset failed"), std::string::npos) << held.owner;
  const auto events = *engine_->history().listEvents(0, 1000);
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [&](const Event& e) {
    return e.type == "device.quarantined" && e.subject == dirty && e.message.find("yardctl devices release " + dirty) != std::string::npos;
  }));
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [](const Event& e) {
    return e.type == "system.decomposed" && e.message.find("released 1 device(s) to the pool, 1 quarantined (not reset)") != std::string::npos;
  }));

  // Unbound in the fabric, yet neither reconcile nor a restart frees it; no compose gets it.
  ASSERT_TRUE(engine_->reconcile());
  start();
  EXPECT_EQ(engine_->reads().view()->device(dirty)->assignment.allocation, DeviceAllocation::kQuarantined);
  ComposeRequest named{"next", {}, {}};
  named.placement.devices = {dirty};
  named.placement.host = system.hostId;
  auto refused = engine_->blocking().compose(Caller::local(), named);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("is quarantined (not reset: "), std::string::npos) << refused.error().message;

  // The operator resets it (here: the fault is cleared) and releases it.
  std::promise<Result<DeviceView>> answered;
  engine_->releaseQuarantined({"ops", Role::kOperator, {}}, dirty, {}, [&](Result<DeviceView> r) { answered.set_value(std::move(r)); });
  auto released = answered.get_future().get();
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_EQ(released->assignment.allocation, DeviceAllocation::kFree);
  simulatedHosts_->setDeviceFault(dirty, SimulatedHostFault::kNone);
  EXPECT_EQ(run(engine_->blocking().compose(Caller::local(), named)).state, OperationState::kSucceeded);
}

TEST_F(EngineHostTest, AnAgentThatRestartsIsAskedAgain) {
  startWithHosts();
  const HostId host = engine_->reads().listHosts()->front().host.id;
  simulatedHosts_->restartAgent(host, 2);  // two calls find nobody; the third (maxStepAttempts) answers
  Operation op = compose("train", 2);
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  EXPECT_EQ(op.steps.at(3).attempts, 3);

  simulatedHosts_->restartAgent(engine_->reads().getSystem("train")->hostId, 2);
  Operation down = run(engine_->blocking().decompose(Caller::local(), "train"));
  EXPECT_EQ(down.state, OperationState::kSucceeded) << down.error;
  EXPECT_EQ(down.steps.front().attempts, 3);
}

TEST_F(EngineHostTest, AnUnreachableAgentFailsTheDetachWithAClearStatusAndUnbindsNothing) {
  startWithHosts();
  const System system = composeTwo("train");
  simulatedHosts_->setHostReachable(system.hostId, false);
  Operation down = run(engine_->blocking().decompose(Caller::local(), "train"));
  EXPECT_EQ(down.state, OperationState::kFailed);
  EXPECT_NE(down.error.find("UNAVAILABLE"), std::string::npos) << down.error;
  EXPECT_NE(down.error.find("does not answer"), std::string::npos) << down.error;
  EXPECT_EQ(down.steps.front().attempts, 3);
  EXPECT_EQ(stepLog(down), (std::vector<std::string>{"host-release:failed", "unbind:skipped", "release:skipped"}));
  EXPECT_EQ(fabricBindings().size(), 2u);
  EXPECT_EQ(engine_->reads().getSystem("train")->state, SystemState::kComposed);

  simulatedHosts_->setHostReachable(system.hostId, true);
  EXPECT_EQ(run(engine_->blocking().decompose(Caller::local(), "train")).state, OperationState::kSucceeded);
}

TEST_F(EngineHostTest, AHostWithNoPolicyIsRefusedWithTheWayOut) {
  startWithHosts({.policy = HostPolicy::kUnset});
  ComposeRequest r{"train", {}, {}};
  r.placement.gpuCount = 2;
  auto refused = engine_->blocking().compose(Caller::local(), r);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("--host-policy"), std::string::npos) << refused.error().message;
  EXPECT_TRUE(fabricBindings().empty());
  EXPECT_EQ(engine_->reads().listSystems()->size(), 0u);
}

TEST_F(EngineHostTest, AHostThatTrustsTheFabricHasNoHostSteps) {
  startWithHosts({.policy = HostPolicy::kTrustFabric});
  Operation op = compose("train", 2);
  ASSERT_EQ(op.state, OperationState::kSucceeded);
  EXPECT_EQ(stepLog(op), (std::vector<std::string>{"reserve:done", "bind:done", "verify:done", "commit:done"}));
  EXPECT_TRUE(engine_->reads().getSystem("train")->hostDevices.empty());
  EXPECT_EQ(simulatedHosts_->calls(), 0u);
}

// MIG on the host: the agent makes the instances the engine recorded once the GPU is there, in the same
// host-admit step, and destroys them in host-release; an attach of instances onto a GPU the system holds
// is a host-admit with no bind; a failure rolls back like any step.
TEST_F(EngineHostTest, MigInstancesAreMadeOnTheHostAndTornDownBeforeTheyLeave) {
  startWithHosts();
  ComposeRequest r{"infer", {}, {}};
  r.placement.gpuInstances = {MigProfile::k3g};
  Operation composed = run(engine_->blocking().compose(Caller::local(), r));
  ASSERT_EQ(composed.state, OperationState::kSucceeded) << composed.error;
  const System system = *engine_->reads().getSystem("infer");
  EXPECT_EQ(simulatedHosts_->migInstances(system.hostId), system.gpuInstances);

  AttachRequest more{"infer", {}};
  more.placement.gpuInstances = {MigProfile::k2g};
  Operation attached = run(engine_->blocking().attach(Caller::local(), more));
  ASSERT_EQ(attached.state, OperationState::kSucceeded) << attached.error;
  EXPECT_EQ(stepLog(attached), (std::vector<std::string>{"reserve:done", "host-admit:done", "commit:done"}))
      << "the 2g fits on the GPU the system holds: no bind, but the host makes it";
  EXPECT_EQ(simulatedHosts_->migInstances(system.hostId).size(), 2u);

  const GpuInstance added = attached.gpuInstances.front();
  Operation detached = run(engine_->blocking().detach(Caller::local(), {.system = "infer", .gpuInstances = {{added.deviceId, added.start}}}));
  ASSERT_EQ(detached.state, OperationState::kSucceeded) << detached.error;
  EXPECT_EQ(stepLog(detached), (std::vector<std::string>{"host-release:done", "release:done"}));
  EXPECT_EQ(simulatedHosts_->migInstances(system.hostId), system.gpuInstances);

  ASSERT_EQ(run(engine_->blocking().decompose(Caller::local(), "infer")).state, OperationState::kSucceeded);
  EXPECT_TRUE(simulatedHosts_->migInstances(system.hostId).empty());
  EXPECT_TRUE(simulatedHosts_->surpriseRemovals().empty());
}

TEST_F(EngineHostTest, AMigInstanceTheHostCannotMakeRollsTheComposeBack) {
  startWithHosts();
  const DeviceId gpu = nextDevice();
  simulatedHosts_->setDeviceFault(gpu, SimulatedHostFault::kMigFails);
  ComposeRequest r{"infer", {}, {}};
  r.placement.gpuInstances = {MigProfile::k1g, MigProfile::k1g};
  Operation op = run(engine_->blocking().compose(Caller::local(), r));
  EXPECT_EQ(op.state, OperationState::kFailed);
  EXPECT_NE(op.error.find("MIG mode is disabled"), std::string::npos) << op.error;
  EXPECT_TRUE(fabricBindings().empty());
  EXPECT_TRUE(simulatedHosts_->migInstances(engine_->reads().listHosts()->front().host.id).empty());
  EXPECT_TRUE(simulatedHosts_->surpriseRemovals().empty());
}

// Host-side drift: a device online in a system that its host no longer sees, and a pool device a host
// sees outside its systems, are reported once each, and cleared when they go away.
TEST_F(EngineHostTest, HostSideDriftIsReportedOnceAndClears) {
  startWithHosts();
  const System system = composeTwo("train");
  auto clean = engine_->reconcileHosts();
  ASSERT_TRUE(clean) << clean.error().message;
  EXPECT_TRUE(clean->empty());

  const DeviceId lost = system.bindings.front().deviceId;
  simulatedHosts_->forget(system.hostId, lost);
  const HostId other = engine_->reads().listHosts()->back().host.id;
  ASSERT_NE(other, system.hostId);
  simulatedHosts_->enumerate(other, "sw1-gpu7");
  auto drifts = engine_->reconcileHosts();
  ASSERT_TRUE(drifts) << drifts.error().message;
  ASSERT_EQ(drifts->size(), 2u);
  std::map<std::string, Drift> byKind;
  for (const auto& d : *drifts) byKind[d.kind] = d;
  EXPECT_EQ(byKind["host-missing-device"].deviceId, lost);
  EXPECT_NE(byKind["host-missing-device"].message.find("no longer sees it"), std::string::npos);
  EXPECT_EQ(byKind["host-unexpected-device"].deviceId, "sw1-gpu7");
  EXPECT_NE(byKind["host-unexpected-device"].message.find(other + " sees sw1-gpu7"), std::string::npos);

  ASSERT_TRUE(engine_->reconcileHosts());  // seen again: no new events
  auto types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "drift.host-missing-device"), 1);
  EXPECT_EQ(std::count(types.begin(), types.end(), "drift.host-unexpected-device"), 1);

  // A host whose agent does not answer is skipped, not reported.
  simulatedHosts_->setHostReachable(other, false);
  auto partial = engine_->reconcileHosts();
  ASSERT_TRUE(partial);
  EXPECT_EQ(partial->size(), 1u);
}

// The host side answers admit only when let through: the engine stops while a host step is in flight and
// the next start resumes the operation from its log.
class GatedHosts final : public testing::ForwardingHosts {
 public:
  using ForwardingHosts::ForwardingHosts;
  Result<std::vector<HostDeviceIdentity>> admit(const HostId& host, const HostChange& change, const CallOptions& options) override {
    gate_.holdHere();
    return inner_.admit(host, change, options);
  }
  void waitUntilHeld() { gate_.waitUntilHeld(); }
  void open() { gate_.open(); }

 private:
  testing::CallGate gate_;
};

TEST_F(EngineHostTest, AnOperationStoppedDuringItsHostStepResumesAtTheNextStart) {
  simulatedHosts_ = std::make_unique<SimulatedHosts>(defaultTopology(), fabric_->router(), clock_);
  GatedHosts gated(*simulatedHosts_);
  hosts_ = &gated;
  start();
  ComposeRequest r{"train", {}, {}};
  r.placement.gpuCount = 2;
  auto accepted = engine_->blocking().compose(Caller::local(), r);
  ASSERT_TRUE(accepted) << accepted.error().message;
  gated.waitUntilHeld();
  // Bound in the switch, not yet seen by the host: the system says so, and is not composed.
  const System waiting = *engine_->reads().getSystem("train");
  EXPECT_EQ(waiting.state, SystemState::kComposing);
  EXPECT_EQ(waiting.progress, "verifying on the host");
  std::thread stopper([&] { engine_->stop(0s); });
  while (!engine_->halted()) std::this_thread::yield();  // the bind returns only after stop() halted the engine
  gated.open();
  stopper.join();
  auto stored = store_->getOperation(accepted->id);
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ(stepLog(**stored), (std::vector<std::string>{"reserve:done", "bind:done", "verify:done", "host-admit:done", "commit:pending"}));

  hosts_ = simulatedHosts_.get();
  RecoveryReport report = start();
  EXPECT_EQ(report.resumedOperations, 1u);
  auto op = engine_->blocking().getOperation(accepted->id);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->state, OperationState::kSucceeded);
  EXPECT_EQ(engine_->reads().getSystem("train")->hostDevices.size(), 2u);
  EXPECT_EQ(engine_->reads().getSystem("train")->progress, "");
}

// The host releases, then its reply waits until let through: the engine stops between host-release and unbind.
class ReleaseHeld final : public testing::ForwardingHosts {
 public:
  using ForwardingHosts::ForwardingHosts;
  Result<HostRelease> release(const HostId& host, const HostChange& change, const CallOptions& options) override {
    auto released = inner_.release(host, change, options);
    gate_.holdHere();
    return released;
  }
  void waitUntilHeld() { gate_.waitUntilHeld(); }
  void open() { gate_.open(); }

 private:
  testing::CallGate gate_;
};

// yardd stops after a host released its devices and before the switch unbinds them. The hosts are machines of
// their own: after the restart the host still has them released, so the resumed unbind surprises nobody and
// host reconcile finds nothing (F16: simulated hosts rebuilt from the switch's routes saw them again).
TEST_F(EngineHostTest, AHostThatReleasedBeforeAStopStillHasThemReleasedAfterTheRestart) {
  const SimulatedHostsOptions kept{.statePath = dir_ / "sim-hosts.json"};
  startWithHosts(kept);
  const System system = composeTwo("train");
  ReleaseHeld held(*simulatedHosts_);
  hosts_ = &held;
  start();
  auto accepted = engine_->blocking().decompose(Caller::local(), "train");
  ASSERT_TRUE(accepted) << accepted.error().message;
  held.waitUntilHeld();
  std::thread stopper([&] { engine_->stop(0s); });
  while (!engine_->halted()) std::this_thread::yield();
  held.open();
  stopper.join();
  auto stored = store_->getOperation(accepted->id);
  ASSERT_TRUE(stored && *stored);
  EXPECT_EQ(stepLog(**stored), (std::vector<std::string>{"host-release:done", "unbind:pending", "release:pending"}));
  EXPECT_EQ(fabricBindings().size(), 2u);
  EXPECT_EQ(SimulatedHosts(defaultTopology(), fabric_->router(), clock_).present(system.hostId).size(), 2u)
      << "hosts that keep no state see what the switch routes to them";

  startWithHosts(kept);  // the restart: new simulated hosts over the kept state
  EXPECT_TRUE(simulatedHosts_->present(system.hostId).empty());
  auto done = engine_->waitOperation(accepted->id, 10s);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->state, OperationState::kSucceeded);
  EXPECT_TRUE(fabricBindings().empty());
  EXPECT_TRUE(simulatedHosts_->surpriseRemovals().empty());
  auto drift = engine_->reconcileHosts();
  ASSERT_TRUE(drift);
  EXPECT_TRUE(drift->empty()) << drift->front().kind << ": " << drift->front().message;
  auto types = eventTypes();
  EXPECT_EQ(std::count_if(types.begin(), types.end(), [](const std::string& t) { return t.starts_with("drift."); }), 0);
}

// The host released, but its reply was lost; every later attempt finds the agent down. The release may well have
// happened, so the rollback re-admits what it released (its MIG instances too) instead of trusting the last answer.
class ReleaseThenDown final : public testing::ForwardingHosts {
 public:
  using ForwardingHosts::ForwardingHosts;
  Result<HostRelease> release(const HostId& host, const HostChange& change, const CallOptions& options) override {
    if (releases_++ > 0) return fail(Code::kUnavailable, "the agent does not answer");
    (void)inner_.release(host, change, options);
    return fail(Code::kDeadlineExceeded, "no reply from the agent");
  }

 private:
  int releases_ = 0;
};

TEST_F(EngineHostTest, AReleaseWhoseReplyWasLostIsUndoneEvenWhenTheAgentIsDownAtTheEnd) {
  simulatedHosts_ = std::make_unique<SimulatedHosts>(defaultTopology(), fabric_->router(), clock_);
  hosts_ = simulatedHosts_.get();
  start();
  ComposeRequest r{"infer", {}, {}};
  r.placement.gpuInstances = {MigProfile::k3g};
  ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), r)).state, OperationState::kSucceeded);
  const System system = *engine_->reads().getSystem("infer");
  ReleaseThenDown flaky(*simulatedHosts_);
  hosts_ = &flaky;
  start();
  Operation failed = run(engine_->blocking().decompose(Caller::local(), "infer"));
  EXPECT_EQ(failed.state, OperationState::kFailed);
  EXPECT_EQ(stepLog(failed).back(), "host-admit:done*") << "the rollback re-admits what the lost reply may have released";
  EXPECT_EQ(simulatedHosts_->migInstances(system.hostId), system.gpuInstances) << "and makes its MIG instance again";
  EXPECT_EQ(simulatedHosts_->present(system.hostId).size(), 1u);
  EXPECT_EQ(engine_->reads().getSystem("infer")->state, SystemState::kComposed);
}

}  // namespace
}  // namespace switchyard
