// What a tenant may not learn from a pool-wide listing: which system, operation or host holds another tenant's
// device, or which system holds a host. The device or host is shown taken, without them.
#pragma once

#include "composer/engine/engine_client.h"
#include "switchyard/v1/switchyard.pb.h"

namespace switchyard {

// `view` answers whose system an id is (null: none is known, so any system is foreign to a tenant).
void redactForCaller(const Caller& caller, const PoolView* view, const DeviceView& d, v1::Device& device);
void redactForCaller(const Caller& caller, const PoolView* view, const HostView& h, v1::Host& host);

}  // namespace switchyard
