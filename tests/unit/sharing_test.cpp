// GPU-sharing packing core: the cluster model, fragmentation, shape mixes and every policy.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "composer/packing/sharing/fragmentation.h"
#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/composable_sim.h"
#include "tests/bench/packing/dynamic_sim.h"
#include "tests/bench/packing/openb_trace.h"
#include "tests/bench/packing/static_sim.h"
#include "tests/bench/packing/upper_bound.h"
#include "tests/support/temp_dir.h"

namespace switchyard::sharing {
namespace {

ShareNode node(std::string name, int gpus, uint8_t model = 0, int32_t cpu = 64000) {
  ShareNode n;
  n.name = std::move(name);
  n.cpuCapacity = n.cpuLeft = cpu;
  n.memoryCapacity = n.memoryLeft = 256 * 1024;
  n.model = model;
  n.gpuLeft.assign(static_cast<size_t>(gpus), kMilliPerGpu);
  return n;
}

ShareRequest whole(int gpus, int32_t cpu = 4000) { return {.cpuMilli = cpu, .memoryMib = 1024, .gpuCount = gpus, .gpuMilli = 1000}; }
ShareRequest share(int32_t milli, int32_t cpu = 2000) { return {.cpuMilli = cpu, .memoryMib = 1024, .gpuCount = 1, .gpuMilli = milli}; }
// Shapes leave memory out.
ShareRequest shapeOf(ShareRequest r) {
  r.memoryMib = 0;
  return r;
}

// A random cluster of 2/4/8-GPU nodes over two models, and a random request stream like the trace's.
ShareCluster randomCluster(std::mt19937_64& rng, int nodes) {
  ModelTable models;
  models.intern("A");
  models.intern("B");
  std::vector<ShareNode> list;
  for (int i = 0; i < nodes; ++i) {
    int gpus = std::array{1, 2, 4, 8}[rng() % 4];
    list.push_back(node("n" + std::to_string(i), gpus, static_cast<uint8_t>(rng() % 2), static_cast<int32_t>(16000 + 16000 * (rng() % 4))));
  }
  return ShareCluster(std::move(list), models);
}

ShareRequest randomRequest(std::mt19937_64& rng) {
  ShareRequest r{.cpuMilli = static_cast<int32_t>(1000 * (1 + rng() % 12)), .memoryMib = static_cast<int64_t>(1024 * (1 + rng() % 8))};
  switch (rng() % 5) {
    case 0: break;  // CPU only
    case 1:
    case 2: r.gpuCount = 1; r.gpuMilli = static_cast<int32_t>(100 + 100 * (rng() % 9)); break;
    case 3: r.gpuCount = 1; r.gpuMilli = 1000; break;
    default: r.gpuCount = std::array{2, 4, 8}[rng() % 3]; r.gpuMilli = 1000; break;
  }
  if (r.gpuCount > 0 && rng() % 4 == 0) r.modelMask = 1u << (rng() % 2);
  return r;
}

// The same stream with half of the shares asked as MIG instances (1g..4g).
ShareRequest randomRequestWithMig(std::mt19937_64& rng) {
  ShareRequest r = randomRequest(rng);
  if (r.sharesGpu() && rng() % 2 == 0) r = migRequest(r, static_cast<int>(rng() % kMigProfilesShared));
  return r;
}

constexpr int k1g = 0, k2g = 1, k3g = 2, k4g = 3;

TEST(ShareCluster, MigInstancesFollowTheA100SliceRules) {
  ShareCluster c({node("a", 1)}, {});
  const ShareRequest three = migRequest(share(100), k3g), one = migRequest(share(100), k1g);
  EXPECT_EQ(three.gpuMilli, 428);
  EXPECT_FALSE(validate(three));
  // 3g may start at memory slice 0 or 4; at 4 it leaves 0-3 free for 4g, 2g and 1g.
  const SharePlacement first = c.apply({0, pickBestFitGpu(c.node(0), three)}, three);
  EXPECT_EQ(first.gpus.migStart, 4);
  const SharePlacement second = c.apply({0, pickBestFitGpu(c.node(0), three)}, three);
  EXPECT_EQ(second.gpus.migStart, 0);
  EXPECT_EQ(c.node(0).gpuLeft[0], 144) << "one compute slice is left";
  EXPECT_FALSE(fits(c.node(0), one)) << "but no memory slice at an allowed 1g start";
  EXPECT_FALSE(fits(c.node(0), share(100))) << "a carved GPU serves only MIG instances";
  c.release(first, three);
  EXPECT_FALSE(fits(c.node(0), migRequest(share(100), k4g))) << "4g starts only at slice 0, which the other 3g holds";
  EXPECT_TRUE(fits(c.node(0), migRequest(share(100), k2g)));
  c.release(second, three);
  EXPECT_EQ(c.node(0).migTakenOn(0), 0);
  EXPECT_EQ(c.allocatedGpuMilli(), 0);

  // A GPU partly used by a milli share cannot be carved.
  const SharePlacement shared = c.apply({0, pickBestFitGpu(c.node(0), share(300))}, share(300));
  EXPECT_FALSE(fits(c.node(0), one));
  c.release(shared, share(300));
  EXPECT_TRUE(fits(c.node(0), one));

  // Seven 1g instances fill a GPU.
  std::vector<SharePlacement> ones;
  for (int i = 0; i < 7; ++i) ones.push_back(c.apply({0, pickBestFitGpu(c.node(0), one)}, one));
  EXPECT_FALSE(fits(c.node(0), one));
  EXPECT_THROW(c.release(SharePlacement{0, pickBestFitGpu(c.node(0), whole(1))}, one), std::logic_error) << "no start given";
  for (const auto& p : ones) c.release(p, one);
  EXPECT_TRUE(fits(c.node(0), whole(1)));
}

TEST(ShareRequest, ValidateChecksMigRequests) {
  ShareRequest bad = migRequest(share(100), k2g);
  bad.gpuMilli = 300;
  EXPECT_TRUE(validate(bad));
  bad = migRequest(whole(2), k1g);
  bad.gpuCount = 2;
  EXPECT_TRUE(validate(bad));
  bad = migRequest(share(100), k1g);
  bad.mig = 4;  // 7g is a whole GPU, not a share
  EXPECT_TRUE(validate(bad));
}

TEST(ShareCluster, FitsChecksEveryResource) {
  ShareNode n = node("n", 2);
  EXPECT_TRUE(fits(n, whole(2)));
  EXPECT_FALSE(fits(n, whole(3)));
  n.gpuLeft[0] = 300;
  EXPECT_FALSE(fits(n, whole(2)));
  EXPECT_TRUE(fits(n, share(300)));
  EXPECT_FALSE(fits(n, ShareRequest{.cpuMilli = 70000, .gpuCount = 1, .gpuMilli = 100}));
  EXPECT_FALSE(fits(n, ShareRequest{.memoryMib = 300 * 1024}));
  EXPECT_FALSE(fits(n, ShareRequest{.cpuMilli = 1, .gpuCount = 1, .gpuMilli = 100, .modelMask = 1u << 3}));
  EXPECT_TRUE(fits(n, ShareRequest{.cpuMilli = 1, .gpuCount = 1, .gpuMilli = 100, .modelMask = 1u}));
}

TEST(ShareCluster, ApplyRejectsAnInvalidPlacementAndReleaseUndoesApply) {
  ShareCluster c({node("a", 2)}, {});
  GpuPick same;
  same.add(0);
  same.add(0);
  EXPECT_THROW(c.apply({0, same}, whole(2)), std::logic_error);  // the same GPU twice
  SharePlacement p{0, pickBestFitGpu(c.node(0), share(400))};
  c.apply(p, share(400));
  EXPECT_EQ(c.allocatedGpuMilli(), 400);
  EXPECT_EQ(c.node(0).gpuLeft[0], 600);
  c.release(p, share(400));
  EXPECT_EQ(c.allocatedGpuMilli(), 0);
  EXPECT_EQ(c.node(0).cpuLeft, c.node(0).cpuCapacity);
}

TEST(ShareRequest, ValidateNamesTheProblem) {
  EXPECT_FALSE(validate(share(500)));
  EXPECT_TRUE(validate(ShareRequest{.gpuCount = 2, .gpuMilli = 500}));
  EXPECT_TRUE(validate(ShareRequest{.gpuCount = kMaxGpusPerNode + 1, .gpuMilli = 1000}));
  EXPECT_TRUE(validate(ShareRequest{.gpuCount = 1, .gpuMilli = 0}));
}

TEST(Fragmentation, SummaryFormMatchesTheReferenceDefinition) {
  std::mt19937_64 rng(3);
  ShareCluster c = randomCluster(rng, 40);
  std::vector<ShareRequest> sample;
  for (int i = 0; i < 400; ++i) sample.push_back(randomRequest(rng));
  ShapeMix mix = typicalShapes(sample);
  auto policy = makeBestFitPolicy();
  for (const auto& r : sample) {
    if (auto p = policy->choose(c, r)) c.apply(*p, r);
    for (const auto& n : c.nodes()) ASSERT_NEAR(fragmentation(NodeSummary::of(n), mix), nodeFragmentation(n, mix), 1e-6);
  }
}

TEST(Fragmentation, SummaryFormMatchesTheReferenceForMigShapesOnUncarvedNodes) {
  std::mt19937_64 rng(4);
  ShareCluster c = randomCluster(rng, 40);
  std::vector<ShareRequest> sample, mixSample;
  for (int i = 0; i < 400; ++i) sample.push_back(randomRequest(rng));  // milli only: no node gets carved
  for (int i = 0; i < 400; ++i) mixSample.push_back(randomRequestWithMig(rng));
  const ShapeMix mix = typicalShapes(mixSample);
  ASSERT_TRUE(std::any_of(mix.begin(), mix.end(), [](const WeightedShape& w) { return w.shape.isMig(); }));
  auto policy = makeBestFitPolicy();
  for (const auto& r : sample) {
    if (auto p = policy->choose(c, r)) c.apply(*p, r);
    for (const auto& n : c.nodes()) ASSERT_NEAR(fragmentation(NodeSummary::of(n), mix), nodeFragmentation(n, mix), 1e-6);
  }
}

TEST(Fragmentation, FollowsTheMigSliceLayout) {
  ShareCluster c({node("n", 2)}, {});
  const ShareRequest three = migRequest(share(100, 1000), k3g);
  (void)c.apply({0, pickBestFitGpu(c.node(0), three)}, three);
  (void)c.apply({0, pickBestFitGpu(c.node(0), three)}, three);
  ASSERT_EQ(c.node(0).gpuLeft, (std::vector<int32_t>{144, 1000}));
  const ShapeMix oneG{{shapeOf(migRequest(share(100, 1000), k1g)), 1.0}};
  EXPECT_DOUBLE_EQ(nodeFragmentation(c.node(0), oneG), 144) << "144 milli left, but no 1g start free on GPU 0";
  const ShapeMix milli{{shapeOf(share(100, 1000)), 1.0}};
  EXPECT_DOUBLE_EQ(nodeFragmentation(c.node(0), milli), 144) << "a carved GPU serves no milli share";
  ShareCluster d({node("m", 2)}, {});
  (void)d.apply({0, pickBestFitGpu(d.node(0), share(400, 1000))}, share(400, 1000));
  EXPECT_DOUBLE_EQ(nodeFragmentation(d.node(0), oneG), 600) << "a time-sliced GPU cannot be carved";
}

TEST(Fragmentation, CountsGpusTooSmallForAShapeAndAllGpusOfANodeThatCannotServeIt) {
  ShareNode n = node("n", 2);
  n.gpuLeft = {300, 1000};
  ShapeMix half{{share(500), 1.0}};
  EXPECT_DOUBLE_EQ(nodeFragmentation(n, half), 300);  // the 300 left on GPU 0 cannot hold a half GPU
  ShapeMix two{{whole(2), 1.0}};
  EXPECT_DOUBLE_EQ(nodeFragmentation(n, two), 1300);  // cannot serve 2 GPUs at all
  ShapeMix cpuOnly{{ShareRequest{.cpuMilli = 1000}, 1.0}};
  EXPECT_DOUBLE_EQ(nodeFragmentation(n, cpuOnly), 1300);  // CPU-only shapes never use GPUs
}

TEST(ShapeMix, KeepsTheCommonShapesUpToTheCoverage) {
  std::vector<ShareRequest> reqs(90, whole(1));
  reqs.insert(reqs.end(), 9, share(500));
  reqs.push_back(whole(8));
  ShapeMix mix = typicalShapes(reqs, {.coverage = 0.95});
  ASSERT_EQ(mix.size(), 2u);
  EXPECT_EQ(mix[0].shape, shapeOf(whole(1)));
  EXPECT_NEAR(mix[0].weight + mix[1].weight, 1.0, 1e-12);
  EXPECT_NEAR(mix[0].weight, 90.0 / 99.0, 1e-12);
}

TEST(ShapeLearner, LearnsTheMixOfRecentRequests) {
  ShapeLearner learner(100, {}, 10);
  for (int i = 0; i < 300; ++i) learner.observe(i % 4 == 0 ? share(500) : whole(1));
  ASSERT_EQ(learner.mix().size(), 2u);
  EXPECT_EQ(learner.mix()[0].shape, shapeOf(whole(1)));
  EXPECT_NEAR(learner.mix()[0].weight, 0.75, 0.02);
}

// Property tests: every policy, many random streams.
class EveryPolicy : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryPolicy, NeverOverAllocatesAndRespectsModelsAndIsDeterministic) {
  for (uint64_t seed : {1, 2, 3}) {
    auto run = [&] {
      std::mt19937_64 rng(seed);
      ShareCluster c = randomCluster(rng, 30);
      std::vector<ShareRequest> reqs;
      for (int i = 0; i < 500; ++i) reqs.push_back(randomRequestWithMig(rng));
      auto policy = makeSharePolicy(GetParam(), {.seed = seed, .oracleMix = typicalShapes(reqs)});
      std::vector<std::optional<SharePlacement>> out;
      // Kept apart from the cluster: MIG memory slices and compute slices per GPU, and GPUs with milli shares.
      std::map<std::pair<size_t, int>, std::pair<uint8_t, int>> carved;
      std::set<std::pair<size_t, int>> timeSliced;
      for (const auto& r : reqs) {
        policy->observe(r);
        auto p = policy->choose(c, r);
        if (p) {
          const ShareNode& n = c.node(p->node);
          EXPECT_TRUE(valid(n, r, p->gpus)) << GetParam() << " placed a request that does not fit on " << n.name;
          EXPECT_TRUE(n.serves(r.modelMask) || r.gpuCount == 0);
          const SharePlacement applied = c.apply(*p, r);
          const std::pair<size_t, int> gpu{applied.node, applied.gpus.index[0]};
          if (r.isMig()) {
            auto& [slices, compute] = carved[gpu];
            const uint8_t mask = memoryMask(r.migProfile(), applied.gpus.migStart);
            EXPECT_EQ(slices & mask, 0) << GetParam() << " overlapped MIG instances";
            slices = static_cast<uint8_t>(slices | mask);
            compute += std::array{1, 2, 3, 4}[static_cast<size_t>(r.mig)];
            EXPECT_LE(compute, 7) << GetParam() << " over-allocated compute slices";
            EXPECT_FALSE(timeSliced.contains(gpu)) << GetParam() << " carved a time-sliced GPU";
          } else if (r.sharesGpu()) {
            timeSliced.insert(gpu);
            EXPECT_FALSE(carved.contains(gpu)) << GetParam() << " time-sliced a carved GPU";
          }
        } else if (GetParam() != "hived-buddy") {  // a buddy allocator refuses misaligned GPUs by design
          for (const auto& n : c.nodes()) EXPECT_FALSE(fits(n, r)) << GetParam() << " refused a request that fits " << n.name;
        }
        out.push_back(p);
      }
      EXPECT_FALSE(carved.empty()) << GetParam() << " placed no MIG instance: the MIG checks did not run";
      for (const auto& n : c.nodes()) {
        EXPECT_GE(n.cpuLeft, 0);
        EXPECT_GE(n.memoryLeft, 0);
        for (int32_t g : n.gpuLeft) EXPECT_TRUE(g >= 0 && g <= kMilliPerGpu);
      }
      std::vector<std::pair<size_t, std::vector<int>>> flat;
      for (const auto& p : out)
        flat.emplace_back(p ? p->node : SIZE_MAX,
                          p ? std::vector<int>(p->gpus.index.begin(), p->gpus.index.begin() + p->gpus.count) : std::vector<int>{});
      return flat;
    };
    EXPECT_EQ(run(), run()) << GetParam() << " is not deterministic for seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Sharing, EveryPolicy, ::testing::ValuesIn(sharePolicyNames()),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(FgdPolicy, CachedFormDecidesExactlyAsTheNaiveForm) {
  std::mt19937_64 rng(9);
  ShareCluster a = randomCluster(rng, 30);
  ShareCluster b = a;
  std::vector<ShareRequest> reqs;
  for (int i = 0; i < 600; ++i) reqs.push_back(randomRequest(rng));
  ShapeMix mix = typicalShapes(reqs);
  auto naive = makeFgdPolicy(mix, false);
  auto cached = makeFgdPolicy(mix, true);
  for (const auto& r : reqs) {
    auto p = naive->choose(a, r);
    auto q = cached->choose(b, r);
    ASSERT_EQ(p.has_value(), q.has_value());
    if (!p) continue;
    ASSERT_EQ(p->node, q->node);
    ASSERT_EQ(p->gpus.index, q->gpus.index);
    a.apply(*p, r);
    b.apply(*q, r);
  }
}

TEST(FgdPolicy, ChoosesTheGpuThatKeepsTheMixServableNotTheTightestOne) {
  // Half-GPU requests are the whole mix. A 300 request on the 600 GPU (best fit) would leave 300 that no
  // half-GPU request can use; on the 700 GPU, 400. On the fresh GPU every GPU can still take a half.
  ShareNode n = node("n", 3);
  n.gpuLeft = {700, 600, 1000};
  ShareCluster c({n}, {});
  auto fgd = makeFgdPolicy({{share(500), 1.0}});
  auto p = fgd->choose(c, share(300));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->gpus.index[0], 2);
  EXPECT_EQ(pickBestFitGpu(c.node(0), share(300)).index[0], 1);  // best fit would differ
}

TEST(SwitchyardPolicy, PacksAPartlyUsedGpuBeforeOpeningAFreshNode) {
  ShareNode used = node("used", 2);
  used.gpuLeft = {500, 1000};
  ShareCluster c({node("empty", 2), used}, {});
  auto ours = makeSwitchyardSharePolicy({.learnMix = false, .fixedMix = {{share(500), 0.5}, {whole(2), 0.5}}});
  auto p = ours->choose(c, share(500));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->node, 1u);  // keeps the empty node whole for 2-GPU requests
  EXPECT_EQ(p->gpus.index[0], 0);
}

