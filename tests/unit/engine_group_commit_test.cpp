// Group commit (composer/engine/group_commit.h, ADR 0035): the writes of control-thread tasks queued behind each
// other go to the store in one transaction at the last one's commit point, and nothing of theirs (an answer, an
// event) comes out before that write; a write that fails refuses them all.
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <future>
#include <mutex>

#include "composer/engine/engine_client.h"
#include "composer/metrics/engine_metrics.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

class GroupCommitTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    configure_ = [this](EngineOptions& o) {
      o.metrics = metrics_;
      o.groupCommitTasks = groupCommitTasks_;
    };
  }

  // Holds the control thread in a task until release(): what is posted meanwhile queues behind it.
  void holdControlThread(EngineClient& client) {
    std::promise<void> entered;
    client.run<bool>(
        [&entered, opened = opened_](EngineCore&) -> Result<bool> {
          entered.set_value();
          opened.wait();
          return true;
        },
        [](Result<bool>) {});
    entered.get_future().wait();
  }
  void release() { open_.set_value(); }

  // Composes `n` systems through `client` while the control thread is held: each queues behind the one before.
  // Each answer is checked against a second connection to the store as it arrives.
  struct Answer {
    Result<Operation> op;
    bool inStoreWhenAnswered = false;
    std::uint64_t writesWhenAnswered = 0;  // store transactions since the control thread was held
  };
  std::vector<Answer> composeQueuedBehindEachOther(EngineClient& client, int n) {
    auto reader = SqliteStore::open(dir_ / "yard.db");
    EXPECT_TRUE(reader);
    std::mutex mutex;
    std::vector<Answer> answers;
    std::vector<std::promise<void>> done(static_cast<std::size_t>(n));
    holdControlThread(client);
    writesBefore_ = metrics_->storeWriteSeconds.count({});
    tasksBefore_ = metrics_->storeWriteTasks.value({});
    for (int i = 0; i < n; ++i)
      client.run<Operation>([i](EngineCore& core) { return core.compose(Caller::local(), gpuCompose("job-" + std::to_string(i), 1)); },
                            [&, i](Result<Operation> op) {
                              Answer a{std::move(op)};
                              a.writesWhenAnswered = metrics_->storeWriteSeconds.count({}) - writesBefore_;
                              tasksWhenAnswered_ = metrics_->storeWriteTasks.value({}) - tasksBefore_;
                              if (a.op) {
                                auto stored = (*reader)->getOperation(a.op->id);
                                a.inStoreWhenAnswered = stored && stored->has_value();
                              }
                              {
                                std::lock_guard lock(mutex);
                                answers.push_back(std::move(a));
                              }
                              done[static_cast<std::size_t>(i)].set_value();
                            });
    release();
    for (auto& d : done) d.get_future().wait();
    return answers;
  }

  std::shared_ptr<metrics::EngineMetrics> metrics_ = std::make_shared<metrics::EngineMetrics>();
  std::size_t groupCommitTasks_ = 32;
  std::uint64_t writesBefore_ = 0;
  double tasksBefore_ = 0, tasksWhenAnswered_ = 0;
  std::promise<void> open_;
  std::shared_future<void> opened_ = open_.get_future().share();
};

TEST_F(GroupCommitTest, ComposesQueuedBehindEachOtherAreWrittenTogetherAndEachIsAnsweredOnlyOnceWritten) {
  start();
  EngineClient client(*engine_);
  const auto answers = composeQueuedBehindEachOther(client, 4);
  ASSERT_EQ(answers.size(), 4u);  // one for each host of the pool
  for (const auto& a : answers) {
    ASSERT_TRUE(a.op) << a.op.error().message;
    EXPECT_TRUE(a.inStoreWhenAnswered) << a.op->id << " was answered before its acceptance was in the store";
  }
  // Answered at one commit point, inline on the control thread, before any bind's result was recorded.
  for (const auto& a : answers)
    EXPECT_EQ(a.writesWhenAnswered, 1u) << "the four acceptances queued behind each other were written in one transaction";
  EXPECT_EQ(tasksWhenAnswered_, 4.0) << "and the metric says four tasks shared it";
  for (const auto& a : answers) EXPECT_EQ(engine_->waitOperation(a.op->id, 10s)->state, OperationState::kSucceeded) << a.op->id;
  EXPECT_EQ(fabricBindings().size(), 4u);

  start();  // all of it is in the store: a restart finds the four systems
  EXPECT_EQ(engine_->reads().listSystems()->size(), 4u);
}

