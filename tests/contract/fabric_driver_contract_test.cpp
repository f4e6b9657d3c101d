// The contract every FabricDriver must honour (see fabric/fabric_driver.h). A driver joins by adding a
// DriverFactory to INSTANTIATE_TEST_SUITE_P below; its backend describes nothing by hand: the cases find
// the devices and ports they need in what the driver discovers, and skip (saying why) when the inventory
// has no such thing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "net/tls_certificate.h"
#include "fabric/multi_fabric.h"
#include "fabric/redfish/redfish_fabric.h"
#include "fabric/simulated_fabric.h"
#include "fabric/cxl/cxl_fabric.h"
#include "fabric/switchtec/switchtec_fabric.h"
#include "tests/contract/fabric_driver_backend.h"
#include "tests/support/redfish_emulator.h"
#include "tests/support/shared_dir.h"
#include "tests/support/delay_proxy.h"
#include "tests/support/jackrabbit_cse.h"
#include "tests/support/switchtec_emulator.h"
#include "tests/support/temp_dir.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

using testing::DriverBackend;
using testing::DriverFactory;
using namespace std::chrono_literals;

// The roles the cases need, found in a discovered inventory.
struct Inventory {
  Topology topology;
  std::vector<PortId> hostPorts;  // every host upstream port

  // Devices that upstream port `port` can reach (same fabric).
  [[nodiscard]] std::vector<DeviceId> reachableFrom(const PortId& port) const {
    TopologyIndex index(topology);
    const Port* p = index.port(port);
    std::vector<DeviceId> out;
    for (const auto& d : topology.devices)
      if (p && index.fabricOf(*index.switchOfDevice(d.id)) == index.fabricOf(p->switchId)) out.push_back(d.id);
    return out;
  }
  // A device with `ports` host ports that can reach it, and those ports.
  [[nodiscard]] std::optional<std::pair<DeviceId, std::vector<PortId>>> deviceWithPorts(std::size_t ports) const {
    for (const auto& d : topology.devices) {
      std::vector<PortId> reaching;
      for (const auto& p : hostPorts) {
        auto r = reachableFrom(p);
        if (std::find(r.begin(), r.end(), d.id) != r.end()) reaching.push_back(p);
      }
      if (reaching.size() >= ports) return std::pair{d.id, std::vector<PortId>(reaching.begin(), reaching.begin() + static_cast<long>(ports))};
    }
    return std::nullopt;
  }
  // A device and a host port in different fabrics.
  [[nodiscard]] std::optional<Binding> acrossFabrics() const {
    for (const auto& p : hostPorts) {
      auto r = reachableFrom(p);
      for (const auto& d : topology.devices)
        if (std::find(r.begin(), r.end(), d.id) == r.end()) return Binding{d.id, p};
    }
    return std::nullopt;
  }
  [[nodiscard]] std::optional<PortId> nonHostPort() const {
    for (const auto& p : topology.ports)
      if (p.kind != PortKind::kUpstream) return p.id;
    return std::nullopt;
  }
};

class FabricDriverContract : public ::testing::TestWithParam<DriverFactory> {
 protected:
  void SetUp() override {
    backend_ = GetParam().make();
    ASSERT_NE(backend_, nullptr);
    if (auto why = backend_->unavailable(); !why.empty()) GTEST_SKIP() << why;
    auto t = driver().discover();
    ASSERT_TRUE(t) << t.error().message;
    inventory_.topology = std::move(*t);
    for (const auto& h : inventory_.topology.hosts)
      for (const auto& u : h.upstreamPorts) inventory_.hostPorts.push_back(u.portId);
    ASSERT_FALSE(inventory_.hostPorts.empty()) << "the contract needs at least one host upstream port";
  }

  FabricDriver& driver() { return backend_->driver(); }

  std::vector<Binding> bindings() {
    auto r = driver().readBindings();
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : std::vector<Binding>{};
  }
  // `n` devices one host port can reach, with that port; skips the test when the inventory has none.
  std::optional<std::pair<PortId, std::vector<DeviceId>>> devicesBehindOnePort(std::size_t n) {
    for (const auto& p : inventory_.hostPorts)
      if (auto r = inventory_.reachableFrom(p); r.size() >= n) return std::pair{p, std::vector<DeviceId>(r.begin(), r.begin() + static_cast<long>(n))};
    return std::nullopt;
  }

  std::unique_ptr<DriverBackend> backend_;
  Inventory inventory_;
};

