// The CXL FM-API driver against a switch emulator nobody here wrote: Jackrabbit Labs' cse, one per test,
// judged by their own CLI fabric manager, jack (what it shows bound is what the driver bound, and the
// other way round).
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <thread>

#include "fabric/cxl/cxl_fabric.h"
#include "tests/support/delay_proxy.h"
#include "tests/support/jackrabbit_cse.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;

class CxlFabricTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::cseUnavailable(); !why.empty()) GTEST_SKIP() << why;
    std::string why;
    cse_ = testing::CseProcess::start(config_, &why);
    ASSERT_TRUE(cse_) << why;
  }
  std::unique_ptr<CxlFabric> connect(std::map<std::string, std::string> hostNames = {}) {
    auto f = CxlFabric::connect({.endpoint = cse_->endpoint(), .hostNames = std::move(hostNames), .dialect = cxl::Dialect::jackrabbit(), .discoveryTimeout = 10s});
    EXPECT_TRUE(f) << f.error().message << "\ncse log:\n" << cse_->log();
    return f ? std::move(*f) : nullptr;
  }
  std::map<int, std::string> jackVcs(int vcs) { return cse_->boundVppbs(vcs); }
  static std::vector<Binding> sorted(std::vector<Binding> b) {
    std::sort(b.begin(), b.end(), [](const Binding& x, const Binding& y) { return x.deviceId < y.deviceId; });
    return b;
  }

  testing::CseConfig config_;
  std::unique_ptr<testing::CseProcess> cse_;
};

TEST_F(CxlFabricTest, DiscoveryReadsHostsFromVcssDevicesFromPortsAndOneDevicePerLogicalDevice) {
  auto fabric = connect({{"vcs1", "node-b"}});
  ASSERT_TRUE(fabric);
  auto t = fabric->discover();
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->switches.size(), 1u);
  EXPECT_EQ(t->switches[0].kind, SwitchKind::kCxl);
  EXPECT_EQ(t->ports.size(), 8u);
  ASSERT_EQ(t->hosts.size(), 2u);
  EXPECT_EQ(t->hosts[0].id, "cxl0-vcs0");
  EXPECT_EQ(t->hosts[1].id, "node-b");
  EXPECT_EQ(t->hosts[1].upstreamPorts.at(0).portId, "cxl0-p1");
  EXPECT_EQ(t->hosts[0].maxDevices, 8);
  std::map<DeviceId, Device> devices;
  for (const auto& d : t->devices) devices[d.id] = d;
  ASSERT_EQ(devices.size(), 8u);
  for (int p = 2; p <= 5; ++p) {
    const auto& d = devices.at("cxl0-ep" + std::to_string(p));
    EXPECT_EQ(d.kind, DeviceKind::kGpu);
    EXPECT_EQ(d.model, "H100-SXM5-80GB");  // 10de:2330, read from the configuration space behind the port
    EXPECT_EQ(d.portId, "cxl0-p" + std::to_string(p));
  }
  for (int ld = 0; ld < 4; ++ld) {
    const auto& d = devices.at("cxl0-ep6-ld" + std::to_string(ld));
    EXPECT_EQ(d.kind, DeviceKind::kCxlMemory);
    EXPECT_EQ(d.memoryGiB, 1);  // 4 x 256 MB
    EXPECT_EQ(d.portId, "cxl0-p6");
  }
  EXPECT_TRUE(validateTopology(*t));
}

TEST_F(CxlFabricTest, WhatTheDriverBindsJackSeesBoundAndUnbindLeavesNothing) {
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  const std::vector<Binding> set{{"cxl0-ep2", "cxl0-p0"}, {"cxl0-ep4", "cxl0-p0"}, {"cxl0-ep6-ld1", "cxl0-p0"}};
  ASSERT_TRUE(fabric->bindAll(set));
  EXPECT_EQ(jackVcs(0), (std::map<int, std::string>{{0, "2    - Bound Physical Port"}, {1, "4    - Bound Physical Port"}, {2, "6    1 Bound LD"}}));
  auto read = fabric->readBindings();
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(sorted(*read), sorted(set));
  // Idempotent: binding again changes nothing.
  ASSERT_TRUE(fabric->bindAll(set));
  EXPECT_EQ(jackVcs(0).size(), 3u);
  ASSERT_TRUE(fabric->unbindAll(set));
  EXPECT_TRUE(jackVcs(0).empty());
  ASSERT_TRUE(fabric->unbindAll(set));  // and unbinding what is not bound succeeds
  read = fabric->readBindings();
  ASSERT_TRUE(read);
  EXPECT_TRUE(read->empty());
}

