// The packing core's view of the pool: an index over the topology that the engine keeps current as
// devices are reserved and released, so that a decision never scans the store or the whole inventory.
// Pure data; no I/O.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "composer/model/topology.h"
#include "composer/packing/demand_mix.h"

namespace switchyard {

struct PoolDevice {
  DeviceId id;
  int switchIndex = -1;
  DeviceKind kind = DeviceKind::kGpu;
  std::string model;
  int memoryGiB = 0;
  DeviceHealth health = DeviceHealth::kOk;
  bool free = true;
  bool migCapable = false;
  int slot = -1;  // GPUs: position among its switch's GPUs (PoolSwitch::gpus); buddy cells are aligned on it
  int gpuClass = -1;  // GPUs: index into its switch's gpuClasses
  int speedGbps = 0;  // NICs: the port speed (Device::speedGbps)
  std::string deviceClass;  // kOther: its class (Device::deviceClass)
};

// The GPUs of one kind (model, memory, MIG) under a switch, and how many of them a placement may hand out
// now (isFreeGpu). A request's eligible GPUs on a switch are counted from these, not GPU by GPU.
struct PoolGpuClass {
  std::string model;
  int memoryGiB = 0;
  bool migCapable = false;
  int free = 0;
};

struct PoolSwitch {
  SwitchId id;
  int fabric = 0;
  int domain = 0;                // index into Pool::domains()
  std::vector<int> freeDevices;  // device indices, ascending
  std::vector<int> gpus;         // every GPU under the switch, free or not, ascending: its GPU slots
  std::vector<PoolGpuClass> gpuClasses;
  int freeGpus = 0;              // isFreeGpu devices, all classes
  int freeEndpoints = 0;         // isFreeEndpoint devices: drives and NICs a placement may hand out
  // The free devices of the endpoint kinds (drives, NICs, other classes; any health), ascending: what a search for
  // companions walks instead of freeDevices, whose GPUs it would only skip.
  std::vector<int> freeEndpointDevices;
  std::vector<int> hosts;        // hosts with an upstream port into it, ascending
};

struct PoolHostPort {
  PortId portId;
  int switchIndex = -1;
  int numaNode = 0;
};

struct PoolHost {
  HostId id;
  std::vector<PoolHostPort> ports;
  int maxDevices = 0;
  int attachedDevices = 0;  // bound or reserved for this host
  bool inSystem = false;    // a host serves at most one composed system
  bool silent = false;      // its host side (a yard-agent) stopped answering: placement passes it by
};

class Pool {
 public:
  explicit Pool(const Topology& topology);

  // Marks a device free (back in the pool) or taken (reserved, allocated or quarantined).
  void setFree(int deviceIndex, bool free);
  void setHealth(int deviceIndex, DeviceHealth health);
  void addAttached(int hostIndex, int delta);
  void setInSystem(int hostIndex, bool inSystem);
  void setSilent(int hostIndex, bool silent);

  [[nodiscard]] int deviceIndex(std::string_view id) const;  // -1 when unknown
  [[nodiscard]] int hostIndex(std::string_view id) const;    // -1 when unknown
  [[nodiscard]] const std::vector<PoolDevice>& devices() const { return devices_; }
  [[nodiscard]] const std::vector<PoolSwitch>& switches() const { return switches_; }
  [[nodiscard]] const std::vector<PoolHost>& hosts() const { return hosts_; }
  [[nodiscard]] int freeCount() const { return freeCount_; }
  [[nodiscard]] int gpuCount() const { return gpuCount_; }  // every GPU under a switch, free or not
  // Every GPU model in the pool, free or not, sorted: a request for another can never fit.
  [[nodiscard]] const std::vector<std::string>& gpuModels() const { return gpuModels_; }
  // The fabric domains' names, in the order their switches first appear (PoolSwitch::domain indexes it).
  [[nodiscard]] const std::vector<std::string>& domains() const { return domains_; }
  // The switches of each fabric, ascending (fabrics are numbered from 0), and the hosts with an upstream
  // port into one of them, ascending.
  [[nodiscard]] const std::vector<std::vector<int>>& fabricSwitches() const { return fabricSwitches_; }
  [[nodiscard]] const std::vector<std::vector<int>>& fabricHosts() const { return fabricHosts_; }
  // The fabrics a host has an upstream port into, each once, in port order.
  [[nodiscard]] const std::vector<int>& hostFabrics(int hostIndex) const { return hostFabrics_[static_cast<std::size_t>(hostIndex)]; }

