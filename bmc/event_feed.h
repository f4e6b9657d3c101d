// Server-sent events from the engine's event log, shared by the Redfish service (/redfish/v1/EventService/SSE)
// and the operator endpoint (/api/v1/events/stream): subscribe, replay what a reconnecting client missed
// (its Last-Event-ID), then push each new event the caller may see, in the surface's own frame format.
// Nothing here blocks the control thread: the engine's listener only formats and hands bytes to the writer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bmc/http_vocabulary.h"
#include "composer/engine/engine.h"

namespace switchyard::bmc {

// One event as the surface writes it: the `data:` of its frame, on one line (JSON). The feed frames it as
// "id: <sequence>\ndata: <text>\n\n".
using EventText = std::function<std::string(const Event&)>;

// The Last-Event-ID header's value: absent (empty) is nullopt, replay nothing; "0" replays from the first
// recorded event; anything but a sequence number is an error.
[[nodiscard]] Result<std::optional<std::uint64_t>> lastEventId(std::string_view header);

class EventFeed {
 public:
  // Subscribes first, then reads the events after `lastSeen` (none when nullopt), so nothing falls between
  // the two. Fails while yardd is starting or stopping, or when the log cannot be read: reply with the error.
  [[nodiscard]] static Result<EventFeed> open(Engine& engine, std::optional<std::uint64_t> lastSeen);

  // Sends the replay, then every new event as it happens, each once and in order and only if `caller`
  // may see it. The writer is closed when the engine stops; the subscription ends when the client leaves.
  void pipeTo(const std::shared_ptr<StreamWriter>& writer, const Caller& caller, EventText text) &&;

 private:
  EventFeed(std::shared_ptr<EventStream> events, std::vector<Event> replay, std::uint64_t lastSeen)
      : events_(std::move(events)), replay_(std::move(replay)), lastSeen_(lastSeen) {}
  std::shared_ptr<EventStream> events_;
  std::vector<Event> replay_;
  std::uint64_t lastSeen_;
};

}  // namespace switchyard::bmc
