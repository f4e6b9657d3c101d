// A subscriber's queue of events (Watch, SSE). Bounded: a subscriber that stops reading loses the oldest
// events and is told how many, instead of growing the daemon's memory.
//
// Two ways to read: block in next() (a thread per subscriber), or push: the listener given to
// setListener() is called after every event arrives and when the stream closes; the reader drains
// with tryNext(). The listener
// runs on the engine's control thread, so it must only hand work on (start a write, post to an
// io_context), never block or call the engine.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include "composer/model/composition.h"

namespace switchyard {

class EventStream {
 public:
  explicit EventStream(std::size_t capacity = 10'000) : capacity_(capacity) {}

  void push(const Event& e) {
    Listener listener;
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      if (queue_.size() == capacity_) {
        queue_.pop_front();
        ++dropped_;
      }
      queue_.push_back(e);
      listener = listener_;
    }
    ready_.notify_one();
    if (listener) listener();
  }

  using Listener = std::function<void()>;
  // Called after each push and on close. Events queued before it was set are not announced: drain with
  // tryNext() after setting it.
  void setListener(Listener listener) {
    std::lock_guard lock(mutex_);
    listener_ = std::move(listener);
  }

  // The next event if one is queued; never waits.
  [[nodiscard]] std::optional<Event> tryNext() {
    std::lock_guard lock(mutex_);
    if (queue_.empty()) return std::nullopt;
    Event e = std::move(queue_.front());
    queue_.pop_front();
    return e;
  }

  // The next event, or nullopt after the timeout or once closed and drained.
  [[nodiscard]] std::optional<Event> next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    ready_.wait_for(lock, timeout, [this] { return !queue_.empty() || closed_; });
    if (queue_.empty()) return std::nullopt;
    Event e = std::move(queue_.front());
    queue_.pop_front();
    return e;
  }

  void close() {
    Listener listener;
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      closed_ = true;
      listener = std::move(listener_);
      listener_ = nullptr;
    }
    ready_.notify_all();
    if (listener) listener();
  }

  [[nodiscard]] bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }
  [[nodiscard]] std::uint64_t dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
  }

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Event> queue_;
  Listener listener_;
  std::uint64_t dropped_ = 0;
  bool closed_ = false;
};

}  // namespace switchyard
