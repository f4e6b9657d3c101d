// The placement index against the scheduler's full cycle: on a churning pool (devices taken and
// released, health changes, hosts joining and leaving systems, the demand mix moving), every profile
// must choose the same host with the same plan, while evaluating far fewer hosts.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "composer/packing/demand_mix.h"
#include "composer/packing/placement_index.h"
#include "fabric/topology_generator.h"
#include "tests/support/topology_builder.h"

namespace switchyard {
namespace {

// Twelve fabrics of four 8-GPU switches, two models, hosts cabled into two switches each; plus a
// host cabled into two fabrics.
TopologyShape churnShape() {
  TopologyShape shape;
  shape.totalGpus = 12 * 32;
  shape.switchesPerFabric = 4;
  shape.gpusPerSwitch = 8;
  shape.hostsPerFabric = 6;
  shape.upstreamPortsPerHost = 2;
  shape.maxDevicesPerHost = 12;
  return shape;
}

Topology churnTopology() {
  Topology t = generateTopology(churnShape());
  t.ports.push_back({"sw0-usp-bridge", "sw0", PortKind::kUpstream, 5, 16, {}});
  t.ports.push_back({"sw5-usp-bridge", "sw5", PortKind::kUpstream, 5, 16, {}});
  t.hosts.push_back({"bridge", {{"sw0-usp-bridge", 0}, {"sw5-usp-bridge", 1}}, 64, 512, 16});
  return t;
}

PlacementRequest randomSizedRequest(std::mt19937& rng) {
  PlacementRequest r;
  const int sizes[] = {1, 1, 2, 2, 3, 4, 4, 8, 12, 16};
  r.gpuCount = sizes[rng() % 10];
  r.model = rng() % 6 == 0 ? "A100-SXM4-40GB" : "";
  r.peerToPeer = rng() % 4 == 0 ? PeerToPeer::kRequired : PeerToPeer::kPreferred;
  return r;
}

void expectSameDecision(const placement::Decision& want, const placement::Decision& got,
                        const std::string& where) {
  ASSERT_EQ(want.chosen.has_value(), got.chosen.has_value()) << where;
  if (!want.chosen) {  // the same refusal: the same hosts explained, the same reasons, the same counts left out
    ASSERT_EQ(want.diagnoses.size(), got.diagnoses.size()) << where;
    for (std::size_t k = 0; k < want.diagnoses.size(); ++k) {
      EXPECT_EQ(want.diagnoses[k].candidate, got.diagnoses[k].candidate) << where;
      EXPECT_EQ(want.diagnoses[k].rejectedBy, got.diagnoses[k].rejectedBy) << where;
      EXPECT_EQ(want.diagnoses[k].reason, got.diagnoses[k].reason) << where;
    }
    ASSERT_EQ(want.unexplained.size(), got.unexplained.size()) << where;
    for (std::size_t k = 0; k < want.unexplained.size(); ++k) {
      EXPECT_EQ(want.unexplained[k].rejectedBy, got.unexplained[k].rejectedBy) << where;
      EXPECT_EQ(want.unexplained[k].hosts, got.unexplained[k].hosts) << where;
    }
    return;
  }
  ASSERT_EQ(want.chosen->hostIndex, got.chosen->hostIndex) << where;
  const auto h = static_cast<std::size_t>(want.chosen->hostIndex);
  const DevicePlan& a = *want.state.find<DevicePlans>()->find(static_cast<int>(h));
  const DevicePlan& b = *got.state.find<DevicePlans>()->find(static_cast<int>(h));
  ASSERT_EQ(a.parts.size(), b.parts.size()) << where;
  for (std::size_t k = 0; k < a.parts.size(); ++k) {
    EXPECT_EQ(a.parts[k].switchIndex, b.parts[k].switchIndex) << where;
    EXPECT_EQ(a.parts[k].take, b.parts[k].take) << where;
    EXPECT_EQ(a.parts[k].devices, b.parts[k].devices) << where;
  }
}

// Systems coming and going on a pool, as the engine takes and gives back a plan's GPUs.
struct Churn {
  std::vector<std::pair<std::vector<int>, int>> live;  // devices, host

