// The server LP (tests/bench/packing/server_bound.h): each request on one host with that host's CPU and
// memory, on fixed servers and on a composable pool; tighter than the GPU-packing LP, and still a bound.
#include <gtest/gtest.h>

#include <random>

#include "tests/bench/packing/server_bound.h"
#include "tests/bench/packing/upper_bound.h"
#include "tests/support/share_fixtures.h"

namespace switchyard::sharing {
namespace {

using namespace fixtures;

double serverBound(const ShareCluster& c, const std::vector<ShareRequest>& r, const bench::ServerBoundOptions& o = {}) {
  const auto bound = bench::serverUpperBound(c, r, o);
  EXPECT_TRUE(bound.has_value()) << bound.error();
  EXPECT_TRUE(bound->converged);
  return bound->milli;
}

TEST(ServerBound, EachRequestTakesTheCpuOfOneHost) {
  // Two servers of 10 cores and 2 GPUs; 1-GPU requests of 6 cores. Per server type the 20 cores hold three
  // of them; one host holds only one.
  const ShareCluster c({node("a", 2, 0, 10000), node("b", 2, 0, 10000)}, ModelTable{});
  const std::vector<ShareRequest> r(4, whole(1, 6000));
  EXPECT_NEAR(bench::packingUpperBound(c, r, {.perServer = true})->milli, 3333.33, 0.01);
  EXPECT_NEAR(serverBound(c, r), 2000.0, 1e-6);
  // Two 4-core requests fit one host, and a 7-core one fits beside neither: 4 + 4 on one host, 7 on the other.
  const std::vector<ShareRequest> mixed{whole(1, 4000), whole(1, 4000), whole(1, 7000), whole(1, 7000)};
  EXPECT_NEAR(serverBound(c, mixed), 3000.0, 1e-6);
}

TEST(ServerBound, SharesFitTheGpusOfTheirHost) {
  // One GPU per server: two 600 shares never share it, and a 400 fills the rest of one.
  const ShareCluster c({node("a", 1), node("b", 1)}, ModelTable{});
  EXPECT_NEAR(serverBound(c, {share(600), share(600), share(600)}), 1200.0, 1e-6);
  EXPECT_NEAR(serverBound(c, {share(600), share(600), share(400)}), 1600.0, 1e-6);
  // A whole GPU and a share on a 1-GPU server: only one of them.
  const ShareCluster one({node("a", 1)}, ModelTable{});
  EXPECT_NEAR(serverBound(one, {whole(1), share(300)}), 1000.0, 1e-6);
  // MIG: seven 1g on one GPU, not eight; a 4g beside a 3g.
  EXPECT_NEAR(serverBound(one, std::vector<ShareRequest>(8, migRequest(share(100), k1g))), 7 * migMilli(k1g), 1e-6);
  EXPECT_NEAR(serverBound(one, {migRequest(share(100), k4g), migRequest(share(100), k4g), migRequest(share(100), k3g)}),
              migMilli(k4g) + migMilli(k3g), 1e-6);
}

TEST(ServerBound, AComposableHostTakesUpToItsDeviceLimitFromItsModelsPool) {
  ModelTable models;
  models.intern("A");
  models.intern("B");
  // Two model-A hosts with 4 GPUs each and one model-B host with 1: a composable host may attach 2.
  const ShareCluster c({node("a1", 4, 0), node("a2", 4, 0), node("b", 1, 1)}, models);
  const bench::ServerBoundOptions composable = bench::serverBoundOptionsFor({.slots = 4, .deviceLimit = 2});
  EXPECT_FALSE(composable.fixedServers);
  EXPECT_EQ(composable.maxGpusPerRequest, 2);
  const std::vector<ShareRequest> ones(10, whole(1, 1000));
  EXPECT_NEAR(serverBound(c, ones), 9000.0, 1e-6);                  // fixed servers: all 9 GPUs
  EXPECT_NEAR(serverBound(c, ones, composable), 5000.0, 1e-6);      // 2 + 2 + 1 (B's pool has one GPU)
  EXPECT_NEAR(serverBound(c, {whole(4, 1000)}, composable), 0.0, 1e-6);  // over the device limit
  // A B-only request can take only B's one GPU, even with two GPUs of device limit on the B host.
  ShareRequest onlyB = whole(1, 1000);
  onlyB.modelMask = 1u << 1;
  EXPECT_NEAR(serverBound(c, {onlyB, onlyB}, composable), 1000.0, 1e-6);
}

TEST(ServerBound, NeverAboveTheGpuPackingLpAndCutShortStillABound) {
  std::mt19937_64 rng(5);
  int stoppedEarly = 0;
  for (int instance = 0; instance < 8; ++instance) {
    SCOPED_TRACE(::testing::Message() << "instance " << instance);
    const ShareCluster c = randomCluster(rng, 5);
    std::vector<ShareRequest> r;
    for (int i = 0; i < 40; ++i) r.push_back(randomRequestWithMig(rng));
    const auto server = bench::serverUpperBound(c, r);
    ASSERT_TRUE(server.has_value()) << server.error();
    ASSERT_TRUE(server->converged);
    EXPECT_LE(server->milli, bench::packingUpperBound(c, r, {.perServer = true})->milli + 1e-6);
    const bench::ComposableShape shape{.slots = 4, .enclosurePorts = 2, .hostPorts = 2, .deviceLimit = 4};
    const auto composable = bench::serverUpperBound(c, r, bench::serverBoundOptionsFor(shape));
    ASSERT_TRUE(composable.has_value()) << composable.error();
    // Once converged it is the server LP's optimum, under the GPU-packing LP's. Cut short (the round limit:
    // clang's ASan build once took more rounds on instance 6) it is only the Lagrangian bound, which may lie above.
    if (composable->converged)
      EXPECT_LE(composable->milli, bench::packingUpperBound(c, r, bench::boundOptionsFor(shape))->milli + 1e-6)
          << composable->rounds << " rounds";
    for (int rounds = 1; rounds < server->rounds; ++rounds) {
      const auto early = bench::serverUpperBound(c, r, {.maxRounds = rounds});
      ASSERT_TRUE(early.has_value()) << early.error();
      EXPECT_GE(early->milli, server->milli - 1e-6) << rounds << " rounds";
      ++stoppedEarly;
    }
  }
  EXPECT_GT(stoppedEarly, 8) << "too few instances needed more than one round";
}

}  // namespace
}  // namespace switchyard::sharing
