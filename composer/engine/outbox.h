// What control-thread tasks hand out at their commit point (issue 59: one of the engine's parts): events to
// subscribers, the switch and host calls their steps start, answers to callers and waiters, in the order the tasks
// added them. An entry runs once the writes before it are in the store; when that write fails it is refused
// instead, or dropped when it has no refusal (group commit, group_commit.h, ADR 0035). Control thread only.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "composer/model/error.h"

namespace switchyard {

class Outbox {
 public:
  using Refusal = std::function<void(const Error&)>;
  void add(std::function<void()> deliver, Refusal refused = {}) {
    entries_.push_back(Entry{std::move(deliver), std::move(refused), std::nullopt});
  }
  // The writes of every entry added so far are in the store.
  void written() { written_ = entries_.size(); }
  // The write of the entries added since the last written() failed: each is refused with `why`.
  void failed(const Error& why) {
    for (std::size_t i = written_; i < entries_.size(); ++i)
      if (!entries_[i].failed) entries_[i].failed = why;
    written_ = entries_.size();
  }
  [[nodiscard]] bool empty() const { return entries_.empty(); }
  // Runs every entry there is now, in order: delivered, or refused with why its write failed. What they add
  // waits for the next turn.
  void deliverTurn() {
    auto turn = std::exchange(entries_, {});
    written_ = 0;
    for (auto& e : turn) {
      if (!e.failed) e.deliver();
      else if (e.refused) e.refused(*e.failed);
    }
  }

 private:
  struct Entry {
    std::function<void()> deliver;
    Refusal refused;
    std::optional<Error> failed;  // the write it waited for failed
  };
  std::vector<Entry> entries_;
  std::size_t written_ = 0;  // the first entries whose writes are in the store
};

}  // namespace switchyard
