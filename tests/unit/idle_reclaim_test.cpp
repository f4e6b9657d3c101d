// Idle reclaim's memory alone (idle_reclaim.h; issue 59: one of the engine's parts), with the hosts' answers and
// the time passed in: what is due by a system's policy, a dry run's notice once per idle stretch, the idle stretches
// written when they end and checkpointed while they go on, what a round forgets and keeps, and the view's list.
// engine_idle_test.cpp checks the same rules through the whole engine and its simulated hosts.
#include <gtest/gtest.h>

#include <chrono>

#include "composer/engine/idle_reclaim.h"
#include "composer/engine/pool_state.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

using std::chrono::minutes;

constexpr Timestamp at(std::chrono::nanoseconds since) { return 1'800'000'000'000'000'000 + since.count(); }

using Seen = std::vector<Result<std::vector<GpuActivity>>>;

// System "sys-1" ("train", tenant "a", on host h0) holds `gpus`, with `policy`, no operation running.
ActivityCheck checkOf(std::vector<DeviceId> gpus, ReclaimPolicy policy) {
  ActivityCheck c;
  c.host = "h0";
  c.system = "sys-1";
  c.name = "train";
  c.tenant = "a";
  c.policy = policy;
  c.asked = true;
  c.reclaimable = true;
  for (const auto& g : gpus) {
    c.gpus.push_back({g, "sw0-usp-h0"});
    c.models.push_back("H100");
    c.instances.emplace_back();
    c.shareMilli.push_back(0);
  }
  return c;
}

GpuActivity idleSample(const DeviceId& gpu) { return {gpu, 0, 0, {}, {}}; }
GpuActivity busySample(const DeviceId& gpu) { return {gpu, 90, 1024, {}, {}}; }
GpuActivity processSample(const DeviceId& gpu) { return {gpu, 0, 512, {{4242, "python3", 512}}, {}}; }

ActivityOutcome roundOf(IdleReclaim& idle, const ActivityCheck& check, std::vector<GpuActivity> samples, Timestamp now,
                        bool writeStretches = true) {
  return idle.record(ActivityRound{{check}}, Seen{std::move(samples)}, now, writeStretches);
}

const ReclaimPolicy kDetachAfter30m{minutes(30), false};
const ReclaimPolicy kDryRunAfter30m{minutes(30), true};

TEST(IdleReclaim, AGpuIdleAsLongAsItsPolicySaysIsDueAndOneAProcessRunsOnIsNot) {
  IdleReclaim idle(5, 60);
  const auto check = checkOf({"gpu0", "gpu1"}, kDetachAfter30m);
  auto first = roundOf(idle, check, {idleSample("gpu0"), processSample("gpu1")}, at(minutes(0)));
  EXPECT_TRUE(first.due.empty()) << "idle since this sample: not long enough";
  ASSERT_EQ(first.list->size(), 2u) << "the view lists every GPU asked about";
  EXPECT_EQ((*first.list)[1].reclaimBlocked, "pid 4242 (python3) runs on it");

  EXPECT_TRUE(roundOf(idle, check, {idleSample("gpu0"), processSample("gpu1")}, at(minutes(29))).due.empty());
  const auto due = roundOf(idle, check, {idleSample("gpu0"), processSample("gpu1")}, at(minutes(30))).due;
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].system, "sys-1");
  EXPECT_EQ(due[0].gpus, std::vector<DeviceId>{"gpu0"}) << "gpu1 runs a process: never idle, whatever its utilization";
  EXPECT_EQ(due[0].idleSince, std::vector<Timestamp>{at(minutes(0))});
  EXPECT_EQ(due[0].idlest, minutes(30));

  auto running = check;
  running.reclaimable = false;  // an operation runs on the system: reclaim waits
  EXPECT_TRUE(roundOf(idle, running, {idleSample("gpu0"), processSample("gpu1")}, at(minutes(40))).due.empty());
  EXPECT_TRUE(roundOf(idle, checkOf({"gpu0", "gpu1"}, {}), {idleSample("gpu0"), processSample("gpu1")}, at(minutes(50))).due.empty())
      << "no policy (0): never";
}

TEST(IdleReclaim, ADryRunNamesAnIdleStretchOnceAndAgainOnlyAfterTheGpuWorkedAndIdledAgain) {
  IdleReclaim idle(5, 60);
  const auto check = checkOf({"gpu0"}, kDryRunAfter30m);
  (void)roundOf(idle, check, {idleSample("gpu0")}, at(minutes(0)));
  const auto due = roundOf(idle, check, {idleSample("gpu0")}, at(minutes(30))).due;
  ASSERT_EQ(due.size(), 1u);
  idle.announced(due[0]);
  EXPECT_TRUE(roundOf(idle, check, {idleSample("gpu0")}, at(minutes(31))).due.empty()) << "named once per idle stretch";

  (void)roundOf(idle, check, {busySample("gpu0")}, at(minutes(40)));
  (void)roundOf(idle, check, {idleSample("gpu0")}, at(minutes(41)));
  EXPECT_TRUE(roundOf(idle, check, {idleSample("gpu0")}, at(minutes(70))).due.empty()) << "a new stretch, 29 minutes long";
  const auto again = roundOf(idle, check, {idleSample("gpu0")}, at(minutes(71))).due;
  ASSERT_EQ(again.size(), 1u) << "the new stretch is named in its turn";
  EXPECT_EQ(again[0].idleSince, std::vector<Timestamp>{at(minutes(41))});
}

