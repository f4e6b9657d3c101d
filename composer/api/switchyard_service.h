// switchyard.v1.Switchyard over gRPC's callback API: each handler validates and translates the request,
// hands the call to the Engine without blocking (Engine::async), and finishes the RPC from the engine's
// completion. No gRPC thread waits on the engine, and Watch is pushed to as events happen. Replies are
// translated to proto on the service's own small pool, not on the engine's one control thread.
#pragma once

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <thread>

#include "composer/api/authenticator.h"
#include "composer/engine/engine.h"
#include "switchyard/v1/switchyard.grpc.pb.h"

namespace switchyard {

// The trailing metadata key in which a standby's refusal of a change names the leader's address.
inline constexpr const char* kLeaderMetadata = "switchyard-leader";

class SwitchyardService final : public v1::Switchyard::CallbackService {
 public:
  // Every call is authenticated by `authenticator`; what it may see and change follows its role and tenant.
  SwitchyardService(Engine& engine, const Authenticator& authenticator) : engine_(engine), authenticator_(authenticator) {}
  ~SwitchyardService() override { replies_.join(); }
  SwitchyardService(const SwitchyardService&) = delete;
  SwitchyardService& operator=(const SwitchyardService&) = delete;

  // Refuses new Watch streams (at shutdown; Engine::stop ends the open ones).
  void shutdown() { shuttingDown_ = true; }

  using Unary = grpc::ServerUnaryReactor;
  using Context = grpc::CallbackServerContext;
  Unary* Compose(Context*, const v1::ComposeRequest*, v1::Operation*) override;
  Unary* Decompose(Context*, const v1::DecomposeRequest*, v1::Operation*) override;
  Unary* Attach(Context*, const v1::AttachRequest*, v1::Operation*) override;
  Unary* Detach(Context*, const v1::DetachRequest*, v1::Operation*) override;
  Unary* Plan(Context*, const v1::PlanRequest*, v1::PlanResponse*) override;
  Unary* GetCapacity(Context*, const v1::GetCapacityRequest*, v1::Capacity*) override;
  Unary* GetSystem(Context*, const v1::GetSystemRequest*, v1::System*) override;
  Unary* ListSystems(Context*, const v1::ListSystemsRequest*, v1::ListSystemsResponse*) override;
  Unary* ListDevices(Context*, const v1::ListDevicesRequest*, v1::ListDevicesResponse*) override;
  Unary* ReleaseDevice(Context*, const v1::ReleaseDeviceRequest*, v1::Device*) override;
  Unary* ListHosts(Context*, const v1::ListHostsRequest*, v1::ListHostsResponse*) override;
  Unary* GetTopology(Context*, const v1::GetTopologyRequest*, v1::Topology*) override;
  Unary* GetOperation(Context*, const v1::GetOperationRequest*, v1::Operation*) override;
  Unary* ListOperations(Context*, const v1::ListOperationsRequest*, v1::ListOperationsResponse*) override;
  Unary* WaitOperation(Context*, const v1::WaitOperationRequest*, v1::Operation*) override;
  grpc::ServerWriteReactor<v1::Event>* Watch(Context*, const v1::WatchRequest*) override;
  Unary* ListAudit(Context*, const v1::ListAuditRequest*, v1::ListAuditResponse*) override;
  Unary* ListQueue(Context*, const v1::ListQueueRequest*, v1::ListQueueResponse*) override;
  Unary* CancelQueued(Context*, const v1::CancelQueuedRequest*, v1::Operation*) override;
  Unary* RenewLease(Context*, const v1::RenewLeaseRequest*, v1::System*) override;
  Unary* GetUsage(Context*, const v1::GetUsageRequest*, v1::UsageResponse*) override;
  Unary* ListIdle(Context*, const v1::ListIdleRequest*, v1::ListIdleResponse*) override;
  Unary* WhoAmI(Context*, const v1::WhoAmIRequest*, v1::WhoAmIResponse*) override;
  Unary* Login(Context*, const v1::LoginRequest*, v1::LoginResponse*) override;

 private:
  // Runs `call` on the engine; finishes with its error, or with OK after `fill` wrote the response.
  template <typename T, typename Fill>
  Unary* answer(Context* ctx, std::function<Result<T>()> call, Fill fill);
  // The same for reads the engine answers from its published view: run here, on the gRPC thread, without
  // a hop to the control thread (they never wait for a compose, and a compose never waits for them).
  template <typename T, typename Fill>
  Unary* answerHere(Context* ctx, const std::function<Result<T>()>& call, Fill fill);
  // A completion that moves the result to the reply pool and there finishes `reactor` with `finish(result)`.
  template <typename T, typename Finish>
  Completion<T> onReplyPool(Finish finish) {
    return [this, finish = std::move(finish)](Result<T> result) mutable {
      boost::asio::post(replies_, [finish = std::move(finish), result = std::move(result)]() mutable { finish(std::move(result)); });
    };
  }

  Engine& engine_;
  const Authenticator& authenticator_;
  std::atomic<bool> shuttingDown_{false};
  boost::asio::thread_pool replies_{std::max(2u, std::thread::hardware_concurrency())};
};

}  // namespace switchyard
