// What the switchyard_packbench subcommands share: list and seed parsing, summary statistics, loading the
// node list and pod lists, pool shapes, and running independent runs on several threads.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "composer/packing/sharing/shape_mix.h"
#include "composer/packing/sharing/share_policy.h"
#include "tests/bench/packing/composable_sim.h"
#include "tests/bench/packing/openb_trace.h"

namespace switchyard::bench {

namespace fs = std::filesystem;

// "a,b,c" -> {a, b, c}; empty items are dropped.
[[nodiscard]] std::vector<std::string> splitList(const std::string& s);
// "42-51" or "42,43" -> seeds.
[[nodiscard]] std::vector<uint64_t> parseSeeds(const std::string& s);

struct Stats {
  double mean = 0, sd = 0;
};
[[nodiscard]] Stats stats(const std::vector<double>& v);
[[nodiscard]] double percentile(std::vector<double> v, double q);

struct Inputs {
  sharing::ShareCluster cluster;
  std::map<std::string, std::vector<TracePod>> pods;  // by workload name
  std::map<std::string, sharing::ShapeMix> mixes;      // each workload's typical shapes
};
// The node list and each workload's pod list ("NAME+big": with 16/32-GPU servers added; "NAME+mig": shares
// asked as MIG instances, every GPU taken as MIG-capable), after checking the policy names (`poolPolicies`:
// also the composable-only ones, pool_aware_policy.h; `needDurations`: every pod list must have GPU pods with
// durations, as the dynamic modes replay them). Reports what is wrong on stderr.
[[nodiscard]] std::optional<Inputs> loadInputs(const fs::path& traces, const std::vector<std::string>& workloads,
                                               const std::vector<std::string>& policies, bool poolPolicies = false,
                                               bool needDurations = false);

// A policy by name for a run on `pool` (null: fixed servers). `switchyard-pool` reads the pool's structure, so
// it is made only for a composable pool; null for an unknown name or a pool-only policy without a pool.
[[nodiscard]] std::unique_ptr<sharing::SharePolicy> makePolicyFor(const std::string& name, const sharing::SharePolicyOptions& options,
                                                                  const ComposablePool* pool);
// The options of one run: `ours` (switchyard's settings, packbench_commands.h) with the run's seed, the workload's
// mix as FGD's oracle, and FGD's score cache (same decisions, faster).
[[nodiscard]] sharing::SharePolicyOptions runOptions(const sharing::SharePolicyOptions& ours, uint64_t seed, const sharing::ShapeMix& mix);
// Whether `name` runs only on composable pools.
[[nodiscard]] bool needsComposablePool(const std::string& name);

// Pools by name: "mirror" or K:U:P:L composable pools, and "static" (no shape) where `allowStatic`.
// Reports a bad name on stderr.
[[nodiscard]] std::optional<std::map<std::string, std::optional<ComposableShape>>> parsePools(const std::vector<std::string>& names,
                                                                                              bool allowStatic);

// Runs work(i) for every i < count on `jobs` threads; after each run, report(i, finishedSoFar) is called
// under one lock (for progress lines). If a run throws, no further run starts, and the first exception is
// rethrown once the running ones are done.
void runInParallel(size_t count, unsigned jobs, const std::function<void(size_t)>& work,
                   const std::function<void(size_t, size_t)>& report);

// A command's summary: every piece goes both to the markdown file and to stdout.
class SummaryTee {
 public:
  explicit SummaryTee(const fs::path& file) : file_(file) {}
  void operator()(const std::string& text) {
    file_ << text;
    fmt::print("{}", text);
  }

 private:
  std::ofstream file_;
};

}  // namespace switchyard::bench
