// The Switchtec driver's parts that the contract does not reach: the wire format's edge cases (decoders
// refuse what does not add up), endpoint parsing, the emulator's topology file, and the driver under the
// emulator's faults (a refused bind, a reply lost after the bind was applied, a closed connection, a
// link that goes down, an MRPC latency L and what a compose costs in commands).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "fabric/pci_device_ids.h"
#include "fabric/switchtec/gfms_client.h"
#include "fabric/switchtec/protocol.h"
#include "fabric/switchtec/switchtec_fabric.h"
#include "tests/support/switchtec_emulator.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;
using namespace switchtec;

TEST(SwitchtecProtocol, PaxAllRoundTripsAndCutsAreErrors) {
  PaxAll all;
  Hvd h;
  h.physPort = 3;
  h.logicalPorts = 2;
  h.slots.resize(16);
  h.slot(0, 1) = {true, 0x104};
  all.hvds.push_back(h);
  EpPort p;
  p.physPort = 16;
  p.kind = EpPortKind::kEndpoint;
  EpFunction f;
  f.pdfid = 0x104;
  f.vendorId = 0x10de;
  f.deviceId = 0x2330;
  f.classCode = 0x030200;
  f.bound = true;
  f.boundHvdPhysPort = 3;
  f.boundHvdLogPort = 1;
  p.functions = {f};
  all.epPorts.push_back(p);
  all.epPorts.push_back(EpPort{.physPort = 17});
  const auto bytes = encodePaxAll(all);
  auto back = decodePaxAll(bytes);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->hvds.size(), 1u);
  EXPECT_EQ(back->hvds[0].physPort, 3);
  EXPECT_TRUE(back->hvds[0].slot(0, 1).bound);
  EXPECT_EQ(back->hvds[0].slot(0, 1).pdfid, 0x104);
  ASSERT_EQ(back->epPorts.size(), 2u);
  EXPECT_EQ(back->epPorts[0].functions.at(0).deviceId, 0x2330);
  EXPECT_EQ(back->epPorts[0].functions.at(0).classCode, 0x030200u);
  EXPECT_EQ(back->epPorts[1].kind, EpPortKind::kNone);
  for (std::size_t cut : {std::size_t{0}, std::size_t{40}, std::size_t{90}, bytes.size() - 4, bytes.size() - 1}) {
    auto r = decodePaxAll(std::span(bytes).first(cut));
    ASSERT_FALSE(r) << "a dump cut to " << cut << " bytes decoded";
    EXPECT_NE(r.error().message.find("malformed Switchtec reply"), std::string::npos);
  }
  auto lying = bytes;
  lying[80 + 4] = 0xff;  // the HVD section claims more than there is
  EXPECT_FALSE(decodePaxAll(lying));
}

TEST(SwitchtecProtocol, HeadersEventsAndModels) {
  const auto h = encodeHeader({.function = EthFunction::kMrpcCommand, .packet = EthPacket::kCommand, .payloadBytes = 40, .outputBytes = 1024});
  ASSERT_EQ(h.size(), kEthHeaderSize);
  auto back = decodeHeader(h);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->payloadBytes, 40);
  EXPECT_EQ(back->outputBytes, 1024);
  auto wrong = h;
  wrong[0] = 'H';  // an HTTP server on the port, say
  EXPECT_NE(decodeHeader(wrong).error().message.find("signature"), std::string::npos);

  EventBatch batch;
  batch.events.push_back({GfmsEventCode::kAer, 1, {17, 0, 0x03, 0}});
  batch.remaining = 3;
  batch.overflow = true;
  auto events = decodeEventBatch(encodeEventBatch(batch));
  ASSERT_TRUE(events);
  EXPECT_EQ(events->remaining, 3);
  EXPECT_TRUE(events->overflow);
  EXPECT_EQ(physPortOf(events->events.at(0)), 17);
  EXPECT_TRUE(aerTriggeredDpc(events->events.at(0)));
  auto cut = encodeEventBatch(batch);
  cut.pop_back();
  EXPECT_FALSE(decodeEventBatch(cut));

  EXPECT_EQ(paxModel(0x4252), "PAX 52XG4");
  EXPECT_EQ(paxModel(0x4200), "PAX 100XG4");
  EXPECT_EQ(paxModel(0x5584), "PAX-A 84XG5");
  EXPECT_EQ(paxModel(0x4052), "") << "a PFX has no fabric manager";
}

