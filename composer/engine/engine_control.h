// Engine::onControl and Engine::awaitAnswer, for the engine's own .cpp files (not a public header): run a function on
// the control thread and wait for its result (inline when already there), or wait for a Completion form's answer.
#pragma once

#include <fmt/format.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <future>
#include <list>
#include <optional>

#include "composer/engine/engine.h"

namespace switchyard {

// The control thread's timers (fabric poll, prune, reconcile, deadlines, GPU activity, retries' backoff) and what keeps its loop alive.
struct Engine::TimerHolder {
  explicit TimerHolder(boost::asio::io_context& io)
      : timer(io), pruneTimer(io), reconcileTimer(io), deadlineTimer(io), activityTimer(io), guard(boost::asio::make_work_guard(io)) {}
  boost::asio::steady_timer timer;
  boost::asio::steady_timer pruneTimer;
  boost::asio::steady_timer reconcileTimer;
  boost::asio::steady_timer deadlineTimer;
  boost::asio::steady_timer activityTimer;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard;
};

template <typename F>
auto Engine::onControl(F&& f) -> decltype(f()) {
  using R = decltype(f());
  if (!loop_.running()) return R(fail(Code::kAborted, "the engine is not running"));
  if (onControlThread()) {
    // Blocking here would wait for itself: the control thread's own code calls a core of its task.
    if (!options_.stepped || loop_.inTask())
      return R(fail(Code::kInternal, "a blocking engine method was called on the engine's control thread (use a core of the task: EngineCore)"));
    // A stepped engine's caller outside a task (a test): the call is a task of its own, ending at its
    // commit point like every other.
    R result = loop_.asTask(std::forward<F>(f));
    flush();
    return result;
  }
  auto promise = std::make_shared<std::promise<R>>();
  auto future = promise->get_future();
  commits_.posted();
  boost::asio::post(loop_.context(), [this, promise, fn = std::forward<F>(f)]() mutable {
    commits_.started();
    if (loop_.stopped()) {  // dropped unrun: the caller gets kAborted
      flush();  // the commit point a task before this one waited for
      return;
    }
    // Answered at the commit point: once the change is written and published (group_commit.h).
    auto result = std::make_shared<R>(fn());
    toOutbox([promise, result] { promise->set_value(std::move(*result)); },
             [promise](const Error& refused) { promise->set_value(R(std::unexpected(refused))); });
    flush();
  });
  try {
    return future.get();
  } catch (const std::future_error&) {  // the control loop stopped before running it
    return R(fail(Code::kAborted, "yardd is shutting down"));
  }
}

template <typename T>
Result<T> Engine::awaitAnswer(std::string_view what, const std::function<void(Completion<T>)>& start,
                              const std::function<Result<T>()>& unanswered) {
  if (onControlThread() && options_.stepped) {
    auto answer = std::make_shared<std::optional<Result<T>>>();
    start([answer](Result<T> r) { answer->emplace(std::move(r)); });
    while (!*answer && loop_.step()) {
    }
    if (*answer) return std::move(**answer);
    return unanswered();
  }
  if (onControlThread())
    return fail(Code::kInternal, fmt::format("{} would block the engine's control thread: use its Completion form", what));
  auto promise = std::make_shared<std::promise<Result<T>>>();
  auto future = promise->get_future();
  start([promise](Result<T> r) { promise->set_value(std::move(r)); });
  try {
    return future.get();
  } catch (const std::future_error&) {  // the control loop stopped with the call unanswered
    return fail(Code::kAborted, "yardd is shutting down");
  }
}

}  // namespace switchyard