#define REQUIRE_ROLE(opt, what) \
  if (!(opt)) GTEST_SKIP() << "this driver's inventory has no " what

TEST_P(FabricDriverContract, DiscoversAValidTopology) {
  EXPECT_TRUE(validateTopology(inventory_.topology));
  EXPECT_FALSE(inventory_.topology.devices.empty());
  auto again = driver().discover();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->devices.size(), inventory_.topology.devices.size()) << "discovery is stable";
}

TEST_P(FabricDriverContract, StartsWithNoBindings) { EXPECT_TRUE(bindings().empty()); }

TEST_P(FabricDriverContract, BindIsIdempotentAndVisible) {
  auto one = devicesBehindOnePort(1);
  REQUIRE_ROLE(one, "device a host port can reach");
  const Binding b{one->second[0], one->first};
  ASSERT_TRUE(driver().bind(b.deviceId, b.upstreamPortId));
  ASSERT_TRUE(driver().bind(b.deviceId, b.upstreamPortId));
  EXPECT_EQ(bindings(), std::vector<Binding>{b});
}

// A verify reads just the host ports it bound to: those rows and no other.
TEST_P(FabricDriverContract, ReadingSomePortsShowsTheirBindingsOnly) {
  REQUIRE_ROLE(inventory_.hostPorts.size() >= 2, "second host port");
  const PortId a = inventory_.hostPorts[0], b = inventory_.hostPorts[1];
  auto ra = inventory_.reachableFrom(a), rb = inventory_.reachableFrom(b);
  std::optional<std::pair<DeviceId, DeviceId>> pair;
  for (const auto& da : ra)
    for (const auto& db : rb)
      if (da != db && !pair) pair = std::pair{da, db};
  REQUIRE_ROLE(pair, "two devices for two host ports");
  ASSERT_TRUE(driver().bind(pair->first, a));
  ASSERT_TRUE(driver().bind(pair->second, b));
  const std::vector<PortId> justA{a};
  auto some = driver().readBindingsOf(justA);
  ASSERT_TRUE(some) << some.error().message;
  EXPECT_EQ(*some, (std::vector<Binding>{{pair->first, a}}));
  const std::vector<PortId> unknown{"no-such-port"};
  auto none = driver().readBindingsOf(unknown);
  EXPECT_TRUE(!none || none->empty()) << "an unknown port is an error or shows nothing";
  EXPECT_EQ(bindings().size(), 2u);
}

TEST_P(FabricDriverContract, BindingABusyDeviceFailsAndChangesNothing) {
  auto shared = inventory_.deviceWithPorts(2);
  REQUIRE_ROLE(shared, "device that two host ports can reach");
  const auto& [device, ports] = *shared;
  ASSERT_TRUE(driver().bind(device, ports[0]));
  auto r = driver().bind(device, ports[1]);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kFailedPrecondition);
  EXPECT_EQ(bindings(), (std::vector<Binding>{{device, ports[0]}}));
}

TEST_P(FabricDriverContract, UnbindIsIdempotentAndChecksThePort) {
  auto shared = inventory_.deviceWithPorts(2);
  REQUIRE_ROLE(shared, "device that two host ports can reach");
  const auto& [device, ports] = *shared;
  ASSERT_TRUE(driver().unbind(device, ports[0])) << "unbinding an unbound device succeeds";
  ASSERT_TRUE(driver().bind(device, ports[0]));
  auto wrong = driver().unbind(device, ports[1]);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, Code::kFailedPrecondition);
  EXPECT_EQ(bindings().size(), 1u);
  ASSERT_TRUE(driver().unbind(device, ports[0]));
  ASSERT_TRUE(driver().unbind(device, ports[0]));
  EXPECT_TRUE(bindings().empty());
}

TEST_P(FabricDriverContract, DoesNotBindAcrossFabrics) {
  auto across = inventory_.acrossFabrics();
  REQUIRE_ROLE(across, "device and host port in different fabrics");
  auto r = driver().bind(across->deviceId, across->upstreamPortId);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_TRUE(bindings().empty());
}

TEST_P(FabricDriverContract, UnknownNamesAreNotFound) {
  auto one = devicesBehindOnePort(1);
  REQUIRE_ROLE(one, "device a host port can reach");
  const auto& [port, devices] = *one;
  EXPECT_EQ(driver().bind("no-such-device", port).error().code, Code::kNotFound);
  EXPECT_EQ(driver().bind(devices[0], "no-such-port").error().code, Code::kNotFound);
  EXPECT_EQ(driver().unbind("no-such-device", port).error().code, Code::kNotFound);
  if (auto downstream = inventory_.nonHostPort())
    EXPECT_EQ(driver().bind(devices[0], *downstream).error().code, Code::kNotFound) << "a port that is not a host port";
}

