// Server-sent events from the engine's event log, shared by the Redfish service (/redfish/v1/EventService/SSE)
// and the operator endpoint (/api/v1/events/stream): the replay a reconnecting client missed (its
// Last-Event-ID), then each new event the caller may see, in the surface's own frame format. It works on a
// subscription the adapter took (Engine::subscribeAfter), so it knows the event log, not the engine.
// Nothing here blocks the control thread: the subscription's listener only formats and hands bytes on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/caller.h"
#include "composer/model/composition.h"
#include "composer/model/error.h"
#include "composer/model/event_stream.h"
#include "net/http_server.h"

namespace switchyard::net {

// One event as the surface writes it: the `data:` of its frame, on one line (JSON). The feed frames it as
// "id: <sequence>\ndata: <text>\n\n".
using EventText = std::function<std::string(const Event&)>;

// The Last-Event-ID header's value: absent (empty) is nullopt, replay nothing; "0" replays from the first
// recorded event; anything but a sequence number is an error.
[[nodiscard]] Result<std::optional<std::uint64_t>> lastEventId(std::string_view header);

class EventFeed {
 public:
  // `live` was subscribed before `replay` (the events after `lastSeen`) was read, so nothing falls between.
  EventFeed(std::shared_ptr<EventStream> live, std::vector<Event> replay, std::uint64_t lastSeen)
      : events_(std::move(live)), replay_(std::move(replay)), lastSeen_(lastSeen) {}

  // Sends the replay, then every new event as it happens, each once and in order and only if `caller`
  // may see it. The writer is closed when the stream closes (the engine stops); the subscription ends when
  // the client leaves.
  void pipeTo(const std::shared_ptr<StreamWriter>& writer, const Caller& caller, EventText text) &&;

 private:
  std::shared_ptr<EventStream> events_;
  std::vector<Event> replay_;
  std::uint64_t lastSeen_;
};

}  // namespace switchyard::net
