// The FM-API codec and the MCTP framing, judged by others' bytes: every request equals what the CXL
// Consortium's libcxlmi sends (its golden output in ../shared/third-party/libcxlmi/golden), except the two
// header fields its README lists (the tag, and the vendor status libcxlmi fills with ABCDh); the replies
// Jackrabbit Labs' cse sent to jack (../shared/third-party/jackrabbit-cxl/tools/jack-capture.txt) read in
// the jackrabbit dialect and are refused, with the reason, in the spec's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>

#include "fabric/cxl/fm_api.h"
#include "fabric/cxl/fm_transport.h"
#include "tests/support/shared_dir.h"

namespace switchyard::cxl {
namespace {

Bytes hex(const std::string& text) {
  Bytes out;
  std::istringstream in(text);
  std::string byte;
  while (in >> byte) out.push_back(static_cast<std::uint8_t>(std::stoul(byte, nullptr, 16)));
  return out;
}

// Zeroes the fields libcxlmi's README lists as differing by design: tag (byte 1) and vendor status (10, 11).
Bytes withoutTagAndVendorStatus(Bytes m, std::size_t at = 0) {
  m.at(at + 1) = 0;
  m.at(at + 10) = 0;
  m.at(at + 11) = 0;
  return m;
}

std::vector<Bytes> goldenWire() {
  std::ifstream in(testing::sharedDir() / "third-party" / "libcxlmi" / "golden" / "golden.wire.txt");
  std::vector<Bytes> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(": ");
    if (line.rfind("type=07", 0) == 0 && colon != std::string::npos) out.push_back(hex(line.substr(colon + 2)));
  }
  return out;
}

TEST(CxlFmApiTest, EveryRequestEqualsLibcxlmisGoldenBytes) {
  const auto golden = goldenWire();
  if (golden.empty()) GTEST_SKIP() << "no libcxlmi golden bytes under " << testing::sharedDir();
  ASSERT_EQ(golden.size(), 5u);
  const Dialect spec = Dialect::spec();
  const std::uint8_t port2[] = {2};
  EXPECT_EQ(withoutTagAndVendorStatus(encodeRequest(Opcode::kIdentifySwitchDevice, 0, {})), withoutTagAndVendorStatus(golden[0]));
  EXPECT_EQ(withoutTagAndVendorStatus(encodeRequest(Opcode::kGetPhysicalPortState, 1, getPhysicalPortStateRequest(port2))),
            withoutTagAndVendorStatus(golden[1]));
  EXPECT_EQ(withoutTagAndVendorStatus(encodeRequest(Opcode::kBindVppb, 2, bindVppbRequest(0, 2, 4))), withoutTagAndVendorStatus(golden[2]));
  EXPECT_EQ(withoutTagAndVendorStatus(encodeRequest(Opcode::kUnbindVppb, 3, unbindVppbRequest(0, 2, UnbindOption::kSurpriseHotRemove))),
            withoutTagAndVendorStatus(golden[3]));
  // The tunnel: outer header, the 4-byte tunnel header, then the inner CCI message (its own tag and vendor status).
  const auto inner = encodeRequest(Opcode::kGetLdAllocations, 0, getLdAllocationsRequest());
  const auto tunnelled = encodeRequest(Opcode::kTunnelManagementCommand, 5, tunnelRequest(6, inner, spec));
  EXPECT_EQ(withoutTagAndVendorStatus(withoutTagAndVendorStatus(tunnelled), 16), withoutTagAndVendorStatus(withoutTagAndVendorStatus(golden[4]), 16));
}

struct Captured {
  std::string direction;
  Bytes message;  // CCI header and payload
};

std::vector<Captured> jackCapture() {
  std::ifstream in(testing::sharedDir() / "third-party" / "jackrabbit-cxl" / "tools" / "jack-capture.txt");
  std::vector<Captured> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("conn", 0) == 0) {
      out.push_back({line.find("C>S") != std::string::npos ? "C>S" : "S>C", {}});
    } else if (auto at = line.find("cci_hdr="); at != std::string::npos && !out.empty()) {
      out.back().message = hex(line.substr(at + 8));
    } else if (auto p = line.find("payload="); p != std::string::npos && !out.empty()) {
      const auto payload = hex(line.substr(p + 8));
      out.back().message.insert(out.back().message.end(), payload.begin(), payload.end());
    }
  }
  return out;
}

