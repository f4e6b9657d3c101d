// Whether the engine takes work (issue 59: one of the engine's parts). It starts closed (the store loading,
// operations resuming); start() opens it; stop() closes it (changes are refused, running operations finish) and,
// once its grace is over, halts it (no new step starts; the results of calls in flight are still recorded). A failure
// (the store refused a write or fenced this yardd out, a control task threw) halts it for good, with the reason
// callers are told until a restart. The control thread changes and reads it; haltedForReaders() and
// failureForReaders() are safe on any thread (health checks, tests).
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "composer/model/error.h"

namespace switchyard {

class EngineLifecycle {
 public:
  // Changes may be taken from now (start). A lifecycle that halted stays halted.
  void open() {
    if (!halted_) open_ = true;
  }
  // stop(): changes are refused from now; what runs goes on.
  void close() { open_ = false; }
  // stop()'s grace is over: no new step starts.
  void halt() {
    open_ = false;
    halted_ = true;
    haltedForReaders_ = true;
  }
  // Halts for good for `why`. True the first time (the engine logs it and tells onHalt); a later failure keeps the
  // first reason.
  bool haltForGood(const std::string& why) {
    halt();
    if (!failure_.empty()) return false;
    failure_ = why;
    std::lock_guard lock(mutex_);
    failureForReaders_ = why;
    return true;
  }

  // Open, not halted, not failed: changes are taken, timers and admission act.
  [[nodiscard]] bool accepting() const { return open_ && !halted_ && failure_.empty(); }
  [[nodiscard]] bool halted() const { return halted_; }
  [[nodiscard]] bool failed() const { return !failure_.empty(); }
  // Why it failed (empty: it did not).
  [[nodiscard]] const std::string& failure() const { return failure_; }
  // Why a change is refused now (a standby's refusal is the engine's: it names the leader), or nothing.
  [[nodiscard]] Result<void> refusal() const {
    if (failed()) return fail(Code::kUnavailable, fmt::format("yardd stopped taking work because its store failed ({}); restart it", failure_));
    if (!accepting()) return fail(Code::kUnavailable, "yardd is starting or shutting down; retry shortly");
    return {};
  }

  // Any thread.
  [[nodiscard]] bool haltedForReaders() const { return haltedForReaders_.load(); }
  [[nodiscard]] std::string failureForReaders() const {
    std::lock_guard lock(mutex_);
    return failureForReaders_;
  }

 private:
  bool open_ = false;
  bool halted_ = false;
  std::string failure_;
  std::atomic<bool> haltedForReaders_{false};
  mutable std::mutex mutex_;       // guards failureForReaders_
  std::string failureForReaders_;  // failure_, for other threads
};

}  // namespace switchyard
