// The engine's events as they are numbered and handed out: one of the engine's parts (issue 59). It owns the
// sequence (the next event's number; numbers of events whose write failed are given again), the newest number
// the store holds (readable on any thread: recentEvents reads the store up to it), and the live subscribers
// (Watch, the Redfish and console event streams), which it delivers to and forgets once closed. Making events
// and writing them stays with the engine (persist); control thread only, except storedSequence().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "composer/model/clock.h"
#include "composer/model/composition.h"
#include "composer/model/event_stream.h"

namespace switchyard {

class EventLog {
 public:
  // The next event, numbered (tenant and system are filled in when it is written).
  [[nodiscard]] Event make(Timestamp at, std::string type, std::string subject, std::string message, std::string actor);
  // `count` events made last were not written (the store failed): their numbers are given again.
  void unmake(std::size_t count) { last_ -= count; }
  // Every event made so far is in the store: readers may now ask the store for them.
  void stored() { stored_.store(last_, std::memory_order_release); }
  // Continues after `sequence` (a start or a standby's refresh read the store that far); the store holds it.
  void continueAfter(std::uint64_t sequence);
  // The newest event made (control thread) and the newest the store holds (any thread).
  [[nodiscard]] std::uint64_t last() const { return last_; }
  [[nodiscard]] std::uint64_t storedSequence() const { return stored_.load(std::memory_order_acquire); }

  // A live stream of the events delivered from now on.
  [[nodiscard]] std::shared_ptr<EventStream> subscribe();
  // Pushes `events` to every open subscriber, in order; closed or dropped ones are forgotten.
  void deliver(const std::vector<Event>& events);
  // Closes every subscriber (the engine stops) and forgets them.
  void closeAll();
  [[nodiscard]] std::size_t subscribers() const { return subscribers_.size(); }

 private:
  std::uint64_t last_ = 0;
  std::atomic<std::uint64_t> stored_{0};
  std::vector<std::weak_ptr<EventStream>> subscribers_;
};

}  // namespace switchyard
