#include "composer/engine/operation_waiters.h"

#include "composer/engine/complete_once.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace switchyard {

struct OperationWaiters::Wait {
  Wait(boost::asio::io_context& io, Answer a) : timer(io), once(std::move(a)) {}
  boost::asio::steady_timer timer;
  CompleteOnce<Operation> once;  // answered exactly once; kAborted when dropped unanswered
};

std::shared_ptr<OperationWaiters::Wait> OperationWaiters::make(Answer answer) const {
  return std::make_shared<Wait>(control_, std::move(answer));
}

void OperationWaiters::answer(Wait& wait, Result<Operation> result) { wait.once.complete(std::move(result)); }

void OperationWaiters::leave(const OperationId& id, const std::shared_ptr<Wait>& wait) {
  auto it = waits_.find(id);
  if (it == waits_.end()) return;
  std::erase(it->second, wait);
  if (it->second.empty()) waits_.erase(it);
}

void OperationWaiters::add(const OperationId& id, const std::shared_ptr<Wait>& wait, std::chrono::milliseconds timeout,
                           std::function<void(Wait&)> onTimeout) {
  waits_[id].push_back(wait);
  wait->timer.expires_after(timeout);
  wait->timer.async_wait([this, id, weak = std::weak_ptr<Wait>(wait), onTimeout = std::move(onTimeout)](const boost::system::error_code& ec) {
    auto w = weak.lock();
    if (ec || !w || w->once.answered()) return;  // answered already
    leave(id, w);
    onTimeout(*w);
  });
}

void OperationWaiters::cancel(const OperationId& id, const std::shared_ptr<Wait>& wait) {
  leave(id, wait);
  wait->timer.cancel();
  wait->once.complete(fail(Code::kAborted, fmt::format("the wait for {} was cancelled", id)));
}

std::function<void(const Error*)> OperationWaiters::takeAll(const OperationId& id, const Operation& op) {
  auto it = waits_.find(id);
  if (it == waits_.end()) return {};
  auto waits = std::move(it->second);
  waits_.erase(it);
  for (auto& w : waits) w->timer.cancel();
  return [waits = std::move(waits), op](const Error* refused) {
    for (auto& w : waits) w->once.complete(refused ? Result<Operation>(std::unexpected(*refused)) : Result<Operation>(op));
  };
}

std::vector<OperationId> OperationWaiters::waitedFor() const {
  std::vector<OperationId> ids;
  ids.reserve(waits_.size());
  for (const auto& [id, waits] : waits_) ids.push_back(id);
  return ids;
}

}  // namespace switchyard
