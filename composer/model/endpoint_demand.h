// What a request asks for besides GPUs and pooled memory: endpoints of other kinds (NVMe drives, NICs, any other
// class by name such as fpga) by count, with the model, capacity or speed they must have and how close to the
// request's GPUs they must sit. A request is a set of demands by kind (ADR 0031): GPUs (PlacementRequest's own
// fields), pooled memory in GiB (pooledMemoryGiB), and these.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/topology.h"

namespace switchyard {

// How close an endpoint must be to the GPUs of its request.
//  - switch: under a switch that holds some of the request's GPUs (GPUDirect RDMA and Storage never cross
//    the root complex then); with no GPUs in the request, any switch the host reaches;
//  - domain: anywhere the host reaches; still under the GPUs' switches when they have one free.
enum class Affinity { kDomain, kSwitch };

struct EndpointDemand {
  DeviceKind kind = DeviceKind::kNic;  // nvme, nic or other (deviceClass): GPUs and pooled memory are asked for their own way
  int count = 0;                       // 1..64
  std::string model;                   // empty: any
  int minCapacityGiB = 0;              // the device's capacity (Device::memoryGiB: a drive's size) at least
  Affinity affinity = Affinity::kDomain;
  int minSpeedGbps = 0;  // NICs: the port speed (Device::speedGbps) at least; a NIC of unknown speed never meets one
  std::string deviceClass;  // kOther: the class asked for (Device::deviceClass), e.g. "fpga"
  friend bool operator==(const EndpointDemand&, const EndpointDemand&) = default;
};
[[nodiscard]] inline std::string kindName(const EndpointDemand& d) { return kindName(d.kind, d.deviceClass); }
// The same kind (and, for other classes, the same class).
[[nodiscard]] inline bool sameKind(const EndpointDemand& a, const EndpointDemand& b) { return a.kind == b.kind && a.deviceClass == b.deviceClass; }

inline constexpr int kMaxEndpointsPerDemand = 64;
inline constexpr int kMaxLinkSpeedGbps = 100'000;  // a bound for input checks, far above any NIC port

[[nodiscard]] std::string_view toString(Affinity v);
[[nodiscard]] std::optional<Affinity> parseAffinity(std::string_view s);
// "nic:gpu=switch" or "nvme:gpu=domain" (yardctl --affinity): the kind and its affinity to the GPUs.
struct AffinityRule {
  DeviceKind kind = DeviceKind::kNic;
  Affinity affinity = Affinity::kDomain;
  std::string deviceClass;  // kOther: its class ("fpga:gpu=switch")
};
[[nodiscard]] std::optional<AffinityRule> parseAffinityRule(std::string_view text, std::string& error);
// The kinds a demand may name: nvme, nic, and other classes.
[[nodiscard]] bool isEndpointKind(DeviceKind kind);
// "2 NIC(s) >= 200 Gb/s, 1 NVMe drive(s) >= 1024 GiB": for people.
[[nodiscard]] std::string describe(const std::vector<EndpointDemand>& demands);
[[nodiscard]] std::string describe(const EndpointDemand& demand);
// Checks counts, kinds and capacities; a message naming the demand, empty when it is well formed.
[[nodiscard]] std::string invalidDemand(const EndpointDemand& demand);

}  // namespace switchyard
