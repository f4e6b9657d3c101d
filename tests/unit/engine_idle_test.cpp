// Idle reclaim (engine_idle.cpp, idle_tracker.h; ADR 0019): the host side's GPU activity samples make an
// idle history per attached GPU; `idleGpus` lists what idled long enough; a system's reclaim policy (its
// labels over its tenant's over yardd's) names idle GPUs in a dry run, or detaches them through the safe
// path, never one a process runs on.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <future>
#include <latch>

#include "agent/simulated_hosts.h"
#include "tests/support/forwarding_hosts.h"
#include "tests/unit/engine_fixture.h"

namespace switchyard {
namespace {

TEST(IdleTrackerTest, AGpuIsIdleSinceItsFirstIdleSampleAndBusyAgainWithAProcessWhateverItsUtilization) {
  IdleTracker tracker(5, 3);
  EXPECT_TRUE(tracker.record("sys-1", {"gpu-1", 0, 0, {}}, 100));
  EXPECT_EQ(tracker.find("gpu-1")->idleSince, 100);
  EXPECT_FALSE(tracker.record("sys-1", {"gpu-1", 3, 0, {}}, 200)) << "still idle: at most 5 %";
  EXPECT_EQ(tracker.find("gpu-1")->idleSince, 100);
  EXPECT_EQ(tracker.find("gpu-1")->idleFor(400), Duration(300));
  EXPECT_TRUE(tracker.record("sys-1", {"gpu-1", 0, 512, {{77, "python3 serve.py", 512}}}, 300)) << "a process makes it busy at 0 %";
  EXPECT_FALSE(tracker.find("gpu-1")->idle());
  EXPECT_TRUE(tracker.record("sys-1", {"gpu-1", 0, 0, {}}, 400));
  EXPECT_EQ(tracker.find("gpu-1")->idleSince, 400) << "a new idle stretch starts at its first idle sample";
  EXPECT_EQ(tracker.find("gpu-1")->history.size(), 3u) << "the history keeps the latest samples only";
  EXPECT_EQ(tracker.find("gpu-1")->history.front().at, 200);

  tracker.record("sys-2", {"gpu-1", 0, 0, {}}, 500);
  EXPECT_EQ(tracker.find("gpu-1")->firstSampleAt, 500) << "attached to another system: a new record";
  EXPECT_EQ(tracker.find("gpu-1")->history.size(), 1u);
  EXPECT_TRUE(tracker.keepOnly([](const DeviceId&, const SystemId& s) { return s != "sys-2"; }));
  EXPECT_EQ(tracker.find("gpu-1"), nullptr);
}

TEST(IdleTrackerTest, InMigModeEachInstanceIdlesOnItsOwnAndTheGpuWhenAllDo) {
  IdleTracker tracker(5, 10);
  const auto sample = [](std::vector<GpuProcess> at0, std::vector<GpuProcess> at4) {
    GpuActivity a{"gpu-1", 0, 0, {}, {{0, std::move(at0)}, {4, std::move(at4)}}};
    for (const auto& i : a.instances) a.processes.insert(a.processes.end(), i.processes.begin(), i.processes.end());
    return a;
  };
  tracker.record("sys-1", sample({{77, "python3 serve.py", 512}}, {}), 100);
  const GpuIdleState* g = tracker.find("gpu-1");
  EXPECT_FALSE(g->idle()) << "a process in one instance keeps the GPU busy";
  ASSERT_EQ(g->instances.size(), 2u);
  EXPECT_FALSE(g->instances[0].idle());
  EXPECT_EQ(g->instances[1].idleSince, 100) << "its sibling idles on its own";
  tracker.record("sys-1", sample({}, {}), 200);
  EXPECT_EQ(g->idleSince, 200);
  EXPECT_EQ(g->instances[0].idleSince, 200);
  EXPECT_EQ(g->instances[1].idleSince, 100) << "an idle stretch goes on across samples";
  tracker.record("sys-1", sample({}, {{78, "python3 eval.py", 64}}), 300);
  EXPECT_FALSE(g->idle());
  EXPECT_EQ(g->instances[0].idleSince, 200);
  EXPECT_FALSE(g->instances[1].idle());
  IdleGpu row{*g, "sys-1", "s", "t", "h", "H100", {}, "", {{"gpu-1", MigProfile::k3g, 0}, {"gpu-1", MigProfile::k3g, 4}}, 0};
  EXPECT_EQ(row.idleFor(1'000), Duration(800)) << "the longest idle instance's stretch";
  EXPECT_DOUBLE_EQ(row.idleGpuHours(200 + 3'600'000'000'000LL), 0.5) << "a 3g instance idle 1 h: its 4 of 8 memory slices";
}

TEST(IdleTrackerTest, LabelsChooseASystemsPolicyAndBadOnesAreRefused) {
  const ReclaimPolicy inherited{std::chrono::hours(2), true};
  EXPECT_EQ(*reclaimPolicyOf({}, inherited), inherited);
  EXPECT_EQ(reclaimPolicyOf({{"reclaim-idle-after", "30m"}, {"reclaim-mode", "detach"}}, inherited)->after, std::chrono::minutes(30));
  EXPECT_FALSE(reclaimPolicyOf({{"reclaim-mode", "detach"}}, inherited)->dryRun);
  EXPECT_EQ(reclaimPolicyOf({{"reclaim-idle-after", "never"}}, inherited)->after.count(), 0);
  for (const char* bad : {"soon", "10s", "-5m", ""}) {
    auto r = reclaimPolicyOf({{"reclaim-idle-after", bad}}, inherited);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  }
  EXPECT_FALSE(reclaimPolicyOf({{"reclaim-mode", "now"}}, inherited));
  EXPECT_EQ(describe(ReclaimPolicy{}), "off");
  EXPECT_EQ(describe(ReclaimPolicy{std::chrono::minutes(30), true}), "after 30m idle (dry run)");
}

class EngineIdleTest : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    simulated_ = std::make_unique<SimulatedHosts>(defaultTopology(), fabric_->router(), clock_);
    hosts_ = simulated_.get();
  }
  void startWith(ReclaimPolicy policy) {
    configure_ = [policy](EngineOptions& o) {
      o.activityInterval = 0ms;  // tests call sampleActivity() on the manual clock
      o.reclaim = policy;
    };
    start();
  }
  Operation composeLabelled(const std::string& name, int gpus, std::map<std::string, std::string> labels = {}, std::string tenant = "default") {
    ComposeRequest r{name, {}, std::move(labels)};
    r.placement.gpuCount = gpus;
    r.placement.tenant = std::move(tenant);
    return run(engine_->blocking().compose(Caller::local(), r));
  }
  std::vector<DeviceId> gpusOf(const std::string& system) {
    std::vector<DeviceId> out;
    const auto found = engine_->reads().getSystem(system);  // held: a range-for over a temporary's member would dangle
    EXPECT_TRUE(found) << system << ": " << found.error().message;
    if (found)
      for (const auto& b : found->bindings) out.push_back(b.deviceId);
    return out;
  }
  std::vector<Operation> sample() {
    auto started = engine_->sampleActivity();
    EXPECT_TRUE(started) << started.error().message;
    return started ? *started : std::vector<Operation>{};
  }
  std::size_t count(const std::string& type) {
    const auto types = eventTypes();
    return static_cast<std::size_t>(std::count(types.begin(), types.end(), type));
  }
  std::unique_ptr<SimulatedHosts> simulated_;
};

TEST_F(EngineIdleTest, IdleListsAttachedGpusIdleLongEnoughWithTheirSystemAndNothingIsReclaimedWithoutAPolicy) {
  startWith({});
  composeLabelled("train", 4);
  const auto gpus = gpusOf("train");
  simulated_->setActivity(gpus[0], 97, {{4100, "python3 train.py", 30'000}});
  simulated_->setActivity(gpus[1], 40);
  EXPECT_TRUE(sample().empty());
  clock_.advance(45min);
  EXPECT_TRUE(sample().empty()) << "no policy: idle GPUs are shown, never taken";
  auto idle = engine_->reads().idleGpus(Caller::local(), std::chrono::minutes(30));
  ASSERT_TRUE(idle);
  ASSERT_EQ(idle->size(), 2u) << "the two idle ones; busy at 97 % with a process, and at 40 %, are not";
  for (const auto& g : *idle) {
    EXPECT_EQ(g.systemName, "train");
    EXPECT_EQ(g.gpu.idleFor(clock_.now()), std::chrono::duration_cast<Duration>(45min));
    EXPECT_EQ(g.reclaim.after.count(), 0);
    EXPECT_FALSE(g.hostId.empty());
    EXPECT_FALSE(g.model.empty());
  }
  EXPECT_EQ(engine_->reads().idleGpus(Caller::local(), std::chrono::hours(1))->size(), 0u);
  auto all = *engine_->reads().idleGpus(Caller::local(), Duration(0), true);
  ASSERT_EQ(all.size(), 4u) << "every sampled GPU when asked";
  EXPECT_EQ(count("reclaim.would-detach") + count("reclaim.started"), 0u);

  run(engine_->blocking().detach(Caller::local(), {"train", {gpus[2]}, {}, {}, {}}));
  EXPECT_EQ(engine_->reads().idleGpus(Caller::local(), std::chrono::minutes(30))->size(), 1u) << "a detached GPU is no longer listed";
}

TEST_F(EngineIdleTest, ADryRunNamesIdleGpusOncePerIdleStretchAndDetachesNothing) {
  startWith({std::chrono::minutes(30), true});
  composeLabelled("notebook", 2);
  sample();
  clock_.advance(29min);
  sample();
  EXPECT_EQ(count("reclaim.would-detach"), 0u) << "not idle long enough yet";
  clock_.advance(2min);
  sample();
  EXPECT_EQ(count("reclaim.would-detach"), 1u);
  clock_.advance(10min);
  sample();
  EXPECT_EQ(count("reclaim.would-detach"), 1u) << "once per idle stretch";
  EXPECT_EQ(engine_->reads().getSystem("notebook")->bindings.size(), 2u) << "a dry run detaches nothing";
  const auto gpus = gpusOf("notebook");
  simulated_->setActivity(gpus[0], 80);
  simulated_->setActivity(gpus[1], 80);
  sample();
  simulated_->setActivity(gpus[0], 0);
  simulated_->setActivity(gpus[1], 0);
  sample();
  clock_.advance(31min);
  sample();
  EXPECT_EQ(count("reclaim.would-detach"), 2u) << "a new idle stretch is named again";
}

TEST_F(EngineIdleTest, ADetachPolicyGivesIdleGpusBackThroughTheSafePathButNeverOneAProcessRunsOn) {
  startWith({std::chrono::minutes(30), false});
  const std::size_t freeBefore = freeDevices();
  composeLabelled("mixed", 4);
  const auto gpus = gpusOf("mixed");
  simulated_->setActivity(gpus[0], 0, {{4242, "python3 eval.py", 2048}});  // 0 %, but a process holds it
  simulated_->setActivity(gpus[1], 88);
  sample();
  clock_.advance(31min);
  const auto started = sample();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].kind, OperationKind::kDetach);
  EXPECT_EQ(started[0].requestedBy.identity, kReclaimActor);
  const Operation done = run(Result<Operation>(started[0]));
  EXPECT_EQ(done.state, OperationState::kSucceeded) << done.error;
  const auto left = gpusOf("mixed");
  EXPECT_EQ(left, (std::vector<DeviceId>{gpus[0], gpus[1]})) << "the busy GPU and the one with a process stay";
  EXPECT_EQ(count("reclaim.started"), 1u);
  EXPECT_EQ(freeDevices(), freeBefore - 2u);
  EXPECT_TRUE(simulated_->surpriseRemovals().empty()) << "host-release ran before the switch unbound";
  EXPECT_TRUE(engine_->reads().idleGpus(Caller::local(), Duration(0))->empty()) << "what was reclaimed is no longer attached";
  auto audit = engine_->history().listAudit({});
  ASSERT_TRUE(audit);
  EXPECT_TRUE(std::any_of(audit->begin(), audit->end(), [](const AuditRecord& a) { return a.caller.identity == kReclaimActor && a.action == "detach"; }));
}

TEST_F(EngineIdleTest, AGpuThatAProcessOpenedSinceItsLastIdleSampleIsNotReclaimed) {
  startWith({std::chrono::minutes(30), false});
  composeLabelled("held", 2);
  const auto gpus = gpusOf("held");
  sample();
  // Both idle at the first sample; then a process opens one: the next sample shows it and it stays.
  simulated_->setDeviceFault(gpus[1], SimulatedHostFault::kInUse);
  simulated_->setActivity(gpus[1], 0);
  clock_.advance(31min);
  auto r = engine_->sampleActivity();  // the kInUse fault reports pid 4242: not idle, so only gpus[0] goes
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(run(Result<Operation>(r->front())).state, OperationState::kSucceeded);
  EXPECT_EQ(gpusOf("held"), (std::vector<DeviceId>{gpus[1]}));
}

// A GPU in MIG mode belongs to one system as a whole GPU does; the driver reads no utilization there, so an
// instance is idle while nothing runs in it. Idle instances go back one by one while a sibling works, and the
// GPU with its last one; one that something runs in is never taken, and the host refuses to destroy it.
TEST_F(EngineIdleTest, IdleMigInstancesGoBackOneByOneWhileASiblingWorksAndTheGpuWithTheLast) {
  startWith({std::chrono::minutes(30), false});
  const std::size_t freeBefore = freeDevices();
  ComposeRequest r{"infer", {}, {}};
  r.placement.gpuInstances = {MigProfile::k3g, MigProfile::k3g};
  ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), r)).state, OperationState::kSucceeded);
  const System system = *engine_->reads().getSystem("infer");
  ASSERT_EQ(system.gpuInstances.size(), 2u);
  ASSERT_EQ(system.bindings.size(), 1u) << "both on one GPU";
  const GpuInstance busy = system.gpuInstances[0], idle = system.gpuInstances[1];
  simulated_->setInstanceActivity(busy.deviceId, busy.start, {{5150, "tritonserver", 9000}});
  sample();
  auto listed = engine_->reads().idleGpus(Caller::local(), Duration(0));
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u) << "listed for its idle instance, though the GPU is busy";
  EXPECT_FALSE(listed->front().gpu.idle());
  EXPECT_EQ(listed->front().instances.size(), 2u);
  EXPECT_EQ(listed->front().reclaimBlocked, "pid 5150 (tritonserver) runs on it");

  clock_.advance(31min);
  auto started = sample();
  ASSERT_EQ(started.size(), 1u);
  ASSERT_EQ(started[0].gpuInstances.size(), 1u);
  EXPECT_EQ(started[0].gpuInstances[0], idle) << "only the instance nothing runs in";
  EXPECT_EQ(run(Result<Operation>(started[0])).state, OperationState::kSucceeded);
  auto after = *engine_->reads().getSystem("infer");
  EXPECT_EQ(after.gpuInstances, (std::vector<GpuInstance>{busy}));
  EXPECT_EQ(after.bindings.size(), 1u) << "the GPU stays with its busy instance";
  EXPECT_EQ(simulated_->migInstances(system.hostId), (std::vector<GpuInstance>{busy})) << "the host destroyed the idle one";
  EXPECT_EQ(count("reclaim.started"), 1u);
  EXPECT_TRUE(sample().empty()) << "the busy one is never taken";

  // A process that started in it since the sample: the host refuses to destroy it and the system stays whole.
  auto refused = run(engine_->blocking().detach(Caller::local(), {.system = "infer", .gpuInstances = {{busy.deviceId, busy.start}}}));
  EXPECT_NE(refused.state, OperationState::kSucceeded);
  EXPECT_NE(refused.error.find("in use by pid 5150"), std::string::npos) << refused.error;
  EXPECT_EQ(engine_->reads().getSystem("infer")->gpuInstances, (std::vector<GpuInstance>{busy}));

  simulated_->setInstanceActivity(busy.deviceId, busy.start, {});  // the server stops
  sample();
  clock_.advance(31min);
  started = sample();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].steps.front().bindings.size(), 1u) << "its last instance: the GPU goes back with it";
  EXPECT_EQ(run(Result<Operation>(started[0])).state, OperationState::kSucceeded);
  const auto gone = engine_->reads().getSystem("infer");
  EXPECT_TRUE(!gone || gone->state == SystemState::kDecomposed);
  EXPECT_EQ(freeDevices(), freeBefore);
  EXPECT_TRUE(simulated_->surpriseRemovals().empty());
}

