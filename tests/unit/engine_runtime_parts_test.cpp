// The parts that run the engine (issue 59), each alone: its control loop (the threads, or a stepped loop's order of
// tasks, calls and late replies) and its lifecycle (open, closed, halted, failed for good). The engine tests
// (engine_stepped_test.cpp, engine_restart_test.cpp and others) check the same through the whole engine.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

#include "composer/engine/control_loop.h"
#include "composer/engine/engine_lifecycle.h"

namespace switchyard {
namespace {

TEST(EngineLifecycle, TakesChangesOnlyWhileOpenAndAFailureHaltsItForGoodWithItsFirstReason) {
  EngineLifecycle life;
  EXPECT_FALSE(life.accepting());
  EXPECT_EQ(life.refusal().error().message, "yardd is starting or shutting down; retry shortly");
  life.open();
  EXPECT_TRUE(life.accepting());
  EXPECT_TRUE(life.refusal());
  life.close();  // stop(): refused, nothing halted yet
  EXPECT_FALSE(life.accepting());
  EXPECT_FALSE(life.halted());
  life.halt();  // its grace is over
  EXPECT_TRUE(life.halted());
  EXPECT_TRUE(life.haltedForReaders());
  life.open();
  EXPECT_FALSE(life.accepting()) << "a halted engine does not open again";

  EngineLifecycle failing;
  failing.open();
  EXPECT_TRUE(failing.haltForGood("disk I/O error"));
  EXPECT_FALSE(failing.haltForGood("fenced out")) << "told once";
  EXPECT_TRUE(failing.halted());
  EXPECT_FALSE(failing.accepting());
  EXPECT_EQ(failing.failure(), "disk I/O error");
  EXPECT_EQ(failing.failureForReaders(), "disk I/O error");
  EXPECT_EQ(failing.refusal().error().message, "yardd stopped taking work because its store failed (disk I/O error); restart it");
  EXPECT_EQ(failing.refusal().error().code, Code::kUnavailable);
}

TEST(ControlLoop, ASteppedLoopRunsTasksCallsAndLateRepliesOnlyWhenItsThreadSaysAndInTheOrderItPicks) {
  ControlLoop loop(/*stepped=*/true, 4, 4);
  auto guard = boost::asio::make_work_guard(loop.context());  // as the engine's timers do: an idle poll does not stop it
  std::vector<std::string> ran;
  EXPECT_FALSE(loop.running());
  loop.start([](const std::string&) {});
  ASSERT_TRUE(loop.running());
  ASSERT_TRUE(loop.onControlThread()) << "the thread that starts a stepped loop is its control thread";
  // A call: runs when the test says, and its reply, handed to the control thread, is a task there.
  auto call = [&](std::string name) {
    loop.callOff([&, name]() -> std::function<void()> {
      ran.push_back("call " + name);
      return [&, name] { boost::asio::post(loop.context(), [&, name] { ran.push_back("reply " + name); loop.answered(); }); };
    });
  };
  call("a");
  call("b");
  call("c");
  EXPECT_EQ(loop.waitingCalls(), 3u);
  EXPECT_EQ(loop.callsInFlight(), 3);
  EXPECT_FALSE(loop.stepControl()) << "no task yet: the calls wait";
  EXPECT_TRUE(ran.empty());
  ASSERT_TRUE(loop.runCall(1, ControlLoop::Reply::kLate));  // b acts now; its reply waits
  ASSERT_TRUE(loop.runCall(0));                              // a
  EXPECT_EQ(loop.lateReplies(), 1u);
  EXPECT_TRUE(loop.stepControl());  // a's reply
  EXPECT_FALSE(loop.stepControl());
  ASSERT_TRUE(loop.runCall(0));  // c
  EXPECT_TRUE(loop.stepControl());
  EXPECT_EQ(loop.callsInFlight(), 1) << "b's reply has not come back";
  ASSERT_TRUE(loop.deliverReply(0));
  EXPECT_FALSE(loop.deliverReply(0));
  EXPECT_TRUE(loop.stepControl());
  EXPECT_EQ(loop.callsInFlight(), 0);
  EXPECT_EQ(ran, (std::vector<std::string>{"call b", "call a", "reply a", "call c", "reply c", "reply b"}));

  // Reads run inline; a blocking call run as a task says so.
  bool read = false;
  loop.read([&] { read = true; });
  EXPECT_TRUE(read);
  EXPECT_FALSE(loop.inTask());
  EXPECT_TRUE(loop.asTask([&] { return loop.inTask(); }));
  EXPECT_FALSE(loop.inTask());

  // Closing: no more tasks are taken; what was posted runs once more, with stopped() true.
  bool stoppedWhenRun = false;
  boost::asio::post(loop.context(), [&] { stoppedWhenRun = loop.stopped(); });
  guard.reset();
  loop.context().stop();
  loop.close();
  EXPECT_FALSE(loop.running());
  EXPECT_TRUE(stoppedWhenRun);
}

TEST(ControlLoop, AThreadedLoopRunsTasksOnItsOwnThreadAndATaskThatThrowsIsContainedThere) {
  ControlLoop loop(/*stepped=*/false, 2, 2);
  auto guard = boost::asio::make_work_guard(loop.context());  // the engine's timers keep its loop running, as this does
  std::promise<std::string> thrown;
  loop.start([&](const std::string& what) { thrown.set_value(what); });
  EXPECT_FALSE(loop.onControlThread());
  EXPECT_FALSE(loop.stepControl()) << "a threaded loop is not stepped";
  boost::asio::post(loop.context(), [] { throw std::runtime_error("a task failed"); });
  EXPECT_NE(thrown.get_future().get().find("a task failed"), std::string::npos);
  std::promise<bool> onThread;
  boost::asio::post(loop.context(), [&] { onThread.set_value(loop.onControlThread()); });
  EXPECT_TRUE(onThread.get_future().get()) << "the loop went on after the throw";
  std::promise<bool> called;
  loop.callOff([&]() -> std::function<void()> {
    const bool driverThread = !loop.onControlThread();
    return [&, driverThread] { called.set_value(driverThread); };
  });
  EXPECT_TRUE(called.get_future().get()) << "a call runs on a driver thread";
  guard.reset();
  boost::asio::post(loop.context(), [&] { loop.context().stop(); });
  loop.close();
  EXPECT_FALSE(loop.running());
}

}  // namespace
}  // namespace switchyard
