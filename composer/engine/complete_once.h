// A completion called exactly once: with the result, or with kAborted when dropped before that (the engine stopped
// before it could answer). The engine's calls and the operations' waits (operation_waiters.h) answer through it.
#pragma once

#include <utility>

#include "composer/engine/engine_requests.h"

namespace switchyard {

template <typename T>
class CompleteOnce {
 public:
  explicit CompleteOnce(Completion<T> done) : done_(std::move(done)) {}
  CompleteOnce(const CompleteOnce&) = delete;
  CompleteOnce& operator=(const CompleteOnce&) = delete;
  ~CompleteOnce() {
    if (done_) done_(fail(Code::kAborted, "yardd is shutting down"));
  }
  void complete(Result<T> result) {
    auto done = std::move(done_);
    done_ = nullptr;
    if (done) done(std::move(result));
  }
  [[nodiscard]] bool answered() const { return !done_; }

 private:
  Completion<T> done_;
};

}  // namespace switchyard
