// A standby's engine (Engine::startReplica, engine_replica.cpp): reads what the leader wrote to the store,
// follows it on refresh (systems, events for Watch streams, operations for WaitOperation), refuses every
// change naming the leader, and never touches the switch or the store's contents.
#include <gtest/gtest.h>

#include <future>

#include "tests/support/gated_driver.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

// The leader's store as an etcd store shows it to a standby: the inventory has a revision (fixed here: it is
// never rewritten), and the loads are counted by what they read.
class RevisionedStore final : public Store {
 public:
  explicit RevisionedStore(Store& inner) : inner_(inner) {}
  Result<StoreSnapshot> load(LoadScope scope) override {
    ++(scope == LoadScope::kEverything ? wholeLoads : stateLoads);
    return inner_.load(scope);
  }
  Result<std::int64_t> inventoryRevision() override { return std::int64_t{7}; }
  Result<WriterEpoch> claimWriter() override { return inner_.claimWriter(); }
  Result<void> write(std::span<const StoreWrite> batch, WriterEpoch epoch) override { return inner_.write(batch, epoch); }
  Result<std::optional<Operation>> getOperation(const OperationId& id) override { return inner_.getOperation(id); }
  Result<std::optional<Operation>> findOperationByRequest(std::string_view id) override { return inner_.findOperationByRequest(id); }
  Result<std::vector<Operation>> queryOperations(const OperationQuery& q) override { return inner_.queryOperations(q); }
  Result<std::vector<Event>> listEvents(std::uint64_t after, std::size_t limit) override { return inner_.listEvents(after, limit); }
  Result<std::vector<AuditRecord>> listAudit(const AuditQuery& q) override { return inner_.listAudit(q); }
  Result<std::map<SystemId, SystemIdentity>> systemIdentities(const std::set<SystemId>& ids) override { return inner_.systemIdentities(ids); }
  Result<std::vector<IdleStretch>> listIdleStretches(Timestamp since, Timestamp until) override { return inner_.listIdleStretches(since, until); }
  Result<PruneReport> prune(const RetentionPolicy& p, WriterEpoch epoch) override { return inner_.prune(p, epoch); }
  int wholeLoads = 0;
  int stateLoads = 0;

 private:
  Store& inner_;
};

class EngineReplicaTest : public EngineTest {
 protected:
  // A standby over the leader's store file (a connection of its own, as another yardd has).
  std::unique_ptr<Engine> standby() {
    auto s = SqliteStore::open(dir_ / "yard.db");
    EXPECT_TRUE(s) << s.error().message;
    standbyStore_ = std::move(*s);
    auto f = SimulatedFabric::create(defaultTopology(), clock_, {});  // the switch as the standby could reach it
    EXPECT_TRUE(f);
    standbyFabric_ = std::move(*f);
    revisionedStore_ = revisioned_ ? std::make_unique<RevisionedStore>(*standbyStore_) : nullptr;
    Store& store = revisionedStore_ ? static_cast<Store&>(*revisionedStore_) : *standbyStore_;
    auto engine = std::make_unique<Engine>(*standbyFabric_, store, clock_, EngineOptions{.fabricPollInterval = 0ms, .pruneInterval = 0ms});
    auto started = engine->startReplica();
    EXPECT_TRUE(started) << started.error().message;
    return engine;
  }
  std::unique_ptr<SqliteStore> standbyStore_;
  std::unique_ptr<SimulatedFabric> standbyFabric_;
  bool revisioned_ = false;  // the standby's store says the inventory has not been rewritten
  std::unique_ptr<RevisionedStore> revisionedStore_;
};

// A refresh of a pool whose inventory was not rewritten reads only the state beside it and changes the pool
// in place (issue 36: a standby 1.1-3 s behind at 100,000 GPUs, from reloading 27 MB each time): systems that
// come and go, devices that are held and freed, all as a full load shows them.
TEST_F(EngineReplicaTest, ARefreshWithTheSameInventoryChangesOnlyWhatIsHeld) {
  start();
  compose("first", 2);
  compose("second", 3);
  revisioned_ = true;
  auto replica = standby();
  EXPECT_EQ(revisionedStore_->wholeLoads, 1);
  run(engine_->blocking().decompose(Caller::local(), "first"));
  compose("third", 4);
  ASSERT_TRUE(replica->refreshReplica());
  EXPECT_EQ(revisionedStore_->wholeLoads, 1) << "the inventory was not read again";
  EXPECT_EQ(revisionedStore_->stateLoads, 1);
  std::vector<std::string> names;
  const auto systems = replica->reads().listSystems();  // held: a range-for over *temporary() would read freed memory
  ASSERT_TRUE(systems);
  for (const auto& s : *systems) names.push_back(s.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"second", "third"}));
  EXPECT_EQ(replica->reads().capacity(defaultShapes())->freeGpus, 16 - 3 - 4);
  // As a standby that loaded everything now sees it (the first one's store stays open beside it).
  auto firstStore = std::move(standbyStore_);
  auto firstFabric = std::move(standbyFabric_);
  auto firstRevisioned = std::move(revisionedStore_);
  revisioned_ = false;
  auto fresh = standby();
  for (const auto& id : {std::string("sw0-gpu0"), std::string("sw0-gpu1"), std::string("sw1-gpu0"), std::string("sw1-gpu7")})
    EXPECT_EQ(replica->reads().view()->device(id)->assignment.allocation, fresh->reads().view()->device(id)->assignment.allocation) << id;
  const auto hosts = fresh->reads().listHosts();
  ASSERT_TRUE(hosts);
  for (const auto& h : *hosts) {
    const auto mine = *replica->reads().listHosts();
    const auto same = std::find_if(mine.begin(), mine.end(), [&](const HostView& v) { return v.host.id == h.host.id; });
    ASSERT_NE(same, mine.end());
    EXPECT_EQ(same->systemId, h.systemId) << h.host.id;
    EXPECT_EQ(same->attachedDevices, h.attachedDevices) << h.host.id;
  }
  fresh.reset();
  replica.reset();  // before the stores it reads
}

