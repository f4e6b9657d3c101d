// The contract every Store backend must honour (see inventory/store.h). A new backend (etcd) joins by
// adding a factory to INSTANTIATE_TEST_SUITE_P below; the factory may open the same store twice, as two
// yardd processes would. The fixture: store_contract.h; the history reads: store_history_contract_test.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <tuple>

#include "fabric/topology_generator.h"
#include "inventory/etcd/etcd_store.h"
#include "inventory/sqlite_store.h"
#include "tests/support/daemon_process.h"
#include "tests/support/etcd_cluster.h"
#include "tests/support/temp_dir.h"
#include "tests/contract/store_contract.h"

namespace switchyard::store_contract {
namespace {

TEST_P(StoreContract, ANewStoreIsEmpty) {
  auto store = open();
  auto snap = store->load();
  ASSERT_TRUE(snap) << snap.error().message;
  EXPECT_FALSE(snap->inventory);
  EXPECT_TRUE(snap->systems.empty());
  EXPECT_TRUE(snap->unfinishedOperations.empty());
  EXPECT_EQ(snap->lastOperationNumber, 0u);
}

TEST_P(StoreContract, WritesAreReadBackWholeAfterReopening) {
  Topology inventory = embeddedTopology();  // GPUs, NICs with their speeds, drives, pooled memory, and an FPGA:
  inventory.ports.push_back({"sw0-dsp-fpga0", "sw0", PortKind::kDownstream, 5, 16, {}});
  inventory.devices.push_back({.id = "sw0-fpga0", .kind = DeviceKind::kOther, .portId = "sw0-dsp-fpga0", .model = "Alveo U55C", .deviceClass = "fpga"});
  for (auto& sw : inventory.switches) sw.domain = "west";  // switches keep their fabric domain
  {
    auto store = open();
    const WriterEpoch epoch = *store->claimWriter();
    std::vector<StoreWrite> batch{PutInventory{inventory}, PutSystem{system(1)}, PutOperation{operation(3, OperationState::kRunning)},
                                  PutAssignment{{"sw0-gpu0", DeviceAllocation::kReserved, "op-000003"}},
                                  PutEvent{{1, 5, "operation.accepted", "op-000003", "accepted", "alice"}}};
    ASSERT_TRUE(store->write(batch, epoch));
  }
  auto store = open();
  auto snap = store->load();
  ASSERT_TRUE(snap) << snap.error().message;
  ASSERT_TRUE(snap->inventory);
  ASSERT_EQ(snap->inventory->switches.size(), 2u);
  EXPECT_EQ(snap->inventory->switches[0].domain, "west");
  EXPECT_EQ(snap->inventory->switches[1].domain, "west");
  ASSERT_EQ(snap->inventory->devices.size(), inventory.devices.size());
  for (std::size_t i = 0; i < inventory.devices.size(); ++i) {
    const Device& want = inventory.devices[i];
    const Device& got = snap->inventory->devices[i];
    EXPECT_EQ(std::tie(got.id, got.kind, got.portId, got.model, got.memoryGiB, got.serial, got.health, got.migCapable, got.speedGbps, got.deviceClass),
              std::tie(want.id, want.kind, want.portId, want.model, want.memoryGiB, want.serial, want.health, want.migCapable, want.speedGbps,
                       want.deviceClass))
        << want.id;
  }
  const auto nic = std::find_if(snap->inventory->devices.begin(), snap->inventory->devices.end(), [](const Device& d) { return d.id == "sw0-nic2"; });
  ASSERT_NE(nic, snap->inventory->devices.end());
  EXPECT_EQ(nic->speedGbps, 200);
  ASSERT_EQ(snap->systems.size(), 1u);
  ASSERT_EQ(snap->unfinishedOperations.size(), 1u);
  EXPECT_EQ(snap->unfinishedOperations[0].steps[1].bindings, operation(3, OperationState::kRunning).steps[1].bindings);
  EXPECT_EQ(snap->unfinishedOperations[0].steps[1].kind, "bind");
  EXPECT_EQ(snap->unfinishedOperations[0].gpuShares, operation(3, OperationState::kRunning).gpuShares);
  EXPECT_EQ(snap->unfinishedOperations[0].requestedBy, operation(3, OperationState::kRunning).requestedBy);
  EXPECT_EQ(snap->systems[0].gpuShares, system(1).gpuShares);
  EXPECT_EQ(snap->assignments.size(), 1u);
  ASSERT_EQ(store->listEvents(0, 10)->size(), 1u);
  EXPECT_EQ(store->listEvents(0, 10)->front().actor, "alice");
}

TEST_P(StoreContract, ASystemWrittenAgainKeepsWhatItsComposeAskedForAsLastWritten) {
  QueuedRequest first;
  first.gpuCount = 2;
  first.host = "host1";
  QueuedRequest second = first;
  second.minMemoryGiB = 40;  // a store that keeps the last text it wrote must see the change
  System s = system(1);
  auto store = open();
  const WriterEpoch epoch = *store->claimWriter();
  const auto askedAfter = [&](const std::optional<QueuedRequest>& asked) -> std::optional<QueuedRequest> {
    s.asked = asked;
    s.updatedAt += 1;
    EXPECT_TRUE(store->write(std::vector<StoreWrite>{PutSystem{s}}, epoch));
    auto snap = store->load();
    EXPECT_TRUE(snap && snap->systems.size() == 1u);
    return snap && !snap->systems.empty() ? snap->systems[0].asked : std::nullopt;
  };
  EXPECT_EQ(askedAfter(first), first);
  EXPECT_EQ(askedAfter(first), first) << "written again unchanged";
  EXPECT_EQ(askedAfter(second), second);
  EXPECT_EQ(askedAfter(std::nullopt), std::nullopt);
  EXPECT_EQ(askedAfter(first), first);
}

TEST_P(StoreContract, AQueuedComposeAndALeaseAreReadBackAndTheQueuedOperationIsUnfinished) {
  QueuedRequest q;
  q.gpuCount = 4;
  q.model = "H100";
  q.peerToPeer = "required";
  q.gpuInstances = {MigProfile::k3g, MigProfile::k1g};
  q.priorityClass = "production";
  q.priority = 1000;
  q.enqueuedAt = 11;
  q.deadline = 22;
  q.leaseSeconds = 3600;
  System waiting = system(2, SystemState::kQueued);
  waiting.hostId.clear();
  waiting.bindings.clear();
  waiting.gpuShares.clear();
  Operation op = operation(4, OperationState::kQueued);
  op.hostId.clear();
  op.steps.clear();
  op.queued = q;
  waiting.asked = q;  // what its compose asked for (a preemption that queues it again asks for it again)
  System leased = system(1);
  leased.leaseExpiresAt = 1'234'567;
  leased.priorityClass = "spot";
  leased.stateReason = "sw0-gpu1 is unbound in the fabric";
  {
    auto store = open();
    const WriterEpoch epoch = *store->claimWriter();
    ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutSystem{leased}, PutSystem{waiting}, PutOperation{op}}, epoch));
  }
  auto store = open();
  auto snap = store->load();
  ASSERT_TRUE(snap) << snap.error().message;
  ASSERT_EQ(snap->systems.size(), 2u);
  EXPECT_EQ(snap->systems[0].leaseExpiresAt, 1'234'567);
  EXPECT_EQ(snap->systems[0].priorityClass, "spot");
  EXPECT_EQ(snap->systems[0].stateReason, "sw0-gpu1 is unbound in the fabric");
  EXPECT_EQ(snap->systems[1].state, SystemState::kQueued);
  EXPECT_FALSE(snap->systems[0].asked);
  EXPECT_EQ(snap->systems[1].asked, q);
  ASSERT_EQ(snap->unfinishedOperations.size(), 1u) << "a queued operation is unfinished: it waits again after a restart";
  ASSERT_TRUE(snap->unfinishedOperations[0].queued);
  EXPECT_EQ(*snap->unfinishedOperations[0].queued, q);

  // Admitted: the same operation gets its host and steps, and keeps its ticket.
  op.state = OperationState::kRunning;
  op.hostId = "host3";
  op.steps = operation(4, OperationState::kRunning).steps;
  ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutOperation{op}}, *store->claimWriter()));
  auto admitted = store->getOperation(op.id);
  ASSERT_TRUE(admitted && *admitted);
  EXPECT_EQ((*admitted)->hostId, "host3");
  EXPECT_EQ((*admitted)->state, OperationState::kRunning);
  EXPECT_EQ((*admitted)->steps.size(), 3u);
  ASSERT_TRUE((*admitted)->queued);
  EXPECT_EQ((*admitted)->queued->priorityClass, "production");

  // A preemption's decompose of a system whose class requeues: its name and labels come back with its shape.
  Operation decompose = operation(5, OperationState::kRunning);
  decompose.kind = OperationKind::kDecompose;
  QueuedRequest again = q;
  again.requeueAs = QueuedRequest::RequeueAs{"spot-job", {{"team", "vision"}}};
  decompose.queued = again;
  ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutOperation{decompose}}, *store->claimWriter()));
  auto requeuing = store->getOperation(decompose.id);
  ASSERT_TRUE(requeuing && *requeuing && (*requeuing)->queued);
  EXPECT_EQ(*(*requeuing)->queued, again);

  // A move's attach: the devices it replaces come back, in order; any other operation replaces none.
  Operation attach = operation(6, OperationState::kRunning);
  attach.kind = OperationKind::kAttach;
  attach.replaces = {"sw0-gpu3", "sw0-gpu2"};
  ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutOperation{attach}}, *store->claimWriter()));
  auto moving = store->getOperation(attach.id);
  ASSERT_TRUE(moving && *moving);
  EXPECT_EQ((*moving)->replaces, attach.replaces);
  EXPECT_TRUE((*requeuing)->replaces.empty());
}

