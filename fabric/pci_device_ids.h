// What a device is, from the PCI ids a switch reports for it: its kind from the class code, and for the
// accelerators, NICs and drives a chassis carries, the model (and a GPU's memory and MIG support). Shared by the drivers that read
// configuration space themselves (Switchtec, CXL FM-API).
#pragma once

#include <cstdint>

#include "composer/model/topology.h"

namespace switchyard {

// 01:08 NVMe, 02 network, 05:02 CXL memory; display/3D controllers (03) and accelerators (12) are GPUs.
[[nodiscard]] DeviceKind deviceKindOfClass(std::uint32_t classCode);

// Fills `device`'s model (a known accelerator's, NIC's or drive's name, else "pci-VVVV:DDDD"), and for a known
// accelerator its memory and MIG support.
void describePciDevice(std::uint16_t vendor, std::uint16_t deviceId, Device& device);

}  // namespace switchyard
