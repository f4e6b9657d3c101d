// Several systems at once and composition reservations (engine_reservations.cpp): a manifest is placed
// together or refused whole; a reservation holds its hosts and devices from every other request until it
// is applied (exactly what was held is composed), released, or expires on the engine's clock.
#include <gtest/gtest.h>

#include <set>

#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

class EngineReservationsTest : public EngineTest {
 protected:
  static ComposeRequest want(const std::string& name, int gpus) {
    ComposeRequest r{name, {}, {}};
    r.placement.gpuCount = gpus;
    return r;
  }
  static ComposeRequest forTenant(const std::string& name, int gpus) {
    auto r = want(name, gpus);
    r.placement.tenant = "team-a";
    return r;
  }
  std::set<std::string> heldDevices(const Reservation& r) {
    std::set<std::string> out;
    for (const auto& s : r.systems)
      for (const auto& d : s.placement.devices) out.insert(d.deviceId);
    return out;
  }
  const Caller alice_{"alice", Role::kOperator, {}};
  const Caller bob_{"bob", Role::kOperator, {}};
};

TEST_F(EngineReservationsTest, AReservationHoldsItsHostsAndDevicesFromEveryoneElseUntilApplied) {
  start();
  auto reserved = engine_->blocking().reserve(alice_, {want("train", 8), want("eval", 4)}, 300s);
  ASSERT_TRUE(reserved) << reserved.error().message;
  ASSERT_EQ(reserved->systems.size(), 2u);
  EXPECT_NE(reserved->systems[0].placement.hostId, reserved->systems[1].placement.hostId);
  EXPECT_EQ(heldDevices(*reserved).size(), 12u) << "the two systems' devices are disjoint";
  EXPECT_EQ(freeDevices(), 4u);
  const auto devices = *engine_->reads().listDevices();
  for (const auto& d : devices)
    if (heldDevices(*reserved).contains(d.device.id)) {
      EXPECT_EQ(d.assignment.allocation, DeviceAllocation::kReserved);
      EXPECT_EQ(d.assignment.owner, reserved->id);
    }
  int heldHosts = 0;
  const auto hosts = *engine_->reads().listHosts();
  for (const auto& h : hosts) heldHosts += h.reservationId == reserved->id ? 1 : 0;
  EXPECT_EQ(heldHosts, 2);

  // Others get what is left: four GPUs on one of the two other hosts, and nothing more.
  PlacementRequest eight;
  eight.gpuCount = 8;
  EXPECT_FALSE(engine_->blocking().plan(eight)->decision.placement.has_value());
  compose("other", 4);
  auto none = engine_->blocking().compose(bob_, want("more", 1));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Code::kResourceExhausted);
  auto sameName = engine_->blocking().compose(bob_, want("train", 0));
  ASSERT_FALSE(sameName);
  EXPECT_EQ(sameName.error().code, Code::kAlreadyExists) << "the reservation holds its systems' names too";

  auto ops = engine_->blocking().composeReserved(alice_, reserved->id);
  ASSERT_TRUE(ops) << ops.error().message;
  ASSERT_EQ(ops->size(), 2u);
  for (const auto& op : *ops) EXPECT_EQ(run(op).state, OperationState::kSucceeded);
  for (const auto& held : reserved->systems) {
    auto s = engine_->reads().getSystem(held.name);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->hostId, held.placement.hostId);
    std::set<std::string> bound;
    for (const auto& b : s->bindings) bound.insert(b.deviceId);
    std::set<std::string> wanted;
    for (const auto& d : held.placement.devices) wanted.insert(d.deviceId);
    EXPECT_EQ(bound, wanted) << "exactly what was held is composed";
  }
  EXPECT_TRUE(engine_->blocking().listReservations()->empty());
  EXPECT_EQ(engine_->blocking().composeReserved(alice_, reserved->id).error().code, Code::kNotFound) << "a reservation is applied once";
  const auto types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "reservation.created"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "reservation.applied"), types.end());
}