TEST_P(FabricDriverContract, ConcurrentBindsOfOneDeviceHaveExactlyOneWinner) {
  auto shared = inventory_.deviceWithPorts(2);
  REQUIRE_ROLE(shared, "device that two host ports can reach");
  const auto& [device, ports] = *shared;
  std::atomic<int> wins{0};
  std::vector<std::thread> threads;
  for (const auto& port : ports)  // one bind per port, at once: one binds, the other finds it busy
    threads.emplace_back([&, port] {
      if (driver().bind(device, port)) ++wins;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wins.load(), 1);
  EXPECT_EQ(bindings().size(), 1u);
}

TEST_P(FabricDriverContract, ASetIsBoundInOneCall) {
  auto three = devicesBehindOnePort(3);
  REQUIRE_ROLE(three, "host port that reaches three devices");
  std::vector<Binding> set;
  for (const auto& d : three->second) set.push_back({d, three->first});
  ASSERT_TRUE(driver().bindAll(set));
  auto table = bindings();
  std::sort(table.begin(), table.end(), [](const Binding& a, const Binding& b) { return a.deviceId < b.deviceId; });
  auto want = set;
  std::sort(want.begin(), want.end(), [](const Binding& a, const Binding& b) { return a.deviceId < b.deviceId; });
  EXPECT_EQ(table, want);
  ASSERT_TRUE(driver().bindAll(set)) << "idempotent";
  ASSERT_TRUE(driver().unbindAll(set));
  EXPECT_TRUE(bindings().empty());
  ASSERT_TRUE(driver().unbindAll(set)) << "idempotent";
}

TEST_P(FabricDriverContract, ASetWithOneBadMemberChangesNothing) {
  auto shared = inventory_.deviceWithPorts(2);
  REQUIRE_ROLE(shared, "device that two host ports can reach");
  const auto& [busy, ports] = *shared;
  auto others = inventory_.reachableFrom(ports[0]);
  std::erase(others, busy);
  REQUIRE_ROLE(!others.empty(), "second device behind the same port");
  const DeviceId free = others[0];
  ASSERT_TRUE(driver().bind(busy, ports[1]));
  auto refused = driver().bindAll(std::vector<Binding>{{free, ports[0]}, {busy, ports[0]}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
  EXPECT_TRUE(changedNothing(refused.error().code));
  auto twice = driver().bindAll(std::vector<Binding>{{free, ports[0]}, {free, ports[0]}});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().code, Code::kInvalidArgument);
  auto unknown = driver().bindAll(std::vector<Binding>{{free, ports[0]}, {"no-such-device", ports[0]}});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, Code::kNotFound);
  EXPECT_EQ(bindings(), (std::vector<Binding>{{busy, ports[1]}})) << "none of the refused sets left a binding behind";
  auto wrongPort = driver().unbindAll(std::vector<Binding>{{busy, ports[0]}});
  ASSERT_FALSE(wrongPort);
  EXPECT_EQ(wrongPort.error().code, Code::kFailedPrecondition);
  EXPECT_EQ(bindings().size(), 1u);
}

// Per-call deadlines: a switch slower than the caller's timeout gives kDeadlineExceeded at the timeout,
// not when the switch finally answers; the outcome is unknown, and repeating the call converges.
TEST_P(FabricDriverContract, ACallGivesUpAtItsTimeout) {
  auto two = devicesBehindOnePort(2);
  REQUIRE_ROLE(two, "host port that reaches two devices");
  if (!backend_->setLatency(10s)) GTEST_SKIP() << "this backend cannot slow its switch down";
  const std::vector<Binding> set{{two->second[0], two->first}, {two->second[1], two->first}};
  Clock& clock = backend_->clock();

  Timestamp before = clock.now();
  auto r = driver().bindAll(set, {.timeout = 2s});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kDeadlineExceeded) << r.error().message;
  EXPECT_FALSE(changedNothing(r.error().code)) << "a timed-out call may have been applied";
  EXPECT_GE(clock.now() - before, Duration(1800ms).count()) << "it waited (about) its timeout: a real clock may read a little short";
  EXPECT_LT(clock.now() - before, Duration(10s).count()) << "the call waited for the switch past its own timeout";

  before = clock.now();
  auto read = driver().readBindings({.timeout = 1s});
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, Code::kDeadlineExceeded);
  EXPECT_LT(clock.now() - before, Duration(10s).count());

  ASSERT_TRUE(backend_->setLatency(0s));
  ASSERT_TRUE(driver().bindAll(set, {.timeout = 30s})) << "once the switch answers again, repeating the call converges";
  auto table = driver().readBindings({.timeout = 30s});
  ASSERT_TRUE(table);
  EXPECT_EQ(table->size(), 2u);
  ASSERT_TRUE(driver().unbindAll(set, {.timeout = 30s}));
}

