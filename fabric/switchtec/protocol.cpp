#include "fabric/switchtec/protocol.h"

#include <fmt/format.h>

namespace switchyard::switchtec {
namespace {

constexpr std::size_t kSectionHeaderSize = 12;
constexpr std::size_t kPaxGeneralSize = 80;
constexpr std::size_t kFabricGeneralSize = 88;
constexpr std::size_t kFabPortSize = 32;
constexpr std::size_t kFunctionSize = 36;
constexpr std::size_t kPortInfoSize = 32;
constexpr std::size_t kHvdBodyHeader = 8;
constexpr std::size_t kMaxTopoPorts = 60;

Error malformed(std::string_view what) { return Error{Code::kUnavailable, fmt::format("malformed Switchtec reply: {}", what)}; }

void writeSection(ByteWriter& w, const SectionHeader& h, std::uint32_t sizeDw) {
  w.u8(h.sectionClass).u8(h.paxIndex).u16(h.swfid).u32(sizeDw).u32(0);
}
struct ReadSection {
  SectionHeader header;
  std::uint32_t sizeDw = 0;
};
ReadSection readSection(ByteReader& r) {
  ReadSection s;
  s.header.sectionClass = r.u8();
  s.header.paxIndex = r.u8();
  s.header.swfid = r.u16();
  s.sizeDw = r.u32();
  r.skip(4);
  return s;
}

void writeFunction(ByteWriter& w, const EpFunction& f) {
  w.u16(f.functionId).u16(f.pdfid).u8(f.sriovCapPf).u8(f.vfCount).u16(0);
  w.u8(f.bound ? 1 : 0).u8(f.boundPaxId).u8(f.boundHvdPhysPort).u8(f.boundHvdLogPort);
  w.u16(f.vendorId).u16(f.deviceId).u16(f.subVendorId).u16(f.subDeviceId);
  std::uint8_t barCount = 0;
  for (const auto& b : f.bars)
    if (b.sizeLog2) ++barCount;
  w.u32((f.classCode & 0xffffff) | (static_cast<std::uint32_t>(barCount) << 24));
  for (const auto& b : f.bars) w.u8(b.type).u8(b.sizeLog2);
}
EpFunction readFunction(ByteReader& r) {
  EpFunction f;
  f.functionId = r.u16();
  f.pdfid = r.u16();
  f.sriovCapPf = r.u8();
  f.vfCount = r.u8();
  r.skip(2);
  f.bound = r.u8() != 0;
  f.boundPaxId = r.u8();
  f.boundHvdPhysPort = r.u8();
  f.boundHvdLogPort = r.u8();
  f.vendorId = r.u16();
  f.deviceId = r.u16();
  f.subVendorId = r.u16();
  f.subDeviceId = r.u16();
  f.classCode = r.u32() & 0xffffff;
  for (auto& b : f.bars) {
    b.type = r.u8();
    b.sizeLog2 = r.u8();
  }
  return f;
}

std::uint32_t epPortSizeDw(const EpPort& p) {
  if (p.kind != EpPortKind::kEndpoint) return 2;
  return 2 + 2 + static_cast<std::uint32_t>(p.functions.size() * kFunctionSize / 4);
}
void writeEpPort(ByteWriter& w, const EpPort& p) {
  const auto kind = p.kind == EpPortKind::kEndpoint ? EpPortKind::kEndpoint : EpPortKind::kNone;  // switches: not modelled
  w.u8(static_cast<std::uint8_t>(kind)).u8(p.physPort).u16(kind == EpPortKind::kEndpoint ? 1 : 0).u32(epPortSizeDw(p));
  if (kind != EpPortKind::kEndpoint) return;
  w.u16(static_cast<std::uint16_t>(p.functions.size())).u16(p.attachedDspEnumId).u32(epPortSizeDw(p) - 2);
  for (const auto& f : p.functions) writeFunction(w, f);
}
Result<EpPort> readEpPort(ByteReader& r) {
  EpPort p;
  const auto start = r.position();
  const auto type = r.u8();
  p.physPort = r.u8();
  r.skip(2);  // ep_count
  const auto sizeDw = r.u32() & 0xffffff;
  if (!r.ok() || sizeDw < 2) return fail(malformed("EP port header"));
  if (type == static_cast<std::uint8_t>(EpPortKind::kEndpoint)) {
    p.kind = EpPortKind::kEndpoint;
    const auto functions = r.u16();
    p.attachedDspEnumId = r.u16();
    const auto epDw = r.u32() & 0xffffff;
    if (!r.ok() || epDw < 2 || (epDw - 2) * 4 != static_cast<std::size_t>(functions) * kFunctionSize || epDw + 2 != sizeDw)
      return fail(malformed(fmt::format("EP port {}: sizes disagree", p.physPort)));
    for (int i = 0; i < functions; ++i) p.functions.push_back(readFunction(r));
  } else if (type == static_cast<std::uint8_t>(EpPortKind::kSwitch)) {
    p.kind = EpPortKind::kSwitch;  // a switch below a PAX port: its endpoints are not modelled; skip it whole
    r.skip(sizeDw * 4 - 8);
  } else if (type == static_cast<std::uint8_t>(EpPortKind::kNone)) {
    p.kind = EpPortKind::kNone;
    r.skip(sizeDw * 4 - 8);
  } else {
    return fail(malformed(fmt::format("EP port {}: attachment type {}", p.physPort, type)));
  }
  if (!r.ok() || r.position() - start != sizeDw * 4) return fail(malformed(fmt::format("EP port {} is cut short", p.physPort)));
  return p;
}

void writeHvdBody(ByteWriter& w, const Hvd& h) {
  w.u8(h.instance).u8(h.physPort).u16(h.hfid).u16(h.logicalPorts).u16(0);
  for (int f = 0; f < kFunctionsPerLogicalPort; ++f)
    for (int l = 0; l < h.logicalPorts; ++l) {
      const auto& s = h.slot(f, l);
      w.u8(static_cast<std::uint8_t>(l)).u8(s.bound ? 1 : 0).u16(s.bound ? s.pdfid : 0);
    }
}
Result<Hvd> readHvdBody(ByteReader& r, std::size_t available) {
  Hvd h;
  h.instance = r.u8();
  h.physPort = r.u8();
  h.hfid = r.u16();
  h.logicalPorts = r.u16();
  r.skip(2);
  const std::size_t slots = static_cast<std::size_t>(h.logicalPorts) * kFunctionsPerLogicalPort;
  if (!r.ok() || h.logicalPorts > 256 || kHvdBodyHeader + slots * 4 > available)
    return fail(malformed(fmt::format("HVD {}: {} logical ports do not fit its section", h.instance, h.logicalPorts)));
  h.slots.resize(slots);
  for (auto& s : h.slots) {
    r.skip(1);  // logical port id: implied by the position
    s.bound = r.u8() != 0;
    s.pdfid = r.u16();
  }
  if (!r.ok()) return fail(malformed("HVD cut short"));
  return h;
}
std::uint32_t hvdBodyDw(const Hvd& h) { return static_cast<std::uint32_t>(2 + h.logicalPorts * kFunctionsPerLogicalPort); }

}  // namespace

Bytes encodeHeader(const EthHeader& h) {
  ByteWriter w;
  w.be32(kEthSignature).u8(kEthVersion).u8(0).u8(static_cast<std::uint8_t>(h.function)).u8(static_cast<std::uint8_t>(h.packet));
  w.u8(h.serviceInstance).u8(h.serviceType).be16(h.payloadBytes).be16(h.outputBytes).u16(0);
  return w.take();
}

Result<EthHeader> decodeHeader(std::span<const std::uint8_t> bytes) {
  ByteReader r(bytes);
  const auto signature = r.be32();
  const auto version = r.u8();
  r.skip(1);
  EthHeader h;
  h.function = static_cast<EthFunction>(r.u8());
  h.packet = static_cast<EthPacket>(r.u8());
  h.serviceInstance = r.u8();
  h.serviceType = r.u8();
  h.payloadBytes = r.be16();
  h.outputBytes = r.be16();
  if (!r.ok()) return fail(malformed("short transport header"));
  if (signature != kEthSignature) return fail(malformed(fmt::format("transport signature {:#x} is not Switchtec's", signature)));
  if (version != kEthVersion) return fail(malformed(fmt::format("transport version {}", version)));
  if (h.packet != EthPacket::kOpen && h.packet != EthPacket::kCommand)
    return fail(malformed(fmt::format("packet type {:#x}", static_cast<int>(h.packet))));
  return h;
}

std::string describeMrpcError(std::uint32_t code) {
  switch (code) {
    case mrpc_error::kPhysPortAlreadyBound: return "physical port already bound";
    case mrpc_error::kLogicalPortAlreadyBound: return "logical port already bound";
    case mrpc_error::kPartitionNotExist: return "partition does not exist";
    case mrpc_error::kPhysPortNotExist: return "physical port does not exist";
    case mrpc_error::kPhysPortDisabled: return "physical port disabled";
    case mrpc_error::kNoLogicalPort: return "no logical port left";
    case mrpc_error::kBindInProgress: return "a bind is in progress";
    case mrpc_error::kBindTargetIsUsp: return "bind target is an upstream port";
    case mrpc_error::kBindSubcmdInvalid: return "invalid bind subcommand";
    case mrpc_error::kLogicalPortNotBound: return "logical port not bound to the physical port";
    case mrpc_error::kBindCheckFail: return "bind check failed";
    case mrpc_error::kSubcmdInvalid: return "invalid subcommand";
    case mrpc_error::kCommandInvalid: return "invalid command";
    case mrpc_error::kParamInvalid: return "invalid parameter";
    default: return fmt::format("MRPC error {:#x}", code);
  }
}

std::string paxModel(std::uint16_t deviceId) {
  const int gen = deviceId >> 12;
  const int variant = (deviceId >> 8) & 0xf;
  if ((gen != 4 && gen != 5) || (variant != 2 && variant != 5)) return {};
  const int hi = (deviceId >> 4) & 0xf, lo = deviceId & 0xf;
  if (hi > 9 || lo > 9) return {};
  const int lanes = hi * 10 + lo == 0 ? 100 : hi * 10 + lo;
  return fmt::format("{} {}XG{}", variant == 2 ? "PAX" : (gen == 4 ? "PAXA" : "PAX-A"), lanes, gen);
}

std::optional<Generation> paxGeneration(std::uint16_t deviceId) {
  if (paxModel(deviceId).empty()) return std::nullopt;
  return (deviceId >> 12) == 4 ? Generation::kGen4 : Generation::kGen5;
}

Bytes encodeTopoInfo(const TopoInfo& info, Generation gen) {
  ByteWriter w;
  w.u8(info.switchIndex).zeros(3);
  w.zeros(gen == Generation::kGen4 ? 7 * 4 : 8 * 4);  // stack bifurcation
  w.zeros(16);                                       // route ports
  w.padTo(gen == Generation::kGen4 ? 48 : 56);
  std::uint64_t bitmap = 0;
  for (const auto& p : info.ports)
    if (p.physPort < 64) bitmap |= std::uint64_t{1} << p.physPort;
  w.u64(bitmap);
  for (const auto& p : info.ports) {
    w.u8(p.physPort).u8(static_cast<std::uint8_t>(p.type)).u8(p.clockChannel).u8(p.connector);
    for (int g = 0; g < 5; ++g) w.u16(0xffff).u8(0).u8(0);  // connector GPIOs: unused
    w.u8(p.cfgWidth).u8(p.negWidth).u8(p.cfgRate).u8(p.negRate).u8(p.majorLtssm).u8(p.minorLtssm).u16(0);
  }
  return w.take();
}

Result<TopoInfo> decodeTopoInfo(std::span<const std::uint8_t> data, Generation gen) {
  const std::size_t listAt = gen == Generation::kGen4 ? 56 : 64;
  if (data.size() < listAt || (data.size() - listAt) % kPortInfoSize != 0 || (data.size() - listAt) / kPortInfoSize > kMaxTopoPorts)
    return fail(malformed(fmt::format("topology info of {} bytes", data.size())));
  ByteReader r(data);
  TopoInfo info;
  info.switchIndex = r.u8();
  r.skip(listAt - 1);
  while (r.remaining() >= kPortInfoSize) {
    PortInfo p;
    p.physPort = r.u8();
    p.type = static_cast<PortType>(r.u8());
    p.clockChannel = r.u8();
    p.connector = r.u8();
    r.skip(20);
    p.cfgWidth = r.u8();
    p.negWidth = r.u8();
    p.cfgRate = r.u8();
    p.negRate = r.u8();
    p.majorLtssm = r.u8();
    p.minorLtssm = r.u8();
    r.skip(2);
    if (p.physPort == 0xff) break;
    info.ports.push_back(p);
  }
  return info;
}

Bytes encodePaxGeneral(const PaxGeneral& g) {
  ByteWriter w;
  writeSection(w, g.header, kPaxGeneralSize / 4);
  w.u8(g.physPortCount).u8(g.hvdCount).u16(g.epCount).u16(g.epFunctionCount).u16(0).zeros(12);
  w.u16(g.fidStart).u16(g.fidEnd).u16(g.hfidStart).u16(g.hfidEnd).u16(g.vdfidStart).u16(g.vdfidEnd).u16(g.pdfidStart).u16(g.pdfidEnd);
  w.u64(g.rcPortMap).u64(g.epPortMap).u64(g.fabPortMap).u64(g.freePortMap);
  return w.take();
}

Result<PaxGeneral> decodePaxGeneral(std::span<const std::uint8_t> data) {
  if (data.size() < kPaxGeneralSize) return fail(malformed("PAX general section cut short"));
  ByteReader r(data);
  PaxGeneral g;
  g.header = readSection(r).header;
  g.physPortCount = r.u8();
  g.hvdCount = r.u8();
  g.epCount = r.u16();
  g.epFunctionCount = r.u16();
  r.skip(14);
  g.fidStart = r.u16();
  g.fidEnd = r.u16();
  g.hfidStart = r.u16();
  g.hfidEnd = r.u16();
  g.vdfidStart = r.u16();
  g.vdfidEnd = r.u16();
  g.pdfidStart = r.u16();
  g.pdfidEnd = r.u16();
  g.rcPortMap = r.u64();
  g.epPortMap = r.u64();
  g.fabPortMap = r.u64();
  g.freePortMap = r.u64();
  return g;
}

Bytes encodePaxAll(const PaxAll& all) {
  ByteWriter w;
  w.bytes(encodePaxGeneral(all.general));
  std::uint32_t hvdDw = kSectionHeaderSize / 4;
  for (const auto& h : all.hvds) hvdDw += hvdBodyDw(h);
  writeSection(w, all.general.header, hvdDw);
  for (const auto& h : all.hvds) writeHvdBody(w, h);
  std::uint32_t epDw = kSectionHeaderSize / 4;
  for (const auto& p : all.epPorts) epDw += epPortSizeDw(p);
  writeSection(w, all.general.header, epDw);
  for (const auto& p : all.epPorts) writeEpPort(w, p);
  return w.take();
}

Result<PaxAll> decodePaxAll(std::span<const std::uint8_t> data) {
  PaxAll all;
  SY_ASSIGN(all.general, decodePaxGeneral(data));
  ByteReader r(data.subspan(kPaxGeneralSize));
  const auto hvdSection = readSection(r);
  if (!r.ok() || hvdSection.sizeDw < 3 || static_cast<std::size_t>(hvdSection.sizeDw) * 4 - kSectionHeaderSize > r.remaining())
    return fail(malformed("HVD section size"));
  std::size_t hvdLeft = static_cast<std::size_t>(hvdSection.sizeDw) * 4 - kSectionHeaderSize;
  while (hvdLeft > 0) {
    const auto before = r.position();
    SY_ASSIGN(auto h, readHvdBody(r, hvdLeft));
    all.hvds.push_back(std::move(h));
    hvdLeft -= r.position() - before;
  }
  const auto epSection = readSection(r);
  if (!r.ok() || epSection.sizeDw < 3 || static_cast<std::size_t>(epSection.sizeDw) * 4 - kSectionHeaderSize != r.remaining())
    return fail(malformed("EP port section size"));
  while (r.remaining() > 0) {
    SY_ASSIGN(auto p, readEpPort(r));
    all.epPorts.push_back(std::move(p));
  }
  return all;
}

Bytes encodeHvd(const SectionHeader& header, const Hvd& hvd) {
  ByteWriter w;
  writeSection(w, header, kSectionHeaderSize / 4 + hvdBodyDw(hvd));
  writeHvdBody(w, hvd);
  return w.take();
}

Result<Hvd> decodeHvd(std::span<const std::uint8_t> data) {
  ByteReader r(data);
  const auto s = readSection(r);
  if (!r.ok() || static_cast<std::size_t>(s.sizeDw) * 4 != data.size()) return fail(malformed("HVD section size"));
  return readHvdBody(r, r.remaining());
}

Bytes encodeEpPortSection(const SectionHeader& header, const EpPort& port) {
  ByteWriter w;
  writeSection(w, header, kSectionHeaderSize / 4 + epPortSizeDw(port));
  writeEpPort(w, port);
  return w.take();
}

Bytes encodeFabricGeneral(const FabricGeneral& f) {
  ByteWriter w;
  writeSection(w, f.header, kFabricGeneralSize / 4);
  w.zeros(12);
  for (std::size_t i = 0; i < f.reach.size(); ++i) w.u8(static_cast<std::uint8_t>(i)).u8(f.reach[i]).u16(0);
  return w.take();
}

Result<FabricGeneral> decodeFabricGeneral(std::span<const std::uint8_t> data) {
  if (data.size() < kFabricGeneralSize) return fail(malformed("fabric general section cut short"));
  ByteReader r(data);
  FabricGeneral f;
  f.header = readSection(r).header;
  r.skip(12);
  for (auto& reach : f.reach) {
    r.skip(1);
    reach = r.u8();
    r.skip(2);
  }
  return f;
}

Bytes encodeFabPort(const FabPort& p) {
  ByteWriter w;
  writeSection(w, p.header, kFabPortSize / 4);
  w.u8(p.physPort).zeros(3).u8(p.attachedPhysPort).u8(p.attachedSwitchIndex).u16(p.attachedSwfid).u32(p.attachedFwVersion).zeros(8);
  return w.take();
}

Result<FabPort> decodeFabPort(std::span<const std::uint8_t> data) {
  if (data.size() < kFabPortSize) return fail(malformed("fabric port section cut short"));
  ByteReader r(data);
  FabPort p;
  p.header = readSection(r).header;
  p.physPort = r.u8();
  r.skip(3);
  p.attachedPhysPort = r.u8();
  p.attachedSwitchIndex = r.u8();
  p.attachedSwfid = r.u16();
  p.attachedFwVersion = r.u32();
  return p;
}

Bytes encodeBind(const BindRequest& req) {
  ByteWriter w;
  w.u8(kGfmsBind).u8(req.hostSwitchIndex).u8(req.hostPhysPort).u8(req.hostLogPort);
  for (std::size_t i = 0; i < static_cast<std::size_t>(kFunctionsPerLogicalPort); ++i) {
    const bool present = i < req.pdfids.size();
    w.u16(present ? req.pdfids[i] : 0).u8(i + 1 < req.pdfids.size() ? 1 : 0).u8(0);
  }
  return w.take();
}

Bytes encodeUnbind(const UnbindRequest& req) {
  ByteWriter w;
  w.u8(kGfmsUnbind).u8(req.hostSwitchIndex).u8(req.hostPhysPort).u8(req.hostLogPort).u16(req.pdfid).u8(req.option).u8(0);
  return w.take();
}

Result<BindOrUnbind> decodeBindUnbind(std::span<const std::uint8_t> data) {
  ByteReader r(data);
  BindOrUnbind out;
  out.subcommand = r.u8();
  if (out.subcommand == kGfmsBind) {
    out.bind.hostSwitchIndex = r.u8();
    out.bind.hostPhysPort = r.u8();
    out.bind.hostLogPort = r.u8();
    for (int i = 0; i < kFunctionsPerLogicalPort; ++i) {
      const auto pdfid = r.u16();
      const bool next = r.u8() != 0;
      r.skip(1);
      if (!r.ok()) return fail(Code::kInvalidArgument, "bind request cut short");
      out.bind.pdfids.push_back(pdfid);
      if (!next) break;
    }
  } else if (out.subcommand == kGfmsUnbind) {
    out.unbind.hostSwitchIndex = r.u8();
    out.unbind.hostPhysPort = r.u8();
    out.unbind.hostLogPort = r.u8();
    out.unbind.pdfid = r.u16();
    out.unbind.option = r.u8();
    if (!r.ok()) return fail(Code::kInvalidArgument, "unbind request cut short");
  } else {
    return fail(Code::kInvalidArgument, fmt::format("bind/unbind subcommand {}", out.subcommand));
  }
  return out;
}

std::optional<std::uint8_t> physPortOf(const GfmsEvent& e) {
  ByteReader r(e.data);
  switch (e.code) {
    case GfmsEventCode::kHostLinkUp:
    case GfmsEventCode::kHostLinkDown:
    case GfmsEventCode::kDeviceAdd:
    case GfmsEventCode::kDeviceDelete:
    case GfmsEventCode::kAer: {
      const auto port = r.u16();
      if (r.ok() && port < 256) return static_cast<std::uint8_t>(port);
      return std::nullopt;
    }
    case GfmsEventCode::kEpPortAdd:
    case GfmsEventCode::kEpPortRemove: {
      const auto port = r.u8();
      if (r.ok()) return port;
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

bool aerTriggeredDpc(const GfmsEvent& e) { return e.code == GfmsEventCode::kAer && e.data.size() >= 3 && (e.data[2] & 0x02) != 0; }

Bytes encodeEventBatch(const EventBatch& batch) {
  ByteWriter w;
  w.u16(static_cast<std::uint16_t>(batch.events.size())).u16(static_cast<std::uint16_t>((batch.remaining & 0x7fff) | (batch.overflow ? 0x8000 : 0)));
  for (const auto& e : batch.events) {
    w.u16(static_cast<std::uint16_t>(4 + e.data.size())).u8(static_cast<std::uint8_t>(e.code)).u8(e.sourceSwitch).bytes(e.data);
  }
  return w.take();
}

Result<EventBatch> decodeEventBatch(std::span<const std::uint8_t> data) {
  ByteReader r(data);
  EventBatch batch;
  const auto count = r.u16();
  const auto flags = r.u16();
  batch.remaining = flags & 0x7fff;
  batch.overflow = (flags & 0x8000) != 0;
  if (!r.ok()) return fail(malformed("event reply cut short"));
  for (int i = 0; i < count; ++i) {
    const auto length = r.u16();
    GfmsEvent e;
    e.code = static_cast<GfmsEventCode>(r.u8());
    e.sourceSwitch = r.u8();
    if (!r.ok() || length < 4 || length > 4 + 32) return fail(malformed(fmt::format("event {} of {}: length {}", i + 1, count, length)));
    auto body = r.take(length - 4u);
    if (!r.ok()) return fail(malformed(fmt::format("event {} of {} cut short", i + 1, count)));
    e.data.assign(body.begin(), body.end());
    batch.events.push_back(std::move(e));
  }
  return batch;
}

void decodeAnything(std::span<const std::uint8_t> data) {
  (void)decodeHeader(data);
  (void)decodeTopoInfo(data, Generation::kGen4);
  (void)decodeTopoInfo(data, Generation::kGen5);
  (void)decodePaxAll(data);
  (void)decodeHvd(data);
  (void)decodeFabricGeneral(data);
  (void)decodeFabPort(data);
  (void)decodeBindUnbind(data);
  if (auto batch = decodeEventBatch(data))
    for (const auto& e : batch->events) {
      (void)physPortOf(e);
      (void)aerTriggeredDpc(e);
    }
}

}  // namespace switchyard::switchtec
