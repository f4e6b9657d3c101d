// The packing benchmark's harness: the composable pool of switch enclosures, the LP upper bound, the dynamic
// simulation, the openb trace reader and the static protocol, each on small pools against the sharing core.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/composable_sim.h"
#include "tests/bench/packing/dynamic_sim.h"
#include "tests/bench/packing/openb_trace.h"
#include "tests/bench/packing/pool_aware_policy.h"
#include "tests/bench/packing/static_sim.h"
#include "tests/bench/packing/upper_bound.h"
#include "tests/support/share_fixtures.h"
#include "tests/support/temp_dir.h"

namespace switchyard::sharing {
namespace {

using namespace fixtures;

TEST(ComposablePool, TheMirrorPoolReproducesStaticModeExactly) {
  std::mt19937_64 rng(11);
  const ShareCluster servers = randomCluster(rng, 25);
  std::vector<ShareRequest> requests;
  for (int i = 0; i < 400; ++i) requests.push_back(randomRequest(rng));
  const auto mix = typicalShapes(requests);
  const bench::ComposableShape mirror{.slots = 8, .enclosurePorts = 1, .hostPorts = 1, .deviceLimit = 8, .mirrorServers = true};
  for (const auto& name : sharePolicyNames()) {
    auto a = makeSharePolicy(name, {.seed = 1, .oracleMix = mix});
    auto b = makeSharePolicy(name, {.seed = 1, .oracleMix = mix});
    const auto composable = bench::runComposable(bench::ComposablePool(servers, mirror), requests, *a);
    const auto fixed = bench::runStatic(servers, requests, *b, mix);
    EXPECT_EQ(composable.allocationPercent, fixed.allocationPercent) << name;
    EXPECT_EQ(composable.failed, fixed.failed) << name;
    EXPECT_EQ(composable.attaches, 0u) << "a server's GPUs are bound to it once, before the run";
    EXPECT_GT(composable.gpuRequestsPlaced, 0u);
  }
}

TEST(ComposablePool, NeverBreaksAnInvariantUnderAnyPolicy) {
  std::mt19937_64 rng(12);
  const ShareCluster servers = randomCluster(rng, 30);
  for (const auto& name : sharePolicyNames())
    for (const bench::ComposableShape shape : {bench::ComposableShape{4, 2, 2, 6}, bench::ComposableShape{16, 8, 1, 16}}) {
      bench::ComposablePool pool(servers, shape);
      ASSERT_FALSE(pool.violation()) << *pool.violation();
      auto policy = makeSharePolicy(name, {.seed = 3});
      for (int i = 0; i < 600; ++i) {
        const ShareRequest r = randomRequestWithMig(rng);
        policy->observe(r);
        auto p = policy->choose(pool.views(), r);
        if (!p) {
          if (name != "hived-buddy")
            for (const auto& v : pool.views().nodes()) EXPECT_FALSE(fits(v, r)) << name << ": refused though " << v.name << " fits";
          continue;
        }
        pool.apply(*p, r);
        auto broken = pool.violation();
        ASSERT_FALSE(broken) << name << " " << shape.describe() << ": " << *broken;
      }
      EXPECT_GT(pool.attaches(), 0u);
    }
}

TEST(PoolAwarePolicy, NeverBreaksAnInvariantAndRefusesOnlyWhatFitsNowhere) {
  std::mt19937_64 rng(13);
  const ShareCluster servers = randomCluster(rng, 30);
  for (const bench::ComposableShape shape : {bench::ComposableShape{4, 2, 2, 6}, bench::ComposableShape{16, 8, 1, 16},
                                             bench::ComposableShape{8, 1, 1, 8, true}}) {
    bench::ComposablePool pool(servers, shape);
    auto policy = bench::makePoolAwarePolicy(pool);
    size_t placed = 0;
    for (int i = 0; i < 600; ++i) {
      const ShareRequest r = randomRequestWithMig(rng);
      policy->observe(r);
      auto p = policy->choose(pool.views(), r);
      if (!p) {
        for (const auto& v : pool.views().nodes()) EXPECT_FALSE(fits(v, r)) << shape.describe() << ": refused though " << v.name << " fits";
        continue;
      }
      ASSERT_TRUE(valid(pool.views().node(p->node), r, p->gpus)) << shape.describe();
      pool.apply(*p, r);
      ++placed;
      auto broken = pool.violation();
      ASSERT_FALSE(broken) << shape.describe() << ": " << *broken;
    }
    EXPECT_GT(placed, 100u) << shape.describe();
  }
}

TEST(PoolAwarePolicy, IsDeterministic) {
  std::mt19937_64 rng(14);
  const ShareCluster servers = randomCluster(rng, 20);
  std::vector<ShareRequest> requests;
  for (int i = 0; i < 300; ++i) requests.push_back(randomRequestWithMig(rng));
  const bench::ComposableShape shape{8, 4, 2, 8};
  auto run = [&] { return bench::runComposable(bench::ComposablePool(servers, shape), requests, [](const auto& pool) { return bench::makePoolAwarePolicy(pool); }); };
  const auto a = run(), b = run();
  EXPECT_EQ(a.allocationPercent, b.allocationPercent);
  EXPECT_EQ(a.attaches, b.attaches);
}

// Three hosts and five one-GPU enclosures (K=1, U=2, P=2): h0 reaches e0 (shared with h2) and e1 (its own),
// h1 reaches e2 and e3 but has no CPU, h2 reaches e4 (its own) and e0. h0 has CPU for one request, h2 for
// two. A placement on h0 changes nothing in the view it lands on, whichever of its enclosures it uses; but
// taking e0 strands e1 (h0 has no CPU left and nobody else reaches it) and leaves h2 one GPU short. The
// per-view measure ties and takes the earliest view, e0; the pool's measure sees e1 stranded and takes e1.
TEST(PoolAwarePolicy, SeesAnEnclosureStrandedBehindAHostsOtherLink) {
  ModelTable models;
  models.intern("A");
  const ShareRequest r = whole(1, 8000);
  const ShareCluster servers({node("h0", 2, 0, 8000), node("h1", 2, 0, 0), node("h2", 1, 0, 16000)}, models);
  const bench::ComposableShape shape{.slots = 1, .enclosurePorts = 2, .hostPorts = 2, .deviceLimit = 2};
  const std::vector<ShareRequest> three(3, r);
  auto perView = makeSharePolicy("switchyard", {});
  EXPECT_EQ(bench::runComposable(bench::ComposablePool(servers, shape), three, *perView).placed, 2u);
  const auto pooled = bench::runComposable(bench::ComposablePool(servers, shape), three,
                                           [](const auto& pool) { return bench::makePoolAwarePolicy(pool); });
  EXPECT_EQ(pooled.placed, 3u);
  EXPECT_DOUBLE_EQ(pooled.allocationPercent.back(), 60.0);  // 3 of 5 GPUs; h1's two are out of reach for lack of CPU
}

// Free GPUs count as lost beyond what the hosts cabled to their enclosure could use with their CPU. One
// enclosure of four GPUs behind h0 and h1 (16 cores each), and h2, a host with no GPU link. After one
// 1-GPU request on h0, a CPU-only request anywhere but h2 leaves CPU for two of the three free GPUs. Per
// view it looks free on h1 (h1 can still serve the shape), and the one-view-serves measure saw no loss on
// h0 either; this measure sends it to h2, and all four GPUs are placed.
TEST(PoolAwarePolicy, SendsCpuOnlyRequestsWhereNoFreeGpuNeedsTheCpu) {
  ModelTable models;
  models.intern("A");
  const ShareCluster servers({node("h0", 2, 0, 16000), node("h1", 2, 0, 16000), node("h2", 0, 0, 8000)}, models);
  const bench::ComposableShape shape{.slots = 4, .enclosurePorts = 2, .hostPorts = 1, .deviceLimit = 4};
  const ShareRequest cpuOnly{.cpuMilli = 8000, .memoryMib = 1024, .gpuCount = 0, .gpuMilli = 0};
  const std::vector<ShareRequest> requests{whole(1, 8000), cpuOnly, whole(1, 8000), whole(1, 8000), whole(1, 8000)};
  auto perView = makeSharePolicy("switchyard", {});
  EXPECT_EQ(bench::runComposable(bench::ComposablePool(servers, shape), requests, *perView).gpuRequestsPlaced, 3u);

  bench::ComposablePool pool(servers, shape);
  auto policy = bench::makePoolAwarePolicy(pool);
  std::vector<std::string> hosts;
  for (const auto& r : requests) {
    policy->observe(r);
    const auto p = policy->choose(pool.views(), r);
    ASSERT_TRUE(p.has_value()) << "request " << hosts.size();
    hosts.push_back(pool.views().node(p->node).name);
    (void)pool.apply(*p, r);
  }
  EXPECT_EQ(hosts[1], "h2");
  EXPECT_EQ(pool.allocatedGpuMilli(), pool.totalGpuMilli());
}

// A composable pool under `switchyard-pool` that requests join and leave, where every choice is compared with
// the one a policy built afresh (same requests observed, nothing cached) makes on the same pool.
class PoolAwareChurn {
 public:
  PoolAwareChurn(const ShareCluster& servers, const bench::ComposableShape& shape)
      : pool_(servers, shape), policy_(bench::makePoolAwarePolicy(pool_)) {}
  PoolAwareChurn(const PoolAwareChurn&) = delete;  // the policy reads pool_
  PoolAwareChurn& operator=(const PoolAwareChurn&) = delete;

