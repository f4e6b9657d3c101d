// The packing core's entry point: which host gets which devices. Pure and deterministic: the same Pool
// and request always give the same answer. The policy is a placement-framework profile
// (composable_model.h); the default, switchyard-v1, is topology-aware best fit:
//  1. a candidate host must be free (one composed system per host) and have room under its device limit;
//  2. prefer all devices under one switch that the host has an upstream port into (peer-to-peer);
//  3. among those, the switch whose eligible free block is the tightest fit (keeps big blocks whole);
//  4. otherwise (P2P preferred or not needed) span as few switches as possible, direct ones first.
// MIG requests are first packed into GPU instances (gpu_instances.h); only the fresh GPUs that needs
// go through the steps above.
// Every rejected candidate gets a reason, so "does not fit" always says why.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "composer/model/composition.h"
#include "composer/model/endpoint_demand.h"
#include "composer/packing/pool.h"

namespace switchyard {

enum class PeerToPeer { kRequired, kPreferred, kNone };

struct PlacementRequest {
  int gpuCount = 0;
  std::string model;      // empty: any model
  int minMemoryGiB = 0;   // per GPU
  // Pooled memory (GiB), in whole cxl-memory devices (a CXL pool's logical devices) under the host's own
  // switches (pooled_memory.h); with GPUs or alone (then gpuCount may be 0).
  int pooledMemoryGiB = 0;
  // Drives and NICs by count (endpoint_choice.h), on the host the GPUs go to, near them as each one's
  // affinity says; with GPUs or alone.
  std::vector<EndpointDemand> endpoints;
  // The GPU part of a request with pooled memory, drives or NICs (set by companions.cpp, not by callers): the
  // "companions" filter keeps the hosts whose GPU plan leaves them room and reach for these, and the device-set
  // plugin puts the GPUs under a switch that has the switch-affine ones free where one does. Empty for every
  // GPU-only request, whose placement they never change.
  int companionMemoryGiB = 0;
  std::vector<EndpointDemand> companionEndpoints;
  PeerToPeer peerToPeer = PeerToPeer::kPreferred;
  std::optional<HostId> host;      // pinned host
  bool hostMayHaveSystem = false;  // attach: the pinned host already serves the system
  std::vector<DeviceId> devices;   // explicit devices (then gpuCount is ignored)
  // Fractional GPUs: MIG instances instead of whole GPUs (then gpuCount is ignored). They go on the
  // system's partly used GPUs first (`boundInstances`, attach) and on fresh MIG-capable GPUs otherwise.
  std::vector<MigProfile> gpuInstances;
  std::vector<GpuInstance> boundInstances;  // attach: the instances the system already has
  bool migCapable = false;                  // whole GPUs must be MIG-capable
  // A time-sliced share of one GPU (milli-GPU, 1-999) instead of gpuCount. The engine puts it on one of
  // the system's share GPUs (gpu_shares.h) or asks this core for one fresh GPU.
  int gpuShareMilli = 0;
  TenantId tenant{kDefaultTenant};
  // Give every candidate host a reason (Plan). Without it only a failure explains itself, and only a few
  // hosts per reason (PlacementDecision::unexplained), which keeps the hot path free of string formatting.
  bool explain = false;
};

struct PlacedDevice {
  DeviceId deviceId;
  SwitchId switchId;
  PortId upstreamPortId;  // the host port the device is bound to
};

struct CandidateVerdict {
  HostId hostId;
  bool feasible = false;
  std::string reason;  // why rejected, or what it would get
};

struct Placement {
  HostId hostId;
  std::vector<PlacedDevice> devices;     // devices to bind
  std::vector<GpuInstance> gpuInstances;  // MIG instances to create, on those or on already bound devices
  std::string explanation;  // "HOST: why", for people
  std::string detail;       // the same without the host: what was chosen on it (composed into other explanations)
};

// Hosts a refusal counts without a reason each: those one filter rejected past the few it explains.
struct UnexplainedHosts {
  std::string rejectedBy;  // the filter (a placement plugin's name)
  std::size_t hosts = 0;
};

struct PlacementDecision {
  std::optional<Placement> placement;
  // One per host considered, in host order; a refusal not asked to explain every host (PlacementRequest::
  // explain) gives reasons for the first few hosts each filter rejected and counts the rest in `unexplained`.
  std::vector<CandidateVerdict> candidates;
  std::vector<UnexplainedHosts> unexplained;
  // When nothing fits: kResourceExhausted / kInvalidArgument / kNotFound / kFailedPrecondition.
  std::optional<Error> error;
};

// The candidates as a refusal's lines, "\n  HOST: reason" each, then one line for the hosts left unexplained:
// "\n  ... and N more host(s): N1 rejected by F1, N2 by F2 (...)".
[[nodiscard]] std::string listCandidates(const PlacementDecision& d);
// How many hosts a refusal counted without naming them (the sum of `unexplained`).
[[nodiscard]] std::size_t unexplainedHosts(const PlacementDecision& d);

[[nodiscard]] std::string_view toString(PeerToPeer v);
[[nodiscard]] std::optional<PeerToPeer> parsePeerToPeer(std::string_view s);

// Checks the request on its own (counts, names) before any placement is tried.
[[nodiscard]] Result<void> validatePlacementRequest(const Pool& pool, const PlacementRequest& request);

namespace placement {
class Scheduler;
}  // namespace placement

// Places with the default profile (switchyard-v1).
[[nodiscard]] PlacementDecision place(const Pool& pool, const PlacementRequest& request);
class PlacementIndex;

// Places with a configured scheduler (see composable_model.h for profiles and plugins). With an index
// (placement_index.h) that the caller keeps with the pool, the same decision costs only the hosts
// whose fabrics changed since the last request of that shape.
[[nodiscard]] PlacementDecision place(const placement::Scheduler& scheduler, const Pool& pool,
                                      const PlacementRequest& request, PlacementIndex* index = nullptr);

}  // namespace switchyard
