// The packing benchmark's utilization-loop simulation (tests/bench/packing/loop_sim.h) on the hand-made openb
// trace: its FIFO mode is the dynamic mode, and the loop's rules do what ADR 0017 and ADR 0019 say.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <optional>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/dynamic_sim.h"
#include "tests/bench/packing/fair_share.h"
#include "tests/bench/packing/loop_sim.h"
#include "tests/bench/packing/openb_trace.h"

namespace switchyard::bench {
namespace {

class LoopSimulation : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = std::string(SWITCHYARD_SOURCE_DIR) + "/tests/data/openb-mini/";
    auto nodes = loadOpenbNodes(dir + "openb_node_list_gpu_node.csv");
    ASSERT_TRUE(nodes) << nodes.error();
    sharing::ModelTable models = nodes->models();
    auto list = loadOpenbPods(dir + "openb_pod_list_default.csv", models);
    ASSERT_TRUE(list) << list.error();
    servers = std::move(*nodes);
    pods = std::move(*list);
  }
  LoopResult run(const ComposableShape* shape, const LoopOptions& o) {
    return runLoop(*servers, shape, *pods, [](const ComposablePool*) { return sharing::makeSharePolicy("fgd", {}); }, o);
  }
  static LoopOptions options(double load, bool fullLoop) {
    LoopOptions o;
    o.arrivals = {.load = load, .arrivals = 3000, .warmup = 1000, .patienceSeconds = 1800, .seed = 7};
    o.rules.fullLoop = fullLoop;
    return o;
  }
  std::optional<sharing::ShareCluster> servers;
  std::optional<std::vector<TracePod>> pods;
  const ComposableShape composable{.slots = 4, .enclosurePorts = 2, .hostPorts = 2, .deviceLimit = 8};
};

// With nobody over-provisioned, FIFO is the dynamic mode step for step: the same arrivals, the same
// decisions, the same figures.
TEST_F(LoopSimulation, FifoWithoutOverProvisioningIsTheDynamicMode) {
  for (const ComposableShape* shape : {static_cast<const ComposableShape*>(nullptr), &composable}) {
    LoopOptions o = options(1.4, false);
    o.workload.overprovisionedShare = 0;
    const LoopResult loop = run(shape, o);
    auto policy = sharing::makeSharePolicy("fgd", {});
    const DynamicResult dynamic = runDynamic(*servers, shape, *pods, *policy, o.arrivals);
    EXPECT_EQ(loop.all.arrived, dynamic.arrived);
    EXPECT_EQ(loop.all.accepted, dynamic.accepted);
    EXPECT_EQ(loop.all.gaveUp, dynamic.gaveUp);
    EXPECT_DOUBLE_EQ(loop.all.servedGpuTime, dynamic.acceptedGpuTime);
    EXPECT_DOUBLE_EQ(loop.meanAllocationPercent, dynamic.meanAllocationPercent);
    EXPECT_EQ(loop.reclaims, 0u);
    EXPECT_EQ(loop.all.preemptions, 0u);
    EXPECT_DOUBLE_EQ(loop.idleGpuTime, 0);
  }
}

// Every measured request counts once in each breakdown.
TEST_F(LoopSimulation, EveryRequestCountsOnceByClassTenantAndSize) {
  const LoopResult r = run(&composable, options(1.4, true));
  auto sum = [](const auto& groups, auto field) {
    return std::accumulate(groups.begin(), groups.end(), 0.0, [&](double s, const LoopGroup& g) { return s + field(g); });
  };
  auto arrived = [](const LoopGroup& g) { return static_cast<double>(g.arrived); };
  auto served = [](const LoopGroup& g) { return g.servedGpuTime; };
  EXPECT_EQ(r.all.arrived, 3000u);
  EXPECT_EQ(sum(r.byClass, arrived), 3000);
  EXPECT_EQ(sum(r.byTenant, arrived), 3000);
  EXPECT_EQ(sum(r.bySize, arrived), 3000);
  EXPECT_NEAR(sum(r.byClass, served), r.all.servedGpuTime, 1e-6 * r.all.servedGpuTime);
  EXPECT_NEAR(sum(r.byTenant, served), r.all.servedGpuTime, 1e-6 * r.all.servedGpuTime);
  EXPECT_LE(r.all.servedGpuTime, r.all.offeredGpuTime);
  EXPECT_GT(r.busyGpuTime, 0);
}

