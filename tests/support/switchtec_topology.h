// What the Switchtec emulator emulates: PAX chips, their hosts (HVDs), endpoints with their functions, and
// the fabric links between chips; read from a topology file (JSON, format in docs/switchtec.md) with
// precise errors, or generated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "composer/model/error.h"

namespace switchyard::testing {

struct EmulatedFunction {
  std::uint16_t vendorId = 0x10de, deviceId = 0x2330;  // NVIDIA H100 SXM5 80GB
  std::uint16_t subVendorId = 0x10de, subDeviceId = 0x16c1;
  std::uint32_t classCode = 0x030200;  // 3D controller
};
struct EmulatedEndpoint {
  std::uint8_t port = 0;
  std::vector<EmulatedFunction> functions{EmulatedFunction{}};
};
struct EmulatedHost {
  std::uint8_t port = 0;
  std::uint16_t logicalPorts = 8;
};
struct EmulatedLink {
  std::uint8_t port = 0;
  std::uint8_t peerPax = 0;
  std::uint8_t peerPort = 0;
};
struct EmulatedPax {
  std::uint8_t id = 0;
  std::uint16_t deviceId = 0x4252;  // PAX 52XG4
  std::vector<EmulatedHost> hosts;
  std::vector<EmulatedEndpoint> endpoints;
  std::vector<EmulatedLink> links;
};
struct SwitchtecTopology {
  std::vector<EmulatedPax> chips;  // the first is the one the management port belongs to
};
// The topology file (JSON, format in docs/switchtec.md); precise errors for a bad one.
[[nodiscard]] Result<SwitchtecTopology> loadSwitchtecTopology(const std::filesystem::path& file);
[[nodiscard]] Result<SwitchtecTopology> parseSwitchtecTopology(const std::string& json);
// `chips` PAX chips in a chain (pax i port 48 to pax i+1 port 49), each with `hosts` hosts and `gpus`
// single-function GPUs.
[[nodiscard]] SwitchtecTopology generateSwitchtecTopology(int chips, int hosts, int gpus);

// The fabric-wide id (PDFID) the emulator gives function `function` of the `endpoint`-th endpoint of PAX
// `pax`: 0x100 per chip, 8 per endpoint.
[[nodiscard]] inline std::uint16_t emulatedPdfid(std::uint8_t pax, std::size_t endpoint, std::size_t function) {
  return static_cast<std::uint16_t>(0x100u * (pax + 1u) + endpoint * 8 + function);
}

}  // namespace switchyard::testing
