// Small clusters and request streams for the GPU-sharing tests: hand-made nodes and requests, and random
// ones like the openb trace's (a seeded stream, so a failure replays).
#pragma once

#include <array>
#include <random>
#include <string>
#include <vector>

#include "composer/packing/sharing/share_cluster.h"

namespace switchyard::sharing::fixtures {

inline ShareNode node(std::string name, int gpus, uint8_t model = 0, int32_t cpu = 64000) {
  ShareNode n;
  n.name = std::move(name);
  n.cpuCapacity = n.cpuLeft = cpu;
  n.memoryCapacity = n.memoryLeft = 256 * 1024;
  n.model = model;
  n.gpuLeft.assign(static_cast<size_t>(gpus), kMilliPerGpu);
  return n;
}

inline ShareRequest whole(int gpus, int32_t cpu = 4000) { return {.cpuMilli = cpu, .memoryMib = 1024, .gpuCount = gpus, .gpuMilli = 1000}; }
inline ShareRequest share(int32_t milli, int32_t cpu = 2000) { return {.cpuMilli = cpu, .memoryMib = 1024, .gpuCount = 1, .gpuMilli = milli}; }
// Shapes leave memory out.
inline ShareRequest shapeOf(ShareRequest r) {
  r.memoryMib = 0;
  return r;
}

// A random cluster of 2/4/8-GPU nodes over two models, and a random request stream like the trace's.
inline ShareCluster randomCluster(std::mt19937_64& rng, int nodes) {
  ModelTable models;
  models.intern("A");
  models.intern("B");
  std::vector<ShareNode> list;
  for (int i = 0; i < nodes; ++i) {
    int gpus = std::array{1, 2, 4, 8}[rng() % 4];
    list.push_back(node("n" + std::to_string(i), gpus, static_cast<uint8_t>(rng() % 2), static_cast<int32_t>(16000 + 16000 * (rng() % 4))));
  }
  return ShareCluster(std::move(list), models);
}

inline ShareRequest randomRequest(std::mt19937_64& rng) {
  ShareRequest r{.cpuMilli = static_cast<int32_t>(1000 * (1 + rng() % 12)), .memoryMib = static_cast<int64_t>(1024 * (1 + rng() % 8))};
  switch (rng() % 5) {
    case 0: break;  // CPU only
    case 1:
    case 2: r.gpuCount = 1; r.gpuMilli = static_cast<int32_t>(100 + 100 * (rng() % 9)); break;
    case 3: r.gpuCount = 1; r.gpuMilli = 1000; break;
    default: r.gpuCount = std::array{2, 4, 8}[rng() % 3]; r.gpuMilli = 1000; break;
  }
  if (r.gpuCount > 0 && rng() % 4 == 0) r.modelMask = 1u << (rng() % 2);
  return r;
}

// The same stream with half of the shares asked as MIG instances (1g..4g).
inline ShareRequest randomRequestWithMig(std::mt19937_64& rng) {
  ShareRequest r = randomRequest(rng);
  if (r.sharesGpu() && rng() % 2 == 0) r = migRequest(r, static_cast<int>(rng() % kMigProfilesShared));
  return r;
}

inline constexpr int k1g = 0, k2g = 1, k3g = 2, k4g = 3;

}  // namespace switchyard::sharing::fixtures
