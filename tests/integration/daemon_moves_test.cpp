// Defragmentation on the real yardd (ADR 0033): moves of idle GPUs of a system labelled movable=true, as yardctl
// plans and sees them, and a move killed half-way that the next yardd finishes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/daemon_fixture.h"

namespace switchyard {
namespace {

using testing::DaemonTest;
using nlohmann::json;
using namespace std::chrono_literals;

// Defragmentation end to end (ADR 0033): the real yardd on a simulated pool of two switches of 4 GPUs of one model,
// four hosts each cabled to both, its simulated hosts sampled every second. A system labelled movable=true idles on
// two GPUs under sw0 while sw1 has two free: 4 GPUs under one switch fit nowhere. `yardctl plan` says which idle GPUs
// a pass would move; queued, the request gets sw0 once they moved to sw1.
class DaemonMoveTest : public DaemonTest {
 protected:
  // Two switches of 4 GPUs of one model, four hosts each cabled to both: the pool file's path.
  std::string twoSwitchPool() {
    json pool = {{"switches", json::array()}, {"hosts", json::array()}, {"devices", json::array()}};
    for (const std::string sw : {"sw0", "sw1"}) {
      json ports = json::array();
      for (int i = 0; i < 4; ++i) {
        ports.push_back({{"id", fmt::format("{}-usp{}", sw, i)}, {"kind", "upstream"}});
        ports.push_back({{"id", fmt::format("{}-dsp{}", sw, i)}, {"kind", "downstream"}});
        pool["devices"].push_back(
            {{"id", fmt::format("{}-gpu{}", sw, i)}, {"port", fmt::format("{}-dsp{}", sw, i)}, {"model", "H100-SXM5-80GB"}, {"memoryGiB", 80}});
      }
      pool["switches"].push_back({{"id", sw}, {"ports", ports}});
    }
    for (int h = 0; h < 4; ++h)
      pool["hosts"].push_back({{"id", fmt::format("host{}", h)},
                               {"upstreamPorts", {{{"port", fmt::format("sw0-usp{}", h)}}, {{"port", fmt::format("sw1-usp{}", h)}}}}});
    std::ofstream(dir_.path() / "pool.json") << pool.dump();
    return (dir_.path() / "pool.json").string();
  }
  // yardd on that pool, its simulated hosts sampled every second, with `more` flags; then "idle" (movable=true) on
  // two GPUs under sw0 and "steady" on two under sw1, both sampled idle: 4 GPUs under one switch fit nowhere.
  void startWithAnIdleMovableSystem(std::vector<std::string> more = {}) {
    std::vector<std::string> args{"--topology", twoSwitchPool(), "--activity-interval", "1s"};
    args.insert(args.end(), more.begin(), more.end());
    startDaemon(args);
    ASSERT_EQ(yardctl("compose idle -d sw0-gpu0 -d sw0-gpu1 --host host0 --label movable=true").exitCode, 0);
    ASSERT_EQ(yardctl("compose steady -d sw1-gpu0 -d sw1-gpu1 --host host1").exitCode, 0);
    json idle = json::object();
    for (int i = 0; i < 100 && idle.value("gpus", json::array()).size() < 4; ++i) {  // both systems' GPUs sampled idle
      std::this_thread::sleep_for(100ms);
      idle = yardctlJson("idle --for 0s");
    }
    ASSERT_EQ(idle["gpus"].size(), 4u) << idle.dump() << daemon_->log();
  }
  // Operations asked by defragmentation.
  int movesStarted() {
    int n = 0;
    const json ops = yardctlJson("ops");  // held: a range-for over a temporary's member would dangle
    for (const auto& op : ops["operations"])
      if (op["requested_by"]["identity"] == "yardd (defragmentation)") ++n;
    return n;
  }
};

TEST_F(DaemonMoveTest, IdleGpusOfAMovableSystemMoveToMakeRoomAndYardctlPlanSaysSoFirst) {
  startWithAnIdleMovableSystem();

  auto plan = yardctl("plan --gpus 4 --p2p required");
  EXPECT_EQ(plan.exitCode, 3) << "it does not fit now: " << plan.out << plan.err;
  EXPECT_NE(plan.out.find("moving 2 idle GPU(s) of 1 system(s) labelled movable=true would make room"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("sw0-gpu0,sw0-gpu1 -> sw1-gpu2,sw1-gpu3"), std::string::npos) << plan.out;
  const json asJson = json::parse(yardctl("-o json plan --gpus 4 --p2p required").out);
  ASSERT_EQ(asJson["would_move"].size(), 1u) << asJson.dump();
  EXPECT_EQ(asJson["would_move"][0]["name"], "idle");
  EXPECT_FALSE(asJson["host_after_moves"].get<std::string>().empty()) << asJson.dump();
  EXPECT_EQ(yardctlJson("systems idle")["bindings"].size(), 2u) << "a plan changes nothing";

  auto big = yardctl("compose big --gpus 4 --p2p required --queue");
  ASSERT_EQ(big.exitCode, 0) << big.out << big.err << daemon_->log();
  const json placed = yardctlJson("systems big");  // held: a range-for over a temporary's member would dangle
  ASSERT_EQ(placed["bindings"].size(), 4u) << placed.dump();
  for (const auto& b : placed["bindings"]) EXPECT_EQ(b["device_id"].get<std::string>().rfind("sw0-", 0), 0u) << b.dump();
  const json moved = yardctlJson("systems idle");
  ASSERT_EQ(moved["bindings"].size(), 2u) << moved.dump();
  for (const auto& b : moved["bindings"]) EXPECT_EQ(b["device_id"].get<std::string>().rfind("sw1-", 0), 0u) << moved.dump();
  EXPECT_EQ(movesStarted(), 2) << "an attach and a detach";
  const json attaches = yardctlJson("ops --kind attach");
  ASSERT_EQ(attaches["operations"].size(), 1u) << attaches.dump();
  EXPECT_EQ(attaches["operations"][0]["replaces"], json::array({"sw0-gpu0", "sw0-gpu1"})) << "what the move's attach replaces";
}

// yardd killed (SIGKILL, a fail point) right after a move's attach ended, before its detach started: the plan was in
// memory, the attach's record says what it replaces, and the restarted yardd gives up the idle GPUs, so the system
// does not keep both sets and the queued request gets the switch.
TEST_F(DaemonMoveTest, AMoveKilledBetweenItsAttachAndItsDetachIsFinishedByTheNextYardd) {
  // The third operation to finish: the composes of idle and steady, then the move's attach.
  startWithAnIdleMovableSystem({"--fail-point", "operation.after-finish=crash@3"});
  ASSERT_EQ(yardctl("compose big --gpus 4 --p2p required --queue --no-wait").exitCode, 0);
  ASSERT_TRUE(daemon_->waitExit(10s)) << daemon_->log();
  ASSERT_EQ(daemon_->signaled(), SIGKILL) << daemon_->log();
  ASSERT_NE(daemon_->log().find("fail point"), std::string::npos) << daemon_->log();

  daemon_ = std::make_unique<testing::DaemonProcess>(YARDD_PATH, dir_.path());  // the same state directory
  startDaemon({"--topology", (dir_.path() / "pool.json").string(), "--activity-interval", "1s"});
  json big;
  for (int i = 0; i < 500; ++i) {
    big = yardctlJson("systems big");
    if (big["state"] == "SYSTEM_STATE_COMPOSED") break;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_EQ(big["state"], "SYSTEM_STATE_COMPOSED") << big.dump() << daemon_->log();
  ASSERT_EQ(big["bindings"].size(), 4u) << big.dump();
  for (const auto& b : big["bindings"]) EXPECT_EQ(b["device_id"].get<std::string>().rfind("sw0-", 0), 0u) << big.dump();
  const json moved = yardctlJson("systems idle");
  ASSERT_EQ(moved["bindings"].size(), 2u) << "not both sets: " << moved.dump();
  for (const auto& b : moved["bindings"]) EXPECT_EQ(b["device_id"].get<std::string>().rfind("sw1-", 0), 0u) << moved.dump();
  EXPECT_EQ(movesStarted(), 2) << "the attach before the kill, the detach after it";
  EXPECT_NE(daemon_->log().find("before yardd stopped; it gives up sw0-gpu0, sw0-gpu1 now"), std::string::npos) << daemon_->log();
}

}  // namespace
}  // namespace switchyard
