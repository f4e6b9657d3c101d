#include "composer/engine/step_retries.h"

#include <algorithm>

namespace switchyard {

Duration StepRetries::waitAfter(int attempts) {
  if (first_.count() <= 0) return Duration::zero();
  const int doublings = std::clamp(attempts - 1, 0, 20);
  const auto ceiling = std::min<std::chrono::nanoseconds>(first_ * (std::int64_t{1} << doublings), most_);
  std::uniform_int_distribution<std::int64_t> half(ceiling.count() / 2, ceiling.count());
  return Duration(half(jitter_));
}

void StepRetries::after(std::chrono::nanoseconds wait, std::function<void()> again) {
  auto timer = timers_.emplace(timers_.end(), control_, wait);
  timer->async_wait([this, timer, again = std::move(again)](const boost::system::error_code& ec) {
    timers_.erase(timer);
    if (!ec) again();
  });
}

void StepRetries::cancelAll() {
  for (auto& timer : timers_) timer.cancel();
}

}  // namespace switchyard
