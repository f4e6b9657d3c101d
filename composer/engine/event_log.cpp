#include "composer/engine/event_log.h"

namespace switchyard {

Event EventLog::make(Timestamp at, std::string type, std::string subject, std::string message, std::string actor) {
  return Event{++last_, at, std::move(type), std::move(subject), std::move(message), std::move(actor)};
}

void EventLog::continueAfter(std::uint64_t sequence) {
  last_ = sequence;
  stored();
}

std::shared_ptr<EventStream> EventLog::subscribe() {
  auto stream = std::make_shared<EventStream>();
  subscribers_.push_back(stream);
  return stream;
}

void EventLog::deliver(const std::vector<Event>& events) {
  for (const auto& e : events)
    for (auto it = subscribers_.begin(); it != subscribers_.end();) {
      if (auto s = it->lock(); s && !s->closed()) {
        s->push(e);
        ++it;
      } else {
        it = subscribers_.erase(it);
      }
    }
}

void EventLog::closeAll() {
  for (auto& weak : subscribers_)
    if (auto s = weak.lock()) s->close();
  subscribers_.clear();
}

}  // namespace switchyard
