// The Redfish fabric driver against the emulator, beyond the driver contract: how it reads DMTF's
// multi-switch CXL mockup, one zone update per host per call, and what a user sees when the service
// refuses, is down or rejects the credentials.
#include "fabric/redfish/redfish_fabric.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "net/http_server.h"
#include "net/tls_certificate.h"
#include "tests/support/redfish_emulator.h"
#include "tests/support/temp_dir.h"
#include "tests/support/shared_dir.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;

class RedfishFabricTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto mockup = testing::sharedDir() / "redfish-mockups" / "dmtf-public-cxl-multiswitch";
    if (!std::filesystem::exists(mockup)) GTEST_SKIP() << "no Redfish mockup at " << mockup;
    auto e = testing::RedfishEmulator::start({mockup});
    ASSERT_TRUE(e) << e.error().message;
    emulator_ = std::move(*e);
  }
  Result<std::unique_ptr<RedfishFabric>> connect(std::string password = "switchyard") {
    return RedfishFabric::connect({emulator_->url(), "CXL", "admin", std::move(password), 5s});
  }
  static std::size_t count(const std::vector<Binding>& bindings, const PortId& port) {
    return static_cast<std::size_t>(std::count_if(bindings.begin(), bindings.end(), [&](const Binding& b) { return b.upstreamPortId == port; }));
  }
  std::unique_ptr<testing::RedfishEmulator> emulator_;
};

TEST_F(RedfishFabricTest, ReadsTheMockupsFabricAsATopology) {
  auto fabric = connect();
  ASSERT_TRUE(fabric) << fabric.error().message;
  auto t = (*fabric)->discover();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->switches.size(), 2u);
  ASSERT_EQ(t->hosts.size(), 3u) << "Host5's initiator is missing from the Endpoints collection but named by its port";
  auto host2 = std::find_if(t->hosts.begin(), t->hosts.end(), [](const Host& h) { return h.id == "Host2"; });
  ASSERT_NE(host2, t->hosts.end());
  EXPECT_EQ(host2->upstreamPorts.size(), 1u) << "U2 and U3 carry one initiator: a zone cannot tell them apart";
  std::map<DeviceId, DeviceKind> kinds;
  for (const auto& d : t->devices) kinds[d.id] = d.kind;
  EXPECT_EQ(kinds, (std::map<DeviceId, DeviceKind>{{"T1", DeviceKind::kGpu}, {"T2", DeviceKind::kGpu}, {"T3", DeviceKind::kCxlMemory},
                                                   {"T5", DeviceKind::kCxlMemory}}))
      << "T4, a second logical device behind T3's port, is not offered: a port holds one device";
  TopologyIndex index(*t);
  EXPECT_EQ(index.fabricOf("CXL1"), index.fabricOf("CXL2")) << "the fabric ports join the two switches";
}

TEST_F(RedfishFabricTest, WorksThroughASessionAndLogsOut) {
  {
    auto fabric = connect();
    ASSERT_TRUE(fabric) << fabric.error().message;
    EXPECT_EQ(emulator_->sessions(), 1u);
    EXPECT_TRUE((*fabric)->readBindings());
  }
  EXPECT_EQ(emulator_->sessions(), 0u) << "the driver logged out";
}

TEST_F(RedfishFabricTest, TheMockupsZonesAreItsBindings) {
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  auto bindings = (*fabric)->readBindings();
  ASSERT_TRUE(bindings) << bindings.error().message;
  EXPECT_EQ(*bindings, (std::vector<Binding>{{"T1", "CXL1-U1"}, {"T2", "CXL1-U2"}, {"T5", "CXL2-U1"}}));
}

