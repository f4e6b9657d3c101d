// The engine's parts that own their state (issue 59), each alone, with time passed in: fair share's memory of
// recent use, the disruption budget, the lease watch, the preemption plan, the reservation book, the event log, the
// request queue, the quota check, the operations' waiters, the steps' retries, defragmentation's moves, reconcile's comparison with the fabric and its memory of drift, the numbers the engine gives out. The engine tests (engine_queue_test.cpp and others) check
// the same rules through the whole engine; these pin each part's own contract.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>

#include "composer/engine/defragmentation.h"
#include "composer/engine/disruption_budget.h"
#include "composer/engine/drift_watch.h"
#include "composer/engine/event_log.h"
#include "composer/engine/fabric_comparison.h"
#include "composer/engine/lease_watch.h"
#include "composer/engine/numbering.h"
#include "composer/engine/preemption_plan.h"
#include "composer/engine/quota_check.h"
#include "composer/engine/recent_use.h"
#include "composer/engine/reservation_book.h"
#include "composer/engine/request_queue.h"
#include "composer/engine/step_retries.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

constexpr Timestamp at(std::chrono::nanoseconds since) { return 1'800'000'000'000'000'000 + since.count(); }

TEST(RecentUse, ATenantThatHeldGpusForAHalfLifeIsChargedForThemAfterItGaveThemBack) {
  RecentUse use(hours(1));
  EXPECT_DOUBLE_EQ(use.pass({{"a", 8}}, at(hours(0))).at("a"), 8) << "no history yet: what it holds";
  const auto later = use.pass({}, at(hours(1)));
  // Held 8 GPUs for one half-life: 8 * H/ln2 * (1 - 1/2) GPU-seconds, charged over H: 8 / (2 ln 2) = 5.77 GPUs.
  EXPECT_NEAR(later.at("a"), 8 / (2 * std::log(2.0)), 1e-9);
  // A further half-life halves it; a tenant holding nothing and with under a GPU-second of history is forgotten.
  EXPECT_NEAR(use.pass({}, at(hours(2))).at("a"), 4 / (2 * std::log(2.0)), 1e-9);
  EXPECT_EQ(use.pass({}, at(hours(200))).count("a"), 0u);
  EXPECT_EQ(use.tenants(), 0u);
}

TEST(RecentUse, WithoutAHalfLifeTheChargeIsWhatATenantHoldsNow) {
  RecentUse use(std::chrono::milliseconds(0));
  (void)use.pass({{"a", 8}}, at(hours(0)));
  const auto charges = use.pass({{"b", 2}}, at(hours(1)));
  EXPECT_EQ(charges.count("a"), 0u);
  EXPECT_DOUBLE_EQ(charges.at("b"), 2);
}

TEST(Numbering, ContinuesAfterTheStoreNeverReusesAnOperationIdAndGivesBackAuditNumbersThatWereNotWritten) {
  Numbering numbers;
  StoreSnapshot stored;
  stored.lastAuditSequence = 41;
  stored.lastSystemNumber = 6;
  stored.lastOperationNumber = 99;
  numbers.continueAfter(stored);
  EXPECT_EQ(numbers.nextOperation(), "op-000100");
  EXPECT_EQ(numbers.nextOperation(), "op-000101") << "given is spent, whether or not its write succeeds";
  EXPECT_EQ(numbers.nextSystem(), "sys-000007");
  EXPECT_EQ(numbers.nextSystem(), "sys-000007") << "a system refused before it joined the pool spends nothing";
  numbers.systemAdded();
  EXPECT_EQ(numbers.nextSystem(), "sys-000008");
  EXPECT_EQ(numbers.nextAudit(), 42u);
  EXPECT_EQ(numbers.nextAudit(), 43u);
  numbers.auditNotWritten(2);  // the write that carried both failed
  EXPECT_EQ(numbers.nextAudit(), 42u) << "the trail has no gaps";
}