  void observe(const ShareRequest& r) {
    seen_.push_back(r);
    policy_->observe(r);
  }
  // The policy's choice for `r`; a test failure if a fresh policy chooses otherwise.
  std::optional<SharePlacement> choose(const ShareRequest& r) {
    const auto p = policy_->choose(pool_.views(), r);
    auto fresh = bench::makePoolAwarePolicy(pool_);
    for (const auto& s : seen_) fresh->observe(s);
    const auto q = fresh->choose(pool_.views(), r);
    EXPECT_EQ(p.has_value(), q.has_value()) << "choice " << compared_;
    if (p && q) {
      ++compared_;
      EXPECT_EQ(p->node, q->node) << "choice " << compared_;
      EXPECT_EQ(p->gpus.count, q->gpus.count) << "choice " << compared_;
      EXPECT_TRUE(std::equal(p->gpus.index.begin(), p->gpus.index.begin() + p->gpus.count, q->gpus.index.begin())) << "choice " << compared_;
    }
    return p;
  }
  void place(const SharePlacement& p, const ShareRequest& r) {
    held_.push_back({r, p.node, pool_.apply(p, r)});
    checkInvariants();
  }
  // One held request leaves, picked by `rng`, if any is held.
  void releaseOne(std::mt19937_64& rng) {
    if (held_.empty()) return;
    const size_t k = rng() % held_.size();
    pool_.release(held_[k].link, held_[k].taken, held_[k].r);
    held_.erase(held_.begin() + static_cast<long>(k));
    ++released_;
    checkInvariants();
  }
  [[nodiscard]] size_t compared() const { return compared_; }
  [[nodiscard]] size_t released() const { return released_; }
  [[nodiscard]] size_t detaches() const { return pool_.detaches(); }

