// Preemption (engine_preemption.cpp, requeue.h; ADR 0017): a queued request of a preempting class that cannot fit
// takes back the fewest, youngest systems of lower preemptible classes after their grace period, within each tenant's
// disruption budget; a victim whose host will not let go stays whole; a class that requeues has its victims queued
// again once decomposed; `yardctl plan` names the victims first and changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "agent/simulated_hosts.h"
#include "fabric/topology_generator.h"
#include "tests/support/gated_driver.h"
#include "tests/unit/engine_queue_fixture.h"

namespace switchyard {
namespace {
TEST_F(EngineQueueTest, AProductionRequestPreemptsTheSmallestSpotSystemAfterItsGrace) {
  start();
  auto spot = want("spot-job", 8);
  spot.priorityClass = "spot";
  composeWith(spot);
  compose("batch-job", 8);  // batch: not preemptible
  EXPECT_EQ(engine_->reads().getSystem("spot-job")->priorityClass, "spot");

  const Operation spotWaits = enqueue(queued("spot-later", 8, "spot"));  // spot does not preempt: it waits
  auto types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "system.preempting"), 0);

  const Operation urgent = enqueue(queued("urgent", 8, "production"));
  types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "system.preempting"), 1) << "one victim is enough";
  const auto queue = *engine_->reads().listQueue();
  ASSERT_EQ(queue.front().operationId, urgent.id);
  EXPECT_NE(queue.front().waitingFor.find("preempting"), std::string::npos) << queue.front().waitingFor;

  clock_.advance(29s);
  EXPECT_TRUE(engine_->blocking().expireDeadlines()->empty()) << "the grace period is not over";
  clock_.advance(2s);
  auto started = engine_->blocking().expireDeadlines();
  ASSERT_TRUE(started);
  ASSERT_EQ(started->size(), 1u);
  EXPECT_EQ(started->front().requestedBy.identity, "yardd (preemption)");
  EXPECT_EQ(finished(started->front().id).state, OperationState::kSucceeded);
  EXPECT_EQ(finished(urgent.id).state, OperationState::kSucceeded) << "what the victim freed went to the request";
  EXPECT_FALSE(engine_->reads().getSystem("spot-job"));
  EXPECT_EQ(engine_->reads().getSystem("batch-job")->bindings.size(), 8u) << "batch is not preemptible";
  EXPECT_EQ(engine_->reads().listQueue()->size(), 1u);
  EXPECT_EQ(engine_->reads().listQueue()->front().operationId, spotWaits.id);
  types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "system.preempted"), types.end());
  EXPECT_EQ(std::find(types.begin(), types.end(), "system.requeued"), types.end()) << "spot does not requeue unless configured to";
}

