// What yard-agent does on its host, without the RPC around it: reads the PCI bus (libpci), makes newly
// bound devices appear (sysfs rescan) and checks they are the expected ones behind the expected root
// port, and lets go of a device safely: refuses while a process uses it, runs the operator's hooks,
// unbinds the driver and removes the PCI function. Every destructive action has a dry-run that only says
// what it would do. All paths (sysfs, proc) are configurable so tests run against fake trees.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "composer/model/composition.h"
#include "composer/model/error.h"
#include "inventory/pci/pci_scanner.h"

namespace switchyard::agent {

struct HostOpsOptions {
  std::filesystem::path sysfsRoot = "/sys";
  std::filesystem::path procRoot = "/proc";
  // Prints "<bus id>, <uuid>" per GPU; "" reads only /proc/driver/nvidia/gpus/<address>/information.
  std::string gpuUuidCommand = "nvidia-smi --query-gpu=pci.bus_id,uuid --format=csv,noheader";
  // MIG instances, as shell command templates: {pci} the GPU's address, {profile} 1g..7g, {start} the first
  // memory slice, {memory_gib} the instance's memory (memory slices x migSliceGiB), {gi} the GPU instance id
  // (found by listing the GPU's instances and matching the placement start).
  std::string migCreateCommand = "nvidia-smi mig -i {pci} -cgi {profile}.{memory_gib}gb:{start} -C";
  std::string migListCommand = "nvidia-smi mig -i {pci} -lgi";
  std::string migDestroyCommand = "nvidia-smi mig -i {pci} -gi {gi} -dci && nvidia-smi mig -i {pci} -gi {gi} -dgi";
  int migSliceGiB = 10;  // memory per slice: 10 on 80 GB A100/H100, 5 on A100-40GB
  std::vector<std::string> afterAttach;   // shell commands run after devices were verified present
  std::vector<std::string> beforeDetach;  // shell commands run before a device is removed
  // Run before the before-detach hooks when yardd takes the devices back on its own (YARD_DETACH_REASON
  // reclaim or preemption): a notice to save work or checkpoint. A hook that fails stops the release.
  std::vector<std::string> beforeReclaim;
  std::vector<std::string> beforePreempt;
  // GPU activity (idle reclaim): per-GPU utilization and memory, and compute processes, as CSV without
  // header or units (agent/gpu_activity.h). "" for either: that part is not reported (no GPU activity).
  std::string gpuActivityCommand = "nvidia-smi --query-gpu=pci.bus_id,utilization.gpu,memory.used --format=csv,noheader,nounits";
  std::string gpuProcessesCommand =
      "nvidia-smi --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv,noheader,nounits";
  // In MIG mode (a GPU whose utilization reads [N/A] and that migListCommand lists instances on): the plain
  // table, whose "Processes:" rows name each process's GPU instance. "": MIG GPUs are not reported.
  std::string gpuMigProcessesCommand = "nvidia-smi";
  // Secure release: how a device is reset as it leaves, so that the next tenant finds nothing of this one's
  // in it (GPU memory included). "sysfs": after its driver is unbound, 1 is written to the function's
  // <sysfs>/bus/pci/devices/<address>/reset (the kernel's function-level or bus reset); a device the kernel
  // offers no reset for is not released. A shell command with {pci} (e.g. "nvidia-smi -r -i {pci}"): run
  // while the driver is still bound. "none": no reset (the previous tenant's data may reach the next).
  // A reset that fails does not stop the release: the device is removed and reported as not reset
  // (DetachOutcome::notReset), and yardd quarantines it until an operator releases it.
  std::string deviceReset = "sysfs";
  std::chrono::milliseconds commandTimeout{120'000};  // a hook or vendor command still running then is killed
  // The fabric's upstream port ids mapped to the root port where that cable enters this host.
  std::map<std::string, PciAddress> upstreamPorts;
  std::chrono::milliseconds pollInterval{100};
  std::chrono::milliseconds defaultDeadline{30'000};
};

struct HostFunction {
  PciFunction pci;
  std::string gpuUuid;
};

struct ExpectedDevice {
  std::string deviceId;
  std::string serialNumber;  // lspci form; "" = not checked
  std::uint16_t vendorId = 0;  // 0 = any
  std::string upstreamPortId;  // "" or unmapped = not checked
};

struct MigRequest {
  std::string deviceId;
  std::string serialNumber;  // finds the GPU
  std::string profile;       // 1g, 2g, 3g, 4g, 7g
  int start = 0;
};

struct FoundDevice {
  std::string deviceId;
  std::string pciAddress;
  std::string gpuUuid;
  std::string driver;
};

struct VerifyOutcome {
  std::vector<FoundDevice> found;
  std::vector<std::string> actions;
};

struct DetachOutcome {
  std::vector<std::string> actions;
  std::vector<DeviceNotReset> notReset;  // removed, but their reset failed (each with why)
};

// A process holding a device open.
struct DeviceUser {
  int pid = 0;
  std::string command;
  std::string path;  // what it holds: /dev/nvidia0, a resource file, ...
};

class HostOps {
 public:
  explicit HostOps(HostOpsOptions options);

  [[nodiscard]] Result<std::vector<HostFunction>> inventory() const;
  // Writes 1 to <sysfs>/bus/pci/rescan (dry run: says so).
  [[nodiscard]] Result<std::vector<std::string>> rescan(bool dryRun) const;
  // Rescans and looks until every expected device is present or `deadline` passes.
  // Then creates `mig` (on failure, destroys the ones it created) and runs the after-attach hooks.
  [[nodiscard]] Result<VerifyOutcome> verifyPresent(const std::vector<ExpectedDevice>& expected, std::chrono::milliseconds deadline,
                                                    bool dryRun, const std::vector<MigRequest>& mig = {}) const;
  // Refuses while a device is in use; destroys `mig`, runs the hooks, unbinds, resets (deviceReset) and
  // removes the devices. A device whose reset fails is removed all the same and named in notReset, in this
  // answer and in every later one that finds it gone, until verifyPresent sees it again.
  // `reason` (request, lease, preemption, reclaim, move) reaches the hooks as YARD_DETACH_REASON.
  [[nodiscard]] Result<DetachOutcome> prepareDetach(const std::vector<ExpectedDevice>& expected, bool dryRun,
                                                    const std::vector<MigRequest>& mig = {}, const std::string& reason = "request") const;
  // What each expected GPU on this host is doing: nvidia-smi's utilization, memory and compute processes,
  // plus any other process holding the GPU open (usersOf: graphics, or a process nvidia-smi cannot see from
  // its PID namespace). A device not on the host, or one nvidia-smi does not report, is left out;
  // kUnavailable when a command fails (unknown is not idle).
  [[nodiscard]] Result<std::vector<GpuActivity>> activity(const std::vector<ExpectedDevice>& expected) const;
  // The same for `functions` found some other way (yard-agent --print-activity), keyed and named by PCI address.
  [[nodiscard]] Result<std::map<std::string, GpuActivity>> activityOf(const std::vector<PciFunction>& functions) const;
  // The processes holding the function open (its /dev/nvidiaN node, an NVMe controller's /dev/nvmeN or one of
  // its namespaces or partitions, or one of its sysfs files).
  [[nodiscard]] std::vector<DeviceUser> usersOf(const PciFunction& function) const;
  // What the host's own kernel holds the function by, besides processes: for a drive, a filesystem of one of
  // its namespaces or partitions mounted (<proc>/mounts) or used as swap (<proc>/swaps); for a NIC, one of its
  // network interfaces up (<sysfs>/.../net/IF/operstate: RDMA traffic needs no IP address, so up is enough).
  // Block devices and interfaces are found on the function (nvme/, net/) or one level down (virtio0/block/vda,
  // virtio2/net/eth0).
  // Each a sentence; empty when nothing holds it.
  [[nodiscard]] std::vector<std::string> kernelHoldsOf(const PciFunction& function) const;

  [[nodiscard]] const HostOpsOptions& options() const { return options_; }

 private:
  [[nodiscard]] std::map<std::string, std::string> gpuUuids() const;
  [[nodiscard]] Result<void> writeSysfs(const std::filesystem::path& file, const std::string& value) const;
  [[nodiscard]] Result<void> createMig(const std::vector<MigRequest>& mig, const std::vector<PciFunction>& functions, bool dryRun,
                                       std::vector<std::string>& actions) const;
  [[nodiscard]] Result<void> destroyMig(const std::vector<MigRequest>& mig, const std::vector<PciFunction>& functions, bool dryRun,
                                        std::vector<std::string>& actions) const;
  [[nodiscard]] Result<void> runHooks(const std::vector<std::string>& hooks, const std::vector<FoundDevice>& devices, bool dryRun,
                                      std::vector<std::string>& actions, const std::string& reason = {}) const;

  HostOpsOptions options_;
  PciScanner scanner_;
  // Devices removed without their reset, by serial: a release that finds one gone names it again (yardd may
  // have died before it recorded the first answer, and retries), until the device is seen on the host again.
  mutable std::mutex unresetMutex_;
  mutable std::map<std::string, DeviceNotReset> unreset_;
};

// Runs `command` with /bin/sh, extra environment variables added; returns its output, or an error with
// the exit status and the output's tail. A command still running after `timeout` is killed with everything
// it started (its own process group) and fails with kDeadlineExceeded: a hung hook or vendor tool never
// holds an attach or a detach for ever.
[[nodiscard]] Result<std::string> runShell(const std::string& command, const std::map<std::string, std::string>& env = {},
                                           std::chrono::milliseconds timeout = std::chrono::minutes(2));

}  // namespace switchyard::agent