TEST(DisruptionBudget, CountsWhatWasPreemptedInTheLastDayAndGrowsBackAfterIt) {
  DisruptionBudget budget;
  EXPECT_EQ(budget.left("a", std::nullopt, at(hours(0))), INT_MAX) << "no budget: no limit";
  EXPECT_EQ(budget.left("a", 8, at(hours(0))), 8);
  budget.record("a", 3, at(hours(0)));
  budget.record("a", 4, at(hours(12)));
  budget.record("b", 8, at(hours(12)));
  EXPECT_EQ(budget.left("a", 8, at(hours(13))), 1);
  EXPECT_EQ(budget.left("a", 5, at(hours(13))), 0) << "never below zero";
  EXPECT_FALSE(budget.expire(at(hours(23))));
  EXPECT_TRUE(budget.expire(at(hours(24)))) << "the first preemption is a day old";
  EXPECT_EQ(budget.left("a", 8, at(hours(24))), 4);
  EXPECT_TRUE(budget.expire(at(hours(36))));
  EXPECT_EQ(budget.left("b", 8, at(hours(36))), 8);
  EXPECT_FALSE(budget.expire(at(hours(48)))) << "nothing left to forget";
}

System leased(SystemId id, Timestamp ends) {
  System s;
  s.id = std::move(id);
  s.state = SystemState::kComposed;
  s.leaseExpiresAt = ends;
  return s;
}

TEST(LeaseWatch, WarnsOnceBeforeTheEndThenAsksForTheDecomposeAndWaitsBetweenTries) {
  LeaseWatch watch;
  const System s = leased("sys-1", at(hours(1)));
  const Duration warn = minutes(10), retry = std::chrono::seconds(30);
  EXPECT_EQ(watch.look(s, at(minutes(40)), warn), LeaseWatch::Due::kNothing);
  EXPECT_EQ(watch.look(s, at(minutes(50)), warn), LeaseWatch::Due::kWarn);
  EXPECT_EQ(watch.look(s, at(minutes(55)), warn), LeaseWatch::Due::kNothing) << "warned once per lease";
  EXPECT_EQ(watch.look(s, at(hours(1)), warn), LeaseWatch::Due::kDecompose);
  EXPECT_FALSE(watch.tried("sys-1", at(hours(1)), retry));
  EXPECT_EQ(watch.look(s, at(hours(1) + std::chrono::seconds(10)), warn), LeaseWatch::Due::kNothing) << "the retry waits";
  EXPECT_EQ(watch.look(s, at(hours(1) + std::chrono::seconds(30)), warn), LeaseWatch::Due::kDecompose);
  EXPECT_TRUE(watch.tried("sys-1", at(hours(1) + std::chrono::seconds(30)), retry)) << "a retry says so";

  // Renewed: it may be warned about again and is due again only at its new end.
  watch.renewed("sys-1");
  const System renewed = leased("sys-1", at(hours(3)));
  EXPECT_EQ(watch.look(renewed, at(hours(2)), warn), LeaseWatch::Due::kNothing);
  EXPECT_EQ(watch.look(renewed, at(hours(3) - minutes(5)), warn), LeaseWatch::Due::kWarn);
  EXPECT_EQ(watch.entries(), 1u);
  watch.prune([](const SystemId&) { return true; });
  EXPECT_EQ(watch.entries(), 0u);
}

TEST(LeaseWatch, ASystemWithoutALeaseQueuedOrBusyIsNotDue) {
  LeaseWatch watch;
  EXPECT_EQ(watch.look(leased("none", 0), at(hours(5)), minutes(10)), LeaseWatch::Due::kNothing);
  System queued = leased("queued", at(hours(1)));
  queued.state = SystemState::kQueued;
  EXPECT_EQ(watch.look(queued, at(hours(5)), minutes(10)), LeaseWatch::Due::kNothing);
  System busy = leased("busy", at(hours(1)));
  busy.activeOperation = "op-000001";
  EXPECT_EQ(watch.look(busy, at(hours(5)), minutes(10)), LeaseWatch::Due::kNothing) << "its operation ends first";
  busy.activeOperation.clear();
  EXPECT_EQ(watch.look(busy, at(hours(5)), minutes(10)), LeaseWatch::Due::kDecompose);
}

