#include "composer/web/pool_metrics.h"

#include <fmt/format.h>

#include <map>
#include <tuple>

namespace switchyard::web {

using metrics::Labels;
using metrics::Type;

Result<void> writePoolMetrics(Engine& engine, metrics::ExpositionWriter& out) {
  SY_ASSIGN(const auto devices, engine.listDevices());
  SY_ASSIGN(const auto systems, engine.listSystems());
  SY_ASSIGN(const auto hosts, engine.listHosts());
  SY_ASSIGN(const auto operations, engine.listOperations(1000));
  std::vector<MigProfile> profiles(kMigProfiles.begin(), kMigProfiles.end());
  SY_ASSIGN(const auto capacity, engine.capacity(defaultShapes(), profiles, kReportedShares));

  std::map<SystemId, const System*> systemById;
  for (const auto& s : systems) systemById[s.id] = &s;

  // Devices by (state, health, model, switch).
  std::map<std::tuple<std::string, std::string, std::string, std::string>, int> byState;
  for (const auto& d : devices)
    ++byState[{std::string(toString(d.assignment.allocation)), std::string(toString(d.device.health)), d.device.model, d.switchId}];
  out.family("switchyard_devices", "Devices in the pool, by allocation state, health, model and switch.", Type::kGauge);
  for (const auto& [key, n] : byState) {
    const auto& [state, health, model, sw] = key;
    out.sample({{"state", state}, {"health", health}, {"modelName", model}, {"switch", sw}}, n);
  }

  out.family("switchyard_device_info",
             "One series per device, value 1: where it is and, once a host has verified it, its UUID and PCI address there "
             "(label names as DCGM exporter's, to join with its metrics).",
             Type::kGauge);
  for (const auto& d : devices) {
    std::string uuid, pci, system;
    if (auto it = systemById.find(d.systemId); it != systemById.end()) {
      system = it->second->name;
      for (const auto& h : it->second->hostDevices)
        if (h.deviceId == d.device.id) uuid = h.uuid, pci = h.pciAddress;
    }
    out.sample({{"device", d.device.id},
                {"kind", std::string(toString(d.device.kind))},
                {"modelName", d.device.model},
                {"switch", d.switchId},
                {"state", std::string(toString(d.assignment.allocation))},
                {"health", std::string(toString(d.device.health))},
                {"Hostname", d.hostId},
                {"system", system},
                {"UUID", uuid},
                {"pci_bus_id", pci}},
               1);
  }

  out.family("switchyard_host_devices", "Devices attached to each host's system.", Type::kGauge);
  for (const auto& h : hosts) out.sample({{"Hostname", h.host.id}, {"policy", std::string(toString(h.policy))}}, h.attachedDevices);

  std::map<std::string, int> systemsByState;
  for (const auto& s : systems) ++systemsByState[std::string(toString(s.state))];
  out.family("switchyard_systems", "Composed systems, by state.", Type::kGauge);
  for (const auto& [state, n] : systemsByState) out.sample({{"state", state}}, n);

  std::map<std::string, int> running;
  for (const auto& op : operations)
    if (!op.finished()) ++running[std::string(toString(op.kind))];
  out.family("switchyard_operations_running", "Operations accepted and not finished, by kind.", Type::kGauge);
  for (const auto& [kind, n] : running) out.sample({{"kind", kind}}, n);

  out.family("switchyard_gpus_free", "Free GPUs that are not critical.", Type::kGauge);
  out.sample({}, capacity.freeGpus);
  out.family("switchyard_gpus_stranded", "Free GPUs that no host able to take a new system can reach.", Type::kGauge);
  out.sample({}, capacity.strandedGpus);
  out.family("switchyard_capacity_placeable",
             "How many more requests of this shape could be composed now, placed one after another by the packing core.", Type::kGauge);
  for (const auto& c : capacity.shapes)
    out.sample({{"gpus", std::to_string(c.shape.gpus)},
                {"peer_to_peer", c.shape.peerToPeer == PeerToPeer::kRequired ? "required" : "any"},
                {"modelName", c.shape.model}},
               c.placeable);
  out.family("switchyard_domain_gpus_free", "Free GPUs that are not critical, per fabric domain (switch manager).", Type::kGauge);
  for (const auto& d : capacity.domains) out.sample({{"domain", d.domain}}, d.freeGpus);
  out.family("switchyard_domain_gpus_stranded", "Stranded free GPUs, per fabric domain.", Type::kGauge);
  for (const auto& d : capacity.domains) out.sample({{"domain", d.domain}}, d.strandedGpus);
  out.family("switchyard_domain_capacity_placeable",
             "switchyard_capacity_placeable per fabric domain: no placement crosses a domain, so the domains add up to the total.",
             Type::kGauge);
  for (const auto& d : capacity.domains)
    for (const auto& c : d.shapes)
      out.sample({{"domain", d.domain},
                  {"gpus", std::to_string(c.shape.gpus)},
                  {"peer_to_peer", c.shape.peerToPeer == PeerToPeer::kRequired ? "required" : "any"},
                  {"modelName", c.shape.model}},
                 c.placeable);
  out.family("switchyard_mig_capacity", "MIG instances of a profile that could still be created, on GPUs already carved for systems or on free ones.",
             Type::kGauge);
  for (const auto& m : capacity.mig) {
    out.sample({{"profile", std::string(toString(m.profile))}, {"on", "partly_used_gpus"}}, m.onPartlyUsedGpus);
    out.sample({{"profile", std::string(toString(m.profile))}, {"on", "free_gpus"}}, m.onFreeGpus);
  }
  out.family("switchyard_share_capacity", "Time-sliced GPU shares of a size that could still be given out.", Type::kGauge);
  for (const auto& s : capacity.shares) {
    const std::string share = fmt::format("{}", s.milli / 1000.0);
    out.sample({{"share", share}, {"on", "partly_used_gpus"}}, s.onPartlyUsedGpus);
    out.sample({{"share", share}, {"on", "free_gpus"}}, s.onFreeGpus);
  }
  return {};
}

}  // namespace switchyard::web
