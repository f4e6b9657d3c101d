// A FabricDriver for Microchip Switchtec PAX fabrics, speaking the management protocol itself (MRPC over
// the management Ethernet port or the kernel's /dev/switchtecN) to the PAX's embedded fabric manager (GFMS).
// ADR 0021 maps GFMS concepts onto ours:
//   - each PAX chip is a Switch ("<prefix>pax<N>"); its physical ports are Ports "<prefix>pax<N>-p<P>";
//   - a host virtual domain (HVD: a host's upstream port with its logical downstream ports) is a Host with
//     one upstream port; its id is the operator's name for it (SwitchtecOptions::hostNames) or
//     "<prefix>pax<N>-host<P>";
//   - an endpoint port with a device is a Device "<prefix>pax<N>-ep<P>" (all of its functions, by PDFID);
//   - fabric ports are inter-switch links, their peers read from the GFMS database;
//   - "device D bound to host H" is: D's functions bound to one of H's logical ports (function j of D in
//     slot j of that logical port), which is what the GFMS database reports.
// Binding a set sends one GFMS bind per device, all at once over a pool of channels, choosing free logical
// ports from the database as last read (kept up to date by this driver's own changes); a refusal that a
// stale view could explain (port or device already bound) re-reads the database and tries once more.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/fabric_driver.h"
#include "fabric/switchtec/gfms_client.h"
#include "fabric/switchtec/mrpc_channel.h"

namespace switchyard {

struct SwitchtecOptions {
  std::string endpoint;  // HOST[:PORT][@INSTANCE] (management Ethernet, port 54545) or /dev/switchtecN
  std::string prefix;    // prepended to every id ("" by default; a domain's name when several fabrics are run)
  // Operator names for hosts: "pax0-p3" (the PAX id and the host's physical port) -> "node17".
  std::map<std::string, std::string> hostNames;
  std::size_t channels = 16;  // concurrent MRPC channels (binds for different hosts run at once)
  Duration discoveryTimeout = std::chrono::seconds(30);
};

class SwitchtecFabric final : public FabricDriver {
 public:
  // Connects and discovers once: an endpoint that does not answer, or a chip that is not a PAX, is an error.
  [[nodiscard]] static Result<std::unique_ptr<SwitchtecFabric>> connect(const SwitchtecOptions& options);

  [[nodiscard]] std::string_view name() const override { return "switchtec"; }
  [[nodiscard]] Result<Topology> discover() override;
  [[nodiscard]] Result<void> bindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<void> unbindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<Binding>> readBindings(const CallOptions& options = {}) override;
  // Each host's HVD dump, at once: three commands' round trips however large the fabric.
  [[nodiscard]] Result<std::vector<Binding>> readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<FabricEvent>> pollEvents() override;

  // MRPC commands sent so far (what "commands per compose" is measured by).
  [[nodiscard]] std::uint64_t commandsSent() const { return pool_.commandsSent(); }

 private:
  struct HostPort {
    std::uint8_t pax = 0, physPort = 0;
    std::uint16_t logicalPorts = 0;
    std::uint8_t hvdInstance = 0;  // what the HVD dump is asked by
  };
  struct DeviceRef {
    std::uint8_t pax = 0, physPort = 0;
    std::vector<std::uint16_t> pdfids;
  };
  // What the GFMS database says is bound, as this driver last read it (plus its own changes since).
  struct Table {
    std::unordered_map<PortId, std::vector<std::optional<DeviceId>>> slots;  // host port -> logical port -> device
    std::unordered_map<DeviceId, std::pair<PortId, std::uint16_t>> boundTo;   // device -> host port, logical port
    bool stale = true;
  };
  struct Fabric {  // what discovery learned
    Topology topology;
    std::vector<std::uint8_t> paxIds;
    std::unordered_map<PortId, HostPort> hostPorts;
    std::unordered_map<DeviceId, DeviceRef> devices;
    std::unordered_map<std::uint16_t, DeviceId> deviceOfPdfid;
    std::unordered_map<std::uint16_t, DeviceId> deviceAt;  // (pax << 8 | port) -> device
  };

  SwitchtecFabric(SwitchtecOptions options, switchtec::ChipIdentity local);
  [[nodiscard]] Result<Fabric> readFabric(switchtec::Deadline deadline);
  // Re-reads every PAX's database into a fresh table.
  [[nodiscard]] Result<Table> readTable(const Fabric& fabric, switchtec::Deadline deadline);
  [[nodiscard]] Result<void> refreshIfStale(switchtec::Deadline deadline);
  [[nodiscard]] Result<void> checkNames(std::span<const Binding> bindings) const;
  [[nodiscard]] Result<void> bindOnce(std::span<const Binding> bindings, switchtec::Deadline deadline, bool& staleRefusal);
  [[nodiscard]] std::string portName(std::uint8_t pax, std::uint8_t port) const;

  SwitchtecOptions options_;
  switchtec::ChipIdentity local_;
  switchtec::MrpcPool pool_;
  std::mutex mutex_;  // guards fabric_, table_, pendingEvents_; never held across I/O
  Fabric fabric_;
  Table table_;
  std::vector<FabricEvent> pendingEvents_;
  std::mutex pollMutex_;  // one event poll at a time
};

}  // namespace switchyard
