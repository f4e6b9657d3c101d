#include "tests/bench/packing/pool_aware_policy.h"

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

namespace switchyard::bench {
namespace {

using sharing::GpuPick;
using sharing::kMaxGpusPerNode;
using sharing::kMilliPerGpu;
using sharing::ShapeMix;
using sharing::ShareCluster;
using sharing::ShareNode;
using sharing::ShareRequest;

const double kResolution = sharing::SwitchyardShareOptions{}.deltaResolution;  // milli-GPU, as `switchyard` compares changes

// A view as the measure needs it: the GPUs attached to the host first, then the free GPUs it could attach.
struct ViewState {
  int32_t cpu = 0;
  uint8_t model = 0;
  int count = 0;
  int attached = 0;
  int hostLinks = 1;  // the host's links: its CPU is shared among its enclosures
  std::array<int32_t, kMaxGpusPerNode> left{};
  std::array<uint8_t, kMaxGpusPerNode> mig{};
};

ViewState stateOf(const ShareNode& n, int attached, int hostLinks) {
  ViewState s;
  s.hostLinks = std::max(1, hostLinks);
  s.cpu = n.cpuLeft;
  s.model = n.model;
  s.count = n.gpuCount();
  s.attached = attached;
  for (int g = 0; g < s.count; ++g) {
    s.left[static_cast<size_t>(g)] = n.gpuLeft[static_cast<size_t>(g)];
    s.mig[static_cast<size_t>(g)] = n.migTakenOn(g);
  }
  return s;
}

// sharing::gpuTakes on a ViewState.
bool takes(const ViewState& v, int g, const ShareRequest& r) {
  const int32_t left = v.left[static_cast<size_t>(g)];
  if (left < r.gpuMilli) return false;
  const uint8_t taken = v.mig[static_cast<size_t>(g)];
  if (!r.isMig()) return taken == 0;
  return taken != 0 ? fitsAnywhere(taken, r.migProfile()) : left == kMilliPerGpu;
}

// The mix's most common shapes that count (a mix is sorted most common first; openb's have tens).
constexpr size_t kMaxShapes = 256;

struct Eval {
  double attachedFrag = 0;                // weighted milli-GPU on attached GPUs the mix cannot use
  std::array<float, kMaxShapes> usable{};  // per shape of the mix: free GPUs of the enclosure the host could use
};

// How many of `free` fresh GPUs a host with `cpu` left could fill with requests of shape `s`, counted in
// whole GPUs: whole-GPU requests take gpuCount each, shares pack 1000 / gpuMilli to a GPU.
double freeGpusUsable(const ShareRequest& s, int free, int32_t cpu) {
  const int64_t requests = s.cpuMilli > 0 ? cpu / s.cpuMilli : std::numeric_limits<int32_t>::max();
  if (!s.sharesGpu()) return static_cast<double>(std::min<int64_t>(free / s.gpuCount, requests) * s.gpuCount);
  const int64_t perGpu = std::max<int64_t>(1, kMilliPerGpu / std::max(1, s.gpuMilli));
  return static_cast<double>(std::min<int64_t>(free, (requests + perGpu - 1) / perGpu));
}

// O(GPUs log GPUs + shapes log GPUs): the GPUs listed after the attached ones are free (whole, uncarved)
// and take any shape, and a shape other than MIG takes exactly the uncarved GPUs with enough milli left.
Eval evaluate(const ViewState& v, const ShapeMix& mix) {
  std::array<int32_t, kMaxGpusPerNode> sorted{};  // milli left on attached uncarved GPUs, ascending
  std::array<int64_t, kMaxGpusPerNode + 1> below{};  // below[i]: sum of the i smallest
  int uncarved = 0;
  int64_t carvedLeft = 0, attachedLeft = 0;
  for (int g = 0; g < v.attached; ++g) {
    const int32_t left = v.left[static_cast<size_t>(g)];
    attachedLeft += left;
    if (v.mig[static_cast<size_t>(g)] == 0) sorted[static_cast<size_t>(uncarved++)] = left;
    else carvedLeft += left;
  }
  std::sort(sorted.begin(), sorted.begin() + uncarved);
  for (int k = 0; k < uncarved; ++k) below[static_cast<size_t>(k + 1)] = below[static_cast<size_t>(k)] + sorted[static_cast<size_t>(k)];
  const int free = v.count - v.attached;

  Eval e;
  for (size_t k = 0; k < mix.size(); ++k) {
    const ShareRequest& s = mix[k].shape;
    const bool modelOk = v.count > 0 && (s.modelMask == sharing::kAnyModel || (s.modelMask & (1u << v.model)) != 0);
    if (s.gpuCount == 0 || !modelOk) {
      e.attachedFrag += mix[k].weight * static_cast<double>(attachedLeft);
      continue;
    }
    int enough = free;
    int64_t tooFull = 0;
    if (!s.isMig()) {
      const auto fit = std::lower_bound(sorted.begin(), sorted.begin() + uncarved, s.gpuMilli) - sorted.begin();
      enough += uncarved - static_cast<int>(fit);
      tooFull = below[static_cast<size_t>(fit)] + carvedLeft;
    } else {
      for (int g = 0; g < v.attached; ++g) {
        if (takes(v, g, s)) ++enough;
        else tooFull += v.left[static_cast<size_t>(g)];
      }
    }
    const bool serves = enough >= s.gpuCount && v.cpu >= s.cpuMilli;
    // The host's CPU is split evenly over its links, so that a host cabled to two enclosures is not
    // counted whole at each.
    e.usable[k] = static_cast<float>(freeGpusUsable(s, free, v.cpu) / v.hostLinks);
    e.attachedFrag += mix[k].weight * static_cast<double>(serves ? tooFull : attachedLeft);
  }
  return e;
}

class PoolAwarePolicy final : public sharing::SharePolicy {
 public:
  PoolAwarePolicy(const ComposablePool& pool, size_t window) : pool_(pool), learner_(window) {}

