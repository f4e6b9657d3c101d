#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "fabric/topology_generator.h"
#include "inventory/migrations.h"
#include "inventory/sqlite_store.h"
#include "tests/support/temp_dir.h"

namespace switchyard {
namespace {

using testing::TempDir;

// Writes as a freshly claimed writer (fencing itself is the store contract's subject).
Result<void> writeAsNewWriter(Store& store, std::span<const StoreWrite> batch) {
  SY_ASSIGN(WriterEpoch epoch, store.claimWriter());
  return store.write(batch, epoch);
}

System sampleSystem() {
  System s;
  s.id = "sys-000007";
  s.name = "train";
  s.hostId = "host0";
  s.bindings = {{"sw0-gpu0", "sw0-usp0"}, {"sw0-gpu1", "sw0-usp0"}};
  s.labels = {{"team", "ml"}};
  s.gpuInstances = {{"sw0-gpu1", MigProfile::k3g, 4}, {"sw0-gpu1", MigProfile::k1g, 0}};
  s.state = SystemState::kComposed;
  s.createdAt = 11;
  s.updatedAt = 12;
  return s;
}

Operation sampleOperation() {
  Operation op;
  op.id = "op-000042";
  op.kind = OperationKind::kCompose;
  op.systemId = "sys-000007";
  op.hostId = "host0";
  op.state = OperationState::kRunning;
  op.steps = {{"reserve", {}, StepState::kDone},
              {"bind", {{"sw0-gpu0", "sw0-usp0"}, {"sw0-gpu2", "sw0-usp0"}}, StepState::kDone, false, 1},
              {"bind", {{"sw0-gpu1", "sw0-usp0"}}},
              {"commit"}};
  op.gpuInstances = {{"sw0-gpu1", MigProfile::k7g, 0}};
  return op;
}

TEST(SqliteStore, MigratesANewDatabaseToTheNewestVersion) {
  TempDir dir;
  auto store = SqliteStore::open(dir / "yard.db");
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_EQ(*(*store)->schemaVersion(), schemaMigrations().back().version);
  auto snap = (*store)->load();
  ASSERT_TRUE(snap);
  EXPECT_FALSE(snap->inventory);
  EXPECT_TRUE(snap->systems.empty());
}

// A database written before fabric domains (version 10) opens with every switch in the default domain.
TEST(SqliteStore, UpgradesADatabaseFromBeforeFabricDomains) {
  TempDir dir;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "yard.db").c_str(), &db), SQLITE_OK);
    for (const auto& m : schemaMigrations()) {
      if (m.version > 10) break;
      ASSERT_EQ(sqlite3_exec(db, std::string(m.sql).c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << m.version;
    }
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 10; INSERT INTO switches VALUES ('sw0', 'pcie', 'PEX89144')", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = SqliteStore::open(dir / "yard.db");
  ASSERT_TRUE(store) << store.error().message;
  EXPECT_EQ(*(*store)->schemaVersion(), schemaMigrations().back().version);
  auto snap = (*store)->load();
  ASSERT_TRUE(snap) << snap.error().message;
  ASSERT_TRUE(snap->inventory);
  ASSERT_EQ(snap->inventory->switches.size(), 1u);
  EXPECT_EQ(snap->inventory->switches[0].domain, kDefaultDomain);
}

TEST(SqliteStore, ReopeningIsANoOpAndKeepsData) {
  TempDir dir;
  {
    auto store = SqliteStore::open(dir / "yard.db");
    ASSERT_TRUE(store);
    StoreWrite w = PutSystem{sampleSystem()};
    ASSERT_TRUE(writeAsNewWriter(*(*store), {&w, 1}));
  }
  auto store = SqliteStore::open(dir / "yard.db");
  ASSERT_TRUE(store);
  auto snap = (*store)->load();
  ASSERT_TRUE(snap);
  ASSERT_EQ(snap->systems.size(), 1u);
  EXPECT_EQ(snap->lastSystemNumber, 7u);
}

TEST(SqliteStore, RefusesADatabaseFromANewerSwitchyard) {
  TempDir dir;
  {
    sqlite3* db = nullptr;
    sqlite3_open((dir / "yard.db").c_str(), &db);
    sqlite3_exec(db, "PRAGMA user_version = 999", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  auto store = SqliteStore::open(dir / "yard.db");
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, Code::kFailedPrecondition);
  EXPECT_NE(store.error().message.find("newer than this yardd"), std::string::npos) << store.error().message;
}

TEST(SqliteStore, RefusesADamagedDatabaseAtOpenNamingTheDamage) {
  TempDir dir;
  {
    auto store = SqliteStore::open(dir / "yard.db");
    ASSERT_TRUE(store);
    std::vector<StoreWrite> writes;
    for (std::uint64_t i = 1; i <= 3000; ++i)
      writes.emplace_back(PutEvent{Event{i, 0, "device.bound", fmt::format("sw0-gpu{}", i), std::string(40, 'x'), "yardd", ""}});
    ASSERT_TRUE(writeAsNewWriter(*(*store), writes));
  }
  // Scribble over the middle of the file (a table page, not the header), as a failing disk would.
  const auto size = std::filesystem::file_size(dir / "yard.db");
  ASSERT_GT(size, 64u * 1024);
  {
    std::fstream f(dir / "yard.db", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>((size / 2 / 4096) * 4096 + 16));
    const std::string junk(1000, '\xAB');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto store = SqliteStore::open(dir / "yard.db");
  ASSERT_FALSE(store) << "a damaged database is refused when it is opened";
  EXPECT_EQ(store.error().code, Code::kFailedPrecondition);
  EXPECT_NE(store.error().message.find("damaged"), std::string::npos) << store.error().message;
  EXPECT_NE(store.error().message.find("yard.db"), std::string::npos) << store.error().message;
}

// Issue "No request can stop yardd", F11: an index that disagrees with its table passed the start-up check
// (quick_check compares no index with its table) and yardd then exited 75 on its first write, a restart loop
// under systemd. It is refused at start, with the command that repairs it.
TEST(SqliteStore, AnIndexThatDisagreesWithItsTableIsRefusedAtStartWithTheRepairCommand) {
  TempDir dir;
  {
    auto store = SqliteStore::open(dir / "yard.db");
    ASSERT_TRUE(store);
    std::vector<StoreWrite> writes;
    for (std::uint64_t i = 1; i <= 3000; ++i) {
      AuditRecord r;
      r.sequence = i;
      r.caller = Caller::local();
      r.action = "compose";
      r.tenant = fmt::format("tenant-{:06}", i);
      r.result = "accepted";
      writes.emplace_back(PutAudit{r});
    }
    ASSERT_TRUE(writeAsNewWriter(*(*store), writes));
  }
  // In the page of the tenant index (an index leaf, page type 0x0a) that holds tenant-001500, make the entry
  // say tenant-001499: every page stays well formed, the index no longer matches the row.
  std::string bytes;
  {
    std::ifstream in(dir / "yard.db", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bool patched = false;
  for (auto at = bytes.find("tenant-001500"); at != std::string::npos; at = bytes.find("tenant-001500", at + 1)) {
    const std::size_t page = at / 4096;
    if (static_cast<unsigned char>(bytes[page * 4096 + (page == 0 ? 100 : 0)]) != 0x0a) continue;
    bytes.replace(at, 13, "tenant-001499");
    patched = true;
  }
  ASSERT_TRUE(patched) << "no index page holds the tenant (the page size or the schema changed)";
  std::ofstream(dir / "yard.db", std::ios::binary | std::ios::trunc) << bytes;
  auto store = SqliteStore::open(dir / "yard.db");
  ASSERT_FALSE(store) << "an index that disagrees with its table is refused when the database is opened";
  EXPECT_EQ(store.error().code, Code::kFailedPrecondition);
  EXPECT_NE(store.error().message.find("missing from index audit_by_tenant"), std::string::npos) << store.error().message;
  EXPECT_NE(store.error().message.find("sqlite3 " + (dir / "yard.db").string() + " REINDEX"), std::string::npos) << store.error().message;
}

// F18: the database was 0644; it is yardd's user's alone, and an older file is tightened when opened.
TEST(SqliteStore, TheDatabaseIsReadableByItsOwnerOnly) {
  TempDir dir;
  { ASSERT_TRUE(SqliteStore::open(dir / "yard.db")); }
  std::filesystem::permissions(dir / "yard.db", std::filesystem::perms::others_read | std::filesystem::perms::group_read,
                               std::filesystem::perm_options::add);
  auto store = SqliteStore::open(dir / "yard.db");
  ASSERT_TRUE(store) << store.error().message;
  const auto mode = std::filesystem::status(dir / "yard.db").permissions();
  EXPECT_EQ(mode & (std::filesystem::perms::group_all | std::filesystem::perms::others_all), std::filesystem::perms::none);
}

TEST(SqliteStore, RoundTripsEverything) {
  TempDir dir;
  auto store = std::move(*SqliteStore::open(dir / "yard.db"));
  const Topology topology = defaultTopology();
  std::vector<StoreWrite> batch{PutInventory{topology}, PutSystem{sampleSystem()}, PutOperation{sampleOperation()},
                                PutAssignment{{"sw0-gpu0", DeviceAllocation::kAllocated, "sys-000007"}},
                                PutAssignment{{"sw1-gpu3", DeviceAllocation::kQuarantined, "bound outside"}},
                                PutEvent{{5, 99, "device.bound", "sw0-gpu0", "bound"}}};
  ASSERT_TRUE(writeAsNewWriter(*store, batch));
  auto snap = store->load();
  ASSERT_TRUE(snap) << snap.error().message;
  ASSERT_TRUE(snap->inventory);
  EXPECT_EQ(snap->inventory->devices.size(), topology.devices.size());
  EXPECT_EQ(snap->inventory->hosts[1].upstreamPorts[1].portId, topology.hosts[1].upstreamPorts[1].portId);
  ASSERT_EQ(snap->systems.size(), 1u);
  EXPECT_EQ(snap->systems[0].bindings, sampleSystem().bindings);
  EXPECT_EQ(snap->systems[0].labels.at("team"), "ml");
  EXPECT_EQ(snap->systems[0].gpuInstances, sampleSystem().gpuInstances);
  ASSERT_EQ(snap->unfinishedOperations.size(), 1u);
  const Operation& op = snap->unfinishedOperations[0];
  ASSERT_EQ(op.steps.size(), 4u);
  EXPECT_EQ(op.steps[1].state, StepState::kDone);
  EXPECT_EQ(op.steps[1].attempts, 1);
  EXPECT_EQ(op.steps[1].bindings, sampleOperation().steps[1].bindings) << "a step's bindings, in order";
  EXPECT_EQ(op.steps[2].bindings, sampleOperation().steps[2].bindings);
  EXPECT_TRUE(op.steps[3].bindings.empty());
  EXPECT_EQ(op.cursor(), 2u);
  EXPECT_EQ(op.gpuInstances, sampleOperation().gpuInstances);
  EXPECT_EQ(snap->assignments.size(), 2u);
  EXPECT_EQ(snap->lastEventSequence, 5u);
  EXPECT_EQ(snap->lastOperationNumber, 42u);
}

// Issue 27: a damaged labels column aborted yardd at start with an uncaught JSON parse_error.
TEST(SqliteStore, ADamagedLabelsColumnIsAnErrorNamingTheRow) {
  TempDir dir;
  {
    auto store = std::move(*SqliteStore::open(dir / "yard.db"));
    StoreWrite w = PutSystem{sampleSystem()};
    ASSERT_TRUE(writeAsNewWriter(*store, {&w, 1}));
  }
  sqlite3* db = nullptr;
  sqlite3_open((dir / "yard.db").c_str(), &db);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE systems SET labels = '{\"team\": '", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto store = std::move(*SqliteStore::open(dir / "yard.db"));
  auto snap = store->load();
  ASSERT_FALSE(snap);
  EXPECT_NE(snap.error().message.find("systems row sys-000007: column labels"), std::string::npos) << snap.error().message;
}

// Issue 27: bind return codes were ignored, so a parameter that did not bind ran as NULL.
TEST(SqliteDb, AParameterThatDoesNotBindFailsTheStatement) {
  TempDir dir;
  auto db = std::move(*SqliteDb::open(dir / "x.db", Durability::kNormal));
  auto st = std::move(*db->prepare("SELECT ?1"));
  st.bind(2, std::string_view("out of range"));
  auto row = st.step();
  ASSERT_FALSE(row);
  EXPECT_NE(row.error().message.find("cannot bind parameter 2"), std::string::npos) << row.error().message;
  st.reset();
  st.bind(1, std::int64_t{7});
  ASSERT_TRUE(*st.step()) << "a reset statement binds again";
  EXPECT_EQ(st.integer(0), 7);
}

TEST(SqliteStore, ABatchIsAllOrNothing) {
  TempDir dir;
  auto store = std::move(*SqliteStore::open(dir / "yard.db"));
  StoreWrite first = PutEvent{{1, 1, "a", "x", "first"}};
  ASSERT_TRUE(writeAsNewWriter(*store, {&first, 1}));
  // The second event reuses sequence 1: the whole batch, system included, must be rejected.
  std::vector<StoreWrite> batch{PutSystem{sampleSystem()}, PutEvent{{1, 2, "b", "y", "duplicate"}}};
  EXPECT_FALSE(writeAsNewWriter(*store, batch));
  auto snap = store->load();
  ASSERT_TRUE(snap);
  EXPECT_TRUE(snap->systems.empty());
  EXPECT_EQ(store->listEvents(0, 10)->size(), 1u);
}

// A system's child rows (devices, MIG instances, shares, what its host saw) are written only when they differ from
// what the writer last committed (inventory/system_rows_written.h): what a rolled-back write or another writer did
// must never be taken for stored.
TEST(SqliteStore, ASystemsRowsAreWrittenWheneverTheyDifferFromWhatIsStoredAfterARollbackOrAnotherWriterToo) {
  TempDir dir;
  auto store = std::move(*SqliteStore::open(dir / "yard.db"));
  auto stored = [&store]() -> System {
    auto snap = store->load();
    EXPECT_TRUE(snap && snap->systems.size() == 1);
    return snap && !snap->systems.empty() ? snap->systems.front() : System{};
  };
  System first = sampleSystem();
  StoreWrite w = PutSystem{first};
  auto epoch = store->claimWriter();
  ASSERT_TRUE(epoch);
  ASSERT_TRUE(store->write({&w, 1}, *epoch));

  System moved = first;
  moved.bindings = {{"sw0-gpu3", "sw0-usp0"}};
  moved.gpuInstances.clear();
  moved.hostDevices = {{"sw0-gpu3", "0000:41:00.0", "GPU-3"}};
  StoreWrite event = PutEvent{{1, 1, "a", "x", "first"}};
  ASSERT_TRUE(store->write({&event, 1}, *epoch));
  std::vector<StoreWrite> failing{PutSystem{moved}, PutEvent{{1, 2, "b", "y", "the same sequence again"}}};
  ASSERT_FALSE(store->write(failing, *epoch));
  EXPECT_EQ(stored().bindings, first.bindings) << "rolled back";
  w = PutSystem{moved};
  ASSERT_TRUE(store->write({&w, 1}, *epoch));
  EXPECT_EQ(stored().bindings, moved.bindings) << "the rows the rolled-back write had are written again";
  EXPECT_TRUE(stored().gpuInstances.empty());
  EXPECT_EQ(stored().hostDevices, moved.hostDevices);

  System composing = moved;  // only the row changes: the child rows stay as they are
  composing.state = SystemState::kDegraded;
  w = PutSystem{composing};
  ASSERT_TRUE(store->write({&w, 1}, *epoch));
  EXPECT_EQ(stored().state, SystemState::kDegraded);
  EXPECT_EQ(stored().bindings, moved.bindings);
  EXPECT_EQ(stored().hostDevices, moved.hostDevices);

  // Another writer changes the rows; this store, writer again, writes what it last wrote: it must reach the file.
  {
    auto other = std::move(*SqliteStore::open(dir / "yard.db"));
    w = PutSystem{first};
    ASSERT_TRUE(writeAsNewWriter(*other, {&w, 1}));
  }
  ASSERT_EQ(stored().bindings, first.bindings);
  w = PutSystem{composing};
  ASSERT_TRUE(writeAsNewWriter(*store, {&w, 1}));
  EXPECT_EQ(stored().bindings, moved.bindings);
  EXPECT_EQ(stored().gpuInstances, moved.gpuInstances);
}

// A whole step log written again replaces the step bindings stored before (an operation's first write has none).
TEST(SqliteStore, AWholeStepLogWrittenAgainReplacesTheBindingsStoredBefore) {
  TempDir dir;
  auto store = std::move(*SqliteStore::open(dir / "yard.db"));
  Operation op = sampleOperation();
  StoreWrite w = PutOperation{op};
  ASSERT_TRUE(writeAsNewWriter(*store, {&w, 1}));
  op.steps[1].bindings = {{"sw0-gpu5", "sw0-usp0"}};
  op.gpuInstances.clear();
  w = PutOperation{op};
  ASSERT_TRUE(writeAsNewWriter(*store, {&w, 1}));
  auto got = store->getOperation(op.id);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->steps[1].bindings, op.steps[1].bindings);
  EXPECT_TRUE((*got)->gpuInstances.empty());
  EXPECT_EQ((*got)->steps[2].bindings.size(), 1u);
}

TEST(SqliteStore, FinishedOperationsAreNotResumedButCanBeRead) {
  TempDir dir;
  auto store = std::move(*SqliteStore::open(dir / "yard.db"));
  Operation op = sampleOperation();
  op.state = OperationState::kSucceeded;
  StoreWrite w = PutOperation{op};
  ASSERT_TRUE(writeAsNewWriter(*store, {&w, 1}));
  EXPECT_TRUE(store->load()->unfinishedOperations.empty());
  auto got = store->getOperation(op.id);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->steps.size(), 4u);
  EXPECT_FALSE(*store->getOperation("op-nope"));
  EXPECT_EQ(store->listOperations(10)->size(), 1u);
}

TEST(SqliteStore, DecomposedSystemsAreHistoryNotLiveState) {
  TempDir dir;
  auto store = std::move(*SqliteStore::open(dir / "yard.db"));
  System s = sampleSystem();
  s.state = SystemState::kDecomposed;
  StoreWrite w = PutSystem{s};
  ASSERT_TRUE(writeAsNewWriter(*store, {&w, 1}));
  auto snap = store->load();
  EXPECT_TRUE(snap->systems.empty());
  EXPECT_EQ(snap->lastSystemNumber, 7u) << "ids are never reused";
}

TEST(SqliteStore, PrunesOnlyOldFinishedHistory) {
  TempDir dir;
  auto store = std::move(*SqliteStore::open(dir / "yard.db"));
  std::vector<StoreWrite> batch;
  for (std::uint64_t i = 1; i <= 50; ++i) batch.emplace_back(PutEvent{{i, 1, "t", "s", "m"}});
  for (int i = 1; i <= 10; ++i) {
    Operation op = sampleOperation();
    op.id = fmt::format("op-{:06}", i);
    op.state = i == 2 ? OperationState::kRunning : OperationState::kSucceeded;
    batch.emplace_back(PutOperation{op});
    System s = sampleSystem();
    s.id = fmt::format("sys-{:06}", i);
    s.state = i == 3 ? SystemState::kComposed : SystemState::kDecomposed;
    batch.emplace_back(PutSystem{s});
  }
  ASSERT_TRUE(writeAsNewWriter(*store, batch));
  auto report = store->prune({.events = 20, .finishedOperations = 4, .maxRowsPerRun = 1000}, *store->claimWriter());
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->events, 30u);
  EXPECT_EQ(report->operations, 5u) << "ops 1 and 3..6 go; op 2 is still running";
  EXPECT_EQ(report->systems, 5u) << "systems 1, 2 and 4..6 go; system 3 is live";
  auto events = store->listEvents(0, 1000);
  ASSERT_EQ(events->size(), 20u);
  EXPECT_EQ(events->front().sequence, 31u);
  auto snap = store->load();
  EXPECT_EQ(snap->unfinishedOperations.size(), 1u);
  EXPECT_EQ(snap->systems.size(), 1u);
  EXPECT_EQ(snap->lastEventSequence, 50u);
  EXPECT_EQ(snap->lastOperationNumber, 10u) << "ids are never reused after pruning";
  EXPECT_EQ(snap->lastSystemNumber, 10u);
  EXPECT_FALSE(*store->getOperation("op-000001"));
  EXPECT_TRUE(*store->getOperation("op-000007"));
  auto bounded = store->prune({.events = 1, .finishedOperations = 1, .maxRowsPerRun = 3}, *store->claimWriter());
  EXPECT_EQ(bounded->events, 3u) << "one run deletes at most maxRowsPerRun rows of each kind";
}

TEST(SqliteStore, KeepsTheNewestRequestShapesOldestFirst) {
  TempDir dir;
  auto store = std::move(*SqliteStore::open(dir / "yard.db"));
  std::vector<StoreWrite> batch;
  const int n = static_cast<int>(kDemandWindow) + 3;
  for (int i = 1; i <= n; ++i) batch.emplace_back(PutDemand{{i, i % 2 == 0, i == n ? "H100-SXM5-80GB" : ""}});
  ASSERT_TRUE(writeAsNewWriter(*store, batch));
  auto before = store->load();
  ASSERT_TRUE(before) << before.error().message;
  ASSERT_EQ(before->recentDemand.size(), kDemandWindow) << "no more than the learner's window, even before a prune";
  EXPECT_EQ(before->recentDemand.front().gpus, 4);
  auto report = store->prune({.demand = 4}, *store->claimWriter());
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->demand, static_cast<std::size_t>(n - 4));
  auto snap = store->load();
  ASSERT_TRUE(snap) << snap.error().message;
  ASSERT_EQ(snap->recentDemand.size(), 4u);
  EXPECT_EQ(snap->recentDemand.front(), (DemandShape{n - 3, (n - 3) % 2 == 0, ""}));
  EXPECT_EQ(snap->recentDemand.back(), (DemandShape{n, n % 2 == 0, "H100-SXM5-80GB"}));
}

}  // namespace
}  // namespace switchyard
