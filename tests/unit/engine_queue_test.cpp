// The queue and leases (engine_queue.cpp, engine_leases.cpp; ADR 0017): a compose that does not fit waits
// durably and is admitted in the same control step that frees capacity, in priority, fair-share and age
// order, without a later request taking what the head has been promised; leases end systems through the
// normal decompose path.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <future>

#include "agent/simulated_hosts.h"
#include "fabric/topology_generator.h"
#include "tests/unit/engine_queue_fixture.h"

namespace switchyard {
namespace {

// On a pool of sixteen hosts the packing core names eight per reason and counts the rest; the queue's short reason
// counts every host its answer covers, the counted ones included.
TEST_F(EngineQueueTest, AQueuedRequestsReasonCountsTheHostsTheAnswerDidNotName) {
  TopologyShape shape;
  shape.totalGpus = 64;  // 4 fabrics of 2 switches of 8 GPUs, 4 hosts each
  startFabric(generateTopology(shape));
  start();
  auto big = queued("big", 9);
  big.placement.peerToPeer = PeerToPeer::kRequired;  // no switch holds 9: every host is refused for one reason
  enqueue(big);
  const auto queue = *engine_->reads().listQueue();
  ASSERT_EQ(queue.size(), 1u);
  EXPECT_NE(queue[0].waitingFor.find("... and 13 more (`yardctl plan --explain` lists every host)"), std::string::npos) << queue[0].waitingFor;
}

TEST_F(EngineQueueTest, ARequestThatDoesNotFitWaitsAndIsAdmittedWhenADecomposeFreesCapacity) {
  start();
  compose("a", 8);
  compose("b", 8);
  auto refused = engine_->blocking().compose(Caller::local(), want("c", 8));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kResourceExhausted) << "without --queue, a request that does not fit is refused as before";

  const Operation waiting = enqueue(want("c", 8, true));
  EXPECT_TRUE(waiting.queued.has_value());
  EXPECT_TRUE(waiting.steps.empty());
  auto system = engine_->reads().getSystem("c");
  ASSERT_TRUE(system);
  EXPECT_EQ(system->state, SystemState::kQueued);
  EXPECT_TRUE(system->hostId.empty());
  const auto queue = *engine_->reads().listQueue();
  ASSERT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue[0].position, 1u);
  EXPECT_EQ(queue[0].operationId, waiting.id);
  EXPECT_NE(queue[0].waitingFor.find("8 GPU"), std::string::npos) << queue[0].waitingFor;
  auto stillQueued = engine_->waitOperation(waiting.id, 10ms);
  ASSERT_TRUE(stillQueued);
  EXPECT_EQ(stillQueued->state, OperationState::kQueued) << "a wait on a queued request times out with it still queued";
  auto name = engine_->blocking().compose(Caller::local(), want("c", 1));
  ASSERT_FALSE(name);
  EXPECT_EQ(name.error().code, Code::kAlreadyExists) << "a queued system holds its name";

  run(engine_->blocking().decompose(Caller::local(), "a"));
  const Operation admitted = finished(waiting.id);
  EXPECT_EQ(admitted.state, OperationState::kSucceeded) << admitted.error;
  EXPECT_NE(admitted.explanation.find("admitted from the queue"), std::string::npos) << admitted.explanation;
  EXPECT_EQ(engine_->reads().getSystem("c")->state, SystemState::kComposed);
  EXPECT_EQ(engine_->reads().getSystem("c")->bindings.size(), 8u);
  EXPECT_TRUE(engine_->reads().listQueue()->empty());
  const auto types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "queue.entered"), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), "queue.admitted"), types.end());
}