TEST_P(StoreContract, ABatchIsAllOrNothing) {
  auto store = open();
  const WriterEpoch epoch = *store->claimWriter();
  StoreWrite first = PutEvent{{1, 1, "a", "x", "first"}};
  ASSERT_TRUE(store->write({&first, 1}, epoch));
  std::vector<StoreWrite> batch{PutSystem{system(1)}, PutEvent{{1, 2, "b", "y", "reuses sequence 1"}}};
  EXPECT_FALSE(store->write(batch, epoch));
  EXPECT_TRUE(store->load()->systems.empty());
  EXPECT_EQ(store->listEvents(0, 10)->size(), 1u);
}

TEST_P(StoreContract, ABatchMayWriteARecordTwiceAndTheLastWins) {
  auto store = open();
  const WriterEpoch epoch = *store->claimWriter();
  System first = system(1);
  System second = system(1);
  second.state = SystemState::kDegraded;
  Operation op = operation(2, OperationState::kRunning);
  op.requestId = "twice";
  std::vector<StoreWrite> batch{PutSystem{first}, PutOperation{op}, PutSystem{second}, PutOperation{op},
                                PutAssignment{{"sw0-gpu0", DeviceAllocation::kReserved, "op-000002"}},
                                PutAssignment{{"sw0-gpu0", DeviceAllocation::kFree, ""}}};
  auto written = store->write(batch, epoch);
  ASSERT_TRUE(written) << written.error().message;
  auto snap = store->load();
  ASSERT_EQ(snap->systems.size(), 1u);
  EXPECT_EQ(snap->systems[0].state, SystemState::kDegraded);
  EXPECT_TRUE(snap->assignments.empty());
  EXPECT_EQ(snap->unfinishedOperations.size(), 1u);
}