TEST_F(RedfishFabricTest, ACxlSwitchsVppbsNotItsZonesAreWhatIsBound) {
  emulator_->clearZones("/redfish/v1/Fabrics/CXL/Zones");
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  RedfishFabric& f = **fabric;
  const std::vector<Binding> set{{"T1", "CXL1-U1"}, {"T5", "CXL1-U1"}};
  ASSERT_TRUE(f.bindAll(set));
  EXPECT_EQ(*f.readBindings(), set) << "T5, on the other switch, is bound through a vPPB of Host1's VCS (BoundPID)";
  // The switch drops T1's binding (a link went down) while Host1's zone still names it: T1 is not bound.
  ASSERT_TRUE(emulator_->dropVppbBinding("/redfish/v1/Fabrics/CXL/Switches/CXL1/Ports/D1"));
  EXPECT_EQ(*f.readBindings(), (std::vector<Binding>{{"T5", "CXL1-U1"}})) << "what reconcile sees is the switch's state";
  ASSERT_TRUE(f.unbindAll(set));
  EXPECT_TRUE(f.readBindings()->empty());
}

TEST_F(RedfishFabricTest, OneZoneUpdatePerHostPerCall) {
  emulator_->clearZones("/redfish/v1/Fabrics/CXL/Zones");
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  RedfishFabric& f = **fabric;
  const std::vector<Binding> pair{{"T1", "CXL1-U1"}, {"T3", "CXL1-U1"}};
  const auto postsBefore = emulator_->requests("POST");  // the session's login is one
  ASSERT_TRUE(f.bindAll(pair));
  EXPECT_EQ(f.zoneUpdates(), 1u) << "two devices for one host: one zone created";
  EXPECT_EQ(emulator_->requests("POST") - postsBefore, 1u);
  const std::vector<Binding> twoHosts{{"T5", "CXL1-U1"}, {"T2", "CXL1-U2"}};
  ASSERT_TRUE(f.bindAll(twoHosts));
  EXPECT_EQ(f.zoneUpdates(), 3u) << "one PATCH of Host1's zone, one POST for Host2's";
  EXPECT_EQ(emulator_->requests("PATCH"), 1u);
  auto bindings = *f.readBindings();
  EXPECT_EQ(count(bindings, "CXL1-U1"), 3u);
  EXPECT_EQ(count(bindings, "CXL1-U2"), 1u);
  ASSERT_TRUE(f.unbindAll(pair));
  ASSERT_TRUE(f.unbindAll(twoHosts));
  EXPECT_EQ(emulator_->requests("DELETE"), 2u) << "each host's zone goes with its last device (the logout comes later)";
  EXPECT_TRUE(f.readBindings()->empty());
}

// Issue 36 measured a compose on this mockup at about 15 sequential requests; the physical limit is two.
TEST_F(RedfishFabricTest, ABindAndItsVerifyAreTwoRequests) {
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  ASSERT_TRUE((*fabric)->expands()) << "DMTF's service root offers $expand (NoLinks, 3 levels)";
  auto requests = [&] { return emulator_->requests("GET") + emulator_->requests("POST") + emulator_->requests("PATCH"); };
  const auto before = requests();
  const std::vector<Binding> set{{"T3", "CXL1-U1"}};
  ASSERT_TRUE((*fabric)->bindAll(set)) << "a PATCH of Host1's zone";
  const std::vector<PortId> ports{"CXL1-U1"};
  auto bound = (*fabric)->readBindingsOf(ports);
  ASSERT_TRUE(bound);
  EXPECT_EQ(*bound, (std::vector<Binding>{{"T1", "CXL1-U1"}, {"T3", "CXL1-U1"}}));
  EXPECT_EQ(requests() - before, 2u) << "the PATCH, and one expanded GET of Host1's VCS's vPPBs";
}

TEST_F(RedfishFabricTest, ARefusedZoneChangeChangesNothing) {
  emulator_->clearZones("/redfish/v1/Fabrics/CXL/Zones");
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  emulator_->failNext(1, 503, "POST");
  const std::vector<Binding> set{{"T1", "CXL1-U1"}, {"T2", "CXL1-U1"}};
  auto r = (*fabric)->bindAll(set);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_NE(r.error().message.find("injected fault"), std::string::npos) << r.error().message;
  EXPECT_TRUE((*fabric)->readBindings()->empty());
  EXPECT_TRUE((*fabric)->bindAll(set)) << "the next call goes through";
}

