// Wraps a real driver and can hold one kind of call at a gate, so a test can freeze an operation
// between two steps (to stop the engine there, or to race another request against it).
#pragma once

#include <condition_variable>
#include <mutex>

#include "fabric/fabric_driver.h"

namespace switchyard::testing {

class GatedDriver final : public FabricDriver {
 public:
  explicit GatedDriver(FabricDriver& inner) : inner_(inner) {}

  // The (n+1)-th bind call from now (a call binds a set) waits at the gate until open() is called.
  void closeBeforeBind(int n) { close(Call::kBind, n); }
  // The same for unbind calls.
  void closeBeforeUnbind(int n) { close(Call::kUnbind, n); }
  void waitUntilHeld() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return held_; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    closed_ = false;
    changed_.notify_all();
  }

  std::string_view name() const override { return inner_.name(); }
  Result<Topology> discover() override { return inner_.discover(); }
  Result<void> bindAll(std::span<const Binding> set, const CallOptions& options = {}) override {
    holdIfGated(Call::kBind);
    return inner_.bindAll(set, options);
  }
  Result<void> unbindAll(std::span<const Binding> set, const CallOptions& options = {}) override {
    holdIfGated(Call::kUnbind);
    return inner_.unbindAll(set, options);
  }
  Result<std::vector<Binding>> readBindings(const CallOptions& options = {}) override { return inner_.readBindings(options); }
  Result<std::vector<Binding>> readBindingsOf(std::span<const PortId> ports, const CallOptions& options = {}) override {
    return inner_.readBindingsOf(ports, options);
  }
  Result<std::vector<FabricEvent>> pollEvents() override { return inner_.pollEvents(); }

 private:
  enum class Call { kBind, kUnbind };
  void close(Call call, int n) {
    std::lock_guard lock(mutex_);
    gated_ = call;
    callsBeforeGate_ = n;
    closed_ = true;
  }
  void holdIfGated(Call call) {
    std::unique_lock lock(mutex_);
    if (closed_ && gated_ == call && callsBeforeGate_-- <= 0) {
      held_ = true;
      changed_.notify_all();
      changed_.wait(lock, [this] { return !closed_; });
      held_ = false;
    }
  }

  FabricDriver& inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  Call gated_ = Call::kBind;
  int callsBeforeGate_ = 0;
  bool closed_ = false;
  bool held_ = false;
};

}  // namespace switchyard::testing
