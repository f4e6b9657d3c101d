// A FabricDriver for switches managed through a Redfish Fabric (a PCIe or CXL fabric manager that
// exposes /redfish/v1/Fabrics/<id>): discovers switches, ports and endpoints, and binds by zoning.
//
// The model (../shared/design/redfish-essentials.md): a host is an initiator endpoint (its id is the
// ComputerSystem it links to), a device is a target endpoint, and "device D is bound to host H" is a zone
// of endpoints {H's initiator, D, ...}. The driver keeps one ZoneOfEndpoints per host initiator and
// changes it with one PATCH (or a POST creating it, a DELETE when its last device leaves) per host in a
// call, so binding N devices to one host is one zone update, not N calls.
//
// A zone names the initiator, not the switch port, so a host whose initiator has several upstream
// ports on the fabric is shown with the first (the others carry the same zone). Every request carries
// the call's deadline; zone changes use If-Match with the zone's ETag.
//
// Round trips: the driver keeps the zones as it last read or changed them (URI, ETag, endpoints), so a
// bind or unbind is one PATCH, POST or DELETE per host, sent together; only a 412 (someone else changed the
// zone) makes it read the zones again and retry once. A verify (readBindingsOf) reads only the VCSs of the
// hosts asked about (their vPPBs in one GET each where the service offers $expand) or, on a fabric without
// VCSs, only those hosts' zones. Health polling reads every target endpoint at once.
//
// Threads: no lock is held across a request. Calls that touch different hosts and devices run at once;
// a call waits only for another one in flight on one of its hosts' zones or devices.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/fabric_driver.h"
#include "net/redfish_client.h"

namespace switchyard {

struct RedfishFabricOptions {
  std::string url;             // http(s)://HOST[:PORT] of the Redfish service; https verifies its certificate
  std::string fabric = "CXL";  // the Fabric's id under /redfish/v1/Fabrics
  std::string user;
  std::string password;
  Duration discoveryTimeout = std::chrono::seconds(30);
  std::string caFile;  // https: trust this CA (PEM) instead of the system's store
};

class RedfishFabric final : public FabricDriver {
 public:
  // Discovers the fabric once: a service that cannot be read, or a fabric that is not there, is an error.
  // Logs in with a Redfish session when the service has a SessionService (else Basic on every request).
  [[nodiscard]] static Result<std::unique_ptr<RedfishFabric>> connect(const RedfishFabricOptions& options);
  ~RedfishFabric() override;  // logs out

