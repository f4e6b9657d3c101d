// The driver executor: a thread per call in flight (up to the cap), so slow calls do not queue behind a
// fixed pool.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "composer/engine/elastic_executor.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;

// Counts arrivals; each caller blocks until `open` (or the timeout).
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  bool opened = false;
  void arriveAndWait() {
    std::unique_lock lock(m);
    ++arrived;
    cv.notify_all();
    cv.wait_for(lock, 10s, [&] { return opened; });
  }
  bool waitForArrivals(int n) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, 10s, [&] { return arrived >= n; });
  }
  void open() {
    std::lock_guard lock(m);
    opened = true;
    cv.notify_all();
  }
};

TEST(ElasticExecutor, RunsEveryBlockedCallAtOnce) {
  ElasticExecutor executor(64);
  Gate gate;
  for (int i = 0; i < 32; ++i) executor.post([&] { gate.arriveAndWait(); });
  EXPECT_TRUE(gate.waitForArrivals(32)) << "32 calls were in flight together (a fixed pool of 4 would hold 4)";
  gate.open();
  executor.join();
  EXPECT_EQ(gate.arrived, 32);
}

TEST(ElasticExecutor, NeverExceedsItsCapAndRunsWhatIsQueued) {
  ElasticExecutor executor(2);
  Gate gate;
  for (int i = 0; i < 5; ++i) executor.post([&] { gate.arriveAndWait(); });
  EXPECT_TRUE(gate.waitForArrivals(2));
  EXPECT_EQ(executor.threads(), 2u);
  gate.open();
  executor.join();
  EXPECT_EQ(gate.arrived, 5) << "queued calls run once a thread frees up";
}

TEST(ElasticExecutor, ReusesIdleThreads) {
  ElasticExecutor executor(64);
  for (int i = 0; i < 20; ++i) {
    auto gate = std::make_shared<Gate>();
    executor.post([gate] { gate->arriveAndWait(); });
    ASSERT_TRUE(gate->waitForArrivals(1));
    gate->open();
    // Wait until the call has returned and its thread waits for work again.
    for (int spin = 0; spin < 10'000 && executor.idleThreads() < executor.threads(); ++spin) std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(executor.threads(), 1u) << "calls one after another run on one thread";
}

// A stepped engine's executor: nothing runs until the caller runs it, in the order the caller picks.
TEST(ElasticExecutor, AManualOneRunsTheQueuedWorkTheCallerPicksOnItsThread) {
  auto executor = ElasticExecutor::manual();
  std::vector<int> ran;
  for (int i = 0; i < 4; ++i) executor->post([&ran, i] { ran.push_back(i); });
  EXPECT_EQ(executor->queued(), 4u);
  EXPECT_TRUE(ran.empty()) << "no thread of its own";
  EXPECT_TRUE(executor->runOne(2));
  EXPECT_TRUE(executor->runOne());
  EXPECT_FALSE(executor->runOne(2)) << "two are left";
  EXPECT_TRUE(executor->runOne(1));
  EXPECT_EQ(executor->queued(), 1u);
  EXPECT_EQ(ran, (std::vector<int>{2, 0, 3}));
  executor->join();
  EXPECT_EQ(executor->queued(), 0u) << "join drops what a manual executor still holds";
  EXPECT_EQ(ran.size(), 3u);
}

}  // namespace
}  // namespace switchyard