TEST_P(StoreContract, EachClaimFencesOutTheWriterBeforeIt) {
  auto leader = open();
  auto standby = open();  // another yardd on the same store
  const WriterEpoch old = *leader->claimWriter();
  const WriterEpoch next = *standby->claimWriter();
  EXPECT_GT(next, old);
  StoreWrite w = PutSystem{system(1)};
  auto refused = leader->write({&w, 1}, old);
  ASSERT_FALSE(refused) << "a deposed leader's write must be refused";
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("fenced"), std::string::npos) << refused.error().message;
  EXPECT_TRUE(standby->load()->systems.empty()) << "and change nothing";
  EXPECT_FALSE(leader->prune({}, old)) << "pruning is fenced too";
  ASSERT_TRUE(standby->write({&w, 1}, next));
  EXPECT_EQ(leader->load()->systems.size(), 1u) << "reads are not fenced";
}

TEST_P(StoreContract, EpochsOnlyGrowAcrossReopening) {
  WriterEpoch before = 0;
  {
    auto store = open();
    before = *store->claimWriter();
  }
  auto store = open();
  EXPECT_GT(*store->claimWriter(), before);
  StoreWrite w = PutSystem{system(1)};
  EXPECT_FALSE(store->write({&w, 1}, 0)) << "epoch 0 is never a writer";
}