// Usage splits a MIG GPU's hours by instance: one idle while its sibling serves counts its own part, and the
// stretch is stored as GPU@START like any other.
TEST_F(EngineIdleTest, UsageCountsAnIdleMigInstanceByItsPartOfTheGpu) {
  startWith({});
  ComposeRequest r{"infer", {}, {}};
  r.placement.gpuInstances = {MigProfile::k3g, MigProfile::k3g};
  r.placement.tenant = "team-a";
  ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), r)).state, OperationState::kSucceeded);
  const System system = *engine_->reads().getSystem("infer");
  const GpuInstance busy = system.gpuInstances[0], idle = system.gpuInstances[1];
  simulated_->setInstanceActivity(busy.deviceId, busy.start, {{5150, "tritonserver", 9000}});
  sample();
  clock_.advance(1h);
  sample();
  simulated_->setInstanceActivity(busy.deviceId, busy.start, {});  // both idle for the next hour
  clock_.advance(1h);
  sample();
  clock_.advance(1h);
  sample();
  auto report = engine_->history().usage(Caller::local(), 0, 0);
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->rows.size(), 1u);
  EXPECT_NEAR(report->rows[0].gpuSeconds / 3600, 3.0, 1e-6) << "two 3g instances (4/8 each) for 3 h";
  EXPECT_NEAR(report->rows[0].idleGpuSeconds / 3600, 0.5 * 3 + 0.5 * 1, 1e-6) << "the idle one 3 h, the other its last hour";
  const auto stored = *store_->listIdleStretches(0, clock_.now() + 1);
  ASSERT_FALSE(stored.empty()) << "checkpointed";
  EXPECT_EQ(stored[0].deviceId, fmt::format("{}@{}", idle.deviceId, idle.start));
}

