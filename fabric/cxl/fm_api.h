// The CXL Fabric Manager API (CXL 2.0 section 7.6, 3.x section 7.6.7) as bytes: the CCI message that carries
// every command, and the requests and replies of the commands this driver sends. Pure functions, no I/O:
// requests are encoded as the spec (and libcxlmi) lay them out; a reply that is short, or says something
// impossible, is an error value. Jackrabbit Labs' switch emulator (cse) departs from the spec in three
// places; each is a named switch in Dialect, never silent slack:
//   - categoryInHighNibble: replies carry the message category in bits 7:4 of byte 0 (10h, not 01h), the
//     background flag in bit 0 of byte 7 and length bits 20:16 in bits 7:3 of byte 7;
//   - tunnelTypeByte: a command tunnelled through 5300h is preceded by the MCTP message type byte (08h),
//     counted in the command size, and the reply carries it back;
//   - configByteOffset: 5103h's register number is a byte offset into configuration space (the spec's, as
//     in a PCIe configuration request, is a dword index).
// A longer Identify Switch Device reply than the 73 bytes of CXL 2.0 (cse sends 93) is read in every
// dialect: later revisions may append fields, and the first 73 bytes keep their meaning.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/error.h"
#include "fabric/bytes.h"

namespace switchyard::cxl {

using wire::Bytes;

// MCTP message types that carry CCI messages.
inline constexpr std::uint8_t kMctpTypeFmApi = 0x07;  // FM-API commands to the switch
inline constexpr std::uint8_t kMctpTypeCci = 0x08;    // CXL component commands (what 5300h tunnels to an MLD)

enum class Opcode : std::uint16_t {
  kBackgroundOperationStatus = 0x0002,
  kIdentifySwitchDevice = 0x5100,
  kGetPhysicalPortState = 0x5101,
  kPpbConfigRequest = 0x5103,
  kGetVirtualSwitchInfo = 0x5200,
  kBindVppb = 0x5201,
  kUnbindVppb = 0x5202,
  kTunnelManagementCommand = 0x5300,
  kGetLdInfo = 0x5400,
  kGetLdAllocations = 0x5401,
  kSetLdAllocations = 0x5402,
};
[[nodiscard]] std::string_view toString(Opcode op);

// Return codes (CXL 2.0 table 150) that change what a caller does.
namespace rc {
inline constexpr std::uint16_t kSuccess = 0x0000;
inline constexpr std::uint16_t kBackgroundStarted = 0x0001;
inline constexpr std::uint16_t kInvalidInput = 0x0002;
inline constexpr std::uint16_t kUnsupported = 0x0003;
inline constexpr std::uint16_t kRetryRequired = 0x0005;
inline constexpr std::uint16_t kBusy = 0x0006;
}  // namespace rc
[[nodiscard]] std::string describeReturnCode(std::uint16_t code);

struct Dialect {
  bool categoryInHighNibble = false;
  bool tunnelTypeByte = false;
  bool configByteOffset = false;
  // cse counts a reply's MCTP packets as if the first carried no type byte: a CCI message of a multiple of 64
  // bytes loses its last byte. Requests are shaped so that no reply has such a length (port states asked for
  // in batches that avoid it), and a reply cut this way is reported as this quirk.
  bool dropsByteOfFullPackets = false;
  [[nodiscard]] static Dialect spec() { return {}; }
  [[nodiscard]] static Dialect jackrabbit() { return {true, true, true, true}; }
  [[nodiscard]] std::string_view name() const { return categoryInHighNibble ? "jackrabbit" : "spec"; }
};
[[nodiscard]] Result<Dialect> parseDialect(std::string_view name);

inline constexpr std::size_t kCciHeaderSize = 12;

// One CCI message (CXL 2.0 figure 7-19): header and payload.
struct CciMessage {
  bool response = false;
  std::uint8_t tag = 0;
  std::uint16_t opcode = 0;
  bool background = false;
  std::uint16_t returnCode = 0;
  std::uint16_t vendorStatus = 0;
  Bytes payload;
};

// A request's bytes: category request, the given tag, return code and vendor status zero.
[[nodiscard]] Bytes encodeRequest(Opcode opcode, std::uint8_t tag, std::span<const std::uint8_t> payload);
// A reply's bytes as `dialect` lays them out (what a switch, or a test double of one, sends).
[[nodiscard]] Bytes encodeResponse(const CciMessage& m, const Dialect& dialect);
// Reads a CCI message; bytes past the header's length (MCTP padding) are ignored. A response in the other
// dialect's category form is an error that says which dialect the peer speaks.
[[nodiscard]] Result<CciMessage> decodeMessage(std::span<const std::uint8_t> bytes, const Dialect& dialect);

// ---- Requests (payloads only) ----
[[nodiscard]] Bytes getPhysicalPortStateRequest(std::span<const std::uint8_t> ports);
[[nodiscard]] Bytes ppbConfigReadRequest(std::uint8_t port, std::uint16_t byteOffset, const Dialect& dialect);
[[nodiscard]] Bytes getVirtualSwitchInfoRequest(std::span<const std::uint8_t> vcss, std::uint8_t startVppb = 0, std::uint8_t vppbLimit = 0xff);
inline constexpr std::uint16_t kNoLd = 0xffff;
[[nodiscard]] Bytes bindVppbRequest(std::uint8_t vcs, std::uint8_t vppb, std::uint8_t port, std::uint16_t ld = kNoLd);
enum class UnbindOption : std::uint8_t { kWaitForLinkDown = 0, kManagedHotRemove = 1, kSurpriseHotRemove = 2 };
[[nodiscard]] Bytes unbindVppbRequest(std::uint8_t vcs, std::uint8_t vppb, UnbindOption option);
// 5300h carrying `inner` (a whole CCI message) to the MLD behind `port`.
[[nodiscard]] Bytes tunnelRequest(std::uint8_t port, std::span<const std::uint8_t> inner, const Dialect& dialect);
[[nodiscard]] Bytes getLdAllocationsRequest(std::uint8_t startLd = 0, std::uint8_t limit = 0xff);
struct LdAllocation {
  std::uint64_t range1 = 0, range2 = 0;  // multiples of the device's granularity
  bool operator==(const LdAllocation&) const = default;
};
[[nodiscard]] Bytes setLdAllocationsRequest(std::uint8_t startLd, std::span<const LdAllocation> allocations);

// ---- Replies ----
struct SwitchIdentity {
  std::uint8_t ingressPort = 0;
  std::uint8_t numPorts = 0;
  std::uint8_t numVcss = 0;
  std::array<std::uint8_t, 32> activePorts{};
  std::array<std::uint8_t, 32> activeVcss{};
  std::uint16_t numVppbs = 0;
  std::uint16_t activeVppbs = 0;
  std::uint8_t hdmDecoders = 0;
  [[nodiscard]] bool portActive(unsigned port) const { return port < 256 && (activePorts[port / 8] >> (port % 8)) & 1; }
  [[nodiscard]] bool vcsActive(unsigned vcs) const { return vcs < 256 && (activeVcss[vcs / 8] >> (vcs % 8)) & 1; }
};
[[nodiscard]] Result<SwitchIdentity> parseIdentifySwitch(std::span<const std::uint8_t> payload);

enum class PortConfigState : std::uint8_t { kDisabled = 0, kBindInProgress = 1, kUnbindInProgress = 2, kDownstream = 3, kUpstream = 4, kFabric = 5 };
enum class ConnectedDevice : std::uint8_t { kNone = 0, kPcie = 1, kCxlType1 = 2, kCxlType2 = 3, kCxlType3 = 4, kCxlType3Pooled = 5, kSwitch = 6 };
struct PortState {
  std::uint8_t port = 0;
  std::uint8_t configState = 0;  // PortConfigState
  std::uint8_t deviceCxlVersion = 0;
  std::uint8_t deviceType = 0;  // ConnectedDevice
  std::uint8_t maxLinkWidth = 0, negotiatedLinkWidth = 0;
  std::uint8_t maxLinkSpeed = 0, currentLinkSpeed = 0;
  std::uint8_t ltssm = 0;
  std::uint8_t ldCount = 0;  // logical devices an MLD supports (0 for others)
  // L0, L0s or L1 (CXL 2.0 table 92: 4, 5, 6): the link is trained.
  [[nodiscard]] bool linkUp() const { return ltssm >= 4 && ltssm <= 6; }
};
[[nodiscard]] Result<std::vector<PortState>> parsePhysicalPortState(std::span<const std::uint8_t> payload);

enum class VppbBinding : std::uint8_t { kUnbound = 0, kInProgress = 1, kBoundPort = 2, kBoundLd = 3 };
struct Vppb {
  std::uint8_t status = 0;  // VppbBinding
  std::uint8_t port = 0;
  std::uint8_t ld = 0xff;
  [[nodiscard]] bool bound() const { return status == 2 || status == 3; }
};
struct VirtualSwitch {
  std::uint8_t id = 0;
  std::uint8_t state = 0;  // 1 enabled
  std::uint8_t upstreamPort = 0;
  std::vector<Vppb> vppbs;  // from vPPB 0 (requests always start there)
};
// The reply to getVirtualSwitchInfoRequest(vcss, 0, limit): how many vPPB blocks follow each VCS is not in the
// reply, so it is read with the request's limit (CXL 2.0 table 99).
[[nodiscard]] Result<std::vector<VirtualSwitch>> parseVirtualSwitchInfo(std::span<const std::uint8_t> payload, std::uint8_t vppbLimit = 0xff);

struct BackgroundOperation {
  bool running = false;
  std::uint8_t percent = 0;
  std::uint16_t opcode = 0;
  std::uint16_t returnCode = 0;
  std::uint16_t vendorStatus = 0;
};
[[nodiscard]] Result<BackgroundOperation> parseBackgroundOperationStatus(std::span<const std::uint8_t> payload);

[[nodiscard]] Result<std::uint32_t> parsePpbConfigRead(std::span<const std::uint8_t> payload);

// The reply to tunnelRequest: the inner CCI message's bytes.
[[nodiscard]] Result<Bytes> parseTunnelResponse(std::span<const std::uint8_t> payload, const Dialect& dialect);

struct LdInfo {
  std::uint64_t memorySize = 0;
  std::uint16_t ldCount = 0;
};
[[nodiscard]] Result<LdInfo> parseLdInfo(std::span<const std::uint8_t> payload);

struct LdAllocations {
  std::uint8_t totalLds = 0;
  std::uint64_t granularity = 0;  // bytes
  std::uint8_t startLd = 0;
  std::vector<LdAllocation> lds;
};
[[nodiscard]] Result<LdAllocations> parseLdAllocations(std::span<const std::uint8_t> payload);

}  // namespace switchyard::cxl