  [[nodiscard]] std::string_view name() const override { return "redfish"; }
  [[nodiscard]] Result<Topology> discover() override;
  [[nodiscard]] Result<void> bindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<void> unbindAll(std::span<const Binding> bindings, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<Binding>> readBindings(const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<Binding>> readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options = {}) override;
  [[nodiscard]] Result<std::vector<FabricEvent>> pollEvents() override;

  // Zone changes (POST, PATCH, DELETE) sent so far: what "one zone update per host" is measured by.
  [[nodiscard]] std::uint64_t zoneUpdates() const;
  // Whether the service expands collections ($expand=.), so that a collection costs one round trip.
  [[nodiscard]] bool expands() const { return !expandQuery_.empty(); }
  // TCP connections opened so far: keep-alive makes this far fewer than the requests.
  [[nodiscard]] std::uint64_t connectionsOpened() const { return client_.connectionsOpened() + pollClient_.connectionsOpened(); }

 private:
  // What discovery learned, besides the Topology: how ids map to Redfish URIs. Immutable once built.
  struct Inventory {
    Topology topology;
    std::unordered_map<DeviceId, std::string> targetUri;     // device -> its target endpoint
    std::unordered_map<std::string, DeviceId> deviceOfTarget;
    std::unordered_map<PortId, std::string> initiatorOfPort;  // host upstream port -> its host's initiator
    std::unordered_map<std::string, std::vector<PortId>> portsOfInitiator;
    std::unordered_map<PortId, SwitchId> switchOfPort;
    std::unordered_map<SwitchId, int> fabricOfSwitch;
    std::unordered_map<PortId, DeviceId> deviceAtPort;        // downstream port -> the device behind it
    std::unordered_map<DeviceId, std::size_t> deviceIndex;    // device -> its place in topology.devices
    // The switches' VirtualCXLSwitches (CXL) behind a host's upstream port: where the switch says what it
    // has bound. Empty for a fabric without them, whose zones are its bindings.
    struct Vcs {
      std::string initiator;  // the host behind its upstream port
      std::string vppbs;      // its VPPBs collection
    };
    std::vector<Vcs> vcss;
  };
  using InventoryPtr = std::shared_ptr<const Inventory>;
  struct Zone {
    std::string uri;
    std::string etag;
    std::vector<std::string> endpoints;
  };
  // The zones that hold one of our initiators (one zone per host), and what they bind.
  struct ZoneTable {
    std::map<std::string, Zone> zones;  // initiator -> its zone
    std::unordered_map<DeviceId, std::pair<std::string, PortId>> boundTo;  // device -> initiator, host port
    void put(const Inventory& inventory, const std::string& initiator, Zone zone);
    void erase(const std::string& initiator);
  };
  class Claim;  // the hosts and devices a zone change holds while it is in flight

  RedfishFabric(RedfishFabricOptions options, const redfish::Endpoint& endpoint);
  [[nodiscard]] InventoryPtr inventory() const;
  [[nodiscard]] Result<Inventory> readInventory(redfish::Deadline deadline) const;
  [[nodiscard]] Result<ZoneTable> readZones(const Inventory& inventory, redfish::Deadline deadline) const;
  // Reads the zones and keeps them, except those of hosts another call holds (`mine`: this call's).
  [[nodiscard]] Result<ZoneTable> refreshZones(const InventoryPtr& inventory, const std::set<std::string>& mine, redfish::Deadline deadline);
  // What the switches have bound, read from these VCSs (their upstream port: a host) and their vPPBs (each
  // bound one to a downstream port: a device); the host port is the one its zones would use (portFor).
  [[nodiscard]] Result<std::vector<Binding>> readVcsBindings(const Inventory& inventory, const std::vector<const Inventory::Vcs*>& vcss,
                                                             redfish::Deadline deadline) const;
  // A collection's members, read whole: one GET with $expand where the service offers it, else the
  // collection and then every member at once. Each member with its own URI in "@odata.id".
  [[nodiscard]] Result<std::vector<std::vector<nlohmann::json>>> readCollections(const redfish::Client& client, const std::vector<std::string>& uris,
                                                                                 redfish::Deadline deadline) const;
  // The host port a target in a zone with `initiator` is bound through.
  [[nodiscard]] static std::optional<PortId> portFor(const Inventory& inventory, const std::string& initiator, const DeviceId& device);
  [[nodiscard]] static Result<void> checkSet(const Inventory& inventory, std::span<const Binding> set, bool binding);
  [[nodiscard]] Result<void> changeSet(std::span<const Binding> set, bool binding, const CallOptions& options);

  RedfishFabricOptions options_;
  redfish::Client client_;      // discovery, zone changes, binding reads
  redfish::Client pollClient_;  // health polls, on connections of their own: a poll never makes a bind wait for one
  std::string fabricUri_;
  std::string sessionUri_;  // empty: no session (Basic)
  std::string expandQuery_;  // "?$expand=..." when the service expands a collection's members; empty when not
  mutable std::mutex mutex_;  // guards everything below; never held across a request
  std::condition_variable claimsFreed_;
  InventoryPtr inventory_;
  bool readByConnect_ = false;  // inventory_ is what connect() just read: the first discover() returns it
  ZoneTable zones_;
  bool zonesKnown_ = false;  // zones_ is what the service had (read, or changed by us since)
  std::set<DeviceId> claimedDevices_;
  std::set<std::string> claimedInitiators_;
  std::unordered_map<DeviceId, DeviceHealth> lastHealth_;
  std::uint64_t zoneUpdates_ = 0;
};

}  // namespace switchyard
