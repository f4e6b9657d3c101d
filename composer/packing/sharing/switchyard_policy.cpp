// Switchyard's policy for GPU-sharing pools.
//
// Objective: keep the pool able to serve the request shapes it actually sees. It places each request where
// the expected fragmentation (FGD's definition, over a shape mix learned online from recent requests rather
// than given up front) grows least. Changes are compared at a resolution of `deltaResolution` milli-GPU
// (default 100, a tenth of a GPU) and equal ones go to the earliest node, so nodes fill one after another
// instead of being spread over by tiny differences; the result is deterministic. docs/benchmarks/packing.md
// shows the resolutions tried (0, 10, 40, 50, 100, 200) on six workloads and six seeds each.
//
// Indexed core: the change for (request shape, node) is cached and recomputed only for nodes whose version
// moved since (versions are mirrored from the cluster's change log), so a decision costs one pass over flat
// arrays and reads only the nodes it re-evaluates; node summaries (sorted GPUs, prefix sums) make
// each recomputation O(shapes x log GPUs). A new mix (it is re-learned only when it drifts) drops the caches.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "composer/packing/sharing/fragmentation.h"
#include "composer/packing/sharing/share_policy.h"

namespace switchyard::sharing {
namespace {

struct ShapeHash {
  size_t operator()(const ShareRequest& r) const {
    uint64_t h = static_cast<uint64_t>(static_cast<uint32_t>(r.cpuMilli)) * uint64_t{0x9E3779B97F4A7C15};
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(r.gpuCount * 1009 + r.gpuMilli)) + (h << 6) + (h >> 2);
    h ^= uint64_t{r.modelMask} + static_cast<uint64_t>(r.mig + 1) * 131 + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};

constexpr float kNoFit = std::numeric_limits<float>::infinity();

struct StateKey {
  int32_t cpuLeft;
  uint8_t model;
  int count;
  std::array<int16_t, kMaxGpusPerNode> sorted;  // only the first `count` are meaningful
  bool operator==(const StateKey& o) const {
    return cpuLeft == o.cpuLeft && model == o.model && count == o.count &&
           std::equal(sorted.begin(), sorted.begin() + count, o.sorted.begin());
  }
};
struct StateKeyHash {
  size_t operator()(const StateKey& k) const {
    uint64_t h = static_cast<uint64_t>(static_cast<uint32_t>(k.cpuLeft)) * uint64_t{0x9E3779B97F4A7C15} ^ k.model;
    for (int i = 0; i < k.count; ++i)
      h = (h ^ static_cast<uint64_t>(static_cast<uint16_t>(k.sorted[static_cast<size_t>(i)]))) * uint64_t{0x100000001B3};
    return static_cast<size_t>(h);
  }
};
constexpr size_t kMaxCachedShapes = 512;

// What placing one request shape on each node would do, valid while the node's version is unchanged.
struct ShapeCache {
  std::vector<float> delta;      // change in expected fragmentation (kNoFit: does not fit)
  std::vector<float> leftAfter;  // GPU milli left on the node afterwards (tie-break)
  std::vector<int32_t> cpuAfter; // CPU left afterwards (second tie-break)
  std::vector<int8_t> gpu;       // shared requests: the GPU to use
  std::vector<uint32_t> stamp;   // node version + 1 when computed; 0 = never
};

class SwitchyardPolicy final : public SharePolicy {
 public:
  explicit SwitchyardPolicy(SwitchyardShareOptions o)
      : options_(std::move(o)), learner_(options_.learnWindow) {}

  std::string_view name() const override { return options_.fragmentationAware ? "switchyard" : "switchyard-no-frag"; }

  size_t memoryBytes() const override {
    size_t bytes = summaries_.capacity() * sizeof(NodeSummary) + summaryStamp_.capacity() * 4 + beforeStamp_.capacity() * 4 +
                   before_.capacity() * 8 + version_.capacity() * 4 + memoryLeft_.capacity() * 8;
    for (const auto& [k, c] : caches_)
      bytes += c.delta.capacity() * 4 + c.leftAfter.capacity() * 4 + c.cpuAfter.capacity() * 4 + c.gpu.capacity() + c.stamp.capacity() * 4;
    return bytes;
  }

  void observe(const ShareRequest& r) override {
    if (options_.learnMix && options_.fragmentationAware && learner_.observe(r)) dropCaches();
  }