TEST(SwitchtecProtocol, BindRequestsChainTheirFunctions) {
  auto r = decodeBindUnbind(encodeBind({1, 2, 3, {0x100, 0x101, 0x102}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->subcommand, kGfmsBind);
  EXPECT_EQ(r->bind.pdfids, (std::vector<std::uint16_t>{0x100, 0x101, 0x102}));
  EXPECT_EQ(r->bind.hostLogPort, 3);
  EXPECT_EQ(encodeBind({0, 0, 0, {0x100}}).size(), 36u) << "the vendor's layout: 4 bytes and 8 function slots";
  auto u = decodeBindUnbind(encodeUnbind({0, 5, 6, 0x200, 0}));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->unbind.hostPhysPort, 5);
  EXPECT_FALSE(decodeBindUnbind(std::vector<std::uint8_t>{9}));
}

TEST(SwitchtecEndpoint, ParsesTheForms) {
  auto plain = parseEndpoint("10.1.2.3");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->port, kEthPort);
  auto full = parseEndpoint("mgmt.rack4:5454@1");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->host, "mgmt.rack4");
  EXPECT_EQ(full->port, 5454);
  EXPECT_EQ(full->instance, 1);
  auto v6 = parseEndpoint("[::1]:7000");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(parseEndpoint("/dev/switchtec0")->devicePath, "/dev/switchtec0");
  EXPECT_NE(parseEndpoint("host:99999").error().message.find("port"), std::string::npos);
  EXPECT_NE(parseEndpoint("host:1@x").error().message.find("instance"), std::string::npos);
  EXPECT_FALSE(parseEndpoint(""));
}

TEST(SwitchtecEmulatorTopology, FilesAreCheckedWithPreciseErrors) {
  auto ok = testing::parseSwitchtecTopology(R"({"pax": [
      {"id": 0, "device_id": "0x4268", "hosts": [{"port": 0, "logical_ports": 4}],
       "endpoints": [{"port": 8, "functions": [{"vendor": "0x10de", "device": "0x2335"}, {"vendor": "0x10de", "device": "0x22a3", "class": "0x040300"}]}],
       "links": [{"port": 40, "peer_pax": 1, "peer_port": 41}]},
      {"id": 1, "links": [{"port": 41, "peer_pax": 0, "peer_port": 40}], "endpoints": [{"port": 9}]}]})");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->chips.at(0).endpoints.at(0).functions.size(), 2u);
  auto error = [](const std::string& json) {
    auto r = testing::parseSwitchtecTopology(json);
    EXPECT_FALSE(r) << json;
    return r ? std::string() : r.error().message;
  };
  EXPECT_NE(error("{}").find("needs \"pax\""), std::string::npos);
  EXPECT_NE(error(R"({"pax": [{"id": 0, "hosts": [{"port": 1}], "endpoints": [{"port": 1}]}]})").find("port 1 used twice"), std::string::npos);
  EXPECT_NE(error(R"({"pax": [{"id": 0, "device_id": "0x4052"}]})").find("not a PAX"), std::string::npos);
  EXPECT_NE(error(R"({"pax": [{"id": 0, "links": [{"port": 4, "peer_pax": 1, "peer_port": 4}]}]})").find("does not link back"), std::string::npos);
  EXPECT_NE(error(R"({"pax": [{"id": 0, "colour": "red"}]})").find("unknown key 'colour'"), std::string::npos);
}

// A driver on an emulator with one PAX, two hosts and four GPUs.
class SwitchtecDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    auto e = testing::SwitchtecEmulator::start({testing::generateSwitchtecTopology(1, 2, 4)});
    ASSERT_TRUE(e) << e.error().message;
    emulator_ = std::move(*e);
    auto f = SwitchtecFabric::connect({.endpoint = emulator_->endpoint(), .hostNames = {{"pax0-p1", "node-b"}}});
    ASSERT_TRUE(f) << f.error().message;
    fabric_ = std::move(*f);
  }
  std::unique_ptr<testing::SwitchtecEmulator> emulator_;
  std::unique_ptr<SwitchtecFabric> fabric_;
};

