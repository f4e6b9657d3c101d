// `yardctl devices release DEV [--unbind]`: an operator puts a quarantined device back in the pool.
#pragma once

#include <functional>

#include "cli/output.h"
#include "switchyard/v1/switchyard.grpc.pb.h"

namespace CLI {
class App;
}

namespace yardctl {

// `devices`: the `yardctl devices` command the subcommand goes under; `call` sends the request and returns
// yardctl's exit code (the caller prints errors).
void addReleaseCommand(CLI::App& devices, std::function<int(const switchyard::v1::ReleaseDeviceRequest&, switchyard::v1::Device&)> call,
                       std::function<Format()> format, int& rc);

}  // namespace yardctl
