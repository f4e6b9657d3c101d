// SwitchyardService::WaitOperation: a call that may wait for as long as an operation runs (a queued one, for
// ever), so it is bounded twice: a wait its client cancels releases the engine's waiter at once, and one
// identity holds at most kMaxWaitsPerCaller open (issue 58, N2).
#include <fmt/format.h>

#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "composer/api/service_support.h"
#include "composer/api/switchyard_service.h"
#include "composer/model/access.h"

namespace switchyard {

namespace {

// One WaitOperation call. It ends once: answered by the engine, or cancelled by its client (the client went
// away or its deadline passed), whichever comes first. A cancelled call releases the engine's waiter at once
// rather than holding its memory until the operation ends. What both sides touch is in Shared, which outlives
// the reactor (gRPC deletes it in OnDone, possibly while the engine's answer is on its way).
class WaitReactor final : public grpc::ServerUnaryReactor {
 public:
  struct Shared {
    std::mutex mutex;
    bool finished = false;
    bool cancelled = false;
    std::function<void()> cancelWait;  // the engine's, once waitOperation returned it
  };
  explicit WaitReactor(std::function<void()> onDone) : onDone_(std::move(onDone)) {}
  [[nodiscard]] std::shared_ptr<Shared> shared() const { return shared_; }

  // Finishes with what `status` makes (it may write the response) unless the call finished already.
  template <typename MakeStatus>
  static void finishOnce(WaitReactor* reactor, std::shared_ptr<Shared> shared, MakeStatus&& status) {
    grpc::Status answer;
    {
      std::lock_guard lock(shared->mutex);
      if (shared->finished) return;  // cancelled: the call (and `reactor`) may be gone
      shared->finished = true;
      answer = status();
    }
    reactor->Finish(answer);
  }
  // The engine's cancel for this wait; run at once when the client cancelled first.
  static void setCancel(std::shared_ptr<Shared> shared, std::function<void()> cancel) {
    {
      std::lock_guard lock(shared->mutex);
      if (!shared->cancelled) {
        shared->cancelWait = std::move(cancel);
        return;
      }
    }
    cancel();
  }
  void OnCancel() override {
    auto shared = shared_;
    std::function<void()> cancel;
    bool finish = false;
    {
      std::lock_guard lock(shared->mutex);
      shared->cancelled = true;
      cancel = std::move(shared->cancelWait);
      finish = !std::exchange(shared->finished, true);
    }
    if (cancel) cancel();
    if (finish) Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the wait was cancelled by its client"));
  }
  void OnDone() override {
    if (onDone_) onDone_();
    delete this;
  }

 private:
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::function<void()> onDone_;
};

}  // namespace

bool SwitchyardService::admitWait(const std::string& identity) {
  std::lock_guard lock(waitsMutex_);
  auto& open = waitsByCaller_[identity];
  if (open >= kMaxWaitsPerCaller) return false;
  ++open;
  return true;
}

void SwitchyardService::endWait(const std::string& identity) {
  std::lock_guard lock(waitsMutex_);
  if (auto it = waitsByCaller_.find(identity); it != waitsByCaller_.end() && --it->second == 0) waitsByCaller_.erase(it);
}

grpc::ServerUnaryReactor* SwitchyardService::WaitOperation(Context* ctx, const v1::WaitOperationRequest* req, v1::Operation* out) {
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) return finished(ctx, toGrpcStatus(caller.error()));
  if (req->id().empty()) return finished(ctx, invalid("id: required"));
  if (req->timeout_ms() < 0) return finished(ctx, invalid("timeout_ms: must be >= 0"));
  auto timeout = std::chrono::milliseconds(req->timeout_ms() == 0 ? 30'000 : req->timeout_ms());
  // Never wait past the caller's own deadline.
  const auto untilDeadline = std::chrono::duration_cast<std::chrono::milliseconds>(ctx->deadline() - std::chrono::system_clock::now());
  if (untilDeadline.count() > 0 && untilDeadline < timeout) timeout = untilDeadline;
  if (!admitWait(caller->identity))
    return finished(ctx, grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                      fmt::format("'{}' already has {} WaitOperation calls open, the most one caller may; wait for one to end "
                                                  "or poll with GetOperation",
                                                  caller->identity, kMaxWaitsPerCaller)));
  auto* reactor = new WaitReactor([this, identity = caller->identity] { endWait(identity); });
  const auto shared = reactor->shared();  // the reactor may be gone once the engine answers
  // A cancel that comes before waitOperation returns is run as soon as it does (WaitReactor::setCancel).
  WaitReactor::setCancel(
      shared, engine_.waitOperation(req->id(), timeout, [this, reactor, shared, out, c = *caller](Result<Operation> op) {
        WaitReactor::finishOnce(reactor, shared, [&] {
          if (op && !maySee(c, op->tenant)) op = fail(Code::kNotFound, fmt::format("no operation '{}' (see `yardctl ops`)", op->id));
          if (!op) return toGrpcStatus(op.error());
          toProto(*op, engine_.stepKinds(), *out);
          return grpc::Status::OK;
        });
      }));
  return reactor;
}

}  // namespace switchyard
