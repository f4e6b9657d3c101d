#include "composer/engine/machine_templates.h"

#include <fmt/format.h>

#include <algorithm>

namespace switchyard {

Result<ComposeRequest> applyTemplate(const std::vector<MachineTemplate>& templates, const ComposeRequest& request) {
  const auto t = std::find_if(templates.begin(), templates.end(), [&](const MachineTemplate& m) { return m.name == request.machineTemplate; });
  if (t == templates.end()) {
    std::vector<std::string> names;
    for (const auto& m : templates) names.push_back(m.name);
    return fail(Code::kNotFound, fmt::format("no machine template '{}' ({}; see `yardctl templates`)", request.machineTemplate,
                                             names.empty() ? std::string("yardd has none") : fmt::format("known: {}", fmt::join(names, ", "))));
  }
  ComposeRequest out = request;
  out.machineTemplate.clear();
  PlacementRequest& p = out.placement;
  const bool gpusAsked = p.gpuCount > 0 || !p.devices.empty() || !p.gpuInstances.empty() || p.gpuShareMilli > 0;
  if (!gpusAsked) p.gpuCount = t->gpus;
  if (p.model.empty()) p.model = t->model;
  if (p.minMemoryGiB == 0) p.minMemoryGiB = t->minMemoryGiB;
  if (!request.peerToPeerAsked) p.peerToPeer = parsePeerToPeer(t->peerToPeer).value_or(PeerToPeer::kPreferred);
  if (p.pooledMemoryGiB == 0) p.pooledMemoryGiB = t->pooledMemoryGiB;
  for (const auto& e : t->endpoints)
    if (std::none_of(p.endpoints.begin(), p.endpoints.end(), [&](const EndpointDemand& asked) { return sameKind(asked, e); }))
      p.endpoints.push_back(e);
  out.labels = t->labels;
  for (const auto& [key, value] : request.labels) out.labels[key] = value;
  out.labels.try_emplace(std::string(kTemplateLabel), t->name);
  if (out.priorityClass.empty()) out.priorityClass = t->priorityClass;
  if (out.lease.count() == 0) out.lease = std::chrono::seconds(t->leaseSeconds);
  return out;
}

}  // namespace switchyard
