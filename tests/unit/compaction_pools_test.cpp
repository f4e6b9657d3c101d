// The pools compaction probes when every host is kept (compaction_pools.h, ComposableShape::gpuPercent), and the
// runner its searches share.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/bench/packing/compaction_pools.h"
#include "tests/bench/packing/composable_sim.h"
#include "tests/bench/packing/packbench_common.h"
#include "tests/support/share_fixtures.h"

namespace switchyard::sharing {
namespace {

using namespace fixtures;

// Servers of model A with the given GPU counts ("a0", "a1", ...), then of model B ("b0", ...).
ShareCluster twoModels(std::initializer_list<int> a, std::initializer_list<int> b) {
  ModelTable models;
  models.intern("A");
  models.intern("B");
  std::vector<ShareNode> list;
  for (int gpus : a) list.push_back(node("a" + std::to_string(list.size()), gpus, 0));
  const size_t first = list.size();
  for (int gpus : b) list.push_back(node("b" + std::to_string(list.size() - first), gpus, 1));
  return ShareCluster(std::move(list), models);
}

// A pool that keeps every host and buys fewer GPUs (compaction --keep-hosts): each model keeps its share of the
// GPUs, in fewer enclosures, and every host stays cabled while ports last.
TEST(ComposablePool, KeepsEveryHostWithAShareOfTheGpus) {
  const ShareCluster servers = twoModels({8, 8, 8, 8}, {4, 4});
  const bench::ComposableShape half{.slots = 8, .enclosurePorts = 4, .hostPorts = 2, .deviceLimit = 16, .gpuPercent = 50};
  const bench::ComposablePool pool(servers, half);
  EXPECT_EQ(pool.totalGpuMilli(), (16 + 4) * kMilliPerGpu) << "half of model A's 32 and of model B's 8";
  const auto wiring = pool.wiring();
  EXPECT_EQ(wiring.hosts.size(), 6u);
  EXPECT_EQ(wiring.enclosures.size(), 3u) << "two of A (8 + 8), one of B (4)";
  for (size_t h = 0; h < 6; ++h) EXPECT_FALSE(pool.viewsOfHost(h).empty()) << "host " << h << " is still cabled";
  EXPECT_EQ(half.describe(), "K=8 U=4 P=2 L=16, 50 % of the GPUs");
  for (const int bad : {0, 101}) {
    bench::ComposableShape s = half;
    s.gpuPercent = bad;
    EXPECT_THROW(bench::ComposablePool(servers, s), std::invalid_argument) << bad;
  }
  EXPECT_THROW(bench::ComposablePool(servers, {.mirrorServers = true, .gpuPercent = 50}), std::invalid_argument);
}

// The control for keeping every host on fixed servers: the same servers with fewer GPUs, taken evenly (the servers
// with the most first) or from the smallest servers first, nested in the share.
TEST(CompactionPools, ThinnedServersKeepEveryServerAndLoseGpusEvenlyOrSmallServersFirst) {
  const ShareCluster servers = twoModels({8, 8, 8, 8, 2}, {4, 4});
  const ShareCluster half = bench::thinnedServers(servers, 50, 7, bench::Thinning::kEven),
                     most = bench::thinnedServers(servers, 75, 7, bench::Thinning::kEven);
  ASSERT_EQ(half.size(), servers.size());
  EXPECT_EQ(half.totalGpus(), 17 + 4) << "half of model A's 34 (rounded) and of model B's 8";
  for (size_t i = 0; i < servers.size(); ++i) {
    EXPECT_EQ(half.node(i).cpuCapacity, servers.node(i).cpuCapacity) << i;
    EXPECT_LE(half.node(i).gpuCount(), most.node(i).gpuCount()) << i << ": nested";
    EXPECT_LE(most.node(i).gpuCount(), servers.node(i).gpuCount()) << i;
  }
  for (size_t i = 0; i < 4; ++i) EXPECT_GE(half.node(i).gpuCount(), 3) << "the 8-GPU servers give up GPUs evenly";
  EXPECT_EQ(half.node(4).gpuCount(), 2) << "the 2-GPU server keeps its GPUs while others have more";
  EXPECT_EQ(half.node(5).gpuCount() + half.node(6).gpuCount(), 4);
  EXPECT_EQ(bench::thinnedServers(servers, 100, 7, bench::Thinning::kEven).totalGpus(), servers.totalGpus());

  // Small servers first: the 2-GPU server goes to none, then the 8-GPU servers lose GPUs one server at a time.
  const ShareCluster small = bench::thinnedServers(servers, 50, 7, bench::Thinning::kSmallFirst);
  EXPECT_EQ(small.totalGpus(), 17 + 4);
  EXPECT_EQ(small.node(4).gpuCount(), 0) << "the smallest server gives up its GPUs first";
  int whole = 0;
  for (size_t i = 0; i < 4; ++i) whole += small.node(i).gpuCount() == 8 ? 1 : 0;
  EXPECT_EQ(whole, 2) << "of the 8-GPU servers, two stay whole (17 = 8 + 8 + 1)";
  EXPECT_EQ(small.node(5).gpuCount() + small.node(6).gpuCount(), 4);
  EXPECT_EQ(std::min(small.node(5).gpuCount(), small.node(6).gpuCount()), 0) << "one B server gives up all four";
}

// A run that throws (bad input a check missed) must come back to the command as an error, not abort the
// process from a worker thread; runs not yet started are not started (one thread: exactly the runs before it).
TEST(RunInParallel, RethrowsTheFirstFailureAndStartsNoMoreRuns) {
  for (const unsigned jobs : {1u, 2u}) {
    std::atomic<int> started{0};
    std::vector<size_t> reported;
    EXPECT_THROW(bench::runInParallel(
                     100, jobs,
                     [&](size_t i) {
                       ++started;
                       if (i == 3) throw std::invalid_argument("run 3 cannot go on");
                     },
                     [&](size_t i, size_t) { reported.push_back(i); }),
                 std::invalid_argument)
        << jobs << " jobs";
    EXPECT_EQ(std::count(reported.begin(), reported.end(), size_t{3}), 0) << jobs << " jobs";
    if (jobs == 1) {
      EXPECT_EQ(started.load(), 4);
      EXPECT_EQ(reported, (std::vector<size_t>{0, 1, 2}));
    }
  }
}

}  // namespace
}  // namespace switchyard::sharing
