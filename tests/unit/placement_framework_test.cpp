// The placement framework with fake plugins on a toy model: bins with free capacity.
#include <gtest/gtest.h>

#include "composer/placement/framework.h"

namespace switchyard::placement {
namespace {

struct Bins {
  using Cluster = std::vector<int>;  // free capacity per bin
  using Request = int;               // size
  struct Candidate {
    std::size_t bin;
  };
  static std::string describe(const Cluster&, const Candidate& c) { return "bin" + std::to_string(c.bin); }
};

std::vector<std::string> calls;  // reserve/unreserve order, for the rollback test

struct Largest {
  int value;
};

class RecordLargest final : public PreFilterPlugin<Bins> {
 public:
  std::string_view name() const override { return "record-largest"; }
  Status preFilter(CycleState& state, const std::vector<int>& bins, const int& size) override {
    if (size <= 0) return Status::rejected("size must be positive");
    state.emplace<Largest>(*std::max_element(bins.begin(), bins.end()));
    return Status::fits();
  }
};

class AllBins final : public CandidatePlugin<Bins> {
 public:
  std::string_view name() const override { return "all-bins"; }
  void candidates(CycleState&, const std::vector<int>& bins, const int&, std::vector<Bins::Candidate>& out) override {
    for (std::size_t i = 0; i < bins.size(); ++i) out.push_back({i});
  }
};

class Fits final : public FilterPlugin<Bins> {
 public:
  std::string_view name() const override { return "fits"; }
  Status filter(CycleState& state, const std::vector<int>& bins, const int& size, const Bins::Candidate& c) override {
    if (bins[c.bin] >= size) return Status::fits();
    return Status::rejected(explaining(state) ? "only " + std::to_string(bins[c.bin]) + " free" : "");
  }
};

class TightFit final : public ScorePlugin<Bins> {
 public:
  std::string_view name() const override { return "tight-fit"; }
  double score(CycleState&, const std::vector<int>& bins, const int& size, const Bins::Candidate& c) override {
    return -(bins[c.bin] - size);
  }
};

// Prefers bins with more room than the largest recorded by the pre-filter minus one: reads typed state.
class NearLargest final : public ScorePlugin<Bins> {
 public:
  std::string_view name() const override { return "near-largest"; }
  double score(CycleState& state, const std::vector<int>& bins, const int&, const Bins::Candidate& c) override {
    return bins[c.bin] >= state.find<Largest>()->value - 1 ? 1 : 0;
  }
  void normalize(std::vector<double>& scores) override { minMaxNormalize(scores); }
  bool normalizes() const override { return true; }
};

class Take final : public ReservePlugin<Bins> {
 public:
  std::string_view name() const override { return "take"; }
  Status reserve(CycleState&, std::vector<int>& bins, const int& size, const Bins::Candidate& c) override {
    calls.push_back("take");
    bins[c.bin] -= size;
    return Status::fits();
  }
  void unreserve(CycleState&, std::vector<int>& bins, const int& size, const Bins::Candidate& c) override {
    calls.push_back("untake");
    bins[c.bin] += size;
  }
};

class Refuse final : public ReservePlugin<Bins> {
 public:
  std::string_view name() const override { return "refuse"; }
  Status reserve(CycleState&, std::vector<int>&, const int&, const Bins::Candidate&) override {
    calls.push_back("refuse");
    return Status::rejected("quota");
  }
  void unreserve(CycleState&, std::vector<int>&, const int&, const Bins::Candidate&) override { calls.push_back("unrefuse"); }
};

Registry<Bins> registry() {
  Registry<Bins> r;
  r.add("record-largest", [] { return std::make_unique<RecordLargest>(); });
  r.add("all-bins", [] { return std::make_unique<AllBins>(); });
  r.add("fits", [] { return std::make_unique<Fits>(); });
  r.add("tight-fit", [] { return std::make_unique<TightFit>(); });
  r.add("near-largest", [] { return std::make_unique<NearLargest>(); });
  r.add("take", [] { return std::make_unique<Take>(); });
  r.add("refuse", [] { return std::make_unique<Refuse>(); });
  return r;
}

Profile profile(std::vector<std::pair<std::string, double>> scores, std::vector<std::string> reserves = {"take"}) {
  return {"test", {"record-largest"}, "all-bins", {"fits"}, std::move(scores), std::move(reserves)};
}

TEST(PlacementFramework, PicksTheHighestWeightedTotal) {
  auto s = *Scheduler<Bins>::build(registry(), profile({{"tight-fit", 1}}));
  auto d = s->schedule({5, 3, 8, 3}, 3, false);
  ASSERT_TRUE(d.chosen);
  EXPECT_EQ(d.chosen->bin, 1u) << "tightest fit; bin 3 ties and loses to the earlier candidate";
  EXPECT_TRUE(d.diagnoses.empty()) << "nothing is formatted on the hot path";

  auto weighted = *Scheduler<Bins>::build(registry(), profile({{"tight-fit", 1}, {"near-largest", 10}}));
  auto w = weighted->schedule({5, 3, 8, 3}, 3, false);
  EXPECT_EQ(w.chosen->bin, 2u) << "near-largest (normalized to 100, weight 10) outweighs the fit";
}

TEST(PlacementFramework, EvaluatesOneCandidateAsTheCycleTotalsIt) {
  auto s = *Scheduler<Bins>::build(registry(), profile({{"tight-fit", 3}}));
  ASSERT_TRUE(s->perCandidate());
  const std::vector<int> bins{1, 4, 8};
  auto explained = s->schedule(bins, 3, true);
  CycleState state;
  ASSERT_TRUE(s->prepare(state, bins, 3).ok());
  for (std::size_t b = 0; b < bins.size(); ++b) {
    const auto v = s->evaluate(state, bins, 3, {b});
    EXPECT_EQ(v.status.ok(), explained.diagnoses[b].feasible) << b;
    if (v.status.ok()) EXPECT_EQ(v.total, explained.diagnoses[b].total) << b;
  }
  EXPECT_EQ(s->evaluate(state, bins, 3, {0}).status.kind, Status::kRejected);
  // A score normalised across candidates cannot be taken one candidate at a time.
  EXPECT_FALSE((*Scheduler<Bins>::build(registry(), profile({{"tight-fit", 1}, {"near-largest", 10}})))->perCandidate());
}

TEST(PlacementFramework, ExplainsEveryCandidate) {
  auto s = *Scheduler<Bins>::build(registry(), profile({{"tight-fit", 2}, {"near-largest", 1}}));
  auto d = s->schedule({1, 4, 8}, 3, true);
  ASSERT_EQ(d.diagnoses.size(), 3u);
  EXPECT_FALSE(d.diagnoses[0].feasible);
  EXPECT_EQ(d.diagnoses[0].rejectedBy, "fits");
  EXPECT_EQ(d.diagnoses[0].reason, "only 1 free");
  EXPECT_TRUE(d.diagnoses[1].feasible);
  ASSERT_EQ(d.diagnoses[1].scores.size(), 2u);
  EXPECT_EQ(d.diagnoses[1].scores[0], (std::pair<std::string, double>{"tight-fit", -2.0}));
  EXPECT_EQ(d.diagnoses[2].scores[1], (std::pair<std::string, double>{"near-largest", 100.0}));
  EXPECT_EQ(d.chosenIndex, 2u);
  EXPECT_EQ(d.diagnoses[d.chosenIndex].candidate, "bin2");
}

TEST(PlacementFramework, ANoFitIsExplainedEvenOnTheHotPath) {
  auto s = *Scheduler<Bins>::build(registry(), profile({{"tight-fit", 1}}));
  auto d = s->schedule({1, 2}, 3, false);
  EXPECT_FALSE(d.chosen);
  EXPECT_EQ(d.status.kind, Status::kRejected);
  ASSERT_EQ(d.diagnoses.size(), 2u);
  EXPECT_EQ(d.diagnoses[1].reason, "only 2 free");
}

TEST(PlacementFramework, PreFilterCanRejectTheRequest) {
  auto s = *Scheduler<Bins>::build(registry(), profile({{"tight-fit", 1}}));
  auto d = s->schedule({4}, 0, true);
  EXPECT_FALSE(d.chosen);
  EXPECT_EQ(d.status.reason, "size must be positive");
}

TEST(PlacementFramework, RegistryRejectsUnknownAndMisplacedPlugins) {
  auto unknown = Scheduler<Bins>::build(registry(), profile({{"magic", 1}}));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown placement plugin 'magic'"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("tight-fit"), std::string::npos) << "lists the known ones";
  auto misplaced = Scheduler<Bins>::build(registry(), profile({{"fits", 1}}));
  ASSERT_FALSE(misplaced);
  EXPECT_NE(misplaced.error().message.find("'fits' is not a score plugin"), std::string::npos);
}

TEST(PlacementFramework, AFailedReserveUnreservesInReverse) {
  auto s = *Scheduler<Bins>::build(registry(), profile({{"tight-fit", 1}}, {"take", "refuse"}));
  std::vector<int> bins{5, 4};
  auto d = s->schedule(bins, 4, false);
  ASSERT_TRUE(d.chosen);
  calls.clear();
  Status st = s->reserve(d, bins, 4);
  EXPECT_EQ(st.kind, Status::kRejected);
  EXPECT_EQ(calls, (std::vector<std::string>{"take", "refuse", "unrefuse", "untake"}));
  EXPECT_EQ(bins, (std::vector<int>{5, 4})) << "nothing stays reserved";

  auto ok = *Scheduler<Bins>::build(registry(), profile({{"tight-fit", 1}}));
  auto d2 = ok->schedule(bins, 4, false);
  EXPECT_TRUE(ok->reserve(d2, bins, 4).ok());
  EXPECT_EQ(bins, (std::vector<int>{5, 0}));
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
