// Fuzz target: arbitrary bytes as what a CXL switch's FM endpoint sends back. The first byte picks the
// dialect (bit 0: jackrabbit) and the form (bit 1: an MCTP packet stream, reassembled as the transport does;
// else one CCI message); every message is decoded and its payload read by every FM-API reply reader,
// tunnelled replies one level down as well. Whatever the bytes, each returns a value or an error: never a
// crash, an out-of-bounds read or a hang. A message that decodes must encode and decode again to the same
// fields, and readers must hold their own promises (binding states CXL defines, at most 16 LDs).
//
// Built as the other targets are (tests/CMakeLists.txt): a libFuzzer binary in the fuzz build, and a replay
// of the committed corpus (tests/fuzz/corpus/cxl_reply) in every build. The corpus holds replies in both
// dialects, as one message and as packet streams (the replay binary writes them with CXL_REPLY_FUZZ_SEEDS=DIR).
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>

#include "fabric/cxl/fm_api.h"
#include "fabric/cxl/fm_transport.h"

using namespace switchyard;
using namespace switchyard::cxl;

namespace {

void readPayload(std::span<const std::uint8_t> p, const Dialect& dialect, int depth) {
  (void)parseIdentifySwitch(p);
  (void)parsePhysicalPortState(p);
  if (auto vcss = parseVirtualSwitchInfo(p))
    for (const auto& v : *vcss)
      for (const auto& b : v.vppbs)
        if (b.status > 3) std::abort();
  (void)parseVirtualSwitchInfo(p, 3);
  (void)parseBackgroundOperationStatus(p);
  (void)parsePpbConfigRead(p);
  if (auto info = parseLdInfo(p); info && info->ldCount > 16) std::abort();
  if (auto a = parseLdAllocations(p); a && a->lds.size() > 16) std::abort();
  if (depth > 0) return;
  if (auto inner = parseTunnelResponse(p, dialect))
    if (auto m = decodeMessage(*inner, dialect)) readPayload(m->payload, dialect, depth + 1);
}

void readMessage(std::span<const std::uint8_t> bytes, const Dialect& dialect) {
  auto m = decodeMessage(bytes, dialect);
  if (!m) return;
  if (m->response) {
    auto again = decodeMessage(encodeResponse(*m, dialect), dialect);
    if (!again || again->opcode != m->opcode || again->tag != m->tag || again->returnCode != m->returnCode ||
        again->vendorStatus != m->vendorStatus || again->background != m->background || again->payload != m->payload)
      std::abort();
  }
  readPayload(m->payload, dialect, 0);
}

void writeSeed(const std::filesystem::path& dir, const std::string& name, std::uint8_t mode, const Bytes& bytes) {
  Bytes out{mode};
  out.insert(out.end(), bytes.begin(), bytes.end());
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
}

// Replies shaped as a two-VCS switch answers them (cse's example: 8 ports, an MLD of 4 LDs on port 6).
void writeSeeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  wire::ByteWriter identify;
  identify.u8(1).u8(0).u8(8).u8(2).u8(0xff).zeros(31).u8(0x03).zeros(31).u16(16).u16(3).u8(32);
  wire::ByteWriter ports;
  ports.u8(2).zeros(3);
  for (std::uint8_t p : {0, 6}) ports.u8(p).u8(p == 0 ? 4 : 3).u8(2).u8(0).u8(p == 0 ? 2 : 5).u8(3).u8(16).u8(16).u8(0x30).u8(5).u8(5).u8(4).u8(0).u16(4).u8(p == 6 ? 4 : 0);
  wire::ByteWriter vcss;
  vcss.u8(2).zeros(3);
  for (std::uint8_t v : {0, 1}) {
    vcss.u8(v).u8(1).u8(v).u8(4);
    vcss.u8(2).u8(2).u8(0).u8(0).u8(3).u8(6).u8(1).u8(0).u8(0).u8(0).u8(0).u8(0).u8(0).u8(0).u8(0).u8(0);
  }
  wire::ByteWriter bos;
  bos.u8(100 << 1).u8(0).u16(0x5201).u16(0).u16(0);
  wire::ByteWriter ldInfo;
  ldInfo.u64(4ull << 30).u16(4).u8(3);
  wire::ByteWriter allocations;
  allocations.u8(4).u8(0).u8(0).u8(4);
  for (int i = 0; i < 4; ++i) allocations.u64(4).u64(0);
  int n = 0;
  for (const auto& dialect : {Dialect::spec(), Dialect::jackrabbit()}) {
    const std::uint8_t bit = dialect.categoryInHighNibble ? 1 : 0;
    auto reply = [&](Opcode op, const Bytes& payload, std::uint16_t rc = 0) {
      return encodeResponse({.response = true, .tag = 3, .opcode = static_cast<std::uint16_t>(op), .returnCode = rc, .payload = payload}, dialect);
    };
    auto tunnelled = [&](Opcode op, const Bytes& payload) {
      const auto inner = reply(op, payload);
      wire::ByteWriter t;
      t.u16(static_cast<std::uint16_t>(inner.size() + (dialect.tunnelTypeByte ? 1 : 0))).u16(0);
      if (dialect.tunnelTypeByte) t.u8(kMctpTypeCci);
      t.bytes(inner);
      return reply(Opcode::kTunnelManagementCommand, t.take());
    };
    const Bytes messages[] = {reply(Opcode::kIdentifySwitchDevice, Bytes(identify.take())),
                              reply(Opcode::kGetPhysicalPortState, Bytes(ports.take())),
                              reply(Opcode::kGetVirtualSwitchInfo, Bytes(vcss.take())),
                              reply(Opcode::kBindVppb, {}, rc::kBackgroundStarted),
                              reply(Opcode::kBackgroundOperationStatus, Bytes(bos.take())),
                              reply(Opcode::kPpbConfigRequest, Bytes{0xde, 0x10, 0x30, 0x23}),
                              tunnelled(Opcode::kGetLdInfo, Bytes(ldInfo.take())),
                              tunnelled(Opcode::kGetLdAllocations, Bytes(allocations.take()))};
    Bytes stream;
    std::uint8_t sequence = 0;
    for (const auto& m : messages) {
      writeSeed(dir, "message-" + std::to_string(n), bit, m);
      std::uint8_t s = 0;
      writeSeed(dir, "packets-" + std::to_string(n++), static_cast<std::uint8_t>(bit | 2), packetize(kMctpTypeFmApi, m, 3, false, s));
      const auto p = packetize(kMctpTypeFmApi, m, 3, false, sequence);
      stream.insert(stream.end(), p.begin(), p.end());
    }
    writeSeed(dir, std::string("stream-") + std::string(dialect.name()), static_cast<std::uint8_t>(bit | 2), stream);
    // The writers were taken: rebuild them for the second dialect.
    identify.u8(1).u8(0).u8(8).u8(2).u8(0xff).zeros(31).u8(0x03).zeros(31).u16(16).u16(3).u8(32).zeros(20);
    ports.u8(1).zeros(3).u8(2).u8(3).u8(0).u8(0).u8(1).u8(0).u8(16).u8(16).u8(0x30).u8(5).u8(5).u8(4).u8(0).u16(4).u8(0);
    vcss.u8(1).zeros(3).u8(0).u8(1).u8(0).u8(2).u8(2).u8(2).u8(0).u8(0).u8(0).u8(0).u8(0).u8(0);
    bos.u8(1).u8(0).u16(0x5202).u16(0).u16(0);
    ldInfo.u64(4ull << 30).u16(4).u8(3);
    allocations.u8(4).u8(0).u8(0).u8(2).u64(4).u64(0).u64(4).u64(0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool seeded = [] {
    if (const char* dir = std::getenv("CXL_REPLY_FUZZ_SEEDS")) writeSeeds(dir);
    return true;
  }();
  (void)seeded;
  if (size == 0) return 0;
  const Dialect dialect = (data[0] & 1) ? Dialect::jackrabbit() : Dialect::spec();
  const std::span<const std::uint8_t> rest(data + 1, size - 1);
  if (!(data[0] & 2)) {
    readMessage(rest, dialect);
    return 0;
  }
  MctpReassembler reader;
  for (std::size_t at = 0; at + kMctpPacketSize <= rest.size(); at += kMctpPacketSize) {
    auto done = reader.feed(rest.subspan(at, kMctpPacketSize));
    if (done && *done) {
      if ((*done)->body.size() > kMaxMctpMessage) std::abort();
      readMessage((*done)->body, dialect);
    }
  }
  return 0;
}
