// The pool's inventory as a fabric reports it: switches, their ports, the hosts cabled to upstream
// ports and the devices behind downstream ports. Plain values; lookups live in TopologyIndex.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "composer/model/error.h"

namespace switchyard {

using HostId = std::string;
using SwitchId = std::string;
using PortId = std::string;
using DeviceId = std::string;

enum class SwitchKind { kPcie, kCxl };
enum class PortKind { kUpstream, kDownstream, kInterSwitch };
// kOther: an endpoint of another class (an FPGA, a DPU, an accelerator that is not a GPU), named by
// Device::deviceClass. Every surface names a device's kind with kindName(): gpu, nvme, nic, cxl-memory or the class.
enum class DeviceKind { kGpu, kNvme, kNic, kCxlMemory, kOther };
enum class DeviceHealth { kOk, kWarning, kCritical };

// A fabric domain is the part of the pool one switch manager (one FabricDriver) runs: a simulated chassis,
// a Redfish fabric manager. Inter-switch links and a host's upstream ports never leave their domain, so
// no placement crosses one. A pool with one driver is one domain, kDefaultDomain.
inline constexpr std::string_view kDefaultDomain = "default";

struct Switch {
  SwitchId id;
  SwitchKind kind = SwitchKind::kPcie;
  std::string model;
  std::string domain{kDefaultDomain};
};

struct Port {
  PortId id;
  SwitchId switchId;
  PortKind kind = PortKind::kDownstream;
  int linkGeneration = 5;  // PCIe gen (or CXL's PCIe PHY gen)
  int linkWidth = 16;      // lanes
  PortId peerPort;         // inter-switch links: the port at the other end
};

struct HostUpstreamPort {
  PortId portId;
  int numaNode = 0;
};

struct Host {
  HostId id;
  std::vector<HostUpstreamPort> upstreamPorts;
  int cpuCores = 0;
  int memoryGiB = 0;
  int maxDevices = 8;  // what the host's BIOS/OS can enumerate (bus numbers, BAR space)
};

struct Device {
  DeviceId id;
  DeviceKind kind = DeviceKind::kGpu;
  PortId portId;  // the downstream port it sits behind
  std::string model;
  int memoryGiB = 0;
  std::string serial;
  DeviceHealth health = DeviceHealth::kOk;
  bool migCapable = false;
  int speedGbps = 0;  // a NIC's port speed in Gb/s; 0 where the fabric does not say (and for other kinds)
  std::string deviceClass;  // kOther: the class by name ("fpga"); empty for the four kinds
};

struct Topology {
  std::vector<Switch> switches;
  std::vector<Port> ports;
  std::vector<Host> hosts;
  std::vector<Device> devices;
};

// Checks references and uniqueness: every id unique within its kind, ports on existing switches,
// upstream ports used by one host, devices behind downstream ports, ISL peers symmetric, domains named,
// ISLs and each host's upstream ports within one domain.
[[nodiscard]] Result<void> validateTopology(const Topology& topology);

// Read-only lookups over a Topology it does not own.
class TopologyIndex {
 public:
  explicit TopologyIndex(const Topology& topology);

  [[nodiscard]] const Host* host(std::string_view id) const;
  [[nodiscard]] const Device* device(std::string_view id) const;
  [[nodiscard]] const Port* port(std::string_view id) const;
  [[nodiscard]] const Switch* findSwitch(std::string_view id) const;
  [[nodiscard]] const SwitchId* switchOfDevice(std::string_view deviceId) const;
  // The domain of a device, port or host (a host's is its upstream ports' domain); nullptr when unknown.
  [[nodiscard]] const std::string* domainOfDevice(std::string_view deviceId) const;
  [[nodiscard]] const std::string* domainOfPort(std::string_view portId) const;
  [[nodiscard]] const std::string* domainOfHost(std::string_view hostId) const;
  // Switches reachable from one another over inter-switch links share a fabric number.
  [[nodiscard]] int fabricOf(std::string_view switchId) const;
  [[nodiscard]] const Topology& topology() const { return *topology_; }

 private:
  const Topology* topology_;
  std::unordered_map<std::string_view, const Host*> hosts_;
  std::unordered_map<std::string_view, const Device*> devices_;
  std::unordered_map<std::string_view, const Port*> ports_;
  std::unordered_map<std::string_view, const Switch*> switches_;
  std::unordered_map<std::string_view, int> fabricOfSwitch_;
};

[[nodiscard]] std::string_view toString(SwitchKind v);
[[nodiscard]] std::string_view toString(PortKind v);
[[nodiscard]] std::string_view toString(DeviceKind v);
[[nodiscard]] std::string_view toString(DeviceHealth v);
[[nodiscard]] std::optional<SwitchKind> parseSwitchKind(std::string_view s);
[[nodiscard]] std::optional<PortKind> parsePortKind(std::string_view s);
[[nodiscard]] std::optional<DeviceKind> parseDeviceKind(std::string_view s);
[[nodiscard]] std::optional<DeviceHealth> parseDeviceHealth(std::string_view s);

// A kind as users name it: gpu, nvme, nic, cxl-memory, or (kOther) the device's class.
[[nodiscard]] std::string kindName(DeviceKind kind, std::string_view deviceClass);
// The device's own: valid as long as `d` is.
[[nodiscard]] inline std::string_view kindName(const Device& d) { return d.kind == DeviceKind::kOther ? std::string_view(d.deviceClass) : toString(d.kind); }
struct KindName {
  DeviceKind kind = DeviceKind::kGpu;
  std::string deviceClass;  // set for kOther only
  friend bool operator==(const KindName&, const KindName&) = default;
};
// One of the four kinds, or any other class name (a lowercase letter, then lowercase letters, digits or '-', at
// most 32) as kOther; nothing for anything else.
[[nodiscard]] std::optional<KindName> parseKindName(std::string_view s);
// Whether `s` names another class (kOther): a kind name that is none of the four.
[[nodiscard]] bool isClassName(std::string_view s);
inline constexpr std::string_view kKindNameRule = "gpu, nvme, nic, cxl-memory, or another class's name (a-z, then a-z, 0-9 or -; at most 32)";

}  // namespace switchyard
