// The adapters' way into the engine (engine_client.h, ADR 0025): core calls on the control thread, each
// completion on the executor the adapter named, after the change is published.
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <atomic>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "composer/engine/engine_client.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace engine_client_test {

const Caller kAlice{"alice", Role::kOperator, "team-a"};

ComposeRequest gpus(const std::string& name, int n) {
  ComposeRequest r{name, {}, {}};
  r.placement.gpuCount = n;
  return r;
}

// An adapter's executor: one thread whose id the test knows, and a count of what was delivered there. As
// in yardd, the engine stops before the adapter's pool goes (the control thread may still be returning from
// a post into it when the completion has already run).
struct AdapterPool {
  boost::asio::thread_pool pool{1};
  std::thread::id thread;
  std::atomic<int> delivered{0};
  AdapterPool() {
    std::promise<std::thread::id> id;
    boost::asio::post(pool, [&] { id.set_value(std::this_thread::get_id()); });
    thread = id.get_future().get();
  }
  ~AdapterPool() { pool.join(); }
  EngineClient::Deliver deliver() {
    return [this](std::function<void()> f) {
      boost::asio::post(pool, [this, f = std::move(f)] {
        ++delivered;
        f();
      });
    };
  }
};

TEST_F(EngineTest, AClientsCompletionRunsOnTheAdaptersExecutorAndSeesTheChangeInTheView) {
  start();
  AdapterPool adapter;
  EngineClient client(*engine_, adapter.deliver());
  struct Seen {
    Result<Operation> op;
    std::thread::id thread;
    bool systemInView = false;
  };
  std::promise<Seen> seen;
  client.run<Operation>([](EngineCore& core) { return core.compose(kAlice, gpus("train", 2)); },
                        [&](Result<Operation> op) {
                          const auto view = client.view();
                          seen.set_value(Seen{std::move(op), std::this_thread::get_id(), view && view->systems.findByIdOrName("train") != nullptr});
                        });
  auto s = seen.get_future().get();
  ASSERT_TRUE(s.op) << s.op.error().message;
  EXPECT_EQ(s.thread, adapter.thread) << "delivered where the adapter asked, not on the control thread";
  EXPECT_TRUE(s.systemInView) << "the view was published before the completion ran";
  EXPECT_EQ(adapter.delivered.load(), 1);
  EXPECT_EQ(run(std::move(s.op)).state, OperationState::kSucceeded);

  // A refusal comes back the same way, as the core's error.
  std::promise<Result<Operation>> refused;
  client.run<Operation>([](EngineCore& core) { return core.compose(kAlice, gpus("train", 1)); },
                        [&](Result<Operation> op) { refused.set_value(std::move(op)); });
  auto again = refused.get_future().get();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Code::kAlreadyExists);
  EXPECT_EQ(adapter.delivered.load(), 2);
  engine_->stop(0s);
}