  std::optional<SharePlacement> choose(const ShareCluster& c, const ShareRequest& r) override {
    sync(c);
    // Memory is not part of a shape (it would multiply the caches); it is checked on every pass instead.
    ShareRequest shape = r;
    shape.memoryMib = 0;
    ShapeCache& cache = cacheFor(shape, c.size());
    if (!memo_.empty()) memo_.clear();  // clearing an empty map still wipes every bucket
    const size_t nodes = c.size();
    size_t best = nodes;
    for (size_t i = 0; i < nodes; ++i) {
      const uint32_t stamp = version_[i] + 1;
      if (cache.stamp[i] != stamp) {
        evaluate(c, i, shape, cache);
        cache.stamp[i] = stamp;
      }
      if (cache.delta[i] == kNoFit || memoryLeft_[i] < r.memoryMib) continue;
      if (best == nodes || better(cache, i, best)) best = i;
    }
    if (best == nodes) return std::nullopt;
    const ShareNode& n = c.node(best);
    SharePlacement p{best, {}};
    if (r.sharesGpu()) p.gpus.add(cache.gpu[best]);
    else p.gpus = pickExclusiveGpus(n, r);
    return p;
  }

 private:
  // Fragmentation-aware: the smaller change in expected fragmentation, compared at `deltaResolution`
  // milli-GPU; equal changes go to the earlier node, which keeps filling the same nodes (consolidation).
  // Without the fragmentation term (ablation): least GPU left afterwards, then least CPU, then earlier.
  bool better(const ShapeCache& k, size_t a, size_t b) const {
    if (options_.fragmentationAware) return k.delta[a] < k.delta[b];
    if (k.leftAfter[a] != k.leftAfter[b]) return k.leftAfter[a] < k.leftAfter[b];
    return k.cpuAfter[a] < k.cpuAfter[b];
  }

  // Changes are stored already rounded down to the resolution, so ties are exact. With kSigmoidBins, as FGD's
  // score: int(100 * sigmoid(-delta / 1000)), stored negated so that smaller is still better.
  float quantize(double delta) const {
    const double q = options_.deltaResolution;
    if (q == kSigmoidBins) return -static_cast<float>(static_cast<int>(100.0 / (1.0 + std::exp(delta / 1000.0))));
    return static_cast<float>(q > 0 ? std::floor(delta / q) * q : delta);
  }

  const ShapeMix& mix() const { return options_.learnMix ? learner_.mix() : options_.fixedMix; }

  // Mirrors every node's version and memory left into flat arrays, from the cluster's change log, so that a
  // decision's pass reads no node it does not evaluate. A policy decides for one cluster at a time: another
  // cluster, or one whose log no longer reaches back to the last look, is mirrored whole.
  void sync(const ShareCluster& c) {
    const auto mirror = [&](size_t i) {
      version_[i] = c.node(i).version;
      memoryLeft_[i] = c.node(i).memoryLeft;
    };
    bool whole = &c != cluster_ || c.size() != summaries_.size();
    if (c.size() != summaries_.size()) resize(c.size());
    if (!whole) whole = !c.forEachChangeSince(seenChanges_, mirror);
    if (whole)
      for (size_t i = 0; i < c.size(); ++i) mirror(i);
    cluster_ = &c;
    seenChanges_ = c.changeCount();
  }

  void resize(size_t n) {
    version_.assign(n, 0);
    memoryLeft_.assign(n, 0);
    summaries_.assign(n, {});
    summaryStamp_.assign(n, 0);
    beforeStamp_.assign(n, 0);
    before_.assign(n, 0);
    caches_.clear();
  }

  void dropCaches() {
    caches_.clear();
    std::fill(beforeStamp_.begin(), beforeStamp_.end(), 0u);  // summaries do not depend on the mix
  }

  ShapeCache& cacheFor(const ShareRequest& r, size_t nodes) {
    auto it = caches_.find(r);
    if (it != caches_.end()) return it->second;
    if (caches_.size() >= kMaxCachedShapes) caches_.clear();
    ShapeCache& k = caches_[r];
    k.delta.assign(nodes, kNoFit);
    k.leftAfter.assign(nodes, 0);
    k.cpuAfter.assign(nodes, 0);
    k.gpu.assign(nodes, -1);
    k.stamp.assign(nodes, 0);
    return k;
  }

  const NodeSummary& summary(const ShareCluster& c, size_t i) {
    const uint32_t stamp = c.node(i).version + 1;
    if (summaryStamp_[i] != stamp) {
      summaries_[i] = NodeSummary::of(c.node(i));
      summaryStamp_[i] = stamp;
    }
    return summaries_[i];
  }