// What the class code of an endpoint function makes it (issue 62, item 6: endpoint functions of any class): the
// four kinds, and any other class by its PCI base class name, never a GPU by default.
TEST(PciClass, EveryClassIsAKindOrAClassByName) {
  const auto classify = [](std::uint32_t code) {
    Device d;
    classifyPciFunction(code, d);
    return KindName{d.kind, d.deviceClass};
  };
  EXPECT_EQ(classify(0x030200), (KindName{DeviceKind::kGpu, {}}));   // 3D controller
  EXPECT_EQ(classify(0x120000), (KindName{DeviceKind::kGpu, {}}));   // processing accelerator
  EXPECT_EQ(classify(0x010802), (KindName{DeviceKind::kNvme, {}}));
  EXPECT_EQ(classify(0x020000), (KindName{DeviceKind::kNic, {}}));
  EXPECT_EQ(classify(0x050210), (KindName{DeviceKind::kCxlMemory, {}}));
  EXPECT_EQ(classify(0x0b4000), (KindName{DeviceKind::kOther, "processor"}));  // co-processor
  EXPECT_EQ(classify(0x118000), (KindName{DeviceKind::kOther, "signal-processing"}));
  EXPECT_EQ(classify(0x0c0330), (KindName{DeviceKind::kOther, "serial-bus"}));  // USB xHCI
  EXPECT_EQ(classify(0x010601), (KindName{DeviceKind::kOther, "storage"}));     // SATA AHCI: not NVMe
  EXPECT_EQ(classify(0xff0000), (KindName{DeviceKind::kOther, "pci-class-ff"}));
  for (std::uint32_t base = 0; base < 0x100; ++base) {
    Device d;
    classifyPciFunction(base << 16, d);
    if (d.kind == DeviceKind::kOther) EXPECT_TRUE(parseKindName(d.deviceClass)) << d.deviceClass << ": a class requests can name";
  }
}

TEST_F(SwitchtecDriver, DiscoversWhatTheDatabaseHolds) {
  auto t = fabric_->discover();
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->switches.size(), 1u);
  EXPECT_EQ(t->switches[0].model, "PAX 52XG4");
  ASSERT_EQ(t->hosts.size(), 2u);
  EXPECT_EQ(t->hosts[0].id, "pax0-host0");
  EXPECT_EQ(t->hosts[1].id, "node-b") << "the operator's name for pax0 port 1";
  EXPECT_EQ(t->hosts[1].maxDevices, 8) << "one device per logical port";
  ASSERT_EQ(t->devices.size(), 4u);
  EXPECT_EQ(t->devices[0].id, "pax0-ep16");
  EXPECT_EQ(t->devices[0].model, "H100-SXM5-80GB");
  EXPECT_EQ(t->devices[0].memoryGiB, 80);
  EXPECT_TRUE(t->devices[0].migCapable);
}

TEST(SwitchtecDriverGen5, ReadsTheGen5Layout) {
  auto t = testing::parseSwitchtecTopology(R"({"pax": [{"id": 0, "device_id": "0x5284", "hosts": [{"port": 0}], "endpoints": [{"port": 16}]}]})");
  ASSERT_TRUE(t);
  auto e = testing::SwitchtecEmulator::start({*t});
  ASSERT_TRUE(e);
  auto f = SwitchtecFabric::connect({.endpoint = (*e)->endpoint()});
  ASSERT_TRUE(f) << f.error().message;
  auto topology = (*f)->discover();
  ASSERT_TRUE(topology);
  EXPECT_EQ(topology->switches.at(0).model, "PAX 84XG5");
  for (const auto& p : topology->ports) EXPECT_EQ(p.linkGeneration, 5) << p.id;
  ASSERT_TRUE((*f)->bind("pax0-ep16", "pax0-p0"));
}

TEST_F(SwitchtecDriver, ARefusedBindChangesNothingAndSaysWhy) {
  emulator_->refuseBinds(1, mrpc_error::kBindCheckFail);
  auto r = fabric_->bind("pax0-ep16", "pax0-p0");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("bind check failed"), std::string::npos) << r.error().message;
  EXPECT_TRUE(emulator_->bindings().empty());
  ASSERT_TRUE(fabric_->bind("pax0-ep16", "pax0-p0"));
}