// The history (operations, events, audit, usage) and capacity are read on the engine's read pool: a control
// thread busy with something long does not hold them (issue 59, item 5), and the answer comes on the
// adapter's executor.
TEST_F(EngineTest, HistoryAndCapacityAreReadWhileTheControlThreadIsBusy) {
  start();
  compose("train", 2);
  std::promise<void> ran;  // declared before the pool: the pool's thread is joined before it goes
  AdapterPool adapter;
  EngineClient client(*engine_, adapter.deliver());
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  // Whatever the test's outcome, the control thread goes on, the busy task's completion reaches the adapter's
  // pool, and the engine (its control thread and read pool) stops before the pool goes (as yardd does).
  struct Release {
    std::promise<void>& release;
    std::future<void> ran;
    Engine& engine;
    ~Release() {
      release.set_value();
      ran.wait_for(std::chrono::seconds(30));
      engine.stop(0s);
    }
  } releaseAtEnd{release, ran.get_future(), *engine_};
  std::promise<void> blocked;
  client.run<bool>(
      [&blocked, gate](EngineCore&) -> Result<bool> {
        blocked.set_value();
        gate.wait();  // the control thread is busy until the test lets it go
        return true;
      },
      [&ran](Result<bool>) { ran.set_value(); });
  blocked.get_future().wait();

  std::promise<std::pair<std::size_t, std::thread::id>> operations, events, audit, usage, capacity;
  auto onAdapter = [&](std::promise<std::pair<std::size_t, std::thread::id>>& p, std::size_t n) { p.set_value({n, std::this_thread::get_id()}); };
  client.read<std::vector<Operation>>([](const HistoryReads& h) { return h.listOperations({}); },
                                      [&](Result<std::vector<Operation>> r) { onAdapter(operations, r ? r->size() : 0); });
  client.read<std::vector<Event>>([](const HistoryReads& h) { return h.recentEvents(100); },
                                  [&](Result<std::vector<Event>> r) { onAdapter(events, r ? r->size() : 0); });
  client.read<std::vector<AuditRecord>>([](const HistoryReads& h) { return h.listAudit({}); },
                                        [&](Result<std::vector<AuditRecord>> r) { onAdapter(audit, r ? r->size() : 0); });
  client.usage(Caller::local(), 0, 0, [&](Result<UsageReport> r) { onAdapter(usage, r ? 1 : 0); });
  RequestShape one;
  one.gpus = 1;
  client.capacity({one}, {}, {}, [&](Result<CapacityReport> r) { onAdapter(capacity, r ? r->shapes.size() : 0); });
  for (auto* p : {&operations, &events, &audit, &usage, &capacity}) {
    auto answer = p->get_future();
    ASSERT_EQ(answer.wait_for(10s), std::future_status::ready) << "a read waited for the control thread";
    const auto [n, thread] = answer.get();
    EXPECT_GT(n, 0u);
    EXPECT_EQ(thread, adapter.thread);
  }
}

// The core answers only on the control thread, in every build (not an assert a release build drops): a core
// handed to another thread during its call is refused there and changes nothing.
TEST_F(EngineTest, ACoreUsedOffTheControlThreadIsRefusedInEveryBuild) {
  start();
  EngineClient client(*engine_);
  std::promise<std::pair<Result<Operation>, Result<std::vector<Reservation>>>> fromElsewhere;
  client.run<bool>([&fromElsewhere](EngineCore& core) -> Result<bool> {
    // The misuse checked here: another thread calls the core while the control thread waits for it.
    auto elsewhere = std::async(std::launch::async, [&core] { return std::pair{core.compose(kAlice, gpus("stray", 1)), core.listReservations()}; });
    fromElsewhere.set_value(elsewhere.get());
    return true;
  }, [](Result<bool>) {});
  auto [composed, listed] = fromElsewhere.get_future().get();
  ASSERT_FALSE(composed);
  EXPECT_EQ(composed.error().code, Code::kInternal);
  EXPECT_FALSE(listed) << "reads through the core are refused too";
  EXPECT_FALSE(engine_->reads().getSystem("stray")) << "nothing was composed";
}

// The blocking core (tests, tools, the daemon's start) waits for the control thread: called on that thread it
// would wait for itself, so it is refused there at once, changes nothing, and the engine goes on.
TEST_F(EngineTest, ABlockingCoreCalledOnTheControlThreadIsRefusedInsteadOfWaitingForItself) {
  start();
  EngineClient client(*engine_);
  std::promise<Result<Operation>> onControl;
  client.run<bool>([this, &onControl](EngineCore&) -> Result<bool> {
    onControl.set_value(engine_->blocking().compose(kAlice, gpus("inside", 1)));
    return true;
  }, [](Result<bool>) {});
  auto refused = onControl.get_future().get();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kInternal);
  EXPECT_FALSE(engine_->reads().getSystem("inside")) << "nothing was composed";
  auto after = engine_->blocking().compose(kAlice, gpus("after", 1));
  ASSERT_TRUE(after) << after.error().message;
  EXPECT_EQ(engine_->waitOperation(after->id, 10s)->state, OperationState::kSucceeded) << "the engine went on";
}

