// The limits of one call to something outside yardd that may take long: a switch (FabricDriver) or a
// host's side (HostAgents). Both contracts honour it.
#pragma once

#include <chrono>

#include "composer/model/clock.h"

namespace switchyard {

struct CallOptions {
  Duration timeout = std::chrono::seconds(60);  // give up (kDeadlineExceeded) when no answer came by then
};

// The moment `timeout` from now on the steady clock: what a driver's I/O waits until.
[[nodiscard]] inline std::chrono::steady_clock::time_point deadlineAfter(Duration timeout) {
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
}

}  // namespace switchyard