// A GPU carrying time-sliced shares is its system's alone: when it idles as a whole, the shares go back with it.
TEST_F(EngineIdleTest, AnIdleGpuCarryingSharesGoesBackWithThemAndADryRunNamesThemOnce) {
  startWith({std::chrono::minutes(30), true});
  ComposeRequest r{"notebook", {}, {}};
  r.placement.gpuShareMilli = 500;
  ASSERT_EQ(run(engine_->blocking().compose(Caller::local(), r)).state, OperationState::kSucceeded);
  const DeviceId gpu = engine_->reads().getSystem("notebook")->gpuShares.at(0).deviceId;
  sample();
  auto listed = *engine_->reads().idleGpus(Caller::local(), Duration(0));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].shareMilli, 500);
  EXPECT_TRUE(listed[0].reclaimBlocked.empty()) << "a share's GPU is no longer kept out of reclaim";
  clock_.advance(31min);
  sample();
  sample();
  EXPECT_EQ(count("reclaim.would-detach"), 1u);
  const auto events = engine_->history().listEvents(0, 10'000);
  ASSERT_TRUE(events);
  const auto named = std::find_if(events->begin(), events->end(), [](const Event& e) { return e.type == "reclaim.would-detach"; });
  ASSERT_NE(named, events->end());
  EXPECT_NE(named->message.find(gpu + " with its time-sliced share(s) (0.5 of it)"), std::string::npos) << named->message;
}

