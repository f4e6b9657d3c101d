// One PCI function as a host sees it: where it is (domain:bus:device.function), what it is (ids, class,
// serial), how it is linked, who drives it, and the chain of bridges above it, which is how a device is
// matched to the switch port it sits behind.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard {

struct PciAddress {
  std::uint32_t domain = 0;
  std::uint8_t bus = 0;
  std::uint8_t device = 0;
  std::uint8_t function = 0;
  friend auto operator<=>(const PciAddress&, const PciAddress&) = default;
};

// "0000:3b:00.0", the form sysfs and `lspci -D` print.
[[nodiscard]] std::string toString(const PciAddress& address);
// Accepts "0000:3b:00.0" and "3b:00.0" (domain 0); nothing else.
[[nodiscard]] std::optional<PciAddress> parsePciAddress(std::string_view text);

// The PCI Express port type of a function (the PCIe capability's "device/port type"); kNone for a
// conventional PCI function without that capability.
enum class PciePortType { kNone, kEndpoint, kRootPort, kSwitchUpstream, kSwitchDownstream, kOther };
[[nodiscard]] std::string_view toString(PciePortType type);

struct PciFunction {
  PciAddress address;
  std::uint16_t vendorId = 0;
  std::uint16_t deviceId = 0;
  std::uint16_t subsystemVendorId = 0;
  std::uint16_t subsystemId = 0;
  std::uint32_t classCode = 0;  // base class, subclass, programming interface: 0x030200 is a 3D controller
  std::uint8_t revision = 0;
  PciePortType portType = PciePortType::kNone;
  int linkGeneration = 0;  // negotiated (Link Status): 1 = 2.5 GT/s ... 6 = 64 GT/s; 0 when not PCIe
  int linkWidth = 0;       // negotiated lanes
  std::optional<std::uint64_t> serialNumber;  // the Device Serial Number extended capability
  // What the kernel's driver reports as the device's identity where PCIe has no serial: an NVMe
  // controller's serial (sysfs nvme/nvmeN/serial) or a network function's MAC (net/IF/address). QEMU's
  // emulated devices, and many real NICs and drives, carry no Device Serial Number capability.
  std::string kernelSerial;
  std::string driver;                         // the kernel driver bound now ("" when none)
  int numaNode = -1;                          // -1 when the platform does not say
  // Bridges: the bus range behind it.
  bool bridge = false;
  std::uint8_t secondaryBus = 0;
  std::uint8_t subordinateBus = 0;
  // The bridges above it, nearest first; the last one is the root port.
  std::vector<PciAddress> parents;

  [[nodiscard]] bool isGpu() const { return (classCode >> 16) == 0x03; }  // display controllers: VGA and 3D
  // Whether this function is the device with `serial`: its Device Serial Number as lspci prints it, or else
  // the identity its kernel driver reports.
  [[nodiscard]] bool hasSerial(std::string_view serial) const;
  // The serial it is known by: the Device Serial Number as lspci prints it, else the kernel's; "" if none.
  [[nodiscard]] std::string serial() const;
};

// "48-b0-2d-ff-ff-c1-2d-50": the Device Serial Number the way lspci prints it (most significant byte first).
[[nodiscard]] std::string formatSerialNumber(std::uint64_t serial);
[[nodiscard]] std::optional<std::uint64_t> parseSerialNumber(std::string_view text);
// "32 GT/s" for generation 5.
[[nodiscard]] std::string linkSpeedText(int generation);

}  // namespace switchyard
