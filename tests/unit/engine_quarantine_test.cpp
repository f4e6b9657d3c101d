// Releasing a quarantined device (`yardctl devices release`, issue 39 item 13): a device found bound outside
// any system is quarantined; releasing it is refused while the switch still has it bound, unbinds it first
// when asked (not while the host behind its port still has it enumerated), is refused to tenants and for devices
// that are not quarantined, and every answer is audited.
#include <future>

#include "agent/simulated_hosts.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

class EngineQuarantineTest : public EngineTest {
 protected:
  Result<DeviceView> release(const Caller& caller, const DeviceId& device, bool unbind, bool hostIsDown = false) {
    std::promise<Result<DeviceView>> answered;
    engine_->releaseQuarantined(caller, device, {unbind, hostIsDown}, [&](Result<DeviceView> r) { answered.set_value(std::move(r)); });
    return answered.get_future().get();
  }
  std::vector<std::string> auditResults() {
    std::vector<std::string> out;
    const auto records = engine_->history().listAudit({});
    for (const auto& a : *records)
      if (a.action == "release") out.push_back(a.target + ":" + a.result);
    return out;
  }
  static Caller operatorCaller() { return {"ops", Role::kOperator, {}}; }
};

TEST_F(EngineQuarantineTest, ABoundDeviceIsReleasedOnlyByUnbindingItAndAnUnboundOneAtOnce) {
  start();
  ASSERT_TRUE(fabric_->bind("sw1-gpu7", "sw1-usp2"));  // someone works the switch behind yardd's back
  ASSERT_TRUE(engine_->reconcile());
  ASSERT_EQ(engine_->reads().view()->device("sw1-gpu7")->assignment.allocation, DeviceAllocation::kQuarantined);

  ComposeRequest named{"named", {}, {}};
  named.placement.devices = {"sw1-gpu7"};
  for (const auto& h : defaultTopology().hosts)
    for (const auto& p : h.upstreamPorts)
      if (p.portId == "sw1-usp2") named.placement.host = h.id;
  auto refused = engine_->blocking().compose(Caller::local(), named);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("is quarantined (bound to sw1-usp2 outside Switchyard)"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("yardctl devices release sw1-gpu7"), std::string::npos);

  auto stillBound = release(operatorCaller(), "sw1-gpu7", false);
  ASSERT_FALSE(stillBound);
  EXPECT_EQ(stillBound.error().code, Code::kFailedPrecondition);
  EXPECT_NE(stillBound.error().message.find("still bound to sw1-usp2"), std::string::npos) << stillBound.error().message;
  EXPECT_NE(stillBound.error().message.find("--unbind"), std::string::npos);

  auto released = release(operatorCaller(), "sw1-gpu7", true);
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_EQ(released->assignment.allocation, DeviceAllocation::kFree);
  EXPECT_EQ(engine_->reads().view()->device("sw1-gpu7")->assignment.allocation, DeviceAllocation::kFree);
  EXPECT_TRUE(fabricBindings().empty()) << "unbound in the switch";
  const auto events = *engine_->history().listEvents(0, 1000);
  ASSERT_TRUE(std::any_of(events.begin(), events.end(), [](const Event& e) { return e.type == "device.released" && e.subject == "sw1-gpu7" && e.actor == "ops"; }));
  EXPECT_EQ(auditResults(), (std::vector<std::string>{"device:sw1-gpu7:accepted", "device:sw1-gpu7:FAILED_PRECONDITION"}));
  EXPECT_TRUE(run(engine_->blocking().compose(Caller::local(), named)).state == OperationState::kSucceeded) << "it can be composed again";
}

