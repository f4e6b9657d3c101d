#include "fabric/pci_device_ids.h"

#include <fmt/format.h>

#include <utility>

namespace switchyard {
namespace {

struct KnownGpu {
  std::uint16_t vendor, device;
  const char* model;
  int memoryGiB;
  bool mig;
};
// PCI ids of the accelerators a GPU chassis carries; others keep their ids as model ("pci-10de:1234").
constexpr KnownGpu kKnownGpus[] = {
    {0x10de, 0x2330, "H100-SXM5-80GB", 80, true}, {0x10de, 0x2331, "H100-PCIE-80GB", 80, true},
    {0x10de, 0x2335, "H200-SXM-141GB", 141, true}, {0x10de, 0x233b, "H200-NVL-141GB", 141, true},
    {0x10de, 0x20b0, "A100-SXM4-40GB", 40, true}, {0x10de, 0x20b2, "A100-SXM4-80GB", 80, true},
    {0x10de, 0x20b5, "A100-PCIE-80GB", 80, true}, {0x10de, 0x20f1, "A100-PCIE-40GB", 40, true},
    {0x10de, 0x26b9, "L40S-48GB", 48, false},     {0x10de, 0x27b8, "L4-24GB", 24, false},
};

// NICs and drives a composable chassis carries, by the names the simulated pool and templates use. A drive's
// capacity is not in its ids (NVMe Identify says it): 0 here.
struct KnownEndpoint {
  std::uint16_t vendor, device;
  const char* model;
};
constexpr KnownEndpoint kKnownEndpoints[] = {
    {0x15b3, 0x1021, "ConnectX-7"}, {0x15b3, 0x101d, "ConnectX-6 Dx"}, {0x8086, 0x1592, "E810-C"}, {0x144d, 0xa824, "PM1733"},
};

}  // namespace

void classifyPciFunction(std::uint32_t classCode, Device& device) {
  const auto base = (classCode >> 16) & 0xff, sub = (classCode >> 8) & 0xff;
  device.deviceClass.clear();
  if (base == 0x01 && sub == 0x08) device.kind = DeviceKind::kNvme;
  else if (base == 0x02) device.kind = DeviceKind::kNic;
  else if (base == 0x05 && sub == 0x02) device.kind = DeviceKind::kCxlMemory;
  else if (base == 0x03 || base == 0x12) device.kind = DeviceKind::kGpu;  // display/3D controllers, processing accelerators
  else {
    // The PCI base class names (PCI Code and ID Assignment specification), as class names requests can use.
    static constexpr std::pair<std::uint32_t, const char*> kNames[] = {
        {0x01, "storage"},  {0x04, "multimedia"}, {0x05, "memory"},        {0x06, "bridge"},     {0x07, "communication"},
        {0x08, "system-peripheral"}, {0x09, "input"}, {0x0a, "docking"},  {0x0b, "processor"},  {0x0c, "serial-bus"},
        {0x0d, "wireless"}, {0x0e, "intelligent-io"}, {0x0f, "satellite"}, {0x10, "encryption"}, {0x11, "signal-processing"},
        {0x13, "non-essential"}, {0x40, "coprocessor"}};
    device.kind = DeviceKind::kOther;
    device.deviceClass = fmt::format("pci-class-{:02x}", base);
    for (const auto& [code, name] : kNames)
      if (code == base) device.deviceClass = name;
  }
}

void describePciDevice(std::uint16_t vendor, std::uint16_t deviceId, Device& device) {
  device.model = fmt::format("pci-{:04x}:{:04x}", vendor, deviceId);
  for (const auto& k : kKnownGpus)
    if (k.vendor == vendor && k.device == deviceId) {
      device.model = k.model;
      device.memoryGiB = k.memoryGiB;
      device.migCapable = k.mig;
    }
  for (const auto& k : kKnownEndpoints)
    if (k.vendor == vendor && k.device == deviceId) device.model = k.model;
}

}  // namespace switchyard
