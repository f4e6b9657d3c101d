// What yard-agent reads to say what a host's GPUs are doing (idle reclaim, HostAgent.Activity): nvidia-smi's
// per-GPU utilization and memory, and its compute processes, in the CSV forms
//   --query-gpu=pci.bus_id,utilization.gpu,memory.used --format=csv,noheader,nounits
//     00000000:00:06.0, 100, 1231
//   --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv,noheader,nounits
//     00000000:00:06.0, 676, python3, 1222
// (recorded on an H100: tests/data/nvidia-smi/). Fields nvidia-smi cannot read print as "[N/A]" or
// "[Not Supported]": a utilization it cannot read leaves the GPU out (unknown is not idle) unless the GPU
// turns out to be in MIG mode, where the driver reads none; a process's unknown memory counts 0. Lines that
// do not parse are skipped and counted.
// In MIG mode the CSV queries cannot say which GPU instance a process runs in. Two more outputs do:
//   nvidia-smi                  the plain table: each GPU's index and bus id, and the "Processes:" rows
//                               "|    1    3    0      34965      C   python      14195MiB |" (GPU index, GPU
//                               instance id, compute instance id, pid, type, name, memory)
//   nvidia-smi mig -i PCI -lgi  the GPU's instances: "|   0  MIG 1g.10gb   19    9    2:1   |" (GPU, name,
//                               profile id, instance id, placement start:size)
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
  std::map<std::string, std::uint64_t> utilizationUnread;     // GPUs whose utilization read [N/A]: their memory
  std::map<std::string, std::vector<GpuProcess>> processes;  // by normalized bus id
  int skippedLines = 0;
};

// The plain table's processes that run in a GPU instance, by normalized bus id, then GPU instance id.
using MigProcesses = std::map<std::string, std::map<int, std::vector<GpuProcess>>>;

// Adds the --query-gpu output's GPUs to `into`.
void parseGpuUtilization(std::string_view csv, ParsedActivity& into);
// Adds the --query-compute-apps output's processes to `into`.
void parseComputeApps(std::string_view csv, ParsedActivity& into);
// The processes of plain `nvidia-smi` output that name a GPU instance (those whose GI reads N/A do not).
[[nodiscard]] MigProcesses parseMigProcesses(std::string_view table);
// `nvidia-smi mig -lgi` output: each GPU instance id with its placement start.
[[nodiscard]] std::map<int, int> parseGpuInstanceStarts(std::string_view listing);

}  // namespace switchyard::agent