// Issue "No request can stop yardd", N2: a wait whose caller went away is released at once, not when the
// operation ends (a queued one may never end) or its timeout passes.
TEST_F(EngineQueueTest, ACancelledWaitIsAnsweredAndReleasedAtOnce) {
  start();
  compose("a", 8);
  compose("b", 8);
  const Operation waiting = enqueue(queued("later", 8));
  auto answered = std::make_shared<std::promise<Result<Operation>>>();
  auto cancel = engine_->waitOperation(waiting.id, std::chrono::hours(1), [answered](Result<Operation> op) { answered->set_value(std::move(op)); });
  auto future = answered->get_future();
  EXPECT_EQ(future.wait_for(100ms), std::future_status::timeout) << "still queued: the wait goes on";
  cancel();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready) << "a cancelled wait is answered at once";
  const auto op = future.get();
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code, Code::kAborted);
  EXPECT_EQ(op.error().message, fmt::format("the wait for {} was cancelled", waiting.id));
  cancel();  // twice, and after the answer: nothing happens
  // A wait answered before it is cancelled keeps its answer.
  auto second = std::make_shared<std::promise<Result<Operation>>>();
  auto late = engine_->waitOperation(waiting.id, 10ms, [second](Result<Operation> r) { second->set_value(std::move(r)); });
  auto secondFuture = second->get_future();
  ASSERT_EQ(secondFuture.wait_for(5s), std::future_status::ready);
  late();
  const auto timedOut = secondFuture.get();
  ASSERT_TRUE(timedOut) << timedOut.error().message;
  EXPECT_EQ(timedOut->state, OperationState::kQueued);
}

TEST_F(EngineQueueTest, AHigherPriorityClassGoesFirstWhateverItsAge) {
  start();
  compose("a", 8);
  compose("b", 8);
  enqueue(queued("old-batch", 8, "batch"));
  enqueue(queued("new-production", 8, "production"));
  enqueue(queued("spot", 8, "spot"));
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"new-production", "old-batch", "spot"}));
  const auto queue = *engine_->reads().listQueue();
  EXPECT_EQ(queue[0].request.priorityClass, "production");
  EXPECT_EQ(queue[0].request.priority, 1000);

  run(engine_->blocking().decompose(Caller::local(), "a"));
  EXPECT_EQ(finished(queue[0].operationId).state, OperationState::kSucceeded);
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"old-batch", "spot"}));
}

TEST_F(EngineQueueTest, WithinAClassTheTenantHoldingLessOfItsShareGoesFirst) {
  quotas_["team-a"].share = 1.0;
  quotas_["team-b"].share = 1.0;
  start();
  auto a = want("a", 8);
  a.placement.tenant = "team-a";
  composeWith(a);
  compose("b", 8);  // the default tenant's
  enqueue(queued("a-more", 8, "batch", "team-a"));  // older, but team-a holds 8 GPUs
  enqueue(queued("b-first", 8, "batch", "team-b"));  // team-b holds none
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"b-first", "a-more"}));
  run(engine_->blocking().decompose(Caller::local(), "b"));
  EXPECT_NE(engine_->reads().getSystem("b-first")->state, SystemState::kQueued) << "admitted ahead of the older request";
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"a-more"}));
}

// Fair share remembers: a tenant that held 8 GPUs for the last 12 hours is charged for it after it let them
// go (decayed with EngineOptions::fairShareHalfLife), so a tenant that held nothing goes first although its
// request is younger. With no half-life only what is held now counts, and age decides.
TEST_F(EngineQueueTest, ATenantThatHeldGpusRecentlyIsChargedForThemAfterItLetsGo) {
  const auto [aNext, bNext] = queueAfterTeamAHeldEightGpusFor12Hours(std::chrono::hours(24));
  EXPECT_EQ(finished(bNext.id).state, OperationState::kSucceeded) << "team-b held nothing: it goes first";
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"a-next"}));
}

TEST_F(EngineQueueTest, WithoutAHalfLifeOnlyWhatIsHeldNowIsChargedAndAgeDecides) {
  const auto [aNext, bNext] = queueAfterTeamAHeldEightGpusFor12Hours(std::chrono::milliseconds(0));
  EXPECT_EQ(finished(aNext.id).state, OperationState::kSucceeded) << "both hold nothing now: the older goes first";
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"b-next"}));
}