// The simulated hosts, whose activity answers wait at a gate the test opens: a round in flight while the
// pool changes under it.
class GatedActivity final : public testing::ForwardingHosts {
 public:
  using ForwardingHosts::ForwardingHosts;
  Result<std::vector<GpuActivity>> activity(const HostId& host, const std::vector<Binding>& devices, const CallOptions& options) override {
    if (gated) {
      asked.count_down();
      open.wait();
    }
    return inner_.activity(host, devices, options);
  }
  bool gated = false;
  std::latch asked{1};
  std::latch open{1};
};

TEST_F(EngineIdleTest, ARoundRecordsOffTheControlThreadAndReclaimsOnlyWhatIsStillAttachedWhenItEnds) {
  GatedActivity gate(*simulated_);
  hosts_ = &gate;
  startWith({std::chrono::minutes(30), false});
  composeLabelled("busy-owner", 2);
  const auto gpus = gpusOf("busy-owner");
  sample();
  clock_.advance(31min);
  gate.gated = true;  // the next round asks the host, then waits
  auto round = std::async(std::launch::async, [&] { return engine_->sampleActivity(); });
  gate.asked.wait();
  // While the round is out, the owner detaches one of the two idle GPUs itself: the control thread is free.
  run(engine_->blocking().detach(Caller::local(), {"busy-owner", {gpus[0]}, {}, {}, {}}));
  gate.open.count_down();
  auto started = round.get();
  ASSERT_TRUE(started) << started.error().message;
  ASSERT_EQ(started->size(), 1u) << "one reclaim, of the GPU still attached";
  EXPECT_EQ(run(Result<Operation>(started->front())).state, OperationState::kSucceeded);
  const auto after = engine_->reads().getSystem("busy-owner");
  EXPECT_TRUE(!after || after->state == SystemState::kDecomposed) << "detaching its last GPU ended the system";
  const auto audit = *engine_->history().listAudit({});
  EXPECT_EQ(std::count_if(audit.begin(), audit.end(), [](const AuditRecord& a) { return a.caller.identity == kReclaimActor; }), 1)
      << "the GPU the owner took back was not reclaimed a second time";
}