  // Where the pool changed, for caches of per-host verdicts (placement_index.h). Every change appends the
  // fabrics it touched: a device's fabric, or the fabrics a host is cabled into. changes() is a position
  // in that log; fabricsChangedSince() is empty (nullopt) once the log no longer reaches back that far.
  // A copy of the pool is a new instance (instance()), so a cache never mistakes one pool for another.
  [[nodiscard]] std::uint64_t instance() const { return instance_.value; }
  [[nodiscard]] std::uint64_t changes() const { return logStart_ + changedFabrics_.size(); }
  [[nodiscard]] std::optional<std::span<const int>> fabricsChangedSince(std::uint64_t position) const;
  [[nodiscard]] std::uint64_t demandVersion() const { return demandVersion_; }

  // The request mix the pool has seen lately (demand_mix.h); empty until someone learns one. Shared, so
  // copying the pool (capacity probes) is cheap.
  void setDemand(std::shared_ptr<const DemandMix> demand) {
    demand_ = std::move(demand);
    ++demandVersion_;
  }
  [[nodiscard]] const std::shared_ptr<const DemandMix>& sharedDemand() const { return demand_; }
  [[nodiscard]] const DemandMix& demand() const {
    static const DemandMix kNone;
    return demand_ ? *demand_ : kNone;
  }

 private:
  std::vector<PoolDevice> devices_;
  std::vector<PoolSwitch> switches_;
  std::vector<std::string> domains_;
  std::vector<std::string> gpuModels_;
  std::vector<PoolHost> hosts_;
  std::vector<std::vector<int>> fabricSwitches_;
  std::vector<std::vector<int>> fabricHosts_;
  std::vector<std::vector<int>> hostFabrics_;
  std::unordered_map<std::string, int> deviceByid_;
  std::unordered_map<std::string, int> hostById_;
  int freeCount_ = 0;
  int gpuCount_ = 0;
  std::shared_ptr<const DemandMix> demand_;
  std::uint64_t demandVersion_ = 0;

  // Numbered per object: a copy gets a number of its own.
  struct Instance {
    static std::uint64_t next() {
      static std::atomic<std::uint64_t> counter{0};
      return ++counter;
    }
    std::uint64_t value = next();
    Instance() = default;
    Instance(const Instance&) : value(next()) {}
    Instance& operator=(const Instance&) {
      value = next();
      return *this;
    }
  };
  Instance instance_;
  std::vector<int> changedFabrics_;
  std::uint64_t logStart_ = 0;

  void setDevice(int deviceIndex, bool free, DeviceHealth health);
  void logHost(int hostIndex);
  void logFabric(int fabric);
};

// A GPU that a placement may hand out: free, and not critically unhealthy.
[[nodiscard]] inline bool isFreeGpu(const PoolDevice& d) {
  return d.free && d.kind == DeviceKind::kGpu && d.health != DeviceHealth::kCritical;
}

// A drive, NIC or endpoint of another class: what a request's endpoint demands take.
[[nodiscard]] inline bool isEndpointDevice(const PoolDevice& d) {
  return d.kind == DeviceKind::kNvme || d.kind == DeviceKind::kNic || d.kind == DeviceKind::kOther;
}

// One that a placement may hand out: free, and not critically unhealthy.
[[nodiscard]] inline bool isFreeEndpoint(const PoolDevice& d) { return d.free && isEndpointDevice(d) && d.health != DeviceHealth::kCritical; }

// The host's upstream port into a switch, or null.
[[nodiscard]] const PoolHostPort* portInto(const PoolHost& host, int switchIndex);
// A host port into any switch of the fabric (a device elsewhere in it is reached over an inter-switch link).
[[nodiscard]] const PoolHostPort* portIntoFabric(const Pool& pool, const PoolHost& host, int fabric);

}  // namespace switchyard
