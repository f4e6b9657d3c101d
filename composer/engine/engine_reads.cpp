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

Result<std::vector<AuditRecord>> Engine::listAudit(const AuditQuery& query) { return store_.listAudit(query); }

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

Result<UsageReport> Engine::usage(const Caller& caller, Timestamp since, Timestamp until) {
  const Timestamp now = clock_.now();
  if (until == 0) until = now;
  if (since < 0 || until <= since) return fail(Code::kInvalidArgument, "usage: --since must be before --until");
  SY_ASSIGN(auto view, reads_.readableView());
  // What is in memory only (open stretches, ended ones not yet written), read on this thread: it waits for a
  // sampling round's recording, if one is under way, without holding the control thread.
  std::vector<IdleStretch> unwritten = idle_.unwritten(now);
  SY_ASSIGN(auto idle, store_.listIdleStretches(since, until));
  {
    // The memory's copy of a stretch replaces what is stored of the same (it is as long or longer).
    std::map<std::pair<DeviceId, Timestamp>, IdleStretch> merged;
    for (auto& s : idle) merged[{s.deviceId, s.from}] = std::move(s);
    for (auto& s : unwritten) {
      auto& kept = merged[{s.deviceId, s.from}];
      if (kept.to < s.to) kept = std::move(s);
    }
    idle.clear();
    for (auto& [key, s] : merged) idle.push_back(std::move(s));
  }
  SY_ASSIGN(auto ops, store_.listOperations(kUsageHistory));
  std::reverse(ops.begin(), ops.end());  // oldest first
  UsageReport report = computeUsage(
      ops,
      [&](const DeviceId& id) {
        const DeviceView* d = view->device(id);
        return d && d->device.kind == DeviceKind::kGpu ? (d->device.model.empty() ? std::string("GPU") : d->device.model) : std::string();
      },
      since, until, now, idle,
      [&](const DeviceId& id) {
        const DeviceView* d = view->device(id);
        return d && d->device.kind == DeviceKind::kCxlMemory ? d->device.memoryGiB : 0;
      },
      [&](const DeviceId& id) {
        const DeviceView* d = view->device(id);
        return d && isEndpointKind(d->device.kind) ? std::string(kindName(d->device)) : std::string();
      });
  std::erase_if(report.rows, [&](const UsageRow& r) { return !maySee(caller, r.tenant); });
  // No start asked for: the period is all the log knows, from its oldest operation (not "from 1970").
  if (since == 0) report.since = report.historyFrom > 0 ? std::min(report.historyFrom, until) : until;
  // Each row names its system and carries its labels: a live one's from the view, one that ended (decomposed,
  // forgotten) from the store, which keeps ended systems as long as it keeps their operations (a bill names what
  // it charges for, and groups by what its systems were labelled).
  std::set<SystemId> ended;
  for (auto& r : report.rows) {
    if (const auto s = view->systems.find(r.systemId)) r.systemName = s->name, r.labels = s->labels;
    else ended.insert(r.systemId);
  }
  if (!ended.empty()) {
    SY_ASSIGN(auto identities, store_.systemIdentities(ended));
    for (auto& r : report.rows)
      if (auto it = identities.find(r.systemId); r.systemName.empty() && it != identities.end()) r.systemName = it->second.name, r.labels = it->second.labels;
  }
  return report;
}

Result<std::vector<Operation>> Engine::listOperations(std::size_t limit) { return listOperations(OperationQuery{.limit = limit}); }

// What the last commit point wrote: a running operation as its last step left it (every step is written
// before its call starts and when its result comes).
Result<std::vector<Operation>> Engine::listOperations(const OperationQuery& query) { return store_.queryOperations(query); }

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

Result<std::vector<Event>> Engine::recentEvents(std::size_t limit) {
  const std::uint64_t last = events_.storedSequence();
  return store_.listEvents(last > limit ? last - limit : 0, limit);
}

Result<std::vector<Event>> Engine::listEvents(std::uint64_t afterSequence, std::size_t limit) { return store_.listEvents(afterSequence, limit); }

}  // namespace switchyard
