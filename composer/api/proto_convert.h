// Translation between domain types and switchyard.v1 messages: the only file that knows both.
#pragma once

#include "composer/engine/engine_client.h"
#include "composer/engine/steps/step_kind.h"
#include "switchyard/v1/switchyard.pb.h"

namespace switchyard {

namespace pb = ::switchyard::v1;

[[nodiscard]] Result<PlacementRequest> fromProto(const pb::GpuRequest& gpus, const std::string& tenant);
// Drives and NICs by count (ADR 0031), checked as the packing core checks them.
[[nodiscard]] Result<std::vector<EndpointDemand>> endpointsFromProto(const google::protobuf::RepeatedPtrField<pb::EndpointRequest>& in);
void toProto(const std::vector<EndpointDemand>& in, google::protobuf::RepeatedPtrField<pb::EndpointRequest>& out);
void toProto(const MachineTemplate& t, pb::MachineTemplate& out);

[[nodiscard]] Result<std::vector<RequestShape>> fromProto(const pb::GetCapacityRequest& request);
[[nodiscard]] Result<std::vector<MigProfile>> migProfilesOf(const pb::GetCapacityRequest& request);
[[nodiscard]] Result<std::vector<int>> shareSizesOf(const pb::GetCapacityRequest& request);

// `view`: where each binding's device kind is read (none: bindings carry no kind).
void toProto(const System& s, pb::System& out, const PoolView* view = nullptr);
void toProto(const CapacityReport& r, pb::Capacity& out);
void toProto(const Operation& op, const StepKindRegistry& kinds, pb::Operation& out);
void toProto(const DeviceView& d, pb::Device& out);
void toProto(const HostView& h, pb::Host& out);
void toProto(const Event& e, pb::Event& out);
void toProto(const QueuedRequest& q, pb::QueueTicket& out);
void toProto(const QueueEntry& e, pb::QueueEntry& out);
// An attached GPU's activity, its idle time measured to `now`.
void toProto(const IdleGpu& g, Timestamp now, pb::IdleGpu& out);
void toProto(const AuditRecord& r, pb::AuditRecord& out);
void toProto(const PlacementDecision& d, pb::PlanResponse& out);
// A plan's moves and victims, as `caller` may see them: another tenant's system as a count of GPUs only.
void toProto(const PlanOutcome& plan, const Caller& caller, pb::PlanResponse& out);
void toProto(const Topology& t, const std::vector<HostView>& hosts, const std::vector<DeviceView>& devices, pb::Topology& out);

}  // namespace switchyard