TEST(PreemptionPlan, OnePlanAtATimeItsVictimsDueOnceAndAFailedHeadWaitsBeforeAnother) {
  PreemptionPlan plan;
  EXPECT_EQ(plan.current(), nullptr);
  EXPECT_TRUE(plan.mayPlanFor("op-000009", at(minutes(0))));
  plan.begin(Preemption{"op-000009", {"sys-1", "sys-2"}, at(minutes(1)), {}, false});
  ASSERT_NE(plan.current(), nullptr);
  EXPECT_TRUE(plan.takeDue(at(std::chrono::seconds(30))).empty()) << "within the grace period";
  EXPECT_EQ(plan.takeDue(at(minutes(1))), (std::vector<SystemId>{"sys-1", "sys-2"}));
  EXPECT_TRUE(plan.takeDue(at(minutes(2))).empty()) << "once";
  EXPECT_TRUE(plan.current()->started) << "the plan stays while its victims go";

  EXPECT_EQ(plan.failed(at(minutes(2)), minutes(1)), std::optional<OperationId>("op-000009"));
  EXPECT_EQ(plan.current(), nullptr);
  EXPECT_FALSE(plan.mayPlanFor("op-000009", at(minutes(2) + std::chrono::seconds(59))));
  EXPECT_TRUE(plan.mayPlanFor("op-000010", at(minutes(2))));
  EXPECT_TRUE(plan.mayPlanFor("op-000009", at(minutes(3))));
  EXPECT_EQ(plan.failed(at(minutes(3)), minutes(1)), std::nullopt) << "no plan in progress";

  plan.begin(Preemption{"op-000010", {"sys-3"}, at(minutes(4)), {}, false});
  plan.endIfHeadLeft([](const OperationId& id) { return id == "op-000010"; });
  EXPECT_NE(plan.current(), nullptr) << "its head still waits";
  plan.endIfHeadLeft([](const OperationId&) { return false; });
  EXPECT_EQ(plan.current(), nullptr) << "its head was admitted or left";
  EXPECT_EQ(plan.retryEntries(), 1u);
  plan.pruneRetries([](const OperationId&) { return false; });
  EXPECT_EQ(plan.retryEntries(), 0u);
}

Reservation reservation(const ReservationBook& book, std::string tenant, std::vector<std::pair<std::string, HostId>> systems, Timestamp expires) {
  Reservation r;
  r.id = book.nextId();
  r.tenant = std::move(tenant);
  r.expiresAt = expires;
  for (auto& [name, host] : systems) {
    HeldSystem held;
    held.name = name;
    held.placement.hostId = host;
    r.systems.push_back(std::move(held));
  }
  return r;
}

TEST(Defragmentation, EachMoveAttachesThenDetachesThePlanEndsWithItsLastMoveAndAFailedOneDelaysTheNext) {
  Defragmentation d;
  const Duration retry = std::chrono::seconds(60);
  EXPECT_TRUE(d.mayPlanFor("op-head", 0));
  DefragPlan plan{"op-head", {{"sys-a", {"g0"}, {"g4"}, SystemMove::Stage::kAttaching, "op-1"},
                             {"sys-b", {"g1", "g2"}, {"g5", "g6"}, SystemMove::Stage::kAttaching, "op-2"}},
                  {}, 100};
  EXPECT_EQ(plan.gpus(), 3u);
  d.begin(plan, 100, retry);
  ASSERT_NE(d.current(), nullptr);
  EXPECT_FALSE(d.failed());
  EXPECT_FALSE(d.ended("op-9", true, 110, retry)) << "not a move's operation";
  EXPECT_TRUE(d.detachesDue().empty()) << "nothing leaves before its replacement came";

  auto a = d.ended("op-1", true, 110, retry);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->stage, SystemMove::Stage::kDetachDue);
  ASSERT_EQ(d.detachesDue().size(), 1u);
  EXPECT_EQ(d.detachesDue()[0].system, "sys-a");
  d.detaching("sys-a", "op-3", 111, retry);
  EXPECT_TRUE(d.detachesDue().empty()) << "due once";
  EXPECT_EQ(d.ended("op-3", true, 120, retry)->stage, SystemMove::Stage::kMoved);
  ASSERT_NE(d.current(), nullptr) << "sys-b still moves";

  EXPECT_EQ(d.ended("op-2", false, 130, retry)->stage, SystemMove::Stage::kFailed);
  EXPECT_EQ(d.current(), nullptr) << "every move is over";
  EXPECT_FALSE(d.mayPlanFor("op-head", 130 + retry.count() - 1)) << "a failed plan's head waits before another";
  EXPECT_TRUE(d.mayPlanFor("op-head", 130 + retry.count()));
  EXPECT_TRUE(d.mayPlanFor("op-other", 130));
  d.pruneRetries([](const OperationId&) { return false; });
  EXPECT_TRUE(d.mayPlanFor("op-head", 130)) << "forgotten once it left the queue";
}