  // The node's fragmentation now; computed only when a change on it is measured (a node whose state the
  // decision has already measured elsewhere never needs it), and kept until the node or the mix changes.
  double before(const ShareCluster& c, size_t i) {
    const uint32_t stamp = c.node(i).version + 1;
    if (beforeStamp_[i] != stamp) {
      // A summary knows milli left only; a node with carved GPUs is measured on its slice layout.
      before_[i] = !options_.fragmentationAware ? 0.0
                   : carved(c.node(i))           ? nodeFragmentation(c.node(i), mix(), options_.otherModels)
                                                 : fragmentation(summary(c, i), mix(), options_.otherModels);
      beforeStamp_[i] = stamp;
    }
    return before_[i];
  }

  double fragAfter(const NodeSummary& after) const {
    return options_.fragmentationAware ? fragmentation(after, mix(), options_.otherModels) : 0.0;
  }

  void evaluate(const ShareCluster& c, size_t i, const ShareRequest& r, ShapeCache& k) {
    const ShareNode& n = c.node(i);
    if (!fits(n, r)) {
      k.delta[i] = kNoFit;
      return;
    }
    const NodeSummary& s = summary(c, i);
    k.cpuAfter[i] = n.cpuLeft - r.cpuMilli;
    k.leftAfter[i] = static_cast<float>(s.total() - r.totalGpuMilli());
    // Nodes in the same state (same CPU left, model and GPUs left) give the same answer: compute it once per
    // decision. Common when a shape is first seen: most nodes of a kind are empty, or full in the same way.
    if (r.isMig() || carved(n)) {
      evaluateOnLayout(n, i, r, k, before(c, i));
      return;
    }
    StateKey key{s.cpuLeft, s.model, s.count, s.sorted};
    if (auto hit = memo_.find(key); hit != memo_.end()) {
      k.delta[i] = hit->second.first;
      setGpu(n, i, hit->second.second, k);
      return;
    }
    if (!r.sharesGpu()) {
      std::array<int32_t, kMaxGpusPerNode> taken{};
      taken.fill(kMilliPerGpu);
      k.delta[i] = quantize(fragAfter(s.minus(r.cpuMilli, taken.data(), r.gpuCount, r.gpuMilli)) - before(c, i));
      memo_.emplace(key, std::make_pair(k.delta[i], int32_t{-1}));
      return;
    }
    // A share of one GPU: try each distinct milli-left value that fits; the tightest wins a tie.
    const double was = before(c, i);
    double bestDelta = std::numeric_limits<double>::infinity();
    int32_t bestLeft = -1;
    for (int g = 0; g < s.count; ++g) {
      int32_t left = s.sorted[static_cast<size_t>(g)];
      if (left < r.gpuMilli || left == bestLeft || (g > 0 && left == s.sorted[static_cast<size_t>(g - 1)])) continue;
      double d = fragAfter(s.minus(r.cpuMilli, &left, 1, r.gpuMilli)) - was;
      if (d < bestDelta - 1e-3) {
        bestDelta = d;
        bestLeft = left;
      }
    }
    k.delta[i] = quantize(bestDelta);
    setGpu(n, i, bestLeft, k);
    memo_.emplace(key, std::make_pair(k.delta[i], bestLeft));
  }

  static bool carved(const ShareNode& n) {
    return std::any_of(n.migTaken.begin(), n.migTaken.end(), [](uint8_t t) { return t != 0; });
  }