TEST_P(FabricDriverContract, HealthChangesArriveAsEventsOnce) {
  const DeviceId device = inventory_.topology.devices.front().id;
  if (!backend_->raiseHealth(device, DeviceHealth::kCritical)) GTEST_SKIP() << "this backend cannot raise health events";
  auto events = driver().pollEvents();
  ASSERT_TRUE(events) << events.error().message;
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].type, "device.health");
  EXPECT_EQ((*events)[0].subject, device);
  EXPECT_EQ((*events)[0].health, DeviceHealth::kCritical);
  auto again = driver().pollEvents();
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty()) << "an event is delivered once";
}

// A feed that cannot be read is an error, not an empty list, and what happened meanwhile is not lost.
TEST_P(FabricDriverContract, AnUnreadableEventFeedIsAnErrorAndLosesNothing) {
  const DeviceId device = inventory_.topology.devices.back().id;
  if (!backend_->breakEventFeed(2)) GTEST_SKIP() << "this backend cannot break its event feed";
  if (!backend_->raiseHealth(device, DeviceHealth::kWarning)) GTEST_SKIP() << "this backend cannot raise health events";
  for (int i = 0; i < 2; ++i) {
    auto broken = driver().pollEvents();
    ASSERT_FALSE(broken) << "poll " << i + 1 << " of a broken feed returned a list";
    EXPECT_FALSE(broken.error().message.empty());
  }
  auto restored = driver().pollEvents();
  ASSERT_TRUE(restored) << restored.error().message;
  ASSERT_EQ(restored->size(), 1u) << "the event raised while the feed was down arrives once it is back";
  EXPECT_EQ((*restored)[0].subject, device);
}

// The simulated switch: any inventory (here two linked switches, one island) on a manual clock.
class SimulatedBackend final : public DriverBackend {
 public:
  SimulatedBackend() {
    auto f = SimulatedFabric::create(testing::TopologyBuilder()
                                         .sw("a").sw("b").sw("island").link("a", "b")
                                         .gpus("a", 4).gpus("b", 2).gpus("island", 1)
                                         .host("h0", {"a", "b"}).host("h1", {"a"}).host("h2", {"island"})
                                         .build(),
                                     clock_, {});
    if (f) fabric_ = std::move(*f);
  }
  FabricDriver& driver() override { return *fabric_; }
  Clock& clock() override { return clock_; }
  bool setLatency(Duration latency) override {
    fabric_->setLatency(latency);
    return true;
  }
  bool breakEventFeed(int polls) override {
    fabric_->setFaults({.failNext = polls, .failCode = Code::kUnavailable, .targets = kFaultEvents});
    return true;
  }
  bool raiseHealth(const DeviceId& device, DeviceHealth health) override { return fabric_->setDeviceHealth(device, health).has_value(); }

 private:
  ManualClock clock_;
  std::unique_ptr<SimulatedFabric> fabric_;
};