TEST(Defragmentation, AMoveThatCouldNotStartFailsThePlanAtOnceAndTheOthersFinish) {
  Defragmentation d;
  const Duration retry = std::chrono::seconds(60);
  d.begin({"op-head", {{"sys-a", {"g0"}, {"g4"}, SystemMove::Stage::kAttaching, "op-1"}, {"sys-b", {"g1"}, {"g5"}, SystemMove::Stage::kFailed, ""}},
           {}, 100},
          100, retry);
  ASSERT_NE(d.current(), nullptr);
  EXPECT_TRUE(d.failed()) << "its head is promised nothing more";
  EXPECT_FALSE(d.mayPlanFor("op-head", 101));
  d.ended("op-1", true, 105, retry);
  d.detaching("sys-a", "", 106, retry);  // the detach was refused
  EXPECT_EQ(d.current(), nullptr);
}

TEST(Defragmentation, AMoveResumedAtStartDetachesOutsideAnyPlanAndFailsNoHead) {
  Defragmentation d;
  const Duration retry = std::chrono::seconds(60);
  d.resume({"sys-a", {"g0"}, {"g4"}, SystemMove::Stage::kAttaching, "op-1"});
  EXPECT_EQ(d.current(), nullptr) << "no plan: its head was lost with the last yardd";
  ASSERT_EQ(d.detachesDue().size(), 1u) << "its attach is over: the detach is due";
  EXPECT_EQ(d.detachesDue()[0].from, (std::vector<DeviceId>{"g0"}));
  EXPECT_FALSE(d.ended("op-1", true, 100, retry)) << "the attach's id is forgotten: only the detach counts";
  d.detaching("sys-a", "op-7", 101, retry);
  EXPECT_TRUE(d.detachesDue().empty());
  const auto moved = d.ended("op-7", true, 102, retry);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->stage, SystemMove::Stage::kMoved);
  EXPECT_FALSE(d.ended("op-7", true, 103, retry)) << "over once";

  d.resume({"sys-b", {"g1"}, {"g5"}, SystemMove::Stage::kDetachDue, ""});
  d.detaching("sys-b", "op-8", 104, retry);
  EXPECT_EQ(d.ended("op-8", false, 105, retry)->stage, SystemMove::Stage::kFailed);
  EXPECT_TRUE(d.mayPlanFor("op-head", 105)) << "a resumed move that fails delays no head";
}

TEST(ReservationBook, NumbersReservationsAndAnswersWhatTheyHold) {
  ReservationBook book;
  EXPECT_TRUE(book.empty());
  EXPECT_EQ(book.nextId(), "rsv-000001");
  book.add(reservation(book, "team-a", {{"train", "host0"}, {"eval", "host1"}}, at(minutes(5))));
  EXPECT_EQ(book.nextId(), "rsv-000002");
  book.add(reservation(book, "team-b", {{"serve", "host2"}}, at(minutes(10))));
  ASSERT_NE(book.holdingName("eval"), nullptr);
  EXPECT_EQ(book.holdingName("eval")->id, "rsv-000001");
  EXPECT_EQ(book.holdingName("nope"), nullptr);
  EXPECT_EQ(book.holderOfHost("host2"), "rsv-000002");
  EXPECT_EQ(book.holderOfHost("host3"), "");
  EXPECT_EQ(book.heldHosts(), (std::vector<std::pair<HostId, std::string>>{{"host0", "rsv-000001"}, {"host1", "rsv-000001"}, {"host2", "rsv-000002"}}));
  EXPECT_EQ(book.heldFor("team-a").size(), 2u);
  EXPECT_EQ(book.heldFor("team-c").size(), 0u);
  EXPECT_EQ(book.live(at(minutes(6))).size(), 1u) << "a read leaves out one past its time without taking it out";
  EXPECT_NE(book.find("rsv-000001"), nullptr);

  const auto expired = book.takeExpired(at(minutes(6)));
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].id, "rsv-000001");
  EXPECT_EQ(book.find("rsv-000001"), nullptr);
  EXPECT_TRUE(book.erase("rsv-000002"));
  EXPECT_FALSE(book.erase("rsv-000002"));
  EXPECT_TRUE(book.empty());
  EXPECT_EQ(book.nextId(), "rsv-000003") << "ids are never given twice";
}

