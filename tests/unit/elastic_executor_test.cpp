// The driver executor: a thread per call in flight (up to the cap), so slow calls do not queue behind a
// fixed pool.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

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

}  // namespace
}  // namespace switchyard
