// Defragmentation's state (issue 59 item 4, ADR 0033): the moves in progress that make room for the queue's head,
// and when a head whose moves failed may have another plan. One of the engine's parts: it owns this state and says
// what is due; planning the moves, their operations and events stay with the engine (engine_defrag.cpp). One plan
// at a time; control thread only.
//
// A move takes a system's idle GPUs off a switch where the head needs room and gives the system as many free GPUs
// elsewhere: an attach of the new ones first, then, once it succeeded, a detach of the old ones. The system keeps
// its size at every point (one GPU more for the moment between the two), so a move that fails half-way leaves the
// system whole.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "composer/model/clock.h"
#include "composer/model/composition.h"
#include "composer/packing/packing.h"

namespace switchyard {

// The label by which a system's owner lets yardd move its idle GPUs ("true"); anything else, or none: never moved.
inline constexpr std::string_view kMovableLabel = "movable";
[[nodiscard]] bool allowsMoves(const System& s);

struct SystemMove {
  enum class Stage { kAttaching, kDetachDue, kDetaching, kMoved, kFailed };
  SystemId system;
  std::vector<DeviceId> from;  // its idle GPUs that leave
  std::vector<DeviceId> to;    // the free GPUs it gets instead
  Stage stage = Stage::kAttaching;
  OperationId operation;  // the attach or detach running now
};

struct DefragPlan {
  OperationId head;  // the queued request it makes room for
  std::vector<SystemMove> moves;
  Placement placement;  // where the head goes once the moves are done
  Timestamp startedAt = 0;
  [[nodiscard]] std::size_t gpus() const;  // GPUs moved
};

class Defragmentation {
 public:
  // The plan in progress, if any.
  [[nodiscard]] const DefragPlan* current() const { return plan_ ? &*plan_ : nullptr; }
  // Whether `head` may be planned for at `now`: not before the retry time a failed plan for it set.
  [[nodiscard]] bool mayPlanFor(const OperationId& head, Timestamp now) const;
  // Starts `plan` (none may be in progress), its moves' attaches running; a move that could not start (kFailed)
  // fails the plan at once (its head waits `retryAfter`), the others finish.
  void begin(DefragPlan plan, Timestamp now, Duration retryAfter);
  // An operation ended. A move's attach that succeeded makes its detach due; one that failed, or a detach that
  // failed, fails the plan: its head waits `retryAfter` before another (the other moves finish as they are).
  // The plan ends when every move is over. Returns the move the operation belonged to (none: not a move's).
  std::optional<SystemMove> ended(const OperationId& operation, bool succeeded, Timestamp now, Duration retryAfter);
  // The moves whose detach is due.
  [[nodiscard]] std::vector<SystemMove> detachesDue() const;
  // A move's detach started as `operation` (or could not start: `operation` empty fails the move).
  void detaching(const SystemId& system, const OperationId& operation, Timestamp now, Duration retryAfter);
  // Whether the plan failed (a move did): its head is promised nothing more.
  [[nodiscard]] bool failed() const { return plan_ && failed_; }
  // Forgets retry times of requests no longer queued.
  void pruneRetries(const std::function<bool(const OperationId&)>& queued);
  // A move found half-way at start (its attach ended, its detach never started; the plan was lost with the last
  // yardd): its detach is due, outside any plan. It ends on its own and fails no head.
  void resume(SystemMove move);

 private:
  void fail(Timestamp now, Duration retryAfter);
  void endIfOver();
  std::optional<DefragPlan> plan_;
  std::vector<SystemMove> resumed_;  // moves outside any plan (resume)
  bool failed_ = false;
  std::map<OperationId, Timestamp> retryAt_;
};

}  // namespace switchyard