// Found by the deterministic simulation (thirty-fifth session, seed 1115, once it released quarantined GPUs): a
// failed decompose left its system holding its GPUs, quarantined; releasing one freed it while the system still
// held it, and the next compose took it: one GPU in two systems. A GPU a live system holds leaves quarantine with
// the system (decompose it, or detach the GPU), not on its own.
TEST_F(EngineQuarantineTest, ADeviceASystemStillHoldsIsNotReleasedFromUnderIt) {
  start();
  ComposeRequest two{"a1", {}, {}};
  two.placement.gpuCount = 2;
  ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), two)).state, OperationState::kSucceeded);
  // The unbind times out three times (applied, outcome unknown), then binding it back fails for good.
  fabric_->setFaults(FaultPlan{.failProbability = 1.0, .timeoutNext = 3});
  ASSERT_EQ(run(engine_->blocking().decompose(Caller::local(), "a1")).state, OperationState::kFailed);
  fabric_->setFaults({});
  const System a1 = *engine_->reads().getSystem("a1");
  ASSERT_EQ(a1.bindings.size(), 2u) << "the system keeps its GPUs";
  const DeviceId held = a1.bindings.front().deviceId;
  ASSERT_EQ(engine_->reads().view()->device(held)->assignment.allocation, DeviceAllocation::kQuarantined);
  const auto boundBefore = fabricBindings();

  for (const bool unbind : {false, true}) {
    auto refused = release(operatorCaller(), held, unbind);
    ASSERT_FALSE(refused) << "released from under a1";
    EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
    EXPECT_NE(refused.error().message.find("still in system a1"), std::string::npos) << refused.error().message;
  }
  EXPECT_EQ(engine_->reads().view()->device(held)->assignment.allocation, DeviceAllocation::kQuarantined);
  EXPECT_EQ(fabricBindings(), boundBefore) << "nothing unbound";
  ComposeRequest other{"other", {}, {}};
  other.placement.devices = {held};
  EXPECT_FALSE(engine_->blocking().compose(Caller::local(), other)) << "nor handed to another system";

  // The way out the refusal names: decomposed, the system lets its GPUs go, still quarantined; then they are released.
  const Operation again = run(engine_->blocking().decompose(Caller::local(), "a1"));
  ASSERT_EQ(again.state, OperationState::kSucceeded) << again.error;
  EXPECT_EQ(engine_->reads().view()->device(held)->assignment.allocation, DeviceAllocation::kQuarantined);
  auto released = release(operatorCaller(), held, true);
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_EQ(released->assignment.allocation, DeviceAllocation::kFree);
}

