// The deterministic simulation's scheduler hook: every switch and host call the engine makes waits here
// until the simulation decides its fate (pass, fail without effect, or apply and lose the reply), one call
// at a time, so that a run is a sequence of decisions drawn from one seed.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "composer/model/error.h"

namespace switchyard::sim {

enum class Fate { kPass, kFail, kLoseReply };

class Gate {
 public:
  // Off (every call passes at once) until hold(): the engine's start-up runs ungated.
  void hold() {
    std::lock_guard lock(mutex_);
    holding_ = true;
  }

  // Lets every call through from now on, the waiting ones too (at the end of a run).
  void open() {
    std::lock_guard lock(mutex_);
    holding_ = false;
    for (Slot* s : slots_) {
      s->decided = true;
      ++inTransit_;
    }
    slots_.clear();
    changed_.notify_all();
  }

  // On an engine thread: waits for a fate, then runs `call` (or not) and answers as decided.
  template <typename R, typename Call>
  R pass(std::string what, Call call) {
    Slot slot{std::move(what)};
    {
      std::unique_lock lock(mutex_);
      if (!holding_) {
        lock.unlock();
        return call();
      }
      // Numbered among the calls with the same description, so that two identical calls (a verify's read
      // and a reconcile's) stay apart. Not by arrival across all calls: two different calls that reach the
      // gate at the same moment (unbinds of two operations) would swap their numbers from run to run.
      slot.what += fmt::format(" #{}", ++arrivals_[slot.what]);
      slots_.push_back(&slot);
      changed_.notify_all();
      changed_.wait(lock, [&] { return slot.decided; });
    }
    R result = slot.fate == Fate::kFail ? R(fail(Code::kUnavailable, "simulated fault: " + slot.what + " refused"))
                                        : call();
    if (slot.fate == Fate::kLoseReply) result = R(fail(Code::kDeadlineExceeded, "simulated fault: the reply to " + slot.what + " was lost"));
    {
      std::lock_guard lock(mutex_);
      --inTransit_;
      changed_.notify_all();
    }
    return result;
  }

  // The calls waiting now, in a fixed order (by what they are, not by which thread came first).
  std::vector<std::string> pending() {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const Slot* s : slots_) out.push_back(s->what);
    std::sort(out.begin(), out.end());
    return out;
  }

  void decide(const std::string& what, Fate fate) {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(slots_.begin(), slots_.end(), [&](const Slot* s) { return s->what == what; });
    if (it == slots_.end()) return;
    (*it)->fate = fate;
    (*it)->decided = true;
    slots_.erase(it);
    ++inTransit_;
    changed_.notify_all();
  }

  // Waits until `settled(pendingCount)` holds with no decided call still running, or the timeout passes.
  template <typename Pred>
  bool waitUntil(Pred settled, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return inTransit_ == 0 && settled(slots_.size()); });
  }
  // Wakes waitUntil() to look again (something outside the gate changed).
  void poke() {
    std::lock_guard lock(mutex_);
    changed_.notify_all();
  }

 private:
  struct Slot {
    std::string what;
    Fate fate = Fate::kPass;
    bool decided = false;
  };
  std::mutex mutex_;
  std::condition_variable changed_;
  std::list<Slot*> slots_;
  int inTransit_ = 0;
  std::map<std::string, std::uint64_t> arrivals_;  // by description
  bool holding_ = false;
};

}  // namespace switchyard::sim
