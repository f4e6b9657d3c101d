// Defragmentation (issue 59 item 4, ADR 0033): the queue's head does not fit although the pool holds enough
// free GPUs for it, in pieces (too few under any one switch its host can reach, for a peer-to-peer request, or
// under switches no free host reaches). The `defragmentation` post-filter asks the engine for the fewest moves
// that make room: a system that allows it (label movable=true, its owner's consent) gives up GPUs its host side
// reports idle (nothing running on them, at most the busy threshold's utilization: the agent's activity) on one
// switch and gets as many free GPUs elsewhere, through the safe paths every attach and detach takes (host-admit
// of the new ones first; host-release of the old ones refuses a GPU a process opened since). What the moves free
// is promised to the head (backfill keeps off it); the moves' state is the Defragmentation part's.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_map>

#include "composer/engine/engine.h"
#include "composer/engine/move_planner.h"

namespace switchyard {

namespace {

Caller defragCaller() { return {std::string(kDefragActor), Role::kAdmin, {}}; }

// A move whose detach did not happen: the system holds both sets.
std::string keptBoth(const SystemMove& move, const std::string& why) {
  return fmt::format("{}: took {} but could not give up {} ({}); it keeps both until they are detached", move.system, fmt::join(move.to, ", "),
                     fmt::join(move.from, ", "), why);
}

// What the head is promised while its moves run, and why it waits.
admission::Promise promiseOf(const DefragPlan& plan, const std::string& why, Timestamp now) {
  return {{plan.head, now, plan.placement},
          fmt::format("{}; moving {} idle GPU{} of {} system{} to make room since {}", why, plan.gpus(), plan.gpus() == 1 ? "" : "s",
                      plan.moves.size(), plan.moves.size() == 1 ? "" : "s", formatTimestamp(plan.startedAt))};
}

// The devices an operation's done steps of `kind` (bind, unbind) acted on, undo steps left out.
std::vector<DeviceId> devicesOf(const Operation& op, std::string_view kind) {
  std::vector<DeviceId> out;
  for (const auto& step : op.steps)
    if (step.kind == kind && step.state == StepState::kDone && !step.compensation)
      for (const auto& b : step.bindings) out.push_back(b.deviceId);
  return out;
}

// How long a head whose moves failed waits before another plan.
Duration retryOf(const EngineOptions& options) { return std::chrono::duration_cast<Duration>(options.leaseRetry); }

}  // namespace

std::optional<MoveChoice> Engine::chooseMoves(const PlacementRequest& wanted) const {
  const auto activity = idle_.current(*state_, policyOf());
  if (!activity) return std::nullopt;
  return planMoves(*placement_, *state_, *activity, wanted);
}

std::optional<admission::Promise> Engine::defragmentFor(const Operation& head, const std::string& why) {
  const Timestamp now = clock_.now();
  const auto headName = [&](const std::string& tenant) {
    const System* s = state_->system(head.systemId);
    return tenant == head.tenant && s != nullptr ? fmt::format("{} ({})", s->name, head.id) : std::string("a queued request");
  };
  if (const DefragPlan* plan = defrag_.current()) {
    // Its moves are running: what they free is the head's. Another head's (or a failed plan): nothing now.
    if (plan->head != head.id || defrag_.failed()) return std::nullopt;
    return promiseOf(*plan, why, now);
  }
  if (!defrag_.mayPlanFor(head.id, now)) return std::nullopt;
  auto choice = chooseMoves(wantedOf(head));
  if (!choice) return std::nullopt;

  DefragPlan plan{head.id, std::move(choice->moves), std::move(choice->placement), now};
  Mutation m;
  for (SystemMove& move : plan.moves) {
    const System* s = state_->system(move.system);
    if (s == nullptr) {
      move.stage = SystemMove::Stage::kFailed;
      continue;
    }
    const std::string name = s->name, tenant = s->tenant;
    AttachRequest attach{move.system, {}, {}};
    attach.placement.devices = move.to;
    attach.placement.tenant = tenant;
    auto op = audited(defragCaller(), "attach", move.system, {}, {}, [&](const Acceptance& a) { return acceptAttach(a, attach, move.from); });
    if (!op) {
      spdlog::warn("defragmentation: {} could not take {}: {}", move.system, fmt::join(move.to, ", "), op.error().message);
      if (options_.metrics) options_.metrics->movedGpus.add({"failed"}, static_cast<double>(move.from.size()));
      move.stage = SystemMove::Stage::kFailed;
      continue;
    }
    move.operation = op->id;
    m.events.push_back(makeEvent("system.moving", move.system,
                                 fmt::format("{} ({}): its idle GPU{} {} move{} to {} to make room for {} ({} attaches them, then the "
                                             "idle one{} detached)",
                                             name, move.system, move.from.size() == 1 ? "" : "s", fmt::join(move.from, ", "),
                                             move.from.size() == 1 ? "s" : "", fmt::join(move.to, ", "), headName(tenant), op->id,
                                             move.from.size() == 1 ? " is" : "s are"),
                                 std::string(kDefragActor)));
  }
  if (!m.events.empty()) (void)persist(m);
  std::vector<std::string> systems;
  for (const auto& move : plan.moves) systems.push_back(fmt::format("{} ({} -> {})", move.system, fmt::join(move.from, ","), fmt::join(move.to, ",")));
  spdlog::info("defragmentation: moving {} idle GPU(s) to make room for {}: {}", plan.gpus(), head.id, fmt::join(systems, "; "));
  const bool started = std::any_of(plan.moves.begin(), plan.moves.end(), [](const SystemMove& mv) { return !mv.operation.empty(); });
  defrag_.begin(std::move(plan), now, retryOf(options_));
  if (!started || defrag_.failed()) return std::nullopt;
  return promiseOf(*defrag_.current(), why, now);
}

void Engine::moveEnded(const Operation& op, bool succeeded, Mutation& m) {
  auto move = defrag_.ended(op.id, succeeded, clock_.now(), retryOf(options_));
  if (!move && op.kind == OperationKind::kDetach && succeeded) {
    // A move's detach that was running when the last yardd stopped, resumed from its step log: no plan knows it,
    // but it ends the move all the same.
    move = SystemMove{op.systemId, devicesOf(op, step::kUnbind), {}, SystemMove::Stage::kMoved, {}};
  }
  if (!move) return;
  const std::string actor(kDefragActor);
  if (options_.metrics && (move->stage == SystemMove::Stage::kMoved || move->stage == SystemMove::Stage::kFailed))
    options_.metrics->movedGpus.add({move->stage == SystemMove::Stage::kMoved ? "moved" : "failed"}, static_cast<double>(move->from.size()));
  if (move->stage == SystemMove::Stage::kMoved)
    m.events.push_back(makeEvent("system.moved", move->system,
                                 move->to.empty() ? fmt::format("{}: moved off {}", move->system, fmt::join(move->from, ", "))
                                                  : fmt::format("{}: moved from {} to {}", move->system, fmt::join(move->from, ", "),
                                                                fmt::join(move->to, ", ")),
                                 actor));
  else if (move->stage == SystemMove::Stage::kFailed)
    m.events.push_back(makeEvent("move.failed", move->system,
                                 op.kind == OperationKind::kAttach
                                     ? fmt::format("{}: could not take {} ({}); it keeps its GPUs where they are", move->system,
                                                   fmt::join(move->to, ", "), op.error)
                                     : keptBoth(*move, op.error),
                                 actor));
}

void Engine::resumeMoves() {
  (void)writeStaged();  // the store answers below for each system's last operation
  for (const auto& [id, s] : state_->systems()) {
    if (!allowsMoves(s) || !s.activeOperation.empty() || s.hostId.empty()) continue;
    // Its last operation says whether a move stopped half-way: a succeeded attach of defragmentation's, with what it
    // replaces still in the system. Anything after it (the detach, or the owner's own change) ended the move.
    OperationQuery last;
    last.systemId = id;
    last.limit = 1;
    const auto ops = store_.queryOperations(last);
    if (!ops) {
      spdlog::warn("defragmentation: cannot read {}'s last operation to finish a move it may be in: {}", id, ops.error().message);
      continue;
    }
    if (ops->empty()) continue;
    const Operation& attach = ops->front();
    if (attach.kind != OperationKind::kAttach || attach.state != OperationState::kSucceeded || attach.requestedBy.identity != kDefragActor ||
        attach.replaces.empty())
      continue;
    const bool holdsAll = std::all_of(attach.replaces.begin(), attach.replaces.end(), [&](const DeviceId& d) {
      return std::any_of(s.bindings.begin(), s.bindings.end(), [&](const Binding& b) { return b.deviceId == d; });
    });
    if (!holdsAll) continue;
    SystemMove move{id, attach.replaces, devicesOf(attach, step::kBind), SystemMove::Stage::kDetachDue, {}};
    spdlog::info("defragmentation: {} took {} ({}) before yardd stopped; it gives up {} now", id, fmt::join(move.to, ", "), attach.id,
                 fmt::join(move.from, ", "));
    defrag_.resume(std::move(move));
  }
}

void Engine::startDueDetaches() {
  if (!lifecycle_.accepting() || standby_.on()) return;
  const auto due = defrag_.detachesDue();
  if (due.empty()) return;
  Mutation m;
  for (const SystemMove& move : due) {
    DetachRequest detach{move.system, move.from, {}, {}, {}};
    auto op = audited(defragCaller(), "detach", move.system, {}, {}, [&](const Acceptance& a) { return acceptDetach(a, detach); });
    if (!op) {
      spdlog::warn("defragmentation: {} could not give up {}: {}", move.system, fmt::join(move.from, ", "), op.error().message);
      if (options_.metrics) options_.metrics->movedGpus.add({"failed"}, static_cast<double>(move.from.size()));
      m.events.push_back(makeEvent("move.failed", move.system, keptBoth(move, op.error().message), std::string(kDefragActor)));
    }
    defrag_.detaching(move.system, op ? op->id : OperationId{}, clock_.now(), retryOf(options_));
  }
  if (!m.events.empty()) (void)persist(m);
}

}  // namespace switchyard
