// What the fabric driver contract needs from a driver under test: the driver itself, the clock its calls
// take time on, and the faults its backend can be made to produce. The contract reads the inventory
// through the driver (discover) and picks its devices and ports from it, so a backend brings whatever
// inventory it has: the simulator a generated one, the Redfish driver its emulator's mockup.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "composer/model/clock.h"
#include "fabric/fabric_driver.h"

namespace switchyard::testing {

class DriverBackend {
 public:
  virtual ~DriverBackend() = default;

  // Why this backend cannot run here (its reference data is missing, say); empty when it can.
  [[nodiscard]] virtual std::string unavailable() const { return {}; }
  [[nodiscard]] virtual FabricDriver& driver() = 0;
  // What the driver's calls wait on. A ManualClock makes latency and timeouts exact.
  [[nodiscard]] virtual Clock& clock() = 0;

  // Faults. Each returns false when this backend cannot produce it; the case that needs it is skipped
  // (and says so), never passed.
  // Every switch answer takes `latency` from now on.
  [[nodiscard]] virtual bool setLatency(Duration latency) = 0;
  // The next `polls` calls to pollEvents cannot read the event feed.
  [[nodiscard]] virtual bool breakEventFeed(int polls) = 0;
  // The switch's monitor reports a health change for `device`.
  [[nodiscard]] virtual bool raiseHealth(const DeviceId& device, DeviceHealth health) = 0;
};

struct DriverFactory {
  std::string name;
  std::function<std::unique_ptr<DriverBackend>()> make;
};

inline std::ostream& operator<<(std::ostream& os, const DriverFactory& f) { return os << f.name; }

}  // namespace switchyard::testing