TEST_P(StoreContract, IdCountersSurviveAChangeOfWriterAndPruning) {
  {
    auto leader = open();
    const WriterEpoch epoch = *leader->claimWriter();
    ASSERT_TRUE(leader->write(finishedHistory(5, true), epoch));
    auto pruned = leader->prune({.events = 1, .finishedOperations = 1}, epoch);
    ASSERT_TRUE(pruned) << pruned.error().message;
    EXPECT_EQ(pruned->operations, 4u) << "the newest row of each kind is all that is left";
    EXPECT_EQ(pruned->systems, 4u);
    EXPECT_EQ(pruned->events, 4u);
  }
  auto successor = open();
  ASSERT_TRUE(successor->claimWriter());
  auto snap = successor->load();
  ASSERT_TRUE(snap) << snap.error().message;
  EXPECT_EQ(snap->lastSystemNumber, 5u);
  EXPECT_EQ(snap->lastOperationNumber, 5u);
  EXPECT_EQ(snap->lastEventSequence, 5u);
}

// One etcd member for the whole suite, started on first use; each test's store lives under its own prefix
// (its temporary directory's name), so tests cannot see each other's keys.
testing::EtcdCluster& sharedEtcd() {
  static testing::TempDir dir;
  static testing::EtcdCluster cluster(dir.path(), 1);
  static const bool started = cluster.start();
  EXPECT_TRUE(started) << "etcd did not start; see " << dir.path();
  return cluster;
}

// One etcd member as a careful operator runs it: clients over TLS (the development CA's certificates) and
// etcd's authentication on, the store's user allowed only under /contract/.
testing::EtcdCluster& securedEtcd() {
  static testing::TempDir dir;
  static const auto certs = [] {
    const auto made = testing::runCommand(std::string(SWITCHYARD_SOURCE_DIR) + "/setup.sh dev-certs " + (dir.path() / "certs").string(), dir.path());
    EXPECT_EQ(made.exitCode, 0) << made.err;
    return dir.path() / "certs";
  }();
  static testing::EtcdCluster cluster(dir.path(), 1,
                                      {(certs / "etcd.pem").string(), (certs / "etcd.key").string(), {}, false, 0, {(certs / "ca.pem").string()}});
  static const bool started = cluster.start() && cluster.enableAuth("yardd", "contract-secret", "/contract/");
  EXPECT_TRUE(started) << "etcd did not start over TLS with authentication; see " << dir.path();
  return cluster;
}

// The etcd store's change feed (a standby's replica follows it): a write under the prefix at or after the
// revision ends the wait with true; nothing written, the wait ends with false when its time is up.
TEST(EtcdStore, WaitsForAChangeUnderItsPrefix) {
  if (!testing::EtcdCluster::available()) {
    if (testing::EtcdCluster::required()) FAIL() << "etcd is not installed; run ./setup.sh";
    GTEST_SKIP() << "needs Debian's etcd-server";
  }
  auto store = EtcdStore::open({sharedEtcd().endpoints(), "/feed-test/"});
  ASSERT_TRUE(store) << store.error().message;
  auto other = EtcdStore::open({sharedEtcd().endpoints(), "/feed-other/"});
  ASSERT_TRUE(other);
  auto before = (*store)->revision();
  ASSERT_TRUE(before) << before.error().message;

  const auto started = std::chrono::steady_clock::now();
  auto quiet = (*store)->waitForChange(*before + 1, std::chrono::milliseconds(300));
  ASSERT_TRUE(quiet) << quiet.error().message;
  EXPECT_FALSE(*quiet);
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(250));

  ASSERT_TRUE((*other)->claimWriter()) << "a write under another prefix is not a change";
  EXPECT_FALSE(*(*store)->waitForChange(*before + 1, std::chrono::milliseconds(200)));

  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE((*store)->claimWriter());
  });
  auto changed = (*store)->waitForChange(*before + 1, std::chrono::seconds(10));
  writer.join();
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_TRUE(*changed);
  EXPECT_TRUE(*(*store)->waitForChange(*before + 1, std::chrono::milliseconds(200))) << "a change already made counts";
  EXPECT_GT(*(*store)->revision(), *before);
}

