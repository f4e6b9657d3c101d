// Laying a machine template (composer/model/machine_template.h) under a compose request. Pure.
//
// What the request sets itself replaces the template's part:
//  - GPUs: a count, devices, MIG profiles or a share replace the template's count; a model, a minimum memory
//    or a peer-to-peer mode the request names replaces that constraint alone;
//  - pooled memory when the request asks for some; drives and NICs kind by kind (a request's --nic 2
//    replaces the template's NICs and keeps its drives);
//  - labels are merged, the request's winning; the system carries switchyard.io/template=NAME;
//  - priority class and lease when the request names them.
#pragma once

#include <vector>

#include "composer/engine/engine_requests.h"
#include "composer/model/machine_template.h"

namespace switchyard {

// The request the template named by `request.machineTemplate` makes (machineTemplate cleared); kNotFound,
// naming the known templates, when there is none of that name.
[[nodiscard]] Result<ComposeRequest> applyTemplate(const std::vector<MachineTemplate>& templates, const ComposeRequest& request);

}  // namespace switchyard
