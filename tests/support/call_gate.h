// A gate a call waits at until the test opens it: the call says it is held (waitUntilHeld returns), then waits.
// Host and switch wrappers use it to freeze an operation between two steps.
#pragma once

#include <condition_variable>
#include <mutex>

namespace switchyard::testing {

class CallGate {
 public:
  // On the call's thread: held from now on, and waits until open() (at once if it is open already).
  void holdHere() {
    std::unique_lock lock(mutex_);
    held_ = true;
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
  }
  void waitUntilHeld() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return held_; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool held_ = false;
  bool open_ = false;
};

}  // namespace switchyard::testing
