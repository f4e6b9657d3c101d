#include "composer/api/resource_provider_service.h"

#include <fmt/format.h>

#include "net/grpc_status.h"
#include "composer/model/access.h"

namespace switchyard {

namespace {

using Status = v1::ResourceStatus;

Result<void> required(std::string_view field, const std::string& value) {
  if (value.empty()) return fail(Code::kInvalidArgument, fmt::format("{} is required", field));
  return {};
}

// The live system on `node` the caller may see, if any.
std::optional<System> systemOn(const EngineClient& engine, const Caller& caller, const HostId& node) {
  auto systems = engine.listSystems();
  if (!systems) return std::nullopt;
  for (auto& s : *systems)
    if (s.hostId == node && s.state != SystemState::kDecomposed && s.state != SystemState::kFailed && maySee(caller, s.tenant))
      return std::move(s);
  return std::nullopt;
}

void fillDevice(Status& out, const System* system, const DeviceId& device, const EngineClient& engine) {
  out.set_device_id(device);
  if (auto view = engine.getDevice(device)) out.set_model(view->device.model);
  if (!system) return;
  out.set_system(system->name);
  for (const auto& h : system->hostDevices)
    if (h.deviceId == device) {
      out.set_device_uuid(h.uuid);
      out.set_pci_address(h.pciAddress);
    }
}

// The devices an operation added (compose/attach) or took away (decompose/detach): its first forward
// bind or unbind step's.
std::vector<DeviceId> devicesOf(const Operation& op) {
  for (const auto& step : op.steps)
    if (!step.compensation && (step.kind == "bind" || step.kind == "unbind")) {
      std::vector<DeviceId> out;
      for (const auto& b : step.bindings) out.push_back(b.deviceId);
      return out;
    }
  return {};
}

// How a provider request's operation stands.
Status statusOf(const EngineClient& engine, const Operation& op, const HostId& node, const DeviceId& device = {}) {
  Status out;
  out.set_request_id(op.requestId);
  out.set_node(node.empty() ? op.hostId : node);
  out.set_operation_id(op.id);
  const auto devices = devicesOf(op);
  const DeviceId which = !device.empty() ? device : devices.empty() ? DeviceId{} : devices.front();
  auto system = engine.getSystem(op.systemId);
  if (!which.empty()) fillDevice(out, system ? &*system : nullptr, which, engine);
  else if (system) out.set_system(system->name);
  if (!op.finished()) {
    out.set_state(Status::WORKING);
    out.set_message(fmt::format("{} {} is {}", toString(op.kind), op.id,
                                system && !system->progress.empty() ? system->progress : std::string(toString(op.state))));
  } else if (op.state == OperationState::kFailed) {
    out.set_state(Status::FAILED);
    out.set_message(fmt::format("{} {} failed and was rolled back: {}", toString(op.kind), op.id, op.error));
  } else {
    out.set_state(Status::DONE);
    const bool adds = op.kind == OperationKind::kCompose || op.kind == OperationKind::kAttach;
    out.set_message(adds ? fmt::format("{} attached to {} ({})", which, out.node(), op.id)
                         : fmt::format("{} removed from {} ({})", which, out.node(), op.id));
  }
  return out;
}

Status waiting(const System& system, const HostId& node) {
  Status out;
  out.set_state(Status::WORKING);
  out.set_node(node);
  out.set_system(system.name);
  out.set_operation_id(system.activeOperation);
  out.set_message(fmt::format("waiting for {} on {} to finish; nothing was started: call again", system.activeOperation, node));
  return out;
}

// The device a remove/check names: by UUID among what the host verified, or by device id.
std::optional<DeviceId> findDevice(const System& system, const std::string& uuid, const std::string& deviceId) {
  for (const auto& b : system.bindings) {
    if (!deviceId.empty() && b.deviceId == deviceId) return b.deviceId;
    if (!uuid.empty())
      for (const auto& h : system.hostDevices)
        if (h.deviceId == b.deviceId && h.uuid == uuid) return b.deviceId;
  }
  return std::nullopt;
}

}  // namespace

template <typename Response>
grpc::ServerUnaryReactor* ResourceProviderService::answer(Context* ctx, std::function<Result<Response>(EngineCore&, const Caller&)> call, Response* out) {
  auto* reactor = ctx->DefaultReactor();
  auto caller = authenticator_.callerOf(*ctx);
  if (!caller) {
    reactor->Finish(toGrpcStatus(caller.error()));
    return reactor;
  }
  engine_.run<Response>([call = std::move(call), c = *caller](EngineCore& core) { return call(core, c); },
                          [reactor, out](Result<Response> result) {
                            if (!result) return reactor->Finish(toGrpcStatus(result.error()));
                            *out = std::move(*result);
                            reactor->Finish(grpc::Status::OK);
                          });
  return reactor;
}

grpc::ServerUnaryReactor* ResourceProviderService::AddResource(Context* ctx, const v1::AddResourceRequest* req, Status* out) {
  return answer<Status>(
      ctx,
      [this, r = *req](EngineCore& core, const Caller& caller) -> Result<Status> {
        SY_TRY(required("request_id", r.request_id()));
        SY_TRY(required("node", r.node()));
        // One device a call: a whole GPU (type "gpu" or empty), or an NVMe drive, a NIC or an endpoint of another class
        // ("fpga"; ADR 0031) of the node's reach.
        const auto kind = r.type().empty() ? std::optional(KindName{DeviceKind::kGpu, {}}) : parseKindName(r.type());
        if (!kind || (kind->kind != DeviceKind::kGpu && !isEndpointKind(kind->kind)))
          return fail(Code::kInvalidArgument,
                      fmt::format("type '{}': this provider attaches one device of type gpu, nvme, nic or another class's name", r.type()));
        SY_ASSIGN(auto prior, core.operationForRequest(caller, r.request_id()));
        if (prior) return statusOf(engine_, *prior, {});  // the node the request went to, whatever this call says
        PlacementRequest placement;
        if (kind->kind == DeviceKind::kGpu) {
          placement.gpuCount = 1;
          placement.model = r.model();
        } else {
          placement.endpoints = {{kind->kind, 1, r.model(), 0, Affinity::kDomain, 0, kind->deviceClass}};
        }
        placement.peerToPeer = PeerToPeer::kPreferred;
        Result<Operation> started;
        if (auto system = systemOn(engine_, caller, r.node())) {
          if (!system->activeOperation.empty()) return waiting(*system, r.node());
          started = core.attach(caller, AttachRequest{system->id, placement, r.request_id()});
        } else {
          placement.host = r.node();
          placement.tenant = !r.tenant().empty() ? r.tenant() : !caller.tenant.empty() ? caller.tenant : std::string(kDefaultTenant);
          started = core.compose(caller, ComposeRequest{systemNameFor(r.node()), placement, {{"switchyard.io/provider", "resource-provider"}},
                                                           r.request_id()});
        }
        if (!started) return std::unexpected(started.error());
        return statusOf(engine_, *started, r.node());
      },
      out);
}

grpc::ServerUnaryReactor* ResourceProviderService::RemoveResource(Context* ctx, const v1::RemoveResourceRequest* req, Status* out) {
  return answer<Status>(
      ctx,
      [this, r = *req](EngineCore& core, const Caller& caller) -> Result<Status> {
        SY_TRY(required("request_id", r.request_id()));
        SY_TRY(required("node", r.node()));
        if (r.device_uuid().empty() && r.device_id().empty()) return fail(Code::kInvalidArgument, "device_uuid or device_id is required");
        SY_ASSIGN(auto prior, core.operationForRequest(caller, r.request_id()));
        if (prior) {
          // The device has left its system: the UUID is the one the caller named.
          Status status = statusOf(engine_, *prior, {});
          if (status.device_uuid().empty()) status.set_device_uuid(r.device_uuid());
          return status;
        }
        auto system = systemOn(engine_, caller, r.node());
        const auto device = system ? findDevice(*system, r.device_uuid(), r.device_id()) : std::nullopt;
        if (!device) {
          Status gone;
          gone.set_state(Status::DONE);
          gone.set_request_id(r.request_id());
          gone.set_node(r.node());
          gone.set_device_id(r.device_id());
          gone.set_device_uuid(r.device_uuid());
          gone.set_message(fmt::format("{} is not attached to {}: nothing to remove", r.device_uuid().empty() ? r.device_id() : r.device_uuid(), r.node()));
          return gone;
        }
        if (!system->activeOperation.empty()) return waiting(*system, r.node());
        // Read the identity now: once removed, the system no longer knows the device's UUID.
        Status identity;
        fillDevice(identity, &*system, *device, engine_);
        Result<Operation> started = system->bindings.size() == 1
                                        ? core.decompose(caller, system->id, r.request_id())
                                        : core.detach(caller, DetachRequest{system->id, {*device}, {}, {}, r.request_id()});
        if (!started) return std::unexpected(started.error());
        Status status = statusOf(engine_, *started, r.node(), *device);
        status.set_device_uuid(identity.device_uuid());
        status.set_pci_address(identity.pci_address());
        return status;
      },
      out);
}

grpc::ServerUnaryReactor* ResourceProviderService::CheckResource(Context* ctx, const v1::CheckResourceRequest* req, Status* out) {
  return answer<Status>(
      ctx,
      [this, r = *req](EngineCore& core, const Caller& caller) -> Result<Status> {
        SY_TRY(required("node", r.node()));
        if (r.device_uuid().empty() && r.device_id().empty() && r.request_id().empty())
          return fail(Code::kInvalidArgument, "device_uuid, device_id or request_id is required");
        std::string deviceId = r.device_id();
        if (!r.request_id().empty() && deviceId.empty() && r.device_uuid().empty()) {
          SY_ASSIGN(auto prior, core.operationForRequest(caller, r.request_id()));
          if (!prior) return fail(Code::kNotFound, fmt::format("no request '{}'", r.request_id()));
          if (!prior->finished() || prior->state == OperationState::kFailed) return statusOf(engine_, *prior, r.node());
          const auto devices = devicesOf(*prior);
          if (!devices.empty()) deviceId = devices.front();
        }
        Status status;
        status.set_node(r.node());
        status.set_request_id(r.request_id());
        auto system = systemOn(engine_, caller, r.node());
        const auto device = system ? findDevice(*system, r.device_uuid(), deviceId) : std::nullopt;
        if (!device) {
          status.set_state(Status::FAILED);
          status.set_device_id(deviceId);
          status.set_device_uuid(r.device_uuid());
          status.set_message(fmt::format("{} is not attached to {}", r.device_uuid().empty() ? deviceId : r.device_uuid(), r.node()));
          return status;
        }
        fillDevice(status, &*system, *device, engine_);
        if (!system->activeOperation.empty()) {
          status.set_state(Status::WORKING);
          status.set_operation_id(system->activeOperation);
          status.set_message(fmt::format("{} is running on {}", system->activeOperation, r.node()));
          return status;
        }
        SY_ASSIGN(const DeviceView view, engine_.getDevice(*device));
        std::vector<std::string> problems;
        if (view.device.health != DeviceHealth::kOk) problems.push_back(fmt::format("health is {}", toString(view.device.health)));
        if (view.assignment.allocation == DeviceAllocation::kQuarantined) problems.push_back(fmt::format("quarantined: {}", view.assignment.owner));
        if (system->state == SystemState::kDegraded || system->state == SystemState::kFailed)
          problems.push_back(fmt::format("its system {} is {}", system->name, toString(system->state)));
        status.set_state(problems.empty() ? Status::DONE : Status::FAILED);
        std::string message;
        for (const auto& p : problems) message += (message.empty() ? "" : "; ") + p;
        status.set_message(problems.empty() ? fmt::format("{} is attached to {} and healthy", *device, r.node()) : message);
        return status;
      },
      out);
}

grpc::ServerUnaryReactor* ResourceProviderService::GetResources(Context* ctx, const v1::GetResourcesRequest* req, v1::GetResourcesResponse* out) {
  return answer<v1::GetResourcesResponse>(
      ctx,
      [this, node = req->node()](EngineCore&, const Caller& caller) -> Result<v1::GetResourcesResponse> {
        SY_ASSIGN(const auto systems, engine_.listSystems());
        SY_ASSIGN(const auto devices, engine_.listDevices());
        std::map<DeviceId, const DeviceView*> byId;
        for (const auto& d : devices) byId[d.device.id] = &d;
        v1::GetResourcesResponse response;
        for (const auto& s : systems) {
          if (s.state == SystemState::kDecomposed || !maySee(caller, s.tenant) || (!node.empty() && s.hostId != node)) continue;
          for (const auto& b : s.bindings) {
            auto& r = *response.add_resources();
            r.set_node(s.hostId);
            r.set_device_id(b.deviceId);
            r.set_system(s.name);
            if (auto it = byId.find(b.deviceId); it != byId.end()) {
              r.set_model(it->second->device.model);
              r.set_state(std::string(toString(it->second->assignment.allocation)));
              r.set_health(std::string(toString(it->second->device.health)));
            }
            for (const auto& h : s.hostDevices)
              if (h.deviceId == b.deviceId) {
                r.set_device_uuid(h.uuid);
                r.set_pci_address(h.pciAddress);
              }
          }
        }
        return response;
      },
      out);
}

}  // namespace switchyard