TEST_F(CxlFabricTest, LogicalDevicesOfOneMldGoToDifferentHosts) {
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  ASSERT_TRUE(fabric->bind("cxl0-ep6-ld0", "cxl0-p0"));
  ASSERT_TRUE(fabric->bind("cxl0-ep6-ld3", "cxl0-p1")) << cse_->log();
  EXPECT_EQ(jackVcs(0), (std::map<int, std::string>{{0, "6    0 Bound LD"}}));
  EXPECT_EQ(jackVcs(1), (std::map<int, std::string>{{0, "6    3 Bound LD"}}));
}

TEST_F(CxlFabricTest, ADeviceBoundElsewhereIsRefusedWholeAndNothingIsBound) {
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  ASSERT_TRUE(fabric->bind("cxl0-ep3", "cxl0-p1"));
  const std::vector<Binding> set{{"cxl0-ep2", "cxl0-p0"}, {"cxl0-ep3", "cxl0-p0"}};
  auto refused = fabric->bindAll(set);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition) << refused.error().message;
  EXPECT_TRUE(jackVcs(0).empty());  // ep2 was not bound either
  auto wrongHost = fabric->unbind("cxl0-ep3", "cxl0-p0");
  ASSERT_FALSE(wrongHost);
  EXPECT_EQ(wrongHost.error().code, Code::kFailedPrecondition);
  EXPECT_EQ(fabric->bind("cxl0-ep9", "cxl0-p0").error().code, Code::kNotFound);
  EXPECT_EQ(fabric->bind("cxl0-ep2", "cxl0-p5").error().code, Code::kNotFound);
  const std::vector<Binding> twice{{"cxl0-ep2", "cxl0-p0"}, {"cxl0-ep2", "cxl0-p0"}};
  EXPECT_EQ(fabric->bindAll(twice).error().code, Code::kInvalidArgument);
}

TEST_F(CxlFabricTest, ABindMadeWithJackBehindTheDriversBackIsWhatItReads) {
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  const auto out = cse_->jack("port bind -p 5 -c 1 -b 3");
  EXPECT_EQ(out.find("Error"), std::string::npos) << out;
  auto read = fabric->readBindings();
  ASSERT_TRUE(read);
  EXPECT_EQ(*read, (std::vector<Binding>{{"cxl0-ep5", "cxl0-p1"}}));
  // And a bind of ours skips the vPPB jack took.
  ASSERT_TRUE(fabric->bind("cxl0-ep4", "cxl0-p1"));
  EXPECT_EQ(jackVcs(1), (std::map<int, std::string>{{0, "4    - Bound Physical Port"}, {3, "5    - Bound Physical Port"}}));
}

TEST_F(CxlFabricTest, AVcsWithNoFreeVppbRefusesTheWholeSet) {
  cse_.reset();
  config_.vppbsPerVcs = 2;
  std::string why;
  cse_ = testing::CseProcess::start(config_, &why);
  ASSERT_TRUE(cse_) << why;
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  const std::vector<Binding> three{{"cxl0-ep2", "cxl0-p0"}, {"cxl0-ep3", "cxl0-p0"}, {"cxl0-ep4", "cxl0-p0"}};
  auto refused = fabric->bindAll(three);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
  EXPECT_NE(refused.error().message.find("no unbound vPPB"), std::string::npos) << refused.error().message;
  EXPECT_TRUE(jackVcs(0).empty());
}

TEST_F(CxlFabricTest, ALinkThatGoesDownIsAnEventAndItsDeviceGoesCritical) {
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  const auto out = cse_->jack("port disconnect -p 3");
  EXPECT_EQ(out.find("Error"), std::string::npos) << out;
  auto events = fabric->pollEvents();
  ASSERT_TRUE(events) << events.error().message;
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].type, "device.health");
  EXPECT_EQ((*events)[0].subject, "cxl0-ep3");
  EXPECT_EQ((*events)[0].health, DeviceHealth::kCritical);
  EXPECT_NE((*events)[0].message.find("cxl0-p3"), std::string::npos) << (*events)[0].message;
  auto quiet = fabric->pollEvents();
  ASSERT_TRUE(quiet);
  EXPECT_TRUE(quiet->empty());
}

