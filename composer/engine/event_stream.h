// A subscriber's queue of events (Watch). Bounded: a subscriber that stops reading loses the oldest
// events and is told how many, instead of growing the daemon's memory.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include "composer/model/composition.h"

namespace switchyard {

class EventStream {
 public:
  explicit EventStream(std::size_t capacity = 10'000) : capacity_(capacity) {}

  void push(const Event& e) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      if (queue_.size() == capacity_) {
        queue_.pop_front();
        ++dropped_;
      }
      queue_.push_back(e);
    }
    ready_.notify_one();
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
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
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
  std::uint64_t dropped_ = 0;
  bool closed_ = false;
};

}  // namespace switchyard