TEST_F(EngineIdleTest, LabelsAndTenantPolicyChooseOverYarddsAndTenantsSeeOnlyTheirOwn) {
  quotas_["team-a"].reclaimIdleAfter = std::chrono::minutes(10);
  quotas_["team-a"].reclaimDryRun = false;
  startWith({std::chrono::hours(4), true});
  composeLabelled("a-keep", 2, {{"reclaim-idle-after", "never"}}, "team-a");
  composeLabelled("a-default", 2, {}, "team-a");
  composeLabelled("b-default", 2, {}, "team-b");
  auto bad = engine_->blocking().compose(Caller::local(), [] {
    ComposeRequest r{"bad", {}, {{"reclaim-mode", "whenever"}}};
    r.placement.gpuCount = 1;
    return r;
  }());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, Code::kInvalidArgument) << "a reclaim label that does not parse is refused at compose";
  sample();
  clock_.advance(11min);
  const auto started = sample();
  ASSERT_EQ(started.size(), 1u) << "team-a's 10m detach policy takes a-default only";
  EXPECT_EQ(run(Result<Operation>(started[0])).state, OperationState::kSucceeded);
  EXPECT_EQ(engine_->reads().getSystem("a-default").error().code, Code::kNotFound) << "every GPU reclaimed: the system is decomposed";
  EXPECT_EQ(gpusOf("a-keep").size(), 2u);
  EXPECT_EQ(gpusOf("b-default").size(), 2u) << "team-b has yardd's 4h dry run";

  const Caller teamB{"bob", Role::kTenant, "team-b"};
  auto seen = *engine_->reads().idleGpus(teamB, Duration(0));
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& g : seen) {
    EXPECT_EQ(g.tenant, "team-b");
    EXPECT_EQ(describe(g.reclaim), "after 4h idle (dry run)");
  }
  auto all = *engine_->reads().idleGpus(Caller::local(), Duration(0));
  EXPECT_EQ(all.size(), 4u);
}