 private:
  void checkInvariants() const {
    const auto broken = pool_.violation();
    EXPECT_FALSE(broken) << *broken;
  }
  struct Held {
    ShareRequest r;
    size_t link;
    bench::ComposablePool::Taken taken;
  };
  bench::ComposablePool pool_;
  std::unique_ptr<SharePolicy> policy_;
  std::vector<Held> held_;
  std::vector<ShareRequest> seen_;
  size_t compared_ = 0, released_ = 0;
};

// Dynamic mode: requests leave, GPUs go back to their enclosures, and the views around them are rebuilt.
// The policy caches each view's evaluation by version; after every release its choice must be a fresh policy's.
TEST(PoolAwarePolicy, ChoosesAsAFreshPolicyWouldWhileRequestsLeave) {
  std::mt19937_64 rng(15);
  PoolAwareChurn churn(randomCluster(rng, 12), bench::ComposableShape{4, 2, 2, 6});
  for (int i = 0; i < 300 && !::testing::Test::HasFailure(); ++i) {
    if (rng() % 3 == 0) churn.releaseOne(rng);
    const ShareRequest r = randomRequestWithMig(rng);
    churn.observe(r);
    if (const auto p = churn.choose(r)) churn.place(*p, r);
  }
  EXPECT_GT(churn.released(), 50u);
  EXPECT_GT(churn.compared(), 150u);
  EXPECT_GT(churn.detaches(), 0u);
}

// The policy also keeps each view's changes of fragmentation per request shape until a view they depend on
// changes (its host's views, and every view of an enclosure its host is cabled to: another host's CPU counts
// there). With a few shapes that repeat, most choices reuse kept changes, and each must still be a fresh
// policy's; a request that is only asked about (not placed) changes nothing. Several pools: on one, a kept
// change gone stale may never flip a choice.
TEST(PoolAwarePolicy, ReusesNoKeptChangeAViewItDependsOnHasChangedSince) {
  const std::array<ShareRequest, 6> shapes{
      ShareRequest{.cpuMilli = 2000, .memoryMib = 1024, .gpuCount = 1, .gpuMilli = 300},
      ShareRequest{.cpuMilli = 4000, .memoryMib = 1024, .gpuCount = 1, .gpuMilli = 500},
      ShareRequest{.cpuMilli = 4000, .memoryMib = 2048, .gpuCount = 1, .gpuMilli = 1000},
      ShareRequest{.cpuMilli = 8000, .memoryMib = 2048, .gpuCount = 2, .gpuMilli = 1000},
      ShareRequest{.cpuMilli = 6000, .memoryMib = 1024},
      migRequest(ShareRequest{.cpuMilli = 2000, .memoryMib = 1024, .gpuCount = 1, .gpuMilli = 1000}, k2g)};
  for (const int seed : {16, 1, 2, 3, 4, 5, 6, 7}) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    std::mt19937_64 rng(static_cast<uint64_t>(seed));
    PoolAwareChurn churn(randomCluster(rng, 14), bench::ComposableShape{4, 3, 2, 6});
    for (int i = 0; i < 400 && !::testing::Test::HasFailure(); ++i) {
      if (rng() % 3 == 0) churn.releaseOne(rng);
      (void)churn.choose(shapes[rng() % shapes.size()]);  // asked about only
      const ShareRequest r = shapes[rng() % shapes.size()];
      churn.observe(r);
      if (const auto p = churn.choose(r)) churn.place(*p, r);
    }
    EXPECT_GT(churn.compared(), 400u);
    EXPECT_GT(churn.detaches(), 0u);
    if (::testing::Test::HasFailure()) break;  // the first pool that shows it is enough
  }
}

// The hand-made six-node trace in the openb format, and a small composable pool over it.
class DynamicSimulation : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = std::string(SWITCHYARD_SOURCE_DIR) + "/tests/data/openb-mini/";
    auto nodes = bench::loadOpenbNodes(dir + "openb_node_list_gpu_node.csv");
    ASSERT_TRUE(nodes) << nodes.error();
    ModelTable models = nodes->models();
    auto list = bench::loadOpenbPods(dir + "openb_pod_list_default.csv", models);
    ASSERT_TRUE(list) << list.error();
    servers = std::move(*nodes);
    pods = std::move(*list);
  }
  std::optional<ShareCluster> servers;
  std::optional<std::vector<bench::TracePod>> pods;
  const bench::ComposableShape composable{.slots = 4, .enclosurePorts = 2, .hostPorts = 2, .deviceLimit = 8};
};

