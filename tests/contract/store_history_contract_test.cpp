// The store contract, continued: history as yardd reads it (operation lists and filters, events, request ids, the
// audit trail, systems' names, idle stretches), for every backend that store_contract_test.cpp instantiates.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "tests/contract/store_contract.h"

namespace switchyard::store_contract {
namespace {

TEST_P(StoreContract, ListsOperationsNewestFirstAndEventsInOrder) {
  auto store = open();
  ASSERT_TRUE(store->write(finishedHistory(3, false), *store->claimWriter()));
  auto ops = store->listOperations(2);
  ASSERT_TRUE(ops);
  ASSERT_EQ(ops->size(), 2u);
  EXPECT_EQ((*ops)[0].id, "op-000003");
  EXPECT_EQ((*ops)[0].steps.size(), 3u);
  auto events = store->listEvents(1, 10);
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].sequence, 2u);
  EXPECT_FALSE(*store->getOperation("op-999999"));
}

// The history reads run on any thread while the writer writes (the engine serves them off its control
// thread): each read sees whole commits only, and what it sees only grows.
TEST_P(StoreContract, HistoryIsReadOnOtherThreadsWhileTheWriterWrites) {
  auto store = open();
  const WriterEpoch epoch = *store->claimWriter();
  constexpr int kWrites = 150;
  std::atomic<bool> done{false};
  std::vector<std::string> problems;
  std::vector<std::thread> readers;
  std::mutex problemsMutex;
  for (int r = 0; r < 2; ++r)
    readers.emplace_back([&] {
      std::size_t lastEvents = 0;
      while (!done.load()) {
        auto ops = store->listOperations(5);
        auto events = store->listEvents(0, 10'000);
        auto audit = store->listAudit(AuditQuery{});
        std::lock_guard lock(problemsMutex);
        if (!ops || !events || !audit) {
          problems.push_back(!ops ? ops.error().message : !events ? events.error().message : audit.error().message);
          return;
        }
        for (const auto& op : *ops)
          if (op.steps.size() != 3u) problems.push_back(fmt::format("{} read with {} steps", op.id, op.steps.size()));
        if (events->size() < lastEvents) problems.push_back("the event log shrank");
        lastEvents = events->size();
      }
    });
  for (int i = 1; i <= kWrites; ++i) {
    std::vector<StoreWrite> batch{PutOperation{operation(i, OperationState::kSucceeded)},
                                  PutEvent{{static_cast<std::uint64_t>(i), i, "t", "s", fmt::format("m{}", i)}}};
    ASSERT_TRUE(store->write(batch, epoch));
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(store->listEvents(0, 10'000)->size(), static_cast<std::size_t>(kWrites));
}

TEST_P(StoreContract, EventsKeepTheirTenantAndSystem) {
  auto store = open();
  Event e{1, 7, "device.bound", "sw0-gpu0", "bound", "alice", "team-a", "sys-000004"};
  StoreWrite w = PutEvent{e};
  ASSERT_TRUE(store->write({&w, 1}, *store->claimWriter()));
  auto events = store->listEvents(0, 10);
  ASSERT_TRUE(events) << events.error().message;
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].tenant, "team-a");
  EXPECT_EQ((*events)[0].systemId, "sys-000004");
  EXPECT_EQ((*events)[0].actor, "alice");
}

TEST_P(StoreContract, FiltersOperationsBySystemKindStateAndTenantBeforeTheLimit) {
  auto store = open();
  std::vector<StoreWrite> batch;
  for (int i = 1; i <= 6; ++i) {
    Operation op = operation(i, i % 2 == 0 ? OperationState::kFailed : OperationState::kSucceeded);
    op.systemId = i <= 3 ? "sys-000001" : "sys-000002";
    op.kind = i == 3 ? OperationKind::kDecompose : OperationKind::kCompose;
    op.tenant = i == 6 ? "team-b" : "team-a";
    batch.push_back(PutOperation{op});
  }
  ASSERT_TRUE(store->write(batch, *store->claimWriter()));
  auto ids = [&](OperationQuery q) {
    std::vector<std::string> out;
    auto ops = store->queryOperations(q);
    EXPECT_TRUE(ops) << ops.error().message;
    if (ops)
      for (const auto& op : *ops) out.push_back(op.id);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(ids({.limit = 10, .systemId = "sys-000001"}), (V{"op-000003", "op-000002", "op-000001"}));
  EXPECT_EQ(ids({.limit = 10, .kind = OperationKind::kDecompose}), (V{"op-000003"}));
  EXPECT_EQ(ids({.limit = 2, .state = OperationState::kFailed}), (V{"op-000006", "op-000004"})) << "the limit counts matches only";
  EXPECT_EQ(ids({.limit = 10, .systemId = "sys-000002", .state = OperationState::kSucceeded}), (V{"op-000005"}));
  EXPECT_EQ(ids({.limit = 10, .tenant = "team-b"}), (V{"op-000006"}));
  EXPECT_EQ(ids({.limit = 10, .systemId = "sys-000009"}), V{});
  EXPECT_EQ(ids({.limit = 3}).size(), 3u);
}

TEST_P(StoreContract, FindsTheOperationAClientsRequestIdStartedAndKeepsTheKeyUnique) {
  auto store = open();
  const auto epoch = *store->claimWriter();
  Operation keyed = operation(1, OperationState::kRunning);
  keyed.requestId = "k8s-uid-1";
  Operation plain = operation(2, OperationState::kRunning);  // no key: many operations have none
  Operation plainToo = operation(3, OperationState::kRunning);
  ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutOperation{keyed}, PutOperation{plain}, PutOperation{plainToo}}, epoch));
  keyed.state = OperationState::kSucceeded;
  ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutOperation{keyed, false, {}}}, epoch));
  store.reset();
  store = open();
  auto found = store->findOperationByRequest("k8s-uid-1");
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->id, "op-000001");
  EXPECT_EQ((*found)->requestId, "k8s-uid-1");
  EXPECT_EQ((*found)->state, OperationState::kSucceeded);
  EXPECT_EQ((*found)->steps.size(), 3u);
  EXPECT_FALSE(*store->findOperationByRequest("k8s-uid-2"));
  EXPECT_FALSE(*store->findOperationByRequest("")) << "the empty key names no operation";
  Operation again = operation(4, OperationState::kRunning);
  again.requestId = "k8s-uid-1";
  EXPECT_FALSE(store->write(std::vector<StoreWrite>{PutOperation{again}}, *store->claimWriter())) << "a key starts one operation only";
}