  std::string_view name() const override { return kPoolAwarePolicy; }
  void observe(const ShareRequest& r) override { learner_.observe(r); }

  std::optional<sharing::SharePlacement> choose(const ShareCluster& c, const ShareRequest& r) override {
    if (learner_.generation() != mixGeneration_) {
      const ShapeMix& learned = learner_.mix();
      mix_.assign(learned.begin(), learned.begin() + static_cast<long>(std::min(learned.size(), kMaxShapes)));
      mixGeneration_ = learner_.generation();
    }
    const ShapeMix& mix = mix_;
    noteChanges(c);
    const size_t shape = shapeId(r, c.size());
    std::optional<sharing::SharePlacement> best;
    double bestDelta = 0;
    for (size_t i = 0; i < c.size(); ++i) {
      const ShareNode& n = c.node(i);
      if (!sharing::fits(n, r)) continue;
      const auto picks = picksOn(n, r);
      const Choice& choice = choiceOn(c, i, r, picks, shape, mix);
      for (size_t p = 0; p < picks.size(); ++p)
        if (!best || choice.delta[p] < bestDelta) {
          best = sharing::SharePlacement{i, picks[p]};
          bestDelta = choice.delta[p];
        }
    }
    return best;
  }

  size_t memoryBytes() const override {
    constexpr size_t kMapNode = sizeof(std::map<ShapeKey, size_t>::value_type) + 4 * sizeof(void*);  // a red-black tree node
    return evals_.capacity() * sizeof(KeptEval) + choices_.capacity() * sizeof(Choice) + shapeIds_.size() * kMapNode +
           seenVersion_.capacity() * sizeof(uint32_t) + (changedAt_.capacity() + enclosureChangedAt_.capacity()) * sizeof(uint64_t);
  }

 private:
  // Whole GPUs: the lowest-numbered free ones (idle attached GPUs come before ones to attach). A share:
  // the fullest GPU that takes it, and also the first idle one (a fresh GPU may strand less).
  static boost::container::small_vector<GpuPick, 2> picksOn(const ShareNode& n, const ShareRequest& r) {
    boost::container::small_vector<GpuPick, 2> picks;
    if (!r.sharesGpu()) {
      picks.push_back(sharing::pickExclusiveGpus(n, r));
      return picks;
    }
    picks.push_back(sharing::pickBestFitGpu(n, r));
    for (int g = 0; g < n.gpuCount(); ++g)
      if (n.gpuLeft[static_cast<size_t>(g)] == kMilliPerGpu && n.migTakenOn(g) == 0) {
        if (g != picks.front().index[0]) {
          GpuPick idle;
          idle.add(g);
          picks.push_back(idle);
        }
        break;
      }
    return picks;
  }

  const Eval& before(const ShareCluster& c, size_t v, const ShapeMix& mix) {
    KeptEval& k = evals_[v];
    if (k.at == 0 || k.at < changedAt_[v] || k.generation != learner_.generation()) {
      k.eval = evaluate(stateOf(c.node(v), pool_.viewLink(v).attached, linksOf(v)), mix);
      k.at = decision_;
      k.generation = learner_.generation();
    }
    return k.eval;
  }

  // How many GPUs view `v` would list (attached, then free ones its host could attach) once `fresh` free
  // GPUs of `at`'s enclosure are attached to `at`'s host.
  int listedAfter(const ComposablePool::ViewLink& v, const ComposablePool::ViewLink& at, int fresh) const {
    const bool same = v.host == at.host && v.enclosure == at.enclosure;
    const int attached = v.attached + (same ? fresh : 0);
    const int room = pool_.hostRoom(v.host) - (v.host == at.host ? fresh : 0);
    const int free = pool_.enclosureFree(static_cast<size_t>(v.enclosure)) - (v.enclosure == at.enclosure ? fresh : 0);
    return std::min(attached + std::max(0, std::min(room, free)), kMaxGpusPerNode);
  }

