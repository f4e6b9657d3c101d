// The limits of one call to something outside yardd that may take long: a switch (FabricDriver) or a
// host's side (HostAgents). Both contracts honour it.
#pragma once

#include <chrono>

#include "composer/model/clock.h"

namespace switchyard {

struct CallOptions {
  Duration timeout = std::chrono::seconds(60);  // give up (kDeadlineExceeded) when no answer came by then
};

}  // namespace switchyard