// An inventory far larger than one etcd request may carry (etcd's default limit is 1.5 MiB; this one is
// about 2 MB) is written whole, read back whole, and replaced whole by a smaller one.
TEST_P(StoreContract, ALargeInventoryIsWrittenAndReplacedWhole) {
  TopologyShape shape;
  shape.totalGpus = 8000;
  const Topology large = generateTopology(shape);
  {
    auto store = open();
    const WriterEpoch epoch = *store->claimWriter();
    auto written = store->write(std::vector<StoreWrite>{PutInventory{large}, PutEvent{{1, 1, "inventory.discovered", "sim", "large"}}}, epoch);
    ASSERT_TRUE(written) << written.error().message;
  }
  {
    auto store = open();
    auto snap = store->load();
    ASSERT_TRUE(snap) << snap.error().message;
    ASSERT_TRUE(snap->inventory);
    ASSERT_EQ(snap->inventory->devices.size(), 8000u);
    EXPECT_EQ(snap->inventory->devices.back().serial, large.devices.back().serial);
    EXPECT_EQ(snap->inventory->hosts.size(), large.hosts.size());
    EXPECT_EQ(snap->inventory->ports.size(), large.ports.size());
    // Replaced by a small one: nothing of the large one is left to read.
    const WriterEpoch epoch = *store->claimWriter();
    ASSERT_TRUE(store->write(std::vector<StoreWrite>{PutInventory{defaultTopology()}}, epoch));
  }
  auto store = open();
  auto snap = store->load();
  ASSERT_TRUE(snap && snap->inventory);
  EXPECT_EQ(snap->inventory->devices.size(), 16u);
  if (auto* etcdStore = dynamic_cast<EtcdStore*>(store.get())) {
    auto chunks = etcdStore->client().range({etcdStore->prefix() + "inventory/", etcd::prefixEnd(etcdStore->prefix() + "inventory/"), 0, false, true});
    ASSERT_TRUE(chunks);
    EXPECT_EQ(chunks->count, 0) << "the large inventory's chunks went with it";
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContract,
                         ::testing::Values(StoreFactory{"sqlite",
                                                        [](const std::filesystem::path& dir) -> Result<std::unique_ptr<Store>> {
                                                          SY_ASSIGN(auto s, SqliteStore::open(dir / "yard.db"));
                                                          return std::unique_ptr<Store>(std::move(s));
                                                        }},
                                           StoreFactory{"etcd",
                                                        [](const std::filesystem::path& dir) -> Result<std::unique_ptr<Store>> {
                                                          EtcdStoreOptions options;
                                                          options.endpoints = sharedEtcd().endpoints();
                                                          options.prefix = "/contract/" + dir.filename().string() + "/";
                                                          SY_ASSIGN(auto s, EtcdStore::open(options));
                                                          return std::unique_ptr<Store>(std::move(s));
                                                        }},
                                           StoreFactory{"etcd_tls_auth",
                                                        [](const std::filesystem::path& dir) -> Result<std::unique_ptr<Store>> {
                                                          EtcdStoreOptions options;
                                                          options.endpoints = securedEtcd().endpoints();
                                                          options.security = securedEtcd().clientSecurity();
                                                          options.prefix = "/contract/" + dir.filename().string() + "/";
                                                          SY_ASSIGN(auto s, EtcdStore::open(options));
                                                          return std::unique_ptr<Store>(std::move(s));
                                                        }}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace switchyard::store_contract
