// switchyard.v1.ResourceProvider: the composable-resource provider semantics Kubernetes operators expect
// (CoHDI's AddResource / RemoveResource / CheckResource / GetResources; docs/kubernetes.md), over the same
// engine as the Switchyard service. One resource is one whole GPU attached to the node's system: the first
// AddResource for a node composes a system there, later ones attach to it; removing the last GPU
// decomposes it. Changes are keyed by the caller's request id, so retries never attach twice.
//
// Each call is one hop to the engine's control thread: looking up the request id, the node's system and
// starting the operation happen there together, so two calls cannot race between look and act.
#pragma once

#include "composer/api/authenticator.h"
#include "composer/engine/engine_client.h"
#include "switchyard/v1/provider.grpc.pb.h"

namespace switchyard {

class ResourceProviderService final : public v1::ResourceProvider::CallbackService {
 public:
  // Its answers are small and built with the call on the control thread, so they finish there too.
  ResourceProviderService(Engine& engine, const Authenticator& authenticator)
      : engine_(engine, [](std::function<void()> finish) { finish(); }), authenticator_(authenticator) {}

  using Unary = grpc::ServerUnaryReactor;
  using Context = grpc::CallbackServerContext;
  Unary* AddResource(Context*, const v1::AddResourceRequest*, v1::ResourceStatus*) override;
  Unary* RemoveResource(Context*, const v1::RemoveResourceRequest*, v1::ResourceStatus*) override;
  Unary* CheckResource(Context*, const v1::CheckResourceRequest*, v1::ResourceStatus*) override;
  Unary* GetResources(Context*, const v1::GetResourcesRequest*, v1::GetResourcesResponse*) override;

  // The name of the system composed for a node's resources.
  [[nodiscard]] static std::string systemNameFor(const HostId& node) { return "k8s-" + node; }

 private:
  template <typename Response>
  Unary* answer(Context* ctx, std::function<Result<Response>(EngineCore&, const Caller&)> call, Response* out);

  EngineClient engine_;
  const Authenticator& authenticator_;
};

}  // namespace switchyard
