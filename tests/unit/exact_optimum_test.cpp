// The optimality reference: the exact integer program on hand-made pools whose optimum is known, and on
// random small pools against every policy and the LP bound.
#include <gtest/gtest.h>

#include <random>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/composable_sim.h"
#include "tests/bench/packing/exact_optimum.h"
#include "tests/bench/packing/server_bound.h"
#include "tests/bench/packing/upper_bound.h"

namespace switchyard::bench {
namespace {

using sharing::ShareRequest;
using Wiring = ComposablePool::Wiring;

ShareRequest whole(int gpus, int32_t cpu = 1000) { return {.cpuMilli = cpu, .memoryMib = 1024, .gpuCount = gpus, .gpuMilli = 1000}; }
ShareRequest share(int32_t milli, int32_t cpu = 1000) { return {.cpuMilli = cpu, .memoryMib = 1024, .gpuCount = 1, .gpuMilli = milli}; }

// One fixed server: its GPUs bound to it.
Wiring server(int gpus, int32_t cpu = 64000) {
  Wiring w;
  w.hosts.push_back({cpu, 256 * 1024});
  w.enclosures.push_back({0, gpus, 0});
  w.links.emplace_back(0, 0);
  w.deviceLimit = gpus;
  return w;
}

double optimum(const Wiring& w, const std::vector<ShareRequest>& r) {
  auto result = exactOptimum(w, r, 30);
  EXPECT_TRUE(result.has_value()) << result.error();
  EXPECT_TRUE(result->proved);
  EXPECT_EQ(result->bestMilli, result->boundMilli);
  return result->bestMilli;
}

TEST(ExactOptimum, PacksSharesSoThatAWholeGpuStillFits) {
  // Spreading the two halves over both GPUs (worst fit, in arrival order) leaves no room for the whole one.
  EXPECT_EQ(optimum(server(2), {share(500), share(500), whole(1)}), 2000);
  // Shares that cannot pair (600 + 600 > 1000): one of them and the whole GPU beat both of them.
  EXPECT_EQ(optimum(server(2), {share(600), share(600), whole(1)}), 1600);
  // Three 400s and a 600 on one GPU: the best is 400 + 600 (= 1000), not 400 + 400.
  EXPECT_EQ(optimum(server(1), {share(400), share(400), share(400), share(600)}), 1000);
}

TEST(ExactOptimum, RespectsCpuMemoryAndModels) {
  // 4 cores: one of the two 3-core requests.
  EXPECT_EQ(optimum(server(2, 4000), {whole(1, 3000), whole(1, 3000)}), 1000);
  ShareRequest big = whole(1);
  big.memoryMib = 512 * 1024;  // more than the server has
  EXPECT_EQ(optimum(server(2), {big}), 0);
  ShareRequest otherModel = whole(1);
  otherModel.modelMask = 1u << 1;  // the server's GPUs are model 0
  EXPECT_EQ(optimum(server(2), {otherModel, share(300)}), 300);
  EXPECT_EQ(optimum(server(2), {whole(4)}), 0);  // more GPUs than the server has
  EXPECT_EQ(optimum(server(2), {}), 0);
}

TEST(ExactOptimum, AComposableGpuServesOneHostAndHostsKeepTheirDeviceLimit) {
  // One enclosure of 4 GPUs, cabled to two hosts that may each hold 2.
  Wiring w;
  w.hosts = {{64000, 256 * 1024}, {64000, 256 * 1024}};
  w.enclosures = {{0, 4, -1}};
  w.links = {{0, 0}, {1, 0}};
  w.deviceLimit = 2;
  EXPECT_EQ(optimum(w, {whole(2), whole(2), whole(2)}), 4000);  // two hosts x 2 GPUs
  EXPECT_EQ(optimum(w, {whole(3)}), 0);                          // over the device limit
  w.deviceLimit = 4;
  EXPECT_EQ(optimum(w, {whole(3), whole(2)}), 3000);             // 3 + 2 > 4 GPUs
  // One GPU, and each host has CPU for one request: two halves cannot share the GPU across hosts.
  w.enclosures = {{0, 1, -1}};
  w.hosts = {{1000, 256 * 1024}, {1000, 256 * 1024}};
  EXPECT_EQ(optimum(w, {share(500), share(500)}), 500);
  w.hosts[0].cpuMilli = 2000;  // now one host takes both
  EXPECT_EQ(optimum(w, {share(500), share(500)}), 1000);
}

TEST(ExactOptimum, NoPolicyBeatsItAndItNeverBeatsTheLpBound) {
  std::mt19937_64 rng(7);
  sharing::ModelTable models;
  models.intern("A");
  models.intern("B");
  const std::vector<std::string> policies{"first-fit", "best-fit", "worst-fit", "fgd", "switchyard", "hived-buddy"};
  for (int instance = 0; instance < 6; ++instance) {
    std::vector<sharing::ShareNode> nodes;
    for (int i = 0; i < 3; ++i) {
      sharing::ShareNode n;
      n.name = "n" + std::to_string(i);
      n.cpuCapacity = n.cpuLeft = std::uniform_int_distribution<int32_t>(4, 16)(rng) * 1000;
      n.memoryCapacity = n.memoryLeft = 64 * 1024;
      n.model = static_cast<uint8_t>(rng() % 2);
      n.gpuLeft.assign(size_t{1} << (rng() % 3), sharing::kMilliPerGpu);
      nodes.push_back(std::move(n));
    }
    const sharing::ShareCluster servers(std::move(nodes), models);
    std::vector<ShareRequest> requests;
    for (int i = 0; i < 10; ++i) {
      const int32_t cpu = std::uniform_int_distribution<int32_t>(1, 4)(rng) * 1000;
      requests.push_back(rng() % 2 ? share(std::uniform_int_distribution<int32_t>(1, 9)(rng) * 100, cpu)
                                   : whole(1 << (rng() % 3), cpu));
    }
    const ComposableShape shapes[] = {{.mirrorServers = true}, {.slots = 4, .enclosurePorts = 2, .hostPorts = 2, .deviceLimit = 4}};
    for (const auto& shape : shapes) {
      SCOPED_TRACE(::testing::Message() << "instance " << instance << ", " << shape.describe());
      auto exact = exactOptimum(ComposablePool(servers, shape).wiring(), requests, 30);
      ASSERT_TRUE(exact.has_value()) << exact.error();
      ASSERT_TRUE(exact->proved);
      const auto packing = packingUpperBound(servers, requests);
      ASSERT_TRUE(packing.has_value()) << packing.error();
      EXPECT_TRUE(packing->converged);
      EXPECT_LE(exact->bestMilli, packing->milli + 1e-6);
      EXPECT_LE(packing->milli, *pooledUpperBound(servers, requests) + 1e-6);
      // The pool's own bound is tighter still, and still a bound.
      const auto forPool = packingUpperBound(servers, requests, boundOptionsFor(shape));
      ASSERT_TRUE(forPool.has_value()) << forPool.error();
      EXPECT_LE(exact->bestMilli, forPool->milli + 1e-6);
      EXPECT_LE(forPool->milli, packing->milli + 1e-6);
      // So is the server LP, which keeps each request on one host.
      const auto server = serverUpperBound(servers, requests, serverBoundOptionsFor(shape));
      ASSERT_TRUE(server.has_value()) << server.error();
      EXPECT_TRUE(server->converged);
      EXPECT_LE(exact->bestMilli, server->milli + 1e-6);
      EXPECT_LE(server->milli, forPool->milli + 1e-6);
      for (const auto& name : policies) {
        auto policy = sharing::makeSharePolicy(name, {.seed = 1});
        ComposablePool pool(servers, shape);
        const auto online = runComposable(pool, requests, *policy);
        const double placed = online.allocationPercent.back() * static_cast<double>(pool.totalGpuMilli()) / 100.0;
        EXPECT_LE(placed, exact->bestMilli + 1e-6) << name;
      }
    }
  }
}

TEST(ExactOptimum, TheWiringIsOnlyDescribedBeforeAnythingIsPlaced) {
  sharing::ModelTable models;
  models.intern("A");
  sharing::ShareNode n;
  n.name = "n";
  n.cpuCapacity = n.cpuLeft = 8000;
  n.memoryCapacity = n.memoryLeft = 8192;
  n.gpuLeft.assign(2, sharing::kMilliPerGpu);
  ComposablePool pool(sharing::ShareCluster({n}, models), {.slots = 2, .enclosurePorts = 1, .hostPorts = 1, .deviceLimit = 2});
  const Wiring w = pool.wiring();
  ASSERT_EQ(w.links.size(), 1u);
  EXPECT_EQ(w.enclosures[0].gpus, 2);
  EXPECT_EQ(w.enclosures[0].boundTo, -1);
  auto p = sharing::makeSharePolicy("first-fit", {})->choose(pool.views(), whole(1));
  ASSERT_TRUE(p);
  (void)pool.apply(*p, whole(1));
  EXPECT_THROW((void)pool.wiring(), std::logic_error);
}

}  // namespace
}  // namespace switchyard::bench
