#include "composer/api/switchyard_service.h"

#include <fmt/format.h>

#include "composer/api/proto_convert.h"
#include "composer/api/status_mapping.h"

namespace switchyard {

namespace {

template <typename T, typename Fill>
grpc::Status reply(const Result<T>& result, Fill fill) {
  if (!result) return toGrpcStatus(result.error());
  fill(*result);
  return grpc::Status::OK;
}

grpc::Status invalid(std::string message) { return {grpc::StatusCode::INVALID_ARGUMENT, std::move(message)}; }

}  // namespace

grpc::Status SwitchyardService::Compose(grpc::ServerContext*, const v1::ComposeRequest* req, v1::Operation* out) {
  if (!req->has_gpus()) return invalid("gpus: required (how many GPUs, or which devices)");
  auto placement = fromProto(req->gpus(), req->tenant());
  if (!placement) return toGrpcStatus(placement.error());
  ComposeRequest request{req->name(), std::move(*placement), {req->labels().begin(), req->labels().end()}};
  return reply(engine_.compose(request), [&](const Operation& op) { toProto(op, engine_.stepKinds(), *out); });
}

grpc::Status SwitchyardService::Decompose(grpc::ServerContext*, const v1::DecomposeRequest* req, v1::Operation* out) {
  if (req->system().empty()) return invalid("system: required (id or name)");
  return reply(engine_.decompose(req->system()), [&](const Operation& op) { toProto(op, engine_.stepKinds(), *out); });
}

grpc::Status SwitchyardService::Attach(grpc::ServerContext*, const v1::AttachRequest* req, v1::Operation* out) {
  if (req->system().empty()) return invalid("system: required (id or name)");
  if (!req->has_gpus()) return invalid("gpus: required (how many GPUs, or which devices)");
  auto placement = fromProto(req->gpus(), {});
  if (!placement) return toGrpcStatus(placement.error());
  return reply(engine_.attach({req->system(), std::move(*placement)}), [&](const Operation& op) { toProto(op, engine_.stepKinds(), *out); });
}

grpc::Status SwitchyardService::Detach(grpc::ServerContext*, const v1::DetachRequest* req, v1::Operation* out) {
  if (req->system().empty()) return invalid("system: required (id or name)");
  DetachRequest request{req->system(), {req->device_ids().begin(), req->device_ids().end()}, {}};
  for (const auto& ref : req->gpu_instances()) {
    if (ref.device_id().empty()) return invalid("gpu_instances: device_id required");
    request.gpuInstances.push_back({ref.device_id(), ref.start()});
  }
  return reply(engine_.detach(request), [&](const Operation& op) { toProto(op, engine_.stepKinds(), *out); });
}

grpc::Status SwitchyardService::Plan(grpc::ServerContext*, const v1::PlanRequest* req, v1::PlanResponse* out) {
  auto placement = fromProto(req->gpus(), req->tenant());
  if (!placement) return toGrpcStatus(placement.error());
  placement->explain = true;
  auto decision = engine_.plan(*placement);
  if (!decision) return toGrpcStatus(decision.error());
  // A request that cannot be valid is an error; one that merely does not fit now is an answer.
  if (decision->error && decision->error->code != Code::kResourceExhausted) return toGrpcStatus(*decision->error);
  toProto(*decision, *out);
  return grpc::Status::OK;
}

grpc::Status SwitchyardService::GetCapacity(grpc::ServerContext*, const v1::GetCapacityRequest* req, v1::Capacity* out) {
  auto shapes = fromProto(*req);
  if (!shapes) return toGrpcStatus(shapes.error());
  auto mig = migProfilesOf(*req);
  if (!mig) return toGrpcStatus(mig.error());
  return reply(engine_.capacity(*shapes, *mig), [&](const CapacityReport& report) { toProto(report, *out); });
}

grpc::Status SwitchyardService::GetSystem(grpc::ServerContext*, const v1::GetSystemRequest* req, v1::System* out) {
  return reply(engine_.getSystem(req->system()), [&](const System& s) { toProto(s, *out); });
}

grpc::Status SwitchyardService::ListSystems(grpc::ServerContext*, const v1::ListSystemsRequest* req, v1::ListSystemsResponse* out) {
  return reply(engine_.listSystems(), [&](const std::vector<System>& systems) {
    for (const auto& s : systems)
      if (req->tenant().empty() || s.tenant == req->tenant()) toProto(s, *out->add_systems());
  });
}

grpc::Status SwitchyardService::ListDevices(grpc::ServerContext*, const v1::ListDevicesRequest*, v1::ListDevicesResponse* out) {
  return reply(engine_.listDevices(), [&](const std::vector<DeviceView>& devices) {
    for (const auto& d : devices) toProto(d, *out->add_devices());
  });
}

grpc::Status SwitchyardService::ListHosts(grpc::ServerContext*, const v1::ListHostsRequest*, v1::ListHostsResponse* out) {
  return reply(engine_.listHosts(), [&](const std::vector<HostView>& hosts) {
    for (const auto& h : hosts) toProto(h, *out->add_hosts());
  });
}

grpc::Status SwitchyardService::GetTopology(grpc::ServerContext*, const v1::GetTopologyRequest*, v1::Topology* out) {
  auto topology = engine_.topology();
  auto hosts = engine_.listHosts();
  auto devices = engine_.listDevices();
  if (!topology) return toGrpcStatus(topology.error());
  if (!hosts) return toGrpcStatus(hosts.error());
  if (!devices) return toGrpcStatus(devices.error());
  toProto(*topology, *hosts, *devices, *out);
  return grpc::Status::OK;
}

grpc::Status SwitchyardService::GetOperation(grpc::ServerContext*, const v1::GetOperationRequest* req, v1::Operation* out) {
  if (req->id().empty()) return invalid("id: required");
  return reply(engine_.getOperation(req->id()), [&](const Operation& op) { toProto(op, engine_.stepKinds(), *out); });
}

grpc::Status SwitchyardService::ListOperations(grpc::ServerContext*, const v1::ListOperationsRequest* req, v1::ListOperationsResponse* out) {
  if (req->limit() < 0) return invalid("limit: must be >= 0");
  const std::size_t limit = req->limit() == 0 ? 50 : static_cast<std::size_t>(req->limit());
  return reply(engine_.listOperations(limit), [&](const std::vector<Operation>& ops) {
    for (const auto& op : ops) toProto(op, engine_.stepKinds(), *out->add_operations());
  });
}

grpc::Status SwitchyardService::WaitOperation(grpc::ServerContext* ctx, const v1::WaitOperationRequest* req, v1::Operation* out) {
  if (req->id().empty()) return invalid("id: required");
  if (req->timeout_ms() < 0) return invalid("timeout_ms: must be >= 0");
  auto timeout = std::chrono::milliseconds(req->timeout_ms() == 0 ? 30'000 : req->timeout_ms());
  // Never wait past the caller's own deadline.
  const auto untilDeadline = std::chrono::duration_cast<std::chrono::milliseconds>(ctx->deadline() - std::chrono::system_clock::now());
  if (untilDeadline.count() > 0 && untilDeadline < timeout) timeout = untilDeadline;
  return reply(engine_.waitOperation(req->id(), timeout), [&](const Operation& op) { toProto(op, engine_.stepKinds(), *out); });
}

grpc::Status SwitchyardService::Watch(grpc::ServerContext* ctx, const v1::WatchRequest* req, grpc::ServerWriter<v1::Event>* writer) {
  auto stream = engine_.subscribe();
  std::uint64_t last = req->after_sequence();
  if (last > 0) {
    // Replay what was recorded, then follow live events, skipping any seen twice.
    auto recorded = engine_.listEvents(last, 100'000);
    if (!recorded) return toGrpcStatus(recorded.error());
    for (const auto& e : *recorded) {
      v1::Event pe;
      toProto(e, pe);
      if (!writer->Write(pe)) return grpc::Status::OK;
      last = e.sequence;
    }
  }
  while (!ctx->IsCancelled() && !shuttingDown_) {
    if (const auto dropped = stream->dropped(); dropped > 0)
      return {grpc::StatusCode::RESOURCE_EXHAUSTED,
              fmt::format("watcher fell behind and {} event(s) were dropped; watch again with after_sequence={}", dropped, last)};
    auto e = stream->next(std::chrono::milliseconds(200));
    if (!e) {
      if (stream->closed()) break;
      continue;
    }
    if (e->sequence <= last) continue;
    v1::Event pe;
    toProto(*e, pe);
    if (!writer->Write(pe)) break;
    last = e->sequence;
  }
  return grpc::Status::OK;
}

}  // namespace switchyard
