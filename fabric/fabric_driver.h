// The contract every switch manager implements (simulated, Redfish, CXL FM-API, vendor SDKs).
// tests/contract/fabric_driver_contract.cpp holds every driver to it.
//
// Semantics:
//  - bind(d, u) routes device d into the partition of host upstream port u. Idempotent: binding d to
//    the u it is already bound to succeeds. Binding d while it is bound to another port fails with
//    kFailedPrecondition and changes nothing; it never silently rebinds.
//  - unbind(d, u) is idempotent: unbinding a device that is not bound succeeds. Unbinding d from u
//    while it is bound to another port fails with kFailedPrecondition.
//  - kDeadlineExceeded means the outcome is unknown: the switch may or may not have applied it.
//  - Every method may be called from several threads at once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "composer/model/composition.h"
#include "composer/model/error.h"
#include "composer/model/topology.h"

namespace switchyard {

struct FabricEvent {
  std::string type;     // "device.health", "link.down", ...
  std::string subject;  // device or port id
  std::string message;
  DeviceHealth health = DeviceHealth::kOk;  // the new health, for "device.health"
};

class FabricDriver {
 public:
  virtual ~FabricDriver() = default;

  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual Result<Topology> discover() = 0;
  [[nodiscard]] virtual Result<void> bind(const DeviceId& device, const PortId& upstreamPort) = 0;
  [[nodiscard]] virtual Result<void> unbind(const DeviceId& device, const PortId& upstreamPort) = 0;
  [[nodiscard]] virtual Result<std::vector<Binding>> readBindings() = 0;
  // Health changes and link events since the last call, oldest first.
  [[nodiscard]] virtual std::vector<FabricEvent> pollEvents() = 0;
};

}  // namespace switchyard
