// Baselines, re-implemented from the descriptions in the FGD paper and the behaviour of its simulator's
// score plugins: integer scores in 0..100, optional min-max normalisation, the best node chosen with ties
// going to the earliest node in the cluster's order (the simulator patches kube-scheduler's selectHost to
// take the lexicographically smallest node name, and names carry a per-seed random prefix, so "earliest"
// is a seeded random order), then a GPU selection rule inside the node.
#include <algorithm>
#include <random>

#include "composer/packing/sharing/share_policy.h"

namespace switchyard::sharing {
namespace {

constexpr int64_t kMaxScore = 100;
constexpr double kMaxSpecCpu = 128000;  // milli-CPU of the largest node: normalises CPU in scores
constexpr double kMaxSpecGpu = 8000;    // milli-GPU of the largest node

enum class GpuRule { kBestFit, kWorstFit };

// A shared request goes to the fitting GPU with the least (best fit) or most (worst fit) left.
GpuPick pickGpus(const ShareNode& n, const ShareRequest& r, GpuRule rule) {
  if (!r.sharesGpu() || rule == GpuRule::kBestFit) return pickBestFitGpu(n, r);
  int chosen = -1;
  for (int i = 0; i < n.gpuCount(); ++i) {
    int32_t left = n.gpuLeft[static_cast<size_t>(i)];
    if (gpuTakes(n, i, r) && (chosen < 0 || left > n.gpuLeft[static_cast<size_t>(chosen)])) chosen = i;
  }
  GpuPick pick;
  if (chosen >= 0) pick.add(chosen);
  return pick;
}

// Score every node that fits, optionally min-max normalise, pick the best at random among ties.
class ScoredPolicy : public SharePolicy {
 public:
  ScoredPolicy(GpuRule rule, bool normalize) : rule_(rule), normalize_(normalize) {}

  std::optional<SharePlacement> choose(const ShareCluster& c, const ShareRequest& r) override {
    scores_.clear();
    for (size_t i = 0; i < c.size(); ++i)
      if (fits(c.node(i), r)) scores_.push_back({i, score(c.node(i), r)});
    if (scores_.empty()) return std::nullopt;
    if (normalize_) normalizeScores();
    auto top = std::max_element(scores_.begin(), scores_.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });  // first of equals
    size_t chosen = top->first;
    return SharePlacement{chosen, pickGpus(c.node(chosen), r, rule_)};
  }

 protected:
  virtual int64_t score(const ShareNode& n, const ShareRequest& r) const = 0;

 private:
  void normalizeScores() {
    auto [lo, hi] = std::minmax_element(scores_.begin(), scores_.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
    int64_t low = lo->second;
    int64_t range = hi->second - low;
    for (auto& s : scores_) s.second = range == 0 ? 0 : (s.second - low) * kMaxScore / range;
  }

  GpuRule rule_;
  bool normalize_;
  std::vector<std::pair<size_t, int64_t>> scores_;
};

// Least free CPU and GPU after placement, each normalised by the largest node, weighted equally.
double leftoverShare(const ShareNode& n, const ShareRequest& r) {
  return 0.5 * (n.cpuLeft - r.cpuMilli) / kMaxSpecCpu +
         0.5 * static_cast<double>(n.gpuMilliLeft() - r.totalGpuMilli()) / kMaxSpecGpu;
}

class BestFit final : public ScoredPolicy {
 public:
  BestFit() : ScoredPolicy(GpuRule::kBestFit, true) {}
  std::string_view name() const override { return "best-fit"; }

 protected:
  int64_t score(const ShareNode& n, const ShareRequest& r) const override {
    return static_cast<int64_t>((1.0 - leftoverShare(n, r)) * kMaxScore);
  }
};

class WorstFit final : public ScoredPolicy {
 public:
  WorstFit() : ScoredPolicy(GpuRule::kWorstFit, true) {}
  std::string_view name() const override { return "worst-fit"; }

 protected:
  int64_t score(const ShareNode& n, const ShareRequest& r) const override {
    return static_cast<int64_t>(leftoverShare(n, r) * kMaxScore);
  }
};

// Tetris: prefer the node whose free vector is least aligned with the request (packs the fuller node).
class DotProduct final : public ScoredPolicy {
 public:
  DotProduct() : ScoredPolicy(GpuRule::kBestFit, false) {}
  std::string_view name() const override { return "dot-product"; }

 protected:
  int64_t score(const ShareNode& n, const ShareRequest& r) const override {
    double dot = (n.cpuLeft / kMaxSpecCpu) * (r.cpuMilli / kMaxSpecCpu) +
                 (static_cast<double>(n.gpuMilliLeft()) / kMaxSpecGpu) * (static_cast<double>(r.totalGpuMilli()) / kMaxSpecGpu);
    return static_cast<int64_t>(kMaxScore * (1.0 - dot / 2.0));
  }
};

// Prefer shared GPUs already in use, then free GPUs on a used node, then an idle node (fewest GPUs first).
class GpuPacking final : public ScoredPolicy {
 public:
  GpuPacking() : ScoredPolicy(GpuRule::kBestFit, false) {}
  std::string_view name() const override { return "gpu-packing"; }