TEST_F(EngineReservationsTest, AReservationExpiresOnTheEnginesClockAndItsDevicesAreFreeAgain) {
  start();
  auto reserved = engine_->blocking().reserve(alice_, {want("train", 8)}, 60s);
  ASSERT_TRUE(reserved) << reserved.error().message;
  clock_.advance(59s);
  EXPECT_EQ(engine_->blocking().listReservations()->size(), 1u);
  EXPECT_EQ(freeDevices(), 8u);
  clock_.advance(2s);
  EXPECT_TRUE(engine_->blocking().listReservations()->empty()) << "past its time it is not listed";
  EXPECT_EQ(freeDevices(), 8u) << "a read writes nothing: the devices go back on the deadline tick (issue 36)";
  auto types = eventTypes();
  EXPECT_EQ(std::find(types.begin(), types.end(), "reservation.expired"), types.end());
  ASSERT_TRUE(engine_->blocking().expireDeadlines());  // the tick (every EngineOptions::deadlineInterval in yardd)
  EXPECT_EQ(freeDevices(), 16u);
  types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "reservation.expired"), types.end());
  auto late = engine_->blocking().composeReserved(alice_, reserved->id);
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, Code::kNotFound);
  EXPECT_NE(late.error().message.find("expired"), std::string::npos) << late.error().message;
  compose("train", 8);  // the name is free again too
}

TEST_F(EngineReservationsTest, OnlyTheReserverOrAnAdministratorAppliesOrReleasesAndTenantsSeeOnlyTheirOwn) {
  start();
  auto reserved = engine_->blocking().reserve(alice_, {want("train", 2)}, 300s);
  ASSERT_TRUE(reserved);
  EXPECT_EQ(engine_->blocking().composeReserved(bob_, reserved->id).error().code, Code::kPermissionDenied);
  EXPECT_EQ(engine_->blocking().releaseReservation(bob_, reserved->id).error().code, Code::kPermissionDenied);
  const Caller tenant{"carol", Role::kTenant, "team-a"};
  EXPECT_EQ(engine_->blocking().releaseReservation(tenant, reserved->id).error().code, Code::kNotFound) << "another tenant's reservation is none";
  auto mine = engine_->blocking().reserve(tenant, {forTenant("mine", 1)}, 300s);
  ASSERT_TRUE(mine) << mine.error().message;
  EXPECT_EQ(engine_->blocking().releaseReservation(alice_, mine->id).error().code, Code::kPermissionDenied);
  ASSERT_TRUE(engine_->blocking().releaseReservation(Caller::local(), reserved->id)) << "an administrator may release anyone's";
  EXPECT_EQ(freeDevices(), 15u);
  ASSERT_TRUE(engine_->blocking().releaseReservation(tenant, mine->id));
  EXPECT_EQ(freeDevices(), 16u);
  EXPECT_TRUE(engine_->reads().listSystems()->empty());
}

