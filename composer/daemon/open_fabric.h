// The switch driver yardd's flags ask for: the simulated switch, a fabric manager's Redfish service, a
// Switchtec PAX fabric, or one of those per --domain under a MultiFabric.
#pragma once

#include <memory>
#include <vector>

#include "composer/daemon/daemon_options.h"
#include "composer/model/clock.h"
#include "fabric/fabric_driver.h"
#include "fabric/simulated_fabric.h"

namespace switchyard {

struct OpenedFabric {
  std::unique_ptr<FabricDriver> driver;
  std::vector<SimulatedFabric*> simulated;  // the simulated switches among them, for the simulated hosts
};

[[nodiscard]] Result<OpenedFabric> openFabric(const DaemonOptions& o, Clock& clock);

}  // namespace switchyard
