#include "net/event_feed.h"

#include <fmt/format.h>

#include <charconv>
#include <mutex>

#include "composer/model/access.h"

namespace switchyard::net {

Result<std::optional<std::uint64_t>> lastEventId(std::string_view header) {
  if (header.empty()) return std::nullopt;
  std::uint64_t id = 0;
  const auto [end, ec] = std::from_chars(header.data(), header.data() + header.size(), id);
  if (ec != std::errc{} || end != header.data() + header.size()) return fail(Code::kInvalidArgument, "Last-Event-ID must be an event sequence number");
  return std::optional<std::uint64_t>(id);
}

void EventFeed::pipeTo(const std::shared_ptr<StreamWriter>& writer, const Caller& caller, EventText text) && {
  // The highest sequence handed on: an event both replayed and queued since subscribing goes out once.
  // The control thread (the listener) and this one (the first drain) may deliver at once: one at a time.
  struct Sent {
    std::mutex mutex;
    std::uint64_t last = 0;
  };
  auto sent = std::make_shared<Sent>();
  sent->last = lastSeen_;
  auto deliver = [writer, sent, caller, text](const Event& e) {
    std::lock_guard lock(sent->mutex);
    if (e.sequence <= sent->last) return;
    sent->last = e.sequence;
    if (maySee(caller, e.tenant)) writer->send(fmt::format("id: {}\ndata: {}\n\n", e.sequence, text(e)));
  };
  for (const auto& e : replay_) deliver(e);
  // Pushed from the engine's control thread: format and hand on, never block.
  events_->setListener([weak = std::weak_ptr<EventStream>(events_), writer, deliver] {
    auto stream = weak.lock();
    if (!stream) return;
    while (auto e = stream->tryNext()) deliver(*e);
    if (stream->closed()) writer->close();
  });
  writer->onClosed([events = events_] {
    events->setListener(nullptr);
    events->close();
  });
  // Anything queued between subscribing and the listener being set.
  while (auto e = events_->tryNext()) deliver(*e);
}

}  // namespace switchyard::net