TEST_F(EngineReplicaTest, AStandbyReadsWhatTheLeaderWroteAndFollowsItOnRefresh) {
  start();
  compose("first", 2);
  auto replica = standby();
  auto systems = replica->reads().listSystems();
  ASSERT_TRUE(systems) << systems.error().message;
  ASSERT_EQ(systems->size(), 1u);
  EXPECT_EQ((*systems)[0].name, "first");
  EXPECT_EQ(replica->reads().capacity(defaultShapes())->freeGpus, 14);
  EXPECT_EQ(replica->reads().listHosts()->front().hostSide, "standby: the leader serves host sides");

  auto stream = replica->blocking().subscribe().value();
  compose("second", 4);
  EXPECT_EQ(replica->reads().listSystems()->size(), 1u) << "not refreshed yet";
  ASSERT_TRUE(replica->refreshReplica());
  EXPECT_EQ(replica->reads().listSystems()->size(), 2u);
  EXPECT_EQ(replica->reads().capacity(defaultShapes())->freeGpus, 10);
  auto second = replica->reads().getSystem("second");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->bindings.size(), 4u);
  // The leader's events since the standby loaded reach its Watch streams, once and in order.
  std::vector<std::string> seen;
  while (auto e = stream->tryNext()) seen.push_back(e->type);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front(), "operation.accepted");
  EXPECT_EQ(seen.back(), "operation.succeeded");
  ASSERT_TRUE(replica->refreshReplica());
  EXPECT_FALSE(stream->tryNext().has_value()) << "a refresh with nothing new publishes nothing";
  EXPECT_EQ(standbyFabric_->callCount(), 0u) << "a standby never calls the switch";
}

TEST_F(EngineReplicaTest, AStandbyRefusesChangesNamingTheLeader) {
  start();
  auto replica = standby();
  ComposeRequest r{"nope", {}, {}};
  r.placement.gpuCount = 1;
  auto refused = replica->blocking().compose(Caller::local(), r);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kUnavailable);
  EXPECT_NE(refused.error().message.find("no yardd leads"), std::string::npos) << refused.error().message;
  replica->setStandbyLeader("10.0.0.21:7390");
  EXPECT_EQ(replica->standbyLeader(), "10.0.0.21:7390");
  refused = replica->blocking().compose(Caller::local(), r);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("send changes to the leader at 10.0.0.21:7390"), std::string::npos) << refused.error().message;
  r.requestId = "retry-1";
  EXPECT_EQ(replica->blocking().compose(Caller::local(), r).error().code, Code::kUnavailable) << "with a request id too";
  EXPECT_EQ(replica->blocking().decompose(Caller::local(), "nope").error().code, Code::kUnavailable);
  EXPECT_TRUE(replica->blocking().plan(r.placement)) << "plans are reads";
  EXPECT_TRUE(engine_->history().listAudit({})->empty()) << "a standby's refusals are not written to the leader's audit trail";
  EXPECT_TRUE(engine_->reads().listSystems()->empty());
}

