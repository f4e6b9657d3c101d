// Whole machines on every driver that binds over a switch's own management interface (issue 62, item 6): the
// engine composes GPUs, a NIC and a drive through the Switchtec driver against the Switchtec emulator (whose
// GFMS database is the judge) and through the CXL FM-API driver against Jackrabbit Labs' cse (whose CLI, jack, is
// the judge). Each driver learns a device's kind from its PCI class code and its model from its ids. The simulated
// driver is covered in engine_mixed_test.cpp; the Redfish driver (a kind from what a target's endpoint connects) in
// redfish_round_trips_test.cpp; the QEMU driver in tests/qemu/qemu_fabric_test.cpp (a NIC and a drive into a real
// guest kernel).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "fabric/cxl/cxl_fabric.h"
#include "fabric/switchtec/switchtec_fabric.h"
#include "tests/support/jackrabbit_cse.h"
#include "tests/support/switchtec_emulator.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

// Two GPUs, a NIC under their switch, a drive anywhere in the domain.
ComposeRequest wholeMachine() {
  ComposeRequest r{"machine", {}, {}};
  r.placement.gpuCount = 2;
  r.placement.endpoints = {{DeviceKind::kNic, 1, "ConnectX-7", 0, Affinity::kSwitch}, {DeviceKind::kNvme, 1, "", 0, Affinity::kDomain}};
  return r;
}

std::map<DeviceId, Device> devicesOf(Engine& engine) {
  std::map<DeviceId, Device> out;
  const auto devices = engine.reads().listDevices();
  EXPECT_TRUE(devices);
  if (devices)
    for (const auto& d : *devices) out[d.device.id] = d.device;
  return out;
}

class WholeMachineOnSwitchtec : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    auto topology = testing::parseSwitchtecTopology(R"({"pax": [{"id": 0, "hosts": [{"port": 0}, {"port": 1}],
      "endpoints": [{"port": 16}, {"port": 17},
                    {"port": 18, "functions": [{"vendor": "0x15b3", "device": "0x1021", "class": "0x020000"}]},
                    {"port": 19, "functions": [{"vendor": "0x144d", "device": "0xa824", "class": "0x010802"}]}]}]})");
    ASSERT_TRUE(topology) << topology.error().message;
    auto e = testing::SwitchtecEmulator::start({*topology});
    ASSERT_TRUE(e) << e.error().message;
    emulator_ = std::move(*e);
    auto f = SwitchtecFabric::connect({.endpoint = emulator_->endpoint()});
    ASSERT_TRUE(f) << f.error().message;
    switchtec_ = std::move(*f);
  }
  std::unique_ptr<testing::SwitchtecEmulator> emulator_;
  std::unique_ptr<SwitchtecFabric> switchtec_;
};

TEST_F(WholeMachineOnSwitchtec, GpusANicAndADriveAreBoundThroughGfmsAndGivenBackWithTheSystem) {
  start(switchtec_.get());
  const auto devices = devicesOf(*engine_);
  EXPECT_EQ(devices.at("pax0-ep16").kind, DeviceKind::kGpu);
  EXPECT_EQ(devices.at("pax0-ep18").kind, DeviceKind::kNic);
  EXPECT_EQ(devices.at("pax0-ep18").model, "ConnectX-7");
  EXPECT_EQ(devices.at("pax0-ep19").kind, DeviceKind::kNvme);
  EXPECT_EQ(devices.at("pax0-ep19").model, "PM1733");

  const Operation op = run(engine_->blocking().compose(Caller::local(), wholeMachine()));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  // The switch's own database holds all four functions, bound to the one host port of the system's host.
  const auto bound = emulator_->bindings();
  ASSERT_EQ(bound.size(), 4u);
  std::set<std::uint8_t> hostPorts;
  for (const auto& [pdfid, to] : bound) hostPorts.insert(to.hostPort);
  EXPECT_EQ(hostPorts.size(), 1u);
  for (std::uint8_t port : {16, 17, 18, 19})
    EXPECT_TRUE(bound.contains(emulator_->pdfidOf(0, port))) << "pax0-ep" << int(port) << " is not bound";
  auto system = engine_->reads().getSystem("machine");
  ASSERT_TRUE(system);
  EXPECT_EQ(system->bindings.size(), 4u);

  run(engine_->blocking().decompose(Caller::local(), "machine"));
  EXPECT_TRUE(emulator_->bindings().empty()) << "the NIC and the drive went back with the GPUs";
  EXPECT_EQ(freeDevices(), 4u);
}

class WholeMachineOnCxl : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    if (auto why = testing::cseUnavailable(); !why.empty()) GTEST_SKIP() << why;
    std::string why;
    cse_ = testing::CseProcess::start(config_, &why);
    ASSERT_TRUE(cse_) << why;
    auto f = CxlFabric::connect({.endpoint = cse_->endpoint(), .dialect = cxl::Dialect::jackrabbit(), .discoveryTimeout = 10s});
    ASSERT_TRUE(f) << f.error().message << "\ncse log:\n" << cse_->log();
    cxl_ = std::move(*f);
  }
  // Ports 0-1 hosts (VCS 0 and 1), 2-3 GPUs, 4 a ConnectX-7, 5 a PM1733, 6 empty.
  const testing::CseConfig config_{.hosts = 2, .vppbsPerVcs = 8, .gpus = 2, .nics = 1, .drives = 1, .mld = false};
  std::unique_ptr<testing::CseProcess> cse_;
  std::unique_ptr<CxlFabric> cxl_;
};

TEST_F(WholeMachineOnCxl, GpusANicAndADriveAreBoundToTheHostsVcsAsJackSeesThemAndUnboundWithTheSystem) {
  start(cxl_.get());
  const auto devices = devicesOf(*engine_);
  EXPECT_EQ(devices.at("cxl0-ep4").kind, DeviceKind::kNic);
  EXPECT_EQ(devices.at("cxl0-ep4").model, "ConnectX-7");
  EXPECT_EQ(devices.at("cxl0-ep5").kind, DeviceKind::kNvme);
  EXPECT_EQ(devices.at("cxl0-ep5").model, "PM1733");

  const Operation op = run(engine_->blocking().compose(Caller::local(), wholeMachine()));
  ASSERT_EQ(op.state, OperationState::kSucceeded) << op.error;
  auto system = engine_->reads().getSystem("machine");
  ASSERT_TRUE(system);
  const int vcs = system->hostId.back() - '0';  // cxl0-vcsN
  std::set<std::string> ports;
  for (const auto& [vppb, row] : cse_->boundVppbs(vcs)) {
    EXPECT_NE(row.find("Bound Physical Port"), std::string::npos) << row;
    ports.insert(row.substr(0, row.find(' ')));
  }
  EXPECT_EQ(ports, (std::set<std::string>{"2", "3", "4", "5"})) << "jack shows the GPUs, the NIC and the drive on " << system->hostId;
  EXPECT_TRUE(cse_->boundVppbs(1 - vcs).empty());

  run(engine_->blocking().decompose(Caller::local(), "machine"));
  EXPECT_TRUE(cse_->boundVppbs(vcs).empty()) << "the NIC and the drive went back with the GPUs";
}

}  // namespace
}  // namespace switchyard