TEST(CxlFmApiTest, JacksRequestsEqualOursInTheJackrabbitDialect) {
  const auto capture = jackCapture();
  if (capture.empty()) GTEST_SKIP() << "no jack capture under " << testing::sharedDir();
  ASSERT_EQ(capture.size(), 12u);
  const Dialect cse = Dialect::jackrabbit();
  const std::uint8_t port2[] = {2};
  EXPECT_EQ(encodeRequest(Opcode::kIdentifySwitchDevice, 0, {}), capture[0].message);
  EXPECT_EQ(encodeRequest(Opcode::kGetPhysicalPortState, 0, getPhysicalPortStateRequest(port2)), capture[2].message);
  EXPECT_EQ(encodeRequest(Opcode::kBindVppb, 0, bindVppbRequest(0, 2, 4)), capture[4].message);
  EXPECT_EQ(encodeRequest(Opcode::kUnbindVppb, 0, unbindVppbRequest(0, 2, UnbindOption::kSurpriseHotRemove)), capture[6].message);
  const auto allocations = encodeRequest(Opcode::kGetLdAllocations, 0, getLdAllocationsRequest());
  EXPECT_EQ(encodeRequest(Opcode::kTunnelManagementCommand, 0, tunnelRequest(6, allocations, cse)), capture[8].message);
  const auto info = encodeRequest(Opcode::kGetLdInfo, 0, {});
  EXPECT_EQ(encodeRequest(Opcode::kTunnelManagementCommand, 0, tunnelRequest(6, info, cse)), capture[10].message);
}

TEST(CxlFmApiTest, CsesRepliesReadInTheJackrabbitDialect) {
  const auto capture = jackCapture();
  if (capture.empty()) GTEST_SKIP() << "no jack capture under " << testing::sharedDir();
  const Dialect cse = Dialect::jackrabbit();
  // Identify Switch Device: 93 bytes, of which CXL 2.0 defines 73.
  auto identify = decodeMessage(capture[1].message, cse);
  ASSERT_TRUE(identify) << identify.error().message;
  EXPECT_TRUE(identify->response);
  EXPECT_EQ(identify->payload.size(), 93u);
  auto id = parseIdentifySwitch(identify->payload);
  ASSERT_TRUE(id);
  EXPECT_EQ(id->numPorts, 8);
  EXPECT_EQ(id->numVcss, 2);
  EXPECT_EQ(id->numVppbs, 16);
  EXPECT_EQ(id->activeVppbs, 3);
  EXPECT_TRUE(id->portActive(0) && id->portActive(6));
  EXPECT_TRUE(id->vcsActive(1) && !id->vcsActive(2));

  auto ports = decodeMessage(capture[3].message, cse);
  ASSERT_TRUE(ports);
  auto states = parsePhysicalPortState(ports->payload);
  ASSERT_TRUE(states);
  ASSERT_EQ(states->size(), 1u);
  EXPECT_EQ((*states)[0].port, 2);
  EXPECT_EQ((*states)[0].configState, static_cast<std::uint8_t>(PortConfigState::kDownstream));
  EXPECT_EQ((*states)[0].deviceType, static_cast<std::uint8_t>(ConnectedDevice::kPcie));
  EXPECT_TRUE((*states)[0].linkUp());

  auto bind = decodeMessage(capture[5].message, cse);
  ASSERT_TRUE(bind);
  EXPECT_EQ(bind->returnCode, rc::kBackgroundStarted);

  auto tunnel = decodeMessage(capture[9].message, cse);
  ASSERT_TRUE(tunnel);
  auto inner = parseTunnelResponse(tunnel->payload, cse);
  ASSERT_TRUE(inner) << inner.error().message;
  auto innerMessage = decodeMessage(*inner, cse);
  ASSERT_TRUE(innerMessage);
  EXPECT_EQ(innerMessage->opcode, static_cast<std::uint16_t>(Opcode::kGetLdAllocations));
  auto allocations = parseLdAllocations(innerMessage->payload);
  ASSERT_TRUE(allocations);
  EXPECT_EQ(allocations->totalLds, 4);
  EXPECT_EQ(allocations->granularity, 256ull << 20);
  ASSERT_EQ(allocations->lds.size(), 4u);
  EXPECT_EQ(allocations->lds[3], (LdAllocation{0x12, 0x13}));

  auto infoTunnel = decodeMessage(capture[11].message, cse);
  ASSERT_TRUE(infoTunnel);
  auto infoInner = parseTunnelResponse(infoTunnel->payload, cse);
  ASSERT_TRUE(infoInner);
  auto infoMessage = decodeMessage(*infoInner, cse);
  ASSERT_TRUE(infoMessage);
  auto info = parseLdInfo(infoMessage->payload);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->memorySize, 4ull << 30);
  EXPECT_EQ(info->ldCount, 4);
}