TEST_F(GroupCommitTest, WithGroupCommitOffEveryAcceptanceIsItsOwnTransaction) {
  groupCommitTasks_ = 1;
  start();
  EngineClient client(*engine_);
  const auto answers = composeQueuedBehindEachOther(client, 4);
  std::uint64_t most = 0;
  for (const auto& a : answers) {
    ASSERT_TRUE(a.op) << a.op.error().message;
    EXPECT_TRUE(a.inStoreWhenAnswered) << a.op->id;
    most = std::max(most, a.writesWhenAnswered);
  }
  EXPECT_GE(most, 4u);
}

// A write that fails (a second yardd claimed the store while the tasks waited) refuses every answer that waited
// for it, says why, and delivers none of its events: nobody hears of an acceptance the store never got.
TEST_F(GroupCommitTest, AFailedGroupWriteRefusesEveryAnswerThatWaitedForItAndPublishesNoneOfItsEvents) {
  start();
  auto events = engine_->blocking().subscribe().value();
  EngineClient client(*engine_);
  std::vector<Answer> answers;
  {
    auto reader = SqliteStore::open(dir_ / "yard.db");
    ASSERT_TRUE(reader);
    std::vector<std::promise<Result<Operation>>> done(4);
    holdControlThread(client);
    ASSERT_TRUE((*reader)->claimWriter());  // from now on every write of this engine is refused
    for (std::size_t i = 0; i < done.size(); ++i)
      client.run<Operation>([i](EngineCore& core) { return core.compose(Caller::local(), gpuCompose("job-" + std::to_string(i), 1)); },
                            [&, i](Result<Operation> op) { done[i].set_value(std::move(op)); });
    release();
    for (auto& d : done) answers.push_back(Answer{d.get_future().get()});
  }
  for (const auto& a : answers) {
    ASSERT_FALSE(a.op) << a.op->id << " was answered as accepted";
    EXPECT_EQ(a.op.error().code, Code::kUnavailable);
    EXPECT_NE(a.op.error().message.find("fenced"), std::string::npos) << a.op.error().message;
  }
  EXPECT_NE(engine_->storeFailure(), "");
  while (auto e = events->tryNext()) EXPECT_NE(e->type, "operation.accepted") << "an event of a write that failed: " << e->message;
  EXPECT_TRUE(fabricBindings().empty()) << "no bind started after the failed write";
}

// An answer given inside a task, not at its commit point (a wait for an operation that already ended), comes
// after the view and the store show that end, even when it ended in a task of the same batch.
TEST_F(GroupCommitTest, AWaitForAnOperationThatEndedEarlierInTheBatchIsAnsweredOnceTheViewShowsItsEnd) {
  start();
  for (int h = 0; h < 4; ++h) compose("full-" + std::to_string(h), 4);  // every host serves a system
  ComposeRequest waits = gpuCompose("waits", 1);
  waits.queue = true;
  auto queued = engine_->blocking().compose(Caller::local(), waits);
  ASSERT_TRUE(queued) << queued.error().message;
  ASSERT_EQ(queued->state, OperationState::kQueued);

  EngineClient client(*engine_);
  holdControlThread(client);
  client.run<Operation>([](EngineCore& core) { return core.cancelQueued(Caller::local(), "waits"); }, [](Result<Operation>) {});
  std::promise<std::string> answered;  // what the view showed when the answer came
  engine_->waitOperation(queued->id, 10s, [&](Result<Operation> done) {
    const auto view = engine_->reads().view();
    answered.set_value(!done ? done.error().message
                       : !done->finished() ? "not ended"
                       : !view->queue->empty() ? "the view still shows it queued"
                                               : "");
  });
  release();
  EXPECT_EQ(answered.get_future().get(), "");
}