TEST_F(EngineReservationsTest, AManifestIsPlacedTogetherOrRefusedWhole) {
  start();
  auto plans = engine_->blocking().planSystems({want("a", 8), want("b", 8)});
  ASSERT_TRUE(plans) << plans.error().message;
  ASSERT_EQ(plans->size(), 2u);
  EXPECT_NE((*plans)[0].hostId, (*plans)[1].hostId);
  EXPECT_EQ(freeDevices(), 16u) << "a plan holds nothing";

  auto tooMuch = engine_->blocking().composeTogether(alice_, {want("a", 8), want("b", 8), want("c", 1)});
  ASSERT_FALSE(tooMuch);
  EXPECT_EQ(tooMuch.error().code, Code::kResourceExhausted);
  EXPECT_NE(tooMuch.error().message.find("system 'c'"), std::string::npos) << tooMuch.error().message;
  EXPECT_EQ(freeDevices(), 16u);
  EXPECT_TRUE(engine_->reads().listSystems()->empty()) << "refused whole: nothing composed";

  auto twice = engine_->blocking().composeTogether(alice_, {want("a", 1), want("a", 1)});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, Code::kInvalidArgument);
  ComposeRequest share = want("s", 0);
  share.placement.gpuShareMilli = 250;
  EXPECT_EQ(engine_->blocking().reserve(alice_, {share}, 60s).error().code, Code::kInvalidArgument);
  EXPECT_EQ(engine_->blocking().reserve(alice_, {want("z", 1)}, 0s).error().code, Code::kInvalidArgument);

  auto ops = engine_->blocking().composeTogether(alice_, {want("a", 8), want("b", 4), want("c", 4)});
  ASSERT_TRUE(ops) << ops.error().message;
  ASSERT_EQ(ops->size(), 3u);
  for (const auto& op : *ops) EXPECT_EQ(run(op).state, OperationState::kSucceeded);
  EXPECT_EQ(freeDevices(), 0u);
  EXPECT_EQ(fabricBindings().size(), 16u);
}

TEST_F(EngineReservationsTest, ATenantsQuotaCountsEverySystemOfTheManifest) {
  quotas_["team-a"] = TenantQuota{.maxGpus = 4, .maxSystems = 2};
  start();
  const Caller tenant{"carol", Role::kTenant, "team-a"};
  EXPECT_EQ(engine_->blocking().reserve(tenant, {forTenant("a", 1), forTenant("b", 1), forTenant("c", 1)}, 60s).error().code, Code::kResourceExhausted);
  EXPECT_EQ(engine_->blocking().composeTogether(tenant, {forTenant("a", 4), forTenant("b", 1)}).error().code, Code::kResourceExhausted);
  EXPECT_EQ(freeDevices(), 16u);
  auto ops = engine_->blocking().composeTogether(tenant, {forTenant("a", 2), forTenant("b", 2)});
  ASSERT_TRUE(ops) << ops.error().message;
  for (const auto& op : *ops) run(op);
}

// Found by the deterministic simulation (thirty-fifth session): a viewer's manifest was placed before its caller was
// asked about, so a pool too full for it answered RESOURCE_EXHAUSTED, telling a caller who may compose nothing how
// full the pool is. Who may compose is asked first, as every other change does.
TEST_F(EngineReservationsTest, AManifestOfACallerWhoMayNotComposeIsRefusedAsSuchWhateverThePoolHolds) {
  start();
  const Caller viewer{"watcher", Role::kViewer, {}};
  const Caller otherTenant{"dave", Role::kTenant, "team-b"};
  for (const auto& [caller, size] : std::vector<std::pair<Caller, int>>{{viewer, 1}, {viewer, 16}, {otherTenant, 16}}) {
    auto refused = engine_->blocking().composeTogether(caller, {forTenant("a", size), forTenant("b", size)});
    ASSERT_FALSE(refused) << caller.identity;
    EXPECT_EQ(refused.error().code, Code::kPermissionDenied) << caller.identity << " with " << size << " GPUs each: " << refused.error().message;
  }
  EXPECT_EQ(freeDevices(), 16u);
}

