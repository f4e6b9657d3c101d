// FGD (fragmentation gradient descent), re-implemented from the paper: place the request where it grows
// the node's expected fragmentation least. As in the authors' simulator, the score is
// int(sigmoid((frag_before - frag_after) / 1000) * 100), a shared request tries every GPU that fits and
// keeps the best, and ties among the best nodes go to the earliest node in the cluster's order. Deliberately naive (every node,
// every GPU, the full fragmentation each time): it is the reference our indexed policy is measured against.
// `cached` keeps each node's score per request shape until the node changes: the same decisions (and the
// same random draws) as the naive form, only faster, for long quality runs.
#include <cmath>
#include <map>
#include <tuple>

#include "composer/packing/sharing/fragmentation.h"
#include "composer/packing/sharing/share_policy.h"

namespace switchyard::sharing {
namespace {

int64_t fgdScore(double before, double after) {
  double x = (before - after) / 1000.0;
  return static_cast<int64_t>(100.0 / (1.0 + std::exp(-x)));
}

class FgdPolicy final : public SharePolicy {
 public:
  FgdPolicy(ShapeMix mix, bool cached) : mix_(std::move(mix)), cached_(cached) {}
  std::string_view name() const override { return "fgd"; }
  size_t memoryBytes() const override {
    size_t bytes = 0;
    for (const auto& [k, v] : cache_) bytes += v.capacity() * sizeof(Entry);
    return bytes;
  }

  std::optional<SharePlacement> choose(const ShareCluster& c, const ShareRequest& r) override {
    std::vector<Entry>* entries = nullptr;
    if (cached_) {
      entries = &cache_[{r.cpuMilli, r.gpuCount, r.gpuMilli, r.modelMask, r.mig}];
      entries->resize(c.size());
    }
    std::optional<SharePlacement> chosen;
    int64_t best = -1;
    for (size_t i = 0; i < c.size(); ++i) {
      const ShareNode& n = c.node(i);
      if (!fits(n, r)) continue;
      auto [score, pick] = entries ? cachedScore(n, (*entries)[i], r) : scoreNode(n, r);
      if (score > best) {
        best = score;
        chosen = SharePlacement{i, pick};
      }
    }
    return chosen;
  }

 private:
  struct Entry {
    uint32_t stamp = 0;  // node version + 1
    int64_t score = 0;
    GpuPick pick;
  };

  std::pair<int64_t, GpuPick> cachedScore(const ShareNode& n, Entry& e, const ShareRequest& r) {
    if (e.stamp != n.version + 1) {
      auto [score, pick] = scoreNode(n, r);
      e = Entry{n.version + 1, score, pick};
    }
    return {e.score, e.pick};
  }

  std::pair<int64_t, GpuPick> scoreNode(const ShareNode& n, const ShareRequest& r) {
    const double before = nodeFragmentation(n, mix_);
    scratch_ = n;
    if (r.sharesGpu()) {
      int64_t best = -1;
      GpuPick bestPick;
      for (int g = 0; g < n.gpuCount(); ++g) {
        auto gi = static_cast<size_t>(g);
        if (!gpuTakes(n, g, r)) continue;
        scratch_.cpuLeft = n.cpuLeft - r.cpuMilli;
        scratch_.gpuLeft[gi] = n.gpuLeft[gi] - r.gpuMilli;
        if (r.isMig()) {  // carve it where apply will (bestStart), so the slices left are scored
          scratch_.migTaken.resize(n.gpuLeft.size(), 0);
          scratch_.migTaken[gi] = static_cast<uint8_t>(n.migTakenOn(g) | memoryMask(r.migProfile(), bestStart(n.migTakenOn(g), r.migProfile()).value()));
        }
        int64_t s = fgdScore(before, nodeFragmentation(scratch_, mix_));
        scratch_.gpuLeft[gi] = n.gpuLeft[gi];
        if (r.isMig()) scratch_.migTaken[gi] = n.migTakenOn(g);
        if (s > best) {
          best = s;
          bestPick = GpuPick{};
          bestPick.add(g);
        }
      }
      return {best, bestPick};
    }
    GpuPick pick = pickExclusiveGpus(n, r);
    scratch_.cpuLeft -= r.cpuMilli;
    for (int a = 0; a < pick.count; ++a) scratch_.gpuLeft[static_cast<size_t>(pick.index[static_cast<size_t>(a)])] -= r.gpuMilli;
    return {fgdScore(before, nodeFragmentation(scratch_, mix_)), pick};
  }

  ShapeMix mix_;
  bool cached_;
  ShareNode scratch_;
  std::map<std::tuple<int32_t, int32_t, int32_t, uint32_t, int8_t>, std::vector<Entry>> cache_;
};

}  // namespace

std::unique_ptr<SharePolicy> makeFgdPolicy(ShapeMix mix, bool cached) {
  return std::make_unique<FgdPolicy>(std::move(mix), cached);
}

}  // namespace switchyard::sharing
