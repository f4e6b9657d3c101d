// switchyard.v1.Switchyard over gRPC's synchronous server: each handler validates, translates and calls
// the Engine, which does its work on its control thread. Handlers hold no state of their own.
#pragma once

#include <atomic>

#include "composer/engine/engine.h"
#include "switchyard/v1/switchyard.grpc.pb.h"

namespace switchyard {

class SwitchyardService final : public v1::Switchyard::Service {
 public:
  explicit SwitchyardService(Engine& engine) : engine_(engine) {}

  // Ends open Watch streams (at shutdown, before the server drains).
  void shutdown() { shuttingDown_ = true; }

  grpc::Status Compose(grpc::ServerContext*, const v1::ComposeRequest*, v1::Operation*) override;
  grpc::Status Decompose(grpc::ServerContext*, const v1::DecomposeRequest*, v1::Operation*) override;
  grpc::Status Attach(grpc::ServerContext*, const v1::AttachRequest*, v1::Operation*) override;
  grpc::Status Detach(grpc::ServerContext*, const v1::DetachRequest*, v1::Operation*) override;
  grpc::Status Plan(grpc::ServerContext*, const v1::PlanRequest*, v1::PlanResponse*) override;
  grpc::Status GetCapacity(grpc::ServerContext*, const v1::GetCapacityRequest*, v1::Capacity*) override;
  grpc::Status GetSystem(grpc::ServerContext*, const v1::GetSystemRequest*, v1::System*) override;
  grpc::Status ListSystems(grpc::ServerContext*, const v1::ListSystemsRequest*, v1::ListSystemsResponse*) override;
  grpc::Status ListDevices(grpc::ServerContext*, const v1::ListDevicesRequest*, v1::ListDevicesResponse*) override;
  grpc::Status ListHosts(grpc::ServerContext*, const v1::ListHostsRequest*, v1::ListHostsResponse*) override;
  grpc::Status GetTopology(grpc::ServerContext*, const v1::GetTopologyRequest*, v1::Topology*) override;
  grpc::Status GetOperation(grpc::ServerContext*, const v1::GetOperationRequest*, v1::Operation*) override;
  grpc::Status ListOperations(grpc::ServerContext*, const v1::ListOperationsRequest*, v1::ListOperationsResponse*) override;
  grpc::Status WaitOperation(grpc::ServerContext*, const v1::WaitOperationRequest*, v1::Operation*) override;
  grpc::Status Watch(grpc::ServerContext*, const v1::WatchRequest*, grpc::ServerWriter<v1::Event>*) override;

 private:
  Engine& engine_;
  std::atomic<bool> shuttingDown_{false};
};

}  // namespace switchyard
