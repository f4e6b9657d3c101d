// switchyard.v1.Switchyard over gRPC's callback API: each handler validates and translates the request,
// hands the call to the Engine without blocking (Engine::async), and finishes the RPC from the engine's
// completion. No gRPC thread waits on the engine, and Watch is pushed to as events happen.
#pragma once

#include <atomic>

#include "composer/engine/engine.h"
#include "switchyard/v1/switchyard.grpc.pb.h"

namespace switchyard {

// The request metadata that names the caller (claimed, not authenticated, until the security work).
inline constexpr const char* kCallerMetadata = "switchyard-caller";
inline constexpr const char* kTenantMetadata = "switchyard-tenant";

class SwitchyardService final : public v1::Switchyard::CallbackService {
 public:
  explicit SwitchyardService(Engine& engine) : engine_(engine) {}

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
  Unary* ListHosts(Context*, const v1::ListHostsRequest*, v1::ListHostsResponse*) override;
  Unary* GetTopology(Context*, const v1::GetTopologyRequest*, v1::Topology*) override;
  Unary* GetOperation(Context*, const v1::GetOperationRequest*, v1::Operation*) override;
  Unary* ListOperations(Context*, const v1::ListOperationsRequest*, v1::ListOperationsResponse*) override;
  Unary* WaitOperation(Context*, const v1::WaitOperationRequest*, v1::Operation*) override;
  grpc::ServerWriteReactor<v1::Event>* Watch(Context*, const v1::WatchRequest*) override;

 private:
  // Runs `call` on the engine; finishes with its error, or with OK after `fill` wrote the response.
  template <typename T, typename Fill>
  Unary* answer(Context* ctx, std::function<Result<T>()> call, Fill fill);

  Engine& engine_;
  std::atomic<bool> shuttingDown_{false};
};

}  // namespace switchyard