// The dynamic simulation makes a pool-reading policy once the pool exists: the composable pool for a
// composable run, nothing for fixed servers (where `switchyard-pool` cannot run).
TEST_F(DynamicSimulation, MakesThePolicyForThePoolItRuns) {
  const bench::DynamicOptions o{.load = 0.9, .arrivals = 1500, .warmup = 500, .patienceSeconds = 300, .seed = 6};
  const bench::ComposablePool* given = nullptr;
  const auto result = bench::runDynamic(*servers, &composable, *pods,
                                        [&](const bench::ComposablePool* pool) {
                                          given = pool;
                                          return pool ? bench::makePoolAwarePolicy(*pool) : nullptr;
                                        },
                                        o);
  EXPECT_NE(given, nullptr);
  EXPECT_EQ(result.arrived, 1500u);
  EXPECT_GT(result.accepted, 1000u);
  EXPECT_GT(result.detaches, 0u);
  EXPECT_THROW((void)bench::runDynamic(*servers, nullptr, *pods, [](const bench::ComposablePool* pool) {
    return pool ? bench::makePoolAwarePolicy(*pool) : nullptr;
  }, o),
               std::invalid_argument);
  // The arrival-only composable run refuses a missing policy the same way.
  EXPECT_THROW((void)bench::runComposable(bench::ComposablePool(*servers, composable), {},
                                          [](const bench::ComposablePool&) { return std::unique_ptr<SharePolicy>(); }),
               std::invalid_argument);
}

TEST(ComposablePool, ServesLogicalServersNoFixedServerCan) {
  ModelTable models;
  models.intern("A");
  std::vector<ShareNode> list;
  for (int i = 0; i < 4; ++i) list.push_back(node("n" + std::to_string(i), 8, 0, 96000));
  const ShareCluster servers(std::move(list), models);
  const std::vector<ShareRequest> big{{.cpuMilli = 8000, .memoryMib = 1024, .gpuCount = 16, .gpuMilli = 1000},
                                      {.cpuMilli = 8000, .memoryMib = 1024, .gpuCount = 16, .gpuMilli = 1000}};
  auto a = makeSharePolicy("switchyard", {});
  auto b = makeSharePolicy("switchyard", {});
  EXPECT_EQ(bench::runStatic(servers, big, *a, typicalShapes(big)).failed, 2u);
  const auto composable = bench::runComposable(bench::ComposablePool(servers, {.slots = 16, .enclosurePorts = 2, .hostPorts = 1, .deviceLimit = 16}),
                                               big, *b);
  EXPECT_EQ(composable.placed, 2u);
  EXPECT_EQ(composable.attaches, 32u);
  EXPECT_DOUBLE_EQ(composable.allocationPercent.back(), 100.0);
}

