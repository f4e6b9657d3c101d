// The switchyard_packbench subcommands, one file each; packbench_main.cpp holds the command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/bench/packing/compaction_pools.h"
#include "tests/bench/packing/dynamic_sim.h"
#include "tests/bench/packing/loop_sim.h"
#include "tests/bench/packing/packbench_common.h"

namespace switchyard::bench {

// FGD's inflation protocol on the fixed openb cluster, next to the authors' published numbers. `ours` holds
// switchyard's settings (learnMix, deltaResolution, otherModels); seed, mix and caching are per run.
int runStaticCommand(const fs::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& policies,
                     const std::vector<uint64_t>& seeds, double ratio, const fs::path& out, unsigned jobs,
                     const sharing::SharePolicyOptions& ours, bool quiet);
// Decision latency, placements/s and memory on pools of repeated openb nodes: the servers themselves
// (`pool` "static") or a composable pool of them (K:U:P:L, where switchyard-pool can run too).
int runLatencyCommand(const fs::path& traces, const std::vector<int>& sizes, const std::vector<double>& fills,
                      const std::vector<std::string>& policies, size_t decisions, size_t naiveDecisions, size_t warmupDecisions,
                      const std::string& pool, const fs::path& out);
// The static protocol on composable pools, against the LP bound.
// References a composable run can add beside the GPU-packing LP: the server LP (server_bound.h, minutes per
// bound), and each policy placing the arrived GPU requests offline (whole-GPU requests first), a feasible
// point under the optimum.
struct ComposableReferences {
  bool serverLp = false;
  bool offline = false;
};
int runComposableCommand(const fs::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& shapeNames,
                         const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds, double ratio, const fs::path& out,
                         unsigned jobs, bool quiet, const ComposableReferences& references = {});
// Poisson arrivals and departures at offered loads. `ours` as for runStaticCommand.
int runDynamicCommand(const fs::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& poolNames,
                      const std::vector<double>& loads, const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds,
                      const DynamicOptions& base, const sharing::SharePolicyOptions& ours, const fs::path& out, unsigned jobs,
                      bool quiet);

// The utilization loop against FIFO on the dynamic mode's arrivals (loop_sim.h); `modes` are "fifo" and "loop".
int runLoopCommand(const fs::path& traces, const std::string& workload, const std::vector<std::string>& poolNames,
                   const std::vector<std::string>& modes, const std::vector<double>& loads, const std::vector<std::string>& policies,
                   const std::vector<uint64_t>& seeds, const LoopOptions& base, const sharing::SharePolicyOptions& ours, const fs::path& out,
                   unsigned jobs, bool quiet);

struct CompactionOptions {
  double load = 0.8;            // offered load against the whole cluster's GPU capacity
  double targetPercent = 99;    // acceptance the pool must reach
  int fromPercent = 50;         // the smallest share of servers considered (taken to miss the target)
  int resolutionPercent = 1;    // the bisection stops when pass and miss are this close
  // Shares (%) every search also probes, besides the bisection's, so that pools can be compared at the same size;
  // the summary then shows the acceptance per request kind there.
  std::vector<int> probeAt;
  // Composable pools keep every host and shrink only their GPUs (ComposableShape::gpuPercent); fixed servers
  // can only shrink whole, so they shrink as without it.
  bool keepHosts = false;
  // Fixed servers are all kept and lose GPUs instead (compaction_pools.h): the control for keepHosts, a fleet of
  // the same hosts bought with fewer GPUs.
  std::optional<Thinning> thinServers;
};
// The smallest share of the servers that serves a fixed demand at the target acceptance, fixed servers vs
// composable pools.
int runCompactionCommand(const fs::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& poolNames,
                         const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds, const CompactionOptions& options,
                         const DynamicOptions& base, const fs::path& out, unsigned jobs, bool quiet);

// Each policy against the exact optimum (GLPK ILP) on small sampled instances.
int runOptimalityCommand(const fs::path& traces, const std::vector<std::string>& workloads, const std::vector<std::string>& shapeNames,
                         const std::vector<std::string>& policies, const std::vector<uint64_t>& seeds, size_t servers,
                         double timeLimit, const fs::path& out, unsigned jobs, bool quiet);

}  // namespace switchyard::bench
