// yardctl against the real yardd, as an operator uses it: what it refuses, what it prints, how it reports
// versions and errors (yardd's own behaviour is in daemon_test.cpp).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "composer/model/version.h"
#include "tests/integration/daemon_fixture.h"

namespace switchyard {
namespace {

using testing::DaemonTest;
namespace pb = ::switchyard::v1;
using nlohmann::json;
using namespace std::chrono_literals;

TEST_F(DaemonTest, EveryBinaryAndEveryAnswerNamesItsVersion) {
  for (const std::string binary : {YARDD_PATH, YARDCTL_PATH, YARD_AGENT_PATH}) {
    auto r = testing::runCommand(binary + " --version", dir_.path());
    EXPECT_EQ(r.exitCode, 0) << binary << ": " << r.err;
    const std::string name = std::filesystem::path(binary).filename().string();
    EXPECT_EQ(r.out.rfind(name + " " + std::string(projectVersion()), 0), 0u) << r.out;
  }
  startDaemon();
  grpc::ClientContext ctx;
  pb::ListSystemsResponse systems;
  ASSERT_TRUE(stub_->ListSystems(&ctx, pb::ListSystemsRequest{}, &systems).ok());
  const auto& initial = ctx.GetServerInitialMetadata();
  auto version = initial.find("switchyard-version");
  ASSERT_NE(version, initial.end()) << "yardd names its version in every answer's metadata";
  EXPECT_EQ(std::string(version->second.data(), version->second.size()), projectVersion());
}

TEST_F(DaemonTest, YardctlNeverPrintsTerminalControlsFromWhatOthersTyped) {
  startDaemon();
  // A refused compose keeps its raw name in the audit trail: an escape sequence and a right-to-left override.
  auto refused = yardctl("compose \"$(printf '\\033[2Jevil\\342\\200\\256abc')\" --gpus 1");
  EXPECT_EQ(refused.exitCode, 2);
  for (const std::string& args : {std::string("audit"), std::string("-o json audit")}) {
    auto shown = yardctl(args);
    ASSERT_EQ(shown.exitCode, 0) << shown.err;
    EXPECT_EQ(shown.out.find('\x1b'), std::string::npos) << args;
    EXPECT_EQ(shown.out.find("\xe2\x80\xae"), std::string::npos) << args;
    EXPECT_NE(shown.out.find("evil"), std::string::npos) << args << ": " << shown.out;
  }
  EXPECT_EQ(refused.err.find('\x1b'), std::string::npos) << "errors too";
}

TEST_F(DaemonTest, YardctlRefusesFlagsThatWouldBeSilentlyIgnoredOrMisread) {
  startDaemon();
  auto both = yardctl("compose a --mig 3g --gpus 2");
  EXPECT_EQ(both.exitCode, 2);
  EXPECT_NE(both.err.find("--gpus excludes --mig"), std::string::npos) << both.err;
  auto shareAndDevices = yardctl("compose a --gpu-share 0.5 -d sw0-gpu0");
  EXPECT_EQ(shareAndDevices.exitCode, 2) << shareAndDevices.err;
  auto negative = yardctl("compose a --gpus -1");
  EXPECT_EQ(negative.exitCode, 2);
  EXPECT_NE(negative.err.find("not in range 0 to 4096"), std::string::npos) << negative.err;
  for (const std::string server : {"127.0.0.1", "127.0.0.1:99999", "127.0.0.1:0"}) {
    auto r = testing::runCommand(std::string(YARDCTL_PATH) + " --plaintext --server " + server + " systems", dir_.path());
    EXPECT_EQ(r.exitCode, 2) << server;
    EXPECT_NE(r.err.find("--server " + server + ":"), std::string::npos) << r.err;
  }
  EXPECT_EQ(yardctlJson("systems")["systems"].size(), 0u) << "nothing was composed";
  // Under -o json, an error is JSON too.
  auto missing = yardctl("-o json decompose ghost");
  EXPECT_EQ(missing.exitCode, 3);
  const json error = json::parse(missing.err)["error"];
  EXPECT_EQ(error["code"], "NOT_FOUND");
  EXPECT_EQ(error["exit_code"], 3);
  EXPECT_NE(error["message"].get<std::string>().find("ghost"), std::string::npos) << missing.err;
  // --after 0 replays every recorded event, the first one included.
  auto replay = testing::runCommand("timeout 2 " + std::string(YARDCTL_PATH) + " --server " + daemon_->address() + " --plaintext -o json watch --after 0",
                           dir_.path());
  ASSERT_FALSE(replay.out.empty()) << replay.err;
  EXPECT_NE(replay.out.find("\"sequence\": \"1\""), std::string::npos) << replay.out;
}

}  // namespace
}  // namespace switchyard
