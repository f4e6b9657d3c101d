// Reads the Alibaba "openb" GPU cluster trace (cluster-trace-gpu-v2023): a node list and a pod list, both
// CSV with a header row. Columns are found by name; a malformed row is an error naming file and line.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "composer/packing/sharing/share_cluster.h"

namespace switchyard::bench {

struct TracePod {
  std::string name;
  sharing::ShareRequest request;
  int64_t durationSeconds = 0;  // deletion_time - creation_time when both columns are there, else 0
};

// openb_node_list_*.csv: sn, cpu_milli, memory_mib, gpu, model.
[[nodiscard]] std::expected<sharing::ShareCluster, std::string> loadOpenbNodes(const std::string& path);
// openb_pod_list_*.csv: name, cpu_milli, memory_mib, num_gpu, gpu_milli, and optionally gpu_spec (allowed models
// separated by '|'; some variants have no such column) and creation_time / deletion_time (seconds).
// A model named in gpu_spec that no node has is interned into `models` (it can never be served).
[[nodiscard]] std::expected<std::vector<TracePod>, std::string> loadOpenbPods(const std::string& path,
                                                                               sharing::ModelTable& models);

}  // namespace switchyard::bench
