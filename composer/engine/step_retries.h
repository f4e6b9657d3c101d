// When a failed step runs again (issue 59: one of the engine's parts, the operation runner's retries). A step that
// failed in a way worth retrying waits first: the first backoff doubling with each failed attempt, at most the
// longest, each wait drawn between half and all of that (jitter, so that calls that failed together do not retry
// together). The part owns the random stream and the timers that wait the backoffs out; the runner decides what
// runs again (the same step, if its operation is still active). Control thread only.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <random>

#include <boost/asio/steady_timer.hpp>

#include "composer/model/clock.h"

namespace switchyard {

class StepRetries {
 public:
  // `first`: the wait after the first failed attempt (0: retry at once); `most`: the longest.
  StepRetries(boost::asio::io_context& control, std::chrono::milliseconds first, std::chrono::milliseconds most)
      : control_(control), first_(first), most_(most) {}

  // The wait before the attempt after `attempts` failed ones.
  [[nodiscard]] Duration waitAfter(int attempts);
  // Runs `again` on the control thread once `wait` (real time) has passed, unless cancelAll comes first.
  void after(std::chrono::nanoseconds wait, std::function<void()> again);
  // Stops every retry still waiting (the engine stops: its steps run again at the next start).
  void cancelAll();
  [[nodiscard]] std::size_t waiting() const { return timers_.size(); }

 private:
  boost::asio::io_context& control_;
  std::chrono::milliseconds first_, most_;
  std::minstd_rand jitter_{std::random_device{}()};
  std::list<boost::asio::steady_timer> timers_;
};

}  // namespace switchyard