// Reclaim cuts the idle end of over-provisioned systems (whole GPUs and shares), and only that: the idle share of what
// was allocated falls; with a reclaim threshold nobody reaches, nothing is reclaimed.
TEST_F(LoopSimulation, ReclaimGivesBackTheIdleEndOfOverProvisionedSystems) {
  LoopOptions o = options(1.2, true);
  o.workload.overprovisionedShare = 0.6;
  o.workload.idleShare = 0.6;
  o.rules.reclaimAfterSeconds = 10;  // the hand-made pods live 100 s
  const LoopResult loop = run(&composable, o);
  o.rules.fullLoop = false;
  const LoopResult fifo = run(&composable, o);
  ASSERT_GT(fifo.idleGpuTime, 0);
  EXPECT_GT(loop.reclaims, 0u);
  EXPECT_GT(loop.reclaimedGpuTime, 0);
  EXPECT_LT(loop.idleGpuTime / (loop.idleGpuTime + loop.busyGpuTime), fifo.idleGpuTime / (fifo.idleGpuTime + fifo.busyGpuTime));
  EXPECT_EQ(fifo.reclaims, 0u);

  // Shares' systems are reclaimed too, as yardd does; the earlier rule (whole GPUs only) takes fewer.
  o.rules.fullLoop = true;
  o.rules.reclaimShares = false;
  const LoopResult wholeOnly = run(&composable, o);
  EXPECT_GT(wholeOnly.reclaims, 0u);
  EXPECT_LT(wholeOnly.reclaims, loop.reclaims) << "the mini trace has shares";

  o.rules.reclaimShares = true;
  o.rules.reclaimAfterSeconds = 1e9;
  EXPECT_EQ(run(&composable, o).reclaims, 0u);
}

// Classes order the queue: production is served most, spot is what preemption takes; with no spot, or with
// no production when batch may not preempt, nothing is preempted.
TEST_F(LoopSimulation, ProductionGoesFirstAndOnlySpotIsPreempted) {
  const LoopResult r = run(&composable, options(2.0, true));
  const LoopGroup& production = r.byClass[0];
  const LoopGroup& spot = r.byClass[2];
  auto served = [](const LoopGroup& g) { return g.servedGpuTime / g.offeredGpuTime; };
  EXPECT_GT(served(production), served(spot));
  EXPECT_GT(r.all.preemptions, 0u);
  EXPECT_EQ(spot.preemptions, r.all.preemptions);
  EXPECT_GT(spot.preemptedGpuTime, 0);

  LoopOptions noSpot = options(2.0, true);
  noSpot.workload.classShare = {0.2, 0.8, 0};
  EXPECT_EQ(run(&composable, noSpot).all.preemptions, 0u);

  LoopOptions batchAndSpot = options(2.0, true);
  batchAndSpot.workload.classShare = {0, 0.8, 0.2};
  batchAndSpot.rules.batchPreempts = false;
  EXPECT_EQ(run(&composable, batchAndSpot).all.preemptions, 0u);
  batchAndSpot.rules.batchPreempts = true;
  EXPECT_GT(run(&composable, batchAndSpot).all.preemptions, 0u);
}

