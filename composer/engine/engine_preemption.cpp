// Preemption (issue 40, ADR 0017): when the queue's head cannot fit and its priority class preempts, yardd
// may take back systems of preemptible classes with a lower value. It picks the victims that free a
// placement for the head while losing the least (fewest GPUs first, then the youngest; then it drops any
// victim the placement does not need), tells each (a system.preempting event naming the request and the
// moment), waits the grace period (EngineOptions::preemptionGrace), then decomposes them through the
// normal safe path: host-release first, so a GPU in use is never unbound. What they free is promised to
// the head (backfill keeps off it). A victim whose host refuses to let go stays whole; the head keeps
// waiting, and yardd plans again after EngineOptions::leaseRetry. A tenant's disruption budget
// (TenantQuota::maxPreemptedGpusPerDay) caps how many of its GPUs are preempted in any 24 hours: a system
// that would take it past the budget is not a candidate. A victim of a class that requeues is queued again once
// decomposed (requeue.h): the decompose carries the request, and its last transaction queues it.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "composer/engine/engine.h"
#include "composer/engine/requeue.h"

namespace switchyard {

namespace {

Caller preemptionCaller() { return {std::string(kPreemptionActor), Role::kAdmin, {}}; }

int gpusOf(const System& s) { return static_cast<int>(s.bindings.size()); }

}  // namespace

std::optional<Engine::VictimChoice> Engine::chooseVictims(const PlacementRequest& wanted, const PriorityClass& cls,
                                                          const admission::Handle::VictimFilter& mayTake) {
  std::vector<const System*> candidates;
  for (const auto& [id, s] : state_->systems()) {
    if (s.hostId.empty() || !s.activeOperation.empty()) continue;
    if (s.state != SystemState::kComposed && s.state != SystemState::kDegraded) continue;
    const PriorityClass* theirs = priorityClass(s.priorityClass.empty() ? kDefaultPriorityClass : std::string_view(s.priorityClass));
    if (theirs == nullptr || !theirs->preemptible || theirs->value >= cls.value) continue;
    if (mayTake && !mayTake(s)) continue;  // the admission profile's rule (share-preemption: no inverted shares)
    candidates.push_back(&s);
  }
  if (candidates.empty()) return std::nullopt;
  std::sort(candidates.begin(), candidates.end(), [](const System* a, const System* b) {
    if (gpusOf(*a) != gpusOf(*b)) return gpusOf(*a) < gpusOf(*b);
    return a->createdAt != b->createdAt ? a->createdAt > b->createdAt : a->id < b->id;  // the youngest loses least
  });
  auto placedWithout = [&](const std::vector<const System*>& victims) {
    const Pool pool = poolWithout(victims);
    return place(*placement_, pool, wanted);
  };
  std::vector<const System*> victims;
  bool fits = false;
  // Within each tenant's disruption budget: a candidate that would take its tenant past it is passed over.
  std::map<std::string, int, std::less<>> budget;
  for (const System* c : candidates) {
    if (budget.contains(c->tenant)) continue;
    const auto quota = options_.quotas.find(c->tenant);
    budget.emplace(c->tenant, disruptionBudget_.left(c->tenant, quota == options_.quotas.end() ? std::nullopt : quota->second.maxPreemptedGpusPerDay,
                                                     clock_.now()));
  }
  for (const System* c : candidates) {
    if (budget[c->tenant] < gpusOf(*c)) continue;
    budget[c->tenant] -= gpusOf(*c);
    victims.push_back(c);
    if (placedWithout(victims).placement) {
      fits = true;
      break;
    }
  }
  if (!fits) return std::nullopt;
  // Drop what the placement does not need, the largest first.
  for (std::size_t i = victims.size(); i-- > 0;) {
    std::vector<const System*> fewer = victims;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(i));
    if (!fewer.empty() && placedWithout(fewer).placement) victims = std::move(fewer);
  }
  auto decision = placedWithout(victims);
  if (!decision.placement) return std::nullopt;
  return VictimChoice{std::move(victims), std::move(*decision.placement)};
}

bool Engine::planPreemption(const Operation& head, const admission::Handle::VictimFilter& mayTake) {
  const PriorityClass* cls = priorityClass(head.queued->priorityClass);
  if (cls == nullptr || !cls->preempting) return false;
  const Timestamp now = clock_.now();
  if (!preemptions_.mayPlanFor(head.id, now)) return false;
  auto choice = chooseVictims(wantedOf(head), *cls, mayTake);
  if (!choice) return false;
  const std::vector<const System*>& victims = choice->victims;

  Preemption p;
  p.head = head.id;
  p.decomposeAt = now + std::chrono::duration_cast<Duration>(options_.preemptionGrace).count();
  p.placement = std::move(choice->placement);
  const System* headSystem = state_->system(head.systemId);
  const std::string headName = headSystem ? headSystem->name : head.systemId;
  Mutation m;
  std::vector<std::string> names;
  for (const System* v : victims) {
    p.victims.push_back(v->id);
    names.push_back(v->name);
    // The victim's tenant hears which request takes its GPUs only when that request is its own (issue 58, N4).
    const std::string forWhom = v->tenant == head.tenant ? fmt::format("{} ({}, {} class)", headName, head.id, cls->name)
                                                         : fmt::format("a request of the {} class", cls->name);
    const PriorityClass* theirs = priorityClass(v->priorityClass.empty() ? kDefaultPriorityClass : std::string_view(v->priorityClass));
    m.events.push_back(makeEvent("system.preempting", v->id,
                                 fmt::format("{} ({}, {} class) is preempted at {} to make room for {}; save its work now{}", v->name, v->id,
                                             v->priorityClass.empty() ? kDefaultPriorityClass : std::string_view(v->priorityClass),
                                             formatTimestamp(p.decomposeAt), forWhom,
                                             theirs != nullptr && theirs->requeue ? " (it is queued again once decomposed)" : "")));
  }
  if (auto r = persist(m); !r) return false;
  spdlog::info("preemption: {} ({} class) takes {} at {}", head.id, cls->name, fmt::join(names, ", "), formatTimestamp(p.decomposeAt));
  preemptions_.begin(std::move(p));
  return true;
}