// The operator used to vouch alone that no host used a GPU it unbinds: now the host behind the port is asked first,
// where its side can list its devices (an agent), so a release never pulls a GPU from under a host's driver.
TEST_F(EngineQuarantineTest, AnUnbindWaitsUntilTheHostBehindThePortNoLongerHasTheDevice) {
  SimulatedHosts hosts(defaultTopology(), fabric_->router(), clock_);
  hosts_ = &hosts;
  start();
  HostId host;
  for (const auto& h : defaultTopology().hosts)
    for (const auto& p : h.upstreamPorts)
      if (p.portId == "sw1-usp2") host = h.id;
  ASSERT_FALSE(host.empty());
  ASSERT_TRUE(fabric_->bind("sw1-gpu7", "sw1-usp2"));  // bound behind yardd's back, and the host rescanned
  hosts.enumerate(host, "sw1-gpu7");
  ASSERT_TRUE(engine_->reconcile());
  ASSERT_EQ(engine_->reads().view()->device("sw1-gpu7")->assignment.allocation, DeviceAllocation::kQuarantined);

  auto inUse = release(operatorCaller(), "sw1-gpu7", true);
  ASSERT_FALSE(inUse);
  EXPECT_EQ(inUse.error().code, Code::kFailedPrecondition);
  EXPECT_NE(inUse.error().message.find(host + " still has sw1-gpu7 enumerated at "), std::string::npos) << inUse.error().message;
  EXPECT_NE(inUse.error().message.find("remove it on the host first"), std::string::npos) << inUse.error().message;
  EXPECT_EQ(fabricBindings().size(), 1u) << "not unbound";
  EXPECT_EQ(engine_->reads().view()->device("sw1-gpu7")->assignment.allocation, DeviceAllocation::kQuarantined);

  hosts.setHostReachable(host, false);
  auto unknown = release(operatorCaller(), "sw1-gpu7", true);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kUnavailable);
  EXPECT_NE(unknown.error().message.find("cannot ask " + host + " whether it still has sw1-gpu7"), std::string::npos) << unknown.error().message;
  EXPECT_EQ(fabricBindings().size(), 1u) << "a host that cannot say is not taken at its silence";

  // The operator says the host is down: a host that answers is still asked, and heeded.
  hosts.setHostReachable(host, true);
  auto notDown = release(operatorCaller(), "sw1-gpu7", true, /*hostIsDown=*/true);
  ASSERT_FALSE(notDown);
  EXPECT_EQ(notDown.error().code, Code::kFailedPrecondition) << notDown.error().message;
  auto withoutUnbind = release(operatorCaller(), "sw1-gpu7", false, /*hostIsDown=*/true);
  ASSERT_FALSE(withoutUnbind);
  EXPECT_EQ(withoutUnbind.error().code, Code::kInvalidArgument);

  hosts.forget(host, "sw1-gpu7");  // removed on the host
  auto released = release(operatorCaller(), "sw1-gpu7", true);
  ASSERT_TRUE(released) << released.error().message;
  EXPECT_EQ(released->assignment.allocation, DeviceAllocation::kFree);
  EXPECT_TRUE(fabricBindings().empty());
  EXPECT_TRUE(hosts.surpriseRemovals().empty()) << "no host lost a device it still had";
  EXPECT_EQ(auditResults(), (std::vector<std::string>{"device:sw1-gpu7:accepted", "device:sw1-gpu7:INVALID_ARGUMENT", "device:sw1-gpu7:FAILED_PRECONDITION",
                                                      "device:sw1-gpu7:UNAVAILABLE", "device:sw1-gpu7:FAILED_PRECONDITION"}));

  // A host that is down for good: its silence stops the unbind until the operator says so; then it is their word,
  // and the audit record says the host was not heard.
  ASSERT_TRUE(fabric_->bind("sw1-gpu6", "sw1-usp2"));
  ASSERT_TRUE(engine_->reconcile());
  hosts.setHostReachable(host, false);
  auto silent = release(operatorCaller(), "sw1-gpu6", true);
  ASSERT_FALSE(silent);
  EXPECT_EQ(silent.error().code, Code::kUnavailable);
  EXPECT_NE(silent.error().message.find("--host-is-down"), std::string::npos) << silent.error().message;
  auto down = release(operatorCaller(), "sw1-gpu6", true, /*hostIsDown=*/true);
  ASSERT_TRUE(down) << down.error().message;
  EXPECT_EQ(down->assignment.allocation, DeviceAllocation::kFree);
  EXPECT_TRUE(fabricBindings().empty());
  const auto records = *engine_->history().listAudit({});
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.front().target, "device:sw1-gpu6");
  EXPECT_NE(records.front().message.find(host + " did not answer"), std::string::npos) << records.front().message;
  EXPECT_NE(records.front().message.find("the operator says it is down"), std::string::npos) << records.front().message;
}

TEST_F(EngineQuarantineTest, OnlyOperatorsReleaseAndOnlyQuarantinedDevices) {
  start();
  ASSERT_TRUE(fabric_->bind("sw1-gpu7", "sw1-usp2"));
  ASSERT_TRUE(engine_->reconcile());
  auto tenant = release({"carol", Role::kTenant, "team-a"}, "sw1-gpu7", true);
  ASSERT_FALSE(tenant);
  EXPECT_EQ(tenant.error().code, Code::kPermissionDenied);
  auto free = release(operatorCaller(), "sw0-gpu0", false);
  ASSERT_FALSE(free);
  EXPECT_NE(free.error().message.find("is not quarantined (it is free)"), std::string::npos) << free.error().message;
  auto unknown = release(operatorCaller(), "sw9-gpu9", false);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kNotFound);
  EXPECT_EQ(engine_->reads().view()->device("sw1-gpu7")->assignment.allocation, DeviceAllocation::kQuarantined);
  EXPECT_EQ(auditResults().size(), 3u) << "refusals are audited too";
}

}  // namespace
}  // namespace switchyard