// With a class that requeues (spot=0:preemptible:requeue), a preempted system is not lost: once its decompose
// succeeded it waits in the queue again, under its name and labels, in its class, asking for what it had, and it
// comes back when the GPUs free.
TEST_F(EngineQueueTest, APreemptedSystemOfARequeueingClassWaitsInTheQueueAgainAndComesBack) {
  configure_ = [](EngineOptions& o) { o.priorityClasses = requeueingSpot(); };
  start();
  auto spot = want("spot-job", 8);
  spot.priorityClass = "spot";
  spot.labels = {{"team", "vision"}};
  spot.lease = 2h;
  spot.placement.host = "host1";  // pinned, with a least memory: asked for again (System::asked)
  spot.placement.minMemoryGiB = 40;
  composeWith(spot);
  const SystemId before = engine_->reads().getSystem("spot-job")->id;
  compose("batch-job", 8);
  const Operation urgent = enqueue(queued("urgent", 8, "production"));
  clock_.advance(31s);
  auto started = engine_->blocking().expireDeadlines();
  ASSERT_TRUE(started);
  ASSERT_EQ(started->size(), 1u);
  ASSERT_TRUE(started->front().queued) << "the decompose carries what it is queued again as";
  EXPECT_EQ(finished(started->front().id).state, OperationState::kSucceeded);
  EXPECT_EQ(finished(urgent.id).state, OperationState::kSucceeded) << "the request that preempted it goes first";

  const auto again = engine_->reads().getSystem("spot-job");
  ASSERT_TRUE(again) << "queued again under its name";
  EXPECT_NE(again->id, before);
  EXPECT_EQ(again->state, SystemState::kQueued);
  EXPECT_EQ(again->labels, spot.labels);
  EXPECT_EQ(again->priorityClass, "spot");
  const auto queue = *engine_->reads().listQueue();
  ASSERT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue.front().name, "spot-job");
  EXPECT_EQ(queue.front().requestedBy, "yardd (preemption)");
  EXPECT_EQ(queue.front().request.gpuCount, 8);
  EXPECT_EQ(queue.front().request.leaseSeconds, 7200) << "a lease as long as the one it had";
  EXPECT_EQ(queue.front().request.host, "host1") << "pinned as its compose asked";
  EXPECT_EQ(queue.front().request.minMemoryGiB, 40);
  EXPECT_FALSE(queue.front().request.requeueAs) << "a compose carries no requeue";
  const auto events = *engine_->history().listEvents(0, 10'000);
  const auto requeued = std::find_if(events.begin(), events.end(), [](const Event& e) { return e.type == "system.requeued"; });
  ASSERT_NE(requeued, events.end());
  EXPECT_EQ(requeued->subject, before);
  EXPECT_NE(requeued->message.find(again->id), std::string::npos) << requeued->message;
  const auto audit = *engine_->history().listAudit({});
  EXPECT_TRUE(std::any_of(audit.begin(), audit.end(), [&](const AuditRecord& r) {
    return r.action == "compose" && r.target == "spot-job" && r.caller.identity == "yardd (preemption)" && r.operationId == queue.front().operationId;
  })) << "the audit trail says who queued it again";

  run(engine_->blocking().decompose(Caller::local(), "urgent"));
  EXPECT_EQ(finished(queue.front().operationId).state, OperationState::kSucceeded);
  EXPECT_EQ(engine_->reads().getSystem("spot-job")->state, SystemState::kComposed);
  EXPECT_EQ(engine_->reads().getSystem("spot-job")->bindings.size(), 8u) << "as much as it had";
  EXPECT_EQ(engine_->reads().getSystem("spot-job")->hostId, "host1");
}

// The requeue is written with the decompose's last step: a yardd stopped while the victim's unbind is in the switch
// resumes the decompose at its next start, and the system is queued again all the same.
TEST_F(EngineQueueTest, APreemptedSystemIsQueuedAgainWhenItsDecomposeEndsAfterARestart) {
  configure_ = [](EngineOptions& o) { o.priorityClasses = requeueingSpot(); };
  testing::GatedDriver gated(*fabric_);
  start(&gated);
  auto spot = want("spot-job", 8);
  spot.priorityClass = "spot";
  composeWith(spot);
  compose("batch-job", 8);
  const Operation urgent = enqueue(queued("urgent", 8, "production"));
  clock_.advance(31s);
  gated.closeBeforeUnbind(0);
  auto started = engine_->blocking().expireDeadlines();
  ASSERT_TRUE(started);
  ASSERT_EQ(started->size(), 1u);
  gated.waitUntilHeld();
  std::thread stopper([&] { engine_->stop(0s); });
  while (!engine_->halted()) std::this_thread::yield();
  gated.open();
  stopper.join();
  EXPECT_FALSE(engine_->reads().getSystem("spot-job")->state == SystemState::kQueued) << "not queued before its decompose ended";

  const RecoveryReport report = start();
  EXPECT_EQ(report.resumedOperations, 1u);
  EXPECT_EQ(engine_->blocking().getOperation(started->front().id)->state, OperationState::kSucceeded);
  EXPECT_EQ(finished(urgent.id).state, OperationState::kSucceeded);
  const auto again = engine_->reads().getSystem("spot-job");
  ASSERT_TRUE(again) << "queued again after the restart";
  EXPECT_EQ(again->state, SystemState::kQueued);
  ASSERT_EQ(engine_->reads().listQueue()->size(), 1u);
  EXPECT_EQ(engine_->reads().listQueue()->front().request.gpuCount, 8);
}