TEST_P(StoreContract, TheAuditTrailIsFilteredPagedAndKeepsOutcomes) {
  AuditRecord accepted{1, 100, {"alice", Role::kTenant, "team-a"}, "compose", "a1", "team-a", "accepted", "", "op-000001", "", 0};
  AuditRecord refused{2, 200, {"bob", Role::kTenant, "team-b"}, "decompose", "a1", "", "NOT_FOUND", "no system 'a1'", "", "", 0};
  AuditRecord byAdmin{3, 300, {"root", Role::kAdmin, ""}, "attach", "a1", "team-a", "accepted", "", "op-000002", "", 0};
  {
    auto store = open();
    const WriterEpoch epoch = *store->claimWriter();
    ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutAudit{accepted}, PutAudit{refused}, PutAudit{byAdmin}}, epoch));
    ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutAuditOutcome{"op-000001", "succeeded", 150}}, epoch));
  }
  auto store = open();
  const WriterEpoch epoch = *store->claimWriter();
  EXPECT_EQ(store->load()->lastAuditSequence, 3u);
  auto all = store->listAudit({});
  ASSERT_TRUE(all) << all.error().message;
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].sequence, 3u);
  EXPECT_EQ((*all)[2].caller, accepted.caller);
  EXPECT_EQ((*all)[2].outcome, "succeeded");
  EXPECT_EQ((*all)[2].finishedAt, 150);
  EXPECT_EQ((*all)[1].message, "no system 'a1'");
  EXPECT_EQ(store->listAudit({.tenant = "team-a"})->size(), 2u);
  EXPECT_EQ(store->listAudit({.tenant = "team-b"})->size(), 1u) << "a tenant's identities' own requests count as the tenant's";
  EXPECT_EQ(store->listAudit({.identity = "root"})->size(), 1u);
  EXPECT_EQ(store->listAudit({.since = 200, .until = 300})->size(), 1u);
  EXPECT_EQ(store->listAudit({.beforeSequence = 2})->size(), 1u);
  EXPECT_EQ(store->listAudit({.limit = 1})->size(), 1u);
  auto pruned = store->prune({.audit = 1}, epoch);
  ASSERT_TRUE(pruned);
  EXPECT_EQ(pruned->audit, 2u);
  EXPECT_EQ(store->listAudit({})->front().sequence, 3u);
}

