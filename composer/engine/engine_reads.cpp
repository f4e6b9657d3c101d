// The engine's reads. Systems, devices, hosts and the topology answer on the caller's thread from the
// published view (pool_reads.h); the history (operations, events, the audit trail, usage) from the store on
// the caller's thread too (the store's history reads are safe on any thread). Plans and a single operation
// by id or request id still run on the control thread (they read what is in flight). None waits for a switch.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_map>

#include "composer/engine/engine.h"
#include "composer/engine/machine_templates.h"
#include "composer/engine/engine_control.h"
#include "composer/packing/gpu_shares.h"

namespace switchyard {

Result<Engine::PlanOutcome> EngineCore::plan(const PlacementRequest& request, std::string_view className) {
  if (!inTask()) return answerFromTask("plan", [&](EngineCore& core) { return core.plan(request, className); });
  const PriorityClass* cls = nullptr;
  if (!className.empty() && (cls = engine_.priorityClass(className)) == nullptr)
    return fail(Code::kInvalidArgument, fmt::format("priority class '{}' is not configured (yardd --priority-class)", className));
  PlacementRequest wanted = request;
  if (request.gpuShareMilli != 0) {
    SY_TRY(validateShareRequest(request));
    wanted = freshGpuForShare(request);  // a new system's share always takes a fresh GPU
  }
  PlanOutcome outcome{place(*engine_.placement_, engine_.state_->pool(), wanted, &engine_.state_->placementIndex()), {}, {}, {}, {}};
  if (outcome.decision.placement) return outcome;
  // Moves come first in a pass (they take nobody's work): the ones a pass would start, if the profile moves any.
  if (auto choice = engine_.admission_->moves() ? engine_.chooseMoves(wanted) : std::nullopt) {
    for (const SystemMove& m : choice->moves)
      if (const System* s = engine_.state_->system(m.system)) outcome.wouldMove.push_back({s->id, s->name, s->tenant, m.from, m.to});
    outcome.afterMoves = std::move(choice->placement);
    return outcome;
  }
  if (cls == nullptr || !cls->preempting) return outcome;
  // The victims a pass would take: the admission profile's preemption rule (none: it never preempts).
  const admission::PreemptingPostFilter* rule = engine_.admission_->preemption();
  if (rule == nullptr) return outcome;
  const admission::TenantShares shares = engine_.sharesOf(engine_.recentUse_.peek(engine_.heldGpusByTenant(), engine_.clock_.now()), request.tenant);
  const admission::Pass pass{shares, true, {}};
  const admission::Waiting waiting{shares.index(request.tenant), cls->value, engine_.clock_.now(), admission::gpusAsked(wanted)};
  if (auto choice = engine_.chooseVictims(wanted, *cls, rule->mayTake(request.tenant, waiting, pass))) {
    for (const System* v : choice->victims) {
      const std::string theirs = v->priorityClass.empty() ? std::string(kDefaultPriorityClass) : v->priorityClass;
      const PriorityClass* victimClass = engine_.priorityClass(theirs);
      outcome.wouldPreempt.push_back({v->id, v->name, v->tenant, theirs, static_cast<int>(v->bindings.size()),
                                      victimClass != nullptr && victimClass->requeue});
    }
    outcome.afterPreemption = std::move(choice->placement);
  }
  return outcome;
}

System Engine::withProgress(System s) const {
  s.progress = runner_->progressOf(s.activeOperation);
  return s;
}

Result<Operation> EngineCore::getOperation(const OperationId& id) {
  if (!inTask()) return answerFromTask("read an operation", [&](EngineCore& core) { return core.getOperation(id); });
  if (const Operation* op = engine_.runner_->find(id)) return *op;
  // Ended lately: the answer is given at the task's commit point, once the end is written (recent_ends.h).
  if (const Operation* op = engine_.recentEnds_.find(id)) return *op;
  SY_TRY(engine_.writeStaged());  // an operation that ended in a task of this batch: the store has its end
  SY_ASSIGN(auto stored, engine_.store_.getOperation(id));
  if (!stored) return fail(Code::kNotFound, fmt::format("no operation '{}' (see `yardctl ops`)", id));
  return *stored;
}

Result<std::optional<Operation>> EngineCore::operationForRequest(const Caller& caller, const std::string& requestId) {
  if (!inTask())
    return answerFromTask("find an operation by request id", [&](EngineCore& core) { return core.operationForRequest(caller, requestId); });
  if (requestId.empty()) return std::optional<Operation>{};
  std::optional<Operation> found;
  for (const auto& [id, op] : engine_.runner_->running())
    if (op.requestId == requestId) found = op;
  if (!found) {
    SY_TRY(engine_.writeStaged());  // the store answers for what memory no longer holds: it must have what memory had
    SY_ASSIGN(found, engine_.store_.findOperationByRequest(requestId));
  }
  if (found && !maySee(caller, found->tenant)) found.reset();
  return found;
}

}  // namespace switchyard