TEST(EventLog, NumbersEventsGivesBackTheNumbersOfUnwrittenOnesAndTellsReadersOnlyWhatIsStored) {
  EventLog log;
  const Event a = log.make(at(minutes(1)), "device.bound", "sw0-gpu0", "bound", "alice");
  const Event b = log.make(at(minutes(1)), "device.bound", "sw0-gpu1", "bound", "alice");
  EXPECT_EQ(a.sequence, 1u);
  EXPECT_EQ(b.sequence, 2u);
  EXPECT_EQ(log.storedSequence(), 0u) << "not written yet: readers do not ask the store for them";
  log.stored();
  EXPECT_EQ(log.storedSequence(), 2u);
  (void)log.make(at(minutes(2)), "x", "y", "z", "yardd");
  log.unmake(1);  // the write failed
  EXPECT_EQ(log.make(at(minutes(2)), "x", "y", "z", "yardd").sequence, 3u) << "its number is given again";
  log.continueAfter(41);  // a standby read the leader's events that far
  EXPECT_EQ(log.last(), 41u);
  EXPECT_EQ(log.storedSequence(), 41u);
  EXPECT_EQ(log.make(0, "x", "y", "z", "yardd").sequence, 42u);
}

TEST(EventLog, DeliversInOrderToOpenSubscribersForgetsClosedOnesAndClosesAllAtTheEnd) {
  EventLog log;
  auto first = log.subscribe();
  auto second = log.subscribe();
  {
    auto dropped = log.subscribe();  // its owner went away
  }
  const std::vector<Event> events{log.make(0, "a", "s", "m", "yardd"), log.make(0, "b", "s", "m", "yardd")};
  second->close();
  log.deliver(events);
  EXPECT_EQ(log.subscribers(), 1u) << "the closed and the dropped stream are forgotten";
  ASSERT_EQ(first->tryNext()->type, "a");
  ASSERT_EQ(first->tryNext()->type, "b");
  EXPECT_FALSE(first->tryNext());
  log.closeAll();
  EXPECT_TRUE(first->closed());
  EXPECT_EQ(log.subscribers(), 0u);
}

Operation queuedOp(const std::string& id, const std::string& tenant) {
  Operation op;
  op.id = id;
  op.tenant = tenant;
  op.state = OperationState::kQueued;
  op.queued = QueuedRequest{};
  return op;
}

TEST(RequestQueue, ARequestThatLeavesTakesItsReasonAndItsPlaceWithIt) {
  RequestQueue q;
  for (const auto& [id, tenant] : {std::pair{"op-1", "a"}, std::pair{"op-2", "b"}, std::pair{"op-3", "a"}}) q.add(queuedOp(id, tenant));
  EXPECT_EQ(q.size(), 3U);
  EXPECT_EQ(q.countOf("a"), 2U);
  q.clearChanged();
  q.beginPass();
  q.setWhy("op-3", "no host can take 8 GPU(s)");
  q.setWhy("op-1", "quota");
  q.setShadow({"op-3", 42, {}});
  q.endPass({"op-3", "op-1", "op-9"});  // op-9 left during the pass: not kept in the order
  EXPECT_TRUE(q.changed());
  auto order = q.inOrder();
  ASSERT_EQ(order.size(), 3U);  // the pass's order, then op-2, which it did not look at
  EXPECT_EQ(order[0]->id, "op-3");
  EXPECT_EQ(order[1]->id, "op-1");
  EXPECT_EQ(order[2]->id, "op-2");
  q.clearChanged();
  q.remove("op-3");
  EXPECT_TRUE(q.changed());
  EXPECT_EQ(q.why("op-3"), nullptr);
  EXPECT_EQ(*q.why("op-1"), "quota");
  EXPECT_EQ(q.find("op-3"), nullptr);
  ASSERT_EQ(q.inOrder().size(), 2U);
  EXPECT_EQ(q.inOrder()[0]->id, "op-1");
  // A new pass forgets the last one's findings; with nothing queued, a shadow left over is dropped and shown so.
  q.beginPass();
  EXPECT_EQ(q.why("op-1"), nullptr);
  EXPECT_FALSE(q.shadow());
  q.setShadow({"op-1", 7, {}});
  q.remove("op-1");
  q.remove("op-2");
  q.clearChanged();
  q.forgetPass();
  EXPECT_TRUE(q.changed());
  EXPECT_FALSE(q.shadow());
  q.clearChanged();
  q.forgetPass();
  EXPECT_FALSE(q.changed()) << "nothing to forget: the view stays as it is";
}

