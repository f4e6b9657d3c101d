// What the Redfish fabric driver costs in round trips and how it runs calls at once (issue 36): a bind is
// one zone request, a verify reads only its host's VCS (one GET where the service offers $expand), a zone
// changed behind the driver's back is read again, calls on different hosts and a health poll run at once,
// and connections are kept alive. Counted on the emulator (requests and how many it handled at once), not
// timed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <thread>

#include "fabric/redfish/redfish_fabric.h"
#include "tests/support/redfish_cxl_mockup.h"
#include "tests/support/redfish_emulator.h"
#include "tests/support/shared_dir.h"
#include "tests/support/temp_dir.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;

class RedfishRoundTrips : public ::testing::Test {
 protected:
  void start(bool expand, int nicsPerSwitch = 0, int drivesPerSwitch = 0) {
    ASSERT_TRUE(testing::writeCxlMockup(dir_ / "mockup", {.switches = 2, .hostsPerSwitch = 2, .gpusPerSwitch = 4, .nicsPerSwitch = nicsPerSwitch,
                                                          .drivesPerSwitch = drivesPerSwitch, .expand = expand}));
    auto e = testing::RedfishEmulator::start({dir_ / "mockup"});
    ASSERT_TRUE(e) << e.error().message;
    emulator_ = std::move(*e);
    auto f = RedfishFabric::connect({emulator_->url(), "CXL", "admin", "switchyard", 10s});
    ASSERT_TRUE(f) << f.error().message;
    fabric_ = std::move(*f);
  }
  std::uint64_t requests() const {
    return emulator_->requests("GET") + emulator_->requests("POST") + emulator_->requests("PATCH") + emulator_->requests("DELETE");
  }
  testing::TempDir dir_;
  std::unique_ptr<testing::RedfishEmulator> emulator_;
  std::unique_ptr<RedfishFabric> fabric_;
};

TEST_F(RedfishRoundTrips, ABindIsOneZoneRequestAndItsVerifyOneGet) {
  start(true);
  ASSERT_TRUE(fabric_->expands()) << "the mockup's service root offers $expand";
  const auto connected = requests();
  const auto topology = fabric_->discover();
  ASSERT_TRUE(topology);
  EXPECT_EQ(topology->hosts.size(), 4u);
  EXPECT_EQ(topology->devices.size(), 8u);
  EXPECT_EQ(requests(), connected) << "the engine's first discover (at its start) gets what connect read";
  const auto again = fabric_->discover();
  ASSERT_TRUE(again);
  EXPECT_GT(requests(), connected) << "a later discover reads the service";
  EXPECT_EQ(again->devices.size(), 8u);
  const std::vector<Binding> set{{"T1-1", "CXL1-U1"}, {"T1-2", "CXL1-U1"}};
  auto before = requests();
  ASSERT_TRUE(fabric_->bindAll(set));
  EXPECT_EQ(requests() - before, 1u) << "the zones known from connect: no read before the POST";
  before = requests();
  const std::vector<PortId> ports{"CXL1-U1"};
  auto bound = fabric_->readBindingsOf(ports);
  ASSERT_TRUE(bound) << bound.error().message;
  EXPECT_EQ(*bound, set);
  EXPECT_EQ(requests() - before, 1u) << "one GET of host0's VCS's vPPBs, expanded";
  before = requests();
  ASSERT_TRUE(fabric_->bindAll(std::vector<Binding>{{"T1-3", "CXL1-U1"}}));
  EXPECT_EQ(emulator_->requests("PATCH"), 1u);
  EXPECT_EQ(requests() - before, 1u) << "a PATCH with the ETag the POST answered";
  ASSERT_TRUE(fabric_->unbindAll(std::vector<Binding>{{"T1-1", "CXL1-U1"}, {"T1-2", "CXL1-U1"}, {"T1-3", "CXL1-U1"}}));
  EXPECT_EQ(emulator_->requests("DELETE"), 1u) << "the host's last devices left: its zone goes";
  EXPECT_TRUE(fabric_->readBindings()->empty());
}

// Issue 62, item 6: the Redfish driver carries every kind. A target's kind is what its endpoint connects
// (Processor, NetworkController, Drive), and a NIC and a drive are bound into a host's zone like a GPU.
TEST_F(RedfishRoundTrips, NicsAndDrivesAreToldApartByWhatTheirEndpointsConnectAndBoundLikeGpus) {
  start(true, 1, 1);
  const auto topology = fabric_->discover();
  ASSERT_TRUE(topology) << topology.error().message;
  std::map<DeviceId, std::pair<DeviceKind, std::string>> kinds;
  for (const auto& d : topology->devices) kinds[d.id] = {d.kind, d.model};
  ASSERT_EQ(kinds.size(), 12u);
  EXPECT_EQ(kinds["T1-1"], std::pair(DeviceKind::kGpu, std::string("H100")));
  EXPECT_EQ(kinds["T1-5"], std::pair(DeviceKind::kNic, std::string("ConnectX-7")));
  EXPECT_EQ(kinds["T2-6"], std::pair(DeviceKind::kNvme, std::string("PM1743")));
  const std::vector<Binding> set{{"T1-1", "CXL1-U1"}, {"T1-5", "CXL1-U1"}, {"T1-6", "CXL1-U1"}};
  ASSERT_TRUE(fabric_->bindAll(set));
  auto bound = fabric_->readBindingsOf(std::vector<PortId>{"CXL1-U1"});
  ASSERT_TRUE(bound) << bound.error().message;
  EXPECT_EQ(bound->size(), set.size());
  for (const auto& b : set) EXPECT_NE(std::find(bound->begin(), bound->end(), b), bound->end()) << b.deviceId;
  ASSERT_TRUE(fabric_->unbindAll(set));
  EXPECT_TRUE(fabric_->readBindings()->empty());
}

