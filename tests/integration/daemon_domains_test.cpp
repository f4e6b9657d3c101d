// Several fabric domains in one pool (yardd --domain): a simulated chassis and a Redfish fabric manager (the
// real redfish-emulator over DMTF's multi-switch CXL mockup) behind one yardd, one pool view, no system
// across domains, capacity per domain and in total, and a restart that finds both domains as it left them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "tests/integration/daemon_fixture.h"

namespace switchyard {
namespace {

using testing::DaemonTest;
using nlohmann::json;

class DomainsTest : public DaemonTest {
 protected:
  // The domain of every device and host upstream port, from the pool view.
  void readDomains() {
    auto topology = yardctlJson("topology");
    for (const auto& sw : topology["switches"]) {
      for (const auto& p : sw["ports"]) domainOfPort_[p["id"].get<std::string>()] = sw["domain"].get<std::string>();
      domainOfSwitch_[sw["id"].get<std::string>()] = sw["domain"].get<std::string>();
    }
    for (const auto& d : topology["devices"]) domainOfDevice_[d["id"].get<std::string>()] = domainOfSwitch_[d["switch_id"].get<std::string>()];
  }
  // The one domain a system's bindings are in (fails the test when they are in several).
  std::string domainOf(const std::string& system) {
    auto s = yardctlJson("systems " + system);
    std::set<std::string> domains;
    for (const auto& b : s["bindings"]) {
      domains.insert(domainOfDevice_.at(b["device_id"].get<std::string>()));
      domains.insert(domainOfPort_.at(b["upstream_port_id"].get<std::string>()));
    }
    EXPECT_EQ(domains.size(), 1u) << s.dump();
    return domains.empty() ? "" : *domains.begin();
  }

  std::map<std::string, std::string> domainOfPort_, domainOfSwitch_, domainOfDevice_;
};

TEST_F(DomainsTest, ASimulatedChassisAndARedfishFabricManagerShareOnePool) {
  auto emulator = startCxlFabricManager(/*https=*/true);
  if (!emulator) GTEST_SKIP() << "no Redfish mockup under ../shared/redfish-mockups";
  // The manager over HTTPS with a self-signed certificate, which yardd trusts because it is told to (ca=).
  const std::vector<std::string> args{"--host-policy-default", "trust-fabric", "--domain", "chassis=simulated,generate-gpus=32", "--domain",
                                      "cxl=redfish,url=https://127.0.0.1:" + std::to_string(emulator->port()) +
                                          ",user=admin,password-file=" + fabricManagerPasswordFile().string() + ",ca=" + fabricManagerCa().string()};
  startDaemon(args);
  readDomains();
  EXPECT_EQ(domainOfSwitch_.at("chassis-sw0"), "chassis");
  EXPECT_EQ(domainOfSwitch_.at("CXL1"), "cxl");
  EXPECT_EQ(yardctlJson("hosts")["hosts"].size(), 8u + 3u) << "the generated chassis' 8 hosts and the mockup's 3";

  // Capacity per domain adds up to the pool's.
  auto capacity = yardctlJson("capacity");
  ASSERT_EQ(capacity["domains"].size(), 2u) << capacity.dump();
  EXPECT_EQ(capacity["domains"][0]["domain"], "chassis");
  EXPECT_EQ(capacity["domains"][0]["free_gpus"], 32);
  EXPECT_EQ(capacity["domains"][1]["domain"], "cxl");
  EXPECT_EQ(capacity["domains"][1]["free_gpus"], 2) << "the mockup's two GPU endpoints reachable as devices";
  EXPECT_EQ(capacity["free_gpus"], 34);
  for (std::size_t i = 0; i < capacity["shapes"].size(); ++i)
    EXPECT_EQ(capacity["shapes"][i].value("placeable", 0),
              capacity["domains"][0]["shapes"][i].value("placeable", 0) + capacity["domains"][1]["shapes"][i].value("placeable", 0));
  auto table = yardctl("capacity");
  EXPECT_NE(table.out.find("DOMAIN"), std::string::npos) << table.out;

  // Compose into each domain; no system spans two.
  auto big = yardctl("compose big --gpus 16");
  ASSERT_EQ(big.exitCode, 0) << big.err << daemon_->log();
  auto accel = yardctl("compose accel --gpus 2 --p2p none --host Host1");
  ASSERT_EQ(accel.exitCode, 0) << accel.err << daemon_->log();
  auto small = yardctl("compose small --gpus 2");
  ASSERT_EQ(small.exitCode, 0) << small.err;
  EXPECT_EQ(domainOf("big"), "chassis");
  EXPECT_EQ(domainOf("accel"), "cxl");
  domainOf("small");
  EXPECT_EQ(yardctlJson("capacity")["domains"][1].value("free_gpus", 0), 0) << "both CXL GPUs are in accel";

  // A restart reads both domains' bindings back: the chassis' state file and the manager's zones.
  daemon_->kill(SIGTERM);
  startDaemon(args);
  EXPECT_EQ(daemon_->log().find("drift: "), std::string::npos) << daemon_->log();
  EXPECT_NE(daemon_->log().find("0 drift(s) found"), std::string::npos);
  for (const char* system : {"big", "accel", "small"}) EXPECT_EQ(yardctlJson(std::string("systems ") + system)["state"], "SYSTEM_STATE_COMPOSED");
  for (const char* system : {"big", "accel", "small"}) ASSERT_EQ(yardctl(std::string("decompose ") + system).exitCode, 0);
  EXPECT_EQ(yardctlJson("capacity")["free_gpus"], 34);
}

TEST_F(DomainsTest, AMisconfiguredDomainStopsYarddWithTheReason) {
  std::ofstream(dir_.path() / "pool.json") << R"({"switches":[{"id":"s0","ports":[{"id":"s0-d0","kind":"downstream"}]}],
    "hosts":[],"devices":[{"id":"g0","port":"s0-d0","kind":"gpu","model":"H100"}]})";
  const std::string pool = (dir_.path() / "pool.json").string();
  auto run = [&](const std::string& flags) {
    return testing::runCommand(std::string(YARDD_PATH) + " --listen 127.0.0.1:0 --plaintext --state-dir " + (dir_.path() / "state").string() +
                                   " " + flags,
                               dir_.path());
  };
  auto same = run("--domain a=simulated,topology=" + pool + " --domain b=simulated,topology=" + pool);
  EXPECT_NE(same.exitCode, 0);
  EXPECT_NE(same.err.find("is reported by domain 'a' and by domain 'b'"), std::string::npos) << same.err;
  auto twice = run("--domain a=simulated,topology=" + pool + " --domain a=simulated,generate-gpus=8");
  EXPECT_NE(twice.exitCode, 0);
  EXPECT_NE(twice.err.find("'a' is named twice"), std::string::npos) << twice.err;
  auto bad = run("--domain a=vendor,url=x");
  EXPECT_NE(bad.exitCode, 0);
  EXPECT_NE(bad.err.find("'vendor' is not a driver"), std::string::npos) << bad.err;
  auto both = run("--domain a=simulated,generate-gpus=8 --driver redfish");
  EXPECT_NE(both.exitCode, 0);
  EXPECT_NE(both.err.find("--domain replaces --driver"), std::string::npos) << both.err;
}

}  // namespace
}  // namespace switchyard