TEST_F(RedfishFabricTest, ADroppedConnectionIsUnavailableAndChangesNothing) {
  emulator_->clearZones("/redfish/v1/Fabrics/CXL/Zones");
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  emulator_->dropNext(1);
  const std::vector<Binding> set{{"T1", "CXL1-U1"}};
  auto r = (*fabric)->bindAll(set);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kUnavailable) << r.error().message;
  EXPECT_TRUE((*fabric)->readBindings()->empty());
  EXPECT_TRUE((*fabric)->bindAll(set));
}

TEST_F(RedfishFabricTest, WrongCredentialsStopTheConnectWithTheReason) {
  auto fabric = connect("not-the-password");
  ASSERT_FALSE(fabric);
  EXPECT_EQ(fabric.error().code, Code::kFailedPrecondition);
  EXPECT_NE(fabric.error().message.find("authentication"), std::string::npos) << fabric.error().message;
}

TEST_F(RedfishFabricTest, AServiceThatIsDownIsUnavailable) {
  const std::string url = emulator_->url();
  emulator_.reset();
  auto fabric = RedfishFabric::connect({url, "CXL", "admin", "switchyard", 2s});
  ASSERT_FALSE(fabric);
  EXPECT_EQ(fabric.error().code, Code::kUnavailable) << fabric.error().message;
}

TEST_F(RedfishFabricTest, AFabricThatIsNotThereIsNotFound) {
  auto fabric = RedfishFabric::connect({emulator_->url(), "PCIe9", "admin", "switchyard", 2s});
  ASSERT_FALSE(fabric);
  EXPECT_EQ(fabric.error().code, Code::kNotFound) << fabric.error().message;
}

TEST(RedfishUrl, HttpAndHttps) {
  EXPECT_TRUE(redfish::parseUrl("http://10.0.0.5:8000"));
  EXPECT_EQ(redfish::parseUrl("http://bmc")->port, "80");
  auto secure = redfish::parseUrl("https://10.0.0.5");
  ASSERT_TRUE(secure);
  EXPECT_TRUE(secure->tls);
  EXPECT_EQ(secure->port, "443");
  EXPECT_FALSE(redfish::parseUrl("10.0.0.5:8000"));
  EXPECT_FALSE(redfish::parseUrl("http://host:80x"));
}

// The client verifies a Redfish service's certificate: trusted when pinned, refused otherwise. The
// server here is yardd's own HTTPS server with the self-signed certificate it makes at first start.
TEST(RedfishClientTls, VerifiesTheServersCertificate) {
  testing::TempDir dir;
  const net::CertificateFiles files{dir / "cert.pem", dir / "key.pem"};
  ASSERT_TRUE(net::ensureCertificate(files, "127.0.0.1"));
  auto server = net::HttpServer::start({"127.0.0.1:0", 1, 1 << 20, std::chrono::seconds(5), files},
                                       [](const net::HttpRequest&, net::Reply reply, net::OpenStream, const std::string&) {
                                         net::HttpResponse res{boost::beast::http::status::ok, 11};
                                         res.set(boost::beast::http::field::content_type, "application/json");
                                         res.body() = R"({"Id": "RootService"})";
                                         reply(std::move(res));
                                       });
  ASSERT_TRUE(server) << server.error().message;
  const auto deadline = [] { return std::chrono::steady_clock::now() + 5s; };
  redfish::Endpoint pinned{"127.0.0.1", std::to_string((*server)->port()), {}, {}, true, files.certificate.string()};
  auto ok = redfish::Client(pinned).get("/redfish/v1", deadline());
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->body["Id"], "RootService");
  redfish::Endpoint untrusted = pinned;
  untrusted.caFile.clear();  // the system's store does not know a self-signed certificate
  auto refused = redfish::Client(untrusted).get("/redfish/v1", deadline());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kUnavailable);
  EXPECT_NE(refused.error().message.find("certificate"), std::string::npos) << refused.error().message;
  redfish::Endpoint wrongName = pinned;
  wrongName.host = "localhost";  // in the certificate's names: still trusted
  EXPECT_TRUE(redfish::Client(wrongName).get("/redfish/v1", deadline()));
}

}  // namespace
}  // namespace switchyard
