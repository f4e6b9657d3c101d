#include "composer/engine/request_queue.h"

#include <algorithm>
#include <set>

namespace switchyard {

void RequestQueue::add(Operation op) {
  const OperationId id = op.id;
  waiting_.insert_or_assign(id, std::move(op));
  changed_ = true;
}

void RequestQueue::remove(const OperationId& id) {
  waiting_.erase(id);
  why_.erase(id);
  std::erase(order_, id);
  changed_ = true;
}

void RequestQueue::clear() {
  waiting_.clear();
  order_.clear();
  why_.clear();
  shadow_.reset();
  changed_ = true;
}

const Operation* RequestQueue::find(const OperationId& id) const {
  auto it = waiting_.find(id);
  return it == waiting_.end() ? nullptr : &it->second;
}

std::size_t RequestQueue::countOf(std::string_view tenant) const {
  return static_cast<std::size_t>(std::count_if(waiting_.begin(), waiting_.end(), [&](const auto& e) { return e.second.tenant == tenant; }));
}

void RequestQueue::beginPass() {
  shadow_.reset();
  why_.clear();
}

const std::string* RequestQueue::why(const OperationId& id) const {
  auto it = why_.find(id);
  return it == why_.end() ? nullptr : &it->second;
}

void RequestQueue::endPass(const std::vector<OperationId>& lookedAt) {
  order_.clear();
  for (const auto& id : lookedAt)
    if (waiting_.contains(id)) order_.push_back(id);
  changed_ = true;
}

void RequestQueue::forgetPass() {
  if (shadow_) changed_ = true;
  shadow_.reset();
}

std::vector<const Operation*> RequestQueue::inOrder() const {
  std::vector<const Operation*> out;
  out.reserve(waiting_.size());
  std::set<OperationId> listed;
  for (const auto& id : order_)
    if (auto it = waiting_.find(id); it != waiting_.end() && listed.insert(id).second) out.push_back(&it->second);
  for (const auto& [id, op] : waiting_)
    if (!listed.contains(id)) out.push_back(&op);
  return out;
}

void RequestQueue::setOrder(std::vector<OperationId> order) {
  order_ = std::move(order);
  changed_ = true;
}

}  // namespace switchyard
