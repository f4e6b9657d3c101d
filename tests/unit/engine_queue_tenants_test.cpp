// The queue across tenants (issue 58): what one tenant may learn of another's queued and preempting work, and
// the priority classes a tenant may use. The queue's order, leases and preemption themselves:
// engine_queue_test.cpp.
#include <fmt/format.h>

#include "tests/unit/engine_queue_fixture.h"

namespace switchyard {
namespace {

// Issue "No request can stop yardd", N4: a refusal because of the queue's head named the head (its name and
// operation id) to whoever was refused, another tenant included, in the error, the audit trail and events.
TEST_F(EngineQueueTest, ARefusalForTheHeadNamesItOnlyToItsOwnTenant) {
  start();
  auto leased = want("b", 8);
  leased.lease = 1h;
  composeWith(leased);
  compose("a", 4);
  auto secret = want("team-a-secret-project", 12, true);
  secret.placement.tenant = "team-a";
  const Operation head = enqueue(secret, Caller{"alice", Role::kTenant, "team-a"});

  auto other = want("small", 4);
  other.placement.tenant = "team-b";
  auto refused = engine_->blocking().compose(Caller{"bob", Role::kTenant, "team-b"}, other);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kResourceExhausted);
  EXPECT_EQ(refused.error().message.find("team-a-secret-project"), std::string::npos) << refused.error().message;
  EXPECT_EQ(refused.error().message.find(head.id), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("a request queued earlier"), std::string::npos) << refused.error().message;
  AuditQuery query;
  query.tenant = "team-b";
  const auto audit = engine_->history().listAudit(query);  // held: a range-for over *temporary would dangle
  ASSERT_TRUE(audit);
  EXPECT_FALSE(audit->empty()) << "bob's refusal is in team-b's audit trail";
  for (const auto& record : *audit) EXPECT_EQ(record.message.find("team-a-secret-project"), std::string::npos) << record.message;
  const auto events = engine_->history().recentEvents(100);
  ASSERT_TRUE(events);
  for (const auto& event : *events)
    if (event.tenant == "team-b") EXPECT_EQ(event.message.find("team-a-secret-project"), std::string::npos) << event.message;

  auto own = want("own", 4);
  own.placement.tenant = "team-a";
  auto ownRefused = engine_->blocking().compose(Caller{"alice", Role::kTenant, "team-a"}, own);
  ASSERT_FALSE(ownRefused);
  EXPECT_NE(ownRefused.error().message.find("team-a-secret-project"), std::string::npos) << "its own tenant is told which: "
                                                                                         << ownRefused.error().message;
}

// Issue 58, N4's kin: a preemption across tenants named the preempting request (name, operation id) in the
// victim tenant's events, and the victims' system ids in the head's waiting_for. Each tenant hears of its own.
TEST_F(EngineQueueTest, APreemptionAcrossTenantsNamesEachSideOnlyToItsOwnTenant) {
  start();
  auto spot = want("team-b-spot", 8);
  spot.priorityClass = "spot";
  spot.placement.tenant = "team-b";
  const Operation victim = composeWith(spot);
  compose("batch-job", 8);
  const Operation urgent = enqueue(queued("team-a-urgent", 8, "production", "team-a"));
  const auto queue = *engine_->reads().listQueue();
  ASSERT_EQ(queue.front().operationId, urgent.id);
  EXPECT_NE(queue.front().waitingFor.find("preempting 1 system of other tenants"), std::string::npos) << queue.front().waitingFor;
  EXPECT_EQ(queue.front().waitingFor.find(victim.systemId), std::string::npos) << queue.front().waitingFor;
  clock_.advance(31s);
  auto started = engine_->blocking().expireDeadlines();
  ASSERT_TRUE(started);
  int victimsEvents = 0;
  const auto events = engine_->history().recentEvents(200);  // held: a range-for over *temporary would dangle
  ASSERT_TRUE(events);
  for (const auto& e : *events) {
    if (e.tenant != "team-b") continue;
    if (e.type.starts_with("system.preempt")) ++victimsEvents;
    EXPECT_EQ(e.message.find("team-a-urgent"), std::string::npos) << e.type << ": " << e.message;
    EXPECT_EQ(e.message.find(urgent.id), std::string::npos) << e.type << ": " << e.message;
  }
  EXPECT_EQ(victimsEvents, 2) << "system.preempting and system.preempted, both team-b's";
}

// N11: a tenant limited to some priority classes (the identities file's priority_classes) may not name
// another, and is told which it may.
TEST_F(EngineQueueTest, ATenantLimitedToSomeClassesMayNotNameAnother) {
  configure_ = [](EngineOptions& o) { o.quotas["team-a"].priorityClasses = std::vector<std::string>{"spot"}; };
  start();
  auto production = queued("urgent", 2, "production", "team-a");
  auto refused = engine_->blocking().compose(Caller{"alice", Role::kTenant, "team-a"}, production);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kPermissionDenied);
  EXPECT_EQ(refused.error().message, "tenant 'team-a' may compose in priority class spot only, not 'production'");
  auto plain = want("plain", 2);
  plain.placement.tenant = "team-a";
  auto defaulted = engine_->blocking().compose(Caller{"alice", Role::kTenant, "team-a"}, plain);
  ASSERT_FALSE(defaulted);
  EXPECT_NE(defaulted.error().message.find("(the default): name one with --priority"), std::string::npos) << defaulted.error().message;
  auto spot = want("cheap", 2);
  spot.placement.tenant = "team-a";
  spot.priorityClass = "spot";
  EXPECT_EQ(composeWith(spot).state, OperationState::kSucceeded);
  EXPECT_EQ(compose("other-tenant", 2).state, OperationState::kSucceeded) << "other tenants are not limited";
}