TEST_F(RedfishRoundTrips, WithoutExpandAVerifyReadsTheCollectionThenItsMembersAtOnce) {
  start(false);
  EXPECT_FALSE(fabric_->expands());
  const std::vector<Binding> set{{"T2-1", "CXL2-U1"}, {"T2-4", "CXL2-U1"}};
  ASSERT_TRUE(fabric_->bindAll(set));
  const auto before = emulator_->requests("GET");
  const std::vector<PortId> ports{"CXL2-U1"};
  auto bound = fabric_->readBindingsOf(ports);
  ASSERT_TRUE(bound) << bound.error().message;
  EXPECT_EQ(*bound, set);
  EXPECT_EQ(emulator_->requests("GET") - before, 3u) << "the VPPBs collection, then its two vPPBs together";
}

TEST_F(RedfishRoundTrips, AZoneChangedBehindItsBackIsReadAgainAndTheChangeRetried) {
  start(true);
  ASSERT_TRUE(fabric_->bindAll(std::vector<Binding>{{"T1-1", "CXL1-U1"}}));
  // Another manager adds a device to the same host's zone: the ETag this driver holds is stale.
  auto other = RedfishFabric::connect({emulator_->url(), "CXL", "admin", "switchyard", 10s});
  ASSERT_TRUE(other);
  ASSERT_TRUE((*other)->bindAll(std::vector<Binding>{{"T1-2", "CXL1-U1"}}));
  ASSERT_TRUE(fabric_->bindAll(std::vector<Binding>{{"T1-3", "CXL1-U1"}})) << "a 412, the zones read again, the PATCH sent again";
  auto bound = fabric_->readBindings();
  ASSERT_TRUE(bound);
  EXPECT_EQ(*bound, (std::vector<Binding>{{"T1-1", "CXL1-U1"}, {"T1-2", "CXL1-U1"}, {"T1-3", "CXL1-U1"}})) << "nothing the other manager did was lost";
  // A device the other manager bound elsewhere: the switch's refusal changes nothing.
  ASSERT_TRUE((*other)->bindAll(std::vector<Binding>{{"T1-4", "CXL1-U2"}}));
  auto refused = fabric_->bindAll(std::vector<Binding>{{"T1-4", "CXL1-U1"}});
  ASSERT_FALSE(refused);
  EXPECT_TRUE(changedNothing(refused.error().code)) << refused.error().message;
}

TEST_F(RedfishRoundTrips, CallsOnDifferentHostsAndAHealthPollRunAtOnce) {
  start(true);
  emulator_->setLatency(300ms);
  emulator_->resetMaxInFlight();
  std::vector<std::thread> calls;
  std::vector<Result<void>> results(3);
  calls.emplace_back([&] { results[0] = fabric_->bindAll(std::vector<Binding>{{"T1-1", "CXL1-U1"}}); });
  calls.emplace_back([&] { results[1] = fabric_->bindAll(std::vector<Binding>{{"T2-1", "CXL2-U2"}}); });
  calls.emplace_back([&] {
    auto events = fabric_->pollEvents();
    results[2] = events ? Result<void>{} : fail(events.error());
  });
  for (auto& t : calls) t.join();
  for (const auto& r : results) EXPECT_TRUE(r) << r.error().message;
  EXPECT_EQ(emulator_->maxInFlight(), 3) << "no lock held across a request: two binds and a poll were with the service together";
}

TEST_F(RedfishRoundTrips, ConnectionsAreKeptAliveAndAClosedOneIsReplaced) {
  start(true);
  ASSERT_TRUE(fabric_->readBindings());  // as many connections open as one read of every VCS at once needs
  const auto opened = fabric_->connectionsOpened();
  const auto requestsBefore = requests();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(fabric_->readBindings());
  EXPECT_EQ(requests() - requestsBefore, 20u) << "5 reads of 4 VCSs";
  const auto afterReads = fabric_->connectionsOpened();
  // Without keep-alive each of the 20 requests opens one. The pool's exact size after the first read depends on
  // how the I/O thread interleaved it: 2 new connections were seen once in ~300 runs under load (not explained).
  EXPECT_LT(afterReads - opened, 4u) << "the reads went on connections already open (one a request each without keep-alive)";
  emulator_->dropNext(1);  // the service closes the pooled connection instead of answering a GET
  EXPECT_TRUE(fabric_->readBindings()) << "sent again, once, on a new connection";
  EXPECT_GE(fabric_->connectionsOpened(), afterReads + 1);
}

}  // namespace
}  // namespace switchyard
