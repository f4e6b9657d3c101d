// Learns which request shapes a pool is asked for, and how often, from a window of recent requests.
// Shared by the daemon's fragmentation score (demand_mix.h) and the benchmark policies (sharing/shape_mix.h);
// a shape is any ordered key the caller builds from a request.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace switchyard {

template <typename Shape>
struct Weighted {
  Shape shape;
  double weight = 0;  // the weights of a mix sum to 1
};

template <typename Shape>
using Mix = std::vector<Weighted<Shape>>;

struct MixOptions {
  double coverage = 0.95;  // keep the most common shapes until they cover this share of the requests
  // The mix is kept unless it moved by this L1 distance, over the shapes of either (a shape missing from
  // one weighs 0 there). Shapes near the coverage cut-off weigh well under 1 % each; letting them flip
  // in and out on sampling noise (0.03-0.08 for a 5,000-request window on openb) would drop every cache
  // built on the mix for nothing. Drift adds up against the kept mix, so a real change still lands.
  double drift = 0.10;
};

// The most common shapes among `counts` covering `coverage` of them, most common first (equal counts in
// key order, so the mix is deterministic), weights renormalised over the kept shapes. `include` drops
// shapes before counting.
template <typename Shape>
[[nodiscard]] Mix<Shape> mixOf(const std::map<Shape, std::size_t>& counts, double coverage,
                               const std::function<bool(const Shape&)>& include = {}) {
  std::vector<std::pair<Shape, std::size_t>> sorted;
  std::size_t total = 0;
  for (const auto& [k, c] : counts) {
    if (c == 0 || (include && !include(k))) continue;
    sorted.emplace_back(k, c);
    total += c;
  }
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  Mix<Shape> mix;
  std::size_t kept = 0;
  for (const auto& [k, c] : sorted) {
    if (static_cast<double>(kept) >= coverage * static_cast<double>(total)) break;
    mix.push_back({k, static_cast<double>(c)});
    kept += c;
  }
  for (auto& s : mix) s.weight /= static_cast<double>(kept);
  return mix;
}

// L1 distance between two mixes over the shapes of either.
template <typename Shape>
[[nodiscard]] double mixDistance(const Mix<Shape>& a, const Mix<Shape>& b) {
  double d = 0;
  for (const auto& w : a) {
    auto match = std::find_if(b.begin(), b.end(), [&](const auto& m) { return m.shape == w.shape; });
    d += std::abs(w.weight - (match == b.end() ? 0.0 : match->weight));
  }
  for (const auto& m : b)
    if (std::none_of(a.begin(), a.end(), [&](const auto& w) { return w.shape == m.shape; })) d += m.weight;
  return d;
}

// The mix of the last `window` requests. It is recomputed after each of the first 64 requests that is a
// power of two, then every `refreshEvery` requests, and replaced only when it drifted (MixOptions::drift),
// so whatever depends on it stays valid most of the time.
template <typename Shape>
class MixLearner {
 public:
  explicit MixLearner(std::size_t window = 5000, MixOptions options = {}, std::size_t refreshEvery = 500,
                      std::function<bool(const Shape&)> include = {})
      : window_(window), options_(options), refreshEvery_(refreshEvery), include_(std::move(include)) {}

  // Records one request's shape; true if the mix changed.
  bool observe(const Shape& s) {
    recent_.push_back(s);
    ++counts_[s];
    if (recent_.size() > window_) {
      auto it = counts_.find(recent_.front());
      if (--it->second == 0) counts_.erase(it);
      recent_.pop_front();
    }
    ++total_;
    // Early on every request teaches a lot; later the mix is refreshed only now and then.
    const bool due = total_ <= 64 ? (total_ & (total_ - 1)) == 0 : ++sinceRefresh_ >= refreshEvery_;
    if (!due) return false;
    sinceRefresh_ = 0;
    Mix<Shape> next = mixOf(counts_, options_.coverage, include_);
    if (!mix_.empty() && mixDistance(next, mix_) < options_.drift) return false;
    mix_ = std::move(next);
    ++generation_;
    return true;
  }

  // Recomputes the mix from the window now (after replaying stored requests); true if it changed.
  bool settle() {
    Mix<Shape> next = mixOf(counts_, options_.coverage, include_);
    sinceRefresh_ = 0;
    if (mixDistance(next, mix_) == 0) return false;
    mix_ = std::move(next);
    ++generation_;
    return true;
  }

  [[nodiscard]] const Mix<Shape>& mix() const { return mix_; }
  [[nodiscard]] std::size_t observed() const { return total_; }
  [[nodiscard]] std::size_t generation() const { return generation_; }

 private:
  std::size_t window_;
  MixOptions options_;
  std::size_t refreshEvery_;
  std::function<bool(const Shape&)> include_;
  std::deque<Shape> recent_;
  std::map<Shape, std::size_t> counts_;
  Mix<Shape> mix_;
  std::size_t total_ = 0;
  std::size_t sinceRefresh_ = 0;
  std::size_t generation_ = 0;
};

}  // namespace switchyard
