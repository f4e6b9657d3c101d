// A FabricDriver whose "switch" is QEMU's PCIe hot-plug (ADR 0029): hosts are VMs reached by their QMP
// sockets, bind slots are hot-plug ports of each VM, and the pool's devices are added to a VM with
// `device_add` and taken out with `device_del`, which the guest's kernel completes (pciehp) before QEMU
// reports DEVICE_DELETED. The same driver serves a lab of real kernels (emulated NVMe drives standing in
// for GPUs) and a hypervisor composing passthrough devices (`vfio-pci`) into tenant VMs (docs/qemu.md).
//
// Mapping:
//   - one Switch "<prefix>qemu0"; each VM a Host (its name) with one upstream Port "<prefix>qemu0-<vm>" and
//     maxDevices = its slots;
//   - each pool device a Device (its id) behind a downstream Port "<prefix>qemu0-pool-<id>";
//   - "device D bound to host H" is: VM H has a QEMU device with id "sy-D" (its QOM tree is the truth, read
//     with qom-list; a device whose unplug the guest has not finished is still bound).
// Every call opens a QMP session per VM it touches and closes it after (QEMU serves one QMP client at a
// time; none is held idle, so an operator's `socat` or a script can use the socket between calls). Calls
// touching different VMs run in parallel; those touching one VM are serialized by it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fabric/fabric_driver.h"
#include "fabric/qemu/qemu_topology.h"

namespace switchyard {

struct QemuOptions {
  qemu::QemuPool pool;
  std::string prefix;  // prepended to the switch's and ports' ids (a domain's name and '-' when several fabrics run)
  // How long pollEvents() waits for one VM's QMP (a VM that does not answer is a link down on its upstream
  // port; one that answers again, a link up).
  Duration probeTimeout = std::chrono::seconds(2);
};

class QemuFabric final : public FabricDriver {
 public:
  // Talks to no VM yet: a VM that is down is not an error here (the first pollEvents() reports it as a link
  // down on its upstream port, and calls that need it fail saying so).
  [[nodiscard]] static Result<std::unique_ptr<QemuFabric>> open(QemuOptions options);

  [[nodiscard]] std::string_view name() const override { return "qemu"; }
  [[nodiscard]] Result<Topology> discover() override;
  [[nodiscard]] Result<void> bindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<void> unbindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<Binding>> readBindings(const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<Binding>> readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<FabricEvent>> pollEvents() override;

 private:
  struct Vm {
    qemu::VmHost host;
    PortId port;
    std::mutex mutex;  // one QMP session at a time, from this driver
    // QEMU ids whose device_del this driver asked for and saw not complete: QEMU cannot cancel an unplug,
    // so such a device leaves once the guest lets go, whatever is asked meanwhile (guarded by mutex).
    std::set<std::string> unplugPending;
  };
  explicit QemuFabric(QemuOptions options);

  [[nodiscard]] Result<void> checkNames(std::span<const Binding> bindings) const;
  [[nodiscard]] std::vector<std::size_t> allVms() const;
  // The pool devices each VM holds now: device id -> VM index.
  [[nodiscard]] Result<std::map<DeviceId, std::size_t>> locate(std::span<const std::size_t> vms, std::chrono::steady_clock::time_point deadline);
  [[nodiscard]] Result<void> bindOn(std::size_t vm, const std::vector<const qemu::PoolDevice*>& devices, std::chrono::steady_clock::time_point deadline);
  [[nodiscard]] Result<void> unbindOn(std::size_t vm, const std::vector<const qemu::PoolDevice*>& devices, std::chrono::steady_clock::time_point deadline);
  [[nodiscard]] Result<std::vector<Binding>> read(std::span<const std::size_t> vms, const CallOptions& options);
  // Runs `apply` for each VM's devices in VM order; a failure after one VM was changed is never "changed
  // nothing" (kUnavailable).
  [[nodiscard]] Result<void> perVm(const std::map<std::size_t, std::vector<const qemu::PoolDevice*>>& work,
                                   const std::function<Result<void>(std::size_t, const std::vector<const qemu::PoolDevice*>&)>& apply);

  QemuOptions options_;
  SwitchId switchId_;
  std::vector<std::unique_ptr<Vm>> vms_;
  std::map<PortId, std::size_t> vmOfPort_;
  std::map<DeviceId, const qemu::PoolDevice*> devices_;
  std::map<std::string, DeviceId> deviceOfQemuId_;
  std::mutex eventsMutex_;
  std::vector<bool> reachable_;  // per VM, as the last poll (or open) found it
};

}  // namespace switchyard
