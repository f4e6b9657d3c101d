#include "composer/packing/sharing/shape_mix.h"

#include <map>

namespace switchyard::sharing {
namespace {

ShapeKey keyOf(const ShareRequest& r) { return {r.cpuMilli, r.gpuCount, r.gpuMilli, r.modelMask, r.mig}; }

ShareRequest shapeOf(const ShapeKey& k) {
  return ShareRequest{.cpuMilli = std::get<0>(k), .gpuCount = std::get<1>(k), .gpuMilli = std::get<2>(k),
                      .modelMask = std::get<3>(k), .mig = std::get<4>(k)};
}

std::function<bool(const ShapeKey&)> filterOf(const ShapeMixOptions& options) {
  if (options.includeCpuOnly) return {};
  return [](const ShapeKey& k) { return std::get<1>(k) != 0; };
}

ShapeMix toShapeMix(const Mix<ShapeKey>& mix) {
  ShapeMix out;
  out.reserve(mix.size());
  for (const auto& w : mix) out.push_back({shapeOf(w.shape), w.weight});
  return out;
}

}  // namespace

ShapeMix typicalShapes(const std::vector<ShareRequest>& requests, const ShapeMixOptions& options) {
  std::map<ShapeKey, size_t> counts;
  for (const auto& r : requests) ++counts[keyOf(r)];
  return toShapeMix(mixOf(counts, options.coverage, filterOf(options)));
}

ShapeLearner::ShapeLearner(size_t window, ShapeMixOptions options, size_t refreshEvery)
    : learner_(window, MixOptions{.coverage = options.coverage}, refreshEvery, filterOf(options)) {}

bool ShapeLearner::observe(const ShareRequest& r) {
  if (!learner_.observe(keyOf(r))) return false;
  mix_ = toShapeMix(learner_.mix());
  return true;
}

}  // namespace switchyard::sharing
