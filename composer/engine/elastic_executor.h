// Runs blocking calls (switch round trips that take 0.1-10 s) with a thread for every call in flight, up
// to a cap: unlike a fixed pool of N threads, 32 slow calls at once take one call's time, not 32/N.
// Threads are started when work arrives and none is idle, and are kept for the next burst (a thread that
// waits costs its stack, nothing else). join() runs what is queued, then stops every thread.
//
// A manual executor (manual()) starts no thread: work waits until runOne() runs it on the calling thread
// (a stepped engine's tests decide when each switch call happens; EngineOptions::stepped).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace switchyard {

class ElasticExecutor {
 public:
  explicit ElasticExecutor(std::size_t maxThreads);
  [[nodiscard]] static std::unique_ptr<ElasticExecutor> manual();
  ~ElasticExecutor();
  ElasticExecutor(const ElasticExecutor&) = delete;
  ElasticExecutor& operator=(const ElasticExecutor&) = delete;

  // Runs `work` on an idle thread, a new one (below the cap), or the next thread to free up.
  void post(std::function<void()> work);
  // Waits for the queued work, then for every thread to end. Work posted afterwards is dropped. A manual
  // executor drops what is queued.
  void join();
  // A manual executor: runs the queued work at `index` (0: the oldest) here; false when there is none.
  bool runOne(std::size_t index = 0);
  // A manual executor: the work queued now.
  [[nodiscard]] std::size_t queued() const;
  [[nodiscard]] std::size_t threads() const;
  [[nodiscard]] std::size_t idleThreads() const;

 private:
  void run();

  struct Manual {};
  explicit ElasticExecutor(Manual) : maxThreads_(0), manual_(true) {}
  const std::size_t maxThreads_;
  const bool manual_ = false;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace switchyard
