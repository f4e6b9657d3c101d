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
// the call's deadline; zone changes use If-Match with the zone's ETag, and this driver changes the zone
// table one call at a time, so two of its calls never both bind one device.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/fabric_driver.h"
#include "fabric/redfish/redfish_client.h"

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
  [[nodiscard]] Result<std::vector<FabricEvent>> pollEvents() override;

  // Zone changes (POST, PATCH, DELETE) sent so far: what "one zone update per host" is measured by.
  [[nodiscard]] std::uint64_t zoneUpdates() const;

 private:
  // What discovery learned, besides the Topology: how ids map to Redfish URIs.
  struct Inventory {
    Topology topology;
    std::unordered_map<DeviceId, std::string> targetUri;     // device -> its target endpoint
    std::unordered_map<std::string, DeviceId> deviceOfTarget;
    std::unordered_map<PortId, std::string> initiatorOfPort;  // host upstream port -> its host's initiator
    std::unordered_map<std::string, std::vector<PortId>> portsOfInitiator;
    std::unordered_map<PortId, SwitchId> switchOfPort;
    std::unordered_map<SwitchId, int> fabricOfSwitch;
    std::unordered_map<PortId, DeviceId> deviceAtPort;        // downstream port -> the device behind it
    // The switches' VirtualCXLSwitch collections (CXL): where the switch says what it has bound. Empty
    // for a fabric without them, whose zones are its bindings.
    std::vector<std::string> vcsCollections;
  };
  struct Zone {
    std::string uri;
    std::string etag;
    std::vector<std::string> endpoints;
    std::string initiator;  // empty when it holds none (not one of ours)
  };
  struct ZoneTable {
    std::vector<Zone> zones;
    std::unordered_map<DeviceId, std::pair<std::size_t, PortId>> boundTo;  // device -> zone index, host port
  };

  RedfishFabric(RedfishFabricOptions options, redfish::Client client);
  [[nodiscard]] Result<Inventory> readInventory(redfish::Deadline deadline) const;
  [[nodiscard]] Result<ZoneTable> readZones(redfish::Deadline deadline) const;
  // What the switches have bound, read from each VCS (its upstream port: a host) and its vPPBs (each bound
  // one to a downstream port: a device); the host port is the one its zones would use (portFor).
  [[nodiscard]] Result<std::vector<Binding>> readVcsBindings(redfish::Deadline deadline) const;
  // The host port a target in a zone with `initiator` is bound through.
  [[nodiscard]] std::optional<PortId> portFor(const std::string& initiator, const DeviceId& device) const;
  [[nodiscard]] Result<void> checkSet(std::span<const Binding> set, bool binding) const;
  [[nodiscard]] Result<void> changeSet(std::span<const Binding> set, bool binding, const CallOptions& options);

  RedfishFabricOptions options_;
  redfish::Client client_;
  std::string fabricUri_;
  std::string sessionUri_;  // empty: no session (Basic)
  mutable std::mutex mutex_;  // one zone change at a time; guards everything below
  Inventory inventory_;
  std::unordered_map<DeviceId, DeviceHealth> lastHealth_;
  std::uint64_t zoneUpdates_ = 0;
};

}  // namespace switchyard
