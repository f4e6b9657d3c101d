// The Switchtec management protocol as far as a fabric manager needs it: the Ethernet transport's framing,
// the MRPC command numbers and return codes, and the GFMS (the PAX's embedded fabric manager) requests
// and replies. Facts learned from Microchip's MIT-licensed switchtec-user library (../shared/third-party);
// the code is ours. Both ends use this file: the driver (fabric/switchtec/) and the emulator
// (tests/support/switchtec_emulator.*); the vendor's own CLI, run against the emulator, checks that the
// layouts here are the real ones.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "composer/model/error.h"
#include "fabric/switchtec/bytes.h"

namespace switchyard::switchtec {

// --- Ethernet transport (TCP 54545): a 16-byte header, then the body -----------------------------------
inline constexpr std::uint16_t kEthPort = 54545;
inline constexpr std::uint32_t kEthSignature = 0x6d6c7373;  // sent in network order
inline constexpr std::uint8_t kEthVersion = 1;
inline constexpr std::size_t kEthHeaderSize = 16;
enum class EthPacket : std::uint8_t { kOpen = 0xB1, kCommand = 0xB2 };
enum class EthFunction : std::uint8_t {
  // on kOpen packets
  kOpenRequest = 1,
  kOpenAccept = 2,
  kOpenReject = 3,
  kOpenClose = 4,
  // on kCommand packets
  kMrpcCommand = 1,
  kGasCommand = 2,  // "MOE": read or write the global address space
  kMrpcResponse = 3,
  kEvent = 4,
  kGasResponse = 5,
};
enum class EthService : std::uint8_t { kCommand = 1, kEvent = 2 };
inline constexpr std::uint32_t kGasRead = 0x1001;
inline constexpr std::uint32_t kGasWrite = 0x1002;

struct EthHeader {
  EthFunction function = EthFunction::kMrpcCommand;
  EthPacket packet = EthPacket::kCommand;
  std::uint8_t serviceInstance = 0;
  std::uint8_t serviceType = 0;
  std::uint16_t payloadBytes = 0;
  std::uint16_t outputBytes = 0;  // requests: bytes of MRPC output expected; open replies: the return code
};
[[nodiscard]] Bytes encodeHeader(const EthHeader& h);
// A header with the wrong signature or version is an error (not a Switchtec endpoint).
[[nodiscard]] Result<EthHeader> decodeHeader(std::span<const std::uint8_t> sixteenBytes);

// --- MRPC -------------------------------------------------------------------------------------------
inline constexpr std::size_t kMrpcMaxData = 1024;
inline constexpr std::uint32_t kCommandMask = 0xffff;
inline constexpr int kPaxIdShift = 18;
inline constexpr std::uint32_t kPaxIdMask = 0x1f;
inline constexpr std::uint32_t kPaxIdLocal = kPaxIdMask;  // "the chip I am talking to"

enum class Mrpc : std::uint32_t {
  kGetPaxId = 0x81,
  kTopoInfoDump = 0x82,
  kGfmsDbDump = 0x83,
  kGfmsBindUnbind = 0x84,
  kGfmsEvent = 0x89,
  kPing = 0x100,  // I2C TWI ping: also reports boot phase and generation
};
// The MRPC command word: the command, with the PAX that should run it (GFMS commands travel the fabric).
[[nodiscard]] constexpr std::uint32_t commandWord(Mrpc command, std::uint32_t paxId) {
  return static_cast<std::uint32_t>(command) | ((paxId & kPaxIdMask) << kPaxIdShift);
}

// MRPC return codes a fabric manager meets (the firmware's numbers).
namespace mrpc_error {
inline constexpr std::uint32_t kPhysPortAlreadyBound = 0x1;
inline constexpr std::uint32_t kLogicalPortAlreadyBound = 0x2;
inline constexpr std::uint32_t kPartitionNotExist = 0x3;
inline constexpr std::uint32_t kPhysPortNotExist = 0x4;
inline constexpr std::uint32_t kPhysPortDisabled = 0x5;
inline constexpr std::uint32_t kNoLogicalPort = 0x6;
inline constexpr std::uint32_t kBindInProgress = 0x7;
inline constexpr std::uint32_t kBindTargetIsUsp = 0x8;
inline constexpr std::uint32_t kBindSubcmdInvalid = 0x9;
inline constexpr std::uint32_t kLogicalPortNotBound = 0xb;
inline constexpr std::uint32_t kBindCheckFail = 0xd;
inline constexpr std::uint32_t kSubcmdInvalid = 0x64004;
inline constexpr std::uint32_t kCommandInvalid = 0x64005;
inline constexpr std::uint32_t kParamInvalid = 0x64006;
}  // namespace mrpc_error
[[nodiscard]] std::string describeMrpcError(std::uint32_t code);

// --- device identity (GAS system info) ----------------------------------------------------------------
inline constexpr std::uint32_t kGasTopPartitionCount = 0x1007;
inline constexpr std::uint32_t kGasTopPartitionId = 0x1008;
inline constexpr std::uint32_t kGasDeviceId = 0x2000;
enum class Generation { kGen4, kGen5 };
// The product name of a PAX device id ("PAX 52XG4"), empty when the id is not a PAX.
[[nodiscard]] std::string paxModel(std::uint16_t deviceId);
[[nodiscard]] std::optional<Generation> paxGeneration(std::uint16_t deviceId);

// --- topology info dump (per chip: its physical ports, their type and link) --------------------------
enum class PortType : std::uint8_t { kUnused = 0, kFabric = 1, kEndpoint = 2, kHost = 3 };
struct PortInfo {
  std::uint8_t physPort = 0;
  PortType type = PortType::kUnused;
  std::uint8_t clockChannel = 0;
  std::uint8_t connector = 0;
  std::uint8_t cfgWidth = 16, negWidth = 16;
  std::uint8_t cfgRate = 4, negRate = 4;  // 1 = 2.5 GT/s ... 4 = Gen4 16 GT/s, 5 = Gen5 32 GT/s
  std::uint8_t majorLtssm = 3, minorLtssm = 1;  // Gen4 encoding: 3/1 is L0, 0/1 Detect (quiet)
};
struct TopoInfo {
  std::uint8_t switchIndex = 0;
  std::vector<PortInfo> ports;
};
inline constexpr std::uint8_t kTopoDumpStart = 1, kTopoDumpStatus = 2, kTopoDumpData = 3, kTopoDumpFinish = 4,
                              kTopoDumpDataGen5 = 5;
inline constexpr std::uint8_t kTopoDumpReady = 3;
inline constexpr std::size_t kTopoDataPerReply = 1000;
[[nodiscard]] Bytes encodeTopoInfo(const TopoInfo& info, Generation gen);
[[nodiscard]] Result<TopoInfo> decodeTopoInfo(std::span<const std::uint8_t> data, Generation gen);

// --- GFMS database ------------------------------------------------------------------------------------
enum class GfmsDump : std::uint8_t { kFabric = 0, kPaxAll = 1, kPax = 2, kHvd = 3, kFabPort = 4, kEpPort = 5, kHvdDetail = 6 };
inline constexpr std::uint32_t kDumpStart = 1, kDumpGet = 2, kDumpFinish = 3;
// Largest chunk a dump reply carries, in dwords with its 3-dword header (the vendor library caps EP port
// chunks at 0xf0).
inline constexpr std::uint32_t kDumpChunkDw = 0xf0;
inline constexpr int kFunctionsPerLogicalPort = 8;

struct Bar {
  std::uint8_t type = 0;  // 0x0c: 64-bit prefetchable memory
  std::uint8_t sizeLog2 = 0;
};
struct EpFunction {
  std::uint16_t functionId = 0;
  std::uint16_t pdfid = 0;  // the fabric-wide id binds name
  std::uint8_t sriovCapPf = 0, vfCount = 0;
  bool bound = false;
  std::uint8_t boundPaxId = 0, boundHvdPhysPort = 0, boundHvdLogPort = 0;
  std::uint16_t vendorId = 0, deviceId = 0, subVendorId = 0, subDeviceId = 0;
  std::uint32_t classCode = 0;  // 24 bits
  std::array<Bar, 6> bars{};
};
enum class EpPortKind : std::uint8_t { kEndpoint = 0, kSwitch = 1, kNone = 2 };
struct EpPort {
  std::uint8_t physPort = 0;
  EpPortKind kind = EpPortKind::kNone;
  std::uint16_t attachedDspEnumId = 0;
  std::vector<EpFunction> functions;  // kEndpoint: the device's functions (kSwitch is not modelled)
};
// One slot of a host's logical port: function j of what is bound there.
struct HvdSlot {
  bool bound = false;
  std::uint16_t pdfid = 0;
};
struct Hvd {  // a host virtual domain: one host's upstream port and its logical downstream ports
  std::uint8_t instance = 0;
  std::uint8_t physPort = 0;
  std::uint16_t hfid = 0;
  std::uint16_t logicalPorts = 0;
  std::vector<HvdSlot> slots;  // logicalPorts * 8, function-major: slot(f, l) = slots[f * logicalPorts + l]
  [[nodiscard]] const HvdSlot& slot(int function, int logicalPort) const {
    return slots.at(static_cast<std::size_t>(function * logicalPorts + logicalPort));
  }
  [[nodiscard]] HvdSlot& slot(int function, int logicalPort) {
    return slots.at(static_cast<std::size_t>(function * logicalPorts + logicalPort));
  }
};
struct SectionHeader {
  std::uint8_t sectionClass = 0;
  std::uint8_t paxIndex = 0;
  std::uint16_t swfid = 0;
};
struct PaxGeneral {
  SectionHeader header;
  std::uint8_t physPortCount = 0, hvdCount = 0;
  std::uint16_t epCount = 0, epFunctionCount = 0;
  std::uint16_t fidStart = 0, fidEnd = 0, hfidStart = 0, hfidEnd = 0, vdfidStart = 0, vdfidEnd = 0, pdfidStart = 0,
                pdfidEnd = 0;
  std::uint64_t rcPortMap = 0, epPortMap = 0, fabPortMap = 0, freePortMap = 0;
};
struct PaxAll {
  PaxGeneral general;
  std::vector<Hvd> hvds;
  std::vector<EpPort> epPorts;
};
struct FabricGeneral {
  SectionHeader header;
  // Per PAX index 0..15: how this chip reaches it (0 unicast, 1 broadcast, 2 unreachable).
  std::array<std::uint8_t, 16> reach{};
};
inline constexpr std::uint8_t kReachUnicast = 0, kReachBroadcast = 1, kReachUnreachable = 2;
struct FabPort {
  SectionHeader header;
  std::uint8_t physPort = 0;
  std::uint8_t attachedPhysPort = 0;
  std::uint8_t attachedSwitchIndex = 0;
  std::uint16_t attachedSwfid = 0;
  std::uint32_t attachedFwVersion = 0;
};

[[nodiscard]] Bytes encodePaxGeneral(const PaxGeneral& g);
[[nodiscard]] Result<PaxGeneral> decodePaxGeneral(std::span<const std::uint8_t> data);
[[nodiscard]] Bytes encodePaxAll(const PaxAll& all);
[[nodiscard]] Result<PaxAll> decodePaxAll(std::span<const std::uint8_t> data);
[[nodiscard]] Bytes encodeHvd(const SectionHeader& header, const Hvd& hvd);
[[nodiscard]] Result<Hvd> decodeHvd(std::span<const std::uint8_t> data);
[[nodiscard]] Bytes encodeEpPortSection(const SectionHeader& header, const EpPort& port);
[[nodiscard]] Bytes encodeFabricGeneral(const FabricGeneral& f);
[[nodiscard]] Result<FabricGeneral> decodeFabricGeneral(std::span<const std::uint8_t> data);
[[nodiscard]] Bytes encodeFabPort(const FabPort& p);
[[nodiscard]] Result<FabPort> decodeFabPort(std::span<const std::uint8_t> data);

// --- bind / unbind ------------------------------------------------------------------------------------
inline constexpr std::uint8_t kGfmsBind = 1, kGfmsUnbind = 2;
struct BindRequest {
  std::uint8_t hostSwitchIndex = 0, hostPhysPort = 0, hostLogPort = 0;
  std::vector<std::uint16_t> pdfids;  // 1..8 functions, bound as functions 0.. of the logical port
};
struct UnbindRequest {
  std::uint8_t hostSwitchIndex = 0, hostPhysPort = 0, hostLogPort = 0;
  std::uint16_t pdfid = 0;
  std::uint8_t option = 0;
};
[[nodiscard]] Bytes encodeBind(const BindRequest& r);
[[nodiscard]] Bytes encodeUnbind(const UnbindRequest& r);
// Either request (the first byte says which); an error for a malformed one.
struct BindOrUnbind {
  std::uint8_t subcommand = 0;
  BindRequest bind;
  UnbindRequest unbind;
};
[[nodiscard]] Result<BindOrUnbind> decodeBindUnbind(std::span<const std::uint8_t> data);

// --- GFMS events --------------------------------------------------------------------------------------
enum class GfmsEventCode : std::uint8_t {
  kHostLinkUp = 0,
  kHostLinkDown = 1,
  kDeviceAdd = 2,
  kDeviceDelete = 3,
  kFabricLinkUp = 4,
  kFabricLinkDown = 5,
  kBind = 6,
  kUnbind = 7,
  kDatabaseChanged = 8,
  kHvdEnable = 9,
  kHvdDisable = 10,
  kEpPortRemove = 11,
  kEpPortAdd = 12,
  kAer = 13,
};
struct GfmsEvent {
  GfmsEventCode code = GfmsEventCode::kDatabaseChanged;
  std::uint8_t sourceSwitch = 0;
  Bytes data;  // the event's own fields (up to 32 bytes); see physPortOf
};
// The physical port an event is about (host, device, EP port and AER events carry one), if any.
[[nodiscard]] std::optional<std::uint8_t> physPortOf(const GfmsEvent& e);
// AER events: whether the switch triggered DPC (the link is contained: the device is gone until reset).
[[nodiscard]] bool aerTriggeredDpc(const GfmsEvent& e);
struct EventBatch {
  std::vector<GfmsEvent> events;
  std::uint16_t remaining = 0;
  bool overflow = false;
};
[[nodiscard]] Bytes encodeEventBatch(const EventBatch& batch);
[[nodiscard]] Result<EventBatch> decodeEventBatch(std::span<const std::uint8_t> data);

// Every decoder above, run on arbitrary bytes: what the fuzz target and the corpus replay call.
void decodeAnything(std::span<const std::uint8_t> data);

}  // namespace switchyard::switchtec
