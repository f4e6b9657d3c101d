#include "composer/api/tenant_redaction.h"

#include "composer/model/access.h"

namespace switchyard {

namespace {

bool foreignTo(const Caller& caller, const PoolView* view, const std::string& systemId) {
  if (caller.role != Role::kTenant || systemId.empty()) return false;
  const auto system = view ? view->systems.find(systemId) : nullptr;
  return !system || !maySee(caller, system->tenant);
}

}  // namespace

void redactForCaller(const Caller& caller, const PoolView* view, const DeviceView& d, v1::Device& device) {
  if (d.assignment.allocation == DeviceAllocation::kFree || !foreignTo(caller, view, d.systemId.empty() ? d.assignment.owner : d.systemId)) return;
  device.clear_system_id();
  device.clear_host_id();
  device.clear_owner();
  device.clear_upstream_port_id();
}

void redactForCaller(const Caller& caller, const PoolView* view, const HostView& h, v1::Host& host) {
  if (foreignTo(caller, view, h.systemId)) host.clear_system_id();
}

}  // namespace switchyard