TEST_F(SwitchtecDriver, ALostReplyIsUnknownAndRepeatingConverges) {
  emulator_->dropReplies(1);  // the switch binds, and the answer never comes
  auto r = fabric_->bind("pax0-ep16", "pax0-p0");
  ASSERT_FALSE(r);
  EXPECT_FALSE(changedNothing(r.error().code)) << r.error().message;
  EXPECT_EQ(emulator_->bindings().size(), 1u) << "the switch applied it";
  ASSERT_TRUE(fabric_->bind("pax0-ep16", "pax0-p0")) << "repeating reads the switch and finds it done";
  EXPECT_EQ(emulator_->bindings().size(), 1u) << "not bound twice";
  auto table = fabric_->readBindings();
  ASSERT_TRUE(table);
  EXPECT_EQ(*table, (std::vector<Binding>{{"pax0-ep16", "pax0-p0"}}));
}

TEST_F(SwitchtecDriver, AClosedConnectionIsRetriedOnANewOne) {
  emulator_->closeConnections(1);
  auto r = fabric_->readBindings();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_NE(r.error().message.find("closed the connection"), std::string::npos) << r.error().message;
  EXPECT_TRUE(fabric_->readBindings()) << "the pool opens a new channel";
}

TEST_F(SwitchtecDriver, ABindBehindItsBackIsSeenAndRespected) {
  // Another manager (the vendor CLI, say) binds pax0-ep17 to host 1's logical port 0.
  auto other = SwitchtecFabric::connect({.endpoint = emulator_->endpoint()});
  ASSERT_TRUE(other);
  ASSERT_TRUE((*other)->bind("pax0-ep17", "pax0-p1"));
  // This driver's table is stale: it picks logical port 0 of host 1 for ep18, is refused, re-reads, retries.
  ASSERT_TRUE(fabric_->bind("pax0-ep18", "pax0-p1"));
  auto busy = fabric_->bind("pax0-ep17", "pax0-p0");
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code, Code::kFailedPrecondition);
  EXPECT_EQ(emulator_->bindings().size(), 2u);
}

TEST_F(SwitchtecDriver, LinkDownIsCriticalAndBackIsOk) {
  ASSERT_TRUE(emulator_->setLinkUp(0, 17, false));
  auto events = fabric_->pollEvents();
  ASSERT_TRUE(events) << events.error().message;
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].subject, "pax0-ep17");
  EXPECT_EQ((*events)[0].health, DeviceHealth::kCritical);
  EXPECT_NE((*events)[0].message.find("link down"), std::string::npos);
  auto refused = fabric_->bind("pax0-ep17", "pax0-p0");
  ASSERT_FALSE(refused) << "the switch does not bind a device whose link is down";
  ASSERT_TRUE(emulator_->setLinkUp(0, 17, true));
  events = fabric_->pollEvents();
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].health, DeviceHealth::kOk);
}

TEST_F(SwitchtecDriver, HostLinkEventsNameThePort) {
  ASSERT_TRUE(emulator_->setLinkUp(0, 1, false));
  auto events = fabric_->pollEvents();
  ASSERT_TRUE(events) << events.error().message;
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].type, "link.down");
  EXPECT_EQ((*events)[0].subject, "pax0-p1");
  ASSERT_TRUE(emulator_->setLinkUp(0, 1, true));
  events = fabric_->pollEvents();
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].type, "link.up");
}

// What a compose costs against a switch that takes L per MRPC command: the binds of a set go out at
// once, so 4 GPUs bind in about L, not 4L; the command count is one bind per device.
TEST_F(SwitchtecDriver, ASetBindsInParallel) {
  ASSERT_TRUE(fabric_->readBindings());  // the table is fresh
  emulator_->setLatency(200ms);
  const auto before = fabric_->commandsSent();
  const auto start = std::chrono::steady_clock::now();
  std::vector<Binding> set{{"pax0-ep16", "pax0-p0"}, {"pax0-ep17", "pax0-p0"}, {"pax0-ep18", "pax0-p0"}, {"pax0-ep19", "pax0-p0"}};
  ASSERT_TRUE(fabric_->bindAll(set));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(fabric_->commandsSent() - before, 4u) << "one GFMS bind per device, nothing else";
  EXPECT_LT(took, 700ms) << "four binds at 200 ms each ran at once";
}

}  // namespace
}  // namespace switchyard