// Usage names the systems it charges, decomposed ones included, and groups them by their labels (issue 63, item 4).
TEST_P(StoreContract, NamesLiveAndEndedSystemsByIdWithTheirLabelsAndLeavesOutUnknownOnes) {
  auto store = open();
  const WriterEpoch epoch = *store->claimWriter();
  auto batch = finishedHistory(2, true);  // sys-1 and sys-2, decomposed
  System labelled = system(1, SystemState::kDecomposed);
  labelled.labels = {{"team", "vision"}, {"spot", ""}};
  batch.push_back(PutSystem{labelled});
  batch.push_back(PutSystem{system(3)});  // live
  ASSERT_TRUE(store->write(batch, epoch));
  auto identities = store->systemIdentities({"sys-000001", "sys-000003", "sys-000009"});
  ASSERT_TRUE(identities) << identities.error().message;
  EXPECT_EQ(*identities, (std::map<SystemId, SystemIdentity>{{"sys-000001", {"s1", {{"spot", ""}, {"team", "vision"}}}}, {"sys-000003", {"s3", {}}}}));
  EXPECT_TRUE(store->systemIdentities({})->empty());
}

// Idle stretches (usage accounting's idle GPU-hours): a later write of the same stretch (device and start)
// replaces the earlier; a listing returns those that overlap the window, by start; pruning drops those that
// ended before the oldest operation kept, as usage reads no further back.
TEST_P(StoreContract, IdleStretchesAreExtendedByTheirStartListedByWindowAndPrunedWithTheLog) {
  auto store = open();
  const WriterEpoch epoch = *store->claimWriter();
  ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutIdleStretch{{"sw0-gpu0", "sys-000001", "team-a", 100, 200}},
                                                   PutIdleStretch{{"sw0-gpu1", "sys-000001", "team-a", 150, 150}}},
                           epoch));
  ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutIdleStretch{{"sw0-gpu1", "sys-000001", "team-a", 150, 400}}}, epoch));
  ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutIdleStretch{{"sw0-gpu0", "sys-000002", "team-b", 500, 900}}}, epoch));
  auto all = store->listIdleStretches(0, 1000);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(*all, (std::vector<IdleStretch>{{"sw0-gpu0", "sys-000001", "team-a", 100, 200},
                                            {"sw0-gpu1", "sys-000001", "team-a", 150, 400},
                                            {"sw0-gpu0", "sys-000002", "team-b", 500, 900}}));
  auto window = *store->listIdleStretches(300, 600);
  ASSERT_EQ(window.size(), 2u) << "those overlapping [300, 600)";
  EXPECT_EQ(window[0].to, 400);
  EXPECT_EQ(window[1].from, 500);

  std::vector<StoreWrite> log;
  for (int i = 1; i <= 3; ++i) {
    Operation op = operation(i, OperationState::kSucceeded);
    op.createdAt = op.updatedAt = i * 150;
    log.push_back(PutOperation{op});
  }
  ASSERT_TRUE(store->write(log, epoch));
  auto pruned = store->prune({.finishedOperations = 2}, epoch);  // op-1 goes; op-2, created at 300, is the oldest kept
  ASSERT_TRUE(pruned) << pruned.error().message;
  EXPECT_EQ(pruned->operations, 1u);
  EXPECT_EQ(pruned->idleStretches, 1u) << "only the stretch that ended at 200";
  EXPECT_EQ(store->listIdleStretches(0, 1000)->size(), 2u);
}

}  // namespace
}  // namespace switchyard::store_contract
