// Roles, tenants, quotas and the audit trail, as the engine enforces and records them (issue 24).
#include <gtest/gtest.h>

#include <set>

#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

const Caller kAdmin{"root", Role::kAdmin, {}};
const Caller kOperator{"ops", Role::kOperator, {}};
const Caller kViewer{"watcher", Role::kViewer, {}};
const Caller kAlice{"alice", Role::kTenant, "team-a"};
const Caller kBob{"bob", Role::kTenant, "team-b"};

ComposeRequest request(const std::string& name, int gpus, const std::string& tenant) {
  ComposeRequest r{name, {}, {}};
  r.placement.gpuCount = gpus;
  r.placement.tenant = tenant;
  return r;
}

class EngineAccessTest : public EngineTest {
 protected:
  std::vector<AuditRecord> audit(AuditQuery q = {}) {
    auto records = engine_->history().listAudit(q);
    EXPECT_TRUE(records) << records.error().message;
    return records ? *records : std::vector<AuditRecord>{};
  }
};

TEST_F(EngineAccessTest, HostileStringsAndSizesAreRefusedAtAcceptanceAndForeignNamesStayUnnamed) {
  start();
  auto refused = [&](ComposeRequest r, const std::string& says) {
    auto op = engine_->blocking().compose(kAdmin, r);
    ASSERT_FALSE(op) << r.name;
    EXPECT_EQ(op.error().code, Code::kInvalidArgument);
    EXPECT_NE(op.error().message.find(says), std::string::npos) << op.error().message;
  };
  ComposeRequest many = request("many", 1, "team-a");
  for (int i = 0; i < 65; ++i) many.labels["k" + std::to_string(i)] = "v";
  refused(many, "at most 64");
  ComposeRequest badKey = request("bad-key", 1, "team-a");
  badKey.labels["has space"] = "v";
  refused(badKey, "label keys");
  ComposeRequest badValue = request("bad-value", 1, "team-a");
  badValue.labels["k"] = "\x1b[2J";
  refused(badValue, "printable");
  ComposeRequest huge = request("huge", 1, "team-a");
  huge.labels["k"] = std::string(3'500'000, 'x');
  refused(huge, "at most 256");
  refused(request("nul-tenant", 1, std::string("team\0b", 6)), "tenant");
  ComposeRequest longKey = request("long-key", 1, "team-a");
  longKey.requestId = std::string(200, 'r');
  refused(longKey, "request id");
  // A name another tenant holds is "taken", without that system's id.
  run(engine_->blocking().compose(kAlice, request("shared-name", 1, "team-a")));
  auto clash = engine_->blocking().compose(kBob, request("shared-name", 1, "team-b"));
  ASSERT_FALSE(clash);
  EXPECT_EQ(clash.error().code, Code::kAlreadyExists);
  EXPECT_EQ(clash.error().message.find("sys-"), std::string::npos) << clash.error().message;
}