TEST(QuotaCheck, EachKindAndClassCountsAgainstItsOwnLimitOnlyWhereTheRequestAddsIt) {
  TenantQuota quota{.maxGpus = 4, .maxSystems = 2, .maxNics = 1, .maxEndpoints = {{"fpga", 2}}};
  TenantHolding now;
  now.systems = 1;
  now.held.gpus = 3;
  now.held.nics = 1;
  now.held.others["fpga"] = 2;
  HeldDevices more;
  EXPECT_TRUE(checkTenantQuota("t", quota, now, 1, more)) << "a second system, adding nothing held";
  EXPECT_EQ(checkTenantQuota("t", quota, now, 2, more).error().message, "tenant 't' is at its quota of 2 system(s) (it has 1); decompose one first");
  more.gpus = 1;
  EXPECT_TRUE(checkTenantQuota("t", quota, now, 0, more)) << "at the NIC and FPGA limits, a GPU still goes";
  more.gpus = 2;
  EXPECT_EQ(checkTenantQuota("t", quota, now, 0, more).error().message, "tenant 't' may hold 4 GPU(s); it holds 3 and this asks for 2 more");
  more = {};
  Device fpga{"f", DeviceKind::kOther, "p", "Alveo", 0, "", DeviceHealth::kOk, false};
  fpga.deviceClass = "fpga";
  more.add(fpga);
  EXPECT_EQ(checkTenantQuota("t", quota, now, 0, more).error().message, "tenant 't' may hold 2 fpga device(s); it holds 2 and this asks for 1 more");
  more = {};
  Device dpu = fpga;
  dpu.deviceClass = "dpu";
  more.add(dpu);
  EXPECT_TRUE(checkTenantQuota("t", quota, now, 0, more)) << "a class without a limit has none";
  HeldDevices sum;
  sum += more;
  sum += more;
  EXPECT_EQ(sum.other("dpu"), 2);
  EXPECT_EQ(sum.other("fpga"), 0);
}

TEST(PoolState, AStandbysRefreshReplacesWhatIsHeldAndFreesWhatNoLongerIs) {
  PoolState state(testing::TopologyBuilder().sw("sw0").gpus("sw0", 4).host("h0", {"sw0"}).host("h1", {"sw0"}).build());
  const auto& gpus = state.index().topology().devices;
  const PortId h0 = state.index().topology().hosts[0].upstreamPorts[0].portId, h1 = state.index().topology().hosts[1].upstreamPorts[0].portId;
  auto poolDevice = [&](int i) { return state.pool().devices()[static_cast<std::size_t>(state.pool().deviceIndex(gpus[static_cast<std::size_t>(i)].id))]; };
  auto poolHost = [&](const HostId& h) { return state.pool().hosts()[static_cast<std::size_t>(state.pool().hostIndex(h))]; };
  System old{.id = "sys-1", .name = "old", .hostId = "h0", .bindings = {{gpus[0].id, h0}}, .state = SystemState::kComposed};
  state.putSystem(old);
  state.assign({gpus[0].id, DeviceAllocation::kAllocated, "sys-1"}, "h0");
  state.assign({gpus[3].id, DeviceAllocation::kQuarantined, "bound outside Switchyard"}, {});
  ASSERT_TRUE(poolHost("h0").inSystem);

  // The leader decomposed sys-1, composed sys-2 on h1, has op-7 reserving gpu2 for h1's system, and released gpu3.
  System fresh{.id = "sys-2", .name = "new", .hostId = "h1", .bindings = {{gpus[1].id, h1}}, .state = SystemState::kComposed};
  state.replaceHeld({fresh}, {{gpus[1].id, DeviceAllocation::kAllocated, "sys-2"}, {gpus[2].id, DeviceAllocation::kReserved, "op-7"}},
                    {{"sys-2", "h1"}, {"op-7", "h1"}});
  EXPECT_EQ(state.findSystem("old"), nullptr);
  ASSERT_NE(state.findSystem("new"), nullptr);
  EXPECT_FALSE(poolHost("h0").inSystem);
  EXPECT_EQ(poolHost("h0").attachedDevices, 0);
  EXPECT_TRUE(poolHost("h1").inSystem);
  EXPECT_EQ(poolHost("h1").attachedDevices, 2) << "sys-2's GPU and the one op-7 reserved for h1";
  EXPECT_TRUE(poolDevice(0).free);
  EXPECT_FALSE(poolDevice(1).free);
  EXPECT_FALSE(poolDevice(2).free);
  EXPECT_TRUE(poolDevice(3).free) << "the quarantine no holder names any more";
  EXPECT_EQ(state.assignments().size(), 2U);
  EXPECT_EQ(state.assignment(gpus[2].id).owner, "op-7");
}

