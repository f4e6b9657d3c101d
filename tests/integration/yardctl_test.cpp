// yardctl against the real yardd, as an operator uses it: what it refuses, what it prints, how it reports
// versions and errors (yardd's own behaviour is in daemon_test.cpp).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

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

TEST_F(DaemonTest, YardctlQueuesWhatDoesNotFitAndComposesItWhenCapacityFrees) {
  startDaemon({"--priority-class", "production=1000", "--priority-class", "batch=100", "--priority-class", "spot=0:preemptible"});
  ASSERT_EQ(yardctl("compose a --gpus 8").exitCode, 0);
  ASSERT_EQ(yardctl("compose b --gpus 8 --lease 2h --label team=vision").exitCode, 0);
  auto refused = yardctl("compose c --gpus 8");
  EXPECT_EQ(refused.exitCode, 3) << "without --queue it is refused as before";
  auto bad = yardctl("compose c --gpus 8 --queue --queue-timeout soon");
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.err.find("not a duration"), std::string::npos) << bad.err;
  auto badClass = yardctl("compose c --gpus 8 --queue --priority vip");
  EXPECT_EQ(badClass.exitCode, 2);
  EXPECT_NE(badClass.err.find("no priority class 'vip'"), std::string::npos) << badClass.err;

  const json queued = yardctlJson("compose c --gpus 8 --queue --priority production --queue-timeout 1h --lease 30m --no-wait");
  EXPECT_EQ(queued["state"], "OPERATION_STATE_QUEUED");
  EXPECT_EQ(queued["queued"]["priority_class"], "production");
  const std::string id = queued["id"];
  const json queue = yardctlJson("queue");
  ASSERT_EQ(queue["entries"].size(), 1u);
  EXPECT_EQ(queue["entries"][0]["position"], 1);
  EXPECT_EQ(queue["entries"][0]["name"], "c");
  EXPECT_EQ(queue["entries"][0]["ticket"]["lease_seconds"], "1800");
  EXPECT_FALSE(queue["entries"][0]["waiting_for"].get<std::string>().empty());
  auto table = yardctl("queue");
  EXPECT_NE(table.out.find("production"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("8 GPU(s)"), std::string::npos) << table.out;
  EXPECT_EQ(yardctlJson("systems c")["state"], "SYSTEM_STATE_QUEUED");

  ASSERT_EQ(yardctl("decompose a").exitCode, 0);
  auto waited = yardctl("ops wait " + id);
  EXPECT_EQ(waited.exitCode, 0) << waited.err;
  const json c = yardctlJson("systems c");
  EXPECT_EQ(c["state"], "SYSTEM_STATE_COMPOSED");
  EXPECT_FALSE(c["lease_expires_at"].get<std::string>().empty()) << "the lease asked for in the queue starts at admission";
  EXPECT_EQ(yardctlJson("queue")["entries"].size(), 0u);

  auto renewed = yardctl("renew b --lease 4h");
  EXPECT_EQ(renewed.exitCode, 0) << renewed.err;
  EXPECT_NE(renewed.out.find("lease until"), std::string::npos) << renewed.out;
  ASSERT_EQ(yardctl("compose d --gpus 8 --queue --no-wait").exitCode, 0);
  auto cancelled = yardctl("queue cancel d");
  EXPECT_EQ(cancelled.exitCode, 0) << cancelled.err;
  EXPECT_NE(cancelled.out.find("cancelled"), std::string::npos) << cancelled.out;
  EXPECT_EQ(yardctl("queue cancel d").exitCode, 3) << "gone: not found";
  // Issue 63: decomposing a queued system cancels it, which is what was asked: 0, as `queue cancel` ends.
  ASSERT_EQ(yardctl("compose e --gpus 8 --queue --no-wait").exitCode, 0);
  auto dropped = yardctl("decompose e");
  EXPECT_EQ(dropped.exitCode, 0) << dropped.out << dropped.err;
  EXPECT_NE(dropped.out.find("e was queued: its request op-"), std::string::npos) << dropped.out;
  EXPECT_EQ(yardctlJson("queue")["entries"].size(), 0u);

  // Usage from the operation log: by tenant, as CSV for spreadsheets; CSV is for usage only.
  const json usage = yardctlJson("usage --by tenant");
  ASSERT_EQ(usage["rows"].size(), 1u) << usage.dump();
  EXPECT_EQ(usage["rows"][0]["tenant"], "default");
  EXPECT_GT(usage["total_gpu_hours"].get<double>(), 0.0);
  auto csv = yardctl("-o csv usage --by model");
  EXPECT_EQ(csv.exitCode, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("tenant,system_id,system_name,model,gpu_hours,systems,idle_gpu_hours,memory_gib_hours,device_hours\n", 0), 0u) << csv.out;
  // Issue 63: a decomposed system keeps its name in usage and its CSV (a was decomposed above).
  const json bySystem = yardctlJson("usage --by system");
  std::set<std::string> named;
  for (const auto& row : bySystem["rows"]) named.insert(row["system_name"].get<std::string>());
  EXPECT_TRUE(named.contains("a")) << bySystem.dump();
  EXPECT_FALSE(named.contains("")) << bySystem.dump();
  EXPECT_NE(yardctl("-o csv usage").out.find(",a,"), std::string::npos);
  EXPECT_EQ(yardctl("-o csv systems").exitCode, 2);
  EXPECT_EQ(yardctl("usage --since yesterday").exitCode, 2);
  // Issue 63: grouped by a label: b carries team=vision; a and c none (one group of their own: "-" in the table,
  // an empty CSV cell, no key in JSON).
  const json byTeam = yardctlJson("usage --by tenant,label:team");
  ASSERT_EQ(byTeam["rows"].size(), 2u) << byTeam.dump();
  EXPECT_TRUE(byTeam["rows"][0]["labels"].empty()) << byTeam.dump();
  EXPECT_EQ(byTeam["rows"][0]["systems"], 2) << byTeam.dump();
  EXPECT_EQ(byTeam["rows"][1]["labels"]["team"], "vision") << byTeam.dump();
  EXPECT_EQ(byTeam["rows"][1]["systems"], 1) << byTeam.dump();
  auto teamCsv = yardctl("-o csv usage --by tenant,label:team");
  EXPECT_NE(teamCsv.out.find("device_hours,label:team\ndefault,,,,"), std::string::npos) << teamCsv.out;
  EXPECT_NE(teamCsv.out.find(",vision\n"), std::string::npos) << teamCsv.out;
  const auto teamTable = yardctl("usage --by label:team").out;
  EXPECT_NE(teamTable.find("TEAM"), std::string::npos) << teamTable;
  EXPECT_NE(teamTable.find("vision"), std::string::npos) << teamTable;
  auto badBy = yardctl("usage --by label:");
  EXPECT_EQ(badBy.exitCode, 2) << badBy.err;
  EXPECT_NE(badBy.err.find("is not a label key"), std::string::npos) << badBy.err;
}

}  // namespace
// yardctl plan --priority CLASS: a request that does not fit names whom preemption would take for it.
TEST_F(DaemonTest, YardctlPlanNamesWhomPreemptionWouldTakeBack) {
  startDaemon();  // the built-in classes: production and batch preempt, spot is preemptible
  ASSERT_EQ(yardctl("compose cheap --gpus 8 --priority spot").exitCode, 0);
  ASSERT_EQ(yardctl("compose steady --gpus 8").exitCode, 0);
  auto plan = yardctl("plan --gpus 8 --priority production");
  EXPECT_EQ(plan.exitCode, 3) << "it does not fit now";
  EXPECT_NE(plan.out.find("preemption would take back 1 system(s)"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("cheap"), std::string::npos) << plan.out;
  EXPECT_EQ(plan.out.find("steady"), std::string::npos) << "batch is not preemptible: " << plan.out;
  const json asJson = json::parse(yardctl("-o json plan --gpus 8 --priority production").out);
  ASSERT_EQ(asJson["would_preempt"].size(), 1u) << asJson.dump();
  EXPECT_EQ(asJson["would_preempt"][0]["priority_class"], "spot");
  EXPECT_FALSE(asJson["host_after_preemption"].get<std::string>().empty());
  EXPECT_EQ(yardctlJson("systems cheap")["state"], "SYSTEM_STATE_COMPOSED") << "a plan changes nothing";
  EXPECT_EQ(yardctl("plan --gpus 8 --priority urgent").exitCode, 2);
}

// --priority-class spot=0:preemptible:requeue: the spot system a production request preempts waits in the queue
// again under its name and labels (yardctl queue says who queued it), and comes back once the GPUs free.
TEST_F(DaemonTest, APreemptedSystemOfARequeueingClassWaitsInTheQueueAgainAndComesBack) {
  startDaemon({"--priority-class", "production=1000:preempting", "--priority-class", "batch=100:preempting", "--priority-class",
               "spot=0:preemptible:requeue", "--preemption-grace", "1s"});
  ASSERT_EQ(yardctl("compose cheap --gpus 8 --priority spot --label team=vision").exitCode, 0);
  ASSERT_EQ(yardctl("compose steady --gpus 8").exitCode, 0);
  const auto plan = yardctl("plan --gpus 8 --priority production");
  EXPECT_NE(plan.out.find("8 GPU(s), queued again"), std::string::npos) << "the plan says the victim comes back: " << plan.out;
  const json planned = json::parse(yardctl("-o json plan --gpus 8 --priority production").out);  // exit 3: it does not fit now
  ASSERT_EQ(planned["would_preempt"].size(), 1u) << planned.dump();
  EXPECT_EQ(planned["would_preempt"][0]["requeued"], true) << planned.dump();
  const auto urgent = yardctl("compose urgent --gpus 8 --priority production --queue");  // follows it until admitted
  ASSERT_EQ(urgent.exitCode, 0) << urgent.out << urgent.err;
  const json cheap = yardctlJson("systems cheap");
  EXPECT_EQ(cheap["state"], "SYSTEM_STATE_QUEUED") << cheap.dump();
  EXPECT_EQ(cheap["labels"]["team"], "vision") << cheap.dump();
  const json queue = yardctlJson("queue");
  ASSERT_EQ(queue["entries"].size(), 1u) << queue.dump();
  EXPECT_EQ(queue["entries"][0]["name"], "cheap");
  EXPECT_EQ(queue["entries"][0]["requested_by"], "yardd (preemption)");
  EXPECT_EQ(queue["entries"][0]["ticket"]["priority_class"], "spot");
  const json decomposes = yardctlJson("ops --kind decompose");
  ASSERT_EQ(decomposes["operations"].size(), 1u) << decomposes.dump();
  EXPECT_EQ(decomposes["operations"][0]["requested_by"]["identity"], "yardd (preemption)") << decomposes.dump();
  EXPECT_FALSE(decomposes["operations"][0].contains("queued")) << "a queue ticket is a compose's: " << decomposes.dump();
  EXPECT_EQ(decomposes["operations"][0]["requeues_as"], "cheap") << decomposes.dump();
  const auto shown = yardctl("ops show " + decomposes["operations"][0]["id"].get<std::string>());
  EXPECT_NE(shown.out.find("then:  queues cheap again (preempted)"), std::string::npos) << shown.out;

  ASSERT_EQ(yardctl("decompose urgent").exitCode, 0);
  json back;
  for (int i = 0; i < 500; ++i) {
    back = yardctlJson("systems cheap");
    if (back["state"] == "SYSTEM_STATE_COMPOSED") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(back["state"], "SYSTEM_STATE_COMPOSED") << back.dump();
  EXPECT_EQ(back["bindings"].size(), 8u) << back.dump();
}

// What the compose asked for beside its shape (a pinned host, a GPU's least memory) is stored with the system: a yardd
// started after the compose asks for it again when it preempts and requeues the system.
TEST_F(DaemonTest, ARequeueAfterARestartAsksAgainForThePinnedHostItsComposeAskedFor) {
  const std::vector<std::string> classes{"--priority-class", "production=1000:preempting", "--priority-class", "batch=100:preempting",
                                         "--priority-class", "spot=0:preemptible:requeue", "--preemption-grace", "1s"};
  startDaemon(classes);
  ASSERT_EQ(yardctl("compose cheap --gpus 8 --priority spot --host host1 --min-memory 40").exitCode, 0);
  ASSERT_EQ(yardctl("compose steady --gpus 8").exitCode, 0);
  daemon_->kill(SIGTERM);
  ASSERT_TRUE(daemon_->waitExit(10s)) << daemon_->log();
  daemon_ = std::make_unique<testing::DaemonProcess>(YARDD_PATH, dir_.path());  // the same state directory
  startDaemon(classes);
  ASSERT_EQ(yardctl("compose urgent --gpus 8 --priority production --queue").exitCode, 0);
  const json queue = yardctlJson("queue");
  ASSERT_EQ(queue["entries"].size(), 1u) << queue.dump() << daemon_->log();
  EXPECT_EQ(queue["entries"][0]["name"], "cheap");
  EXPECT_EQ(queue["entries"][0]["gpus"]["host"], "host1") << queue.dump();
  EXPECT_EQ(queue["entries"][0]["gpus"]["min_memory_gib"], 40) << queue.dump();
}

// The same, with yardd killed (SIGKILL, a fail point) right after the victim's unbind call, before the decompose
// ended: the next yardd resumes the decompose, and its end queues the system again, from what the stored decompose
// carries.
TEST_F(DaemonTest, APreemptedSystemIsQueuedAgainByTheYarddThatFinishesItsDecomposeAfterAKill) {
  const std::vector<std::string> classes{"--priority-class", "production=1000:preempting", "--priority-class", "batch=100:preempting",
                                         "--priority-class", "spot=0:preemptible:requeue", "--preemption-grace", "1s"};
  std::vector<std::string> dying = classes;
  dying.insert(dying.end(), {"--fail-point", "step.unbind.after-call=crash@1"});  // no unbind comes before the victim's
  startDaemon(dying);
  ASSERT_EQ(yardctl("compose cheap --gpus 8 --priority spot --label team=vision").exitCode, 0);
  ASSERT_EQ(yardctl("compose steady --gpus 8").exitCode, 0);
  ASSERT_EQ(yardctl("compose urgent --gpus 8 --priority production --queue --no-wait").exitCode, 0);
  ASSERT_TRUE(daemon_->waitExit(10s)) << daemon_->log();
  ASSERT_EQ(daemon_->signaled(), SIGKILL) << daemon_->log();

  daemon_ = std::make_unique<testing::DaemonProcess>(YARDD_PATH, dir_.path());  // the same state directory
  startDaemon(classes);
  json urgent;
  for (int i = 0; i < 500; ++i) {
    urgent = yardctlJson("systems urgent");
    if (urgent["state"] == "SYSTEM_STATE_COMPOSED") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(urgent["state"], "SYSTEM_STATE_COMPOSED") << urgent.dump() << daemon_->log();
  const json cheap = yardctlJson("systems cheap");
  EXPECT_EQ(cheap["state"], "SYSTEM_STATE_QUEUED") << cheap.dump() << daemon_->log();
  EXPECT_EQ(cheap["labels"]["team"], "vision") << cheap.dump();
  const json queue = yardctlJson("queue");
  ASSERT_EQ(queue["entries"].size(), 1u) << queue.dump();
  EXPECT_EQ(queue["entries"][0]["requested_by"], "yardd (preemption)");
}

}  // namespace switchyard