 protected:
  int64_t score(const ShareNode& n, const ShareRequest& r) const override {
    if (r.gpuCount == 0) return 0;
    int free = n.fullyFreeGpus();
    if (free == n.gpuCount()) return std::max<int64_t>(kMaxScore / 3 - free, free);
    std::array<int, kMaxGpusPerNode> order{};
    for (int i = 0; i < n.gpuCount(); ++i) order[static_cast<size_t>(i)] = i;
    std::stable_sort(order.begin(), order.begin() + n.gpuCount(),
                     [&](int a, int b) { return n.gpuLeft[static_cast<size_t>(a)] < n.gpuLeft[static_cast<size_t>(b)]; });
    int need = r.gpuCount;
    int freeUsed = 0;
    int64_t freeShareOnUsed = 0;
    for (int k = 0; k < n.gpuCount() && need > 0; ++k) {
      int32_t left = n.gpuLeft[static_cast<size_t>(order[static_cast<size_t>(k)])];
      if (!gpuTakes(n, order[static_cast<size_t>(k)], r)) continue;
      --need;
      freeUsed += left == kMilliPerGpu ? 1 : 0;
      freeShareOnUsed += left * 100 / kMilliPerGpu;
    }
    if (freeUsed > 0) return std::max<int64_t>(kMaxScore / 2 - freeUsed, kMaxScore / 3);
    return std::max<int64_t>(kMaxScore - freeShareOnUsed / 10, kMaxScore / 2);
  }
};

// Gandiva-style affinity: put requests of one kind (shared, 1, 2, 4, 8 GPUs) together, fuller nodes first.
class GpuClustering final : public ScoredPolicy {
 public:
  GpuClustering() : ScoredPolicy(GpuRule::kBestFit, false) {}
  std::string_view name() const override { return "gpu-clustering"; }

 protected:
  int64_t score(const ShareNode& n, const ShareRequest& r) const override {
    if (r.gpuCount == 0) return 0;
    size_t kind = r.sharesGpu() ? 0 : static_cast<size_t>(r.gpuCount);
    int kinds = 0;
    for (int32_t a : n.affinity) kinds += a > 0 ? 1 : 0;
    constexpr auto kMaxGpu = static_cast<int64_t>(kMaxSpecGpu);
    int64_t fullness = kMaxScore / 4 * (kMaxGpu - n.gpuMilliLeft()) / kMaxGpu;
    if (n.affinity[kind] > 0) return fullness + (kinds == 1 ? kMaxScore * 3 / 4 : kMaxScore * 2 / 4);
    return fullness + (kinds == 0 ? kMaxScore / 4 : 0);
  }
};

class RandomPolicy final : public SharePolicy {
 public:
  explicit RandomPolicy(uint64_t seed) : rng_(seed) {}
  std::string_view name() const override { return "random"; }
  std::optional<SharePlacement> choose(const ShareCluster& c, const ShareRequest& r) override {
    feasible_.clear();
    for (size_t i = 0; i < c.size(); ++i)
      if (fits(c.node(i), r)) feasible_.push_back(i);
    if (feasible_.empty()) return std::nullopt;
    size_t node = feasible_[std::uniform_int_distribution<size_t>(0, feasible_.size() - 1)(rng_)];
    return SharePlacement{node, randomGpu(c.node(node), r)};
  }

 private:
  // A shared request goes to a fitting GPU chosen uniformly; whole GPUs to the lowest free ones.
  GpuPick randomGpu(const ShareNode& n, const ShareRequest& r) {
    if (!r.sharesGpu()) return pickExclusiveGpus(n, r);
    int chosen = -1;
    int seen = 0;
    for (int i = 0; i < n.gpuCount(); ++i)
      if (gpuTakes(n, i, r) && std::uniform_int_distribution<int>(0, seen++)(rng_) == 0) chosen = i;
    GpuPick pick;
    if (chosen >= 0) pick.add(chosen);
    return pick;
  }

  std::mt19937_64 rng_;
  std::vector<size_t> feasible_;
};

class FirstFit final : public SharePolicy {
 public:
  std::string_view name() const override { return "first-fit"; }
  std::optional<SharePlacement> choose(const ShareCluster& c, const ShareRequest& r) override {
    for (size_t i = 0; i < c.size(); ++i)
      if (fits(c.node(i), r)) return SharePlacement{i, pickBestFitGpu(c.node(i), r)};
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<SharePolicy> makeRandomPolicy(uint64_t seed) { return std::make_unique<RandomPolicy>(seed); }
std::unique_ptr<SharePolicy> makeFirstFitPolicy() { return std::make_unique<FirstFit>(); }
std::unique_ptr<SharePolicy> makeBestFitPolicy() { return std::make_unique<BestFit>(); }
std::unique_ptr<SharePolicy> makeWorstFitPolicy() { return std::make_unique<WorstFit>(); }
std::unique_ptr<SharePolicy> makeDotProductPolicy() { return std::make_unique<DotProduct>(); }
std::unique_ptr<SharePolicy> makeGpuPackingPolicy() { return std::make_unique<GpuPacking>(); }
std::unique_ptr<SharePolicy> makeGpuClusteringPolicy() { return std::make_unique<GpuClustering>(); }

}  // namespace switchyard::sharing
