// Fair share's memory (ADR 0016): the GPUs each tenant held lately, decayed with a half-life, so that the queue
// orders tenants by what they hold now plus what they held recently. One of the engine's parts (issue 59): it
// owns this history and nothing else; admission (engine_queue.cpp) asks it for each pass's charges. Control
// thread only, like the rest of admission.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "composer/model/clock.h"

namespace switchyard {

class RecentUse {
 public:
  using Charges = std::map<std::string, double, std::less<>>;

  // A half-life of 0 or less keeps no history: a tenant's charge is what it holds now.
  explicit RecentUse(std::chrono::milliseconds halfLife) : halfLife_(halfLife) {}

  // One admission pass at `now`, given the whole GPUs each tenant holds now: folds the time since the last pass
  // into the history (as if each tenant held, since that pass, what it held then) and answers each tenant's
  // charge in GPUs: held now, plus its decayed GPU-seconds over one half-life.
  [[nodiscard]] Charges pass(const Charges& heldNow, Timestamp now);
  // The charges a pass at `now` would answer, the history left as it is (a dry run: yardctl plan).
  [[nodiscard]] Charges peek(const Charges& heldNow, Timestamp now) const {
    RecentUse copy = *this;
    return copy.pass(heldNow, now);
  }

  // Tenants remembered (holding GPUs or with a second or more of history): the bookkeeping's size.
  [[nodiscard]] std::size_t tenants() const { return tenants_.size(); }

 private:
  struct Tenant {
    double decayedGpuSeconds = 0;  // GPU-seconds held, decayed to the last pass
    double heldGpus = 0;           // held at the last pass
  };
  std::chrono::milliseconds halfLife_;
  std::map<std::string, Tenant, std::less<>> tenants_;
  Timestamp lastPassAt_ = 0;
};

}  // namespace switchyard
