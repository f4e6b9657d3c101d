// yard-agent's gRPC service: HostAgent (proto/switchyard/v1/agent.proto) over HostOps. Calls are few and
// short-lived (one per attach or detach), so the synchronous API is enough; each runs on a gRPC thread.
#pragma once

#include <string>

#include "agent/host_ops.h"
#include "switchyard/v1/agent.grpc.pb.h"

namespace switchyard::agent {

class AgentService final : public switchyard::v1::HostAgent::Service {
 public:
  AgentService(std::string hostId, const HostOps& ops) : hostId_(std::move(hostId)), ops_(ops) {}

  grpc::Status Inventory(grpc::ServerContext*, const v1::InventoryRequest*, v1::HostInventory* out) override;
  grpc::Status Rescan(grpc::ServerContext*, const v1::RescanRequest* in, v1::ActionReport* out) override;
  grpc::Status VerifyPresent(grpc::ServerContext* context, const v1::VerifyPresentRequest* in, v1::VerifyPresentResponse* out) override;
  grpc::Status PrepareDetach(grpc::ServerContext*, const v1::PrepareDetachRequest* in, v1::ActionReport* out) override;
  grpc::Status Activity(grpc::ServerContext*, const v1::ActivityRequest* in, v1::ActivityResponse* out) override;

 private:
  std::string hostId_;
  const HostOps& ops_;
};

// proto <-> HostOps types, shared with yardd's client.
[[nodiscard]] ExpectedDevice fromProto(const v1::ExpectedDevice& in);
void toProto(const ExpectedDevice& in, v1::ExpectedDevice& out);

}  // namespace switchyard::agent
