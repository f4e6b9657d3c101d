// Usable capacity: for each request shape, how many more such requests could be composed right now,
// found by letting the packing core place them one after another on a copy of the pool. This is the
// number raw utilisation hides: 16 free GPUs spread over busy hosts and switches may fit no 8-GPU job.
#pragma once

#include <string>
#include <vector>

#include "composer/packing/gpu_shares.h"
#include "composer/packing/packing.h"
#include "composer/packing/pool.h"

namespace switchyard {

struct RequestShape;
// 1, 2, 4, 8 and 16 GPUs, all under one switch.
[[nodiscard]] std::vector<RequestShape> defaultShapes();

struct RequestShape {
  int gpus = 1;
  PeerToPeer peerToPeer = PeerToPeer::kRequired;
  std::string model;  // empty: any
};

struct ShapeCapacity {
  RequestShape shape;
  int placeable = 0;
};

// MIG instances of one profile that could still be created. A partly used GPU serves only the system
// it is bound to, so the two numbers are kept apart.
struct MigCapacity {
  MigProfile profile = MigProfile::k1g;
  int onPartlyUsedGpus = 0;  // free slices of GPUs already carved for systems
  int onFreeGpus = 0;        // on free MIG-capable GPUs that hosts can still attach
};

// Time-sliced shares of one size that could still be given out; kept apart as MigCapacity is.
struct ShareCapacity {
  int milli = 0;
  int onPartlyUsedGpus = 0;  // in the room left on systems' share GPUs
  int onFreeGpus = 0;        // on free GPUs that hosts can still attach
};

// One fabric domain's share of the report: placements never cross a domain, so the domains' figures add
// up to the pool's.
struct DomainCapacity {
  std::string domain;
  int freeGpus = 0;
  int strandedGpus = 0;
  std::vector<ShapeCapacity> shapes;  // the report's shapes, in its order
};

// Pooled memory under one switch: what is free (healthy, unbound) and in all, in GiB and devices (LDs).
struct PooledMemoryCapacity {
  SwitchId switchId;
  std::string domain;
  int freeGiB = 0;
  int freeDevices = 0;
  int totalGiB = 0;
  int totalDevices = 0;
};

// How many systems of a named request (a machine template) fit now, one after another: at most
// kNamedCapacityLimit are counted (each is a placement: a bound on the cost at scale).
inline constexpr int kNamedCapacityLimit = 100;
struct NamedCapacity {
  std::string name;
  int fits = 0;  // kNamedCapacityLimit: that many or more
};

// Drives and NICs of one kind and model (issue 62): how many are free, and of those how many sit under a switch
// that still has a free GPU, which a request with the device beside its GPUs (affinity switch) can use. The
// other free ones are stranded for such requests (a request with domain affinity may still take them).
struct EndpointCapacity {
  DeviceKind kind = DeviceKind::kNic;
  std::string deviceClass;  // kOther: its class
  std::string model;
  int total = 0;
  int free = 0;             // free and not critical
  int besideFreeGpus = 0;   // of the free ones, under a switch with a free GPU
};

struct CapacityReport {
  int freeGpus = 0;      // free and not critical
  int strandedGpus = 0;  // free, yet no host that could take a new system reaches them
  // Of those, the ones a host that serves a system can still attach (within its device limit): stranded for new
  // systems, not for growing the ones there are. On a small pool whose hosts all serve systems, that is all of them.
  int strandedAttachableGpus = 0;
  std::vector<ShapeCapacity> shapes;
  int attachableMigGpus = 0;  // free MIG-capable GPUs that hosts can still attach, within device limits
  std::vector<MigCapacity> mig;
  int attachableGpus = 0;  // free GPUs (any) that hosts can still attach: what fresh shares land on
  std::vector<ShareCapacity> shares;
  DemandMix demand;  // the pool's learned demand (Pool::demand()), for operators to see
  std::vector<DomainCapacity> domains;  // one per fabric domain, in Pool::domains() order
  std::vector<PooledMemoryCapacity> pooledMemory;  // one per switch with cxl-memory devices, in switch order
  int freePooledMemoryGiB = 0;
  std::vector<NamedCapacity> named;  // one per CapacityQuery::named, in its order
  std::vector<EndpointCapacity> endpoints;  // drives and NICs, by kind then model
};

struct CapacityQuery {
  std::vector<RequestShape> shapes = defaultShapes();
  std::vector<MigProfile> migProfiles;   // empty: no MIG rows
  std::vector<GpuInstance> gpuInstances;  // every live system's MIG instances
  std::vector<int> shareMilli;            // empty: no share rows
  std::vector<GpuShare> gpuShares;        // every live system's shares
  // Whole requests by name (machine templates: GPUs, memory, drives and NICs), counted as they would be placed.
  std::vector<std::pair<std::string, PlacementRequest>> named;
};


// With the default profile, or with the scheduler the daemon is configured with.
[[nodiscard]] CapacityReport usableCapacity(const Pool& pool, const std::vector<RequestShape>& shapes);
[[nodiscard]] CapacityReport usableCapacity(const placement::Scheduler& scheduler, const Pool& pool,
                                            const std::vector<RequestShape>& shapes);
[[nodiscard]] CapacityReport usableCapacity(const placement::Scheduler& scheduler, const Pool& pool,
                                            const CapacityQuery& query);

}  // namespace switchyard