  // The change of the pool's fragmentation if `r` took `pick` on view `i`.
  double poolDelta(const ShareCluster& c, size_t i, const ShareRequest& r, const GpuPick& pick, const ShapeMix& mix) {
    const auto at = pool_.viewLink(i);
    int fresh = 0;
    for (int a = 0; a < pick.count; ++a) fresh += pick.index[static_cast<size_t>(a)] >= at.attached ? 1 : 0;
    // The views that change: the host's (CPU, device limit) and, when GPUs are attached, the enclosure's
    // (fewer free GPUs; a view whose list of free GPUs stays as long is unchanged).
    boost::container::small_vector<size_t, 24> changed(pool_.viewsOfHost(at.host).begin(), pool_.viewsOfHost(at.host).end());
    if (fresh > 0 && at.enclosure >= 0 && !pool_.mirror())
      for (size_t v : pool_.viewsOfEnclosure(static_cast<size_t>(at.enclosure))) {
        const auto lv = pool_.viewLink(v);
        if (lv.host == at.host) continue;
        if (listedAfter(lv, at, 0) != listedAfter(lv, at, fresh)) changed.push_back(v);
      }
    boost::container::small_vector<Eval, 24> after;
    double delta = 0;
    for (size_t v : changed) {
      after.push_back(evaluate(afterState(c, v, i, at, r, pick, fresh), mix));
      delta += after.back().attachedFrag - before(c, v, mix).attachedFrag;
    }
    // The free GPUs of every enclosure the host is cabled to: for a shape, those beyond what the hosts
    // cabled to it could use (with their CPU, device limits and links) are lost.
    for (size_t hv : pool_.viewsOfHost(at.host)) {
      const long e = pool_.viewLink(hv).enclosure;
      if (e < 0) continue;
      const int freeNow = pool_.enclosureFree(static_cast<size_t>(e));
      const int freeAfter = freeNow - (e == at.enclosure ? fresh : 0);
      if (freeNow == 0 && freeAfter == 0) continue;
      std::array<double, kMaxShapes> usableBefore{}, usableAfter{};
      for (size_t v : pool_.viewsOfEnclosure(static_cast<size_t>(e))) {
        const Eval& b = before(c, v, mix);
        const auto it = std::find(changed.begin(), changed.end(), v);
        const Eval& a = it != changed.end() ? after[static_cast<size_t>(it - changed.begin())] : b;
        for (size_t k = 0; k < mix.size(); ++k) {
          usableBefore[k] += b.usable[k];
          usableAfter[k] += a.usable[k];
        }
      }
      for (size_t k = 0; k < mix.size(); ++k)  // usable is 0 for a shape without GPUs or of another model
        delta += mix[k].weight * kMilliPerGpu * (std::max(0.0, freeAfter - usableAfter[k]) - std::max(0.0, freeNow - usableBefore[k]));
    }
    return delta;
  }

  ViewState afterState(const ShareCluster& c, size_t v, size_t i, const ComposablePool::ViewLink& at, const ShareRequest& r,
                       const GpuPick& pick, int fresh) const {
    const auto lv = pool_.viewLink(v);
    ViewState s = stateOf(c.node(v), lv.attached, linksOf(v));
    if (lv.host == at.host) s.cpu -= r.cpuMilli;
    if (v == i) {
      // The picked GPUs to attach are the first free ones listed, right after the attached ones.
      for (int a = 0; a < pick.count; ++a) {
        const auto g = static_cast<size_t>(pick.index[static_cast<size_t>(a)]);
        if (r.isMig()) s.mig[g] |= memoryMask(r.migProfile(), bestStart(s.mig[g], r.migProfile()).value_or(0));
        s.left[g] -= r.gpuMilli;
      }
      s.attached += fresh;
    }
    if (lv.enclosure >= 0 && !pool_.mirror()) {
      s.count = listedAfter(lv, at, fresh);
      for (int g = s.attached; g < s.count; ++g) {
        s.left[static_cast<size_t>(g)] = kMilliPerGpu;
        s.mig[static_cast<size_t>(g)] = 0;
      }
    }
    return s;
  }

  int linksOf(size_t view) const { return static_cast<int>(pool_.viewsOfHost(pool_.viewLink(view).host).size()); }

