// Time is injected: the daemon uses SystemClock, tests and the simulator's latency use ManualClock so
// that no test sleeps and every timeout is deterministic.
#pragma once

#include <atomic>
#include <optional>
#include <string_view>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace switchyard {

using Duration = std::chrono::nanoseconds;

// Wall-clock time as nanoseconds since the Unix epoch (stored, printed in RFC 3339).
using Timestamp = std::int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  [[nodiscard]] virtual Timestamp now() const = 0;
  // Waits for d. On a ManualClock this advances virtual time and returns at once.
  virtual void sleepFor(Duration d) = 0;
  // How long a timer for d runs in real time: d on the system clock. A ManualClock moves its time on by d
  // at once and answers zero, so that work behind a timer runs without a wait in tests.
  [[nodiscard]] virtual Duration timerFor(Duration d) = 0;
};

class SystemClock final : public Clock {
 public:
  [[nodiscard]] Timestamp now() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  void sleepFor(Duration d) override {
    if (d.count() > 0) std::this_thread::sleep_for(d);
  }
  [[nodiscard]] Duration timerFor(Duration d) override { return d; }
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(Timestamp start = 1'700'000'000'000'000'000) : now_(start) {}
  [[nodiscard]] Timestamp now() const override { return now_.load(); }
  void sleepFor(Duration d) override { advance(d); }
  [[nodiscard]] Duration timerFor(Duration d) override {
    advance(d);
    return Duration::zero();
  }
  void advance(Duration d) { now_.fetch_add(d.count()); }

 private:
  std::atomic<Timestamp> now_;
};

// "2026-11-21T09:47:00.123Z"
[[nodiscard]] std::string formatTimestamp(Timestamp t);
// The inverse, for UTC times in RFC 3339 form: "2026-11-21T09:47:00Z", with optional fraction, or a date
// alone ("2026-11-21", its midnight). Nothing for anything else.
[[nodiscard]] std::optional<Timestamp> parseTimestamp(std::string_view text);

}  // namespace switchyard
