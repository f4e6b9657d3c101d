#include "fabric/cxl/fm_api.h"

#include <fmt/format.h>

namespace switchyard::cxl {
namespace {

using wire::ByteReader;
using wire::ByteWriter;

Result<void> shortReply(std::string_view what, std::size_t have, std::size_t need) {
  return fail(Code::kUnavailable, fmt::format("{} reply of {} bytes, {} expected", what, have, need));
}

}  // namespace

std::string_view toString(Opcode op) {
  switch (op) {
    case Opcode::kBackgroundOperationStatus: return "Background Operation Status";
    case Opcode::kIdentifySwitchDevice: return "Identify Switch Device";
    case Opcode::kGetPhysicalPortState: return "Get Physical Port State";
    case Opcode::kPpbConfigRequest: return "Send PPB CXL.io Configuration Request";
    case Opcode::kGetVirtualSwitchInfo: return "Get Virtual CXL Switch Info";
    case Opcode::kBindVppb: return "Bind vPPB";
    case Opcode::kUnbindVppb: return "Unbind vPPB";
    case Opcode::kTunnelManagementCommand: return "Tunnel Management Command";
    case Opcode::kGetLdInfo: return "Get LD Info";
    case Opcode::kGetLdAllocations: return "Get LD Allocations";
    case Opcode::kSetLdAllocations: return "Set LD Allocations";
  }
  return "command";
}

std::string describeReturnCode(std::uint16_t code) {
  static constexpr std::string_view kNames[] = {"success", "background operation started", "invalid input", "unsupported",
                                                "internal error", "retry required", "busy", "media disabled"};
  if (code < std::size(kNames)) return fmt::format("{:04x}h ({})", code, kNames[code]);
  return fmt::format("{:04x}h", code);
}

Result<Dialect> parseDialect(std::string_view name) {
  if (name == "spec") return Dialect::spec();
  if (name == "jackrabbit") return Dialect::jackrabbit();
  return fail(Code::kInvalidArgument, fmt::format("'{}' is not a CXL FM-API dialect (spec, or jackrabbit for Jackrabbit Labs' cse)", name));
}

Bytes encodeRequest(Opcode opcode, std::uint8_t tag, std::span<const std::uint8_t> payload) {
  ByteWriter w;
  const auto length = static_cast<std::uint32_t>(payload.size());
  w.u8(0x00).u8(tag).u8(0).u16(static_cast<std::uint16_t>(opcode));
  w.u8(static_cast<std::uint8_t>(length)).u8(static_cast<std::uint8_t>(length >> 8)).u8(static_cast<std::uint8_t>((length >> 16) & 0x1f));
  w.u16(0).u16(0).bytes(payload);
  return w.take();
}

Bytes encodeResponse(const CciMessage& m, const Dialect& dialect) {
  ByteWriter w;
  const auto length = static_cast<std::uint32_t>(m.payload.size());
  const std::uint8_t high = static_cast<std::uint8_t>((length >> 16) & 0x1f);
  if (dialect.categoryInHighNibble) {
    w.u8(0x10).u8(m.tag).u8(0).u16(m.opcode);
    w.u8(static_cast<std::uint8_t>(length)).u8(static_cast<std::uint8_t>(length >> 8)).u8(static_cast<std::uint8_t>((high << 3) | (m.background ? 1 : 0)));
  } else {
    w.u8(0x01).u8(m.tag).u8(0).u16(m.opcode);
    w.u8(static_cast<std::uint8_t>(length)).u8(static_cast<std::uint8_t>(length >> 8)).u8(static_cast<std::uint8_t>(high | (m.background ? 0x80 : 0)));
  }
  w.u16(m.returnCode).u16(m.vendorStatus).bytes(m.payload);
  return w.take();
}

Result<CciMessage> decodeMessage(std::span<const std::uint8_t> bytes, const Dialect& dialect) {
  if (bytes.size() < kCciHeaderSize) return fail(Code::kUnavailable, fmt::format("CCI message of {} bytes: shorter than its 12-byte header", bytes.size()));
  ByteReader r(bytes);
  const std::uint8_t first = r.u8();
  CciMessage m;
  m.tag = r.u8();
  r.skip(1);
  m.opcode = r.u16();
  const std::uint32_t low = r.u16();
  const std::uint8_t flags = r.u8();
  std::uint32_t length = 0;
  const std::uint8_t category = dialect.categoryInHighNibble ? (first >> 4) : (first & 0x0f);
  const std::uint8_t otherCategory = dialect.categoryInHighNibble ? (first & 0x0f) : (first >> 4);
  if (dialect.categoryInHighNibble) {
    length = low | (static_cast<std::uint32_t>(flags >> 3) << 16);
    m.background = flags & 1;
  } else {
    length = low | (static_cast<std::uint32_t>(flags & 0x1f) << 16);
    m.background = flags & 0x80;
  }
  if (category > 1 || (category == 0 && otherCategory == 1))
    return fail(Code::kUnavailable,
                fmt::format("CCI message starts {:02x}h: the message category is where the {} dialect puts it{}", first,
                            dialect.categoryInHighNibble ? "spec's" : "jackrabbit",
                            dialect.categoryInHighNibble ? "" : " (Jackrabbit Labs' cse: run with the jackrabbit dialect)"));
  m.response = category == 1;
  m.returnCode = r.u16();
  m.vendorStatus = r.u16();
  if (bytes.size() - kCciHeaderSize < length) {
    const bool cut = dialect.dropsByteOfFullPackets && (kCciHeaderSize + length) % 64 == 0 && bytes.size() - kCciHeaderSize + 1 == length;
    return fail(Code::kUnavailable, fmt::format("CCI message says {} payload bytes and carries {}{}", length, bytes.size() - kCciHeaderSize,
                                                cut ? " (cse drops the last byte of a message of a multiple of 64 bytes: a known quirk of its "
                                                      "MCTP packetizer; the request should have been shaped to avoid that length)"
                                                    : ""));
  }
  const auto payload = r.take(length);
  m.payload.assign(payload.begin(), payload.end());
  return m;
}

Bytes getPhysicalPortStateRequest(std::span<const std::uint8_t> ports) {
  ByteWriter w;
  w.u8(static_cast<std::uint8_t>(ports.size())).bytes(ports);
  return w.take();
}

Bytes ppbConfigReadRequest(std::uint8_t port, std::uint16_t byteOffset, const Dialect& dialect) {
  const std::uint16_t reg = dialect.configByteOffset ? byteOffset : static_cast<std::uint16_t>(byteOffset >> 2);
  ByteWriter w;
  w.u8(port).u8(static_cast<std::uint8_t>(reg)).u8(static_cast<std::uint8_t>(((reg >> 8) & 0x0f) | 0xf0)).u8(0x00).u32(0);
  return w.take();
}

Bytes getVirtualSwitchInfoRequest(std::span<const std::uint8_t> vcss, std::uint8_t startVppb, std::uint8_t vppbLimit) {
  ByteWriter w;
  w.u8(startVppb).u8(vppbLimit).u8(static_cast<std::uint8_t>(vcss.size())).bytes(vcss);
  return w.take();
}

Bytes bindVppbRequest(std::uint8_t vcs, std::uint8_t vppb, std::uint8_t port, std::uint16_t ld) {
  ByteWriter w;
  w.u8(vcs).u8(vppb).u8(port).u8(0).u16(ld);
  return w.take();
}

Bytes unbindVppbRequest(std::uint8_t vcs, std::uint8_t vppb, UnbindOption option) {
  ByteWriter w;
  w.u8(vcs).u8(vppb).u8(static_cast<std::uint8_t>(option));
  return w.take();
}

Bytes tunnelRequest(std::uint8_t port, std::span<const std::uint8_t> inner, const Dialect& dialect) {
  ByteWriter w;
  const std::size_t size = inner.size() + (dialect.tunnelTypeByte ? 1 : 0);
  w.u8(port).u8(0).u16(static_cast<std::uint16_t>(size));
  if (dialect.tunnelTypeByte) w.u8(kMctpTypeCci);
  w.bytes(inner);
  return w.take();
}

Bytes getLdAllocationsRequest(std::uint8_t startLd, std::uint8_t limit) {
  ByteWriter w;
  w.u8(startLd).u8(limit);
  return w.take();
}

Bytes setLdAllocationsRequest(std::uint8_t startLd, std::span<const LdAllocation> allocations) {
  ByteWriter w;
  w.u8(static_cast<std::uint8_t>(allocations.size())).u8(startLd).u16(0);
  for (const auto& a : allocations) w.u64(a.range1).u64(a.range2);
  return w.take();
}

Result<SwitchIdentity> parseIdentifySwitch(std::span<const std::uint8_t> payload) {
  if (payload.size() < 73) return fail(shortReply("Identify Switch Device", payload.size(), 73).error());
  ByteReader r(payload);
  SwitchIdentity id;
  id.ingressPort = r.u8();
  r.skip(1);
  id.numPorts = r.u8();
  id.numVcss = r.u8();
  const auto ports = r.take(32);
  std::copy(ports.begin(), ports.end(), id.activePorts.begin());
  const auto vcss = r.take(32);
  std::copy(vcss.begin(), vcss.end(), id.activeVcss.begin());
  id.numVppbs = r.u16();
  id.activeVppbs = r.u16();
  id.hdmDecoders = r.u8();
  return id;
}

Result<std::vector<PortState>> parsePhysicalPortState(std::span<const std::uint8_t> payload) {
  if (payload.size() < 4) return fail(shortReply("Get Physical Port State", payload.size(), 4).error());
  const std::size_t count = payload[0];
  if (payload.size() < 4 + 16 * count) return fail(shortReply("Get Physical Port State", payload.size(), 4 + 16 * count).error());
  std::vector<PortState> ports;
  ports.reserve(count);
  ByteReader r(payload.subspan(4));
  for (std::size_t i = 0; i < count; ++i) {
    PortState p;
    p.port = r.u8();
    p.configState = r.u8();
    p.deviceCxlVersion = r.u8();
    r.skip(1);
    p.deviceType = r.u8();
    r.skip(1);  // the port's CXL versions
    p.maxLinkWidth = r.u8();
    p.negotiatedLinkWidth = r.u8();
    r.skip(1);  // supported speeds
    p.maxLinkSpeed = r.u8();
    p.currentLinkSpeed = r.u8();
    p.ltssm = r.u8();
    r.skip(3);  // first lane, link state flags
    p.ldCount = r.u8();
    ports.push_back(p);
  }
  return ports;
}

Result<std::vector<VirtualSwitch>> parseVirtualSwitchInfo(std::span<const std::uint8_t> payload, std::uint8_t vppbLimit) {
  if (payload.size() < 4) return fail(shortReply("Get Virtual CXL Switch Info", payload.size(), 4).error());
  const std::size_t count = payload[0];
  ByteReader r(payload.subspan(4));
  std::vector<VirtualSwitch> vcss;
  for (std::size_t i = 0; i < count; ++i) {
    VirtualSwitch v;
    v.id = r.u8();
    v.state = r.u8();
    v.upstreamPort = r.u8();
    const std::size_t total = r.u8();
    const std::size_t blocks = std::min<std::size_t>(total, vppbLimit);
    if (!r.ok() || r.remaining() < 4 * blocks)
      return fail(Code::kUnavailable, fmt::format("Get Virtual CXL Switch Info reply ends inside VCS {} of {}", i, count));
    for (std::size_t k = 0; k < blocks; ++k) {
      Vppb b;
      b.status = r.u8();
      b.port = r.u8();
      b.ld = r.u8();
      r.skip(1);
      if (b.status > 3) return fail(Code::kUnavailable, fmt::format("VCS {} vPPB {}: binding status {} is not one CXL defines", v.id, k, b.status));
      v.vppbs.push_back(b);
    }
    vcss.push_back(std::move(v));
  }
  return vcss;
}

Result<BackgroundOperation> parseBackgroundOperationStatus(std::span<const std::uint8_t> payload) {
  if (payload.size() < 8) return fail(shortReply("Background Operation Status", payload.size(), 8).error());
  ByteReader r(payload);
  BackgroundOperation b;
  const std::uint8_t status = r.u8();
  b.running = status & 1;
  b.percent = status >> 1;
  r.skip(1);
  b.opcode = r.u16();
  b.returnCode = r.u16();
  b.vendorStatus = r.u16();
  if (b.percent > 100) return fail(Code::kUnavailable, fmt::format("Background Operation Status says {}% complete", b.percent));
  return b;
}

Result<std::uint32_t> parsePpbConfigRead(std::span<const std::uint8_t> payload) {
  if (payload.size() < 4) return fail(shortReply("Send PPB CXL.io Configuration Request", payload.size(), 4).error());
  return ByteReader(payload).u32();
}

Result<Bytes> parseTunnelResponse(std::span<const std::uint8_t> payload, const Dialect& dialect) {
  if (payload.size() < 4) return fail(shortReply("Tunnel Management Command", payload.size(), 4).error());
  ByteReader r(payload);
  std::size_t length = r.u16();
  r.skip(2);
  if (r.remaining() < length)
    return fail(Code::kUnavailable, fmt::format("Tunnel Management Command reply says {} bytes and carries {}", length, r.remaining()));
  auto inner = r.take(length);
  if (dialect.tunnelTypeByte) {
    if (inner.empty() || inner[0] != kMctpTypeCci)
      return fail(Code::kUnavailable, "Tunnel Management Command reply lacks the MCTP type byte the jackrabbit dialect puts first");
    inner = inner.subspan(1);
  }
  return Bytes(inner.begin(), inner.end());
}

Result<LdInfo> parseLdInfo(std::span<const std::uint8_t> payload) {
  if (payload.size() < 11) return fail(shortReply("Get LD Info", payload.size(), 11).error());
  ByteReader r(payload);
  LdInfo info;
  info.memorySize = r.u64();
  info.ldCount = r.u16();
  if (info.ldCount > 16) return fail(Code::kUnavailable, fmt::format("Get LD Info says {} LDs; an MLD has at most 16", info.ldCount));
  return info;
}

Result<LdAllocations> parseLdAllocations(std::span<const std::uint8_t> payload) {
  if (payload.size() < 4) return fail(shortReply("Get LD Allocations", payload.size(), 4).error());
  ByteReader r(payload);
  LdAllocations a;
  a.totalLds = r.u8();
  const std::uint8_t granularity = r.u8();
  a.startLd = r.u8();
  const std::size_t count = r.u8();
  if (granularity > 2) return fail(Code::kUnavailable, fmt::format("Get LD Allocations: memory granularity code {} is not one CXL defines", granularity));
  a.granularity = (256ull << 20) << granularity;
  if (count > 16 || r.remaining() < 16 * count)
    return fail(Code::kUnavailable, fmt::format("Get LD Allocations reply says {} LDs and carries {} bytes of them", count, r.remaining()));
  for (std::size_t i = 0; i < count; ++i) a.lds.push_back({r.u64(), r.u64()});
  return a;
}

}  // namespace switchyard::cxl
