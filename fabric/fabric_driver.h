// The contract every switch manager implements (simulated, Redfish, CXL FM-API, vendor SDKs).
// tests/contract/fabric_driver_contract.cpp holds every driver to it.
//
// Semantics:
//  - bindAll(set) routes each device d of the set into the partition of its host upstream port u, in one
//    call: a Redfish zone PATCH or a Switchtec partition update changes many ports at once, so a compose
//    costs one switch round trip, not one per device. Idempotent: binding d to the u it is already bound
//    to succeeds. Binding d while it is bound to another port fails with kFailedPrecondition; it never
//    silently rebinds. A set naming one device twice is kInvalidArgument.
//  - unbindAll(set) is idempotent: unbinding a device that is not bound succeeds. Unbinding d from u
//    while it is bound to another port fails with kFailedPrecondition.
//  - A call that fails with kNotFound, kInvalidArgument or kFailedPrecondition changed nothing (the set
//    is checked whole before anything is applied). Any other failure may have applied all, some or none
//    of the set: kDeadlineExceeded in particular means the outcome is unknown. changedNothing() says which.
//  - Every call honours its CallOptions::timeout: when the switch has not answered by then, the call
//    returns kDeadlineExceeded (outcome unknown: the switch may still apply it). Repeating the same
//    call is how a caller converges, since binds and unbinds are idempotent.
//  - pollEvents() fails (kUnavailable, ...) when the switch's event feed cannot be read; an empty list
//    means nothing happened, never "could not ask".
//  - Every method may be called from several threads at once; calls for different devices must not
//    wait for each other longer than the switch itself makes them.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "composer/model/call_options.h"
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

// True when a failed switch call is known to have changed nothing (see the contract above).
[[nodiscard]] inline bool changedNothing(Code code) {
  return code == Code::kNotFound || code == Code::kInvalidArgument || code == Code::kFailedPrecondition;
}

class FabricDriver {
 public:
  virtual ~FabricDriver() = default;

  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual Result<Topology> discover() = 0;
  // Overrides repeat the default argument (`= {}`), so that calls through either type read the same.
  [[nodiscard]] virtual Result<void> bindAll(std::span<const Binding> bindings, const CallOptions& options = {}) = 0;
  [[nodiscard]] virtual Result<void> unbindAll(std::span<const Binding> bindings, const CallOptions& options = {}) = 0;
  // One binding: a set of one.
  [[nodiscard]] Result<void> bind(const DeviceId& device, const PortId& upstreamPort) {
    const Binding b{device, upstreamPort};
    return bindAll({&b, 1});
  }
  [[nodiscard]] Result<void> unbind(const DeviceId& device, const PortId& upstreamPort) {
    const Binding b{device, upstreamPort};
    return unbindAll({&b, 1});
  }
  [[nodiscard]] virtual Result<std::vector<Binding>> readBindings(const CallOptions& options = {}) = 0;
  // The bindings of these host upstream ports only: what a verify after a bind needs. A driver whose switch
  // can show part of its table for less than the whole overrides it; the default reads the whole table
  // and keeps those ports' rows.
  [[nodiscard]] virtual Result<std::vector<Binding>> readBindingsOf(std::span<const PortId> upstreamPorts, const CallOptions& options = {}) {
    SY_ASSIGN(auto all, readBindings(options));
    std::erase_if(all, [&](const Binding& b) { return std::find(upstreamPorts.begin(), upstreamPorts.end(), b.upstreamPortId) == upstreamPorts.end(); });
    return all;
  }
  // Health changes and link events since the last successful call, oldest first. Events are not lost
  // when a call fails: the next one that succeeds returns them.
  [[nodiscard]] virtual Result<std::vector<FabricEvent>> pollEvents() = 0;
};

}  // namespace switchyard
