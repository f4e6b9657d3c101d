// `yardctl idle`: attached GPUs nothing has used for a while, whose they are, what the idle stretch has
// cost in GPU-hours, and when the system's reclaim policy takes them back.
#pragma once

#include <functional>
#include <ostream>

#include "cli/output.h"
#include "switchyard/v1/switchyard.grpc.pb.h"

namespace CLI {
class App;
}

namespace yardctl {

// Runs ListIdle; returns yardctl's exit code (the caller prints errors).
using ListIdleCall = std::function<int(const switchyard::v1::ListIdleRequest&, switchyard::v1::ListIdleResponse&)>;

void addIdleCommand(CLI::App& app, ListIdleCall call, std::function<Format()> format, int& rc);

void printIdle(const switchyard::v1::ListIdleResponse& r, std::ostream& out);

}  // namespace yardctl
