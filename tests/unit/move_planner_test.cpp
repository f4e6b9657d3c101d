// planMoves (move_planner.h, ADR 0033) on its own: a pool state with one movable system, the activity its host
// side reported, and a request that fits only once the system's idle GPUs are elsewhere. The engine tests
// (engine_defrag_test.cpp) run the moves it chooses; these check the choice.
#include "composer/engine/move_planner.h"

#include <gtest/gtest.h>

#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

class MovePlannerTest : public ::testing::Test {
 protected:
  // sw0 and sw1 hold 4 GPUs each; "mover" reaches both, "head" only sw0. "idle" (on mover) holds sw0-gpu0 and
  // sw0-gpu1, labelled as asked; both idle with no process at the last sample unless a test says otherwise.
  void composeIdle(std::map<std::string, std::string> labels) {
    System s;
    s.id = "sys-000001";
    s.name = "idle";
    s.hostId = "mover";
    s.labels = std::move(labels);
    s.state = SystemState::kComposed;
    for (const char* d : {"sw0-gpu0", "sw0-gpu1"}) {
      s.bindings.push_back({d, "sw0-usp-mover"});
      state_.assign({d, DeviceAllocation::kAllocated, s.id}, s.hostId);
      IdleGpu row;
      row.gpu.deviceId = d;
      row.gpu.systemId = s.id;
      row.gpu.sampledAt = row.gpu.idleSince = 1;
      row.systemId = s.id;
      row.hostId = s.hostId;
      activity_.push_back(row);
    }
    state_.putSystem(s);
  }
  static PlacementRequest fourUnderOneSwitch() {
    PlacementRequest r;
    r.gpuCount = 4;
    r.peerToPeer = PeerToPeer::kRequired;
    return r;
  }
  std::optional<MoveChoice> plan(const PlacementRequest& wanted) { return planMoves(defaultComposableScheduler(), state_, activity_, wanted); }

  PoolState state_{testing::TopologyBuilder().sw("sw0").sw("sw1").gpus("sw0", 4).gpus("sw1", 4).host("mover", {"sw0", "sw1"}).host("head", {"sw0"}).build()};
  std::vector<IdleGpu> activity_;
};

TEST_F(MovePlannerTest, TheIdleGpusOfAMovableSystemGoWhereItsHostReachesAndTheRequestGetsTheSwitchTheyLeft) {
  composeIdle({{"movable", "true"}});
  ASSERT_FALSE(place(defaultComposableScheduler(), state_.pool(), fourUnderOneSwitch()).placement) << "it fits only in pieces";
  const auto choice = plan(fourUnderOneSwitch());
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->gpus, 2u);
  ASSERT_EQ(choice->moves.size(), 1u) << "one system: one attach, one detach";
  const SystemMove& move = choice->moves.front();
  EXPECT_EQ(move.system, "sys-000001");
  EXPECT_EQ(move.stage, SystemMove::Stage::kAttaching);
  EXPECT_TRUE(move.operation.empty()) << "nothing started: the planner only chooses";
  EXPECT_EQ(move.from, (std::vector<DeviceId>{"sw0-gpu0", "sw0-gpu1"}));
  ASSERT_EQ(move.to.size(), 2u);
  for (const auto& d : move.to) EXPECT_EQ(d.rfind("sw1-", 0), 0u) << d;
  EXPECT_NE(move.to[0], move.to[1]);
  EXPECT_EQ(choice->placement.hostId, "head");
  ASSERT_EQ(choice->placement.devices.size(), 4u);
  for (const auto& d : choice->placement.devices) EXPECT_EQ(d.deviceId.rfind("sw0-", 0), 0u) << d.deviceId;
  EXPECT_EQ(state_.assignment("sw0-gpu0").allocation, DeviceAllocation::kAllocated) << "the pool is unchanged";
}

TEST_F(MovePlannerTest, NothingMovesWithoutTheLabelOrWhenAGpuItNeedsRunsAProcessOrIsNotIdle) {
  composeIdle({{"movable", "no"}});
  EXPECT_FALSE(plan(fourUnderOneSwitch())) << "only movable=true consents";

  state_ = PoolState(state_.topology());
  activity_.clear();
  composeIdle({{"movable", "true"}});
  activity_[1].gpu.processes.push_back({});
  EXPECT_FALSE(plan(fourUnderOneSwitch())) << "a GPU with a process stays, and one GPU moved does not free sw0";
  activity_[1].gpu.processes.clear();
  activity_[1].gpu.idleSince = 0;
  EXPECT_FALSE(plan(fourUnderOneSwitch())) << "busy at the last sample";
  activity_[1].gpu.idleSince = 1;
  EXPECT_TRUE(plan(fourUnderOneSwitch()));
  EXPECT_FALSE(planMoves(defaultComposableScheduler(), state_, {}, fourUnderOneSwitch())) << "no sample: nothing is known idle";
}

TEST_F(MovePlannerTest, OnlyRequestsForWholeGpusByCountAreHelped) {
  composeIdle({{"movable", "true"}});
  PlacementRequest named = fourUnderOneSwitch();
  named.devices = {"sw0-gpu0"};
  EXPECT_FALSE(plan(named));
  PlacementRequest carved;
  carved.gpuInstances = {MigProfile::k7g};
  EXPECT_FALSE(plan(carved));
  PlacementRequest share;
  share.gpuShareMilli = 500;
  EXPECT_FALSE(plan(share));
}

}  // namespace
}  // namespace switchyard