TEST_F(EngineQueueTest, CancellingFreesTheNameAndTimeoutsGiveUpOnTheEnginesClock) {
  start();
  compose("a", 8);
  compose("b", 8);
  const Operation c = enqueue(want("c", 8, true));
  auto cancelled = engine_->blocking().cancelQueued(Caller::local(), "c");
  ASSERT_TRUE(cancelled) << cancelled.error().message;
  EXPECT_EQ(cancelled->state, OperationState::kFailed);
  EXPECT_NE(cancelled->error.find("cancelled by local"), std::string::npos) << cancelled->error;
  EXPECT_EQ(finished(c.id).state, OperationState::kFailed) << "waiters hear of the cancel";
  EXPECT_FALSE(engine_->reads().getSystem("c")) << "the queued system is gone";
  EXPECT_TRUE(engine_->reads().listQueue()->empty());
  auto again = engine_->blocking().cancelQueued(Caller::local(), c.id);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Code::kNotFound);

  auto timed = want("c", 8, true);  // the name is free again
  timed.queueTimeout = 30s;
  const Operation t = enqueue(timed);
  clock_.advance(29s);
  ASSERT_TRUE(engine_->blocking().expireDeadlines());
  EXPECT_EQ(engine_->reads().listQueue()->size(), 1u);
  clock_.advance(2s);
  ASSERT_TRUE(engine_->blocking().expireDeadlines());
  const Operation gaveUp = finished(t.id);
  EXPECT_EQ(gaveUp.state, OperationState::kFailed);
  EXPECT_NE(gaveUp.error.find("gave up after 31s"), std::string::npos) << gaveUp.error;
  EXPECT_TRUE(engine_->reads().listQueue()->empty());

  // Decomposing a queued system cancels its request too.
  const Operation d = enqueue(want("d", 8, true));
  auto viaDecompose = engine_->blocking().decompose(Caller::local(), "d");
  ASSERT_TRUE(viaDecompose) << viaDecompose.error().message;
  EXPECT_EQ(viaDecompose->id, d.id);
  EXPECT_EQ(finished(d.id).state, OperationState::kFailed);
}

TEST_F(EngineQueueTest, TheQueueSurvivesARestartAndIsAdmittedAfterIt) {
  start();
  compose("a", 8);
  compose("b", 8);
  const Operation c = enqueue(queued("c", 8, "production"));
  start();  // a restart over the same store
  const auto queue = *engine_->reads().listQueue();
  ASSERT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue[0].operationId, c.id);
  EXPECT_EQ(queue[0].request.priorityClass, "production");
  EXPECT_EQ(engine_->reads().getSystem("c")->state, SystemState::kQueued);
  run(engine_->blocking().decompose(Caller::local(), "a"));
  EXPECT_EQ(finished(c.id).state, OperationState::kSucceeded);
}

TEST_F(EngineQueueTest, ALaterRequestDoesNotTakeWhatTheHeadIsPromisedUnlessItEndsFirst) {
  start();
  auto leased = want("b", 8);
  leased.lease = 1h;
  composeWith(leased);  // one whole switch, back in an hour
  compose("a", 4);      // four of the other; four left free
  const Operation head = enqueue(want("big", 12, true));  // fits when b's lease ends: b's 8 and the free 4

  auto plain = engine_->blocking().compose(Caller::local(), want("small", 4));
  ASSERT_FALSE(plain) << "the free four are the head's once b ends";
  EXPECT_EQ(plain.error().code, Code::kResourceExhausted);
  EXPECT_NE(plain.error().message.find("queue's head"), std::string::npos) << plain.error().message;
  EXPECT_NE(plain.error().message.find("--queue"), std::string::npos) << plain.error().message;
  enqueue(want("small", 4, true));
  EXPECT_EQ(queueNames(), (std::vector<std::string>{"big", "small"}));
  EXPECT_NE(engine_->reads().listQueue()->at(1).waitingFor.find("queue's head"), std::string::npos);

  auto shortJob = want("short", 4);
  shortJob.lease = 30min;  // back before the head can start: it delays nothing
  composeWith(shortJob);

  clock_.advance(31min);
  ASSERT_TRUE(engine_->blocking().expireDeadlines());  // short's lease ends: decomposed
  clock_.advance(30min);
  auto started = engine_->blocking().expireDeadlines();  // b's lease ends
  ASSERT_TRUE(started);
  for (const auto& op : *started) finished(op.id);
  EXPECT_EQ(finished(head.id).state, OperationState::kSucceeded) << "the head got what it was promised";
  EXPECT_EQ(engine_->reads().getSystem("big")->bindings.size(), 12u);
}