// Usage accounting splits the GPU-hours a system held into busy and idle from the idle stretches the samples
// recorded, and they are stored: what idled before a restart still counts after it. An open stretch is
// checkpointed (a crash loses at most 10 minutes of it) and written whole at a clean stop.
TEST_F(EngineIdleTest, UsageCountsIdleGpuHoursAndTheyOutliveARestart) {
  startWith({});
  composeLabelled("train", 2, {}, "team-a");
  const auto gpus = gpusOf("train");
  simulated_->setActivity(gpus[0], 97, {{4100, "python3 train.py", 30'000}});
  sample();  // gpus[1] is idle from here
  clock_.advance(30min);
  sample();
  simulated_->setActivity(gpus[1], 80);
  clock_.advance(30min);
  sample();  // busy again: one idle hour
  composeLabelled("notebook", 1, {}, "team-b");
  sample();  // idle from here, still idle at the restart
  clock_.advance(25min);
  sample();  // checkpointed
  clock_.advance(5min);

  auto idleOf = [&](const std::string& tenant) {
    auto report = engine_->history().usage(Caller::local(), 0, 0);
    EXPECT_TRUE(report) << report.error().message;
    double held = 0, idle = 0;
    for (const auto& r : report->rows)
      if (r.tenant == tenant) held += r.gpuSeconds, idle += r.idleGpuSeconds;
    return std::pair{held / 3600, idle / 3600};
  };
  EXPECT_DOUBLE_EQ(idleOf("team-a").first, 2 * 1.5);
  EXPECT_DOUBLE_EQ(idleOf("team-a").second, 1.0);
  EXPECT_DOUBLE_EQ(idleOf("team-b").second, 0.5) << "open, counted up to now";
  const auto stored = *store_->listIdleStretches(0, clock_.now() + 1);
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[1].tenant, "team-b");
  EXPECT_EQ(stored[1].to - stored[1].from, std::chrono::duration_cast<Duration>(25min).count()) << "the open one, as of its checkpoint";

  start();  // a clean restart: the tracker is empty, the store is not
  EXPECT_DOUBLE_EQ(idleOf("team-a").second, 1.0) << "the ended stretch was stored";
  EXPECT_DOUBLE_EQ(idleOf("team-b").second, 0.5) << "the open one was written at the stop";
  EXPECT_DOUBLE_EQ(idleOf("team-b").first, 0.5) << "held time comes from the operation log, whole";
}

}  // namespace
}  // namespace switchyard
