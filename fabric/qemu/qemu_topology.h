// What the QEMU driver composes, as an operator writes it (docs/qemu.md): the VMs that are hosts (each by its
// QMP socket and the hot-plug slots of its PCIe topology the pool may use) and the device pool (each device
// as the properties of a QEMU `device_add`: an emulated NVMe drive with a serial, a NIC, or a host's
// `vfio-pci` function on a hypervisor). JSON:
//
//   {"hosts": [{"name": "vm-a", "qmp": "/run/switchyard/vm-a.qmp", "slots": ["rp1", "rp2"],
//               "cpu_cores": 4, "memory_gib": 16}],
//    "devices": [{"id": "gpu0", "kind": "gpu", "model": "stand-in GPU",
//                 "qemu": {"driver": "nvme", "serial": "GPU-SN-0001"}},
//                {"id": "nic0", "kind": "nic", "qemu": {"driver": "e1000e", "mac": "52:54:00:00:00:01"}},
//                {"id": "gpu1", "kind": "gpu", "qemu": {"driver": "vfio-pci", "host": "0000:41:00.0"}}]}
//
// A slot is the id of a hot-plug-capable port in the VM (`-device pcie-root-port,id=rp1,...`, or a
// downstream port of an emulated switch). An `nvme` device without a "drive" gets a null block device
// (`null-co`, no file, "backing_mib" large, default 1024) made on the VM before the device_add and deleted
// after the device is gone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "composer/model/error.h"
#include "composer/model/topology.h"

namespace switchyard::qemu {

struct VmHost {
  std::string name;                // the host's id
  std::string qmp;                 // the path of its QMP Unix socket
  std::vector<std::string> slots;  // ids of its hot-plug ports the pool may use
  int cpuCores = 0;
  int memoryGiB = 0;
};

struct PoolDevice {
  std::string id;
  DeviceKind kind = DeviceKind::kGpu;
  std::string model;
  std::string serial;             // what the host side identifies it by (the NVMe serial, a NIC's MAC)
  nlohmann::json properties;      // device_add's, without id and bus
  std::int64_t backingMiB = 0;    // > 0: a null-co block device of this size is made for it (nvme)
  [[nodiscard]] std::string qemuId() const { return "sy-" + id; }
  [[nodiscard]] std::string blockNode() const { return "sy-" + id + "-drive"; }
};

struct QemuPool {
  std::vector<VmHost> hosts;
  std::vector<PoolDevice> devices;
};

// Reads and checks a pool description (the format above). Errors name the file and the field.
[[nodiscard]] Result<QemuPool> parseQemuPool(const std::string& text, const std::string& source);
[[nodiscard]] Result<QemuPool> loadQemuPool(const std::string& path);

}  // namespace switchyard::qemu
