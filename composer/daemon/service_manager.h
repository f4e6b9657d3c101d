// The service manager's view of yardd (systemd's Type=notify: READY, STATUS, RELOADING, STOPPING); a no-op when
// yardd was not started by systemd.
#pragma once

#include <systemd/sd-daemon.h>

#include <string>

namespace switchyard {

inline void notifyServiceManager(const std::string& state) { sd_notify(0, state.c_str()); }

}  // namespace switchyard