double packingBound(const ShareCluster& c, const std::vector<ShareRequest>& r) { return bench::packingUpperBound(c, r).value().milli; }

TEST(UpperBound, PoolsCpuAndRespectsModelSets) {
  ModelTable models;
  models.intern("A");
  models.intern("B");
  std::vector<ShareNode> list{node("a", 1, 0, 5000), node("b", 1, 1, 5000)};
  const ShareCluster c(std::move(list), models);
  // Two whole-GPU requests of 8 cores each and 10 cores in all: 1 + 2/8 of them.
  std::vector<ShareRequest> r{{.cpuMilli = 8000, .gpuCount = 1, .gpuMilli = 1000}, {.cpuMilli = 8000, .gpuCount = 1, .gpuMilli = 1000}};
  EXPECT_NEAR(packingBound(c, r), 1250.0, 1e-6);
  // Three 1-core requests that all need model A: only A's one GPU.
  r.assign(3, ShareRequest{.cpuMilli = 1000, .gpuCount = 1, .gpuMilli = 1000, .modelMask = 1u});
  EXPECT_NEAR(packingBound(c, r), 1000.0, 1e-6);
  r.push_back({.cpuMilli = 1000, .gpuCount = 1, .gpuMilli = 500});
  EXPECT_NEAR(packingBound(c, r), 1500.0, 1e-6);
  EXPECT_NEAR(packingBound(c, {}), 0.0, 1e-9);
}

TEST(UpperBound, TwoSharesOverHalfAGpuNeverShareOne) {
  const ShareCluster c({node("a", 1)}, ModelTable{});
  const std::vector<ShareRequest> r{share(600), share(600)};
  EXPECT_NEAR(*bench::pooledUpperBound(c, r), 1000.0, 1e-6);  // the pooled LP splits the GPU
  auto packing = bench::packingUpperBound(c, r);
  ASSERT_TRUE(packing.has_value()) << packing.error();
  EXPECT_TRUE(packing->converged);
  EXPECT_NEAR(packing->milli, 600.0, 1e-6);
  // A 400 share fills the rest of one; a 300 leaves 100 unused.
  EXPECT_NEAR(packingBound(c, {share(600), share(600), share(400)}), 1000.0, 1e-6);
  EXPECT_NEAR(packingBound(c, {share(600), share(300)}), 900.0, 1e-6);
  // Two GPUs: the LP may hold each 600 on its own GPU and pair the 300s with them.
  const ShareCluster two({node("a", 2)}, ModelTable{});
  EXPECT_NEAR(packingBound(two, {share(600), share(600), share(300), share(300), share(300)}), 1800.0, 1e-6);
}

TEST(UpperBound, MigInstancesFollowTheSliceRules) {
  const ShareCluster c({node("a", 1)}, ModelTable{});
  auto instances = [](int profile, int count) { return std::vector<ShareRequest>(static_cast<size_t>(count), migRequest(share(100), profile)); };
  auto bound = [&](std::vector<ShareRequest> r) { return packingBound(c, r); };
  EXPECT_NEAR(bound(instances(0, 8)), 7 * migMilli(0), 1e-6);  // seven 1g, not eight
  EXPECT_NEAR(bound(instances(1, 4)), 3 * migMilli(1), 1e-6);  // 2g starts at 0, 2 and 4 only
  EXPECT_NEAR(bound(instances(2, 3)), 2 * migMilli(2), 1e-6);  // 3g at 0 and 4
  EXPECT_NEAR(bound(instances(3, 2)), migMilli(3), 1e-6);      // one 4g
  auto mixed = instances(3, 1);                                // 4g@0 + 2g@4 + 1g@6
  for (auto extra : {instances(1, 2), instances(0, 2)}) mixed.insert(mixed.end(), extra.begin(), extra.end());
  EXPECT_NEAR(bound(mixed), migMilli(3) + migMilli(1) + migMilli(0), 1e-6);
  // 4g@0 and 3g@4 together take all 7 compute slices.
  auto full = instances(3, 1);
  full.push_back(migRequest(share(100), 2));
  EXPECT_NEAR(bound(full), migMilli(3) + migMilli(2), 1e-6);
  // A MIG instance and a milli share never share a GPU.
  EXPECT_NEAR(bound({migRequest(share(100), 0), share(500)}), 500.0, 1e-6);
}

