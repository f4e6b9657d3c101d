#include "composer/packing/sharing/fragmentation.h"

#include <algorithm>

namespace switchyard::sharing {

double nodeFragmentation(const ShareNode& n, const ShapeMix& mix, OtherModels other) {
  const int64_t total = n.gpuMilliLeft();
  const bool carved = std::any_of(n.migTaken.begin(), n.migTaken.end(), [](uint8_t t) { return t != 0; });
  double frag = 0;
  for (const WeightedShape& w : mix) {
    const ShareRequest& s = w.shape;
    const bool modelOk = n.serves(s.modelMask);
    if (s.gpuCount > 0 && !modelOk && other == OtherModels::kIgnored) continue;
    if (s.gpuCount == 0 || !modelOk) {
      frag += w.weight * static_cast<double>(total);
      continue;
    }
    int enough = 0;
    int64_t tooSmall = 0;
    if (!carved && !s.isMig()) {  // what gpuTakes() says on an uncarved GPU, without its MIG branches
      for (int32_t left : n.gpuLeft) {
        if (left >= s.gpuMilli) ++enough;
        else tooSmall += left;
      }
    } else {
      for (int g = 0; g < n.gpuCount(); ++g) {
        if (gpuTakes(n, g, s)) ++enough;
        else tooSmall += n.gpuLeft[static_cast<size_t>(g)];
      }
    }
    bool serves = enough >= s.gpuCount && n.cpuLeft >= s.cpuMilli;
    frag += w.weight * static_cast<double>(serves ? tooSmall : total);
  }
  return frag;
}

NodeSummary NodeSummary::of(const ShareNode& n) {
  NodeSummary s;
  s.prefix[0] = 0;
  s.cpuLeft = n.cpuLeft;
  s.model = n.model;
  s.hasGpus = !n.gpuLeft.empty();
  s.count = n.gpuCount();
  std::transform(n.gpuLeft.begin(), n.gpuLeft.end(), s.sorted.begin(), [](int32_t g) { return static_cast<int16_t>(g); });
  std::sort(s.sorted.begin(), s.sorted.begin() + s.count);
  for (size_t i = 0; i < static_cast<size_t>(s.count); ++i) s.prefix[i + 1] = s.prefix[i] + s.sorted[i];
  return s;
}

NodeSummary NodeSummary::minus(int32_t cpu, const int32_t* takenFrom, int takenCount, int32_t milli) const {
  NodeSummary out;
  out.cpuLeft = cpuLeft - cpu;
  out.model = model;
  out.hasGpus = hasGpus;
  out.count = count;
  std::copy_n(sorted.begin(), count, out.sorted.begin());
  out.prefix[0] = 0;
  auto begin = out.sorted.begin();
  for (int t = 0; t < takenCount; ++t) {
    // Replace one GPU with `takenFrom[t]` left by one with `takenFrom[t] - milli`, keeping the order.
    auto end = begin + out.count;
    auto it = std::lower_bound(begin, end, static_cast<int16_t>(takenFrom[t]));
    *it = static_cast<int16_t>(takenFrom[t] - milli);
    while (it != begin && *(it - 1) > *it) {
      std::iter_swap(it - 1, it);
      --it;
    }
  }
  for (size_t i = 0; i < static_cast<size_t>(out.count); ++i) out.prefix[i + 1] = out.prefix[i] + out.sorted[i];
  return out;
}

double fragmentation(const NodeSummary& n, const ShapeMix& mix, OtherModels other) {
  const int64_t total = n.total();
  double frag = 0;
  for (const WeightedShape& w : mix) {
    const ShareRequest& s = w.shape;
    bool modelOk = s.modelMask == kAnyModel || (n.hasGpus && (s.modelMask & (1u << n.model)) != 0);
    if (s.gpuCount > 0 && !modelOk && other == OtherModels::kIgnored) continue;
    if (s.gpuCount == 0 || !modelOk) {
      frag += w.weight * static_cast<double>(total);
      continue;
    }
    // A MIG shape needs a whole free GPU on a node with none carved (the only nodes summaries describe).
    const int32_t needs = s.isMig() ? kMilliPerGpu : s.gpuMilli;
    auto first = std::lower_bound(n.sorted.begin(), n.sorted.begin() + n.count, static_cast<int16_t>(needs));
    auto small = static_cast<size_t>(first - n.sorted.begin());
    bool serves = n.count - static_cast<int>(small) >= s.gpuCount && n.cpuLeft >= s.cpuMilli;
    frag += w.weight * static_cast<double>(serves ? n.prefix[small] : total);
  }
  return frag;
}

ClusterFragmentation clusterFragmentation(const ShareCluster& c, const ShapeMix& mix) {
  ShapeMix gpuOnly;
  double gpuWeight = 0;
  for (const auto& w : mix)
    if (w.shape.gpuCount > 0) {
      gpuOnly.push_back(w);
      gpuWeight += w.weight;
    }
  for (auto& w : gpuOnly) w.weight /= gpuWeight > 0 ? gpuWeight : 1;
  double all = 0;
  double gpu = 0;
  for (const ShareNode& n : c.nodes()) {
    all += nodeFragmentation(n, mix);
    gpu += nodeFragmentation(n, gpuOnly);
  }
  double capacity = static_cast<double>(c.totalGpuMilli());
  return {100.0 * all / capacity, 100.0 * gpu / capacity};
}

}  // namespace switchyard::sharing
