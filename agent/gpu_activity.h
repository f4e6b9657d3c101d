// What yard-agent reads to say what a host's GPUs are doing (idle reclaim, HostAgent.Activity): nvidia-smi's
// per-GPU utilization and memory, and its compute processes, in the CSV forms
//   --query-gpu=pci.bus_id,utilization.gpu,memory.used --format=csv,noheader,nounits
//     00000000:00:06.0, 100, 1231
//   --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv,noheader,nounits
//     00000000:00:06.0, 676, python3, 1222
// (recorded on an H100: tests/data/nvidia-smi/). Fields nvidia-smi cannot read print as "[N/A]" or
// "[Not Supported]": a utilization it cannot read leaves the GPU out (unknown is not idle); a process's
// unknown memory counts 0. Lines that do not parse are skipped and counted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/composition.h"

namespace switchyard::agent {

// nvidia-smi prints bus ids with an 8-digit domain ("00000000:12:00.0"), sysfs with 4 ("0000:12:00.0").
[[nodiscard]] std::string normalizeBusId(std::string_view busId);

struct GpuUtilization {
  int utilizationPercent = 0;
  std::uint64_t memoryUsedMiB = 0;
};

struct ParsedActivity {
  std::map<std::string, GpuUtilization> gpus;                 // by normalized bus id
  std::map<std::string, std::vector<GpuProcess>> processes;  // by normalized bus id
  int skippedLines = 0;
};

// Adds the --query-gpu output's GPUs to `into`.
void parseGpuUtilization(std::string_view csv, ParsedActivity& into);
// Adds the --query-compute-apps output's processes to `into`.
void parseComputeApps(std::string_view csv, ParsedActivity& into);

}  // namespace switchyard::agent
