// Who waits for which operation (issue 59: one of the engine's parts). A caller's wait (waitOperation) is answered
// exactly once: with the operation when it ends (the engine takes every wait on it at that commit point), as it
// stands when the engine halts or stops, by the engine's look when the wait's time is up, with kAborted when its
// caller cancels it, or with kAborted when it is dropped unanswered (the engine stopped before it could look). The
// part owns the waits and their timers; what each answer is, the engine decides. Control thread only.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "composer/engine/engine_requests.h"
#include "composer/model/composition.h"
#include "composer/model/error.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace switchyard {

class OperationWaiters {
 public:
  using Answer = Completion<Operation>;
  struct Wait;  // its answer, given once, and its timer

  explicit OperationWaiters(boost::asio::io_context& control) : control_(control) {}

  // A wait on no operation yet; answered kAborted when dropped unanswered.
  [[nodiscard]] std::shared_ptr<Wait> make(Answer answer) const;
  // Answers a wait that never joined (or left): the operation found finished, not found, or as it stands.
  static void answer(Wait& wait, Result<Operation> result);

  // The wait joins `id` until `timeout`. When the time is up it leaves and `onTimeout` answers it (called on the
  // control thread, unless it was answered before).
  void add(const OperationId& id, const std::shared_ptr<Wait>& wait, std::chrono::milliseconds timeout,
           std::function<void(Wait&)> onTimeout);
  // The wait leaves and is answered kAborted ("the wait for ID was cancelled"); nothing when it is answered already.
  void cancel(const OperationId& id, const std::shared_ptr<Wait>& wait);
  // Every wait on `id` leaves, its timer stopped; the returned call answers them all with the operation, or with
  // the error it is given (the engine runs it at the commit point: after the view shows the operation's end, or
  // with why the write of that end failed).
  [[nodiscard]] std::function<void(const Error*)> takeAll(const OperationId& id, const Operation& op);
  // The operations someone waits for.
  [[nodiscard]] std::vector<OperationId> waitedFor() const;
  // The waits on `id` leave unanswered here: dropped, they are answered kAborted.
  void drop(const OperationId& id) { waits_.erase(id); }
  [[nodiscard]] bool empty() const { return waits_.empty(); }

 private:
  void leave(const OperationId& id, const std::shared_ptr<Wait>& wait);
  boost::asio::io_context& control_;
  std::unordered_map<OperationId, std::vector<std::shared_ptr<Wait>>> waits_;
};

}  // namespace switchyard
