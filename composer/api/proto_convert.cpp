#include "composer/api/proto_convert.h"

#include <fmt/format.h>

#include <unordered_map>

namespace switchyard {

namespace {

Result<PeerToPeer> peerToPeerFromProto(pb::PeerToPeer value, PeerToPeer unspecified) {
  switch (value) {
    case pb::PEER_TO_PEER_UNSPECIFIED: return unspecified;
    case pb::PEER_TO_PEER_PREFERRED: return PeerToPeer::kPreferred;
    case pb::PEER_TO_PEER_REQUIRED: return PeerToPeer::kRequired;
    case pb::PEER_TO_PEER_NONE: return PeerToPeer::kNone;
    default:
      return fail(Code::kInvalidArgument,
                  fmt::format("peer_to_peer: unknown value {} (use REQUIRED, PREFERRED or NONE)", static_cast<int>(value)));
  }
}

pb::PeerToPeer peerToPeerToProto(PeerToPeer v) {
  switch (v) {
    case PeerToPeer::kRequired: return pb::PEER_TO_PEER_REQUIRED;
    case PeerToPeer::kPreferred: return pb::PEER_TO_PEER_PREFERRED;
    case PeerToPeer::kNone: return pb::PEER_TO_PEER_NONE;
  }
  return pb::PEER_TO_PEER_UNSPECIFIED;
}

Result<std::vector<MigProfile>> migProfilesFromProto(const google::protobuf::RepeatedPtrField<std::string>& names) {
  std::vector<MigProfile> out;
  for (const auto& name : names) {
    auto p = parseMigProfile(name);
    if (!p) return fail(Code::kInvalidArgument, fmt::format("mig_profiles: '{}' is not a MIG profile (use 1g, 2g, 3g, 4g or 7g)", name));
    out.push_back(*p);
  }
  return out;
}

void addInstances(const std::vector<GpuInstance>& instances, google::protobuf::RepeatedPtrField<pb::GpuInstance>& out) {
  for (const auto& i : instances) {
    auto* pi = out.Add();
    pi->set_device_id(i.deviceId);
    pi->set_profile(std::string(toString(i.profile)));
    pi->set_start(i.start);
  }
}

void addShares(const std::vector<GpuShare>& shares, google::protobuf::RepeatedPtrField<pb::GpuShare>& out) {
  for (const auto& share : shares) {
    auto* ps = out.Add();
    ps->set_id(share.id);
    ps->set_device_id(share.deviceId);
    ps->set_milli(share.milli);
  }
}

}  // namespace

Result<PlacementRequest> fromProto(const pb::GpuRequest& gpus, const std::string& tenant) {
  PlacementRequest r;
  r.gpuCount = gpus.count();
  r.model = gpus.model();
  r.minMemoryGiB = gpus.min_memory_gib();
  SY_ASSIGN(r.peerToPeer, peerToPeerFromProto(gpus.peer_to_peer(), PeerToPeer::kPreferred));
  if (!gpus.host().empty()) r.host = gpus.host();
  r.devices.assign(gpus.device_ids().begin(), gpus.device_ids().end());
  SY_ASSIGN(r.gpuInstances, migProfilesFromProto(gpus.mig_profiles()));
  r.gpuShareMilli = gpus.share_milli();
  r.tenant = tenant.empty() ? std::string(kDefaultTenant) : tenant;
  return r;
}

Result<std::vector<EndpointDemand>> endpointsFromProto(const google::protobuf::RepeatedPtrField<pb::EndpointRequest>& in) {
  std::vector<EndpointDemand> out;
  for (const auto& e : in) {
    const auto kind = parseKindName(e.kind());
    if (!kind || !isEndpointKind(kind->kind))
      return fail(Code::kInvalidArgument,
                  fmt::format("endpoints: kind '{}' is not nvme, nic or another class ({})", e.kind(), kKindNameRule));
    const auto affinity = parseAffinity(e.affinity());
    if (!affinity) return fail(Code::kInvalidArgument, fmt::format("endpoints: affinity '{}' is not switch or domain", e.affinity()));
    EndpointDemand d{kind->kind, e.count(), e.model(), e.min_capacity_gib(), *affinity, e.min_speed_gbps(), kind->deviceClass};
    if (auto why = invalidDemand(d); !why.empty()) return fail(Code::kInvalidArgument, "endpoints: " + why);
    out.push_back(std::move(d));
  }
  return out;
}

void toProto(const std::vector<EndpointDemand>& in, google::protobuf::RepeatedPtrField<pb::EndpointRequest>& out) {
  for (const auto& d : in) {
    auto& e = *out.Add();
    e.set_kind(kindName(d));
    e.set_count(d.count);
    e.set_model(d.model);
    e.set_min_capacity_gib(d.minCapacityGiB);
    e.set_min_speed_gbps(d.minSpeedGbps);
    e.set_affinity(std::string(toString(d.affinity)));
  }
}

void toProto(const MachineTemplate& t, pb::MachineTemplate& out) {
  out.set_name(t.name);
  out.set_description(t.description);
  auto& g = *out.mutable_gpus();
  g.set_count(t.gpus);
  g.set_model(t.model);
  g.set_min_memory_gib(t.minMemoryGiB);
  g.set_peer_to_peer(t.peerToPeer == "required" ? pb::PEER_TO_PEER_REQUIRED : t.peerToPeer == "none" ? pb::PEER_TO_PEER_NONE : pb::PEER_TO_PEER_PREFERRED);
  if (t.pooledMemoryGiB > 0) out.mutable_memory()->set_gib(t.pooledMemoryGiB);
  toProto(t.endpoints, *out.mutable_endpoints());
  for (const auto& [k, v] : t.labels) (*out.mutable_labels())[k] = v;
  out.set_priority_class(t.priorityClass);
  out.set_lease_seconds(t.leaseSeconds);
  out.set_shape(describeShape(t));
}

Result<std::vector<MigProfile>> migProfilesOf(const pb::GetCapacityRequest& request) {
  return migProfilesFromProto(request.mig_profiles());
}

Result<std::vector<int>> shareSizesOf(const pb::GetCapacityRequest& request) {
  std::vector<int> out;
  for (int milli : request.share_milli()) {
    if (milli <= 0 || milli >= kMilliPerGpu)
      return fail(Code::kInvalidArgument, fmt::format("share_milli: {} is not a share size (1-999 thousandths of a GPU)", milli));
    out.push_back(milli);
  }
  return out;
}

Result<std::vector<RequestShape>> fromProto(const pb::GetCapacityRequest& request) {
  SY_ASSIGN(PeerToPeer p2p, peerToPeerFromProto(request.peer_to_peer(), PeerToPeer::kRequired));
  std::vector<RequestShape> shapes;
  if (request.gpus().empty()) {
    shapes = defaultShapes();
    for (auto& s : shapes) s.peerToPeer = p2p;
  }
  for (int gpus : request.gpus()) {
    if (gpus <= 0) return fail(Code::kInvalidArgument, fmt::format("gpus: {} is not a request size (use 1 or more)", gpus));
    shapes.push_back({gpus, p2p, {}});
  }
  for (auto& s : shapes) s.model = request.model();
  return shapes;
}

void toProto(const CapacityReport& r, pb::Capacity& out) {
  out.set_free_gpus(r.freeGpus);
  out.set_stranded_gpus(r.strandedGpus);
  auto addShape = [](const ShapeCapacity& s, pb::ShapeCapacity& ps) {
    ps.set_gpus(s.shape.gpus);
    ps.set_peer_to_peer(peerToPeerToProto(s.shape.peerToPeer));
    ps.set_model(s.shape.model);
    ps.set_placeable(s.placeable);
  };
  for (const auto& s : r.shapes) addShape(s, *out.add_shapes());
  for (const auto& d : r.domains) {
    auto* pd = out.add_domains();
    pd->set_domain(d.domain);
    pd->set_free_gpus(d.freeGpus);
    pd->set_stranded_gpus(d.strandedGpus);
    for (const auto& s : d.shapes) addShape(s, *pd->add_shapes());
  }
  for (const auto& m : r.pooledMemory) {
    auto* pm = out.add_pooled_memory();
    pm->set_switch_id(m.switchId);
    pm->set_domain(m.domain);
    pm->set_free_gib(m.freeGiB);
    pm->set_free_devices(m.freeDevices);
    pm->set_total_gib(m.totalGiB);
    pm->set_total_devices(m.totalDevices);
  }
  out.set_free_pooled_memory_gib(r.freePooledMemoryGiB);
  for (const auto& e : r.endpoints) {
    auto& pe = *out.add_endpoints();
    pe.set_kind(kindName(e.kind, e.deviceClass));
    pe.set_model(e.model);
    pe.set_total(e.total);
    pe.set_free(e.free);
    pe.set_beside_free_gpus(e.besideFreeGpus);
  }
  for (const auto& n : r.named) {
    auto& t = *out.add_templates();
    t.set_name(n.name);
    t.set_fits(n.fits);
  }
  out.set_attachable_mig_gpus(r.attachableMigGpus);
  out.set_attachable_gpus(r.attachableGpus);
  for (const auto& c : r.shares) {
    auto* pc = out.add_shares();
    pc->set_milli(c.milli);
    pc->set_on_partly_used_gpus(c.onPartlyUsedGpus);
    pc->set_on_free_gpus(c.onFreeGpus);
  }
  for (const auto& m : r.mig) {
    auto* pm = out.add_mig();
    pm->set_profile(std::string(toString(m.profile)));
    pm->set_on_partly_used_gpus(m.onPartlyUsedGpus);
    pm->set_on_free_gpus(m.onFreeGpus);
  }
  for (const auto& d : r.demand) {
    auto* pd = out.add_demand();
    pd->set_gpus(d.shape.gpus);
    pd->set_same_switch(d.shape.sameSwitch);
    pd->set_model(d.shape.model);
    pd->set_share(d.weight);
  }
}

namespace {

pb::SystemState toProto(SystemState s) {
  switch (s) {
    case SystemState::kComposing: return pb::SYSTEM_STATE_COMPOSING;
    case SystemState::kComposed: return pb::SYSTEM_STATE_COMPOSED;
    case SystemState::kDegraded: return pb::SYSTEM_STATE_DEGRADED;
    case SystemState::kDecomposing: return pb::SYSTEM_STATE_DECOMPOSING;
    case SystemState::kDecomposed: return pb::SYSTEM_STATE_DECOMPOSED;
    case SystemState::kFailed: return pb::SYSTEM_STATE_FAILED;
    case SystemState::kQueued: return pb::SYSTEM_STATE_QUEUED;
  }
  return pb::SYSTEM_STATE_UNSPECIFIED;
}

pb::OperationKind toProto(OperationKind k) {
  switch (k) {
    case OperationKind::kCompose: return pb::OPERATION_KIND_COMPOSE;
    case OperationKind::kDecompose: return pb::OPERATION_KIND_DECOMPOSE;
    case OperationKind::kAttach: return pb::OPERATION_KIND_ATTACH;
    case OperationKind::kDetach: return pb::OPERATION_KIND_DETACH;
  }
  return pb::OPERATION_KIND_UNSPECIFIED;
}

pb::OperationState toProto(OperationState s) {
  switch (s) {
    case OperationState::kRunning: return pb::OPERATION_STATE_RUNNING;
    case OperationState::kRollingBack: return pb::OPERATION_STATE_ROLLING_BACK;
    case OperationState::kSucceeded: return pb::OPERATION_STATE_SUCCEEDED;
    case OperationState::kFailed: return pb::OPERATION_STATE_FAILED;
    case OperationState::kQueued: return pb::OPERATION_STATE_QUEUED;
  }
  return pb::OPERATION_STATE_UNSPECIFIED;
}

pb::DeviceAllocation toProto(DeviceAllocation a) {
  switch (a) {
    case DeviceAllocation::kFree: return pb::DEVICE_ALLOCATION_FREE;
    case DeviceAllocation::kReserved: return pb::DEVICE_ALLOCATION_RESERVED;
    case DeviceAllocation::kAllocated: return pb::DEVICE_ALLOCATION_ALLOCATED;
    case DeviceAllocation::kQuarantined: return pb::DEVICE_ALLOCATION_QUARANTINED;
  }
  return pb::DEVICE_ALLOCATION_UNSPECIFIED;
}

}  // namespace

void toProto(const System& s, pb::System& out, const PoolView* view) {
  out.set_id(s.id);
  out.set_name(s.name);
  out.set_host_id(s.hostId);
  for (const auto& b : s.bindings) {
    auto* pbb = out.add_bindings();
    pbb->set_device_id(b.deviceId);
    pbb->set_upstream_port_id(b.upstreamPortId);
    if (const DeviceView* d = view ? view->device(b.deviceId) : nullptr) pbb->set_kind(std::string(kindName(d->device)));
    for (const auto& h : s.hostDevices)
      if (h.deviceId == b.deviceId) {
        pbb->set_host_pci_address(h.pciAddress);
        pbb->set_uuid(h.uuid);
      }
  }
  out.set_tenant(s.tenant);
  for (const auto& [k, v] : s.labels) (*out.mutable_labels())[k] = v;
  out.set_state(toProto(s.state));
  out.set_state_reason(s.stateReason);
  out.set_active_operation(s.activeOperation);
  out.set_progress(s.progress);
  out.set_created_at(formatTimestamp(s.createdAt));
  out.set_updated_at(formatTimestamp(s.updatedAt));
  if (s.leaseExpiresAt > 0) out.set_lease_expires_at(formatTimestamp(s.leaseExpiresAt));
  out.set_priority_class(s.priorityClass);
  addInstances(s.gpuInstances, *out.mutable_gpu_instances());
  addShares(s.gpuShares, *out.mutable_gpu_shares());
}

void toProto(const Operation& op, const StepKindRegistry& kinds, pb::Operation& out) {
  out.set_id(op.id);
  out.set_kind(toProto(op.kind));
  out.set_system_id(op.systemId);
  out.set_host_id(op.hostId);
  out.set_state(toProto(op.state));
  out.set_done(op.finished());
  out.mutable_requested_by()->set_identity(op.requestedBy.identity);
  out.mutable_requested_by()->set_role(std::string(toString(op.requestedBy.role)));
  out.mutable_requested_by()->set_tenant(op.requestedBy.tenant);
  out.set_tenant(op.tenant);
  out.set_request_id(op.requestId);
  for (const auto& s : op.steps) {
    auto* ps = out.add_steps();
    ps->set_kind(s.kind);
    if (s.bindings.size() == 1) {
      ps->set_device_id(s.bindings[0].deviceId);
      ps->set_upstream_port_id(s.bindings[0].upstreamPortId);
    }
    for (const auto& b : s.bindings) {
      auto* pb = ps->add_bindings();
      pb->set_device_id(b.deviceId);
      pb->set_upstream_port_id(b.upstreamPortId);
    }
    const StepKind* kind = kinds.find(s.kind);
    ps->set_description(kind ? kind->describe(s) : s.kind);
    ps->set_state(std::string(toString(s.state)));
    ps->set_compensation(s.compensation);
    ps->set_attempts(s.attempts);
    ps->set_message(s.message);
  }
  out.set_explanation(op.explanation);
  out.set_error(op.error);
  out.set_created_at(formatTimestamp(op.createdAt));
  out.set_updated_at(formatTimestamp(op.updatedAt));
  addInstances(op.gpuInstances, *out.mutable_gpu_instances());
  addShares(op.gpuShares, *out.mutable_gpu_shares());
  // A compose's ticket only: a preemption's decompose also carries one (what its system is queued again as,
  // QueuedRequest::requeueAs), which the API's "a compose that went through the queue" does not mean.
  if (op.queued && op.kind == OperationKind::kCompose) toProto(*op.queued, *out.mutable_queued());
  if (op.queued && op.queued->requeueAs) out.set_requeues_as(op.queued->requeueAs->name);
  for (const auto& d : op.replaces) out.add_replaces(d);
}

void toProto(const QueuedRequest& q, pb::QueueTicket& out) {
  out.set_priority_class(q.priorityClass);
  out.set_priority(q.priority);
  out.set_enqueued_at(formatTimestamp(q.enqueuedAt));
  if (q.deadline > 0) out.set_deadline(formatTimestamp(q.deadline));
  out.set_lease_seconds(q.leaseSeconds);
  out.set_shape(describeShape(q));
}

void toProto(const QueueEntry& e, pb::QueueEntry& out) {
  out.set_position(static_cast<std::int32_t>(e.position));
  out.set_operation_id(e.operationId);
  out.set_system_id(e.systemId);
  out.set_name(e.name);
  out.set_tenant(e.tenant);
  out.set_requested_by(e.requestedBy);
  toProto(e.request, *out.mutable_ticket());
  auto& g = *out.mutable_gpus();
  g.set_count(e.request.gpuCount);
  g.set_model(e.request.model);
  g.set_min_memory_gib(e.request.minMemoryGiB);
  g.set_peer_to_peer(e.request.peerToPeer == "required" ? pb::PEER_TO_PEER_REQUIRED
                     : e.request.peerToPeer == "none"   ? pb::PEER_TO_PEER_NONE
                                                        : pb::PEER_TO_PEER_PREFERRED);
  g.set_host(e.request.host);
  for (const auto& d : e.request.devices) g.add_device_ids(d);
  for (MigProfile p : e.request.gpuInstances) g.add_mig_profiles(std::string(toString(p)));
  g.set_share_milli(e.request.gpuShareMilli);
  if (e.request.pooledMemoryGiB > 0) out.mutable_memory()->set_gib(e.request.pooledMemoryGiB);
  toProto(e.request.endpoints, *out.mutable_endpoints());
  out.set_waiting_for(e.waitingFor);
}

void toProto(const IdleGpu& g, Timestamp now, pb::IdleGpu& out) {
  out.set_device_id(g.gpu.deviceId);
  out.set_model(g.model);
  out.set_system_id(g.systemId);
  out.set_system_name(g.systemName);
  out.set_tenant(g.tenant);
  out.set_host_id(g.hostId);
  out.set_idle(g.gpu.idle());
  const auto idleFor = g.gpu.idleFor(now);
  if (g.gpu.idle()) out.set_idle_since(formatTimestamp(g.gpu.idleSince));
  out.set_idle_seconds(std::chrono::duration<double>(idleFor).count());
  out.set_idle_gpu_hours(g.idleGpuHours(now));
  out.set_utilization_percent(g.gpu.utilizationPercent);
  out.set_memory_used_mib(g.gpu.memoryUsedMiB);
  const auto addProcesses = [](const std::vector<GpuProcess>& processes, auto& to) {
    for (const auto& p : processes) {
      auto* proc = to.add_processes();
      proc->set_pid(p.pid);
      proc->set_name(p.name);
      proc->set_memory_mib(p.memoryMiB);
    }
  };
  addProcesses(g.gpu.processes, out);
  out.set_sampled_at(formatTimestamp(g.gpu.sampledAt));
  out.set_reclaim(describe(g.reclaim));
  const auto after = std::chrono::duration_cast<Duration>(g.reclaim.after).count();
  if (g.reclaim.after.count() > 0 && g.gpu.idle() && g.reclaimBlocked.empty()) out.set_reclaim_at(formatTimestamp(g.gpu.idleSince + after));
  out.set_reclaim_blocked(g.reclaimBlocked);
  for (const auto& sample : g.gpu.history) out.add_recent_utilization(sample.utilizationPercent);
  for (const auto& i : g.instances) {
    auto& instance = *out.add_instances();
    instance.set_start(i.start);
    instance.set_profile(std::string(toString(i.profile)));
    const InstanceIdleState* s = g.instanceState(i.start);
    if (s == nullptr) continue;
    instance.set_idle(s->idle());
    if (s->idle()) instance.set_idle_since(formatTimestamp(s->idleSince));
    instance.set_idle_seconds(std::chrono::duration<double>(s->idleFor(now)).count());
    instance.set_idle_gpu_hours(g.instanceIdleGpuHours(i, now));
    addProcesses(s->processes, instance);
    if (g.reclaim.after.count() > 0 && s->idle() && !g.gpu.idle()) instance.set_reclaim_at(formatTimestamp(s->idleSince + after));
  }
  out.set_share(g.shareMilli / static_cast<double>(kMilliPerGpu));
}

void toProto(const DeviceView& v, pb::Device& out) {
  const Device& d = v.device;
  out.set_id(d.id);
  out.set_kind(std::string(kindName(d)));
  out.set_model(d.model);
  out.set_memory_gib(d.memoryGiB);
  out.set_serial(d.serial);
  out.set_health(std::string(toString(d.health)));
  out.set_mig_capable(d.migCapable);
  out.set_speed_gbps(d.speedGbps);
  out.set_switch_id(v.switchId);
  out.set_port_id(d.portId);
  out.set_allocation(toProto(v.assignment.allocation));
  out.set_owner(v.assignment.owner);
  out.set_system_id(v.systemId);
  out.set_host_id(v.hostId);
  out.set_upstream_port_id(v.upstreamPortId);
}

void toProto(const HostView& v, pb::Host& out) {
  out.set_id(v.host.id);
  for (std::size_t i = 0; i < v.host.upstreamPorts.size(); ++i) {
    auto* pu = out.add_upstream_ports();
    pu->set_port_id(v.host.upstreamPorts[i].portId);
    if (i < v.upstreamSwitches.size()) pu->set_switch_id(v.upstreamSwitches[i]);
    pu->set_numa_node(v.host.upstreamPorts[i].numaNode);
  }
  out.set_cpu_cores(v.host.cpuCores);
  out.set_memory_gib(v.host.memoryGiB);
  out.set_max_devices(v.host.maxDevices);
  out.set_attached_devices(v.attachedDevices);
  out.set_system_id(v.systemId);
  out.set_host_policy(std::string(toString(v.policy)));
  out.set_host_side(v.hostSide);
}

void toProto(const Event& e, pb::Event& out) {
  out.set_sequence(e.sequence);
  out.set_at(formatTimestamp(e.at));
  out.set_type(e.type);
  out.set_subject(e.subject);
  out.set_message(e.message);
  out.set_actor(e.actor);
  out.set_tenant(e.tenant);
  out.set_system_id(e.systemId);
}

void toProto(const AuditRecord& r, pb::AuditRecord& out) {
  out.set_sequence(r.sequence);
  out.set_at(formatTimestamp(r.at));
  out.mutable_caller()->set_identity(r.caller.identity);
  out.mutable_caller()->set_role(std::string(toString(r.caller.role)));
  out.mutable_caller()->set_tenant(r.caller.tenant);
  out.set_action(r.action);
  out.set_target(r.target);
  out.set_tenant(r.tenant);
  out.set_result(r.result);
  out.set_message(r.message);
  out.set_operation_id(r.operationId);
  out.set_outcome(r.outcome);
  if (r.finishedAt != 0) out.set_finished_at(formatTimestamp(r.finishedAt));
}

void toProto(const PlanOutcome& plan, const Caller& caller, pb::PlanResponse& out) {
  for (const auto& v : plan.wouldPreempt) {
    auto* pv = out.add_would_preempt();
    pv->set_priority_class(v.priorityClass);
    pv->set_gpus(v.gpus);
    pv->set_requeued(v.requeued);
    if (caller.role == Role::kTenant && v.tenant != caller.tenant) continue;  // another tenant's: only that one exists
    pv->set_system_id(v.systemId);
    pv->set_name(v.name);
    pv->set_tenant(v.tenant);
  }
  if (plan.afterPreemption) out.set_host_after_preemption(plan.afterPreemption->hostId);
  for (const auto& m : plan.wouldMove) {
    auto* pm = out.add_would_move();
    pm->set_gpus(static_cast<int>(m.from.size()));
    if (caller.role == Role::kTenant && m.tenant != caller.tenant) continue;  // another tenant's: only how many GPUs
    pm->set_system_id(m.systemId);
    pm->set_name(m.name);
    pm->set_tenant(m.tenant);
    for (const auto& d : m.from) pm->add_from_device_ids(d);
    for (const auto& d : m.to) pm->add_to_device_ids(d);
  }
  if (plan.afterMoves) out.set_host_after_moves(plan.afterMoves->hostId);
}

void toProto(const PlacementDecision& d, pb::PlanResponse& out) {
  out.set_fits(d.placement.has_value());
  if (d.placement) {
    out.set_host_id(d.placement->hostId);
    out.set_explanation(d.placement->explanation);
    for (const auto& p : d.placement->devices) {
      auto* pd = out.add_devices();
      pd->set_device_id(p.deviceId);
      pd->set_switch_id(p.switchId);
      pd->set_upstream_port_id(p.upstreamPortId);
    }
    addInstances(d.placement->gpuInstances, *out.mutable_gpu_instances());
  } else if (d.error) {
    out.set_explanation(d.error->message);
  }
  for (const auto& c : d.candidates) {
    auto* pc = out.add_candidates();
    pc->set_host_id(c.hostId);
    pc->set_feasible(c.feasible);
    pc->set_reason(c.reason);
  }
}

void toProto(const Topology& t, const std::vector<HostView>& hosts, const std::vector<DeviceView>& devices, pb::Topology& out) {
  std::unordered_map<std::string, HostId> hostOfPort;
  for (const auto& h : t.hosts)
    for (const auto& u : h.upstreamPorts) hostOfPort[u.portId] = h.id;
  std::unordered_map<std::string, DeviceId> deviceOfPort;
  for (const auto& d : t.devices) deviceOfPort[d.portId] = d.id;
  for (const auto& sw : t.switches) {
    auto* ps = out.add_switches();
    ps->set_id(sw.id);
    ps->set_kind(std::string(toString(sw.kind)));
    ps->set_model(sw.model);
    ps->set_domain(sw.domain);
    for (const auto& p : t.ports) {
      if (p.switchId != sw.id) continue;
      auto* pp = ps->add_ports();
      pp->set_id(p.id);
      pp->set_kind(std::string(toString(p.kind)));
      pp->set_link_generation(p.linkGeneration);
      pp->set_link_width(p.linkWidth);
      pp->set_peer_port(p.peerPort);
      if (auto it = hostOfPort.find(p.id); it != hostOfPort.end()) pp->set_host_id(it->second);
      if (auto it = deviceOfPort.find(p.id); it != deviceOfPort.end()) pp->set_device_id(it->second);
    }
  }
  for (const auto& h : hosts) toProto(h, *out.add_hosts());
  for (const auto& d : devices) toProto(d, *out.add_devices());
}

}  // namespace switchyard
