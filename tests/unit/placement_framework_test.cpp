// The placement framework with fake plugins over a pool of hosts without devices: each host is a bin whose
// free capacity is its device limit, and a request asks for `gpuCount` of it.
#include <gtest/gtest.h>

#include "composer/packing/placement_framework.h"

namespace switchyard::placement {
namespace {

// Hosts h0, h1, ... with these device limits.
Pool bins(const std::vector<int>& free) {
  Topology t;
  for (std::size_t i = 0; i < free.size(); ++i) t.hosts.push_back({"h" + std::to_string(i), {}, 8, 64, free[i]});
  return Pool(t);
}
PlacementRequest asking(int size) {
  PlacementRequest r;
  r.gpuCount = size;
  return r;
}
int room(const Pool& pool, const Candidate& c) { return pool.hosts()[static_cast<std::size_t>(c.hostIndex)].maxDevices; }

struct Largest {
  int value;
};

class RecordLargest final : public PreFilterPlugin {
 public:
  std::string_view name() const override { return "record-largest"; }
  Status preFilter(CycleState& state, const Pool& pool, const PlacementRequest& request) override {
    if (request.gpuCount <= 0) return Status::rejected("size must be positive");
    int largest = 0;
    for (const auto& h : pool.hosts()) largest = std::max(largest, h.maxDevices);
    state.emplace<Largest>(largest);
    return Status::fits();
  }
};

class AllHosts final : public CandidatePlugin {
 public:
  std::string_view name() const override { return "all-hosts"; }
  void candidates(CycleState&, const Pool& pool, const PlacementRequest&, std::vector<Candidate>& out) override {
    for (std::size_t i = 0; i < pool.hosts().size(); ++i) out.push_back({static_cast<int>(i)});
  }
};

class Fits final : public FilterPlugin {
 public:
  std::string_view name() const override { return "fits"; }
  Status filter(CycleState& state, const Pool& pool, const PlacementRequest& request, const Candidate& c) override {
    if (room(pool, c) >= request.gpuCount) return Status::fits();
    return Status::rejected(explaining(state) ? "only " + std::to_string(room(pool, c)) + " free" : "");
  }
};

// Rejects every odd-numbered host: a second reason beside "fits".
class EvenOnly final : public FilterPlugin {
 public:
  std::string_view name() const override { return "even-only"; }
  Status filter(CycleState& state, const Pool&, const PlacementRequest&, const Candidate& c) override {
    if (c.hostIndex % 2 == 0) return Status::fits();
    return Status::rejected(explaining(state) ? "odd" : "");
  }
};

class TightFit final : public ScorePlugin {
 public:
  std::string_view name() const override { return "tight-fit"; }
  double score(CycleState&, const Pool& pool, const PlacementRequest& request, const Candidate& c) override {
    return -(room(pool, c) - request.gpuCount);
  }
};

// Prefers hosts with more room than the largest recorded by the pre-filter minus one: reads typed state.
class NearLargest final : public ScorePlugin {
 public:
  std::string_view name() const override { return "near-largest"; }
  double score(CycleState& state, const Pool& pool, const PlacementRequest&, const Candidate& c) override {
    return room(pool, c) >= state.find<Largest>()->value - 1 ? 1 : 0;
  }
  void normalize(std::vector<double>& scores) override { minMaxNormalize(scores); }
  bool normalizes() const override { return true; }
};

Registry registry() {
  Registry r;
  r.add("record-largest", [] { return std::make_unique<RecordLargest>(); });
  r.add("all-hosts", [] { return std::make_unique<AllHosts>(); });
  r.add("fits", [] { return std::make_unique<Fits>(); });
  r.add("even-only", [] { return std::make_unique<EvenOnly>(); });
  r.add("tight-fit", [] { return std::make_unique<TightFit>(); });
  r.add("near-largest", [] { return std::make_unique<NearLargest>(); });
  return r;
}

Profile profile(std::vector<std::pair<std::string, double>> scores) {
  return {"test", {"record-largest"}, "all-hosts", {"fits"}, std::move(scores)};
}

TEST(PlacementFramework, PicksTheHighestWeightedTotal) {
  auto s = *Scheduler::build(registry(), profile({{"tight-fit", 1}}));
  auto d = s->schedule(bins({5, 3, 8, 3}), asking(3), false);
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.chosen->hostIndex, 1) << "tightest fit; host 3 ties and loses to the earlier candidate";
  EXPECT_TRUE(d.diagnoses.empty()) << "nothing is formatted on the hot path";

