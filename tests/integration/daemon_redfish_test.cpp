// yardd talking Redfish southbound: a fabric manager's Redfish Fabric as the switch driver, and a host's
// Redfish BMC for the bmc-reset host policy, both served by the real redfish-emulator over DMTF mockups.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "tests/integration/daemon_fixture.h"

namespace switchyard {
namespace {

using testing::DaemonTest;
using nlohmann::json;

// yardd driving a Redfish fabric manager (the emulator over DMTF's multi-switch CXL mockup): compose binds
// through a zone, a restart reads the bindings back from the zones without drift, decompose removes it.
TEST_F(DaemonTest, ComposesThroughARedfishFabricManager) {
  auto emulator = startCxlFabricManager();
  if (!emulator) GTEST_SKIP() << "no Redfish mockup under ../shared/redfish-mockups";
  const std::vector<std::string> args{"--host-policy-default", "trust-fabric", "--driver", "redfish", "--redfish-url", "http://127.0.0.1:" + std::to_string(emulator->port()),
                                      "--redfish-user", "admin", "--redfish-password-file", fabricManagerPasswordFile().string()};
  startDaemon(args);
  auto hosts = yardctlJson("hosts");
  EXPECT_EQ(hosts["hosts"].size(), 3u) << hosts.dump();
  auto composed = yardctl("compose accel --gpus 2 --p2p none");
  ASSERT_EQ(composed.exitCode, 0) << composed.err << daemon_->log();
  auto system = yardctlJson("systems accel");
  ASSERT_EQ(system["bindings"].size(), 2u) << system.dump();

  daemon_->kill(SIGTERM);
  startDaemon(args);
  EXPECT_EQ(daemon_->log().find("drift."), std::string::npos) << "the zones read back as the bindings yardd recorded";
  EXPECT_EQ(yardctlJson("systems accel")["state"], "SYSTEM_STATE_COMPOSED");
  ASSERT_EQ(yardctl("decompose accel").exitCode, 0);
  auto wrongPassword = testing::runCommand(std::string(YARDD_PATH) + " --driver redfish --redfish-url http://127.0.0.1:" +
                                               std::to_string(emulator->port()) + " --redfish-user admin --state-dir " +
                                               (dir_.path() / "other").string(),
                                           dir_.path());
  EXPECT_NE(wrongPassword.exitCode, 0);
  EXPECT_NE(wrongPassword.err.find("authentication"), std::string::npos) << wrongPassword.err;
}

// A cold-plug host (bmc-reset policy) whose BMC is the emulator over DMTF's rack-mount server: compose
// power-cycles it after the bind, decompose shuts it down before the unbind; the other hosts keep their
// simulated agents.
TEST_F(DaemonTest, AColdPlugHostIsResetThroughItsBmc) {
  const auto mockup = std::filesystem::path(SWITCHYARD_SOURCE_DIR) / ".." / "shared" / "redfish-mockups" / "dmtf-public-rackmount1";
  if (!std::filesystem::exists(mockup)) GTEST_SKIP() << "no Redfish mockup at " << mockup;
  testing::DaemonProcess bmc(REDFISH_EMULATOR_PATH, dir_.path() / "bmc");
  std::filesystem::create_directories(dir_.path() / "bmc");
  ASSERT_TRUE(bmc.startProgram({"--mockup", mockup.string()})) << bmc.log();
  std::ofstream(dir_.path() / "bmc-password") << "switchyard\n";
  startDaemon({"--host-policy", "host0=bmc-reset", "--host-bmc", "host0=http://127.0.0.1:" + std::to_string(bmc.port()), "--host-bmc-user",
               "admin", "--host-bmc-password-file", (dir_.path() / "bmc-password").string()});
  auto composed = yardctl("compose cold --gpus 2 --host host0");
  ASSERT_EQ(composed.exitCode, 0) << composed.err << daemon_->log();
  EXPECT_NE(composed.err.find("host-admit"), std::string::npos) << composed.err;
  EXPECT_NE(daemon_->log().find("host host0: ForceRestart through its BMC"), std::string::npos) << daemon_->log();
  auto decomposed = yardctl("decompose cold");
  ASSERT_EQ(decomposed.exitCode, 0) << decomposed.err;
  EXPECT_NE(daemon_->log().find("host host0: shutting down through its BMC"), std::string::npos) << daemon_->log();
  // Another host still goes through its simulated agent and reports a host address.
  ASSERT_EQ(yardctl("compose warm --gpus 1 --host host1").exitCode, 0);
  EXPECT_FALSE(yardctlJson("systems warm")["bindings"][0]["host_pci_address"].get<std::string>().empty());
}

// A switch manager that takes connections and never answers: yardd gives up on reading the fabric after
// --switch-timeout, with an error that says so, for either southbound protocol.
TEST_F(DaemonTest, DiscoveryOfASilentSwitchManagerEndsAtTheSwitchTimeout) {
  const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(silent, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(silent, 64), 0);  // the kernel completes connections; nobody ever reads them
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(silent, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string endpoint = "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  for (const std::string& southbound : {"--driver redfish --redfish-url http://" + endpoint, "--driver switchtec --switchtec " + endpoint}) {
    const auto started = std::chrono::steady_clock::now();
    auto run = testing::runCommand(std::string("timeout 60 ") + YARDD_PATH + " " + southbound + " --switch-timeout 1 --state-dir " +
                                       (dir_.path() / "silent").string(),
                                   dir_.path());
    const auto took = std::chrono::steady_clock::now() - started;
    EXPECT_NE(run.exitCode, 0) << southbound;
    EXPECT_NE(run.exitCode, 124) << southbound << ": still reading the fabric after 60 s";
    EXPECT_LT(took, std::chrono::seconds(15)) << southbound;
    EXPECT_TRUE(run.err.find("deadline") != std::string::npos || run.err.find("in time") != std::string::npos) << southbound << ": " << run.err;
  }
  ::close(silent);
}

}  // namespace
}  // namespace switchyard