TEST(CxlFmApiTest, TheSpecDialectRefusesCsesRepliesAndSaysWhichDialectTheyAre) {
  const auto capture = jackCapture();
  if (capture.empty()) GTEST_SKIP() << "no jack capture under " << testing::sharedDir();
  auto read = decodeMessage(capture[1].message, Dialect::spec());
  ASSERT_FALSE(read);
  EXPECT_NE(read.error().message.find("jackrabbit"), std::string::npos) << read.error().message;
  // And the other way round: a spec reply is not read as cse's.
  CciMessage m{.response = true, .opcode = 0x5100, .payload = Bytes(73, 0)};
  EXPECT_TRUE(decodeMessage(encodeResponse(m, Dialect::spec()), Dialect::spec()));
  EXPECT_FALSE(decodeMessage(encodeResponse(m, Dialect::spec()), Dialect::jackrabbit()));
}

TEST(CxlFmApiTest, RepliesRoundTripInBothDialectsWithLengthsPast16Bits) {
  for (const auto& dialect : {Dialect::spec(), Dialect::jackrabbit()}) {
    CciMessage m{.response = true, .tag = 5, .opcode = 0x5200, .background = true, .returnCode = 1, .vendorStatus = 0x1234, .payload = Bytes(70000, 7)};
    auto back = decodeMessage(encodeResponse(m, dialect), dialect);
    ASSERT_TRUE(back) << dialect.name();
    EXPECT_EQ(back->payload.size(), 70000u);
    EXPECT_TRUE(back->background);
    EXPECT_EQ(back->tag, 5);
    EXPECT_EQ(back->vendorStatus, 0x1234);
  }
}

TEST(CxlFmApiTest, ShortOrImpossibleRepliesAreErrorsNotCrashes) {
  const Dialect spec = Dialect::spec();
  EXPECT_FALSE(decodeMessage(Bytes(11, 0), spec));
  CciMessage m{.response = true, .opcode = 0x5101, .payload = Bytes(10, 0)};
  auto bytes = encodeResponse(m, spec);
  bytes.resize(bytes.size() - 1);  // says 10 bytes, carries 9
  EXPECT_FALSE(decodeMessage(bytes, spec));
  EXPECT_FALSE(parseIdentifySwitch(Bytes(72, 0)));
  EXPECT_FALSE(parsePhysicalPortState(Bytes{2, 0, 0, 0}));  // two ports said, none carried
  EXPECT_FALSE(parseVirtualSwitchInfo(Bytes{1, 0, 0, 0, 0, 1, 0, 8}));  // 8 vPPBs said, none carried
  EXPECT_FALSE(parseVirtualSwitchInfo(Bytes{1, 0, 0, 0, 0, 1, 0, 1, 9, 0, 0, 0}));  // binding status 9
  EXPECT_FALSE(parseBackgroundOperationStatus(Bytes{0xff, 0, 0, 0, 0, 0, 0, 0}));  // 127 %
  EXPECT_FALSE(parseLdAllocations(Bytes{4, 3, 0, 0}));  // granularity code 3
  EXPECT_FALSE(parseLdAllocations(Bytes{4, 0, 0, 2}));  // two LDs said, none carried
  EXPECT_FALSE(parseTunnelResponse(Bytes{9, 0, 0, 0, 1}, spec));
  EXPECT_FALSE(parseTunnelResponse(Bytes{1, 0, 0, 0, 0}, Dialect::jackrabbit()));  // no 08h type byte
}

// cse's MCTP packetizer counts packets without the type byte: a reply of 128 bytes (7 port states) arrives one
// byte short. The error names the quirk; the client asks for such port sets in two parts (WholeMachineOnCxl ran
// into it with a 7-port switch).
TEST(CxlFmApiTest, AReplyCseCutAtAFullPacketNamesTheQuirk) {
  CciMessage m{.response = true, .opcode = 0x5101, .payload = Bytes(4 + 7 * 16, 0)};
  auto bytes = encodeResponse(m, Dialect::jackrabbit());
  ASSERT_EQ(bytes.size(), 128u);
  bytes.pop_back();
  const auto cut = decodeMessage(bytes, Dialect::jackrabbit());
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message.find("known quirk"), std::string::npos) << cut.error().message;
  const auto plain = decodeMessage(bytes, Dialect{true, true, true, false});  // cse's forms without the quirk
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().message.find("quirk"), std::string::npos) << "a switch without the quirk is not blamed for it";
}

