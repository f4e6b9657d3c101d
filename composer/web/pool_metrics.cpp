#include "composer/web/pool_metrics.h"

#include <fmt/format.h>

#include "composer/model/mig.h"
#include "composer/model/version.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace switchyard::web {

using metrics::Labels;
using metrics::Type;

void DeviceSeriesCache::append(const std::shared_ptr<const std::vector<DeviceView>>& chunk, metrics::ExpositionWriter& out,
                               const std::function<void(const DeviceView&, metrics::ExpositionWriter&)>& render) {
  Entry& e = entries_[chunk.get()];
  if (e.chunk != chunk) {  // new (or an address reused after its chunk was dropped): render it
    auto lines = metrics::ExpositionWriter::samplesOf("switchyard_device_info");
    for (const auto& d : *chunk) render(d, lines);
    e.chunk = chunk;
    e.lines = lines.take();
  }
  e.seen = true;
  out.rendered(e.lines);
}

void DeviceSeriesCache::endScrape() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.seen) {
      it->second.seen = false;
      ++it;
    } else {
      it = entries_.erase(it);
    }
  }
}

std::optional<DeviceSeries> parseDeviceSeries(std::string_view text) {
  if (text == "auto") return DeviceSeries::kAuto;
  if (text == "all") return DeviceSeries::kAll;
  if (text == "none") return DeviceSeries::kNone;
  return std::nullopt;
}

