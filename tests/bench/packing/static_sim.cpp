#include "tests/bench/packing/static_sim.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace switchyard::bench {

std::vector<sharing::ShareRequest> inflateWorkload(const std::vector<TracePod>& pods, int64_t capacityMilli, uint64_t seed,
                                                   double ratio) {
  std::vector<const TracePod*> byName;
  for (const auto& p : pods) byName.push_back(&p);
  std::sort(byName.begin(), byName.end(), [](const TracePod* a, const TracePod* b) { return a->name < b->name; });
  std::mt19937_64 rng(seed);
  std::vector<sharing::ShareRequest> out;
  int64_t total = 0;
  for (const TracePod* p : byName) {
    out.push_back(p->request);
    total += p->request.totalGpuMilli();
  }
  std::shuffle(out.begin(), out.end(), rng);
  const double target = ratio * static_cast<double>(capacityMilli);
  std::uniform_int_distribution<size_t> pick(0, byName.size() - 1);
  // Resample until the next pod would pass the target (the original list may already be above it: then
  // drop pods at random until it is not).
  while (static_cast<double>(total) > target && !out.empty()) {
    size_t i = std::uniform_int_distribution<size_t>(0, out.size() - 1)(rng);
    total -= out[i].totalGpuMilli();
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(i));
  }
  for (;;) {
    const sharing::ShareRequest& r = byName[pick(rng)]->request;
    if (static_cast<double>(total + r.totalGpuMilli()) > target) break;
    total += r.totalGpuMilli();
    out.push_back(r);
  }
  return out;
}

sharing::ShareCluster shuffleNodes(const sharing::ShareCluster& c, uint64_t seed) {
  std::vector<sharing::ShareNode> nodes = c.nodes();
  std::mt19937_64 rng(seed ^ 0x5bd1e995u);
  std::shuffle(nodes.begin(), nodes.end(), rng);
  return sharing::ShareCluster(std::move(nodes), c.models());
}

StaticResult runStatic(sharing::ShareCluster cluster, const std::vector<sharing::ShareRequest>& requests,
                       sharing::SharePolicy& policy, const sharing::ShapeMix& fragMix) {
  StaticResult result;
  bool fragAt100Taken = false;
  static_cast<ArrivalRun&>(result) = runArrivals(
      cluster, cluster.totalGpuMilli(), requests, policy, [&](const auto& p, const auto& r) { cluster.apply(p, r); },
      [&] { return cluster.allocatedGpuMilli(); },
      [&](int64_t after) {
        if (!fragAt100Taken && after > cluster.totalGpuMilli()) {
          result.fragAt100 = sharing::clusterFragmentation(cluster, fragMix);
          fragAt100Taken = true;
        }
      });
  if (!fragAt100Taken) result.fragAt100 = sharing::clusterFragmentation(cluster, fragMix);
  result.fragAtEnd = sharing::clusterFragmentation(cluster, fragMix);
  return result;
}

}  // namespace switchyard::bench
