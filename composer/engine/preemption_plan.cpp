#include "composer/engine/preemption_plan.h"

namespace switchyard {

bool PreemptionPlan::mayPlanFor(const OperationId& head, Timestamp now) const {
  auto retry = retryAt_.find(head);
  return retry == retryAt_.end() || now >= retry->second;
}

void PreemptionPlan::begin(Preemption p) { plan_ = std::move(p); }

std::vector<SystemId> PreemptionPlan::takeDue(Timestamp now) {
  if (!plan_ || plan_->started || now < plan_->decomposeAt) return {};
  plan_->started = true;
  return plan_->victims;
}

std::optional<OperationId> PreemptionPlan::failed(Timestamp now, Duration retryAfter) {
  if (!plan_) return std::nullopt;
  OperationId head = plan_->head;
  retryAt_[head] = now + retryAfter.count();
  plan_.reset();
  return head;
}

void PreemptionPlan::endIfHeadLeft(const std::function<bool(const OperationId&)>& queued) {
  if (plan_ && !queued(plan_->head)) plan_.reset();
}

void PreemptionPlan::pruneRetries(const std::function<bool(const OperationId&)>& queued) {
  std::erase_if(retryAt_, [&](const auto& entry) { return !queued(entry.first); });
}

}  // namespace switchyard
