// The engine's parts that hold what callers are told and when (issue 59), each alone: who waits for which operation
// (OperationWaiters), what the tasks hand out at their commit point (Outbox), and the operations that ended lately
// (RecentEnds). The group commit tests (engine_group_commit_test.cpp) check the same through the whole engine.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <chrono>

#include "composer/engine/operation_waiters.h"
#include "composer/engine/outbox.h"
#include "composer/engine/recent_ends.h"

namespace switchyard {
namespace {

TEST(RecentEnds, KeepsTheNewestEndsAsTheyEndedAndForgetsTheOldestFirst) {
  RecentEnds ends(2);
  auto ended = [](std::string id, OperationState state) {
    Operation op;
    op.id = std::move(id);
    op.state = state;
    return op;
  };
  ends.ended(ended("op-1", OperationState::kSucceeded));
  ends.ended(ended("op-2", OperationState::kFailed));
  ASSERT_NE(ends.find("op-1"), nullptr);
  EXPECT_EQ(ends.find("op-2")->state, OperationState::kFailed);
  ends.ended(ended("op-2", OperationState::kSucceeded));  // the same operation again: replaced, not kept twice
  EXPECT_EQ(ends.find("op-2")->state, OperationState::kSucceeded);
  EXPECT_EQ(ends.size(), 2u);
  ends.ended(ended("op-3", OperationState::kSucceeded));
  EXPECT_EQ(ends.find("op-1"), nullptr) << "the oldest end went";
  EXPECT_NE(ends.find("op-2"), nullptr);
  EXPECT_NE(ends.find("op-3"), nullptr);
  ends.clear();
  EXPECT_EQ(ends.find("op-3"), nullptr);
  EXPECT_EQ(ends.size(), 0u);
}

// OperationWaiters: each wait answered exactly once, whichever way it ends.
class OperationWaitersTest : public ::testing::Test {
 protected:
  struct Answers {
    std::vector<Result<Operation>> got;
  };
  OperationWaiters::Answer recordInto(const std::shared_ptr<Answers>& a) {
    return [a](Result<Operation> r) { a->got.push_back(std::move(r)); };
  }
  static Operation operation(const std::string& id, OperationState state) {
    Operation op;
    op.id = id;
    op.state = state;
    return op;
  }
  boost::asio::io_context io_;
  OperationWaiters waiters_{io_};
};

TEST_F(OperationWaitersTest, TakingAnOperationsWaitsAnswersEachOnceWithItAndStopsTheirTimers) {
  auto a = std::make_shared<Answers>();
  int timeouts = 0;
  for (int i = 0; i < 2; ++i)
    waiters_.add("op-1", waiters_.make(recordInto(a)), std::chrono::milliseconds(1), [&](OperationWaiters::Wait&) { ++timeouts; });
  waiters_.add("op-2", waiters_.make(recordInto(a)), std::chrono::hours(1), [&](OperationWaiters::Wait&) { ++timeouts; });
  EXPECT_EQ(waiters_.waitedFor().size(), 2u);
  auto answer = waiters_.takeAll("op-1", operation("op-1", OperationState::kSucceeded));
  ASSERT_TRUE(answer);
  EXPECT_TRUE(a->got.empty()) << "answered when the engine runs the call, at its commit point";
  answer(nullptr);
  ASSERT_EQ(a->got.size(), 2u);
  for (const auto& r : a->got) EXPECT_EQ(r->state, OperationState::kSucceeded);
  EXPECT_FALSE(waiters_.takeAll("op-1", operation("op-1", OperationState::kSucceeded))) << "nobody waits for it now";
  EXPECT_EQ(waiters_.waitedFor(), std::vector<OperationId>{"op-2"});
  io_.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ(timeouts, 0) << "their timers were stopped";
}

// What the tasks hand out at their commit point: in order, once written; after a failed write, refused (or dropped
// when there is no refusal) from the last write that reached the store on; what a turn adds waits for the next.
TEST(Outbox, EntriesRunInOrderOnceWrittenAndThoseAfterAFailedWriteAreRefused) {
  Outbox outbox;
  std::vector<std::string> log;
  auto entry = [&](std::string name, bool refusable) {
    outbox.add([&log, name] { log.push_back(name); },
               refusable ? Outbox::Refusal([&log, name](const Error& e) { log.push_back(name + " refused: " + e.message); }) : Outbox::Refusal{});
  };
  entry("answer a", true);
  outbox.written();  // a's write reached the store
  entry("event b", false);
  entry("answer c", true);
  outbox.failed(Error{Code::kUnavailable, "store failed"});
  outbox.add([&] {
    log.push_back("wait d");
    entry("later e", true);  // added while delivering
  });
  ASSERT_FALSE(outbox.empty());
  outbox.deliverTurn();
  EXPECT_EQ(log, (std::vector<std::string>{"answer a", "answer c refused: store failed", "wait d"})) << "b is dropped, d came after the failure";
  ASSERT_FALSE(outbox.empty()) << "e waits for the next turn";
  outbox.written();
  outbox.deliverTurn();
  EXPECT_EQ(log.back(), "later e");
  EXPECT_TRUE(outbox.empty());
}

// The write of an operation's end failed (group commit): its waits hear why, not an end the store never got.
TEST_F(OperationWaitersTest, TakenWaitsAreAnsweredWithTheErrorTheyAreGiven) {
  auto a = std::make_shared<Answers>();
  waiters_.add("op-1", waiters_.make(recordInto(a)), std::chrono::hours(1), [](OperationWaiters::Wait&) {});
  auto answer = waiters_.takeAll("op-1", operation("op-1", OperationState::kSucceeded));
  ASSERT_TRUE(answer);
  const Error refused{Code::kUnavailable, "the store failed"};
  answer(&refused);
  ASSERT_EQ(a->got.size(), 1u);
  ASSERT_FALSE(a->got.front());
  EXPECT_EQ(a->got.front().error().code, Code::kUnavailable);
  EXPECT_EQ(a->got.front().error().message, "the store failed");
  EXPECT_TRUE(waiters_.empty());
}

TEST_F(OperationWaitersTest, AWaitWhoseTimeIsUpLeavesAndIsAnsweredByTheEngine) {
  auto a = std::make_shared<Answers>();
  waiters_.add("op-1", waiters_.make(recordInto(a)), std::chrono::milliseconds(1), [](OperationWaiters::Wait& w) {
    OperationWaiters::answer(w, operation("op-1", OperationState::kRunning));
  });
  io_.run_for(std::chrono::milliseconds(50));
  ASSERT_EQ(a->got.size(), 1u);
  EXPECT_EQ(a->got.front()->state, OperationState::kRunning) << "as it stands";
  EXPECT_TRUE(waiters_.empty());
}

TEST_F(OperationWaitersTest, ACancelledWaitIsAnsweredAbortedAndADroppedOneAbortedToo) {
  auto a = std::make_shared<Answers>();
  auto wait = waiters_.make(recordInto(a));
  waiters_.add("op-1", wait, std::chrono::hours(1), [](OperationWaiters::Wait&) { FAIL() << "cancelled before its time"; });
  waiters_.cancel("op-1", wait);
  ASSERT_EQ(a->got.size(), 1u);
  EXPECT_EQ(a->got.front().error().code, Code::kAborted);
  EXPECT_EQ(a->got.front().error().message, "the wait for op-1 was cancelled");
  waiters_.cancel("op-1", wait);
  EXPECT_EQ(a->got.size(), 1u) << "once";
  EXPECT_TRUE(waiters_.empty());

  waiters_.add("op-2", waiters_.make(recordInto(a)), std::chrono::hours(1), [](OperationWaiters::Wait&) {});
  waiters_.drop("op-2");
  ASSERT_EQ(a->got.size(), 2u);
  EXPECT_EQ(a->got.back().error().message, "yardd is shutting down");
  io_.run_for(std::chrono::milliseconds(5));
}

}  // namespace
}  // namespace switchyard