// The Redfish driver against the emulator serving DMTF's multi-switch CXL mockup (two switches joined by a
// fabric link, three hosts, five target devices), with its zones cleared: a fabric with nothing bound.
// Over HTTPS (the driver verifying the emulator's self-signed certificate, as it would a manager's) or,
// behind MultiFabric, plain HTTP.
class RedfishBackend final : public DriverBackend {
 public:
  explicit RedfishBackend(bool https = true) {
    const auto mockup = testing::sharedDir() / "redfish-mockups" / "dmtf-public-cxl-multiswitch";
    if (!std::filesystem::exists(mockup)) {
      why_ = "no Redfish mockup at " + mockup.string() + " (set SWITCHYARD_SHARED_DIR)";
      return;
    }
    testing::RedfishEmulator::Options options{mockup};
    if (https) {
      options.tlsCertificate = certificates_.path() / "cert.pem";
      options.tlsKey = certificates_.path() / "key.pem";
      if (auto made = net::ensureCertificate({options.tlsCertificate, options.tlsKey}, "127.0.0.1"); !made) {
        why_ = made.error().message;
        return;
      }
    }
    auto e = testing::RedfishEmulator::start(options);
    if (!e) {
      why_ = e.error().message;
      return;
    }
    emulator_ = std::move(*e);
    emulator_->clearZones("/redfish/v1/Fabrics/CXL/Zones");
    RedfishFabricOptions driverOptions{emulator_->url(), "CXL", emulator_->options().user, emulator_->options().password, 10s};
    if (https) driverOptions.caFile = options.tlsCertificate.string();
    auto f = RedfishFabric::connect(driverOptions);
    if (!f) {
      why_ = f.error().message;
      return;
    }
    fabric_ = std::move(*f);
  }
  std::string unavailable() const override { return why_; }
  FabricDriver& driver() override { return *fabric_; }
  Clock& clock() override { return clock_; }
  bool setLatency(Duration latency) override {
    emulator_->setLatency(latency);
    return true;
  }
  bool breakEventFeed(int polls) override {
    emulator_->failNext(polls, 503);  // a poll's first request fails, and with it the poll
    return true;
  }
  // Hands the driver over (to a MultiFabric); the backend keeps its emulator, and its faults still work.
  std::unique_ptr<RedfishFabric> releaseFabric() { return std::move(fabric_); }
  bool raiseHealth(const DeviceId& device, DeviceHealth health) override {
    return emulator_->setHealth("/redfish/v1/Fabrics/CXL/Endpoints/" + device,
                                health == DeviceHealth::kCritical ? "Critical" : health == DeviceHealth::kWarning ? "Warning" : "OK");
  }

 private:
  std::string why_;
  SystemClock clock_;
  testing::TempDir certificates_;
  std::unique_ptr<testing::RedfishEmulator> emulator_;
  std::unique_ptr<RedfishFabric> fabric_;
};

// Two fabric domains behind one MultiFabric: a simulated switch (two linked switches and an island) and
// the Redfish driver on the emulator. The cases find their devices in the merged inventory, so they run
// on whichever domain has what they need; the faults reach the domain that owns the device.
class DomainsBackend final : public DriverBackend {
 public:
  DomainsBackend() {
    if (!(why_ = redfish_.unavailable()).empty()) return;
    auto sim = SimulatedFabric::create(testing::TopologyBuilder()
                                           .sw("sim-a").sw("sim-b").sw("sim-island").link("sim-a", "sim-b")
                                           .gpus("sim-a", 3).gpus("sim-b", 1).gpus("sim-island", 1)
                                           .host("sim-h0", {"sim-a", "sim-b"}).host("sim-h1", {"sim-a"}).host("sim-h2", {"sim-island"})
                                           .build(),
                                       clock_, {});
    if (!sim) {
      why_ = sim.error().message;
      return;
    }
    simulated_ = sim->get();
    std::vector<FabricDomain> domains;
    domains.push_back({"sim", std::move(*sim)});
    domains.push_back({"cxl", redfish_.releaseFabric()});
    auto multi = MultiFabric::create(std::move(domains));
    if (!multi) {
      why_ = multi.error().message;
      return;
    }
    fabric_ = std::move(*multi);
  }
  std::string unavailable() const override { return why_; }
  FabricDriver& driver() override { return *fabric_; }
  Clock& clock() override { return clock_; }
  bool setLatency(Duration latency) override {
    simulated_->setLatency(latency);
    return redfish_.setLatency(latency);
  }
  bool breakEventFeed(int polls) override {
    simulated_->setFaults({.failNext = polls, .failCode = Code::kUnavailable, .targets = kFaultEvents});
    return true;
  }
  bool raiseHealth(const DeviceId& device, DeviceHealth health) override {
    if (simulated_->setDeviceHealth(device, health)) return true;
    return redfish_.raiseHealth(device, health);
  }

 private:
  std::string why_;
  SystemClock clock_;
  RedfishBackend redfish_{false};  // plain HTTP here; the "redfish" instance covers HTTPS
  SimulatedFabric* simulated_ = nullptr;  // owned by fabric_
  std::unique_ptr<MultiFabric> fabric_;
};