Result<void> writePoolMetrics(const EngineClient& engine, metrics::ExpositionWriter& out, DeviceSeriesCache* cache, CapacityCache* capacityCache,
                              DeviceSeries series) {
  // Everything from one published view, on the scraping thread: a scrape never waits for a compose, and
  // a compose never waits for a scrape.
  const auto view = engine.view();
  if (!view) return fail(Code::kUnavailable, "yardd is starting: the pool is not loaded yet");
  std::shared_ptr<const CapacityCache::Entry> cached;
  if (capacityCache != nullptr) {
    SY_ASSIGN(cached, capacityCache->get());
  } else {
    std::vector<MigProfile> profiles(kMigProfiles.begin(), kMigProfiles.end());
    SY_ASSIGN(auto report, engine.capacity(defaultShapes(), profiles, kReportedShares));
    cached = std::make_shared<const CapacityCache::Entry>(CapacityCache::Entry{std::move(report), view->version, std::chrono::steady_clock::now()});
  }
  const CapacityReport& capacity = cached->report;
  SY_ASSIGN(const auto hosts, engine.listHosts());

  out.family("switchyard_build_info", "Which yardd is running: value 1, its version and git commit as labels.", Type::kGauge);
  out.sample({{"version", std::string(projectVersion())}, {"commit", std::string(gitCommit())}}, 1);

  // Devices by (state, health, kind, model, switch): counted in a hash table (an ordered map's string compares took
  // 45-70 ms of a scrape at 100,000 GPUs on 6,252 switches), then sorted, so the lines keep their order. The kind
  // (gpu, nic, nvme, cxl-memory or another class) adds no series: a model is of one kind.
  using StateKey = std::tuple<std::string_view, std::string_view, std::string_view, std::string_view, std::string_view>;
  struct StateKeyHash {
    std::size_t operator()(const StateKey& k) const {
      const std::hash<std::string_view> h;
      std::size_t seed = h(std::get<4>(k));
      for (std::size_t part : {h(std::get<0>(k)), h(std::get<1>(k)), h(std::get<2>(k)), h(std::get<3>(k))})
        seed ^= part + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
      return seed;
    }
  };
  std::unordered_map<StateKey, int, StateKeyHash> counted;
  view->devices.forEach([&](const DeviceView& d) {
    ++counted[{toString(d.assignment.allocation), toString(d.device.health), kindName(d.device), d.device.model, d.switchId}];
  });
  std::vector<std::pair<StateKey, int>> byState(counted.begin(), counted.end());
  std::sort(byState.begin(), byState.end());
  out.family("switchyard_devices", "Devices in the pool, by allocation state, health, kind, model and switch.", Type::kGauge);
  for (const auto& [key, n] : byState) {
    const auto& [state, health, kind, model, sw] = key;
    out.sample({{"state", std::string(state)}, {"health", std::string(health)}, {"kind", std::string(kind)}, {"modelName", std::string(model)},
                {"switch", std::string(sw)}},
               n);
  }

  const bool perDevice = series == DeviceSeries::kAll || (series == DeviceSeries::kAuto && view->devices.size() <= kAutoDeviceSeriesLimit);
  out.family("switchyard_device_series_written",
             "1 when this scrape has switchyard_device_info (one series per device), 0 when it was left out (yardd's "
             "--metrics-device-series: auto writes it for pools of up to 10,000 devices).",
             Type::kGauge);
  out.sample({}, perDevice ? 1 : 0);
  if (perDevice) {
    out.family("switchyard_device_info",
               "One series per device, value 1: where it is and, once a host has verified it, its UUID and PCI address there "
               "(label names as DCGM exporter's, to join with its metrics). Empty labels are left out.",
               Type::kGauge);
    auto render = [&view](const DeviceView& d, metrics::ExpositionWriter& lines) {
      Labels labels{{"device", d.device.id},
                    {"kind", std::string(kindName(d.device))},
                    {"modelName", d.device.model},
                    {"switch", d.switchId},
                    {"state", std::string(toString(d.assignment.allocation))},
                    {"health", std::string(toString(d.device.health))},
                    {"Hostname", d.hostId}};
      if (!d.systemId.empty())
        if (auto s = view->systems.find(d.systemId)) {
          labels.emplace_back("system", s->name);
          for (const auto& h : s->hostDevices)
            if (h.deviceId == d.device.id) {
              labels.emplace_back("UUID", h.uuid);
              labels.emplace_back("pci_bus_id", h.pciAddress);
            }
        }
      // An empty label is the same series as one left out (Prometheus' data model): a free device's is shorter.
      std::erase_if(labels, [](const auto& l) { return l.second.empty(); });
      lines.sample(labels, 1);
    };
    if (cache != nullptr) {
      std::lock_guard lock(cache->mutex());
      for (const auto& chunk : view->devices.chunks()) cache->append(chunk, out, render);
      cache->endScrape();
    } else {
      view->devices.forEach([&](const DeviceView& d) { render(d, out); });
    }
  }

  out.family("switchyard_host_devices", "Devices attached to each host's system.", Type::kGauge);
  for (const auto& h : hosts) out.sample({{"Hostname", h.host.id}, {"policy", std::string(toString(h.policy))}}, h.attachedDevices);

  std::map<std::string_view, int> systemsByState;
  view->systems.forEach([&](const System& s) { ++systemsByState[toString(s.state)]; });
  out.family("switchyard_systems", "Composed systems, by state.", Type::kGauge);
  for (const auto& [state, n] : systemsByState) out.sample({{"state", std::string(state)}}, n);

  out.family("switchyard_operations_running", "Operations accepted and not finished, by kind.", Type::kGauge);
  std::map<std::string, int> running{{"compose", 0}, {"decompose", 0}, {"attach", 0}, {"detach", 0}};  // 0s, not gaps
  for (const auto& [kind, n] : view->runningOperations) running[kind] = n;
  for (const auto& [kind, n] : running) out.sample({{"kind", kind}}, n);

  // The queue: how many wait, by class and the number of GPUs asked (0: MIG instances or a share), and for how long.
  std::map<std::pair<std::string, int>, int> queued;
  std::map<std::string, Timestamp> oldest;
  if (view->queue)
    for (const auto& e : *view->queue) {
      ++queued[{e.request.priorityClass, e.request.gpuShareMilli != 0 || !e.request.gpuInstances.empty() ? 0 : e.request.gpuCount}];
      auto& o = oldest[e.request.priorityClass];
      o = o == 0 ? e.request.enqueuedAt : std::min(o, e.request.enqueuedAt);
    }
  out.family("switchyard_queue_requests", "Compose requests waiting in the queue, by priority class and GPUs asked (0: MIG or a share).",
             Type::kGauge);
  for (const auto& [key, n] : queued) out.sample({{"class", key.first}, {"gpus", std::to_string(key.second)}}, n);
  out.family("switchyard_queue_oldest_seconds", "How long the oldest waiting request of each priority class has waited.", Type::kGauge);
  const auto nowNs = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (const auto& [cls, at] : oldest) out.sample({{"class", cls}}, static_cast<double>(std::max<Timestamp>(0, nowNs - at)) / 1e9);

  // What each tenant holds now, in GPUs of each model (a MIG instance its share of the GPU's 8 memory slices, a
  // time-sliced share its fraction: the weights of `yardctl usage`). sum_over_time of it is GPU-time.
  std::map<std::pair<std::string, std::string>, double> allocated;
  view->systems.forEach([&](const System& s) {
    if (s.state == SystemState::kQueued) return;
    for (const auto& b : s.bindings) {
      const DeviceView* d = view->device(b.deviceId);
      if (d == nullptr || d->device.kind != DeviceKind::kGpu) continue;
      double part = 0;
      bool split = false;
      for (const auto& i : s.gpuInstances)
        if (i.deviceId == b.deviceId) part += memorySlices(i.profile) / 8.0, split = true;
      for (const auto& sh : s.gpuShares)
        if (sh.deviceId == b.deviceId) part += sh.milli / static_cast<double>(kMilliPerGpu), split = true;
      allocated[{s.tenant, d->device.model}] += split ? part : 1.0;
    }
  });
  out.family("switchyard_gpus_allocated",
             "GPUs held by each tenant's systems now, by model (MIG instances and time-sliced shares by their fraction of a GPU); "
             "sum_over_time gives GPU-time.",
             Type::kGauge);
  for (const auto& [key, n] : allocated) out.sample({{"tenant", key.first}, {"modelName", key.second}}, n);

  // Idle GPUs (`yardctl idle`): attached GPUs idle at their last sample, and the GPU-hours those idle stretches have
  // cost so far, by tenant.
  std::map<std::string, std::pair<int, double>> idle;
  std::map<std::string, double> longest;  // by tenant: the longest current idle stretch, in seconds
  if (view->activity)
    for (const auto& g : *view->activity) {
      const DeviceView* d = view->device(g.gpu.deviceId);
      if (d == nullptr || d->systemId != g.systemId) continue;
      const double hours = g.idleGpuHours(nowNs);  // the whole GPU's, or its idle MIG instances' by their part
      if (!g.anyIdle()) continue;
      auto& t = idle[g.tenant];
      t.first += g.gpu.idle() ? 1 : 0;
      t.second += hours;
      const double seconds = std::chrono::duration<double>(g.idleFor(nowNs)).count();
      if (auto& l = longest[g.tenant]; seconds > l) l = seconds;
    }
  out.family("switchyard_gpus_idle", "Attached GPUs idle at their last activity sample (no process, low utilization), by tenant.", Type::kGauge);
  for (const auto& [tenant, t] : idle) out.sample({{"tenant", tenant}}, t.first);
  out.family("switchyard_gpus_idle_hours", "GPU-hours the current idle stretches of attached GPUs (and of idle MIG instances, by their part of the GPU) have cost so far, by tenant.", Type::kGauge);
  for (const auto& [tenant, t] : idle) out.sample({{"tenant", tenant}}, t.second);
  out.family("switchyard_gpus_idle_longest_seconds",
             "The longest current idle stretch of an attached GPU (or MIG instance), by tenant: what an alert on GPUs idle past a threshold reads.",
             Type::kGauge);
  for (const auto& [tenant, seconds] : longest) out.sample({{"tenant", tenant}}, seconds);

  out.family("switchyard_capacity_age_seconds",
             "How old the capacity gauges below are: 0 while they are made on every change; on a pool large enough that making "
             "them takes long, the last ones are served while the next are made.",
             Type::kGauge);
  out.sample({}, view->version == cached->version ? 0.0 : std::chrono::duration<double>(std::chrono::steady_clock::now() - cached->at).count());
  out.family("switchyard_gpus_free", "Free GPUs that are not critical.", Type::kGauge);
  out.sample({}, capacity.freeGpus);
  out.family("switchyard_gpus_stranded", "Free GPUs that no host able to take a new system can reach.", Type::kGauge);
  out.sample({}, capacity.strandedGpus);
  out.family("switchyard_gpus_stranded_attachable",
             "Of the stranded GPUs, those a host that serves a system can still attach (stranded for new systems only).", Type::kGauge);
  out.sample({}, capacity.strandedAttachableGpus);
  out.family("switchyard_capacity_placeable",
             "How many more requests of this shape could be composed now, placed one after another by the packing core.", Type::kGauge);
  for (const auto& c : capacity.shapes)
    out.sample({{"gpus", std::to_string(c.shape.gpus)},
                {"peer_to_peer", c.shape.peerToPeer == PeerToPeer::kRequired ? "required" : "any"},
                {"modelName", c.shape.model}},
               c.placeable);
  out.family("switchyard_template_capacity",
             "How many more systems of each machine template could be composed now, one after another (GPUs, memory, drives and NICs; "
             "at most 100 counted).",
             Type::kGauge);
  for (const auto& n : capacity.named) out.sample({{"template", n.name}}, n.fits);
  if (!capacity.endpoints.empty()) {
    out.family("switchyard_endpoints_beside_free_gpus",
               "Free drives and NICs under a switch that still has a free GPU: what a request with one beside its GPUs can use "
               "(the rest of switchyard_devices{state=\"free\",kind=...} is stranded for such requests).",
               Type::kGauge);
    for (const auto& e : capacity.endpoints)
      out.sample({{"kind", kindName(e.kind, e.deviceClass)}, {"modelName", e.model}}, e.besideFreeGpus);
  }
  if (!capacity.pooledMemory.empty()) {
    out.family("switchyard_pooled_memory_gib", "Pooled CXL memory under each switch, in GiB: state free (healthy, unbound) or total.",
               Type::kGauge);
    for (const auto& m : capacity.pooledMemory) {
      out.sample({{"switch", m.switchId}, {"domain", m.domain}, {"state", "free"}}, m.freeGiB);
      out.sample({{"switch", m.switchId}, {"domain", m.domain}, {"state", "total"}}, m.totalGiB);
    }
  }
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
