// The request shapes a pool should stay able to serve, with their frequencies ("typical pods" in FGD).
// Either taken from a known workload (FGD's oracle) or learned online from the requests the policy sees.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <vector>

#include "composer/packing/sharing/share_cluster.h"

namespace switchyard::sharing {

struct WeightedShape {
  ShareRequest shape;  // memory is not part of a shape (as in FGD)
  double weight = 0;   // weights of a mix sum to 1
};

struct ShapeMixOptions {
  double coverage = 0.95;  // keep the most common shapes until they cover this share of requests
  bool includeCpuOnly = true;
};

using ShapeMix = std::vector<WeightedShape>;

// The most common shapes of `requests` covering `coverage` of them, most common first (ties in a fixed
// order), weights renormalised over the kept shapes.
[[nodiscard]] ShapeMix typicalShapes(const std::vector<ShareRequest>& requests, const ShapeMixOptions& options = {});

// Learns the mix from the last `window` requests. `mix()` is recomputed only when it has drifted, so the
// caches of a policy that depends on it stay valid most of the time.
class ShapeLearner {
 public:
  explicit ShapeLearner(size_t window = 5000, ShapeMixOptions options = {}, size_t refreshEvery = 500);

  // Records one request; true if the mix changed.
  bool observe(const ShareRequest& r);
  [[nodiscard]] const ShapeMix& mix() const { return mix_; }
  [[nodiscard]] size_t observed() const { return total_; }
  [[nodiscard]] size_t generation() const { return generation_; }

 private:
  size_t window_;
  ShapeMixOptions options_;
  size_t refreshEvery_;
  std::deque<ShareRequest> recent_;
  std::map<std::tuple<int32_t, int32_t, int32_t, uint32_t, int8_t>, size_t> counts_;  // by shape (shape_mix.cpp)
  ShapeMix mix_;
  size_t total_ = 0;
  size_t sinceRefresh_ = 0;
  size_t generation_ = 0;
};

}  // namespace switchyard::sharing