// A wait that comes after the operation ended is answered from memory (recent_ends.h) at its task's commit point:
// once the store holds the end, without reading it back and without writing the batch early, so the tasks queued
// behind the wait still share its transaction.
TEST_F(GroupCommitTest, AWaitAfterTheEndIsAnsweredOnceTheEndIsWrittenWithoutCuttingTheBatchShort) {
  start();
  for (int h = 0; h < 4; ++h) compose("full-" + std::to_string(h), 4);  // every host serves a system
  std::vector<OperationId> queued;
  for (const char* name : {"first", "second"}) {
    ComposeRequest r = gpuCompose(name, 1);
    r.queue = true;
    auto op = engine_->blocking().compose(Caller::local(), r);
    ASSERT_TRUE(op) << op.error().message;
    queued.push_back(op->id);
  }
  auto reader = SqliteStore::open(dir_ / "yard.db");
  ASSERT_TRUE(reader);
  EngineClient client(*engine_);
  holdControlThread(client);
  writesBefore_ = metrics_->storeWriteSeconds.count({});
  client.run<Operation>([](EngineCore& core) { return core.cancelQueued(Caller::local(), "first"); }, [](Result<Operation>) {});
  std::promise<std::string> answered;  // what the store held when the answer came
  engine_->waitOperation(queued[0], 10s, [&](Result<Operation> done) {
    auto stored = (*reader)->getOperation(queued[0]);
    answered.set_value(!done                              ? done.error().message
                       : !done->finished()                ? "not ended"
                       : !stored || !*stored              ? "not in the store"
                       : (*stored)->state != done->state ? "the store does not hold the end yet"
                                                          : "");
  });
  std::promise<Result<Operation>> second;
  client.run<Operation>([](EngineCore& core) { return core.cancelQueued(Caller::local(), "second"); },
                        [&](Result<Operation> op) { second.set_value(std::move(op)); });
  release();
  EXPECT_EQ(answered.get_future().get(), "");
  ASSERT_TRUE(second.get_future().get());
  EXPECT_EQ(metrics_->storeWriteSeconds.count({}) - writesBefore_, 1u) << "the two cancels and the wait between them: one transaction";
}

// An end kept in memory is told only once written: when the write of the batch that holds it fails, the wait is
// refused, and a wait after that failure is not answered with the end the store never got.
TEST_F(GroupCommitTest, AnEndAFailedWriteLostIsNeverToldToAWait) {
  start();
  for (int h = 0; h < 4; ++h) compose("full-" + std::to_string(h), 4);
  ComposeRequest r = gpuCompose("waits", 1);
  r.queue = true;
  auto queued = engine_->blocking().compose(Caller::local(), r);
  ASSERT_TRUE(queued) << queued.error().message;
  auto reader = SqliteStore::open(dir_ / "yard.db");
  ASSERT_TRUE(reader);
  EngineClient client(*engine_);
  holdControlThread(client);
  ASSERT_TRUE((*reader)->claimWriter());  // from now on every write of this engine is refused
  client.run<Operation>([](EngineCore& core) { return core.cancelQueued(Caller::local(), "waits"); }, [](Result<Operation>) {});
  std::promise<Result<Operation>> inTheBatch;
  engine_->waitOperation(queued->id, 10s, [&](Result<Operation> done) { inTheBatch.set_value(std::move(done)); });
  release();
  auto refused = inTheBatch.get_future().get();
  ASSERT_FALSE(refused) << "answered " << toString(refused->state) << " though its end was never written";
  EXPECT_NE(refused.error().message.find("fenced"), std::string::npos) << refused.error().message;
  auto later = engine_->waitOperation(queued->id, 200ms);
  EXPECT_FALSE(later && later->finished()) << "a later wait was told the end the store never got";
}

}  // namespace
}  // namespace switchyard