  // MIG instances, and any request on a node with carved GPUs: which GPUs can take it, and what is left
  // usable afterwards, depend on the slice layout, which node summaries (and the per-decision memo keyed by
  // them) do not hold. The placement is tried on a copy of the node and measured with the reference
  // definition: O(GPUs x shapes x GPUs) per node, paid only for such nodes and only when they change.
  void evaluateOnLayout(const ShareNode& n, size_t i, const ShareRequest& r, ShapeCache& k, double was) {
    scratch_ = n;
    scratch_.cpuLeft -= r.cpuMilli;
    if (!r.sharesGpu()) {
      const GpuPick pick = pickExclusiveGpus(n, r);
      for (int a = 0; a < pick.count; ++a) scratch_.gpuLeft[static_cast<size_t>(pick.index[static_cast<size_t>(a)])] -= r.gpuMilli;
      k.delta[i] = quantize(layoutFragmentation(scratch_) - was);
      return;
    }
    double bestDelta = std::numeric_limits<double>::infinity();
    int bestGpu = -1;
    scratch_.migTaken.resize(n.gpuLeft.size(), 0);
    for (int g = 0; g < n.gpuCount(); ++g) {
      if (!gpuTakes(n, g, r)) continue;
      const auto gi = static_cast<size_t>(g);
      // GPUs in the same state give the same answer.
      bool seen = false;
      for (int h = 0; h < g && !seen; ++h)
        seen = gpuTakes(n, h, r) && n.gpuLeft[static_cast<size_t>(h)] == n.gpuLeft[gi] && n.migTakenOn(h) == n.migTakenOn(g);
      if (seen) continue;
      scratch_.gpuLeft[gi] = n.gpuLeft[gi] - r.gpuMilli;
      if (r.isMig()) scratch_.migTaken[gi] = static_cast<uint8_t>(n.migTakenOn(g) | memoryMask(r.migProfile(), bestStart(n.migTakenOn(g), r.migProfile()).value()));
      const double d = layoutFragmentation(scratch_) - was;
      scratch_.gpuLeft[gi] = n.gpuLeft[gi];
      scratch_.migTaken[gi] = n.migTakenOn(g);
      if (bestGpu < 0 || d < bestDelta - 1e-3 || (d < bestDelta + 1e-3 && n.gpuLeft[gi] < n.gpuLeft[static_cast<size_t>(bestGpu)])) {
        bestDelta = d;
        bestGpu = g;
      }
    }
    k.delta[i] = quantize(bestDelta);
    k.gpu[i] = static_cast<int8_t>(bestGpu);
  }

  double layoutFragmentation(const ShareNode& n) const {
    return options_.fragmentationAware ? nodeFragmentation(n, mix(), options_.otherModels) : 0.0;
  }

  static void setGpu(const ShareNode& n, size_t i, int32_t left, ShapeCache& k) {
    for (int g = 0; g < n.gpuCount(); ++g)
      if (n.gpuLeft[static_cast<size_t>(g)] == left) {
        k.gpu[i] = static_cast<int8_t>(g);
        return;
      }
  }

  SwitchyardShareOptions options_;
  ShapeLearner learner_;
  const ShareCluster* cluster_ = nullptr;  // the cluster mirrored (sync)
  uint64_t seenChanges_ = 0;               // its change count when mirrored
  std::vector<uint32_t> version_;          // per node, as of the last sync
  std::vector<int64_t> memoryLeft_;
  std::vector<NodeSummary> summaries_;
  std::vector<uint32_t> summaryStamp_;
  std::vector<uint32_t> beforeStamp_;
  std::vector<double> before_;
  ShareNode scratch_;  // evaluateOnLayout's trial node
  std::unordered_map<ShareRequest, ShapeCache, ShapeHash> caches_;
  std::unordered_map<StateKey, std::pair<float, int32_t>, StateKeyHash> memo_;  // per decision
};

}  // namespace

std::unique_ptr<SharePolicy> makeSwitchyardSharePolicy(SwitchyardShareOptions options) {
  return std::make_unique<SwitchyardPolicy>(std::move(options));
}

const std::vector<std::string>& sharePolicyNames() {
  static const std::vector<std::string> names{"random",         "first-fit", "best-fit",   "worst-fit",
                                              "dot-product",    "gpu-packing", "gpu-clustering", "hived-buddy", "fgd",
                                              "switchyard",     "switchyard-no-frag"};
  return names;
}

std::unique_ptr<SharePolicy> makeSharePolicy(std::string_view name, const SharePolicyOptions& o) {
  if (name == "random") return makeRandomPolicy(o.seed);
  if (name == "first-fit") return makeFirstFitPolicy();
  if (name == "best-fit") return makeBestFitPolicy();
  if (name == "worst-fit") return makeWorstFitPolicy();
  if (name == "dot-product") return makeDotProductPolicy();
  if (name == "gpu-packing") return makeGpuPackingPolicy();
  if (name == "gpu-clustering") return makeGpuClusteringPolicy();
  if (name == "hived-buddy") return makeBuddyPolicy();
  if (name == "fgd") return makeFgdPolicy(o.oracleMix, o.cacheFgd);
  if (name == "switchyard" || name == "switchyard-no-frag")
    return makeSwitchyardSharePolicy({.fragmentationAware = name == "switchyard",
                                      .deltaResolution = o.deltaResolution,
                                      .learnMix = o.learnMix,
                                      .learnWindow = o.learnWindow,
                                      .fixedMix = o.oracleMix,
                                      .otherModels = o.otherModels});
  return nullptr;
}

}  // namespace switchyard::sharing
