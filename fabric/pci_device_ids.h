// What a device is, from the PCI ids a switch reports for it: its kind from the class code, and for the
// accelerators, NICs and drives a chassis carries, the model (and a GPU's memory and MIG support). Shared by the drivers that read
// configuration space themselves (Switchtec, CXL FM-API).
#pragma once

#include <cstdint>

#include "composer/model/topology.h"

namespace switchyard {

// Sets `device`'s kind (and class) from its class code: 01:08 NVMe, 02 network, 05:02 CXL memory; display/3D
// controllers (03) and processing accelerators (12) are GPUs; any other class is an endpoint of that class by
// name (0b "processor", 40 "coprocessor", 11 "signal-processing", 0c "serial-bus", ...; "pci-class-XX" for the
// rest), composed by count as such (`--endpoint processor=1`), never taken for a GPU.
void classifyPciFunction(std::uint32_t classCode, Device& device);

// Fills `device`'s model (a known accelerator's, NIC's or drive's name, else "pci-VVVV:DDDD"), and for a known
// accelerator its memory and MIG support.
void describePciDevice(std::uint16_t vendor, std::uint16_t deviceId, Device& device);

}  // namespace switchyard
