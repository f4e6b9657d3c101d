#include "composer/engine/usage.h"

#include <algorithm>
#include <tuple>

namespace switchyard {

namespace {

// What a system holds of one device: the whole GPU, or parts of it (MIG instances, time-sliced shares).
struct Holding {
  bool whole = false;
  double parts = 0;
  Timestamp since = 0;
  [[nodiscard]] double fraction() const { return whole ? 1.0 : std::max(0.0, parts); }
};

double partOf(const GpuInstance& i) { return memorySlices(i.profile) / 8.0; }
double partOf(const GpuShare& s) { return s.milli / static_cast<double>(kMilliPerGpu); }

}  // namespace

UsageReport computeUsage(const std::vector<Operation>& operations, const std::function<std::string(const DeviceId&)>& modelOf,
                         Timestamp since, Timestamp until, Timestamp now, const std::vector<IdleStretch>& idle,
                         const std::function<int(const DeviceId&)>& memoryOf,
                         const std::function<std::string(const DeviceId&)>& endpointKindOf) {
  UsageReport report{since, until, operations.empty() ? 0 : operations.front().createdAt, {}};
  const Timestamp end = std::min(until, now);
  struct Key {
    std::string tenant;
    SystemId system;
    DeviceId device;
    auto operator<=>(const Key&) const = default;
  };
  std::map<Key, Holding> held;
  struct Held {
    Timestamp from, upTo;
    double fraction;
  };
  // Each MIG instance's own holding, (system, "GPU@START"): where its idle stretches count, at its part.
  std::map<std::pair<SystemId, std::string>, std::pair<Timestamp, double>> instanceOpen;  // since, part
  std::map<std::pair<SystemId, std::string>, std::vector<Held>> instanceHeld;
  auto instanceEnds = [&](const std::pair<SystemId, std::string>& k, Timestamp t) {
    auto it = instanceOpen.find(k);
    if (it == instanceOpen.end()) return;
    const Timestamp from = std::max(it->second.first, since), upTo = std::min(t, end);
    if (upTo > from) instanceHeld[k].push_back({from, upTo, it->second.second});
    instanceOpen.erase(it);
  };
  std::map<std::tuple<std::string, SystemId, std::string>, double> seconds, memoryGiBSeconds, deviceSeconds;
  std::map<Key, std::vector<Held>> heldWhen;  // where idle time may count, and at what part of the GPU
  auto charge = [&](const Key& k, const Holding& h, Timestamp to) {
    const Timestamp from = std::max(h.since, since);
    const Timestamp upTo = std::min(to, end);
    if (upTo <= from || h.fraction() <= 0) return;
    const std::string model = modelOf(k.device);
    if (model.empty()) {
      if (const int gib = memoryOf ? memoryOf(k.device) : 0; gib > 0)
        memoryGiBSeconds[{k.tenant, k.system, std::string(kPooledMemoryModel)}] += gib * static_cast<double>(upTo - from) / 1e9;
      else if (const std::string kind = endpointKindOf ? endpointKindOf(k.device) : std::string(); !kind.empty())
        deviceSeconds[{k.tenant, k.system, kind}] += static_cast<double>(upTo - from) / 1e9;
      return;
    }
    seconds[{k.tenant, k.system, model}] += h.fraction() * static_cast<double>(upTo - from) / 1e9;
    heldWhen[k].push_back({from, upTo, h.fraction()});
  };
  // Changes the holding at time t: what was held so far is charged first.
  auto change = [&](const Key& k, Timestamp t, const std::function<void(Holding&)>& apply) {
    Holding& h = held[k];
    charge(k, h, t);
    h.since = t;
    apply(h);
    if (!h.whole && h.parts <= 1e-9) held.erase(k);
  };
  for (const auto& op : operations) {
    if (op.state != OperationState::kSucceeded) continue;
    const Timestamp t = op.updatedAt;
    const bool grows = op.kind == OperationKind::kCompose || op.kind == OperationKind::kAttach;
    auto key = [&](const DeviceId& d) { return Key{op.tenant, op.systemId, d}; };
    auto partsOn = [&](const DeviceId& d) {
      double p = 0;
      for (const auto& i : op.gpuInstances)
        if (i.deviceId == d) p += partOf(i);
      for (const auto& s : op.gpuShares)
        if (s.deviceId == d) p += partOf(s);
      return p;
    };
    for (const auto& step : op.steps) {
      if (step.compensation || step.state != StepState::kDone) continue;
      if (grows && step.kind == "bind")
        for (const auto& b : step.bindings) {
          const double p = partsOn(b.deviceId);
          change(key(b.deviceId), t, [&](Holding& h) {
            h.whole = p <= 0;
            h.parts = p;
          });
        }
      if (!grows && step.kind == "unbind")
        for (const auto& b : step.bindings) change(key(b.deviceId), t, [](Holding& h) { h = {}; });
    }
    // Instances and shares on GPUs bound before (an attach that fills a partly used GPU; a detach of one).
    auto boundHere = [&](const DeviceId& d) {
      for (const auto& step : op.steps)
        if (!step.compensation && step.state == StepState::kDone && (step.kind == "bind" || step.kind == "unbind"))
          for (const auto& b : step.bindings)
            if (b.deviceId == d) return true;
      return false;
    };
    auto adjust = [&](const DeviceId& d, double part) {
      if (boundHere(d)) return;
      change(key(d), t, [&](Holding& h) {
        if (!h.whole) h.parts += grows ? part : -part;
      });
    };
    for (const auto& i : op.gpuInstances) {
      adjust(i.deviceId, partOf(i));
      const std::pair<SystemId, std::string> k{op.systemId, i.deviceId + "@" + std::to_string(i.start)};
      instanceEnds(k, t);
      if (grows) instanceOpen[k] = {t, partOf(i)};
    }
    for (const auto& s : op.gpuShares) adjust(s.deviceId, partOf(s));
  }
  for (const auto& [k, h] : held) charge(k, h, end);
  while (!instanceOpen.empty()) instanceEnds(instanceOpen.begin()->first, end);
  // Idle time counts only while the system held the GPU (a stretch is seen ending up to one sampling round
  // after its GPU left), at the part of it the system held: a GPU whose MIG instances or shares all idle
  // wasted what they were charged.
  std::map<std::tuple<std::string, SystemId, std::string>, double> idleSeconds;
  // A MIG instance's stretch ("GPU@START") counts its part, while the system held (part of) that GPU.
  for (const auto& s : idle) {
    const auto at = s.deviceId.rfind('@');
    const DeviceId device = s.deviceId.substr(0, at);
    const std::vector<Held>* intervals = nullptr;
    if (at == std::string::npos) {
      auto it = heldWhen.find(Key{s.tenant, s.systemId, device});
      if (it != heldWhen.end()) intervals = &it->second;
    } else if (auto it = instanceHeld.find({s.systemId, s.deviceId}); it != instanceHeld.end()) {
      intervals = &it->second;
    }
    if (intervals == nullptr) continue;
    double overlap = 0;
    for (const auto& [from, upTo, fraction] : *intervals) {
      const Timestamp a = std::max(from, s.from), b = std::min(upTo, s.to);
      if (b > a) overlap += fraction * static_cast<double>(b - a) / 1e9;
    }
    if (overlap > 0) idleSeconds[{s.tenant, s.systemId, modelOf(device)}] += overlap;
  }
  for (const auto& [k, s] : seconds)
    if (s > 0) {
      auto i = idleSeconds.find(k);
      report.rows.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), s, i == idleSeconds.end() ? 0.0 : i->second});
    }
  for (const auto& [k, s] : memoryGiBSeconds)
    if (s > 0) report.rows.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), 0, 0, s});
  for (const auto& [k, s] : deviceSeconds)
    if (s > 0) report.rows.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), 0, 0, 0, s});
  std::sort(report.rows.begin(), report.rows.end(), [](const UsageRow& a, const UsageRow& b) {
    return std::tie(a.tenant, a.systemId, a.model) < std::tie(b.tenant, b.systemId, b.model);
  });
  return report;
}

}  // namespace switchyard
