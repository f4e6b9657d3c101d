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
                         Timestamp since, Timestamp until, Timestamp now, const std::vector<IdleStretch>& idle) {
  UsageReport report{since, until, operations.empty() ? 0 : operations.front().createdAt, {}};
  const Timestamp end = std::min(until, now);
  struct Key {
    std::string tenant;
    SystemId system;
    DeviceId device;
    auto operator<=>(const Key&) const = default;
  };
  std::map<Key, Holding> held;
  std::map<std::tuple<std::string, SystemId, std::string>, double> seconds;
  std::map<Key, std::vector<std::pair<Timestamp, Timestamp>>> wholeHeld;  // where idle time may count
  auto charge = [&](const Key& k, const Holding& h, Timestamp to) {
    const Timestamp from = std::max(h.since, since);
    const Timestamp upTo = std::min(to, end);
    if (upTo <= from || h.fraction() <= 0) return;
    const std::string model = modelOf(k.device);
    if (model.empty()) return;
    seconds[{k.tenant, k.system, model}] += h.fraction() * static_cast<double>(upTo - from) / 1e9;
    if (h.whole) wholeHeld[k].emplace_back(from, upTo);
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
    for (const auto& i : op.gpuInstances) adjust(i.deviceId, partOf(i));
    for (const auto& s : op.gpuShares) adjust(s.deviceId, partOf(s));
  }
  for (const auto& [k, h] : held) charge(k, h, end);
  // Idle time counts only where the system held the whole GPU (a stretch is seen ending up to one sampling
  // round after its GPU left).
  std::map<std::tuple<std::string, SystemId, std::string>, double> idleSeconds;
  for (const auto& s : idle) {
    auto intervals = wholeHeld.find(Key{s.tenant, s.systemId, s.deviceId});
    if (intervals == wholeHeld.end()) continue;
    double overlap = 0;
    for (const auto& [from, upTo] : intervals->second) {
      const Timestamp a = std::max(from, s.from), b = std::min(upTo, s.to);
      if (b > a) overlap += static_cast<double>(b - a) / 1e9;
    }
    if (overlap > 0) idleSeconds[{s.tenant, s.systemId, modelOf(s.deviceId)}] += overlap;
  }
  for (const auto& [k, s] : seconds)
    if (s > 0) {
      auto i = idleSeconds.find(k);
      report.rows.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), s, i == idleSeconds.end() ? 0.0 : i->second});
    }
  return report;
}

}  // namespace switchyard
