// Engine::onControl, for the engine's own .cpp files (not a public header): runs a function on the
// control thread and waits for its result (inline when already there).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <future>

#include "composer/engine/engine.h"

namespace switchyard {

template <typename F>
auto Engine::onControl(F&& f) -> decltype(f()) {
  using R = decltype(f());
  if (!controlRunning_.load(std::memory_order_acquire)) return R(fail(Code::kAborted, "the engine is not running"));
  if (onControlThread()) {
    expireReservations();
    return f();
  }
  auto promise = std::make_shared<std::promise<R>>();
  auto future = promise->get_future();
  boost::asio::post(*control_, [this, promise, fn = std::forward<F>(f)]() mutable {
    if (controlStopped_) return;  // dropped unrun: the caller gets kAborted
    expireReservations();
    R result = fn();
    flush();  // the change is published before the caller sees the answer
    promise->set_value(std::move(result));
  });
  try {
    return future.get();
  } catch (const std::future_error&) {  // the control loop stopped before running it
    return R(fail(Code::kAborted, "yardd is shutting down"));
  }
}

}  // namespace switchyard