// The contract's unreadable-feed case needs a warning-level health change cse cannot raise; the same
// property with a link that goes down: polls that cannot reach the switch fail, and lose nothing.
TEST_F(CxlFabricTest, PollsThatCannotReachTheSwitchFailAndTheChangeArrivesAfterwards) {
  auto proxy = testing::DelayProxy::start(cse_->port());
  ASSERT_TRUE(proxy);
  auto f = CxlFabric::connect({.endpoint = proxy->endpoint(), .dialect = cxl::Dialect::jackrabbit(), .discoveryTimeout = 10s});
  ASSERT_TRUE(f) << f.error().message;
  proxy->dropConnections(2);
  EXPECT_EQ(cse_->jack("port disconnect -p 5").find("Error"), std::string::npos);
  for (int i = 0; i < 2; ++i) {
    auto broken = (*f)->pollEvents();
    ASSERT_FALSE(broken) << "poll " << i + 1;
    EXPECT_FALSE(broken.error().message.empty());
  }
  auto events = (*f)->pollEvents();
  ASSERT_TRUE(events) << events.error().message;
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].subject, "cxl0-ep5");
  EXPECT_EQ((*events)[0].health, DeviceHealth::kCritical);
}

TEST_F(CxlFabricTest, TheSpecDialectAgainstCseFailsAndNamesTheDialectToUse) {
  auto f = CxlFabric::connect({.endpoint = cse_->endpoint(), .discoveryTimeout = 5s});
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("jackrabbit"), std::string::npos) << f.error().message;
}

TEST_F(CxlFabricTest, TheDriverHoldsNoConnectionBetweenCallsSoJackCanQuery) {
  auto fabric = connect();
  ASSERT_TRUE(fabric);
  ASSERT_TRUE(fabric->bind("cxl0-ep2", "cxl0-p0"));
  // cse serves one fabric manager at a time: jack would hang (and time out) if the driver kept its session.
  const auto out = cse_->jack("show switch");
  EXPECT_NE(out.find("Num VCSs"), std::string::npos) << out;
}

// The MLD commands through the tunnel (5300h) on their own: Get LD Info, Set LD Allocations and Get LD
// Allocations, what jack then shows.
TEST_F(CxlFabricTest, LdInfoAndAllocationsThroughTheTunnelAsJackSeesThem) {
  auto endpoint = cxl::mctpTcpEndpoint(cse_->endpoint());
  ASSERT_TRUE(endpoint);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  auto session = (*endpoint)->open(deadline);
  ASSERT_TRUE(session) << session.error().message;
  cxl::FmClient client(**session, cxl::Dialect::jackrabbit(), "cse");
  auto info = client.ldInfo(6, deadline);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->memorySize, 4ull << 30);
  EXPECT_EQ(info->ldCount, 4);
  const std::vector<cxl::LdAllocation> halves{{2, 0}, {6, 0}};  // LD 0: 512 MB, LD 1: 1.5 GB
  ASSERT_TRUE(client.setLdAllocations(6, 0, halves, deadline));
  auto read = client.ldAllocations(6, deadline);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_EQ(read->lds.size(), 4u);
  EXPECT_EQ(read->lds[0], halves[0]);
  EXPECT_EQ(read->lds[1], halves[1]);
  EXPECT_EQ(read->lds[2], (cxl::LdAllocation{4, 0}));  // untouched
  EXPECT_EQ(client.commandsSent(), 3u);
  session->reset();  // cse serves one FM at a time: let jack in
  const auto shown = cse_->jack("show ld allocations -p 6");
  EXPECT_NE(shown.find("0: 0x0000000000000002 0x0000000000000000"), std::string::npos) << shown;
  EXPECT_NE(shown.find("1: 0x0000000000000006 0x0000000000000000"), std::string::npos) << shown;
}

// A switch that loses requests (cse does now and then under load: a request read and never answered). The
// driver waits for a reply no longer than its reply timeout, not the call's long deadline, then runs the
// batch once more on a new connection: one loss is invisible, two fail the call and bind nothing.
class LosingEndpoint final : public cxl::FmEndpoint {
 public:
  LosingEndpoint(std::unique_ptr<cxl::FmEndpoint> inner, cxl::Opcode lose, int times) : inner_(std::move(inner)), lose_(lose), left_(times) {}
  Result<std::unique_ptr<cxl::FmSession>> open(cxl::Deadline deadline) override {
    SY_ASSIGN(auto session, inner_->open(deadline));
    return std::unique_ptr<cxl::FmSession>(std::make_unique<Session>(std::move(session), *this));
  }
  std::string describe() const override { return inner_->describe() + " (losing requests)"; }
  int lost() const { return lost_; }