TEST_F(EngineTest, AClientsCallTheEngineNeverRanIsAnsweredAbortedOnce) {
  start();
  AdapterPool adapter;
  EngineClient client(*engine_, adapter.deliver());
  engine_->stop(0s);
  std::atomic<int> answers{0};
  std::promise<Result<int>> answered;
  std::atomic<bool> ran{false};
  client.run<int>(
      [&](EngineCore&) -> Result<int> {
        ran = true;
        return 1;
      },
      [&](Result<int> r) {
        if (++answers == 1) answered.set_value(std::move(r));
      });
  auto r = answered.get_future().get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kAborted);
  adapter.pool.join();
  EXPECT_EQ(answers.load(), 1);
  EXPECT_FALSE(ran.load());
}

// Issue "No request can stop yardd": no thread root caught anything, so one throw ended yardd. A control task
// that throws leaves what it was changing unknown: the engine halts as for a store failure (refusing work, the
// reason for readers and onHalt, which makes yardd exit 75 for its service manager), and the control thread
// goes on answering, so waiters and stop() still are. A completion that throws on the adapter's executor ends
// that completion only.
TEST_F(EngineTest, AControlTaskThatThrowsHaltsTheEngineInsteadOfEndingTheProcess) {
  std::promise<std::string> halted;
  configure_ = [&](EngineOptions& o) { o.onHalt = [&](const std::string& why) { halted.set_value(why); }; };
  start();
  AdapterPool adapter;
  EngineClient client(*engine_, adapter.deliver());
  std::promise<void> thrownCompletionRan;
  client.run<bool>([](EngineCore&) -> Result<bool> { return true; },
                   [&](Result<bool>) {
                     thrownCompletionRan.set_value();
                     throw std::runtime_error("a completion that throws");
                   });
  thrownCompletionRan.get_future().wait();
  std::promise<Result<bool>> answered;
  client.run<bool>([](EngineCore&) -> Result<bool> { throw std::runtime_error("[json.exception.type_error.316] invalid UTF-8 byte"); },
                   [&](Result<bool> r) { answered.set_value(std::move(r)); });
  auto why = halted.get_future();
  ASSERT_EQ(why.wait_for(10s), std::future_status::ready) << "the engine halted";
  EXPECT_NE(why.get().find("type_error.316"), std::string::npos);
  EXPECT_NE(engine_->storeFailure().find("a failure inside the engine"), std::string::npos) << engine_->storeFailure();
  auto refused = engine_->blocking().compose(kAlice, gpus("after", 1));
  ASSERT_FALSE(refused) << "a halted engine takes no work";
  EXPECT_EQ(refused.error().code, Code::kUnavailable);
  // The call that threw is still answered once, on the adapter's executor: aborted.
  auto answer = answered.get_future();
  ASSERT_EQ(answer.wait_for(10s), std::future_status::ready);
  const auto thrown = answer.get();
  ASSERT_FALSE(thrown);
  EXPECT_EQ(thrown.error().code, Code::kAborted);
  EXPECT_GE(adapter.delivered.load(), 2);
}

TEST_F(EngineTest, AClientsSubscriptionReplaysWhatCameAfterTheSequenceThenGoesLiveOnTheAdaptersExecutor) {
  start();
  AdapterPool adapter;
  EngineClient client(*engine_, adapter.deliver());
  const auto before = engine_->history().listEvents(0, 1000)->size();
  run(engine_->blocking().compose(kAlice, gpus("train", 1)));
  const std::uint64_t after = engine_->history().listEvents(0, 1000)->back().sequence;
  std::promise<std::pair<Result<EventSubscription>, std::thread::id>> subscribed;
  client.subscribeAfter(before, [&](Result<EventSubscription> s) { subscribed.set_value({std::move(s), std::this_thread::get_id()}); });
  auto [s, thread] = subscribed.get_future().get();
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(thread, adapter.thread);
  ASSERT_FALSE(s->replay.empty());
  EXPECT_EQ(s->replay.back().sequence, after) << "every event after the client's sequence is replayed";
  std::promise<Event> pushed;
  std::once_flag once;
  s->live->setListener([&] {
    if (auto e = s->live->tryNext()) std::call_once(once, [&] { pushed.set_value(*e); });
  });
  run(engine_->blocking().decompose(kAlice, "train"));
  const Event live = pushed.get_future().get();
  EXPECT_GT(live.sequence, after) << "then live events";
  s->live->setListener(nullptr);
  engine_->stop(0s);
}

}  // namespace engine_client_test
}  // namespace switchyard