TEST(UpperBound, OnFixedServersEachRequestNeedsOneServerThatHoldsIt) {
  // A has 1 GPU and 4 cores, B 2 GPUs and 16 cores. Two 1-GPU requests of 8 cores: pooled, the 20 cores hold
  // both; per server only B can take them.
  const ShareCluster c({node("a", 1, 0, 4000), node("b", 2, 0, 16000)}, ModelTable{});
  const std::vector<ShareRequest> r{whole(1, 8000), whole(1, 8000)};
  EXPECT_NEAR(bench::packingUpperBound(c, r)->milli, 2000.0, 1e-6);
  EXPECT_NEAR(bench::packingUpperBound(c, r, {.perServer = true})->milli, 2000.0, 1e-6);
  // A third needs A's CPU it does not have; a 3-GPU request fits no server.
  auto more = r;
  more.push_back(whole(1, 8000));
  EXPECT_NEAR(bench::packingUpperBound(c, more)->milli, 2500.0, 1e-6);  // 20 cores / 8: two and a half
  EXPECT_NEAR(bench::packingUpperBound(c, more, {.perServer = true})->milli, 2000.0, 1e-6);
  const std::vector<ShareRequest> big{whole(3, 1000)};
  EXPECT_NEAR(bench::packingUpperBound(c, big)->milli, 3000.0, 1e-6);
  EXPECT_NEAR(bench::packingUpperBound(c, big, {.perServer = true})->milli, 0.0, 1e-6);
  EXPECT_NEAR(bench::packingUpperBound(c, big, {.maxGpusPerRequest = 2})->milli, 0.0, 1e-6);
  EXPECT_TRUE(bench::boundOptionsFor({.mirrorServers = true}).perServer);
  EXPECT_EQ(bench::boundOptionsFor({.slots = 16, .deviceLimit = 8}).maxGpusPerRequest, 8);
}

TEST(UpperBound, StoppedEarlyItIsStillABound) {
  // Cut the column generation short: the Lagrangian bound it returns must not be under the LP optimum.
  std::mt19937_64 rng(11);
  int stoppedEarly = 0;
  for (int instance = 0; instance < 20; ++instance) {
    const ShareCluster c = randomCluster(rng, 4);
    std::vector<ShareRequest> r;
    // Shares only: with whole-GPU requests to spare, one round fills every GPU with them and is optimal.
    while (r.size() < 40)
      if (auto one = randomRequestWithMig(rng); one.sharesGpu()) r.push_back(one);
    const auto full = bench::packingUpperBound(c, r);
    ASSERT_TRUE(full.has_value()) << full.error();
    ASSERT_TRUE(full->converged);
    for (int rounds = 1; rounds < full->rounds; ++rounds) {
      const auto early = bench::packingUpperBound(c, r, {.maxRounds = rounds});
      ASSERT_TRUE(early.has_value()) << early.error();
      EXPECT_FALSE(early->converged);
      EXPECT_GE(early->milli, full->milli - 1e-6) << "instance " << instance << ", " << rounds << " rounds";
      ++stoppedEarly;
    }
  }
  EXPECT_GT(stoppedEarly, 20);  // the instances need more than one round, or this tests nothing
}

TEST(ComposablePool, ReleaseIsTheExactInverseAndDetachesIdleGpus) {
  std::mt19937_64 rng(13);
  const ShareCluster servers = randomCluster(rng, 12);
  bench::ComposablePool pool(servers, {.slots = 8, .enclosurePorts = 4, .hostPorts = 2, .deviceLimit = 8});
  const std::vector<ShareNode> before = pool.views().nodes();
  auto policy = makeSharePolicy("best-fit", {});
  struct Held {
    ShareRequest r;
    size_t link;
    bench::ComposablePool::Taken taken;
  };
  std::vector<Held> held;
  for (int i = 0; i < 200; ++i) {
    const ShareRequest r = randomRequestWithMig(rng);
    if (auto p = policy->choose(pool.views(), r)) held.push_back({r, p->node, pool.apply(*p, r)});
  }
  ASSERT_TRUE(std::any_of(held.begin(), held.end(), [](const auto& h) { return h.r.isMig(); }));
  ASSERT_GT(pool.attaches(), 0u);
  std::shuffle(held.begin(), held.end(), rng);
  for (const auto& h : held) {
    pool.release(h.link, h.taken, h.r);
    auto broken = pool.violation();
    ASSERT_FALSE(broken) << *broken;
  }
  EXPECT_EQ(pool.allocatedGpuMilli(), 0);
  EXPECT_EQ(pool.detaches(), pool.attaches()) << "every GPU went back to its enclosure";
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(pool.views().node(i).gpuLeft, before[i].gpuLeft) << i;
    EXPECT_EQ(pool.views().node(i).cpuLeft, before[i].cpuLeft) << i;
    EXPECT_TRUE(pool.views().node(i).migTaken.empty()) << i << ": every MIG instance was removed";
  }
}

