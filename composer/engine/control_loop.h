// The engine's threads (issue 59: one of the engine's parts; ADR 0025, ADR 0026). The control loop runs the engine's
// tasks one at a time on its control thread; switch and host calls run on the driver pool and hand their replies
// back to it; long reads run on the read pool. A stepped loop (tests, the deterministic simulation) starts no thread:
// the thread that starts it is its control thread, a task runs when that thread steps, a call waits until it runs it
// (runCall), and a call's reply may be held back (Reply::kLate) until it is delivered (deliverReply).
//
// What a task is (its commit point, the group commit's counts) is the engine's: the loop runs functions, knows which
// thread is which, and counts the calls whose replies have not come back (stop() waits for them).
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "composer/engine/elastic_executor.h"

namespace switchyard {

class ControlLoop {
 public:
  // kLate: a stepped loop's call acts now but its reply waits, like a switch's answer slow to come back.
  enum class Reply { kNow, kLate };

  ControlLoop(bool stepped, int driverThreads, int readThreads);
  ControlLoop(const ControlLoop&) = delete;
  ControlLoop& operator=(const ControlLoop&) = delete;
  ~ControlLoop();

  // The loop's io_context: tasks are posted to it, and its timers run there.
  [[nodiscard]] boost::asio::io_context& context() { return *io_; }

  // Makes the calling thread the control thread (stepped) or starts one. A task that throws is contained there:
  // `onThrow` is told what it threw, on the control thread, and the loop goes on.
  void start(std::function<void(const std::string& what)> onThrow);
  // Tasks may be posted (between start() and close()); any thread.
  [[nodiscard]] bool running() const { return running_.load(std::memory_order_acquire); }
  [[nodiscard]] bool onControlThread() const { return std::this_thread::get_id() == controlThreadId_; }
  // stop(), once its last task has stopped the io_context: no more tasks are taken, the control thread ends, and
  // what was posted meanwhile runs once more, here, answered as stopped (stopped() is true from then on).
  void close();
  [[nodiscard]] bool stopped() const { return stopped_; }

  // A stepped loop: whether a task runs now (stepControl, or a blocking call run inline as a task of its own).
  [[nodiscard]] bool inTask() const { return taskDepth_ > 0; }
  template <typename F>
  auto asTask(F&& f) -> decltype(f()) {
    ++taskDepth_;
    auto result = f();
    --taskDepth_;
    return result;
  }

  // A switch or host call from the control thread: `call` runs on a driver thread (a stepped loop: when the test runs
  // it) and returns what hands its reply to the control thread, which then runs (or, held as late, waits for
  // deliverReply). The engine says when the reply is in (answered()).
  void callOff(std::function<std::function<void()>()> call);
  void answered() { --callsInFlight_; }
  [[nodiscard]] int callsInFlight() const { return callsInFlight_; }
  // Long reads: on the read pool, inline in a stepped loop. Dropped once the pool is joined.
  void read(std::function<void()> work);
  // The reads in flight end (stop(), before it returns: no adapter hears from the engine after it).
  void joinReads();
  // Every pool's work ends: the engine's destructor, before the parts the work reaches are gone.
  void joinAll();

  // A stepped loop, on its control thread (else false, or 0; ADR 0026). step(): the next ready task, or else the
  // oldest waiting switch or host call, or else the oldest late reply; false when none is waiting. runUntilIdle():
  // step() until nothing is waiting; how many steps ran.
  bool step() { return stepControl() || runCall(0) || deliverReply(0); }
  std::size_t runUntilIdle();
  // The same one kind at a time (a test picks which call runs next: the deterministic simulation, tests/sim/): the
  // next ready task only; the calls waiting, and running the one at `index` (0: the oldest; kLate: it acts now but its
  // reply waits, like a switch's answer slow to come back, until deliverReply() hands it to the control thread); the
  // replies held back, and handing over the one at `index`.
  bool stepControl();
  [[nodiscard]] std::size_t waitingCalls() const;
  bool runCall(std::size_t index, Reply reply = Reply::kNow);
  [[nodiscard]] std::size_t lateReplies() const { return late_.held.size(); }
  bool deliverReply(std::size_t index);

 private:
  const bool stepped_;
  std::unique_ptr<boost::asio::io_context> io_;
  std::unique_ptr<ElasticExecutor> driverPool_;
  std::unique_ptr<ElasticExecutor> readPool_;  // none in a stepped loop (it reads inline)
  std::thread controlThread_;
  std::thread::id controlThreadId_;  // set once at start, before any other thread calls in
  std::atomic<bool> running_{false};
  bool stopped_ = false;  // after close(): posted work is answered as stopped
  int taskDepth_ = 0;     // a stepped loop: > 0 while a task runs
  int callsInFlight_ = 0;  // control thread
  struct LateReplies {
    bool holdNext = false;                   // the call runCall() runs now answers late
    std::deque<std::function<void()>> held;  // each hands a reply to the control thread
  };
  LateReplies late_;
};

}  // namespace switchyard
