#include "tests/bench/packing/packbench_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/pool_aware_policy.h"

namespace switchyard::bench {

namespace {

std::optional<ComposableShape> parseShape(const std::string& s) {
  if (s == "mirror") return ComposableShape{.slots = 8, .enclosurePorts = 1, .hostPorts = 1, .deviceLimit = 8, .mirrorServers = true};
  ComposableShape shape;
  if (std::sscanf(s.c_str(), "%d:%d:%d:%d", &shape.slots, &shape.enclosurePorts, &shape.hostPorts, &shape.deviceLimit) != 4 ||
      shape.slots < 1 || shape.enclosurePorts < 1 || shape.hostPorts < 1 || shape.deviceLimit < 1 ||
      shape.deviceLimit > sharing::kMaxGpusPerNode)
    return std::nullopt;
  return shape;
}

// "default+big": the default pod list with logical servers only a composable pool can serve: of its
// 8-GPU pods (in name order) every fourth asks for 32 GPUs and the next one for 16, CPU and memory scaled.
std::vector<TracePod> withBigServers(std::vector<TracePod> pods) {
  std::sort(pods.begin(), pods.end(), [](const TracePod& a, const TracePod& b) { return a.name < b.name; });
  int eight = 0;
  for (auto& p : pods) {
    if (p.request.gpuCount != 8) continue;
    const int factor = eight % 4 == 0 ? 4 : eight % 4 == 1 ? 2 : 1;
    ++eight;
    p.request.gpuCount *= factor;
    p.request.cpuMilli *= factor;
    p.request.memoryMib *= factor;
  }
  return pods;
}

// "default+mig": the pod list as it would run on MIG-capable GPUs (A100/H100 geometry, assumed for every
// GPU of the cluster): a share becomes the smallest MIG profile with at least its compute (ceil(milli x 7 /
// 1000) slices: 1g, 2g, 3g or 4g), and a share that needs 5 or more slices takes a whole GPU.
std::vector<TracePod> withMigInstances(std::vector<TracePod> pods) {
  for (auto& p : pods) {
    if (!p.request.sharesGpu()) continue;
    const int slices = (p.request.gpuMilli * 7 + sharing::kMilliPerGpu - 1) / sharing::kMilliPerGpu;
    if (slices <= sharing::kMigProfilesShared) p.request = sharing::migRequest(p.request, slices - 1);
    else p.request.gpuMilli = sharing::kMilliPerGpu;
  }
  return pods;
}

}  // namespace

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<uint64_t> parseSeeds(const std::string& s) {
  std::vector<uint64_t> out;
  for (const auto& part : splitList(s)) {
    auto dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(std::stoull(part));
    } else {
      for (uint64_t v = std::stoull(part.substr(0, dash)); v <= std::stoull(part.substr(dash + 1)); ++v) out.push_back(v);
    }
  }
  return out;
}

Stats stats(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) : 0;
  return s;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

std::unique_ptr<sharing::SharePolicy> makePolicyFor(const std::string& name, const sharing::SharePolicyOptions& options,
                                                   const ComposablePool* pool) {
  if (name == kPoolAwarePolicy) return pool ? makePoolAwarePolicy(*pool) : nullptr;
  return sharing::makeSharePolicy(name, options);
}

sharing::SharePolicyOptions runOptions(const sharing::SharePolicyOptions& ours, uint64_t seed, const sharing::ShapeMix& mix) {
  sharing::SharePolicyOptions o = ours;
  o.seed = seed;
  o.oracleMix = mix;
  o.cacheFgd = true;
  return o;
}

bool needsComposablePool(const std::string& name) { return name == kPoolAwarePolicy; }

std::optional<Inputs> loadInputs(const fs::path& traces, const std::vector<std::string>& workloads,
                                 const std::vector<std::string>& policies, bool poolPolicies, bool needDurations) {
  auto cluster = loadOpenbNodes((traces / "openb_node_list_gpu_node.csv").string());
  if (!cluster) {
    fmt::print(stderr, "error: {}\n", cluster.error());
    return std::nullopt;
  }
  for (const auto& p : policies) {
    if (poolPolicies && needsComposablePool(p)) continue;
    if (!sharing::makeSharePolicy(p, {})) {
      fmt::print(stderr, "error: unknown policy '{}'; known: {}{}\n", p, fmt::join(sharing::sharePolicyNames(), ", "),
                 poolPolicies ? fmt::format(", {}", kPoolAwarePolicy) : fmt::format(" ({} runs on composable pools only: the composable, dynamic, compaction and optimality modes)", kPoolAwarePolicy));
      return std::nullopt;
    }
  }
  Inputs in{std::move(*cluster), {}, {}};
  sharing::ModelTable models = in.cluster.models();
  for (const auto& w : workloads) {
    // NAME, then any of the suffixes +big and +mig.
    std::string file = w;
    bool big = false, mig = false;
    for (bool stripped = true; stripped;) {
      stripped = false;
      for (auto [suffix, flag] : {std::pair{"+big", &big}, std::pair{"+mig", &mig}})
        if (file.ends_with(suffix)) {
          file.resize(file.size() - 4);
          *flag = stripped = true;
        }
    }
    auto loaded = loadOpenbPods((traces / fmt::format("openb_pod_list_{}.csv", file)).string(), models);
    if (!loaded) {
      fmt::print(stderr, "error: {}\n", loaded.error());
      return std::nullopt;
    }
    if (needDurations && std::none_of(loaded->begin(), loaded->end(), [](const TracePod& p) {
          return p.durationSeconds > 0 && p.request.gpuCount > 0;
        })) {
      fmt::print(stderr, "error: pod list '{}' has no GPU pods with durations (creation and deletion times), which this mode replays\n", w);
      return std::nullopt;
    }
    if (big) *loaded = withBigServers(std::move(*loaded));
    if (mig) *loaded = withMigInstances(std::move(*loaded));
    in.pods[w] = std::move(*loaded);
    std::vector<sharing::ShareRequest> reqs;
    for (const auto& p : in.pods[w]) reqs.push_back(p.request);
    in.mixes[w] = sharing::typicalShapes(reqs);
  }
  return in;
}

std::optional<std::map<std::string, std::optional<ComposableShape>>> parsePools(const std::vector<std::string>& names,
                                                                                  bool allowStatic) {
  std::map<std::string, std::optional<ComposableShape>> pools;
  for (const auto& name : names) {
    if (allowStatic && name == "static") {
      pools[name] = std::nullopt;
      continue;
    }
    auto shape = parseShape(name);
    if (!shape) {
      fmt::print(stderr, "error: pool '{}' is neither {}'mirror' nor K:U:P:L with L <= {}\n", name, allowStatic ? "'static', " : "",
                 sharing::kMaxGpusPerNode);
      return std::nullopt;
    }
    pools[name] = *shape;
  }
  return pools;
}

void runInParallel(size_t count, unsigned jobs, const std::function<void(size_t)>& work,
                   const std::function<void(size_t, size_t)>& report) {
  std::atomic<size_t> next{0};
  size_t finished = 0;
  std::mutex reportMutex;
  std::exception_ptr failure;  // the first run that threw: no new runs start, and it is rethrown here
  auto worker = [&] {
    for (size_t i; (i = next++) < count;) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard lock(reportMutex);
        if (!failure) failure = std::current_exception();
        next = count;
        return;
      }
      std::lock_guard lock(reportMutex);
      report(i, ++finished);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, jobs); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace switchyard::bench