TEST_F(DynamicSimulation, LightLoadIsAllAcceptedAndOverloadQueuesAndGivesUp) {
  for (const bench::ComposableShape* shape : {static_cast<const bench::ComposableShape*>(nullptr), &composable}) {
    bench::DynamicOptions light{.load = 0.1, .arrivals = 2000, .warmup = 500, .patienceSeconds = 300, .seed = 5};
    auto policy = makeSharePolicy("switchyard", {});
    const auto easy = bench::runDynamic(*servers, shape, *pods, *policy, light);
    EXPECT_EQ(easy.arrived, 2000u);
    EXPECT_GT(easy.acceptedAtOnce, 1900u);
    EXPECT_LT(easy.meanAllocationPercent, 30.0);
    EXPECT_GT(easy.arrivedGpuTime, 0.0);
    EXPECT_GT(easy.acceptedGpuTime, 0.95 * easy.arrivedGpuTime);
    EXPECT_LE(easy.acceptedGpuTime, easy.arrivedGpuTime);

    bench::DynamicOptions heavy = light;
    heavy.load = 3.0;
    auto again = makeSharePolicy("switchyard", {});
    const auto hard = bench::runDynamic(*servers, shape, *pods, *again, heavy);
    EXPECT_LT(hard.accepted, hard.arrived);
    EXPECT_GT(hard.gaveUp, 0u);
    EXPECT_GT(hard.meanWaitSeconds, 0.0);
    EXPECT_LE(hard.p99WaitSeconds, heavy.patienceSeconds);
    EXPECT_GT(hard.meanAllocationPercent, easy.meanAllocationPercent);
    EXPECT_LT(hard.acceptedGpuTime, hard.arrivedGpuTime);
    if (shape) EXPECT_GT(hard.detaches, 0u);
  }
}

// Each measured request counts once, under the kind of GPU ask it makes; a pool whose hosts can hold one GPU
// each turns away the multi-GPU requests, and only them.
TEST_F(DynamicSimulation, CountsEveryRequestUnderItsKind) {
  EXPECT_EQ(bench::kindOf({.cpuMilli = 1000}), bench::RequestKind::kCpuOnly);
  EXPECT_EQ(bench::kindOf({.gpuCount = 1, .gpuMilli = 500}), bench::RequestKind::kShare);
  EXPECT_EQ(bench::kindOf({.gpuCount = 1, .gpuMilli = kMilliPerGpu}), bench::RequestKind::kOneGpu);
  EXPECT_EQ(bench::kindOf({.gpuCount = 4, .gpuMilli = kMilliPerGpu}), bench::RequestKind::kTwoToFourGpus);
  EXPECT_EQ(bench::kindOf({.gpuCount = 8, .gpuMilli = kMilliPerGpu}), bench::RequestKind::kFiveOrMoreGpus);

  bench::ComposableShape oneGpuHosts = composable;
  oneGpuHosts.deviceLimit = 1;
  const bench::DynamicOptions o{.load = 0.3, .arrivals = 2000, .warmup = 500, .patienceSeconds = 300, .seed = 9};
  auto policy = makeSharePolicy("switchyard", {});
  const auto r = bench::runDynamic(*servers, &oneGpuHosts, *pods, *policy, o);
  size_t arrived = 0, accepted = 0;
  double arrivedTime = 0, acceptedTime = 0;
  for (size_t k = 0; k < bench::kRequestKinds; ++k) {
    arrived += r.arrivedByKind[k];
    accepted += r.acceptedByKind[k];
    arrivedTime += r.arrivedGpuTimeByKind[k];
    acceptedTime += r.acceptedGpuTimeByKind[k];
    EXPECT_LE(r.acceptedByKind[k], r.arrivedByKind[k]) << k;
  }
  EXPECT_EQ(arrived, r.arrived);
  EXPECT_EQ(accepted, r.accepted);
  EXPECT_DOUBLE_EQ(arrivedTime, r.arrivedGpuTime);
  EXPECT_DOUBLE_EQ(acceptedTime, r.acceptedGpuTime);
  EXPECT_EQ(r.arrivedGpuTimeByKind[static_cast<size_t>(bench::RequestKind::kCpuOnly)], 0.0);
  const auto multi = static_cast<size_t>(bench::RequestKind::kTwoToFourGpus);
  EXPECT_GT(r.arrivedByKind[multi], 0u);
  EXPECT_EQ(r.acceptedByKind[multi], 0u);
  for (const auto kind : {bench::RequestKind::kCpuOnly, bench::RequestKind::kShare, bench::RequestKind::kOneGpu})
    EXPECT_GT(r.acceptedByKind[static_cast<size_t>(kind)], 0.9 * static_cast<double>(r.arrivedByKind[static_cast<size_t>(kind)]))
        << bench::csvName(kind);
}

}  // namespace
}  // namespace switchyard::sharing