TEST(IdleReclaim, AStretchIsCheckpointedEveryTenMinutesWhileItGoesOnAndWrittenWhenItEnds) {
  IdleReclaim idle(5, 60);
  const auto check = checkOf({"gpu0"}, {});
  EXPECT_TRUE(roundOf(idle, check, {idleSample("gpu0")}, at(minutes(0))).stretchWrites.empty()) << "a short stretch costs one write";
  EXPECT_TRUE(roundOf(idle, check, {idleSample("gpu0")}, at(minutes(9))).stretchWrites.empty());
  const auto checkpoint = roundOf(idle, check, {idleSample("gpu0")}, at(minutes(10))).stretchWrites;
  ASSERT_EQ(checkpoint.size(), 1u);
  EXPECT_EQ(checkpoint[0], (IdleStretch{"gpu0", "sys-1", "a", at(minutes(0)), at(minutes(10))}));
  EXPECT_TRUE(roundOf(idle, check, {idleSample("gpu0")}, at(minutes(15))).stretchWrites.empty()) << "the next checkpoint is at 20";
  EXPECT_EQ(idle.unwritten(at(minutes(16))), (std::vector<IdleStretch>{{"gpu0", "sys-1", "a", at(minutes(0)), at(minutes(16))}}))
      << "usage reads the open stretch up to now";

  const auto ended = roundOf(idle, check, {busySample("gpu0")}, at(minutes(17))).stretchWrites;
  EXPECT_EQ(ended, (std::vector<IdleStretch>{{"gpu0", "sys-1", "a", at(minutes(0)), at(minutes(17))}})) << "ends at the first busy sample";
  EXPECT_TRUE(idle.unwritten(at(minutes(18))).empty());

  IdleReclaim standby(5, 60);
  (void)roundOf(standby, check, {idleSample("gpu0")}, at(minutes(0)), false);
  EXPECT_TRUE(roundOf(standby, check, {idleSample("gpu0")}, at(minutes(20)), false).stretchWrites.empty()) << "a standby writes none";
  EXPECT_TRUE(standby.unwritten(at(minutes(20))).empty());
}

TEST(IdleReclaim, AGpuThatLeftItsSystemIsForgottenAndAHostThatCouldNotAnswerKeepsWhatItsGpusDid) {
  IdleReclaim idle(5, 60);
  const auto both = checkOf({"gpu0", "gpu1"}, kDetachAfter30m);
  (void)roundOf(idle, both, {idleSample("gpu0"), idleSample("gpu1")}, at(minutes(0)));

  Seen failed;
  failed.emplace_back(fail(Code::kUnavailable, "yard-agent on h0 did not answer"));
  const auto kept = idle.record(ActivityRound{{both}}, failed, at(minutes(30)), true);
  ASSERT_EQ(kept.list->size(), 2u) << "no answer: what the GPUs did before stands";
  EXPECT_EQ(kept.due.size(), 1u) << "and is judged as it stands";

  const auto left = roundOf(idle, checkOf({"gpu1"}, kDetachAfter30m), {idleSample("gpu1")}, at(minutes(31)));
  ASSERT_EQ(left.list->size(), 1u);
  EXPECT_EQ((*left.list)[0].gpu.deviceId, "gpu1");
  EXPECT_EQ((*left.list)[0].gpu.idleSince, at(minutes(0))) << "gpu1 stayed: its stretch goes on";
  EXPECT_EQ(left.stretchWrites, (std::vector<IdleStretch>{{"gpu0", "sys-1", "a", at(minutes(0)), at(minutes(31))}}))
      << "gpu0 left the system: its stretch ended with the round that found it gone";
}

TEST(IdleReclaim, TheViewsListIsTheRoundsUntilThePoliciesChangeThenBuiltFromTheSystemsAsTheyAre) {
  PoolState state(testing::TopologyBuilder().sw("sw0").gpus("sw0", 2).host("h0", {"sw0"}).build());
  System s;
  s.id = "sys-1";
  s.name = "train";
  s.tenant = "a";
  s.hostId = "h0";
  s.state = SystemState::kComposed;
  s.bindings.push_back({"sw0-gpu0", "sw0-usp-h0"});
  state.assign({"sw0-gpu0", DeviceAllocation::kAllocated, s.id}, s.hostId);
  state.putSystem(s);

  IdleReclaim idle(5, 60);
  int asked = 0;
  const auto policyOf = [&](const System&) {
    ++asked;
    return kDetachAfter30m;
  };
  EXPECT_TRUE(idle.forView(state, policyOf)->empty()) << "nothing recorded yet";
  EXPECT_FALSE(idle.changed());

  auto outcome = roundOf(idle, checkOf({"sw0-gpu0"}, kDryRunAfter30m), {idleSample("sw0-gpu0")}, at(minutes(0)));
  const auto roundList = outcome.list;
  idle.show(std::move(outcome.list));
  EXPECT_TRUE(idle.changed());
  asked = 0;
  EXPECT_EQ(idle.forView(state, policyOf), roundList) << "the round's own list, as it is";
  EXPECT_EQ(asked, 0);
  EXPECT_FALSE(idle.changed()) << "handed to the view";

  idle.policiesChanged();
  EXPECT_TRUE(idle.changed());
  const auto current = idle.current(state, policyOf);
  EXPECT_TRUE(idle.changed()) << "a read that is not the view's leaves it for the view";
  const auto rebuilt = idle.forView(state, policyOf);
  ASSERT_EQ(rebuilt->size(), 1u);
  EXPECT_EQ((*rebuilt)[0].systemName, "train");
  EXPECT_EQ((*rebuilt)[0].model, "H100-SXM5-80GB") << "from the inventory";
  EXPECT_EQ((*rebuilt)[0].reclaim, kDetachAfter30m) << "the policy as it is now, not as the round saw it";
  EXPECT_EQ((*current)[0].reclaim, kDetachAfter30m);
  EXPECT_EQ(asked, 2) << "once per build, per run of one system's GPUs";
}

}  // namespace
}  // namespace switchyard
