// The deterministic simulation's hook on every switch and host call the engine makes: the simulation decides
// each call's fate as it runs (pass, fail without effect, or apply and lose the reply). The engine is a stepped
// one (ADR 0026): its calls run on the simulation's own thread when the simulation picks them, so a run is a
// sequence of decisions drawn from one seed, with no thread and no wall-clock wait.
#pragma once

#include <functional>
#include <map>
#include <string>

#include <fmt/format.h>

#include "composer/model/error.h"

namespace switchyard::sim {

enum class Fate { kPass, kFail, kLoseReply };

class Gate {
 public:
  using Decide = std::function<Fate(const std::string& what)>;
  explicit Gate(Decide decide) : decide_(std::move(decide)) {}

  // Off (every call passes) until hold(): the engine's start-up runs ungated. open(): off again (the end of a run).
  void hold() { holding_ = true; }
  void open() { holding_ = false; }

  // Asks for the call's fate, then runs `call` (or not) and answers as decided.
  template <typename R, typename Call>
  R pass(std::string what, Call call) {
    if (!holding_) return call();
    // Numbered among the calls with the same description, so that two identical calls (a verify's read and a
    // reconcile's) stay apart in the trace.
    what += fmt::format(" #{}", ++arrivals_[what]);
    const Fate fate = decide_(what);
    if (fate == Fate::kFail) return R(fail(Code::kUnavailable, "simulated fault: " + what + " refused"));
    R result = call();
    if (fate == Fate::kLoseReply) result = R(fail(Code::kDeadlineExceeded, "simulated fault: the reply to " + what + " was lost"));
    return result;
  }

 private:
  Decide decide_;
  bool holding_ = false;
  std::map<std::string, std::uint64_t> arrivals_;  // by description
};

}  // namespace switchyard::sim
