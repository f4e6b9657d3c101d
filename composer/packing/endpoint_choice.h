// Endpoints beside a request's GPUs (NVMe drives, NICs: composer/model/endpoint_demand.h), chosen on the
// host the GPUs went to. Pure functions over the Pool.
//
// Where each comes from, in order:
//  1. the switches that hold the request's GPUs, spread so each switch gets its share (a switch with 4 of the
//     GPUs gets a NIC before one with 2 gets its second: N GPUs per NIC, GPUDirect never crossing the root
//     complex);
//  2. with affinity `domain` (or no GPUs in the request): the host's other switches, then switches it reaches
//     over inter-switch links, taking from the switch with the most free devices of that kind, so that a
//     switch's only NIC or drive stays for GPUs beside it.
// Within a switch: the smallest device that meets the capacity asked (big drives stay for big asks).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "composer/model/endpoint_demand.h"
#include "composer/packing/pool.h"

namespace switchyard {

// The devices (indices) for one demand on host `hostIndex`, the request's GPUs being under `gpuSwitches`
// (one switch index per GPU; empty without GPUs). None when the host cannot have them (or they would be more
// than `slots`); then `why` says what it reaches.
[[nodiscard]] std::optional<std::vector<int>> chooseEndpoints(const Pool& pool, int hostIndex, const std::vector<int>& gpuSwitches,
                                                              const EndpointDemand& demand, int slots, const std::vector<DeviceId>& taken,
                                                              std::string* why = nullptr);

// How many free eligible devices of a demand the host reaches: under the GPUs' switches (`near`) and elsewhere.
// chooseEndpoints finds `count` of them exactly when near (affinity switch, with GPUs) or near + far reach it: the
// count alone decides, without choosing (the companions filter asks it of every host).
struct EndpointSupply {
  int near = 0;
  int far = 0;
};
// With `enough` > 0 the count stops once what can serve the demand (near, and far where its affinity allows) reaches
// it, and switches that cannot serve it are not counted: enough to tell "fits", not the whole count a reason shows.
[[nodiscard]] EndpointSupply endpointSupply(const Pool& pool, int hostIndex, const std::vector<int>& gpuSwitches, const EndpointDemand& demand,
                                            int enough = 0);

// How many devices a demand could take on the host at most (its affinity set aside): a quick test before
// placing GPUs there.
[[nodiscard]] int reachableEndpoints(const Pool& pool, int hostIndex, const EndpointDemand& demand);

// A device that matches the demand's kind, model and capacity and may be handed out now.
[[nodiscard]] bool isEligibleEndpoint(const PoolDevice& d, const EndpointDemand& demand);

// Whether switch `switchIndex` has every demand's count free and eligible under it.
[[nodiscard]] bool servesUnder(const Pool& pool, int switchIndex, std::span<const EndpointDemand> demands);

}  // namespace switchyard