TEST(FabricComparison, FindsWhatTheFabricDisagreesWithAndLeavesBusyDevicesToTheirOperations) {
  PoolState state(testing::TopologyBuilder().sw("sw0").gpus("sw0", 6).host("h0", {"sw0"}).host("h1", {"sw0"}).build());
  const auto& gpus = state.index().topology().devices;
  const PortId h0 = state.index().topology().hosts[0].upstreamPorts[0].portId, h1 = state.index().topology().hosts[1].upstreamPorts[0].portId;
  System idle{.id = "sys-1", .name = "idle", .hostId = "h0", .bindings = {{gpus[0].id, h0}, {gpus[1].id, h0}}, .state = SystemState::kComposed};
  System busy{.id = "sys-2", .name = "busy", .hostId = "h1", .bindings = {{gpus[2].id, h1}}, .state = SystemState::kComposed, .activeOperation = "op-9"};
  state.putSystem(idle);
  state.putSystem(busy);
  state.assign({gpus[4].id, DeviceAllocation::kQuarantined, "bound to x outside Switchyard"}, {});
  // The fabric: gpu0 where it belongs, gpu1 unbound, busy's gpu2 unbound (its operation's business), gpu3 bound to nobody's
  // system, gpu4's quarantine no longer bound.
  const auto found = compareWithFabric(state, {{gpus[0].id, h0}, {gpus[3].id, h1}}, 77);
  ASSERT_EQ(found.drifts.size(), 2U);
  EXPECT_EQ(found.drifts[0].kind, "missing-binding");
  EXPECT_EQ(found.drifts[0].deviceId, gpus[1].id);
  EXPECT_EQ(found.drifts[1].kind, "unexpected-binding");
  EXPECT_EQ(found.drifts[1].deviceId, gpus[3].id);
  ASSERT_EQ(found.systems.size(), 1U);
  EXPECT_EQ(found.systems[0].updated.id, "sys-1");
  EXPECT_EQ(found.systems[0].updated.state, SystemState::kDegraded);
  EXPECT_EQ(found.systems[0].updated.stateReason, gpus[1].id + " is unbound in the fabric");
  EXPECT_EQ(found.systems[0].updated.updatedAt, 77);
  EXPECT_TRUE(found.systems[0].stateChanged);
  ASSERT_EQ(found.quarantine.size(), 1U);
  EXPECT_EQ(found.quarantine[0].deviceId, gpus[3].id);
  EXPECT_EQ(found.quarantine[0].owner, "bound to " + h1 + " outside Switchyard");
  EXPECT_EQ(found.freed, std::vector<DeviceId>{gpus[4].id});

  // On another port it is drift too; all back where they belong, the system is composed again and nothing is found.
  System degraded = found.systems[0].updated;
  state.putSystem(degraded);
  const auto moved = compareWithFabric(state, {{gpus[0].id, h0}, {gpus[1].id, h1}}, 78);
  ASSERT_EQ(moved.drifts.size(), 1U);
  EXPECT_EQ(moved.drifts[0].kind, "wrong-port");
  ASSERT_EQ(moved.systems.size(), 1U);  // still degraded, for another reason: said on the system, no new state event
  EXPECT_EQ(moved.systems[0].updated.stateReason, gpus[1].id + " is on " + h1 + " in the fabric, not " + h0);
  EXPECT_FALSE(moved.systems[0].stateChanged);
  const auto healed = compareWithFabric(state, {{gpus[0].id, h0}, {gpus[1].id, h0}}, 79);
  EXPECT_TRUE(healed.drifts.empty());
  ASSERT_EQ(healed.systems.size(), 1U);
  EXPECT_EQ(healed.systems[0].updated.state, SystemState::kComposed);
  EXPECT_EQ(healed.systems[0].updated.stateReason, "");
  EXPECT_TRUE(healed.systems[0].stateChanged);
}