  auto weighted = *Scheduler::build(registry(), profile({{"tight-fit", 1}, {"near-largest", 10}}));
  auto w = weighted->schedule(bins({5, 3, 8, 3}), asking(3), false);
  EXPECT_EQ(w.chosen->hostIndex, 2) << "near-largest (normalized to 100, weight 10) outweighs the fit";
}

TEST(PlacementFramework, EvaluatesOneCandidateAsTheCycleTotalsIt) {
  auto s = *Scheduler::build(registry(), profile({{"tight-fit", 3}}));
  ASSERT_TRUE(s->perCandidate());
  const Pool pool = bins({1, 4, 8});
  auto explained = s->schedule(pool, asking(3), true);
  CycleState state;
  ASSERT_TRUE(s->prepare(state, pool, asking(3)).ok());
  for (int h = 0; h < 3; ++h) {
    const auto v = s->evaluate(state, pool, asking(3), {h});
    const auto& diagnosis = explained.diagnoses[static_cast<std::size_t>(h)];
    EXPECT_EQ(v.status.ok(), diagnosis.feasible) << h;
    if (v.status.ok()) EXPECT_EQ(v.total, diagnosis.total) << h;
  }
  EXPECT_EQ(s->evaluate(state, pool, asking(3), {0}).status.kind, Status::kRejected);
  // A score normalised across candidates cannot be taken one candidate at a time.
  EXPECT_FALSE((*Scheduler::build(registry(), profile({{"tight-fit", 1}, {"near-largest", 10}})))->perCandidate());
}

TEST(PlacementFramework, ExplainsEveryCandidate) {
  auto s = *Scheduler::build(registry(), profile({{"tight-fit", 2}, {"near-largest", 1}}));
  auto d = s->schedule(bins({1, 4, 8}), asking(3), true);
  ASSERT_EQ(d.diagnoses.size(), 3u);
  EXPECT_FALSE(d.diagnoses[0].feasible);
  EXPECT_EQ(d.diagnoses[0].rejectedBy, "fits");
  EXPECT_EQ(d.diagnoses[0].reason, "only 1 free");
  EXPECT_TRUE(d.diagnoses[1].feasible);
  ASSERT_EQ(d.diagnoses[1].scores.size(), 2u);
  EXPECT_EQ(d.diagnoses[1].scores[0], (std::pair<std::string, double>{"tight-fit", -2.0}));
  EXPECT_EQ(d.diagnoses[2].scores[1], (std::pair<std::string, double>{"near-largest", 100.0}));
  EXPECT_EQ(d.chosenIndex, 2u);
  EXPECT_EQ(d.diagnoses[d.chosenIndex].candidate, "h2");
}

TEST(PlacementFramework, ANoFitIsExplainedEvenOnTheHotPath) {
  auto s = *Scheduler::build(registry(), profile({{"tight-fit", 1}}));
  auto d = s->schedule(bins({1, 2}), asking(3), false);
  EXPECT_FALSE(d.chosen);
  EXPECT_EQ(d.status.kind, Status::kRejected);
  ASSERT_EQ(d.diagnoses.size(), 2u);
  EXPECT_EQ(d.diagnoses[1].reason, "only 2 free");
}

TEST(PlacementFramework, ANoFitExplainsAFewHostsPerFilterAndCountsTheRest) {
  auto s = *Scheduler::build(registry(), {"test", {"record-largest"}, "all-hosts", {"even-only", "fits"}, {{"tight-fit", 1}}});
  const Pool pool = bins(std::vector<int>(30, 1));  // 15 odd hosts (even-only says no), 15 even ones with 1 free
  auto d = s->schedule(pool, asking(3), false);
  EXPECT_FALSE(d.chosen);
  EXPECT_EQ(d.status.kind, Status::kRejected);
  ASSERT_EQ(d.diagnoses.size(), 2 * kExplainedPerFilter);
  for (std::size_t i = 0; i < d.diagnoses.size(); ++i) {  // the first eight of each, in host order: h0 ... h15
    EXPECT_EQ(d.diagnoses[i].candidate, "h" + std::to_string(i));
    EXPECT_EQ(d.diagnoses[i].rejectedBy, i % 2 ? "even-only" : "fits");
    EXPECT_EQ(d.diagnoses[i].reason, i % 2 ? "odd" : "only 1 free");
  }
  ASSERT_EQ(d.unexplained.size(), 2u);  // in profile order
  EXPECT_EQ(d.unexplained[0].rejectedBy, "even-only");
  EXPECT_EQ(d.unexplained[0].hosts, 15 - kExplainedPerFilter);
  EXPECT_EQ(d.unexplained[1].rejectedBy, "fits");
  EXPECT_EQ(d.unexplained[1].hosts, 15 - kExplainedPerFilter);

  auto all = s->schedule(pool, asking(3), true);  // asked to explain: every host, nothing counted
  EXPECT_EQ(all.diagnoses.size(), 30u);
  EXPECT_TRUE(all.unexplained.empty());
}

TEST(PlacementFramework, PreFilterCanRejectTheRequest) {
  auto s = *Scheduler::build(registry(), profile({{"tight-fit", 1}}));
  auto d = s->schedule(bins({4}), asking(0), true);
  EXPECT_FALSE(d.chosen);
  EXPECT_EQ(d.status.reason, "size must be positive");
}

TEST(PlacementFramework, RegistryRejectsUnknownAndMisplacedPlugins) {
  auto unknown = Scheduler::build(registry(), profile({{"magic", 1}}));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown placement plugin 'magic'"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("tight-fit"), std::string::npos) << "lists the known ones";
  auto misplaced = Scheduler::build(registry(), profile({{"fits", 1}}));
  ASSERT_FALSE(misplaced);
  EXPECT_NE(misplaced.error().message.find("'fits' is not a score plugin"), std::string::npos);
}

TEST(PlacementFramework, MinMaxNormalize) {
  std::vector<double> v{2, 4, 6};
  minMaxNormalize(v);
  EXPECT_EQ(v, (std::vector<double>{0, 50, 100}));
  std::vector<double> same{3, 3};
  minMaxNormalize(same);
  EXPECT_EQ(same, (std::vector<double>{0, 0}));
}

TEST(PlacementFramework, CycleStateIsTyped) {
  CycleState state;
  EXPECT_EQ(state.find<Largest>(), nullptr);
  state.emplace<Largest>(7);
  state.emplace<int>(3);
  EXPECT_EQ(state.find<Largest>()->value, 7);
  EXPECT_EQ(*state.find<int>(), 3);
  state.emplace<Largest>(9);
  EXPECT_EQ(state.find<Largest>()->value, 9);
}

}  // namespace
}  // namespace switchyard::placement