namespace switchyard::bench {
namespace {

TEST(OpenbTrace, ReadsTheMiniTraceAndInflatesItToTheTarget) {
  const std::string dir = std::string(SWITCHYARD_SOURCE_DIR) + "/tests/data/openb-mini/";
  auto c = loadOpenbNodes(dir + "openb_node_list_gpu_node.csv");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->totalGpus(), 25);
  sharing::ModelTable models = c->models();
  auto pods = loadOpenbPods(dir + "openb_pod_list_default.csv", models);
  ASSERT_TRUE(pods) << pods.error();
  EXPECT_EQ(pods->size(), 60u);
  auto reqs = inflateWorkload(*pods, c->totalGpuMilli(), 42, 1.3);
  int64_t total = 0;
  for (const auto& r : reqs) total += r.totalGpuMilli();
  EXPECT_LE(total, static_cast<int64_t>(1.3 * static_cast<double>(c->totalGpuMilli())));
  EXPECT_GT(total, static_cast<int64_t>(1.1 * static_cast<double>(c->totalGpuMilli())));
  EXPECT_EQ(inflateWorkload(*pods, c->totalGpuMilli(), 42, 1.3), reqs);  // deterministic per seed
}

TEST(OpenbTrace, MalformedRowsAreErrorsWithFileAndLine) {
  switchyard::testing::TempDir dir;
  auto path = dir.path() / "nodes.csv";
  std::ofstream(path) << "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,1024,2,T4\nn1,lots,1024,2,T4\n";
  auto c = loadOpenbNodes(path.string());
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("nodes.csv:3"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("cpu_milli"), std::string::npos) << c.error();
  std::ofstream(path) << "sn,cpu_milli,memory_mib,gpu\n";
  EXPECT_FALSE(loadOpenbNodes(path.string()));  // missing column
  sharing::ModelTable models;
  std::ofstream(path) << "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,10,2,500\n";
  auto pods = loadOpenbPods(path.string(), models);
  ASSERT_FALSE(pods);
  EXPECT_NE(pods.error().find("exactly one GPU"), std::string::npos) << pods.error();
}

TEST(StaticSimulation, EveryPolicyRunsTheMiniTraceAndAccountsForEveryPod) {
  const std::string dir = std::string(SWITCHYARD_SOURCE_DIR) + "/tests/data/openb-mini/";
  auto c = loadOpenbNodes(dir + "openb_node_list_gpu_node.csv");
  ASSERT_TRUE(c);
  sharing::ModelTable models = c->models();
  auto pods = loadOpenbPods(dir + "openb_pod_list_default.csv", models);
  ASSERT_TRUE(pods);
  std::vector<sharing::ShareRequest> all;
  for (const auto& p : *pods) all.push_back(p.request);
  auto mix = sharing::typicalShapes(all);
  for (const auto& name : sharing::sharePolicyNames()) {
    auto reqs = inflateWorkload(*pods, c->totalGpuMilli(), 42, 1.3);
    auto policy = sharing::makeSharePolicy(name, {.seed = 42, .oracleMix = mix});
    StaticResult r = runStatic(shuffleNodes(*c, 42), reqs, *policy, mix);
    EXPECT_EQ(r.arrived, reqs.size()) << name;
    EXPECT_EQ(r.placed + r.failed, r.arrived) << name;
    EXPECT_GT(r.allocationPercent[130], 50.0) << name;
    EXPECT_LE(r.allocationPercent[130], 100.0) << name;
    for (int i = 1; i < kArrivalPoints; ++i)
      EXPECT_GE(r.allocationPercent[static_cast<size_t>(i)], r.allocationPercent[static_cast<size_t>(i - 1)]) << name;
  }
}

}  // namespace
}  // namespace switchyard::bench
