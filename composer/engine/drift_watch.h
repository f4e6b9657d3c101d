// Reconcile's memory (issue 59: one of the engine's parts): what the last fabric round and the last host round
// reported, so that a drift that persists is announced once (a warning and a drift.<kind> event) and the end of all
// drift on a side is logged once; and whether the switch's event feed is failing, announced when it goes and when it
// comes back. It owns that memory and says what is new; the engine reads the switch and the hosts, compares, writes
// and publishes (engine_recovery.cpp, engine_host_reconcile.cpp). Control thread only.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "composer/engine/engine_requests.h"

namespace switchyard {

// One round's drifts: every drift found is returned, but only one the side's previous round did not report is
// announced.
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

class DriftWatch {
 public:
  enum class Side : std::size_t { kFabric, kHosts };

  // A round of `side`: it returns every drift it finds and announces those the side's last remembered round did not.
  [[nodiscard]] DriftRound round(Side side, DriftRound::Announce announce) const {
    return DriftRound(reported_[static_cast<std::size_t>(side)], std::move(announce));
  }
  // `round`'s writes are in: the side's next round compares against what it found. True when the side had drift
  // before and has none now (the engine logs that they agree again).
  bool remember(Side side, DriftRound& round) {
    auto& reported = reported_[static_cast<std::size_t>(side)];
    const bool cleared = round.drifts().empty() && !reported.empty();
    reported = round.takeSeen();
    return cleared;
  }

  // The switch's event feed was read (`failure` empty) or could not be (why not).
  enum class Feed {
    kAsBefore,  // read as the last time, or failing as it was (announced once, when it went)
    kLost,      // could not be read, after it could
    kBack,      // read again, after it could not be
  };
  Feed feedRead(const std::string& failure) {
    if (failure.empty() == feedFailure_.empty()) return Feed::kAsBefore;
    feedFailure_ = failure;
    return failure.empty() ? Feed::kBack : Feed::kLost;
  }
  // Why the feed cannot be read, while it cannot (empty: it can).
  [[nodiscard]] const std::string& feedFailure() const { return feedFailure_; }

 private:
  std::array<std::set<std::string>, 2> reported_;  // per side: "kind:device" of each drift its last round found
  std::string feedFailure_;
};

}  // namespace switchyard