TEST(SwitchyardPolicy, CachedDecisionsFollowNodeChanges) {
  ShareCluster c({node("a", 1), node("b", 1)}, {});
  auto ours = makeSwitchyardSharePolicy({.learnMix = false, .fixedMix = {{whole(1), 1.0}}});
  auto first = ours->choose(c, whole(1));
  ASSERT_TRUE(first);
  c.apply(*first, whole(1));
  auto second = ours->choose(c, whole(1));
  ASSERT_TRUE(second);
  EXPECT_NE(second->node, first->node);  // the cache must see that the first node is now full
  c.apply(*second, whole(1));
  EXPECT_FALSE(ours->choose(c, whole(1)));
}

// Composable mode of the benchmark: views over switch enclosures, and the LP bound.
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

TEST(UpperBound, PoolsCpuAndRespectsModelSets) {
  ModelTable models;
  models.intern("A");
  models.intern("B");
  std::vector<ShareNode> list{node("a", 1, 0, 5000), node("b", 1, 1, 5000)};
  const ShareCluster c(std::move(list), models);
  // Two whole-GPU requests of 8 cores each and 10 cores in all: 1 + 2/8 of them.
  std::vector<ShareRequest> r{{.cpuMilli = 8000, .gpuCount = 1, .gpuMilli = 1000}, {.cpuMilli = 8000, .gpuCount = 1, .gpuMilli = 1000}};
  EXPECT_NEAR(*bench::allocationUpperBound(c, r), 1250.0, 1e-6);
  // Three 1-core requests that all need model A: only A's one GPU.
  r.assign(3, ShareRequest{.cpuMilli = 1000, .gpuCount = 1, .gpuMilli = 1000, .modelMask = 1u});
  EXPECT_NEAR(*bench::allocationUpperBound(c, r), 1000.0, 1e-6);
  r.push_back({.cpuMilli = 1000, .gpuCount = 1, .gpuMilli = 500});
  EXPECT_NEAR(*bench::allocationUpperBound(c, r), 1500.0, 1e-6);
  EXPECT_NEAR(*bench::allocationUpperBound(c, {}), 0.0, 1e-9);
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

TEST(DynamicSimulation, LightLoadIsAllAcceptedAndOverloadQueuesAndGivesUp) {
  const std::string dir = std::string(SWITCHYARD_SOURCE_DIR) + "/tests/data/openb-mini/";
  auto servers = bench::loadOpenbNodes(dir + "openb_node_list_gpu_node.csv");
  ASSERT_TRUE(servers) << servers.error();
  ModelTable models = servers->models();
  auto pods = bench::loadOpenbPods(dir + "openb_pod_list_default.csv", models);
  ASSERT_TRUE(pods) << pods.error();
  const bench::ComposableShape composable{.slots = 4, .enclosurePorts = 2, .hostPorts = 2, .deviceLimit = 8};
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

TEST(BuddyPolicy, TakesAlignedCellsAndSplitsWhatIsAlreadySplit) {
  ModelTable models;
  models.intern("A");
  std::vector<ShareNode> list{node("n0", 8), node("n1", 8)};
  ShareCluster c(std::move(list), models);
  auto buddy = makeSharePolicy("hived-buddy", {});
  // A 1-GPU request splits n0's 8-cell; the next 2-GPU request goes into the split half (cell [2,4)), not
  // into n1's whole 8-cell.
  auto p = buddy->choose(c, whole(1));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->node, 0u);
  EXPECT_EQ(p->gpus.index[0], 0);
  c.apply(*p, whole(1));
  p = buddy->choose(c, whole(2));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->node, 0u);
  EXPECT_EQ(p->gpus.index[0], 2);
  EXPECT_EQ(p->gpus.index[1], 3);
  c.apply(*p, whole(2));
  // A 4-GPU request takes the aligned cell [4,8) of n0.
  p = buddy->choose(c, whole(4));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->node, 0u);
  EXPECT_EQ(p->gpus.index[0], 4);
}

TEST(BuddyPolicy, RefusesGpusThatAreFreeButNotAnAlignedCell) {
  ModelTable models;
  models.intern("A");
  std::vector<ShareNode> list{node("n0", 4)};
  ShareCluster c(std::move(list), models);
  // GPUs 1 and 2 free: enough for two GPUs, but no aligned 2-cell ([0,2) and [2,4) are both split).
  SharePlacement taken{0, {}};
  taken.gpus.add(0);
  taken.gpus.add(3);
  c.apply(taken, whole(2));
  EXPECT_TRUE(fits(c.node(0), whole(2)));
  EXPECT_FALSE(makeSharePolicy("hived-buddy", {})->choose(c, whole(2)));
  EXPECT_TRUE(makeSharePolicy("first-fit", {})->choose(c, whole(2)));
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