 private:
  struct Session final : cxl::FmSession {
    Session(std::unique_ptr<cxl::FmSession> inner, LosingEndpoint& owner) : inner(std::move(inner)), owner(owner) {}
    Result<void> send(std::uint8_t type, std::span<const std::uint8_t> message, std::uint8_t tag, cxl::Deadline deadline) override {
      // The CCI header's opcode: bytes 3-4, little-endian.
      if (owner.left_ > 0 && message.size() > 4 && (message[3] | message[4] << 8) == static_cast<int>(owner.lose_)) {
        --owner.left_;
        ++owner.lost_;
        return {};
      }
      return inner->send(type, message, tag, deadline);
    }
    Result<cxl::MctpMessage> receive(cxl::Deadline deadline) override { return inner->receive(deadline); }
    std::string describe() const override { return inner->describe(); }
    std::unique_ptr<cxl::FmSession> inner;
    LosingEndpoint& owner;
  };
  std::unique_ptr<cxl::FmEndpoint> inner_;
  cxl::Opcode lose_;
  int left_, lost_ = 0;
};

class CxlLostRequestTest : public CxlFabricTest {
 protected:
  std::unique_ptr<CxlFabric> connectLosing(int times) {
    auto inner = cxl::mctpTcpEndpoint(cse_->endpoint());
    EXPECT_TRUE(inner);
    losing_ = std::make_shared<LosingEndpoint>(std::move(*inner), cxl::Opcode::kBindVppb, times);
    auto f = CxlFabric::connect({.dialect = cxl::Dialect::jackrabbit(), .discoveryTimeout = 10s, .replyTimeout = 300ms, .transport = losing_});
    EXPECT_TRUE(f) << f.error().message;
    return f ? std::move(*f) : nullptr;
  }
  std::shared_ptr<LosingEndpoint> losing_;
};

TEST_F(CxlLostRequestTest, OneLostBindIsSentAgainOnANewConnectionWithinTheReplyTimeout) {
  auto fabric = connectLosing(1);
  ASSERT_TRUE(fabric);
  const auto start = std::chrono::steady_clock::now();
  auto bound = fabric->bindAll({{{"cxl0-ep2", "cxl0-p0"}}}, {.timeout = 60s});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(bound) << bound.error().message;
  EXPECT_EQ(losing_->lost(), 1);
  EXPECT_EQ(fabric->batchReruns(), 1u);
  EXPECT_LT(took, 5s);
  EXPECT_EQ(jackVcs(0), (std::map<int, std::string>{{0, "2    - Bound Physical Port"}}));
}

TEST_F(CxlLostRequestTest, TwoLostBindsFailTheCallSayingSoAndBindNothing) {
  auto fabric = connectLosing(2);
  ASSERT_TRUE(fabric);
  const auto start = std::chrono::steady_clock::now();
  auto bound = fabric->bindAll({{{"cxl0-ep2", "cxl0-p0"}}}, {.timeout = 60s});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(bound);
  EXPECT_EQ(losing_->lost(), 2);
  EXPECT_EQ(bound.error().code, Code::kUnavailable) << bound.error().message;
  EXPECT_NE(bound.error().message.find("no reply to Bind vPPB within 300 ms"), std::string::npos) << bound.error().message;
  EXPECT_LT(took, 5s);
  EXPECT_TRUE(jackVcs(0).empty());
  ASSERT_TRUE(fabric->bindAll({{{"cxl0-ep2", "cxl0-p0"}}}, {.timeout = 10s}));  // the next call, on a new connection, binds
  EXPECT_EQ(jackVcs(0).size(), 1u);
}

// A listener that accepts and never answers: the driver gives up at its deadline.
TEST(CxlFabricDeadlineTest, ASwitchThatNeverAnswersEndsAtTheDiscoveryDeadline) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const auto start = std::chrono::steady_clock::now();
  auto f = CxlFabric::connect({.endpoint = "127.0.0.1:" + std::to_string(ntohs(a.sin_port)), .discoveryTimeout = 300ms});
  const auto took = std::chrono::steady_clock::now() - start;
  ::close(fd);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code, Code::kDeadlineExceeded) << f.error().message;
  EXPECT_LT(took, 5s);
}

}  // namespace
}  // namespace switchyard
