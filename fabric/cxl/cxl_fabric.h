// A FabricDriver for a CXL switch, speaking the Fabric Manager API itself (CXL 2.0+ section 7.6) over MCTP.
// ADR 0028 maps FM-API concepts onto ours:
//   - the switch is a Switch "<prefix>cxl0" of kind cxl; its physical ports are Ports "<prefix>cxl0-p<N>";
//   - a virtual CXL switch (VCS) is a Host: its upstream physical port is the host's upstream port, its vPPBs
//     are the host's bind slots (maxDevices); its id is the operator's name for it (CxlOptions::hostNames,
//     keyed "vcs<N>") or "<prefix>cxl0-vcs<N>";
//   - a downstream port with a PCIe or CXL type 1/2 device is a Device "<prefix>cxl0-ep<N>", its kind from the
//     class code read through the PPB's configuration space (5103h);
//   - a CXL type 3 single-logical device is a cxl-memory Device "<prefix>cxl0-ep<N>"; each logical device
//     of a multi-logical device (MLD) is a cxl-memory Device "<prefix>cxl0-ep<N>-ld<L>", its size from the
//     MLD's LD allocations (5401h, tunnelled through 5300h);
//   - "device D bound to host H" is: a vPPB of H's VCS bound to D's port (and, for an LD, to its LD id).
// Every call opens one FM session (connection) for its length and closes it, one at a time per switch:
// switches serve few fabric managers at once (cse one), so another FM (jack, a vendor tool) can query
// between yardd's calls. Binds re-read the VCSs they touch first, so a change made by another FM is seen.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/cxl/fm_api.h"
#include "fabric/cxl/fm_client.h"
#include "fabric/cxl/fm_transport.h"
#include "fabric/fabric_driver.h"

namespace switchyard {

struct CxlOptions {
  std::string endpoint;  // HOST[:PORT] of the switch's FM endpoint (MCTP over TCP; cse's default port 2508)
  std::string prefix;    // prepended to every id ("" by default; a domain's name and '-' when several fabrics run)
  // Operator names for hosts: "vcs0" -> "node17".
  std::map<std::string, std::string> hostNames;
  cxl::Dialect dialect = cxl::Dialect::spec();
  Duration discoveryTimeout = std::chrono::seconds(30);
  // How an unbind treats the host's link: the engine has the host let go of a device before it unbinds it,
  // so a managed hot-remove is what the host expects.
  cxl::UnbindOption unbindOption = cxl::UnbindOption::kManagedHotRemove;
  // Where the FM endpoint is reached; null: MCTP over TCP at `endpoint`.
  std::shared_ptr<cxl::FmEndpoint> transport;
};

class CxlFabric final : public FabricDriver {
 public:
  // Connects and discovers once: an endpoint that does not answer, or a switch that answers in another
  // dialect, is an error that says so.
  [[nodiscard]] static Result<std::unique_ptr<CxlFabric>> connect(CxlOptions options);

  [[nodiscard]] std::string_view name() const override { return "cxl"; }
  [[nodiscard]] Result<Topology> discover() override;
  [[nodiscard]] Result<void> bindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<void> unbindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<Binding>> readBindings(const CallOptions& options = {}) override;
  // The hosts' VCSs only, in one Get Virtual CXL Switch Info per 7 VCSs.
  [[nodiscard]] Result<std::vector<Binding>> readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options = {}) override;
  // The switch has no event log this driver reads (cse has none): events come from comparing each port's
  // state with the last poll's (the first poll with discovery's). A port whose link goes down takes its
  // devices' health to critical (and back to ok when it trains again); a port with no device, a host's
  // upstream port say, reports link.down and link.up.
  [[nodiscard]] Result<std::vector<FabricEvent>> pollEvents() override;

  // FM-API commands sent so far (what "commands per compose" is measured by).
  [[nodiscard]] std::uint64_t commandsSent() const;

 private:
  struct Target {  // where a device is on the switch
    std::uint8_t port = 0;
    std::uint16_t ld = cxl::kNoLd;
  };
  struct Fabric {  // what discovery learned
    Topology topology;
    std::vector<std::uint8_t> ports;  // active physical ports
    std::vector<cxl::PortState> portStates;  // as discovery read them
    std::unordered_map<PortId, std::uint8_t> vcsOfHostPort;
    std::unordered_map<std::uint8_t, PortId> hostPortOfVcs;
    std::unordered_map<DeviceId, Target> devices;
    std::map<std::pair<std::uint8_t, std::uint16_t>, DeviceId> deviceAt;  // (port, ld) -> device
  };
  // Where a device is bound, as the switch says.
  struct Slot {
    std::uint8_t vcs = 0, vppb = 0;
  };
  // One bind or unbind of a call: the vPPB, and the port (and LD) bound there.
  struct Change {
    Slot slot;
    Target target;
    DeviceId device;
  };

  explicit CxlFabric(CxlOptions options);
  [[nodiscard]] std::string portName(std::uint8_t port) const;
  // Runs `work` on a session opened for it, after any other call's session closed.
  template <typename Work>
  auto withSwitch(cxl::Deadline deadline, Work&& work) -> decltype(work(std::declval<cxl::FmClient&>()));
  [[nodiscard]] Result<Fabric> readFabric(cxl::FmClient& client, cxl::Deadline deadline);
  [[nodiscard]] Result<void> checkNames(std::span<const Binding> bindings) const;
  // What a set's binds (or unbinds) change, against the VCSs as just read: the whole set is checked
  // before anything is sent.
  [[nodiscard]] Result<std::vector<Change>> plan(std::span<const Binding> bindings, bool bind, const std::vector<cxl::VirtualSwitch>& vcss) const;
  [[nodiscard]] Result<void> change(std::span<const Binding> bindings, bool bind, cxl::Deadline deadline);
  // The device bound at each bound vPPB of these VCSs.
  [[nodiscard]] std::vector<std::pair<Slot, DeviceId>> boundDevices(const std::vector<cxl::VirtualSwitch>& vcss) const;

  CxlOptions options_;
  std::string switchId_;
  std::timed_mutex wire_;  // one FM session at a time
  std::atomic<std::uint64_t> commands_{0};
  mutable std::mutex mutex_;  // guards fabric_, lastPorts_, pending_; never held across I/O
  Fabric fabric_;
  std::optional<std::vector<cxl::PortState>> lastPorts_;
  std::vector<FabricEvent> pending_;
  std::mutex pollMutex_;  // one event poll at a time
};

}  // namespace switchyard
