// One reconcile round's drifts: every drift found is returned, but only one the previous round did not
// report is announced (an event and a warning), so a drift that persists is reported once. The fabric
// and the host reconcile each keep their own set of what was reported.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "composer/engine/engine.h"

namespace switchyard {

class DriftRound {
 public:
  using Announce = std::function<void(const Drift&)>;
  DriftRound(const std::set<std::string>& reportedBefore, Announce announce)
      : reportedBefore_(reportedBefore), announce_(std::move(announce)) {}

  void report(std::string kind, const DeviceId& device, std::string message) {
    const std::string key = kind + ":" + device;
    seen_.insert(key);
    drifts_.push_back({std::move(kind), device, std::move(message)});
    if (!reportedBefore_.contains(key)) announce_(drifts_.back());
  }

  [[nodiscard]] const std::vector<Drift>& drifts() const { return drifts_; }
  // What the next round compares against.
  [[nodiscard]] std::set<std::string> takeSeen() { return std::move(seen_); }

 private:
  const std::set<std::string>& reportedBefore_;
  Announce announce_;
  std::set<std::string> seen_;
  std::vector<Drift> drifts_;
};

}  // namespace switchyard