// Every event an operation causes (its devices bound, online, unbound, released, quarantined; its system
// composed and decomposed) carries the operation's tenant: another tenant never receives it.
TEST_F(EngineAccessTest, EveryEventOfATenantsOperationCarriesThatTenant) {
  start();
  const auto first = engine_->history().listEvents(0, 10'000)->size();
  Operation composed = run(engine_->blocking().compose(kAlice, request("secret-train", 3, "team-a")));
  ASSERT_EQ(composed.state, OperationState::kSucceeded);
  const System system = *engine_->reads().getSystem("secret-train");
  // A drift on one of its devices (the switch lost the binding) is the tenant's too.
  ASSERT_TRUE(fabric_->unbind(system.bindings[0].deviceId, system.bindings[0].upstreamPortId));
  ASSERT_TRUE(engine_->reconcile());
  run(engine_->blocking().decompose(kAlice, "secret-train"));
  const auto events = *engine_->history().listEvents(first, 10'000);
  ASSERT_FALSE(events.empty());
  std::set<std::string> types;
  for (const auto& e : events) {
    types.insert(e.type);
    EXPECT_EQ(e.tenant, "team-a") << e.type << " " << e.subject << ": " << e.message;
    EXPECT_FALSE(maySee(kBob, e.tenant)) << e.type;
  }
  for (const char* type : {"operation.accepted", "device.bound", "system.composed", "drift.missing-binding", "system.decomposed"})
    EXPECT_TRUE(types.contains(type)) << type;
}

TEST_F(EngineAccessTest, AViewerChangesNothingAndATenantOnlyItsOwnSystems) {
  start();
  auto refused = engine_->blocking().compose(kViewer, request("look", 1, "team-a"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kPermissionDenied);
  EXPECT_NE(refused.error().message.find("viewer"), std::string::npos) << refused.error().message;

  auto wrongTenant = engine_->blocking().compose(kAlice, request("sneaky", 1, "team-b"));
  ASSERT_FALSE(wrongTenant);
  EXPECT_EQ(wrongTenant.error().code, Code::kPermissionDenied);
  EXPECT_NE(wrongTenant.error().message.find("acts for tenant 'team-a'"), std::string::npos) << wrongTenant.error().message;

  const Operation a = run(engine_->blocking().compose(kAlice, request("a-train", 2, "team-a")));
  ASSERT_EQ(a.state, OperationState::kSucceeded);
  EXPECT_EQ(a.tenant, "team-a");
  const auto before = fabricBindings();

  // Bob cannot see Alice's system, so to him it does not exist: nothing changes.
  for (auto r : {engine_->blocking().decompose(kBob, "a-train"), engine_->blocking().detach(kBob, DetachRequest{"a-train", {a.steps[1].bindings[0].deviceId}, {}, {}}),
                 engine_->blocking().attach(kBob, AttachRequest{"a-train", PlacementRequest{.gpuCount = 1}})}) {
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::kNotFound) << r.error().message;
  }
  auto viewerDecompose = engine_->blocking().decompose(kViewer, "a-train");
  ASSERT_FALSE(viewerDecompose);
  EXPECT_EQ(viewerDecompose.error().code, Code::kPermissionDenied) << "a viewer sees the system but may not change it";
  EXPECT_EQ(fabricBindings(), before);

  // An operator may change any tenant's system; Alice may change her own.
  EXPECT_EQ(run(engine_->blocking().attach(kOperator, AttachRequest{"a-train", PlacementRequest{.gpuCount = 1}})).state, OperationState::kSucceeded);
  EXPECT_EQ(run(engine_->blocking().decompose(kAlice, "a-train")).state, OperationState::kSucceeded);
}

TEST_F(EngineAccessTest, QuotasCountSystemsAndWholeGpusIncludingReservations) {
  quotas_["team-a"] = TenantQuota{.maxGpus = 4, .maxSystems = 2};
  start();
  ASSERT_EQ(run(engine_->blocking().compose(kAlice, request("a1", 3, "team-a"))).state, OperationState::kSucceeded);
  auto tooMany = engine_->blocking().compose(kAlice, request("a2", 2, "team-a"));
  ASSERT_FALSE(tooMany);
  EXPECT_EQ(tooMany.error().code, Code::kResourceExhausted);
  EXPECT_NE(tooMany.error().message.find("may hold 4 GPU(s); it holds 3 and this asks for 2 more"), std::string::npos)
      << tooMany.error().message;
  auto tooManyAttached = engine_->blocking().attach(kOperator, AttachRequest{"a1", PlacementRequest{.gpuCount = 2}});
  ASSERT_FALSE(tooManyAttached) << "the quota is the tenant's, whoever asks";
  EXPECT_EQ(tooManyAttached.error().code, Code::kResourceExhausted);
  ASSERT_EQ(run(engine_->blocking().compose(kAlice, request("a2", 1, "team-a"))).state, OperationState::kSucceeded);
  auto thirdSystem = engine_->blocking().compose(kAdmin, request("a3", 0, "team-a"));
  ASSERT_FALSE(thirdSystem);
  EXPECT_EQ(thirdSystem.error().code, Code::kResourceExhausted);
  EXPECT_NE(thirdSystem.error().message.find("quota of 2 system(s)"), std::string::npos) << thirdSystem.error().message;
  // Another tenant has no quota; freeing GPUs makes room again.
  EXPECT_EQ(run(engine_->blocking().compose(kBob, request("b1", 4, "team-b"))).state, OperationState::kSucceeded);
  ASSERT_EQ(run(engine_->blocking().decompose(kAlice, "a2")).state, OperationState::kSucceeded);
  EXPECT_EQ(run(engine_->blocking().compose(kAlice, request("a2", 1, "team-a"))).state, OperationState::kSucceeded);

  // Concurrent requests are accepted one at a time on the control thread, reservations counting: of two
  // composes that would each fit alone, only one gets in.
  ASSERT_EQ(run(engine_->blocking().decompose(kAlice, "a2")).state, OperationState::kSucceeded);
  ASSERT_EQ(run(engine_->blocking().decompose(kAlice, "a1")).state, OperationState::kSucceeded);
  auto first = engine_->blocking().compose(kAlice, request("c1", 3, "team-a"));
  auto second = engine_->blocking().compose(kAlice, request("c2", 3, "team-a"));
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_FALSE(second) << "the first compose's reserved GPUs count before it is done";
  EXPECT_EQ(second.error().code, Code::kResourceExhausted);
  run(std::move(first));
}

// Found by the deterministic simulation (seed 2988): a system whose devices a failed undo quarantined still
// holds them, and they count towards its tenant's quota.
TEST_F(EngineAccessTest, QuarantinedDevicesOfASystemStillCountTowardsItsQuota) {
  quotas_["team-a"] = TenantQuota{.maxGpus = 3};
  start();
  ASSERT_EQ(run(engine_->blocking().compose(kAlice, request("a1", 2, "team-a"))).state, OperationState::kSucceeded);
  // The unbind times out three times (applied, unknown outcome), then re-binding it fails for good.
  fabric_->setFaults(FaultPlan{.failProbability = 1.0, .timeoutNext = 3});
  const Operation down = run(engine_->blocking().decompose(kAlice, "a1"));
  ASSERT_EQ(down.state, OperationState::kFailed);
  ASSERT_NE(down.error.find("quarantined"), std::string::npos) << down.error;
  fabric_->setFaults({});
  auto a1 = engine_->reads().getSystem("a1");
  ASSERT_TRUE(a1);
  ASSERT_EQ(a1->bindings.size(), 2u) << "the system keeps its devices";
  auto over = engine_->blocking().compose(kAlice, request("a2", 2, "team-a"));
  ASSERT_FALSE(over) << "2 quarantined + 2 new would exceed 3";
  EXPECT_EQ(over.error().code, Code::kResourceExhausted);
  EXPECT_NE(over.error().message.find("it holds 2"), std::string::npos) << over.error().message;
}

TEST_F(EngineAccessTest, EveryRequestIsAuditedWithWhoWhatAndHowItEnded) {
  quotas_["team-a"] = TenantQuota{.maxGpus = 2};
  start();
  const Operation ok = run(engine_->blocking().compose(kAlice, request("a1", 2, "team-a")));
  ASSERT_EQ(ok.state, OperationState::kSucceeded);
  ASSERT_FALSE(engine_->blocking().compose(kAlice, request("a2", 1, "team-a")));  // over quota
  ASSERT_FALSE(engine_->blocking().decompose(kBob, "a1"));                         // not his
  ASSERT_FALSE(engine_->blocking().compose(kViewer, request("v", 1, "team-b")));   // a viewer
  fabric_->setFaults(FaultPlan{.failNext = 1});
  const Operation failed = run(engine_->blocking().compose(kBob, request("b1", 1, "team-b")));
  ASSERT_EQ(failed.state, OperationState::kFailed);

  const auto all = audit();
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].sequence, 5u) << "newest first";
  EXPECT_EQ(all[4].caller, kAlice);
  EXPECT_EQ(all[4].action, "compose");
  EXPECT_EQ(all[4].target, "a1");
  EXPECT_EQ(all[4].tenant, "team-a");
  EXPECT_EQ(all[4].result, "accepted");
  EXPECT_EQ(all[4].operationId, ok.id);
  EXPECT_EQ(all[4].outcome, "succeeded");
  EXPECT_NE(all[4].finishedAt, 0);
  EXPECT_EQ(all[3].result, "RESOURCE_EXHAUSTED");
  EXPECT_TRUE(all[3].operationId.empty());
  EXPECT_EQ(all[2].action, "decompose");
  EXPECT_EQ(all[2].result, "NOT_FOUND");
  EXPECT_EQ(all[2].tenant, "") << "bob may not see a1, so the record does not name its tenant for him";
  EXPECT_EQ(all[1].result, "PERMISSION_DENIED");
  EXPECT_EQ(all[0].operationId, failed.id);
  EXPECT_EQ(all[0].outcome, "failed");

  // Filters: tenant (its systems and its identities' requests), identity, time, paging.
  EXPECT_EQ(audit({.tenant = "team-a"}).size(), 2u);
  EXPECT_EQ(audit({.tenant = "team-b"}).size(), 3u) << "bob's refused decompose and b1's compose, and the viewer's team-b compose";
  EXPECT_EQ(audit({.identity = "watcher"}).size(), 1u);
  EXPECT_EQ(audit({.since = clock_.now() + 1}).size(), 0u);
  EXPECT_EQ(audit({.until = clock_.now() + 1}).size(), 5u);
  const auto page = audit({.beforeSequence = 3, .limit = 10});
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0].sequence, 2u);

  // Durable: the trail survives a restart, and new records continue its numbering.
  start();
  EXPECT_EQ(audit().size(), 5u);
  ASSERT_FALSE(engine_->blocking().compose(kViewer, request("v2", 1, "team-b")));
  EXPECT_EQ(audit().front().sequence, 6u);
}

TEST_F(EngineAccessTest, EventsCarryTheTenantOfTheirSystem) {
  start();
  const Operation a = run(engine_->blocking().compose(kAlice, request("a1", 1, "team-a")));
  int aboutIt = 0;
  const auto events = engine_->history().listEvents(0, 1000);  // kept: the loop refers into it
  ASSERT_TRUE(events);
  for (const auto& e : *events) {
    if (e.subject == a.id || e.subject == a.systemId) {
      ++aboutIt;
      EXPECT_EQ(e.tenant, "team-a") << e.type;
    }
    if (e.type == "inventory.discovered") EXPECT_EQ(e.tenant, "") << "the pool's own events belong to no tenant";
  }
  EXPECT_GE(aboutIt, 2) << "at least accepted and succeeded";
}

}  // namespace
}  // namespace switchyard