// A tenant asking more than its weight allows is the one held back: under the loop every tenant gets
// closer to its weighted share than under FIFO.
TEST_F(LoopSimulation, FairShareBringsEveryTenantCloserToItsWeightedShare) {
  LoopOptions o = options(1.6, true);
  o.workload.tenantWeights = {1, 1};
  o.workload.tenantDemand = {0.85, 0.15};
  const LoopResult loop = run(&composable, o);
  o.rules.fullLoop = false;
  const LoopResult fifo = run(&composable, o);
  EXPECT_GT(loop.tenantRatio[1], fifo.tenantRatio[1]);
  EXPECT_GE(loop.jain, fifo.jain);
}

// Defragmentation (ADR 0033): a head that does not fit gets room from systems in their idle end moving to another
// enclosure their host reaches; without the rule nothing moves. The mini trace's pods live 100 s; reclaim is off so
// that idle ends last.
TEST_F(LoopSimulation, DefragmentationMovesIdleSystemsToLetTheHeadInAndNothingMovesWithoutIt) {
  LoopOptions o = options(1.6, true);
  o.workload.overprovisionedShare = 0.6;
  o.workload.idleShare = 0.6;
  o.rules.reclaimAfterSeconds = 1e9;
  const LoopResult off = run(&composable, o);
  EXPECT_EQ(off.moves, 0u);
  o.rules.defragment = true;
  const LoopResult on = run(&composable, o);
  EXPECT_GT(on.moves, 0u);
  EXPECT_GE(on.movedGpus, static_cast<double>(on.moves)) << "a moved system has at least one GPU";
  EXPECT_EQ(on.all.arrived, off.all.arrived) << "the same arrivals";
  o.rules.mostMovedGpus = 1;
  const LoopResult one = run(&composable, o);
  EXPECT_LE(one.movedGpus, static_cast<double>(one.moves)) << "at most one GPU a head: single-GPU systems only";
  EXPECT_EQ(run(nullptr, o).moves, 0u) << "a static cluster has nothing to move between";
}

// The charge is held GPUs plus recent use per unit of weight; what a tenant stopped holding counts less as time
// passes, and the fair line is everyone's use split by weight.
TEST(FairShareLedger, ChargesHeldAndRecentUsePerWeight) {
  FairShareLedger ledger({1, 3}, 3600);
  ledger.take(0, 3000);
  ledger.take(1, 3000);
  EXPECT_DOUBLE_EQ(ledger.charge(0), 3000);
  EXPECT_DOUBLE_EQ(ledger.charge(1), 1000) << "the same GPUs weigh a third for a tenant of weight 3";
  EXPECT_FALSE(ledger.belowFairLine(0));
  EXPECT_TRUE(ledger.belowFairLine(1));

  ledger.advanceTo(36'000);  // ten half-lives holding 3000: history close to 3000 * half-life / ln 2
  ledger.give(0, 3000);
  const double after = ledger.charge(0);
  EXPECT_NEAR(after, 3000 / std::log(2.0), 3000 * 0.01) << "recent use still counts once nothing is held";
  ledger.advanceTo(36'000 + 3600);
  EXPECT_NEAR(ledger.charge(0), after / 2, 1e-6) << "one half-life later it counts half";
}

TEST(WaterFill, WeightedMaxMinShares) {
  const auto s = waterFill({0.44, 0.33, 0.22, 0.11}, {1, 2, 3, 4}, 1.0);
  EXPECT_NEAR(s[0], 0.34, 1e-9);
  EXPECT_NEAR(s[1], 0.33, 1e-9);
  EXPECT_NEAR(s[2], 0.22, 1e-9);
  EXPECT_NEAR(s[3], 0.11, 1e-9);
  const auto tight = waterFill({5, 5}, {1, 3}, 4);  // nobody is satisfied: split by weight
  EXPECT_NEAR(tight[0], 1, 1e-9);
  EXPECT_NEAR(tight[1], 3, 1e-9);
  const auto idle = waterFill({0, 2}, {1, 1}, 4);  // no demand, no share; the rest is capped at demand
  EXPECT_EQ(idle[0], 0);
  EXPECT_NEAR(idle[1], 2, 1e-9);
}

}  // namespace
}  // namespace switchyard::bench
