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
// Calls go through one worker per switch (fm_worker.h): the calls waiting are run as one batch on one FM
// session (connection), their commands pipelined, and the session is closed after each batch: switches
// serve few fabric managers at once (cse one), so another FM (jack, a vendor tool) can query between
// batches. A batch re-reads the VCSs first, so a change made by another FM is seen.
#pragma once

#include <functional>
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
#include "fabric/cxl/fm_worker.h"
#include "fabric/fabric_driver.h"

namespace switchyard {

struct CxlOptions {
  std::string endpoint;  // HOST[:PORT] of the switch's FM endpoint (MCTP over TCP; cse's default port 2508)
  std::string prefix;    // prepended to every id ("" by default; a domain's name and '-' when several fabrics run)
  // Operator names for hosts: "vcs0" -> "node17".
  std::map<std::string, std::string> hostNames;
  cxl::Dialect dialect = cxl::Dialect::spec();
  Duration discoveryTimeout = std::chrono::seconds(30);
  // The longest wait for one reply (or a connection) within a call's deadline: a lost request fails its
  // batch after this, and the next call reconnects.
  Duration replyTimeout = cxl::FmClient::kDefaultReplyTimeout;
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
  // FM sessions opened so far: each runs one batch of the calls that were waiting.
  [[nodiscard]] std::uint64_t sessions() const;
  // Batches run again on a new session because a reply never came.
  [[nodiscard]] std::uint64_t batchReruns() const;

 private:
  struct Target {  // where a device is on the switch
    std::uint8_t port = 0;
    std::uint16_t ld = cxl::kNoLd;
  };
  struct Fabric {  // what discovery learned
    Topology topology;
    std::vector<cxl::PortState> portStates;  // the active physical ports, as discovery read them
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
    std::size_t job = 0;  // the call of its batch it belongs to
  };
  // The switch's binding state while a batch is planned: as read, then with each planned change applied.
  struct PlanState {
    std::map<DeviceId, Slot> boundAt;
    std::map<std::uint8_t, std::vector<bool>> taken;  // vcs -> vPPBs in use (bound, in progress or planned)
  };
  // The calls the worker batches (fabric/cxl/cxl_batch.cpp).
  struct ChangeJob : cxl::FmWorker::Job {
    bool bind = true;
    std::vector<Binding> bindings;
  };
  struct ReadJob : cxl::FmWorker::Job {
    std::vector<std::uint8_t> vcss;
    std::vector<Binding> bindings;  // the answer
  };
  struct ExclusiveJob : cxl::FmWorker::Job {
    std::function<Result<void>(cxl::FmClient&, cxl::Deadline)> work;
  };

  explicit CxlFabric(CxlOptions options);
  [[nodiscard]] std::string portName(std::uint8_t port) const;
  [[nodiscard]] Result<Fabric> readFabric(cxl::FmClient& client, cxl::Deadline deadline);
  [[nodiscard]] Result<void> checkNames(std::span<const Binding> bindings) const;
  [[nodiscard]] Result<void> change(std::span<const Binding> bindings, bool bind, cxl::Deadline deadline);
  // Runs `work` alone on a session of its own; whatever it produces lives in what it captured (shared).
  [[nodiscard]] Result<void> exclusive(cxl::Deadline deadline, std::function<Result<void>(cxl::FmClient&, cxl::Deadline)> work);

  // ---- cxl_batch.cpp: what the worker runs ----
  void runBatch(cxl::FmClient& client, std::span<const std::shared_ptr<cxl::FmWorker::Job>> jobs, cxl::Deadline deadline);
  // A call's binds (or unbinds), checked whole against `state` and applied to it when they all pass.
  [[nodiscard]] Result<std::vector<Change>> plan(const ChangeJob& job, std::size_t index, PlanState& state) const;
  // Sends the changes, pipelined, and reads their VCSs until each shows; each change's error, if it has one.
  // `broken`: the session failed (the switch stopped answering), so nothing more is sent on it.
  [[nodiscard]] std::vector<std::optional<Error>> apply(cxl::FmClient& client, const std::vector<Change>& changes, bool bind, cxl::Deadline deadline,
                                                        bool& broken);
  // The device bound at each bound vPPB of these VCSs.
  [[nodiscard]] std::vector<std::pair<Slot, DeviceId>> boundDevices(const std::vector<cxl::VirtualSwitch>& vcss) const;

  CxlOptions options_;
  std::string switchId_;
  mutable std::mutex mutex_;  // guards fabric_, lastPorts_, pending_; never held across I/O
  Fabric fabric_;
  std::optional<std::vector<cxl::PortState>> lastPorts_;
  std::vector<FabricEvent> pending_;
  std::mutex pollMutex_;  // one event poll at a time
  std::unique_ptr<cxl::FmWorker> worker_;  // last: it runs batches on this object until it is gone
};

}  // namespace switchyard