TEST_F(EngineQueueTest, ALeaseEndsInADecomposeWithAWarningFirstAndRenewMovesIt) {
  start();
  auto leased = want("a", 8);
  leased.lease = 20min;
  composeWith(leased);
  auto system = *engine_->reads().getSystem("a");
  EXPECT_EQ(system.leaseExpiresAt, system.createdAt + std::chrono::duration_cast<Duration>(20min).count());
  compose("b", 8);
  const Operation waiting = enqueue(want("c", 8, true));

  clock_.advance(11min);
  ASSERT_TRUE(engine_->blocking().expireDeadlines());
  auto types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "lease.expiring"), types.end()) << "ten minutes before the end";
  EXPECT_EQ(std::count(types.begin(), types.end(), "lease.expiring"), 1);
  ASSERT_TRUE(engine_->blocking().expireDeadlines());
  types = eventTypes();
  EXPECT_EQ(std::count(types.begin(), types.end(), "lease.expiring"), 1) << "warned once";

  auto renewed = engine_->blocking().renewLease(Caller::local(), "a", 1h);
  ASSERT_TRUE(renewed) << renewed.error().message;
  EXPECT_EQ(renewed->leaseExpiresAt, clock_.now() + std::chrono::duration_cast<Duration>(1h).count());
  clock_.advance(10min);
  EXPECT_TRUE(engine_->blocking().expireDeadlines()->empty()) << "renewed: not due";

  clock_.advance(51min);
  auto started = engine_->blocking().expireDeadlines();
  ASSERT_TRUE(started);
  ASSERT_EQ(started->size(), 1u);
  EXPECT_EQ(started->front().kind, OperationKind::kDecompose);
  EXPECT_EQ(started->front().requestedBy.identity, "yardd (lease)");
  EXPECT_EQ(finished(started->front().id).state, OperationState::kSucceeded);
  EXPECT_FALSE(engine_->reads().getSystem("a"));
  EXPECT_EQ(finished(waiting.id).state, OperationState::kSucceeded) << "the lease's GPUs went to the queue at once";
  types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "lease.expired"), types.end());
}

// Issue "No request can stop yardd": the lease bookkeeping (warned, retry times) of systems that are gone is
// forgotten; before, those maps only grew with every leased system that ever lived.
TEST_F(EngineQueueTest, LeaseBookkeepingOfSystemsThatAreGoneIsForgotten) {
  start();
  for (int round = 0; round < 5; ++round) {
    auto leased = want(fmt::format("leased-{}", round), 8);
    leased.lease = 20min;
    composeWith(leased);
    clock_.advance(11min);
    ASSERT_TRUE(engine_->blocking().expireDeadlines());  // warned: one entry
    clock_.advance(10min);
    auto started = engine_->blocking().expireDeadlines();  // due: decomposed
    ASSERT_TRUE(started);
    ASSERT_EQ(started->size(), 1u);
    EXPECT_EQ(finished(started->front().id).state, OperationState::kSucceeded);
  }
  ASSERT_TRUE(engine_->blocking().expireDeadlines());
  EXPECT_EQ(*engine_->bookkeepingEntries(), 0u) << "five leased systems came and went";
}

// N10: a spot-class head waiting for leased GPUs stopped every compose made without --queue (batch, a higher
// class) that fit now. A request of a higher class than the head's is not its to wait for.
TEST_F(EngineQueueTest, ALowerClassHeadDoesNotStopAHigherClassComposeThatFits) {
  start();
  auto leased = want("b", 8);
  leased.lease = 1h;
  composeWith(leased);
  compose("a", 4);
  enqueue(queued("spot-head", 12, "spot"));  // fits when b's lease ends: b's 8 and the free 4
  auto batch = engine_->blocking().compose(Caller::local(), want("small", 4));  // batch, the default class
  ASSERT_TRUE(batch) << batch.error().message;
  EXPECT_EQ(finished(batch->id).state, OperationState::kSucceeded);
}

