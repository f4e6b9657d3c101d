// GPU fragmentation of a node as FGD defines it: the milli-GPU left on the node that a request drawn from
// the shape mix could not use. For each shape: if the node cannot serve it at all (CPU, model, or not
// enough GPUs with enough left) every idle milli-GPU counts; if it can, only the GPUs with less left than
// the shape needs count. CPU-only shapes count every idle milli-GPU (they never use GPUs), which is why an
// empty cluster already shows some fragmentation. Weighted by the shapes' frequencies.
#pragma once

#include "composer/packing/sharing/shape_mix.h"

namespace switchyard::sharing {

// The reference definition, O(shapes x GPUs). Memory is not considered (as in FGD). Whether a GPU can serve
// a shape is gpuTakes(): for MIG it follows the slice layout, so a carved GPU with compute left but no free
// start for a profile counts as fragmented for it, and a GPU partly used by milli shares counts as
// fragmented for every MIG shape.
// Shapes that ask for GPU models the node does not have: FGD counts all of its idle GPUs as fragmented for
// them; kIgnored leaves them out (the node's GPUs were never theirs to use).
enum class OtherModels { kFragmented, kIgnored };

[[nodiscard]] double nodeFragmentation(const ShareNode& n, const ShapeMix& mix, OtherModels other = OtherModels::kFragmented);

// The same value computed from a node summary; O(shapes x log GPUs). Used on hot paths. A summary holds
// milli left only, so it is exact for nodes with no carved GPU; the caller uses the reference for the others.
struct NodeSummary {
  int32_t cpuLeft = 0;
  uint8_t model = 0;
  bool hasGpus = false;
  int count = 0;                                       // GPUs
  // Only the first `count` (and `count + 1`) entries are meaningful; the rest are left uninitialised so
  // that making a summary costs O(count), not O(kMaxGpusPerNode).
  // Narrow types keep a summary small (a GPU has at most 1000 milli, a node at most 32 GPUs).
  std::array<int16_t, kMaxGpusPerNode> sorted;      // milli left, ascending
  std::array<int32_t, kMaxGpusPerNode + 1> prefix;  // prefix[i] = sum of the i smallest

  static NodeSummary of(const ShareNode& n);
  // The node after taking `r` on the GPUs with these milli-left values (one value per requested GPU).
  [[nodiscard]] NodeSummary minus(int32_t cpu, const int32_t* takenFrom, int takenCount, int32_t milli) const;
  [[nodiscard]] int64_t total() const { return prefix[static_cast<size_t>(count)]; }
};

[[nodiscard]] double fragmentation(const NodeSummary& s, const ShapeMix& mix, OtherModels other = OtherModels::kFragmented);

// Cluster totals, as % of the cluster's GPU capacity: fragmented milli-GPU with and without the CPU-only
// shapes of the mix counted.
struct ClusterFragmentation {
  double percentOfCapacity = 0;
  double percentOfCapacityGpuShapesOnly = 0;
};
[[nodiscard]] ClusterFragmentation clusterFragmentation(const ShareCluster& c, const ShapeMix& mix);

}  // namespace switchyard::sharing