void Engine::startPreemption(Mutation& m, std::vector<Operation>& started) {
  const auto due = preemptions_.takeDue(clock_.now());
  if (due.empty()) return;
  const OperationId headId = preemptions_.current()->head;  // the plan stays while its victims go
  for (const auto& id : due) {
    const System* s = state_->system(id);
    if (s == nullptr || !s->activeOperation.empty()) continue;  // gone already, or its owner is changing it
    const std::string cls = s->priorityClass.empty() ? std::string(kDefaultPriorityClass) : s->priorityClass;
    const std::string tenant = s->tenant;
    const int gpus = gpusOf(*s);
    // Its class requeues: the decompose carries what it is queued again as. A system that no one request can ask for
    // again (requeueRequestOf says why) is only decomposed.
    std::optional<QueuedRequest> requeue;
    std::string notRequeued;
    if (const PriorityClass* theirs = priorityClass(cls); theirs != nullptr && theirs->requeue) {
      if (auto asked = requeueRequestOf(*s, state_->index(), *theirs)) requeue = std::move(*asked);
      else notRequeued = "; " + asked.error().message;
    }
    auto op = audited(preemptionCaller(), "decompose", id, {}, {}, [&](const Acceptance& a) { return acceptDecompose(a, id, requeue); });
    if (!op) {
      spdlog::warn("preemption of {} refused: {}", id, op.error().message);
      continue;
    }
    if (options_.metrics) options_.metrics->preemptions.add({cls});
    disruptionBudget_.record(tenant, gpus, clock_.now());
    const Operation* head = queue_.find(headId);
    const std::string forWhom = head != nullptr && head->tenant == tenant ? headId : std::string("a request of a higher class");
    m.events.push_back(makeEvent("system.preempted", id,
                                 fmt::format("{}: preempted for {}; {} decomposes it{}", id, forWhom, op->id,
                                             requeue ? ", then queues it again" : notRequeued)));
    started.push_back(*op);
  }
}

void Engine::preemptionFailed(const Operation& op, Mutation& m) {
  const auto failedHead = preemptions_.failed(clock_.now(), std::chrono::duration_cast<Duration>(options_.leaseRetry));
  if (!failedHead) return;
  const OperationId& head = *failedHead;
  // The event is the victim system's (its tenant's): the waiting request is named only to its own tenant.
  const Operation* waiting = queue_.find(head);
  const bool sameTenant = waiting != nullptr && waiting->tenant == op.tenant;
  m.events.push_back(makeEvent("preemption.failed", op.systemId,
                               sameTenant ? fmt::format("{} could not be preempted for {} ({}); it stays as it was, and {} keeps waiting",
                                                        op.systemId, head, op.error, head)
                                          : fmt::format("{} could not be preempted ({}); it stays as it was", op.systemId, op.error)));
}

void Engine::requeuePreempted(const Operation& decompose, Mutation& m) {
  QueuedRequest asked = *decompose.queued;
  const QueuedRequest::RequeueAs as = *asked.requeueAs;
  asked.requeueAs.reset();
  const Timestamp now = clock_.now();
  asked.enqueuedAt = now;
  asked.deadline = 0;
  // The old system's events: its tenant's (it is gone from memory, so tenantOf() cannot tell).
  auto announce = [&](std::string type, std::string message) {
    m.events.push_back(makeEvent(std::move(type), decompose.systemId, std::move(message), std::string(kPreemptionActor)));
    m.events.back().tenant = decompose.tenant;
    m.events.back().systemId = decompose.systemId;
  };
  const std::string why = fmt::format("preempted ({} was {})", as.name, decompose.systemId);
  Result<void> room = queueHasRoom(decompose.tenant, why);
  if (room && state_->findSystem(as.name) != nullptr) room = fail(Code::kAlreadyExists, fmt::format("the name '{}' is taken", as.name));
  if (!room) {
    announce("system.requeue-failed", fmt::format("{} ({}) was preempted and is not queued again: {}", as.name, decompose.systemId, room.error().message));
    spdlog::warn("{} ({}) was preempted and is not queued again: {}", as.name, decompose.systemId, room.error().message);
    return;
  }
  const Acceptance a{AuditRecord{0, now, preemptionCaller(), "compose", as.name, decompose.tenant, "accepted", {}, {}, {}, 0}, {}};
  const std::string cls = asked.priorityClass;
  const std::string shape = describeShape(asked);
  QueuedCompose queued = queuedCompose(a, as.name, decompose.tenant, as.labels, std::move(asked),
                                       fmt::format("queued again ({} class) after preemption ({} was {})", cls, as.name, decompose.systemId), m);
  announce("system.requeued", fmt::format("{} ({}) was preempted and waits in the queue again as {} ({}, {} class, {})", as.name,
                                          decompose.systemId, queued.system.id, queued.op.id, cls, shape));
  m.events.push_back(operationEvent("queue.entered", queued.op,
                                    fmt::format("{} ({}) waits in the queue again, {} class: {}", as.name, shape, cls, why),
                                    std::string(kPreemptionActor)));
  m.events.back().tenant = decompose.tenant;
  enqueue(queued);
  spdlog::info("{} ({}) preempted: queued again as {} ({}, {} class)", as.name, decompose.systemId, queued.system.id, queued.op.id, cls);
}

}  // namespace switchyard