// yardctl plan --priority production: a request that does not fit names whom preemption would take back for
// it, and where it would go then; a dry run changes nothing and tells nobody.
TEST_F(EngineQueueTest, APlanWithAPreemptingClassNamesItsVictimsAndChangesNothing) {
  start();
  auto spot = want("spot-job", 8);
  spot.priorityClass = "spot";
  composeWith(spot);
  compose("batch-job", 8);
  PlacementRequest eight;
  eight.gpuCount = 8;

  const auto production = engine_->blocking().plan(eight, "production");
  ASSERT_TRUE(production) << production.error().message;
  EXPECT_FALSE(production->decision.placement);
  ASSERT_EQ(production->wouldPreempt.size(), 1u);
  EXPECT_EQ(production->wouldPreempt.front().name, "spot-job");
  EXPECT_EQ(production->wouldPreempt.front().priorityClass, "spot");
  EXPECT_EQ(production->wouldPreempt.front().gpus, 8);
  ASSERT_TRUE(production->afterPreemption);
  EXPECT_EQ(production->afterPreemption->hostId, engine_->reads().getSystem("spot-job")->hostId);
  const auto types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "system.preempting"), 0);
  EXPECT_EQ(engine_->reads().getSystem("spot-job")->bindings.size(), 8u);

  EXPECT_TRUE(engine_->blocking().plan(eight, "spot")->wouldPreempt.empty()) << "spot does not preempt";
  EXPECT_TRUE(engine_->blocking().plan(eight)->wouldPreempt.empty()) << "no class, no preemption";
  const auto unknown = engine_->blocking().plan(eight, "urgent");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kInvalidArgument);
}

TEST_F(EngineQueueTest, ATenantsDisruptionBudgetCapsTheGpusPreemptedFromItInADay) {
  quotas_["team-a"].maxPreemptedGpusPerDay = 4;
  start();
  for (const char* name : {"spot-a1", "spot-a2"}) {
    auto spot = want(name, 4);
    spot.priorityClass = "spot";
    spot.placement.tenant = "team-a";
    composeWith(spot);
  }
  compose("batch-job", 8);
  const Operation first = enqueue(queued("urgent-1", 4, "production"));
  auto types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "system.preempting"), 1) << "4 GPUs: within team-a's budget";
  clock_.advance(31s);
  auto started = engine_->blocking().expireDeadlines();
  ASSERT_TRUE(started);
  ASSERT_EQ(started->size(), 1u);
  EXPECT_EQ(finished(started->front().id).state, OperationState::kSucceeded);
  EXPECT_EQ(finished(first.id).state, OperationState::kSucceeded);

  const Operation second = enqueue(queued("urgent-2", 4, "production"));
  types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "system.preempting"), 1) << "team-a lost 4 GPUs today: its budget is spent";
  const auto left = engine_->reads().getSystem("spot-a1") ? engine_->reads().getSystem("spot-a1") : engine_->reads().getSystem("spot-a2");
  ASSERT_TRUE(left) << "one spot system is left";
  EXPECT_EQ(left->bindings.size(), 4u);
  auto still = engine_->waitOperation(second.id, 10ms);
  EXPECT_EQ(still->state, OperationState::kQueued) << "the request waits instead";

  // A day after the first preemption, the budget frees on the deadline tick itself: nothing else has to change.
  clock_.advance(24h);
  ASSERT_TRUE(engine_->blocking().expireDeadlines());
  types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "system.preempting"), 2) << "the waiting request preempts the other spot system now";
}

TEST_F(EngineQueueTest, AVictimWhoseHostWillNotLetGoStaysWholeAndTheRequestKeepsWaiting) {
  SimulatedHosts simulated(defaultTopology(), fabric_->router(), clock_);
  hosts_ = &simulated;
  start();
  auto spot = want("spot-job", 8);
  spot.priorityClass = "spot";
  composeWith(spot);
  compose("batch-job", 8);
  simulated.setDeviceFault(engine_->reads().getSystem("spot-job")->bindings.front().deviceId, SimulatedHostFault::kInUse);
  const Operation urgent = enqueue(queued("urgent", 8, "production"));
  clock_.advance(31s);
  auto started = engine_->blocking().expireDeadlines();
  ASSERT_TRUE(started);
  ASSERT_EQ(started->size(), 1u);
  EXPECT_EQ(finished(started->front().id).state, OperationState::kFailed) << "a GPU in use is never unbound";
  EXPECT_EQ(engine_->reads().getSystem("spot-job")->bindings.size(), 8u) << "the victim stays whole";
  EXPECT_EQ(engine_->reads().getSystem("spot-job")->state, SystemState::kComposed);
  auto still = engine_->waitOperation(urgent.id, 10ms);
  EXPECT_EQ(still->state, OperationState::kQueued) << "the request keeps waiting";
  const auto types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "preemption.failed"), types.end());
  EXPECT_TRUE(simulated.surpriseRemovals().empty());
}

}  // namespace
}  // namespace switchyard
