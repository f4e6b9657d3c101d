// GPU-sharing packing core: the cluster model (milli shares and MIG slices), fragmentation, shape mixes and
// every policy. The benchmark harness built on it is tested in packbench_harness_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "composer/packing/sharing/fragmentation.h"
#include "composer/packing/sharing/share_policy.h"
#include "tests/support/share_fixtures.h"

namespace switchyard::sharing {
namespace {

using namespace fixtures;

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

TEST(ShareCluster, ChangeLogListsChangedNodesUntilItNoLongerReaches) {
  ShareCluster c({node("a", 2), node("b", 2)}, {});
  const auto changesSince = [&](uint64_t since) {
    std::vector<size_t> nodes;
    if (!c.forEachChangeSince(since, [&](size_t n) { nodes.push_back(n); })) return std::optional<std::vector<size_t>>{};
    return std::optional(nodes);
  };
  EXPECT_EQ(c.changeCount(), 0u);
  const SharePlacement onA = c.apply({0, pickExclusiveGpus(c.node(0), whole(1))}, whole(1));
  c.apply({1, pickExclusiveGpus(c.node(1), whole(1))}, whole(1));
  c.release(onA, whole(1));
  c.replaceNode(1, node("b", 2));
  EXPECT_EQ(changesSince(0), (std::vector<size_t>{0, 1, 0, 1}));
  EXPECT_EQ(changesSince(2), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(changesSince(4), std::vector<size_t>{});
  EXPECT_FALSE(changesSince(5)) << "ahead of this cluster";
  for (size_t k = 0; k < ShareCluster::kChangeLogSize; ++k) c.release(c.apply(onA, whole(1)), whole(1));
  EXPECT_FALSE(changesSince(0)) << "the log keeps the last kChangeLogSize changes";
  const auto last = changesSince(c.changeCount() - ShareCluster::kChangeLogSize);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->size(), ShareCluster::kChangeLogSize);
  EXPECT_TRUE(std::all_of(last->begin(), last->end(), [](size_t n) { return n == 0; }));
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
    for (const auto& n : c.nodes()) {
      ASSERT_NEAR(fragmentation(NodeSummary::of(n), mix), nodeFragmentation(n, mix), 1e-6);
      ASSERT_NEAR(fragmentation(NodeSummary::of(n), mix, OtherModels::kIgnored), nodeFragmentation(n, mix, OtherModels::kIgnored), 1e-6);
    }
  }
  ASSERT_TRUE(std::any_of(mix.begin(), mix.end(), [](const WeightedShape& w) { return w.shape.modelMask != kAnyModel; }));
}

TEST(Fragmentation, ShapesForOtherModelsCanBeLeftOut) {
  ModelTable models;
  models.intern("A");
  models.intern("B");
  ShareNode a = node("a", 2, 0);
  a.gpuLeft = {400, 1000};
  const ShapeMix mix{{whole(1), 0.5}, {ShareRequest{.cpuMilli = 1000, .gpuCount = 1, .gpuMilli = 1000, .modelMask = 1u << 1}, 0.5}};
  // FGD: the B-only shape cannot use A's GPUs, so all 1,400 idle milli count for it; the any-model shape
  // counts the 400 it cannot use.
  EXPECT_NEAR(nodeFragmentation(a, mix), 0.5 * 400 + 0.5 * 1400, 1e-9);
  EXPECT_NEAR(nodeFragmentation(a, mix, OtherModels::kIgnored), 0.5 * 400, 1e-9);
  EXPECT_NEAR(fragmentation(NodeSummary::of(a), mix, OtherModels::kIgnored), 0.5 * 400, 1e-9);
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

// Sampling noise must not churn the mix (every change drops the policy's caches), but a real shift must land.
TEST(ShapeLearner, KeepsItsMixThroughSamplingNoiseAndFollowsARealShift) {
  // Ten shapes with geometric weights: the last ones sit at the 95 % coverage cut-off and flip in and out of
  // the mix from one window to the next.
  std::vector<ShareRequest> shapes;
  std::vector<double> weights;
  for (int i = 0; i < 10; ++i) {
    shapes.push_back(share(100 + 50 * i));
    weights.push_back(std::pow(0.7, i));
  }
  ShapeLearner learner;  // the policy's defaults: a 5,000-request window, refreshed every 500
  std::mt19937_64 rng(5);
  std::discrete_distribution<size_t> draw(weights.begin(), weights.end());
  for (int i = 0; i < 10'000; ++i) learner.observe(shapes[draw(rng)]);
  const size_t settled = learner.generation();
  for (int i = 0; i < 20'000; ++i) learner.observe(shapes[draw(rng)]);
  EXPECT_EQ(learner.generation(), settled) << "40 refreshes of a stationary stream changed the mix";
  EXPECT_EQ(learner.mix()[0].shape, shapeOf(shapes[0]));

  std::reverse(weights.begin(), weights.end());
  std::discrete_distribution<size_t> shifted(weights.begin(), weights.end());
  for (int i = 0; i < 5'000; ++i) learner.observe(shapes[shifted(rng)]);
  EXPECT_GT(learner.generation(), settled);
  EXPECT_EQ(learner.mix()[0].shape, shapeOf(shapes[9]));
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

// Two one-GPU servers, B listed first. Most of the mix asks for B only, a little for A only. A request that can
// go anywhere: FGD's measure (the default) counts A's idle GPU as fragmented for the B-only shapes, so taking it
// looks like the bigger gain, and the A-only request that follows finds A gone. With kIgnored the policy
// measures A for the shapes that can use A only, sees no difference, and keeps to the earlier server. (Which
// does better over a whole trace depends on the mode: packing.md, section 2.)
TEST(SwitchyardPolicy, OwnModelsOnlyKeepsAModelForTheRequestsThatNeedIt) {
  ModelTable models;
  models.intern("A");
  models.intern("B");
  const auto onlyOn = [](int model) { return ShareRequest{.cpuMilli = 1000, .gpuCount = 1, .gpuMilli = 1000, .modelMask = 1u << model}; };
  const ShapeMix mix{{whole(1), 0.5}, {onlyOn(1), 0.4}, {onlyOn(0), 0.1}};
  const std::vector<ShareRequest> requests{whole(1), onlyOn(0)};
  auto placed = [&](SharePolicy& policy) {
    ShareCluster c({node("b", 1, 1), node("a", 1, 0)}, models);
    int n = 0;
    for (const auto& r : requests)
      if (auto p = policy.choose(c, r)) {
        c.apply(*p, r);
        ++n;
      }
    return n;
  };
  auto ownOnly = makeSwitchyardSharePolicy({.learnMix = false, .fixedMix = mix, .otherModels = OtherModels::kIgnored});
  auto byDefault = makeSwitchyardSharePolicy({.learnMix = false, .fixedMix = mix});
  EXPECT_EQ(placed(*ownOnly), 2);
  EXPECT_EQ(placed(*byDefault), 1);
  EXPECT_EQ(placed(*makeFgdPolicy(mix)), 1);
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

// The indexed core reads node changes from the cluster's change log: it must also see them when more changes
// happened than the log keeps, and when it is handed another cluster with as many changes.
TEST(SwitchyardPolicy, SeesChangesBeyondTheChangeLogAndOnAnotherCluster) {
  ShareCluster c({node("a", 1), node("b", 1)}, {});
  auto ours = makeSwitchyardSharePolicy({.learnMix = false, .fixedMix = {{whole(1), 1.0}}});
  ASSERT_EQ(ours->choose(c, whole(1))->node, 0u);
  c.apply({0, pickExclusiveGpus(c.node(0), whole(1))}, whole(1));
  for (size_t k = 0; k < ShareCluster::kChangeLogSize; ++k)
    c.release(c.apply({1, pickExclusiveGpus(c.node(1), share(100))}, share(100)), share(100));
  ASSERT_GT(c.changeCount(), ShareCluster::kChangeLogSize);
  const auto afterChurn = ours->choose(c, whole(1));
  ASSERT_TRUE(afterChurn);
  EXPECT_EQ(afterChurn->node, 1u) << "node a filled before the log wrapped";

  ShareCluster aFull({node("a", 1), node("b", 1)}, {}), bFull({node("a", 1), node("b", 1)}, {});
  aFull.apply({0, pickExclusiveGpus(aFull.node(0), whole(1))}, whole(1));
  bFull.apply({1, pickExclusiveGpus(bFull.node(1), whole(1))}, whole(1));
  auto fresh = makeSwitchyardSharePolicy({.learnMix = false, .fixedMix = {{whole(1), 1.0}}});
  EXPECT_EQ(fresh->choose(aFull, whole(1))->node, 1u);
  EXPECT_EQ(fresh->choose(bFull, whole(1))->node, 0u) << "same change count, other cluster";

  // Memory is read from the mirror too: a node whose memory a placement used up is passed over.
  ShareCluster m({node("a", 4), node("b", 4)}, {});
  auto ours2 = makeSwitchyardSharePolicy({.learnMix = false, .fixedMix = {{whole(1), 1.0}}});
  ShareRequest hungry = whole(1);
  hungry.memoryMib = 200 * 1024;
  const auto first = ours2->choose(m, hungry);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->node, 0u);
  m.apply(*first, hungry);
  const auto second = ours2->choose(m, hungry);
  ASSERT_TRUE(second) << "node b still has the memory";
  EXPECT_EQ(second->node, 1u) << "node a has 56 GiB left, not 200";
}

// With FGD's sigmoid bins, FGD's mix and FGD's measure for other models, our indexed core must pick FGD's node
// every time: same objective, same bins, ties to the earliest node. Both decide on one cluster that follows FGD's placements.
TEST(SwitchyardPolicy, WithSigmoidBinsAndTheSameMixPicksFgdsNode) {
  std::mt19937_64 rng(9);
  ShareCluster c = randomCluster(rng, 40);
  std::vector<ShareRequest> reqs;
  for (int i = 0; i < 600; ++i) reqs.push_back(randomRequest(rng));
  const ShapeMix mix = typicalShapes(reqs);
  auto fgd = makeFgdPolicy(mix);
  auto ours = makeSwitchyardSharePolicy(
      {.deltaResolution = kSigmoidBins, .learnMix = false, .fixedMix = mix, .otherModels = OtherModels::kFragmented});
  int placed = 0;
  for (const auto& r : reqs) {
    auto want = fgd->choose(c, r);
    auto got = ours->choose(c, r);
    ASSERT_EQ(want.has_value(), got.has_value());
    if (!want) continue;
    ASSERT_EQ(got->node, want->node) << "request " << placed;
    c.apply(*want, r);
    ++placed;
  }
  EXPECT_GT(placed, 100);
}

// Composable mode of the benchmark: views over switch enclosures, and the LP bound.

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
