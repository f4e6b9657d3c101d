#include "composer/engine/defragmentation.h"

#include <algorithm>

namespace switchyard {

bool allowsMoves(const System& s) {
  const auto label = s.labels.find(std::string(kMovableLabel));
  return label != s.labels.end() && label->second == "true";
}

std::size_t DefragPlan::gpus() const {
  std::size_t n = 0;
  for (const auto& m : moves) n += m.from.size();
  return n;
}

bool Defragmentation::mayPlanFor(const OperationId& head, Timestamp now) const {
  auto retry = retryAt_.find(head);
  return retry == retryAt_.end() || now >= retry->second;
}

void Defragmentation::begin(DefragPlan plan, Timestamp now, Duration retryAfter) {
  plan_ = std::move(plan);
  failed_ = false;
  if (std::any_of(plan_->moves.begin(), plan_->moves.end(), [](const SystemMove& m) { return m.stage == SystemMove::Stage::kFailed; }))
    fail(now, retryAfter);
  endIfOver();
}

void Defragmentation::resume(SystemMove move) {
  move.stage = SystemMove::Stage::kDetachDue;
  move.operation.clear();
  resumed_.push_back(std::move(move));
}

std::optional<SystemMove> Defragmentation::ended(const OperationId& operation, bool succeeded, Timestamp now, Duration retryAfter) {
  if (operation.empty()) return std::nullopt;
  if (auto it = std::find_if(resumed_.begin(), resumed_.end(), [&](const SystemMove& m) { return m.operation == operation; }); it != resumed_.end()) {
    SystemMove move = std::move(*it);
    resumed_.erase(it);
    move.operation.clear();
    move.stage = succeeded ? SystemMove::Stage::kMoved : SystemMove::Stage::kFailed;
    return move;
  }
  if (!plan_) return std::nullopt;
  auto it = std::find_if(plan_->moves.begin(), plan_->moves.end(), [&](const SystemMove& m) { return m.operation == operation; });
  if (it == plan_->moves.end()) return std::nullopt;
  SystemMove& move = *it;
  move.operation.clear();
  if (!succeeded) {
    move.stage = SystemMove::Stage::kFailed;
    fail(now, retryAfter);
  } else {
    move.stage = move.stage == SystemMove::Stage::kAttaching ? SystemMove::Stage::kDetachDue : SystemMove::Stage::kMoved;
  }
  SystemMove copy = move;
  endIfOver();
  return copy;
}

std::vector<SystemMove> Defragmentation::detachesDue() const {
  std::vector<SystemMove> due;
  for (const auto& m : resumed_)
    if (m.stage == SystemMove::Stage::kDetachDue) due.push_back(m);
  if (plan_)
    for (const auto& m : plan_->moves)
      if (m.stage == SystemMove::Stage::kDetachDue) due.push_back(m);
  return due;
}

void Defragmentation::detaching(const SystemId& system, const OperationId& operation, Timestamp now, Duration retryAfter) {
  for (auto it = resumed_.begin(); it != resumed_.end(); ++it) {
    if (it->system != system || it->stage != SystemMove::Stage::kDetachDue) continue;
    if (operation.empty()) {
      resumed_.erase(it);  // could not start: the system keeps both sets (the engine said so)
    } else {
      it->stage = SystemMove::Stage::kDetaching;
      it->operation = operation;
    }
    return;
  }
  if (!plan_) return;
  for (auto& m : plan_->moves) {
    if (m.system != system || m.stage != SystemMove::Stage::kDetachDue) continue;
    if (operation.empty()) {
      m.stage = SystemMove::Stage::kFailed;
      fail(now, retryAfter);
    } else {
      m.stage = SystemMove::Stage::kDetaching;
      m.operation = operation;
    }
  }
  endIfOver();
}

void Defragmentation::fail(Timestamp now, Duration retryAfter) {
  if (!failed_) retryAt_[plan_->head] = now + retryAfter.count();
  failed_ = true;
}

void Defragmentation::endIfOver() {
  if (!plan_) return;
  const bool over = std::all_of(plan_->moves.begin(), plan_->moves.end(), [](const SystemMove& m) {
    return m.stage == SystemMove::Stage::kMoved || m.stage == SystemMove::Stage::kFailed;
  });
  if (over) {
    plan_.reset();
    failed_ = false;
  }
}

void Defragmentation::pruneRetries(const std::function<bool(const OperationId&)>& queued) {
  std::erase_if(retryAt_, [&](const auto& entry) { return !queued(entry.first); });
}

}  // namespace switchyard