// The Switchtec driver against the PAX emulator on the management Ethernet transport (real TCP on
// loopback, port 0): two PAX chips joined by a fabric link, two hosts and three GPUs on each, so every
// device is reachable from every host. Faults: the emulator's latency, closed connections (the event
// feed), and AER reports (health; with DPC, critical).
class SwitchtecBackend final : public DriverBackend {
 public:
  SwitchtecBackend() {
    auto e = testing::SwitchtecEmulator::start({testing::generateSwitchtecTopology(2, 2, 3)});
    if (!e) {
      why_ = e.error().message;
      return;
    }
    emulator_ = std::move(*e);
    auto f = SwitchtecFabric::connect({.endpoint = emulator_->endpoint(), .discoveryTimeout = 10s});
    if (!f) {
      why_ = f.error().message;
      return;
    }
    fabric_ = std::move(*f);
  }
  std::string unavailable() const override { return why_; }
  FabricDriver& driver() override { return *fabric_; }
  Clock& clock() override { return clock_; }
  bool setLatency(Duration latency) override {
    emulator_->setLatency(std::chrono::duration_cast<std::chrono::milliseconds>(latency));
    return true;
  }
  bool breakEventFeed(int polls) override {
    emulator_->closeConnections(polls);  // each poll's first command finds its connection closed
    return true;
  }
  bool raiseHealth(const DeviceId& device, DeviceHealth health) override {
    unsigned pax = 0, port = 0;
    if (std::sscanf(device.c_str(), "pax%u-ep%u", &pax, &port) != 2) return false;
    if (health == DeviceHealth::kOk) return false;
    return emulator_->raiseAer(static_cast<std::uint8_t>(pax), static_cast<std::uint8_t>(port), health == DeviceHealth::kCritical);
  }

 private:
  std::string why_;
  SystemClock clock_;
  std::unique_ptr<testing::SwitchtecEmulator> emulator_;
  std::unique_ptr<SwitchtecFabric> fabric_;
};

// The CXL FM-API driver against Jackrabbit Labs' cse (third-party, a process of its own) through a delaying
// proxy: two VCSs, four GPUs, one MLD of four LDs. Faults: the proxy's latency and dropped connections (the
// event feed), and a device disconnected with jack (its link goes down: health critical). cse has no
// warning-level health, so the case that needs one is skipped.
class CxlBackend final : public DriverBackend {
 public:
  CxlBackend() {
    if (why_ = testing::cseUnavailable(); !why_.empty()) return;
    cse_ = testing::CseProcess::start({}, &why_);
    if (!cse_) return;
    proxy_ = testing::DelayProxy::start(cse_->port());
    if (!proxy_) {
      why_ = "the delaying proxy could not listen";
      return;
    }
    auto f = CxlFabric::connect({.endpoint = proxy_->endpoint(), .dialect = cxl::Dialect::jackrabbit(), .discoveryTimeout = 10s});
    if (!f) {
      why_ = f.error().message;
      return;
    }
    why_.clear();
    fabric_ = std::move(*f);
  }
  std::string unavailable() const override { return why_; }
  FabricDriver& driver() override { return *fabric_; }
  Clock& clock() override { return clock_; }
  bool setLatency(Duration latency) override {
    proxy_->setLatency(std::chrono::duration_cast<std::chrono::milliseconds>(latency));
    return true;
  }
  bool breakEventFeed(int polls) override {
    proxy_->dropConnections(polls);
    return true;
  }
  bool raiseHealth(const DeviceId& device, DeviceHealth health) override {
    unsigned port = 0;
    char rest = 0;
    if (health != DeviceHealth::kCritical || std::sscanf(device.c_str(), "cxl0-ep%u%c", &port, &rest) != 1) return false;
    return cse_->jack("port disconnect -p " + std::to_string(port)).find("Error") == std::string::npos;
  }

 private:
  std::string why_;
  SystemClock clock_;
  std::unique_ptr<testing::CseProcess> cse_;
  std::unique_ptr<testing::DelayProxy> proxy_;
  std::unique_ptr<CxlFabric> fabric_;
};

INSTANTIATE_TEST_SUITE_P(Drivers, FabricDriverContract,
                         ::testing::Values(DriverFactory{"simulated", [] { return std::make_unique<SimulatedBackend>(); }},
                                           DriverFactory{"redfish", [] { return std::make_unique<RedfishBackend>(); }},
                                           DriverFactory{"domains", [] { return std::make_unique<DomainsBackend>(); }},
                                           DriverFactory{"switchtec", [] { return std::make_unique<SwitchtecBackend>(); }},
                                           DriverFactory{"cxl", [] { return std::make_unique<CxlBackend>(); }}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace switchyard
