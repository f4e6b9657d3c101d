#include "composer/packing/sharing/shape_mix.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace switchyard::sharing {
namespace {

using ShapeKey = std::tuple<int32_t, int32_t, int32_t, uint32_t, int8_t>;

ShapeKey keyOf(const ShareRequest& r) { return {r.cpuMilli, r.gpuCount, r.gpuMilli, r.modelMask, r.mig}; }

ShareRequest shapeOf(const ShapeKey& k) {
  return ShareRequest{.cpuMilli = std::get<0>(k), .gpuCount = std::get<1>(k), .gpuMilli = std::get<2>(k),
                      .modelMask = std::get<3>(k), .mig = std::get<4>(k)};
}

ShapeMix fromCounts(const std::map<ShapeKey, size_t>& counts, const ShapeMixOptions& options) {
  std::vector<std::pair<ShapeKey, size_t>> sorted;
  size_t total = 0;
  for (const auto& [k, c] : counts) {
    if (c == 0 || (!options.includeCpuOnly && std::get<1>(k) == 0)) continue;
    sorted.emplace_back(k, c);
    total += c;
  }
  // Most common first; equal counts in a fixed order so the mix is deterministic.
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  ShapeMix mix;
  size_t kept = 0;
  for (const auto& [k, c] : sorted) {
    if (static_cast<double>(kept) >= options.coverage * static_cast<double>(total)) break;
    mix.push_back({shapeOf(k), static_cast<double>(c)});
    kept += c;
  }
  for (auto& s : mix) s.weight /= static_cast<double>(kept);
  return mix;
}

}  // namespace

ShapeMix typicalShapes(const std::vector<ShareRequest>& requests, const ShapeMixOptions& options) {
  std::map<ShapeKey, size_t> counts;
  for (const auto& r : requests) ++counts[keyOf(r)];
  return fromCounts(counts, options);
}

ShapeLearner::ShapeLearner(size_t window, ShapeMixOptions options, size_t refreshEvery)
    : window_(window), options_(options), refreshEvery_(refreshEvery) {}

bool ShapeLearner::observe(const ShareRequest& r) {
  recent_.push_back(r);
  ++counts_[keyOf(r)];
  if (recent_.size() > window_) {
    auto it = counts_.find(keyOf(recent_.front()));
    if (--it->second == 0) counts_.erase(it);
    recent_.pop_front();
  }
  ++total_;
  // Early on every request teaches a lot; later the mix is refreshed only now and then.
  bool due = total_ <= 64 ? (total_ & (total_ - 1)) == 0 : ++sinceRefresh_ >= refreshEvery_;
  if (!due) return false;
  sinceRefresh_ = 0;
  ShapeMix next = fromCounts(counts_, options_);
  // Keep the old mix (and the caches built on it) unless it really moved: the L1 distance between the two
  // mixes, over the shapes of either (a shape missing from one has weight 0 there), is under 0.05. Shapes
  // near the coverage cut-off weigh well under 1 % each; letting them flip in and out on sampling noise
  // would drop every cache for nothing. Drift adds up against the kept mix, so a real change still lands.
  if (!mix_.empty()) {
    double drift = 0;
    for (const WeightedShape& w : next) {
      auto match = std::find_if(mix_.begin(), mix_.end(), [&](const WeightedShape& m) { return m.shape == w.shape; });
      drift += std::abs(w.weight - (match == mix_.end() ? 0.0 : match->weight));
    }
    for (const WeightedShape& m : mix_)
      if (std::none_of(next.begin(), next.end(), [&](const WeightedShape& w) { return w.shape == m.shape; })) drift += m.weight;
    if (drift < 0.10) return false;
  }
  mix_ = std::move(next);
  ++generation_;
  return true;
}

}  // namespace switchyard::sharing