TEST_F(EngineQueueTest, ATenantCannotSeeOrCancelAnotherTenantsQueuedRequest) {
  start();
  compose("a", 8);
  compose("b", 8);
  const Caller alice{"alice", Role::kTenant, "team-a"};
  const Caller bob{"bob", Role::kTenant, "team-b"};
  const Operation mine = enqueue(queued("alices", 8, "batch", "team-a"), alice);
  for (const std::string& id : {mine.id, std::string("alices")}) {
    auto r = engine_->blocking().cancelQueued(bob, id);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, Code::kNotFound) << "not even told it exists";
  }
  auto viewer = engine_->blocking().cancelQueued({"val", Role::kViewer, {}}, mine.id);
  ASSERT_FALSE(viewer);
  EXPECT_EQ(viewer.error().code, Code::kPermissionDenied);
  EXPECT_EQ(engine_->reads().listQueue()->size(), 1u);
  ASSERT_TRUE(engine_->blocking().cancelQueued(alice, mine.id));
}

// Admission profiles (issue 59, ADR 0032). The pool full (team-a's "a" and the default tenant's "x", 8 GPUs each);
// team-a queues a batch request, then team-b, holding nothing, a spot one.
class EngineAdmissionProfileTest : public EngineQueueTest {
 protected:
  void startWith(std::string_view profile, std::vector<std::string> queueSort = {}) {
    auto built = admission::buildProfile(profile, queueSort);
    ASSERT_TRUE(built) << built.error().message;
    configure_ = [p = *built](EngineOptions& o) { o.admission = p; };
    start();
    auto a = want("a", 8);
    a.placement.tenant = "team-a";
    composeWith(a);
    compose("x", 8);
    enqueue(queued("a-batch", 8, "batch", "team-a"));
    clock_.advance(1s);
    enqueue(queued("b-spot", 8, "spot", "team-b"));
  }
};

TEST_F(EngineAdmissionProfileTest, TheDefaultProfileOrdersTheHigherClassFirstAcrossTenants) {
  startWith("switchyard-v1");
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"a-batch", "b-spot"}));
  run(engine_->blocking().decompose(Caller::local(), "x"));
  EXPECT_NE(engine_->reads().getSystem("a-batch")->state, SystemState::kQueued);
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"b-spot"}));
}

TEST_F(EngineAdmissionProfileTest, ShareFirstPutsATenantUnderItsShareBeforeAHigherClassOfOneAbove) {
  // team-a holds 8, the default tenant 8, team-b nothing: the line is 16 GPUs over 3 tenants; team-b is under it.
  startWith("share-first");
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"b-spot", "a-batch"}));
  run(engine_->blocking().decompose(Caller::local(), "x"));
  EXPECT_NE(engine_->reads().getSystem("b-spot")->state, SystemState::kQueued) << "admitted ahead of a higher class of a tenant above its share";
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"a-batch"}));
}

