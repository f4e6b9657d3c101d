// The request shapes a pool should stay able to serve, with their frequencies ("typical pods" in FGD).
// Either taken from a known workload (FGD's oracle) or learned online from the requests the policy sees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <vector>

#include "composer/packing/mix_learner.h"
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

// What counts as one shape: CPU, GPUs, milli-GPU, models, MIG profile (memory is not part of a shape).
using ShapeKey = std::tuple<int32_t, int32_t, int32_t, uint32_t, int8_t>;

// Learns the mix from the last `window` requests (mix_learner.h: refreshed now and then, replaced only
// when it drifted), so the caches of a policy that depends on it stay valid most of the time.
class ShapeLearner {
 public:
  explicit ShapeLearner(size_t window = 5000, ShapeMixOptions options = {}, size_t refreshEvery = 500);

  // Records one request; true if the mix changed.
  bool observe(const ShareRequest& r);
  [[nodiscard]] const ShapeMix& mix() const { return mix_; }
  [[nodiscard]] size_t observed() const { return learner_.observed(); }
  [[nodiscard]] size_t generation() const { return learner_.generation(); }

 private:
  MixLearner<ShapeKey> learner_;
  ShapeMix mix_;
};

}  // namespace switchyard::sharing