TEST_F(EngineQueueTest, BadClassesDurationsAndFloodsAreRefusedWithNothingQueued) {
  configure_ = [](EngineOptions& o) {
    o.maxQueuedPerTenant = 2;
    o.maxLease = std::chrono::hours(24);
  };
  start();
  compose("a", 8);
  compose("b", 8);
  auto badClass = queued("x", 8, "vip");
  auto r = engine_->blocking().compose(Caller::local(), badClass);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_NE(r.error().message.find("production, batch, spot"), std::string::npos) << r.error().message;
  auto longLease = want("x", 8, true);
  longLease.lease = std::chrono::hours(25);
  r = engine_->blocking().compose(Caller::local(), longLease);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_FALSE(engine_->blocking().renewLease(Caller::local(), "a", std::chrono::hours(48)));
  EXPECT_TRUE(engine_->reads().listQueue()->empty());

  enqueue(want("q1", 8, true));
  enqueue(want("q2", 8, true));
  r = engine_->blocking().compose(Caller::local(), want("q3", 8, true));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kResourceExhausted);
  EXPECT_NE(r.error().message.find("its most"), std::string::npos) << r.error().message;
  EXPECT_EQ(engine_->reads().listQueue()->size(), 2u);
  EXPECT_FALSE(engine_->reads().getSystem("q3"));
}

TEST_F(EngineQueueTest, ATenantsPolicyGivesItsDefaultLeaseAndCapsLeasesAndItsQueue) {
  quotas_["team-a"].defaultLease = 2h;
  quotas_["team-a"].maxLease = 4h;
  quotas_["team-a"].maxQueued = 1;
  start();
  auto x = want("x", 4);
  x.placement.tenant = "team-a";
  composeWith(x);
  const System sx = *engine_->reads().getSystem("x");
  EXPECT_EQ(sx.leaseExpiresAt, sx.createdAt + std::chrono::duration_cast<Duration>(2h).count()) << "the tenant's default lease";
  auto tooLong = want("y", 4);
  tooLong.placement.tenant = "team-a";
  tooLong.lease = 5h;
  auto r = engine_->blocking().compose(Caller::local(), tooLong);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_NE(r.error().message.find("for tenant 'team-a'"), std::string::npos) << r.error().message;
  EXPECT_FALSE(engine_->blocking().renewLease(Caller::local(), "x", 5h));
  EXPECT_TRUE(engine_->blocking().renewLease(Caller::local(), "x", 3h));
  compose("other", 12);  // fills the pool
  enqueue(queued("q1", 8, "batch", "team-a"));
  r = engine_->blocking().compose(Caller::local(), queued("q2", 8, "batch", "team-a"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kResourceExhausted);
  enqueue(queued("q3", 8, "batch", "team-b")) ;  // another tenant's limit is its own
}

TEST_F(EngineQueueTest, ALeaseWhoseHostWillNotLetGoIsOverdueAndTriedAgain) {
  SimulatedHosts simulated(defaultTopology(), fabric_->router(), clock_);
  hosts_ = &simulated;
  start();
  auto leased = want("a", 8);
  leased.lease = 1min;
  composeWith(leased);
  const DeviceId busy = engine_->reads().getSystem("a")->bindings.front().deviceId;
  simulated.setDeviceFault(busy, SimulatedHostFault::kInUse);
  clock_.advance(61s);
  auto first = engine_->blocking().expireDeadlines();
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ(finished(first->front().id).state, OperationState::kFailed);
  EXPECT_EQ(engine_->reads().getSystem("a")->bindings.size(), 8u);
  auto types = eventTypes();
  EXPECT_NE(std::find(types.begin(), types.end(), "lease.overdue"), types.end());
  EXPECT_TRUE(engine_->blocking().expireDeadlines()->empty()) << "not again at once";
  simulated.setDeviceFault(busy, SimulatedHostFault::kNone);  // the process let go
  clock_.advance(31s);
  auto again = engine_->blocking().expireDeadlines();
  ASSERT_EQ(again->size(), 1u) << "tried again after the retry interval";
  EXPECT_EQ(finished(again->front().id).state, OperationState::kSucceeded);
  EXPECT_FALSE(engine_->reads().getSystem("a"));
  EXPECT_TRUE(simulated.surpriseRemovals().empty());
}

}  // namespace
}  // namespace switchyard