// StepRetries: the backoff before each attempt, and the timers that wait it out.
TEST(DriftWatch, ADriftThatPersistsIsAnnouncedOnceEachSideRemembersItsOwnAndTheirEndIsToldOnce) {
  DriftWatch watch;
  std::vector<std::string> announced;
  auto announce = [&](const Drift& d) { announced.push_back(d.kind + ":" + d.deviceId); };
  auto fabricRound = [&](const std::vector<std::string>& devices) {
    DriftRound round = watch.round(DriftWatch::Side::kFabric, announce);
    for (const auto& d : devices) round.report("unexpected-binding", d, "bound in the fabric only");
    EXPECT_EQ(round.drifts().size(), devices.size()) << "a round returns every drift it found, announced or not";
    return watch.remember(DriftWatch::Side::kFabric, round);
  };
  EXPECT_FALSE(fabricRound({"gpu0"}));
  EXPECT_EQ(announced, (std::vector<std::string>{"unexpected-binding:gpu0"}));
  EXPECT_FALSE(fabricRound({"gpu0", "gpu1"}));
  EXPECT_EQ(announced.size(), 2u) << "gpu0 again makes no announcement; gpu1 is new";
  EXPECT_EQ(announced.back(), "unexpected-binding:gpu1");

  // The host side has its own memory: the same device there is new to it, and its rounds leave the fabric's alone.
  DriftRound hosts = watch.round(DriftWatch::Side::kHosts, announce);
  hosts.report("host-missing-device", "gpu0", "the host no longer sees it");
  EXPECT_FALSE(watch.remember(DriftWatch::Side::kHosts, hosts));
  EXPECT_EQ(announced.back(), "host-missing-device:gpu0");

  // A round that is never remembered (its writes failed) changes nothing: the next one announces the same again.
  {
    DriftRound unwritten = watch.round(DriftWatch::Side::kFabric, announce);
    unwritten.report("unexpected-binding", "gpu2", "bound in the fabric only");
  }
  EXPECT_FALSE(fabricRound({"gpu0", "gpu1", "gpu2"}));
  EXPECT_EQ(std::count(announced.begin(), announced.end(), "unexpected-binding:gpu2"), 2);

  EXPECT_TRUE(fabricRound({})) << "the fabric's drift is over: told once";
  EXPECT_FALSE(fabricRound({})) << "and not again";
  EXPECT_FALSE(fabricRound({"gpu0"}));
  EXPECT_EQ(announced.back(), "unexpected-binding:gpu0") << "a drift that comes back after it ended is announced again";
}

TEST(DriftWatch, TheEventFeedIsLostOnceAndBackOnceWhateverItSaysMeanwhile) {
  DriftWatch watch;
  EXPECT_EQ(watch.feedRead(""), DriftWatch::Feed::kAsBefore);
  EXPECT_EQ(watch.feedRead("the switch does not answer"), DriftWatch::Feed::kLost);
  EXPECT_EQ(watch.feedFailure(), "the switch does not answer");
  EXPECT_EQ(watch.feedRead("connection refused"), DriftWatch::Feed::kAsBefore) << "still failing: announced when it went";
  EXPECT_EQ(watch.feedFailure(), "the switch does not answer") << "what was announced";
  EXPECT_EQ(watch.feedRead(""), DriftWatch::Feed::kBack);
  EXPECT_EQ(watch.feedFailure(), "");
  EXPECT_EQ(watch.feedRead(""), DriftWatch::Feed::kAsBefore);
}

TEST(StepRetries, EachWaitIsBetweenHalfAndAllOfADoublingBackoffUpToTheLongest) {
  boost::asio::io_context io;
  StepRetries retries(io, std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
  auto ms = [](Duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  for (int i = 0; i < 50; ++i) {
    const auto first = ms(retries.waitAfter(1)), second = ms(retries.waitAfter(2)), late = ms(retries.waitAfter(9));
    EXPECT_GE(first, 50);
    EXPECT_LE(first, 100);
    EXPECT_GE(second, 100);
    EXPECT_LE(second, 200);
    EXPECT_GE(late, 1000) << "capped at the longest, 2 s";
    EXPECT_LE(late, 2000);
  }
  StepRetries atOnce(io, std::chrono::milliseconds(0), std::chrono::milliseconds(2000));
  EXPECT_EQ(atOnce.waitAfter(3).count(), 0);
}

TEST(StepRetries, ARetryRunsOnceItsWaitIsOverAndNotAfterCancelAll) {
  boost::asio::io_context io;
  StepRetries retries(io, std::chrono::milliseconds(100), std::chrono::milliseconds(2000));
  int ran = 0, cancelled = 0;
  retries.after(std::chrono::milliseconds(1), [&] { ++ran; });
  EXPECT_EQ(retries.waiting(), 1u);
  io.run_for(std::chrono::milliseconds(50));
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(retries.waiting(), 0u);
  io.restart();
  retries.after(std::chrono::hours(1), [&] { ++cancelled; });
  retries.after(std::chrono::hours(1), [&] { ++cancelled; });
  retries.cancelAll();
  io.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cancelled, 0);
  EXPECT_EQ(retries.waiting(), 0u) << "a cancelled timer leaves the list";
}

}  // namespace
}  // namespace switchyard
