// The published picture of the pool (ADR 0016; issue 59: one of the engine's parts): the latest PoolView, swapped in
// at each commit point that changed something and read on any thread (a reader copies the pointer and keeps that view
// valid for as long as it holds it), and which PoolState it was built from: a new one (a load, a standby's refresh)
// is built whole, the same one from its changes (engine_view.cpp).
#pragma once

#include <memory>
#include <mutex>
#include <utility>

#include "composer/engine/pool_view.h"

namespace switchyard {

class PoolState;

class PublishedView {
 public:
  // Any thread. Null before the first publish.
  [[nodiscard]] std::shared_ptr<const PoolView> current() const {
    std::lock_guard lock(mutex_);
    return view_;
  }
  // Control thread: whether the view was built from `state` (else the next one is built whole).
  [[nodiscard]] bool builtFrom(const PoolState* state) const { return builtFrom_ == state; }
  // Control thread: `next`, built from `state`, is what readers get from now on.
  void publish(std::shared_ptr<const PoolView> next, const PoolState* state) {
    builtFrom_ = state;
    std::shared_ptr<const PoolView> old;  // freed outside the lock (a reader may still hold it; then the reader frees it)
    std::lock_guard lock(mutex_);
    old = std::exchange(view_, std::move(next));
  }

 private:
  const PoolState* builtFrom_ = nullptr;
  mutable std::mutex mutex_;  // guards view_ (a pointer swap)
  std::shared_ptr<const PoolView> view_;
};

}  // namespace switchyard
