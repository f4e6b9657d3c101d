#include "agent/agent_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "net/grpc_status.h"

namespace switchyard::agent {

ExpectedDevice fromProto(const v1::ExpectedDevice& in) {
  return {in.device_id(), in.serial_number(), static_cast<std::uint16_t>(in.vendor_id()), in.upstream_port_id()};
}

void toProto(const ExpectedDevice& in, v1::ExpectedDevice& out) {
  out.set_device_id(in.deviceId);
  out.set_serial_number(in.serialNumber);
  out.set_vendor_id(in.vendorId);
  out.set_upstream_port_id(in.upstreamPortId);
}

namespace {

std::vector<ExpectedDevice> expectedOf(const google::protobuf::RepeatedPtrField<v1::ExpectedDevice>& devices) {
  std::vector<ExpectedDevice> out;
  for (const auto& d : devices) out.push_back(fromProto(d));
  return out;
}

std::vector<MigRequest> migOf(const google::protobuf::RepeatedPtrField<v1::MigInstanceSpec>& instances) {
  std::vector<MigRequest> out;
  for (const auto& i : instances) out.push_back({i.device_id(), i.serial_number(), i.profile(), i.start()});
  return out;
}

grpc::Status check(const std::vector<ExpectedDevice>& devices, const std::vector<MigRequest>& mig) {
  if (devices.empty() && mig.empty()) return {grpc::StatusCode::INVALID_ARGUMENT, "name at least one device or MIG instance"};
  for (const auto& m : mig)
    if (m.serialNumber.empty() || m.profile.empty())
      return {grpc::StatusCode::INVALID_ARGUMENT, "every MIG instance needs its GPU's serial number and a profile"};
  for (const auto& d : devices)
    if (d.deviceId.empty() || d.serialNumber.empty())
      return {grpc::StatusCode::INVALID_ARGUMENT, "every device needs its id and serial number (the host finds it by serial)"};
  return grpc::Status::OK;
}

void log(const std::string& host, std::string_view call, const std::vector<ExpectedDevice>& devices, const Result<void>& outcome) {
  std::vector<std::string> ids;
  for (const auto& d : devices) ids.push_back(d.deviceId);
  if (outcome)
    spdlog::info("{} {} {}: done", host, call, fmt::join(ids, ","));
  else
    spdlog::warn("{} {} {}: {}", host, call, fmt::join(ids, ","), outcome.error().message);
}

}  // namespace

grpc::Status AgentService::Inventory(grpc::ServerContext*, const v1::InventoryRequest*, v1::HostInventory* out) {
  auto inventory = ops_.inventory();
  if (!inventory) return toGrpcStatus(inventory.error());
  out->set_host_id(hostId_);
  for (const auto& h : *inventory) {
    auto* f = out->add_functions();
    f->set_address(toString(h.pci.address));
    f->set_vendor_id(h.pci.vendorId);
    f->set_device_id(h.pci.deviceId);
    f->set_subsystem_vendor_id(h.pci.subsystemVendorId);
    f->set_subsystem_id(h.pci.subsystemId);
    f->set_class_code(h.pci.classCode);
    f->set_port_type(std::string(toString(h.pci.portType)));
    f->set_link_generation(h.pci.linkGeneration);
    f->set_link_width(h.pci.linkWidth);
    if (auto serial = h.pci.serial(); !serial.empty()) f->set_serial_number(serial);
    f->set_driver(h.pci.driver);
    f->set_numa_node(h.pci.numaNode);
    for (const auto& p : h.pci.parents) f->add_parents(toString(p));
    f->set_gpu_uuid(h.gpuUuid);
  }
  return grpc::Status::OK;
}

grpc::Status AgentService::Rescan(grpc::ServerContext*, const v1::RescanRequest* in, v1::ActionReport* out) {
  auto actions = ops_.rescan(in->dry_run());
  if (!actions) return toGrpcStatus(actions.error());
  for (auto& a : *actions) out->add_actions(std::move(a));
  out->set_dry_run(in->dry_run());
  return grpc::Status::OK;
}

grpc::Status AgentService::VerifyPresent(grpc::ServerContext* context, const v1::VerifyPresentRequest* in, v1::VerifyPresentResponse* out) {
  const auto devices = expectedOf(in->devices());
  const auto mig = migOf(in->mig_instances());
  if (auto bad = check(devices, mig); !bad.ok()) return bad;
  // The caller's own gRPC deadline bounds the wait too.
  auto deadline = std::chrono::milliseconds(in->deadline_ms());
  const auto callerLeft = std::chrono::duration_cast<std::chrono::milliseconds>(context->deadline() - std::chrono::system_clock::now());
  if (context->deadline() != std::chrono::system_clock::time_point::max() && (deadline.count() <= 0 || callerLeft < deadline))
    deadline = std::max(std::chrono::milliseconds(1), callerLeft);
  auto outcome = ops_.verifyPresent(devices, deadline, in->dry_run(), mig);
  log(hostId_, "verify-present", devices, outcome ? Result<void>{} : Result<void>{fail(outcome.error())});
  if (!outcome) return toGrpcStatus(outcome.error());
  for (const auto& f : outcome->found) {
    auto* d = out->add_devices();
    d->set_device_id(f.deviceId);
    d->set_pci_address(f.pciAddress);
    d->set_gpu_uuid(f.gpuUuid);
    d->set_driver(f.driver);
  }
  for (const auto& a : outcome->actions) out->add_actions(a);
  return grpc::Status::OK;
}

grpc::Status AgentService::PrepareDetach(grpc::ServerContext*, const v1::PrepareDetachRequest* in, v1::ActionReport* out) {
  const auto devices = expectedOf(in->devices());
  const auto mig = migOf(in->mig_instances());
  if (auto bad = check(devices, mig); !bad.ok()) return bad;
  const std::string reason = in->reason().empty() ? "request" : in->reason();
  if (reason != "request" && reason != "lease" && reason != "preemption" && reason != "reclaim" && reason != "move")
    return {grpc::StatusCode::INVALID_ARGUMENT, "reason: request, lease, preemption, reclaim or move"};
  auto outcome = ops_.prepareDetach(devices, in->dry_run(), mig, reason);
  log(hostId_, in->dry_run() ? "prepare-detach (dry run, " + reason + ")" : "prepare-detach (" + reason + ")", devices,
      outcome ? Result<void>{} : Result<void>{fail(outcome.error())});
  if (!outcome) return toGrpcStatus(outcome.error());
  for (auto& a : outcome->actions) out->add_actions(std::move(a));
  for (const auto& n : outcome->notReset) {
    spdlog::warn("{}: {}; removed from this host all the same, and yardd quarantines it", hostId_, n.reason);
    auto* r = out->add_not_reset();
    r->set_device_id(n.deviceId);
    r->set_reason(n.reason);
  }
  out->set_dry_run(in->dry_run());
  return grpc::Status::OK;
}

grpc::Status AgentService::Activity(grpc::ServerContext*, const v1::ActivityRequest* in, v1::ActivityResponse* out) {
  const auto devices = expectedOf(in->devices());
  if (auto bad = check(devices, {}); !bad.ok()) return bad;
  auto gpus = ops_.activity(devices);
  if (!gpus) {
    spdlog::warn("{} activity: {}", hostId_, gpus.error().message);
    return toGrpcStatus(gpus.error());
  }
  for (const auto& g : *gpus) {
    auto* a = out->add_gpus();
    a->set_device_id(g.deviceId);
    a->set_utilization_percent(g.utilizationPercent);
    a->set_memory_used_mib(g.memoryUsedMiB);
    const auto add = [](auto* to, const GpuProcess& p) {
      auto* proc = to->add_processes();
      proc->set_pid(p.pid);
      proc->set_name(p.name);
      proc->set_memory_mib(p.memoryMiB);
    };
    for (const auto& p : g.processes) add(a, p);
    for (const auto& i : g.instances) {
      auto* instance = a->add_instances();
      instance->set_start(i.start);
      for (const auto& p : i.processes) add(instance, p);
    }
  }
  return grpc::Status::OK;
}

}  // namespace switchyard::agent