TEST_F(EngineReplicaTest, WaitOperationOnAStandbyEndsWhenARefreshFindsTheOperationEnded) {
  testing::GatedDriver gated(*fabric_);
  start(&gated);
  gated.closeBeforeBind(0);
  ComposeRequest r{"held", {}, {}};
  r.placement.gpuCount = 2;
  auto accepted = engine_->blocking().compose(Caller::local(), r);
  ASSERT_TRUE(accepted) << accepted.error().message;
  gated.waitUntilHeld();

  auto replica = standby();
  std::promise<Result<Operation>> waited;
  replica->waitOperation(accepted->id, std::chrono::milliseconds(60'000), [&](Result<Operation> op) { waited.set_value(std::move(op)); });
  auto answer = waited.get_future();
  ASSERT_TRUE(replica->refreshReplica());
  EXPECT_EQ(answer.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout) << "still running on the leader";

  gated.open();
  ASSERT_TRUE(engine_->waitOperation(accepted->id, 10s)->finished());
  ASSERT_TRUE(replica->refreshReplica());
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto op = answer.get();
  ASSERT_TRUE(op) << op.error().message;
  EXPECT_EQ(op->state, OperationState::kSucceeded);
}

// An operation the leader started after the standby's last refresh: WaitOperation on the standby waits for
// it (it does not answer "running" at once), and a standby that stops answers such waits kAborted.
TEST_F(EngineReplicaTest, AStandbyWaitsForAnOperationItOnlyReadInTheStore) {
  testing::GatedDriver gated(*fabric_);
  start(&gated);
  auto replica = standby();
  gated.closeBeforeBind(0);
  ComposeRequest r{"late", {}, {}};
  r.placement.gpuCount = 1;
  auto accepted = engine_->blocking().compose(Caller::local(), r);
  ASSERT_TRUE(accepted);
  gated.waitUntilHeld();
  std::promise<Result<Operation>> waited;
  replica->waitOperation(accepted->id, std::chrono::milliseconds(60'000), [&](Result<Operation> op) { waited.set_value(std::move(op)); });
  auto answer = waited.get_future();
  EXPECT_EQ(answer.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  replica->stop(Duration::zero());
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto op = answer.get();
  ASSERT_FALSE(op);
  EXPECT_EQ(op.error().code, Code::kAborted);
  gated.open();
  ASSERT_TRUE(engine_->waitOperation(accepted->id, 10s)->finished());
}

// The part alone (standby_replica.h): what a refresh reads from the leader's store.
TEST_F(EngineReplicaTest, ARefreshReadsTheInventoryOnlyWhenRewrittenTheEventsAfterTheLastAndTheWaitedOperationsThatEnded) {
  start();
  const Operation first = compose("first", 2);
  auto s = SqliteStore::open(dir_ / "yard.db");
  ASSERT_TRUE(s) << s.error().message;
  RevisionedStore store(**s);  // the inventory at revision 7

  // Asked after the load: a wait that began while the store was read is answered by this refresh, not the next.
  int loadsWhenAsked = -1;
  const auto waited = [&]() -> Result<std::vector<OperationId>> {
    loadsWhenAsked = store.wholeLoads + store.stateLoads;
    return std::vector<OperationId>{first.id, "op-999999"};
  };
  auto same = StandbyReplica::read(store, 0, 7, waited);
  ASSERT_TRUE(same) << same.error().message;
  EXPECT_EQ(loadsWhenAsked, store.wholeLoads + store.stateLoads) << "who waits is asked once the store is loaded";
  EXPECT_GT(loadsWhenAsked, 0);
  EXPECT_TRUE(same->sameInventory);
  EXPECT_FALSE(same->snapshot.inventory) << "not read again";
  EXPECT_EQ(store.wholeLoads, 0);
  ASSERT_EQ(same->ended.size(), 1u) << "the one that ended; an id the store does not know is not one";
  EXPECT_EQ(same->ended[0].id, first.id);
  ASSERT_FALSE(same->events.empty());
  EXPECT_EQ(same->events.front().sequence, 1u);

  const auto noneWaited = []() -> Result<std::vector<OperationId>> { return std::vector<OperationId>{}; };
  auto rewritten = StandbyReplica::read(store, same->events.back().sequence, 6, noneWaited);
  ASSERT_TRUE(rewritten) << rewritten.error().message;
  EXPECT_FALSE(rewritten->sameInventory);
  ASSERT_TRUE(rewritten->snapshot.inventory);
  EXPECT_EQ(rewritten->inventoryRevision, 7);
  EXPECT_TRUE(rewritten->events.empty()) << "nothing after the last one published";

  auto plain = StandbyReplica::read(**s, 0, 0, noneWaited);  // a store that keeps no revision: the inventory every time
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->sameInventory);
  EXPECT_TRUE(plain->snapshot.inventory);
}

TEST(StandbyReplica, ShowsTheQueueInTheLeadersOrderByClassThenAgeAndNamesTheLeaderOnlyOnceItIsAStandby) {
  auto queued = [](std::string id, int priority, Timestamp at) {
    Operation op{.id = std::move(id)};
    op.queued = QueuedRequest{};
    op.queued->priority = priority;
    op.queued->enqueuedAt = at;
    return op;
  };
  const Operation spotOld = queued("op-1", 0, 10), batchNew = queued("op-2", 100, 30), batchOld = queued("op-3", 100, 20),
                  batchTie = queued("op-0", 100, 30);
  EXPECT_EQ(StandbyReplica::leaderOrder({&spotOld, &batchNew, &batchOld, &batchTie}),
            (std::vector<OperationId>{"op-3", "op-0", "op-2", "op-1"}));

  StandbyReplica replica;
  replica.setLeader("10.0.0.1:50051");
  EXPECT_EQ(replica.leader(), "") << "not a standby yet";
  replica.begin(7);
  EXPECT_TRUE(replica.on());
  EXPECT_EQ(replica.leader(), "10.0.0.1:50051");
  EXPECT_EQ(replica.builtFrom(), 7);
}

}  // namespace
}  // namespace switchyard