// Found by the deterministic simulation (thirty-fifth session, seed 18, once its clients reserved): a tenant held a
// reservation's GPUs and composed past its quota beside them. A reservation counts towards its tenant's quota for
// every change, as if composed, and once, when it is composed itself.
TEST_F(EngineReservationsTest, AReservationsGpusCountTowardsItsTenantsQuotaForEveryCompose) {
  quotas_["team-a"] = TenantQuota{.maxGpus = 4};
  start();
  const Caller tenant{"carol", Role::kTenant, "team-a"};
  auto held = engine_->blocking().reserve(tenant, {forTenant("a", 3)}, 60s);
  ASSERT_TRUE(held) << held.error().message;
  auto over = engine_->blocking().compose(tenant, forTenant("b", 2));
  ASSERT_FALSE(over) << "3 reserved + 2 would exceed 4";
  EXPECT_EQ(over.error().code, Code::kResourceExhausted);
  EXPECT_NE(over.error().message.find("it holds 3"), std::string::npos) << over.error().message;
  EXPECT_EQ(run(engine_->blocking().compose(tenant, forTenant("b", 1))).state, OperationState::kSucceeded);
  auto ops = engine_->blocking().composeReserved(tenant, held->id);
  ASSERT_TRUE(ops) << "counted twice while it is composed: " << ops.error().message;
  for (const auto& op : *ops) EXPECT_EQ(run(op).state, OperationState::kSucceeded);
  EXPECT_EQ(freeDevices(), 12u);
}

TEST_F(EngineReservationsTest, ADeviceQuarantinedWhileHeldStopsTheApplyAndStaysQuarantined) {
  start();
  auto reserved = engine_->blocking().reserve(alice_, {want("train", 2)}, 300s);
  ASSERT_TRUE(reserved);
  const DeviceId taken = reserved->systems[0].placement.devices[0].deviceId;
  // Someone binds a held device behind yardd's back; reconcile quarantines it.
  auto topology = *fabric_->discover();
  PortId foreignPort;
  for (const auto& h : topology.hosts)
    if (h.id != reserved->systems[0].placement.hostId) foreignPort = h.upstreamPorts[0].portId;
  const std::vector<Binding> foreign{{taken, foreignPort}};
  ASSERT_TRUE(fabric_->bindAll(foreign));
  ASSERT_TRUE(engine_->reconcile());
  ASSERT_EQ(engine_->reads().getDevice(taken)->assignment.allocation, DeviceAllocation::kQuarantined);

  auto applied = engine_->blocking().composeReserved(alice_, reserved->id);
  ASSERT_FALSE(applied);
  EXPECT_EQ(applied.error().code, Code::kFailedPrecondition);
  EXPECT_NE(applied.error().message.find(taken), std::string::npos) << applied.error().message;
  EXPECT_TRUE(engine_->reads().listSystems()->empty()) << "nothing of the reservation was composed";
  ASSERT_EQ(engine_->blocking().listReservations()->size(), 1u) << "the reservation is kept for its owner to release";
  ASSERT_TRUE(engine_->blocking().releaseReservation(alice_, reserved->id));
  EXPECT_EQ(engine_->reads().getDevice(taken)->assignment.allocation, DeviceAllocation::kQuarantined) << "letting go never frees a quarantined device";
}

TEST_F(EngineReservationsTest, ATenantsReservationsCountTowardsItsQuota) {
  quotas_["team-a"] = TenantQuota{.maxGpus = 4, .maxSystems = 2};
  start();
  const Caller tenant{"carol", Role::kTenant, "team-a"};
  ASSERT_TRUE(engine_->blocking().reserve(tenant, {forTenant("a", 3)}, 60s));
  EXPECT_EQ(engine_->blocking().reserve(tenant, {forTenant("b", 2)}, 60s).error().code, Code::kResourceExhausted) << "3 held + 2 > 4 GPUs";
  ASSERT_TRUE(engine_->blocking().reserve(tenant, {forTenant("b", 1)}, 60s));
  EXPECT_EQ(engine_->blocking().reserve(tenant, {forTenant("c", 1)}, 60s).error().code, Code::kResourceExhausted) << "2 systems held already";
}

TEST_F(EngineReservationsTest, ARestartDropsReservations) {
  start();
  ASSERT_TRUE(engine_->blocking().reserve(alice_, {want("train", 8)}, 300s));
  start();
  EXPECT_TRUE(engine_->blocking().listReservations()->empty());
  EXPECT_EQ(freeDevices(), 16u);
  compose("train", 8);
}

}  // namespace
}  // namespace switchyard
