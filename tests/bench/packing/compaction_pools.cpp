#include "tests/bench/packing/compaction_pools.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace switchyard::bench {

sharing::ShareCluster shareOfServers(const sharing::ShareCluster& all, int percent, uint64_t seed) {
  std::map<std::pair<uint8_t, int>, std::vector<const sharing::ShareNode*>> classes;
  for (const auto& n : all.nodes()) classes[{n.gpuCount() > 0 ? n.model : uint8_t{255}, n.gpuCount()}].push_back(&n);
  std::mt19937_64 rng(seed ^ 0xc0ffee);
  std::vector<sharing::ShareNode> nodes;
  for (auto& [key, members] : classes) {
    std::shuffle(members.begin(), members.end(), rng);
    const auto take = static_cast<size_t>(std::lround(static_cast<double>(members.size()) * percent / 100.0));
    for (size_t i = 0; i < take; ++i) nodes.push_back(*members[i]);
  }
  std::shuffle(nodes.begin(), nodes.end(), rng);
  return sharing::ShareCluster(std::move(nodes), all.models());
}

// A smaller percent takes away a longer prefix of the same sequence of GPUs, so the pools are nested.
sharing::ShareCluster thinnedServers(const sharing::ShareCluster& all, int percent, uint64_t seed, Thinning how) {
  std::vector<sharing::ShareNode> nodes = all.nodes();
  std::vector<size_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(seed ^ 0xfeed);
  std::shuffle(order.begin(), order.end(), rng);
  std::map<uint8_t, int> gpus;
  for (const auto& n : nodes) gpus[n.model] += n.gpuCount();
  for (const auto& [model, total] : gpus)
    for (long remove = total - std::lround(total * percent / 100.0); remove > 0; --remove) {
      sharing::ShareNode* next = nullptr;
      for (size_t i : order) {
        const sharing::ShareNode& n = nodes[i];
        if (n.model != model || n.gpuCount() == 0) continue;
        if (!next || (how == Thinning::kEven ? n.gpuCount() > next->gpuCount() : n.gpuCount() < next->gpuCount())) next = &nodes[i];
      }
      next->gpuLeft.pop_back();
    }
  return sharing::ShareCluster(std::move(nodes), all.models());
}

}  // namespace switchyard::bench