  // The changes of the pool's fragmentation for a view's candidate placements (picksOn) of one request
  // shape, kept until a view they depend on changes. They depend on the request only through its CPU and
  // GPU ask (fits() is checked afresh), and on the views of every enclosure the host is cabled to (which
  // include the host's own views): the pool rebuilds, and so bumps the version of, every view whose host
  // (CPU, device limit) or enclosure (free GPUs) a placement or a release touched
  // (ComposablePool::rebuildAround). A kept change is the very number poolDelta would return, so caching
  // does not change a choice; it saves recomputing the views a decision did not touch.
  using ShapeKey = std::tuple<int32_t, int32_t, int32_t, int8_t>;  // CPU, milli-GPU, GPUs, MIG profile
  struct Choice {
    uint64_t at = 0;  // the decision it was computed in (0: never)
    size_t generation = 0;
    std::array<double, 2> delta{};  // per pick of picksOn, in its order
  };

  // Records which views changed since the last decision, and so which enclosures: the views the pool's
  // change log names since the last look (O(views) version compares when it no longer reaches back, or on
  // another pool). Both caches, the views' evaluations and the kept changes, are judged against it.
  void noteChanges(const ShareCluster& c) {
    ++decision_;
    const bool fresh = changedAt_.size() != c.size() || cluster_ != &c;
    if (fresh) {
      changedAt_.assign(c.size(), decision_);
      enclosureChangedAt_.assign(pool_.enclosureCount(), decision_);
      seenVersion_.assign(c.size(), 0);
      evals_.assign(c.size(), {});
      choices_.clear();
      shapeIds_.clear();
    }
    const auto note = [&](size_t v) {
      if (c.node(v).version == seenVersion_[v]) return;
      seenVersion_[v] = c.node(v).version;
      changedAt_[v] = decision_;
      const long e = pool_.viewLink(v).enclosure;
      if (e >= 0) enclosureChangedAt_[static_cast<size_t>(e)] = decision_;
    };
    if (fresh || !c.forEachChangeSince(seenChanges_, note))
      for (size_t v = 0; v < c.size(); ++v) note(v);
    cluster_ = &c;
    seenChanges_ = c.changeCount();
  }

  // A dense id per request shape seen; the choices of shape s on view v are at choices_[s * views + v].
  size_t shapeId(const ShareRequest& r, size_t views) {
    const auto [it, added] = shapeIds_.try_emplace(ShapeKey{r.cpuMilli, r.gpuMilli, r.gpuCount, r.mig}, shapeIds_.size());
    if (added) choices_.resize(choices_.size() + views);
    return it->second;
  }

  // The last decision in which a view that view `i`'s choices depend on changed: any view of an enclosure its
  // host is cabled to (the host's own views among them), or the host's view without a GPU link.
  uint64_t lastChangeAround(size_t i) const {
    uint64_t last = 0;
    for (size_t hv : pool_.viewsOfHost(pool_.viewLink(i).host)) {
      const long e = pool_.viewLink(hv).enclosure;
      last = std::max(last, e >= 0 ? enclosureChangedAt_[static_cast<size_t>(e)] : changedAt_[hv]);
    }
    return last;
  }

  const Choice& choiceOn(const ShareCluster& c, size_t i, const ShareRequest& r, const boost::container::small_vector<GpuPick, 2>& picks,
                         size_t shape, const ShapeMix& mix) {
    Choice& k = choices_[shape * c.size() + i];
    if (k.at != 0 && k.generation == learner_.generation() && k.at >= lastChangeAround(i)) return k;
    k.at = decision_;
    k.generation = learner_.generation();
    for (size_t p = 0; p < picks.size(); ++p) k.delta[p] = std::floor(poolDelta(c, i, r, picks[p], mix) / kResolution) * kResolution;
    return k;
  }

  // A view's own evaluation, kept until the view changes (noteChanges).
  struct KeptEval {
    uint64_t at = 0;  // the decision it was computed in (0: never)
    size_t generation = 0;
    Eval eval;
  };
  const ComposablePool& pool_;
  sharing::ShapeLearner learner_;
  ShapeMix mix_;  // the learned mix's first kMaxShapes shapes
  size_t mixGeneration_ = 0;
  std::vector<KeptEval> evals_;
  std::vector<Choice> choices_;
  std::map<ShapeKey, size_t> shapeIds_;
  std::vector<uint32_t> seenVersion_;
  std::vector<uint64_t> changedAt_;           // per view: the last decision it was seen changed in
  std::vector<uint64_t> enclosureChangedAt_;  // per enclosure: the last decision one of its views changed in
  const ShareCluster* cluster_ = nullptr;     // the views noted (noteChanges)
  uint64_t seenChanges_ = 0;                  // their change count then
  uint64_t decision_ = 0;
};

}  // namespace

std::unique_ptr<sharing::SharePolicy> makePoolAwarePolicy(const ComposablePool& pool, size_t learnWindow) {
  return std::make_unique<PoolAwarePolicy>(pool, learnWindow);
}

}  // namespace switchyard::bench