TEST_F(EngineAdmissionProfileTest, AQueueSortOfAgeAloneIsFirstComeFirstServed) {
  quotas_["team-b"].share = 100.0;  // fair share would favour team-b, and spot is the lower class: age alone decides
  startWith("switchyard-v1", {"age"});
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"a-batch", "b-spot"}));
  clock_.advance(1s);
  enqueue(queued("production", 8, "production", "team-b"));
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"a-batch", "b-spot", "production"}));
}

TEST_F(EngineAdmissionProfileTest, ShareFirstTriesSixteenRequestsOfATenantBesideAWaitingHeadAPass) {
  startWith("share-first");  // b-spot (team-b, under its share) is the head, and waits
  for (int i = 0; i < 18; ++i) enqueue(queued(fmt::format("a-small-{:02}", i), 1, "batch", "team-a"));
  const auto queue = *engine_->reads().listQueue();
  ASSERT_EQ(queue.size(), 20u);
  EXPECT_EQ(queue.front().name, "b-spot");
  int capped = 0;
  for (const auto& e : queue)
    if (e.waitingFor.find("had 16 requests tried beside the queue's head") != std::string::npos) ++capped;
  EXPECT_EQ(capped, 3) << "a-batch and 15 small ones were tried; three small ones wait for the next pass";
}

// team-a holds 8 GPUs and asks for 8 more in the production class; team-b's spot system holds the other 8. Why the
// request waits, under `profile`.
class EngineSharePreemptionTest : public EngineQueueTest {
 protected:
  void startWith(std::string_view profile) {
    auto built = admission::buildProfile(profile);
    ASSERT_TRUE(built);
    configure_ = [p = *built](EngineOptions& o) { o.admission = p; };
    start();
    auto a = want("a", 8);
    a.placement.tenant = "team-a";
    composeWith(a);
    auto spot = want("b-spot", 8);
    spot.priorityClass = "spot";
    spot.placement.tenant = "team-b";
    composeWith(spot);
  }
  std::string urgentWaitsFor(std::string_view profile) {
    startWith(profile);
    enqueue(queued("a-urgent", 8, "production", "team-a"));
    const auto queue = *engine_->reads().listQueue();
    EXPECT_EQ(queue.size(), 1u);
    return queue.empty() ? std::string() : queue.front().waitingFor;
  }
  // What `yardctl plan --gpus 8 --priority production` for team-a says preemption would take.
  std::size_t planWouldPreempt(std::string_view profile) {
    startWith(profile);
    PlacementRequest urgent;
    urgent.gpuCount = 8;
    urgent.tenant = "team-a";
    auto plan = engine_->blocking().plan(urgent, "production");
    EXPECT_TRUE(plan) << plan.error().message;
    if (!plan) return 0;
    EXPECT_FALSE(plan->decision.placement);
    return plan->wouldPreempt.size();
  }
};

TEST_F(EngineSharePreemptionTest, TheDefaultProfileTakesFromALowerClassWhateverTheTenantsShares) {
  const std::string why = urgentWaitsFor("switchyard-v1");
  EXPECT_NE(why.find("preempting 1 system of other tenants"), std::string::npos) << why;
}

TEST_F(EngineSharePreemptionTest, ShareFirstDoesNotTakeFromATenantThatWouldEndBelowThePreemptor) {
  // team-a with 16 GPUs would be charged more than team-b with none.
  const std::string why = urgentWaitsFor("share-first");
  EXPECT_EQ(why.find("preempting"), std::string::npos) << why;
  EXPECT_TRUE(engine_->reads().getSystem("b-spot")) << "team-b's system stays";
}

// A dry run (yardctl plan) takes the victims the pass would: the profile's rule.
TEST_F(EngineSharePreemptionTest, APlanUnderTheDefaultProfileNamesTheSpotVictim) { EXPECT_EQ(planWouldPreempt("switchyard-v1"), 1u); }

TEST_F(EngineSharePreemptionTest, APlanUnderShareFirstNamesNoVictimThePassWouldSpare) { EXPECT_EQ(planWouldPreempt("share-first"), 0u); }

}  // namespace
}  // namespace switchyard