TEST(CxlFmApiTest, ConfigurationRegistersAreDwordIndexesInTheSpecAndByteOffsetsInCse) {
  // Class code at byte offset 8: dword 2 in the spec's encoding, byte 8 in cse's.
  EXPECT_EQ(ppbConfigReadRequest(3, 8, Dialect::spec()), (Bytes{3, 2, 0xf0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ppbConfigReadRequest(3, 8, Dialect::jackrabbit()), (Bytes{3, 8, 0xf0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ppbConfigReadRequest(3, 0x104, Dialect::spec()), (Bytes{3, 0x41, 0xf0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ppbConfigReadRequest(3, 0x104, Dialect::jackrabbit()), (Bytes{3, 0x04, 0xf1, 0, 0, 0, 0, 0}));
}

// The fuzz corpus's one-message seeds are replies that decode (tests/fuzz/cxl_reply_fuzz.cpp): a replay of
// a corpus that no longer reads would test nothing.
TEST(CxlFmApiTest, TheFuzzCorpusSeedsAreRepliesThatDecode) {
  const auto dir = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "cxl_reply";
  int decoded = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("message-", 0) != 0) continue;
    std::ifstream in(e.path(), std::ios::binary);
    Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(bytes.empty());
    const Dialect dialect = (bytes[0] & 1) ? Dialect::jackrabbit() : Dialect::spec();
    auto m = decodeMessage(std::span(bytes).subspan(1), dialect);
    ASSERT_TRUE(m) << e.path() << ": " << m.error().message;
    EXPECT_TRUE(m->response);
    ++decoded;
  }
  EXPECT_EQ(decoded, 16);
}

TEST(CxlMctpTest, MessagesSplitInto68BytePacketsAndReassemble) {
  Bytes body(200);
  for (std::size_t i = 0; i < body.size(); ++i) body[i] = static_cast<std::uint8_t>(i);
  std::uint8_t sequence = 3;
  const auto packets = packetize(kMctpTypeFmApi, body, 5, true, sequence);
  ASSERT_EQ(packets.size(), 4 * kMctpPacketSize);  // 63 + 64 + 64 + 9
  EXPECT_EQ(sequence, 3);                           // four packets later, modulo 4
  EXPECT_EQ(packets[3], 0x80 | 0x30 | 0x08 | 5);    // SOM, sequence 3, tag owner, tag 5
  EXPECT_EQ(packets[4], kMctpTypeFmApi);
  EXPECT_EQ(packets[3 * kMctpPacketSize + 3], 0x40 | 0x20 | 0x08 | 5);  // EOM, sequence 2
  MctpReassembler r;
  std::optional<MctpMessage> done;
  for (std::size_t at = 0; at < packets.size(); at += kMctpPacketSize) {
    auto fed = r.feed(std::span(packets).subspan(at, kMctpPacketSize));
    ASSERT_TRUE(fed) << fed.error().message;
    if (*fed) done = std::move(*fed);
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(done->type, kMctpTypeFmApi);
  EXPECT_EQ(done->tag, 5);
  EXPECT_TRUE(done->tagOwner);
  ASSERT_GE(done->body.size(), body.size());
  EXPECT_TRUE(std::equal(body.begin(), body.end(), done->body.begin()));
  // jack's one-packet request, byte for byte: 01 00 00 c8, then type 07 and the CCI message.
  std::uint8_t zero = 0;
  const auto identify = encodeRequest(Opcode::kIdentifySwitchDevice, 0, {});
  const auto one = packetize(kMctpTypeFmApi, identify, 0, true, zero);
  EXPECT_EQ(Bytes(one.begin(), one.begin() + 5), (Bytes{0x01, 0x00, 0x00, 0xc8, 0x07}));
}

TEST(CxlMctpTest, BrokenFramingIsAnErrorAndDropsTheMessageInProgress) {
  std::uint8_t sequence = 0;
  const auto packets = packetize(kMctpTypeFmApi, Bytes(150, 1), 1, false, sequence);  // three packets
  MctpReassembler r;
  ASSERT_TRUE(r.feed(std::span(packets).first(kMctpPacketSize)));
  EXPECT_FALSE(r.feed(std::span(packets).subspan(2 * kMctpPacketSize, kMctpPacketSize)));  // skipped one
  EXPECT_FALSE(r.feed(std::span(packets).subspan(kMctpPacketSize, kMctpPacketSize)));      // no message open now
  Bytes badVersion(kMctpPacketSize, 0);
  badVersion[0] = 2;
  badVersion[3] = 0xc0;
  EXPECT_FALSE(r.feed(badVersion));
  EXPECT_FALSE(r.feed(Bytes(10, 0)));
}

}  // namespace
}  // namespace switchyard::cxl