  // Takes what the decision's plan takes (three times in four, so some decisions are only looked at).
  void take(const placement::Decision& got, Pool& pool, std::mt19937& rng) {
    if (!got.chosen || rng() % 4 == 0) return;
    const int h = got.chosen->hostIndex;
    const DevicePlan& plan = *got.state.find<DevicePlans>()->find(h);
    auto& eligible = *got.state.find<EligibleDevices>();
    std::vector<int> taken;
    for (const auto& part : plan.parts) {
      const auto& from = part.devices.empty() ? eligible.devices(part.switchIndex) : part.devices;
      taken.insert(taken.end(), from.begin(), from.begin() + static_cast<long>(part.take));
    }
    for (int d : taken) pool.setFree(d, false);
    pool.addAttached(h, static_cast<int>(taken.size()));
    pool.setInSystem(h, true);
    live.emplace_back(std::move(taken), h);
  }
  // A system goes away, one time in three.
  void release(Pool& pool, std::mt19937& rng) {
    if (live.empty() || rng() % 3 != 0) return;
    const std::size_t k = rng() % live.size();
    for (int d : live[k].first) pool.setFree(d, true);
    pool.addAttached(live[k].second, -static_cast<int>(live[k].first.size()));
    pool.setInSystem(live[k].second, false);
    live.erase(live.begin() + static_cast<long>(k));
  }
};

// One request through the full cycle and the index: the same decision (a fatal failure otherwise), then the pool
// churns on what the index chose.
void decideBothAndChurn(const ComposableScheduler& scheduler, PlacementIndex& index, Pool& pool, const PlacementRequest& r, Churn& churn,
                        std::mt19937& rng, int i) {
  auto want = scheduler.schedule(pool, r, false);
  auto got = index.schedule(scheduler, pool, r);
  expectSameDecision(want, got, "request " + std::to_string(i));
  if (::testing::Test::HasFatalFailure()) return;
  churn.take(got, pool, rng);
  churn.release(pool, rng);
}

class PlacementIndexTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PlacementIndexTest, DecidesAsTheFullCycleOnAChurningPool) {
  Pool pool(churnTopology());
  auto scheduler = *buildComposableScheduler(GetParam());
  PlacementIndex index;
  DemandTracker demand;
  std::mt19937 rng(5);
  Churn churn;
  for (int i = 0; i < 1500; ++i) {
    const PlacementRequest r = randomSizedRequest(rng);
    demand.observe(r, pool);  // the mix moves now and then: the index must notice
    decideBothAndChurn(*scheduler, index, pool, r, churn, rng, i);
    if (HasFatalFailure()) return;
    if (rng() % 10 == 0) {  // a host joins or leaves a system that holds no device yet
      const int h = static_cast<int>(rng() % pool.hosts().size());
      if (std::none_of(churn.live.begin(), churn.live.end(), [&](const auto& l) { return l.second == h; }))
        pool.setInSystem(h, !pool.hosts()[static_cast<std::size_t>(h)].inSystem);
    }
    if (rng() % 20 == 0) {  // a GPU's health moves
      const DeviceHealth h[] = {DeviceHealth::kOk, DeviceHealth::kCritical};
      pool.setHealth(static_cast<int>(rng() % pool.devices().size()), h[rng() % 2]);
    }
  }
  const auto& s = index.stats();
  EXPECT_EQ(s.stale, 0U);
  EXPECT_GT(s.cycles, 500U);  // the rest fit nowhere, answered from the ranking (refusals)
  EXPECT_GT(s.refusals, 100U);
  EXPECT_EQ(s.fallbacks, 0U);
  // Fewer host verdicts than the full cycle's (a refusal's explained hosts counted among them), though this small
  // pool sees ~30 request shapes and a demand mix that moves (each move re-ranks every shape): switchyard_bench
  // packing shows the gain at scale.
  EXPECT_LT(s.evaluated, 1500U * pool.hosts().size() * 2 / 3) << "rebuilds " << s.rebuilds << ", refusals " << s.refusals;
}

// GPUs with drives and NICs beside them (issue 62) are ranked per shape with their companions: the same decisions
// as the full cycle while NICs and drives come and go under the switches.
TEST_P(PlacementIndexTest, DecidesAsTheFullCycleWithCompanions) {
  TopologyShape shape = churnShape();
  shape.nicsPerSwitch = 2;
  shape.drivesPerSwitch = 1;
  Pool pool(generateTopology(shape));
  auto scheduler = *buildComposableScheduler(GetParam());
  PlacementIndex index;
  std::mt19937 rng(9);
  std::vector<int> endpoints;
  for (std::size_t d = 0; d < pool.devices().size(); ++d)
    if (pool.devices()[d].kind != DeviceKind::kGpu) endpoints.push_back(static_cast<int>(d));
  Churn churn;
  for (int i = 0; i < 1200; ++i) {
    PlacementRequest r = randomSizedRequest(rng);
    if (rng() % 3 != 0) r.companionEndpoints.push_back({DeviceKind::kNic, 1 + static_cast<int>(rng() % 2), "", 0, rng() % 2 ? Affinity::kSwitch : Affinity::kDomain});
    if (rng() % 3 == 0) r.companionEndpoints.push_back({DeviceKind::kNvme, 1, "", 0, Affinity::kDomain});
    decideBothAndChurn(*scheduler, index, pool, r, churn, rng, i);
    if (HasFatalFailure()) return;
    for (int k = 0; k < 3; ++k) {  // drives and NICs come and go
      const int e = endpoints[rng() % endpoints.size()];
      pool.setFree(e, !pool.devices()[static_cast<std::size_t>(e)].free);
    }
  }
  EXPECT_EQ(index.stats().stale, 0U);
  EXPECT_GT(index.stats().cycles, 300U);
}

INSTANTIATE_TEST_SUITE_P(Profiles, PlacementIndexTest, ::testing::Values("switchyard-v1", "switchyard-v2", "hived-buddy"));

// One pool, one profile, one index; requests of `gpus` GPUs.
struct IndexFixture {
  explicit IndexFixture(const std::string& profile) : scheduler(*buildComposableScheduler(profile)) {}
  PlacementRequest request(int gpus) const {
    PlacementRequest r;
    r.gpuCount = gpus;
    return r;
  }
  Pool pool{churnTopology()};
  std::shared_ptr<const ComposableScheduler> scheduler;
  PlacementIndex index;
};

TEST(PlacementIndex, ACopiedPoolIsRankedAfresh) {
  IndexFixture f("switchyard-v1");
  const PlacementRequest r = f.request(2);
  ASSERT_TRUE(f.index.schedule(*f.scheduler, f.pool, r).chosen);
  Pool copy = f.pool;
  for (int d : copy.switches()[0].freeDevices) copy.setFree(d, false);  // logged in the copy only
  auto want = f.scheduler->schedule(copy, r, false);
  auto got = f.index.schedule(*f.scheduler, copy, r);
  expectSameDecision(want, got, "copy");
  EXPECT_EQ(f.index.stats().rebuilds, 2U);
}

TEST(PlacementIndex, ExplainedAndPinnedRequestsTakeTheFullCycle) {
  IndexFixture f("switchyard-v2");
  PlacementRequest r = f.request(4);
  r.explain = true;
  auto d = f.index.schedule(*f.scheduler, f.pool, r);
  EXPECT_EQ(d.diagnoses.size(), f.pool.hosts().size());  // every host explains itself
  r.explain = false;
  r.host = "host3";
  d = f.index.schedule(*f.scheduler, f.pool, r);
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(f.pool.hosts()[static_cast<std::size_t>(d.chosen->hostIndex)].id, "host3");
  EXPECT_EQ(f.index.stats().fallbacks, 2U);
  EXPECT_EQ(f.index.stats().cycles, 0U);
}

TEST(PlacementIndex, NothingFitsIsExplainedFromTheRankingAsTheFullCycleExplainsIt) {
  IndexFixture f("switchyard-v1");
  PlacementRequest r = f.request(9);
  r.peerToPeer = PeerToPeer::kRequired;  // no switch holds 9
  auto d = f.index.schedule(*f.scheduler, f.pool, r);
  EXPECT_FALSE(d.chosen);
  EXPECT_EQ(d.status.kind, placement::Status::kRejected);
  EXPECT_EQ(f.index.stats().refusals, 1U);
  EXPECT_EQ(f.index.stats().fallbacks, 0U);
  ASSERT_EQ(d.diagnoses.size(), placement::kExplainedPerFilter);  // 73 hosts, one reason: eight said, the rest counted
  EXPECT_EQ(d.diagnoses[0].candidate, f.pool.hosts()[0].id);
  EXPECT_NE(d.diagnoses[0].reason.find("9"), std::string::npos) << d.diagnoses[0].reason;
  ASSERT_EQ(d.unexplained.size(), 1U);
  EXPECT_EQ(d.unexplained[0].hosts, f.pool.hosts().size() - placement::kExplainedPerFilter);
  expectSameDecision(f.scheduler->schedule(f.pool, r, false), f.index.schedule(*f.scheduler, f.pool, r), "again");

  // Taken by a system, a host is rejected by another filter: counted apart, explained among its first eight.
  f.pool.setInSystem(3, true);
  d = f.index.schedule(*f.scheduler, f.pool, r);
  ASSERT_EQ(d.unexplained.size(), 1U) << "one host of the other reason: explained, not counted";
  ASSERT_EQ(d.diagnoses.size(), placement::kExplainedPerFilter + 1);
  EXPECT_EQ(d.diagnoses[3].candidate, f.pool.hosts()[3].id);
  EXPECT_NE(d.diagnoses[3].rejectedBy, d.diagnoses[0].rejectedBy);
  expectSameDecision(f.scheduler->schedule(f.pool, r, false), d, "a host in a system");

  r.explain = true;  // asked: every host, from the full cycle
  EXPECT_EQ(f.index.schedule(*f.scheduler, f.pool, r).diagnoses.size(), f.pool.hosts().size());
}

TEST(PlacementIndex, ManyShapesEvictTheLeastRecentlyUsedRanking) {
  IndexFixture f("switchyard-v1");
  // 300 distinct shapes of 2 GPUs (more than the 256 rankings kept): minimum memory, P2P and attach vary.
  for (int i = 0; i < 300; ++i) {
    PlacementRequest r = f.request(2);
    r.minMemoryGiB = i % 75;
    r.peerToPeer = (i / 75) % 2 ? PeerToPeer::kRequired : PeerToPeer::kPreferred;
    r.hostMayHaveSystem = (i / 150) % 2;
    ASSERT_TRUE(f.index.schedule(*f.scheduler, f.pool, r).chosen);
    // The first shape is asked again every time, so it is never the least recently used.
    ASSERT_TRUE(f.index.schedule(*f.scheduler, f.pool, f.request(3)).chosen);
  }
  EXPECT_EQ(f.index.stats().rebuilds, 301U);  // each new shape once, the busy one once
  EXPECT_EQ(f.index.rankingsKept(), 256U);
}

TEST(PlacementIndex, OnlyAProfileThatReadsTheDemandMixIsReRankedWhenItMoves) {
  for (const auto& [profile, rebuildsAfterMove] : {std::pair{"switchyard-v1", 1U}, std::pair{"switchyard-v2", 2U}}) {
    IndexFixture f(profile);
    ASSERT_TRUE(f.index.schedule(*f.scheduler, f.pool, f.request(2)).chosen);
    f.pool.setDemand(std::make_shared<DemandMix>(DemandMix{{DemandShape{8, true, ""}, 1.0}}));
    auto want = f.scheduler->schedule(f.pool, f.request(2), false);
    expectSameDecision(want, f.index.schedule(*f.scheduler, f.pool, f.request(2)), profile);
    EXPECT_EQ(f.index.stats().rebuilds, rebuildsAfterMove) << profile;
  }
}

// A score that does not say what it reads: the index cannot know which verdicts it may keep.
class UndeclaredScore final : public placement::ScorePlugin {
 public:
  std::string_view name() const override { return "undeclared"; }
  double score(placement::CycleState&, const Pool&, const PlacementRequest&, const placement::Candidate& c) override {
    return -c.hostIndex;
  }
};

TEST(PlacementIndex, AProfileWithAPluginThatReadsMoreTakesTheFullCycle) {
  ComposableRegistry registry = composableRegistry();
  registry.add("undeclared", [] { return std::make_unique<UndeclaredScore>(); });
  placement::Profile profile = switchyardV1Profile();
  profile.scores.emplace_back("undeclared", 1);
  auto scheduler = *ComposableScheduler::build(registry, profile);
  Pool pool(churnTopology());
  PlacementIndex index;
  PlacementRequest r;
  r.gpuCount = 2;
  ASSERT_TRUE(index.schedule(*scheduler, pool, r).chosen);
  EXPECT_EQ(index.stats().fallbacks, 1U);
  EXPECT_EQ(index.stats().cycles, 0U);
}

}  // namespace
}  // namespace switchyard
